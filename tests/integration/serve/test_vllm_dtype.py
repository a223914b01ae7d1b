"""The tests' vLLM runs in the dtype loraloop.hardware chose for this CPU, its model in the engine's own process."""

import re

from loraloop.hardware import choose_dtype
from loraloop.serve import vllm_server
from loraloop.settings import Settings


def test_the_local_vllm_runs_in_the_chosen_dtype(vllm_url):
    """The tests' vLLM (conftest) was started by serve/vllm_server with the auto choice: its log
    names it in loraloop's line, and vLLM's own engine config says the same."""
    chosen = choose_dtype(Settings().dtype)
    port = int(vllm_url.rsplit(":", 1)[1].split("/")[0])
    log = vllm_server.log_path(port).read_text(errors="replace")
    ours = log.rsplit(f"loraloop: starting vLLM on port {port} with --dtype ", 1)
    assert len(ours) == 2 and ours[1].startswith(f"{chosen} "), log[-2000:]
    engine = re.findall(r"(?<!\w)dtype=torch\.(\w+)", ours[1])  # not kv_cache_dtype
    assert engine and set(engine) == {chosen}, ours[1][:3000]


def test_the_local_vllm_runs_its_model_in_the_engine_process(vllm_url):
    """serve/vllm_server keeps the "uni" executor (VLLM_ENABLE_V1_MULTIPROCESSING=0): no third process that imports
    vLLM again and spawns a worker (vLLM's CPU platform turns "uni" into "mp" otherwise; that cost 7 s a start)."""
    port = int(vllm_url.rsplit(":", 1)[1].split("/")[0])
    log = vllm_server.log_path(port).read_text(errors="replace")
    ours = log.rsplit(f"loraloop: starting vLLM on port {port} with --dtype ", 1)[-1]
    assert "(EngineCore pid=" in ours, ours[:3000]
    assert "(Worker pid=" not in ours and "multiproc_executor" not in ours, ours[:3000]
