"""The environment failing mid-job: a browser that does not start once costs a replay, not an episode.

The failure is real: `LORALOOP_CHROMIUM_PATH` names a wrapper that exits 1 the first time it is run (Chromium
not starting, as a missing library or a full disk makes it) and runs Debian's Chromium after that. The first
try ends in `env_error` and is not stored; the episode is played again and solved; the job counts one retry and
no failure. With no retry left, the episode is stored as `env_error` and counted apart from the agent's.
"""

from pathlib import Path

from loraloop.service.local import LocalJobs
from loraloop.service.models import JobRequest
from loraloop.service.progress import follow
from loraloop.store.trajectories import parse_episode


def flaky_chromium(folder: Path, chromium: str, failures: int) -> Path:
    """An executable that fails its first `failures` runs, then execs the real Chromium."""
    script = folder / "flaky-chromium"
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(cat "{folder}/runs" 2>/dev/null || echo 0); echo $((n + 1)) > "{folder}/runs"\n'
        f'[ "$n" -lt {failures} ] && {{ echo "flaky-chromium: fails on purpose" >&2; exit 1; }}\n'
        f'exec {chromium} "$@"\n'
    )
    script.chmod(0o755)
    return script


def play_one(settings, run_id: str):
    """One web teacher episode through the embedded jobs path; its job status and stored ends."""
    jobs = LocalJobs(settings, concurrency=1)
    jobs.submit(
        JobRequest(experiment="teacher", task_registry="configs/tasks/web", subset="test", sample_size=1, run_id=run_id)
    )
    status = follow(lambda: jobs.status(run_id), quiet=True)
    folder = Path(settings.store_url.removeprefix("file://")) / "trajectories" / "teacher" / run_id
    return status, [parse_episode(p.name, p.read_bytes()).end for p in sorted(folder.glob("*.jsonl"))]


def test_a_browser_that_fails_to_start_once_costs_a_replay_not_an_episode(settings_for, sites_url, chromium, tmp_path):
    wrapper = flaky_chromium(tmp_path, chromium, failures=1)
    settings = settings_for(sites_url=sites_url, chromium_path=str(wrapper), episode_retry_delay_s=0.5)
    status, ends = play_one(settings, "flaky")
    assert (status.state, status.done, status.solved, status.failed, status.retries) == ("done", 1, 1, 0, 1), status
    assert any("cannot start Chromium" in line and "played again in 0.5 s" in line for line in status.recent_errors)
    assert [end.status for end in ends] == ["completed"] and ends[0].success


def test_with_no_retry_left_the_environment_failure_is_stored_and_counted_apart(
    settings_for, sites_url, chromium, tmp_path
):
    wrapper = flaky_chromium(tmp_path, chromium, failures=99)
    settings = settings_for(sites_url=sites_url, chromium_path=str(wrapper), episode_retries=0)
    status, ends = play_one(settings, "broken")
    assert (status.done, status.solved, status.failures, status.retries) == (1, 0, {"env_error": 1}, 0), status
    assert [end.status for end in ends] == ["env_error"] and "cannot start Chromium" in ends[0].error
