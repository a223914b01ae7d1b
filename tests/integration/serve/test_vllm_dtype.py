"""The tests' vLLM runs in the dtype loraloop.hardware chose for this CPU."""

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
