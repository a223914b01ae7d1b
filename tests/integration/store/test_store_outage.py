"""A fault survived: the S3 store stops for 30 s in the middle of a job. Episodes that end meanwhile wait it out
(backoff), nothing is lost, and the job says which episodes waited."""

import json
import subprocess
import time

from loraloop.envs.shell.docker import OWNER_LABEL, owner_id
from loraloop.service.local import LocalJobs
from loraloop.service.models import JobRequest
from loraloop.service.progress import follow
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.integrity import verify_run
from tests.conftest import WeedServer

OUTAGE_S = 30


def test_a_30_s_store_outage_loses_no_episode(tmp_path, docker_ready, s3_endpoint):
    weed = WeedServer(tmp_path / "weed")
    weed.start()
    tasks = tmp_path / "slow"
    tasks.mkdir()
    (tasks / "slow.json").write_text(
        json.dumps(
            [
                {
                    "description": f"Wait, then print {i}.",
                    "evaluation": {"match": str(i), "example": f"sleep 6; echo {i}"},
                }
                for i in range(4)
            ]
        )
    )
    settings = Settings(
        store_url="s3://outage",
        s3_endpoint_url=weed.endpoint,
        s3_access_key="any",
        s3_secret_key="any",
        store_retry_s=120,
    )
    jobs = LocalJobs(settings, concurrency=4)
    try:
        jobs.submit(JobRequest(experiment="teacher", task_registry=str(tasks), run_id="outage"))
        deadline = time.monotonic() + 60  # every episode in its container (none can end within 6 s)
        mine = f"label={OWNER_LABEL}={owner_id()}"  # this process's: tests of other workers run beside it
        while (
            len(subprocess.run(["docker", "ps", "-q", "--filter", mine], capture_output=True, text=True).stdout.split())
            < 4
        ):
            assert time.monotonic() < deadline, "the episodes never started"
            time.sleep(0.2)
        weed.stop()
        stopped = time.monotonic()
        time.sleep(OUTAGE_S)
        weed.start()  # the same data and ports: read back from a server started anew
        outage = time.monotonic() - stopped
        status = follow(lambda: jobs.status("outage"), quiet=True)
        assert (status.state, status.done, status.solved, status.failed) == ("done", 4, 4, 0)
        assert status.store_waits == 4 and all("stored after waiting" in line for line in status.recent_errors)
        check = verify_run(open_store(settings=settings), "outage")
        assert check.ok and check.planned == check.stored == 4 and check.unverified == 0, check
        print(f"outage {outage:.1f} s: 4/4 episodes stored, {status.recent_errors}")
    finally:
        weed.stop()
