"""The jobs API and the viewer under the hostile probe (on a real Redis): identifiers, seeds, registry paths, store
keys and JSON depth are refused with a 4xx naming the field and the rule, before anything is written, and no reply
names a host path."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from loraloop.paths import project_root
from loraloop.service.api.main import create_app
from tests.helpers import ROOT

HOST_PATHS = {str(ROOT), str(project_root()), "/tmp/"}  # the checkouts and the tests' store folders


@pytest.fixture
def api(settings_for, redis_url, tmp_path):
    """The rollout API over the test Redis and a file store under tmp_path, and that store's folder."""
    return TestClient(create_app(settings_for(broker_url=redis_url))), tmp_path / "store"


def refused(reply, field: str) -> str:
    """The 422's message for `field`, after checking it names that field and no host path."""
    assert reply.status_code == 422, reply.text
    assert not any(path in reply.text for path in HOST_PATHS), reply.text
    error = reply.json()["detail"][0]
    assert error["loc"][-1] == field, reply.text
    return error["msg"]


@pytest.mark.parametrize("run_id", [".", "..", "-x", "a/b", "x" * 129])
def test_jobs_api_run_id_dot_or_dotdot_gets_422_before_plans_are_written(api, run_id):
    """Finding: run_id "." was accepted (its episodes outside any run), ".." a 400 naming the host's store root after
    plans/ had been written."""
    client, store = api
    reply = client.post("/api/jobs", json={"experiment": "teacher", "run_id": run_id})
    assert "not an identifier" in refused(reply, "run_id")
    assert not store.exists()  # nothing planned, nothing written


def test_jobs_api_experiment_must_be_an_identifier(api):
    client, _ = api
    assert "not an identifier" in refused(client.post("/api/jobs", json={"experiment": ".."}), "experiment")


@pytest.mark.parametrize("field", ["task_seed", "seed"])
@pytest.mark.parametrize("value", [10**30, 2**63, -1])
def test_jobs_api_task_seed_past_what_numpy_and_vllm_take_gets_422(api, field, value):
    """Finding: task_seed 10**30 was accepted and every episode of the job failed."""
    client, _ = api
    refused(client.post("/api/jobs", json={"experiment": "teacher", field: value}), field)


def test_jobs_api_task_registry_with_embedded_nul_gets_422(api):
    """Finding: a task_registry holding a NUL was a 500."""
    client, _ = api
    refused(
        client.post("/api/jobs", json={"experiment": "teacher", "task_registry": "configs/tasks/os\x00x"}),
        "task_registry",
    )


def test_jobs_api_body_nested_1000_deep_gets_422(api):
    client, _ = api
    deep = b'{"experiment": "teacher", "subset": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    reply = client.post("/api/jobs", content=deep, headers={"Content-Type": "application/json"})
    assert reply.status_code == 422 and "nested more than 32 levels" in reply.text


@pytest.mark.parametrize(
    "key",
    [
        "trajectories/" + "a" * 9000 + ".jsonl",
        "trajectories/m/r/" + "b" * 300 + ".jsonl",
        "trajectories/m/r/x\x00.jsonl",
    ],
)
def test_viewer_episode_key_the_os_would_refuse_gets_400(api, key):
    """Finding: /ui/episode?key= with a 9,000-character key (or a NUL) was an OSError 500."""
    client, _ = api
    for path in ("/ui/episode", "/ui/file"):
        reply = client.get(path, params={"key": key if path == "/ui/episode" else key[:-6] + ".png"})
        assert reply.status_code == 400 and "store key" in reply.json()["detail"], reply.text
        assert not any(path in reply.text for path in HOST_PATHS), reply.text


def test_viewer_pages_carry_hardening_headers(api):
    """Finding: the viewer's pages had no CSP, X-Frame-Options or Referrer-Policy."""
    client, _ = api
    for path in ("/ui", "/ui/login", "/ui/episode?key=nothing"):
        headers = client.get(path, follow_redirects=False).headers
        assert (
            "frame-ancestors 'none'" in headers["Content-Security-Policy"]
            and "script" not in headers["Content-Security-Policy"]
        ), path
        assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer", path


def test_viewer_login_wrong_tokens_past_the_limit_get_429_with_retry_after(settings_for, redis_url):
    """Finding: /ui/login took wrong tokens without limit (a token could be guessed at full speed)."""
    client = TestClient(create_app(settings_for(broker_url=redis_url, api_token="the-right-token-0123456789")))
    for _ in range(5):
        wrong = client.post("/ui/login", data={"token": "guess", "next": "/ui"}, follow_redirects=False)
        assert wrong.status_code == 303 and "wrong=true" in wrong.headers["location"]
    for token in ("guess", "the-right-token-0123456789"):  # locked out: the right one waits too
        late = client.post("/ui/login", data={"token": token, "next": "/ui"}, follow_redirects=False)
        assert late.status_code == 429 and 1 <= int(late.headers["Retry-After"]) <= 60, late.text
        assert "the-right-token" not in late.text


def test_jobs_api_missing_task_registry_is_a_400_without_host_paths(api):
    """Finding: a task_registry under the task roots that does not exist was refused naming the host folders
    looked in."""
    client, store = api
    reply = client.post("/api/jobs", json={"experiment": "teacher", "task_registry": "configs/tasks/nope"})
    assert reply.status_code == 400 and "does not exist" in reply.json()["detail"], reply.text
    assert not any(path in reply.text for path in HOST_PATHS) and not store.exists(), reply.text
