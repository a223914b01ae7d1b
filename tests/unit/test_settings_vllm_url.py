"""LORALOOP_VLLM_PORT alone moves vllm_url with it (a second learning run on its own port rolled out against the
first's vLLM and found its model missing); an explicit LORALOOP_VLLM_URL wins; neither: the defaults."""

from loraloop.settings import Settings


def test_the_url_follows_the_port_unless_it_is_given(monkeypatch):
    monkeypatch.delenv("LORALOOP_VLLM_URL", raising=False)
    monkeypatch.delenv("LORALOOP_VLLM_PORT", raising=False)
    assert Settings().vllm_url == "http://127.0.0.1:8000/v1" and Settings().vllm_port == 8000
    monkeypatch.setenv("LORALOOP_VLLM_PORT", "8012")
    assert Settings().vllm_url == "http://127.0.0.1:8012/v1"
    assert Settings(vllm_port=9001).vllm_url == "http://127.0.0.1:9001/v1"
    monkeypatch.setenv("LORALOOP_VLLM_URL", "http://gpu-host:8000/v1")  # the split setup: a remote vLLM
    assert Settings().vllm_url == "http://gpu-host:8000/v1" and Settings().vllm_port == 8012
