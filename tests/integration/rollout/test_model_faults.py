"""The model server failing mid-job, with the session's real vLLM: down, answering 500s, or too slow.

Each failure is the server's, not the agent's: the episode is played again from the start (unstored) per
LORALOOP_EPISODE_RETRIES, and an episode still failed on its last try is stored with the cause
(`service_error`, `model_timeout`) and counted apart in the job's `failures`, while the job goes on.

vLLM does not answer 500 or stall on demand, so `FaultProxy` (a fault injector, the one fake here) sits in
front of it and forwards every request, failing or delaying the chat completions it is told to. "Down" is
real: nothing listens on the port the episodes are sent to.
"""

import csv
import json
import os
import re
from pathlib import Path

import pytest

from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import plan_rollout
from loraloop.service.local import LocalJobs
from loraloop.service.models import JobRequest
from loraloop.service.progress import follow
from loraloop.store.trajectories import parse_episode
from loraloop.task_registry import load_registry
from tests.helpers import FaultProxy, free_port, run_cli

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture
def proxy(vllm_url):
    faulty = FaultProxy(vllm_url)
    yield faulty
    faulty.close()


def settings_of(settings_for, tmp_path, url, **overrides):
    """Fast failures: no request-level retry (each failure reaches the episode), two-step episodes of short
    replies (experiment `short`), half-second waits."""
    experiments = tmp_path / "experiments.yaml"
    experiments.write_text(
        "experiments:\n  short:\n    policy: openai\n    model: SmolLM2-135M-Instruct\n    max_steps: 2\n"
    )
    return settings_for(
        vllm_url=url,
        model_retries=0,
        max_tokens=24,
        episode_retry_delay_s=0.5,
        experiments_path=experiments,
        **overrides,
    )


def stored_ends(settings, run):
    folder = settings.store_url.removeprefix("file://") + f"/trajectories/short/{run}"
    return [parse_episode(p.name, p.read_bytes()).end for p in sorted(Path(folder).glob("*.jsonl"))]


def test_500s_cost_a_replay_not_an_episode(proxy, settings_for, tmp_path):
    settings = settings_of(settings_for, tmp_path, proxy.url, episode_retries=2)
    proxy.fail = 2
    jobs = LocalJobs(settings, concurrency=2)
    jobs.submit(JobRequest(experiment="short", subset="test", sample_size=2, run_id="fivehundred"))
    status = follow(lambda: jobs.status("fivehundred"), quiet=True)
    assert proxy.failed == 2 and status.retries == 2, status
    assert (status.state, status.done, status.failed, status.failures) == ("done", 2, 0, {}), status
    assert any("HTTP 500" in line and "played again in 0.5 s (try 2 of 3" in line for line in status.recent_errors)
    ends = stored_ends(settings, "fivehundred")
    assert len(ends) == 2 and not {e.status for e in ends} & {"service_error", "model_timeout"}


def test_a_model_server_down_fails_episodes_with_that_cause_and_the_job_ends(settings_for, tmp_path):
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    settings = settings_of(settings_for, tmp_path, down, episode_retries=1)
    registry = load_registry("configs/tasks/os")
    specs = plan_rollout(
        registry,
        "configs/tasks/os",
        get_experiment(settings.experiments_path, "short"),
        run_id="down",
        subset="test",
        sample_size=2,
        rollouts_per_task=1,
        seed=1,
        task_seed=1,
        temperature=None,
    )  # planned without the preflight, which refuses
    jobs = LocalJobs(settings, concurrency=2)
    jobs.start(specs)
    status = follow(lambda: jobs.status("down"), quiet=True)
    assert (status.state, status.done, status.solved, status.failed) == ("done", 2, 0, 2), status
    assert status.failures == {"service_error": 2} and status.retries == 2
    ends = stored_ends(settings, "down")
    assert [e.status for e in ends] == ["service_error"] * 2
    assert all(f"model server unreachable at {down}" in e.error for e in ends)


def test_a_model_server_too_slow_is_a_timeout_counted_apart(proxy, settings_for, tmp_path):
    settings = settings_of(settings_for, tmp_path, proxy.url, episode_retries=0, request_timeout_s=1.0)
    proxy.delay_s = 2.5
    jobs = LocalJobs(settings, concurrency=2)
    jobs.submit(JobRequest(experiment="short", subset="test", sample_size=2, run_id="slow"))
    status = follow(lambda: jobs.status("slow"), quiet=True)
    assert (status.done, status.failed, status.failures) == (2, 2, {"model_timeout": 2}), status
    ends = stored_ends(settings, "slow")
    assert [e.status for e in ends] == ["model_timeout"] * 2
    assert all("timed out: no reply within 1 s (LORALOOP_REQUEST_TIMEOUT_S), 1 request" in e.error for e in ends)


def test_an_evaluation_report_counts_its_replays(proxy, settings_for, tmp_path):
    """`loraloop eval` over a model server that failed one request: the episode is played again, the rate is over
    the episodes played, and the report, its CSV and the stored figures say one was replayed."""
    settings = settings_of(settings_for, tmp_path, proxy.url, episode_retries=2)
    proxy.fail = 1
    env = {
        f"LORALOOP_{name.upper()}": str(getattr(settings, name))
        for name in ("vllm_url", "store_url", "model_retries", "max_tokens", "episode_retry_delay_s")
    }
    env.update(LORALOOP_EPISODE_RETRIES="2", LORALOOP_EXPERIMENTS_PATH=str(settings.experiments_path))
    args = ["eval", "--experiment", "short", "--subset", "test", "--sample_size", "2", "--eval_id", "faulty"]
    done = run_cli([*args, "--out", str(tmp_path / "report")], env={**os.environ, **env})
    assert done.returncode == 0 and proxy.failed == 1, done.stderr
    table = (tmp_path / "report" / "faulty" / "report.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| `short` |"))
    assert re.search(r"\| \[2\]\([^)]+\) \| [0-9.]+% \([0-9]/2; ", row) and row.endswith("| 0 (1 replayed) |"), row
    stored = json.loads((tmp_path / "store" / "evals" / "faulty" / "results.json").read_text())
    assert (stored[0]["episodes"], stored[0]["errors"], stored[0]["retries"]) == (2, 0, 1)
    with (tmp_path / "report" / "faulty" / "report.csv").open() as handle:
        assert next(csv.DictReader(handle))["retries"] == "1"
