"""The rollout service: jobs over a real Redis, real Celery workers, the HTTP API, no trajectory lost."""

import html
import json
import os
import signal
import socket
import subprocess
import time

import httpx
import pytest
import redis

from loraloop.envs.shell.docker import OWNER_LABEL, owner_id
from loraloop.errors import LoraloopError
from loraloop.service.book import UnknownJob
from loraloop.service.client import jobs_client
from loraloop.service.models import JobRequest
from loraloop.service.progress import follow
from loraloop.settings import Settings
from loraloop.store.trajectories import parse_episode
from loraloop.task_registry import load_registry
from tests.helpers import LORALOOP, free_port, wait_port
from tests.helpers import run_cli as cli

pytestmark = pytest.mark.usefixtures("docker_ready")


def slow_registry(folder, n=3, seconds=4):
    """A registry of n tasks whose example solution takes `seconds`: episodes that are still running when asked."""
    folder.mkdir()
    (folder / "slow.json").write_text(
        json.dumps(
            [
                {
                    "description": f"Wait, then print {i}.",
                    "evaluation": {"match": str(i), "example": f"sleep {seconds}; echo {i}"},
                }
                for i in range(n)
            ]
        )
    )
    return str(folder)


def test_local_jobs_run_follow_and_cancel_in_this_process(tmp_path, settings_for):
    """The embedded default behind the jobs interface: a job runs in threads, is followed, listed, cancelled."""
    from loraloop.service.local import LocalJobs

    jobs = LocalJobs(settings_for(), concurrency=2)
    submitted = jobs.submit(JobRequest(experiment="teacher", subset="test", sample_size=3, run_id="here"))
    assert (submitted.run_id, submitted.total, submitted.skipped) == ("here", 3, 0)
    final = follow(lambda: jobs.status("here"), quiet=True)
    assert (final.state, final.done, final.solved, final.failed) == ("done", 3, 3, 0)
    assert final.request.sample_size == 3 and final.episodes_per_min > 0
    assert len(episodes(tmp_path / "store", "teacher", "here")) == 3
    index = json.loads((tmp_path / "store" / "indexes" / "teacher" / "here.json").read_text())  # written at the end
    assert index["keys"] == 3 and sorted(e["success"] for e in index["episodes"]) == [True] * 3
    again = jobs.submit(JobRequest(experiment="teacher", subset="test", sample_size=3, run_id="here"))
    assert (again.state, again.done, again.solved, again.submitted_at) == ("done", 3, 3, final.submitted_at)

    slow = jobs.submit(JobRequest(experiment="teacher", task_registry=slow_registry(tmp_path / "slow"), run_id="stop"))
    mine = ["docker", "ps", "-q", "--filter", f"label={OWNER_LABEL}={owner_id()}"]
    deadline = time.monotonic() + 60  # two episodes running (concurrency 2), one waiting
    while len(subprocess.run(mine, capture_output=True, text=True).stdout.split()) < 2:
        assert time.monotonic() < deadline, "two episodes never started"
        time.sleep(0.1)
    assert jobs.cancel("stop").state == "cancelled"
    summaries = jobs.summaries("stop")
    assert slow.total == 3 and [s.status for s in summaries][2] == "cancelled" and summaries[2].steps == 0
    assert {s.status for s in summaries[:2]} <= {"completed", "cancelled"}
    assert len(episodes(tmp_path / "store", "teacher", "stop")) == 2  # the two that ran are stored
    assert jobs.status("stop").done == 3 and [j.run_id for j in jobs.list()] == ["stop", "here"]
    with pytest.raises(UnknownJob, match="unknown job 'nope'"):
        jobs.status("nope")


def test_local_jobs_share_the_process_slots_first_submitted_first_played(tmp_path, settings_for):
    """`concurrency` is the process's, not each job's: a job submitted while another fills the slots (as `train rl
    --async` submits the next iteration's) starts its episodes as the earlier job's end, as on a Celery worker, so it
    does not slow the job being waited for. Both jobs' episodes sleep 3 s; with concurrency 2, the second job's start
    once the first job's have ended."""
    from loraloop.service.local import LocalJobs

    jobs = LocalJobs(settings_for(), concurrency=2)
    for run in ("first", "second"):
        registry = slow_registry(tmp_path / run, n=2, seconds=3)
        jobs.submit(JobRequest(experiment="teacher", task_registry=registry, run_id=run))
    for run in ("first", "second"):
        assert follow(lambda run=run: jobs.status(run), quiet=True).done == 2
    played = {
        run: [parse_episode(p.name, p.read_bytes()) for p in episodes(tmp_path / "store", "teacher", run)]
        for run in ("first", "second")
    }
    assert [len(played[run]) for run in played] == [2, 2]
    first_ended = min(e.end.timestamp for e in played["first"])
    assert min(e.start.timestamp for e in played["second"]) >= first_ended - 0.05, played


def test_execute_plays_episodes_of_several_runs_each_as_its_job(tmp_path, settings_for):
    """verify-exploration's pair: two runs executed together, each booked as its own job; one job of two
    runs is refused (its episodes would count into a job that does not exist and it would never end)."""
    from loraloop.rollout.experiments import get_experiment
    from loraloop.rollout.sampler import plan_rollout
    from loraloop.service.client import execute
    from loraloop.service.local import LocalJobs
    from loraloop.task_registry import load_registry

    registry, teacher = load_registry("configs/tasks/os"), get_experiment("configs/experiments.yaml", "teacher")
    specs = [
        spec
        for run in ("pair-a", "pair-b")
        for spec in plan_rollout(
            registry,
            "configs/tasks/os",
            teacher,
            run_id=run,
            subset="test",
            sample_size=1,
            rollouts_per_task=1,
            seed=1,
            task_seed=5,
            temperature=None,
        )
    ]
    summaries = execute(specs, settings_for(), quiet=True)
    assert [s.success for s in summaries] == [True, True]
    assert [len(episodes(tmp_path / "store", "teacher", run)) for run in ("pair-a", "pair-b")] == [1, 1]
    with pytest.raises(LoraloopError, match="a job is one run, these episodes belong to 2: pair-a, pair-b"):
        LocalJobs(settings_for()).start(specs)


def episodes(store_dir, mode, run):
    return sorted((store_dir / "trajectories" / mode / run).glob("*.jsonl"))


def test_embedded_rerun_plays_only_missing_episodes(tmp_path):
    env = {"LORALOOP_STORE_URL": f"file://{tmp_path}"}
    args = ["rollout", "--experiment", "teacher", "--subset", "test", "--sample_size", "3", "--run_id", "resume"]
    assert cli(args, env).returncode == 0
    files = episodes(tmp_path, "teacher", "resume")
    kept = {f.name: f.read_bytes() for f in files[1:]}
    files[0].unlink()
    again = cli(args, env)
    assert again.returncode == 0, again.stderr
    assert "1/3 solved" not in again.stderr and "2 already stored" in again.stderr.replace("\n", " ")
    assert len(episodes(tmp_path, "teacher", "resume")) == 3
    assert all((tmp_path / "trajectories/teacher/resume" / name).read_bytes() == data for name, data in kept.items())


class Service:
    """Redis db, a file store, the rollout API and Celery workers, each a real process on loopback."""

    def __init__(self, tmp_path, redis_url):
        self.store = tmp_path / "store"
        self.logs = tmp_path / "logs"  # each process's output, shown when a job does not end
        self.logs.mkdir()
        self.env = {
            "LORALOOP_BROKER_URL": redis_url.rsplit("/", 1)[0] + "/5",
            "LORALOOP_STORE_URL": f"file://{self.store}",
            "LORALOOP_VISIBILITY_TIMEOUT_S": "6",
            "LORALOOP_API_TOKEN": "s3cret",
            "LORALOOP_TASK_ROOTS": f"configs/tasks,{tmp_path}",
        }
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.procs = []
        self.workers = []
        self.api = self.spawn(["serve", "rollout-api", "--port", str(self.port)])
        wait_port(self.port, 60)

    def spawn(self, args):
        with open(self.logs / f"{len(self.procs)}-{args[0]}.log", "wb") as log:
            proc = subprocess.Popen(
                LORALOOP + args,
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def log_tails(self, lines=40):
        """The last lines each process wrote, for a failure message."""
        return "\n".join(
            f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
            for log in sorted(self.logs.iterdir())
        )

    def add_worker(self, concurrency=2, loglevel="warning"):
        worker = self.spawn(["worker", "--concurrency", str(concurrency), "--loglevel", loglevel])
        self.workers.append(worker)
        return worker

    def http(self, method, path, token="s3cret", **kwargs):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)

    def wait_done(self, run_id, timeout=240):
        """The job's status once it ended; a 503 meanwhile (a Redis just restarted, still loading its data) is
        waited out like a running job."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = self.http("GET", f"/api/jobs/{run_id}")
            status = answer.json()
            assert answer.status_code in (200, 503), status
            if answer.status_code == 200 and status["state"] in ("done", "cancelled"):
                return status
            time.sleep(0.5)
        raise AssertionError(f"job {run_id} not done after {timeout} s: {status}\n{self.log_tails()}")

    def close(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        redis.Redis.from_url(self.env["LORALOOP_BROKER_URL"]).flushdb()


@pytest.fixture
def service(tmp_path, redis_url):
    svc = Service(tmp_path, redis_url)
    yield svc
    svc.close()


def test_cli_submits_to_the_api_and_two_workers_share_the_job(service):
    service.add_worker()
    service.add_worker()
    env = {**service.env, "LORALOOP_API_URL": service.url}
    proc = cli(
        [
            "rollout",
            "--experiment",
            "teacher",
            "--subset",
            "train",
            "--sample_size",
            "8",
            "--rollouts_per_task",
            "2",
            "--run_id",
            "api",
        ],
        env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stderr.replace("\n", " ")
    assert "submitted job api: 16 episodes queued" in out and "16/16 solved" in out
    assert len(episodes(service.store, "teacher", "api")) == 16
    listed = cli(["jobs", "list"], env)
    assert listed.stdout.startswith("api\tteacher\tdone\t16/16 done\t16 solved\t0 failed")
    shown = json.loads(cli(["jobs", "show", "api"], env).stdout)
    assert shown["request"]["rollouts_per_task"] == 2 and shown["episodes_per_min"] > 0
    metrics = service.http("GET", "/metrics", token=None).text
    assert 'loraloop_episodes_total{status="completed"} 16.0' in metrics
    assert "loraloop_step_latency_seconds_count 32.0" in metrics and "loraloop_queue_depth 0.0" in metrics
    again = cli(
        [
            "rollout",
            "--experiment",
            "teacher",
            "--subset",
            "train",
            "--sample_size",
            "8",
            "--rollouts_per_task",
            "2",
            "--run_id",
            "api",
        ],
        env,
    )
    assert "job api had ended (16/16 done, 16 solved): nothing left to play" in again.stderr.replace("\n", " ")


def test_a_miniwob_job_runs_on_a_worker_and_its_episodes_open_in_the_viewer(service, chromium):
    """The browsergym kind through the rollout service (issue 28 item 1): a MiniWoB++ job submitted to the API is
    played by a Celery worker (its own Chromium and MiniWoB server), stored as typed records with the seed each
    episode played, counted in the metrics, and the viewer lists the run and shows an episode's goal and actions."""
    service.add_worker(concurrency=2)
    env = {**service.env, "LORALOOP_API_URL": service.url}
    args = ["rollout", "--experiment", "miniwob_teacher", "--task_registry", "configs/tasks/miniwob",
            "--subset", "train+click-button,enter-text", "--rollouts_per_task", "2", "--run_id", "mw"]  # fmt: skip
    proc = cli(args, env)
    assert proc.returncode == 0, proc.stderr[-2000:] + service.log_tails()
    out = proc.stderr.replace("\n", " ")
    assert "submitted job mw: 4 episodes queued" in out and "4/4 solved" in out, out
    keys = episodes(service.store, "miniwob_teacher", "mw")
    played = [parse_episode(str(path), path.read_bytes()) for path in keys]
    assert len(played) == 4
    for episode in played:
        assert episode.start.env == "browsergym" and episode.end.reward == 1.0 and episode.start.goal
        assert episode.start.events[0]["seed"] == episode.start.seed % 50  # the train seed the rollout seed picks
    metrics = service.http("GET", "/metrics", token=None).text
    assert 'loraloop_episodes_total{status="completed"} 4.0' in metrics
    run = service.http("GET", "/ui/runs/miniwob_teacher/mw")
    assert run.status_code == 200 and run.text.count("train-miniwob.") >= 4, run.text[:2000]
    key = keys[0].relative_to(service.store).as_posix()
    page = service.http("GET", "/ui/episode", params={"key": key})
    first = played[0]
    assert page.status_code == 200 and first.steps and first.steps[0].action_text in html.unescape(page.text)
    goal = first.steps[0].observation.split("\n")[1]  # MiniWoB's own utterance, under "# Goal"
    assert goal and goal in html.unescape(page.text) and "/miniwob/" in page.text


def test_api_rejects_bad_input_with_the_value(service):
    assert service.http("POST", "/api/jobs", token=None, json={"experiment": "teacher"}).status_code == 401
    bad = service.http("POST", "/api/jobs", json={"experiment": "nope"})
    assert bad.status_code == 400 and "unknown experiment 'nope'" in bad.json()["detail"]
    bad = service.http("POST", "/api/jobs", json={"experiment": "teacher", "subset": "zzz"})
    assert bad.status_code == 400 and "subset 'zzz'" in bad.json()["detail"]
    bad = service.http("POST", "/api/jobs", json={"experiment": "teacher", "task_registry": "configs/tasks/none"})
    assert bad.status_code == 400 and "configs/tasks/none does not exist" in bad.json()["detail"]
    typed = service.http("POST", "/api/jobs", json={"experiment": "teacher", "sample_size": "many"})
    assert typed.status_code == 422 and typed.json()["detail"][0]["loc"] == ["body", "sample_size"]
    assert service.http("GET", "/api/jobs/none").status_code == 404
    assert "/api/jobs/{run_id}/cancel" in service.http("GET", "/openapi.json", token=None).json()["paths"]
    assert service.http("GET", "/api/jobs").json() == []  # nothing half-booked


def test_api_answers_hostile_input_with_a_4xx(service, tmp_path):
    """Each of these was a 500, or was accepted and copied into the broker, before the request guards."""

    def body(text: bytes):
        return httpx.post(
            service.url + "/api/jobs",
            content=text,
            timeout=60,
            headers={"Authorization": "Bearer s3cret", "Content-Type": "application/json"},
        )

    nan = body(b'{"experiment": "teacher", "temperature": NaN}')
    assert nan.status_code == 422 and "temperature: nan is not a number JSON allows" in nan.text
    assert body(b'{"experiment": "teacher", "sample_size": Infinity}').status_code == 422
    lone = body(b'{"experiment": "\\ud800"}')
    assert lone.status_code == 422 and "experiment: character 0 is a lone surrogate" in lone.text
    big = service.http("POST", "/api/jobs", json={"experiment": "teacher", "model": "m" * 2_000_000})
    assert big.status_code == 413 and "over the limit of 1048576 bytes" in big.json()["detail"]
    model = service.http("POST", "/api/jobs", json={"experiment": "smollm_zero", "model": "m" * 300_000})
    assert model.status_code == 422 and model.json()["detail"][0]["loc"] == ["body", "model"]
    binary = tmp_path / "tasks.json"
    binary.write_bytes(bytes(range(256)) * 4)
    bad = service.http("POST", "/api/jobs", json={"experiment": "teacher", "task_registry": str(binary)})
    assert bad.status_code == 400 and f"{binary}: not UTF-8 text" in bad.json()["detail"]
    (tmp_path / "escape").symlink_to("/etc")
    for outside in ("/etc", "configs/tasks/../../../../../../etc", str(tmp_path / "escape"), "/etc/passwd"):
        refused = service.http("POST", "/api/jobs", json={"experiment": "teacher", "task_registry": outside})
        detail = refused.json()["detail"]
        assert refused.status_code == 400 and "must lie under one of this API's task roots" in detail, detail
        assert "/etc" not in detail and "docker" not in detail and "root:" not in detail
    assert service.http("GET", "/api/jobs?limit=1e20").status_code == 422
    for header in ("Bearer t\u00f6k\u20ac".encode(), "Bearer t\xf6k".encode("latin-1")):
        denied = httpx.get(service.url + "/api/jobs", headers=[(b"Authorization", header)], timeout=30)
        assert denied.status_code == 401
    assert service.http("GET", "/api/jobs").json() == []  # nothing booked by any of them


def test_no_response_or_log_line_shows_the_broker_password(tmp_path):
    """A broker URL with a password: /api/health, /metrics, a broker outage (503) and the API's own log
    show the host and port only."""
    port = free_port()
    redis_proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--requirepass", "hunter2pw", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    api_port, log = free_port(), tmp_path / "api.log"
    env = {
        **os.environ,
        "LORALOOP_BROKER_URL": f"redis://default:hunter2pw@127.0.0.1:{port}/0",
        "LORALOOP_STORE_URL": f"file://{tmp_path}/store",
        "LORALOOP_API_TOKEN": "tok-visible-nowhere",
    }
    try:
        wait_port(port, 30)
        with log.open("w") as out:
            api = subprocess.Popen(
                LORALOOP + ["serve", "rollout-api", "--port", str(api_port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_port(api_port, 60)
        base, auth = f"http://127.0.0.1:{api_port}", {"Authorization": "Bearer tok-visible-nowhere"}
        health = httpx.get(base + "/api/health", timeout=30)
        assert health.status_code == 200 and health.json()["broker"] == f"redis://127.0.0.1:{port}/0"
        texts = [health.text, httpx.get(base + "/metrics", timeout=30).text]
        redis_proc.terminate()
        redis_proc.wait()
        down = httpx.get(base + "/api/jobs", headers=auth, timeout=30)
        assert down.status_code == 503 and f"127.0.0.1:{port}" in down.json()["detail"]
        texts.append(down.text)
        os.killpg(api.pid, signal.SIGTERM)
        api.wait(timeout=30)
        texts.append(log.read_text())
        for text in texts:
            assert "hunter2pw" not in text and "tok-visible-nowhere" not in text
    finally:
        redis_proc.kill()


def test_a_run_id_submitted_again_while_it_runs_is_409_and_counts_stay_true(service, tmp_path):
    """Resubmitting a running job would queue its unstored episodes twice: refused, naming the run. Once it
    has ended, submitting it again plays nothing and keeps its counts; cancelling it changes nothing."""
    registry = slow_registry(tmp_path / "slow", n=3, seconds=3)
    job = {"experiment": "teacher", "task_registry": registry, "run_id": "twice"}
    assert service.http("POST", "/api/jobs", json=job).status_code == 201
    again = service.http("POST", "/api/jobs", json=job)
    assert again.status_code == 409 and "job 'twice' is still running (0/3 done)" in again.json()["detail"]
    service.add_worker(concurrency=3)
    ended = service.wait_done("twice", timeout=120)
    assert (ended["state"], ended["done"], ended["total"], ended["solved"]) == ("done", 3, 3, 3)
    resubmitted = service.http("POST", "/api/jobs", json=job)
    assert resubmitted.status_code == 201
    kept = resubmitted.json()
    assert (kept["done"], kept["total"], kept["solved"], kept["submitted_at"]) == (3, 3, 3, ended["submitted_at"])
    assert service.http("POST", "/api/jobs/twice/cancel").json()["state"] == "done"
    assert len(episodes(service.store, "teacher", "twice")) == 3
    metrics = service.http("GET", "/metrics", token=None).text
    assert 'loraloop_episodes_total{status="completed"} 3.0' in metrics


def test_cancel_stops_a_job_and_keeps_what_ran(service):
    worker = service.add_worker(concurrency=1)
    owner = f"label=loraloop.owner={socket.gethostname()}:{worker.pid}"
    submitted = service.http(
        "POST", "/api/jobs", json={"experiment": "teacher", "subset": "train", "rollouts_per_task": 3, "run_id": "stop"}
    ).json()
    total = 3 * len(load_registry("configs/tasks/os").select("train"))
    assert submitted["total"] == total
    deadline = time.monotonic() + 120
    while service.http("GET", "/api/jobs/stop").json()["done"] < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert service.http("POST", "/api/jobs/stop/cancel").json()["state"] == "cancelled"
    # The running episode ends at its next step, which under a loaded machine can be many seconds away:
    # quiet means the worker holds no episode container and the count and the store agree and stay put.
    settled, last = 0, None
    while settled < 6 and time.monotonic() < deadline:
        status = service.http("GET", "/api/jobs/stop").json()
        stored = episodes(service.store, "teacher", "stop")
        running = subprocess.run(["docker", "ps", "-q", "--filter", owner], capture_output=True, text=True).stdout
        now = (status["done"], len(stored))
        settled = settled + 1 if now == last and now[0] == now[1] and not running.strip() else 0
        last = now
        time.sleep(0.5)
    assert 2 <= len(stored) == status["done"] < total
    ends = [parse_episode(p.name, p.read_bytes()).end for p in stored]
    assert {e.status for e in ends} <= {"completed", "cancelled"}
    time.sleep(3)
    assert len(episodes(service.store, "teacher", "stop")) == len(stored)


def test_an_episode_the_broker_lost_is_queued_again_when_a_worker_connects(service, tmp_path):
    """Kombu's Redis transport pops a message, then writes it to its unacked hash: a broker restart between the
    two loses it (celery/kombu#305), a window of milliseconds no test can hit on purpose. Named fake of that
    loss: one queued message is removed from the real Redis list. The worker that connects next queues it
    again from the job book; the job ends with every episode stored and counted once."""
    registry = slow_registry(tmp_path / "slow", n=3, seconds=1)
    job = {"experiment": "teacher", "task_registry": registry, "run_id": "lost"}
    assert service.http("POST", "/api/jobs", json=job).status_code == 201
    broker = redis.Redis.from_url(service.env["LORALOOP_BROKER_URL"])
    queued = broker.lrange("celery", 0, -1)
    assert len(queued) == 3
    victim = next(raw for raw in queued if json.loads(raw)["headers"]["id"].endswith("slow-00001__attempt_0.jsonl"))
    assert broker.lrem("celery", 1, victim) == 1
    service.add_worker(concurrency=2, loglevel="info")
    status = service.wait_done("lost", timeout=120)
    assert (status["done"], status["solved"]) == (3, 3), status
    stored = episodes(service.store, "teacher", "lost")
    assert [p.name for p in stored] == [f"slow-0000{i}__attempt_0.jsonl" for i in range(3)]
    assert "queued again 1 episode(s) of run lost the broker lost" in service.log_tails()


def test_a_killed_worker_loses_no_episode(service, tmp_path):
    """kill -9 a worker in the middle of slow episodes: they are redelivered, run again, stored once."""
    registry = slow_registry(tmp_path / "slow")
    victim = service.add_worker(concurrency=3)
    service.http("POST", "/api/jobs", json={"experiment": "teacher", "task_registry": registry, "run_id": "crash"})
    owner = f"label=loraloop.owner={socket.gethostname()}:{victim.pid}"
    deadline = time.monotonic() + 120  # kill it once an episode has its container: none can have ended (`sleep 4`)
    while not subprocess.run(["docker", "ps", "-q", "--filter", owner], capture_output=True, text=True).stdout.split():
        assert victim.poll() is None and time.monotonic() < deadline, "the worker never started an episode"
        time.sleep(0.2)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert episodes(service.store, "teacher", "crash") == []
    service.add_worker(concurrency=3)
    status = service.wait_done("crash", timeout=120)
    stored = episodes(service.store, "teacher", "crash")
    assert len(stored) == 3 and status["solved"] == 3
    assert all(parse_episode(p.name, p.read_bytes()).success for p in stored)
    leftovers = subprocess.run(["docker", "ps", "-aq", "--filter", owner], capture_output=True, text=True).stdout
    assert leftovers.strip() == ""


def test_a_redis_restart_mid_job_loses_and_doubles_nothing(tmp_path):
    """Redis (appendonly, as in compose.yaml) stopped and started again while episodes run: workers wait it out,
    the job ends with every episode counted once and stored once."""
    port = free_port()
    server = [
        "redis-server",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--dir",
        str(tmp_path),
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ]
    redis_proc = subprocess.Popen(server, stdout=subprocess.DEVNULL)
    wait_port(port, 30)
    service = Service(tmp_path, f"redis://127.0.0.1:{port}/0")
    try:
        service.add_worker(concurrency=3, loglevel="info")
        job = {
            "experiment": "teacher",
            "task_registry": slow_registry(tmp_path / "slow", n=6, seconds=3),
            "run_id": "restart",
        }
        assert service.http("POST", "/api/jobs", json=job).status_code == 201
        deadline = time.monotonic() + 120
        while not episodes(service.store, "teacher", "restart"):  # some stored, some running, some queued
            assert time.monotonic() < deadline, "no episode was stored"
            time.sleep(0.2)
        redis_proc.terminate()
        redis_proc.wait(timeout=30)
        down = service.http("GET", "/api/jobs/restart")
        assert down.status_code == 503 and "broker unreachable" in down.json()["detail"]
        time.sleep(4)
        redis_proc = subprocess.Popen(server, stdout=subprocess.DEVNULL)
        wait_port(port, 30)
        status = service.wait_done("restart", timeout=180)
        assert (status["state"], status["done"], status["total"], status["solved"]) == ("done", 6, 6, 6), status
        stored = episodes(service.store, "teacher", "restart")
        assert len(stored) == 6 and all(parse_episode(p.name, p.read_bytes()).success for p in stored)
        time.sleep(8)  # past the visibility timeout (6 s): a redelivered episode would show here
        again = service.http("GET", "/api/jobs/restart").json()
        assert (again["done"], again["solved"]) == (6, 6) and len(episodes(service.store, "teacher", "restart")) == 6
    finally:
        service.close()
        redis_proc.kill()


@pytest.mark.parametrize("where", ["embedded", "broker", "api"])
def test_every_jobs_client_answers_alike(where, service):
    """The CLI's three ways to a job (this process, the broker, the API) submit, follow, list and cancel alike."""
    settings = Settings(
        store_url=service.env["LORALOOP_STORE_URL"],
        api_token="s3cret",
        broker_url=service.env["LORALOOP_BROKER_URL"] if where != "embedded" else "",
        api_url=service.url if where == "api" else "",
    )
    if where != "embedded":
        service.add_worker()
    jobs = jobs_client(settings)
    assert type(jobs).__name__ == {"embedded": "LocalJobs", "broker": "BrokerJobs", "api": "ApiJobs"}[where]
    run_id = f"alike-{where}"
    submitted = jobs.submit(JobRequest(experiment="teacher", subset="test", sample_size=2, run_id=run_id))
    assert (submitted.run_id, submitted.total, submitted.skipped) == (run_id, 2, 0)
    final = follow(lambda: jobs.status(run_id), quiet=True, interval=0.3)
    assert (final.state, final.done, final.solved, final.failed) == ("done", 2, 2, 0)
    assert final.request.sample_size == 2 and final.store_url == "file://…/store"  # no host folder
    assert [job.run_id for job in jobs.list(5)] == [run_id]
    with pytest.raises(LoraloopError, match="unknown job 'nope'"):
        jobs.status("nope")
    assert jobs.cancel(run_id).state == "done"  # cancelling a job that has ended changes nothing
    assert len(episodes(service.store, "teacher", run_id)) == 2


def test_a_worker_prepares_every_kind_and_leaves_no_container(redis_url, tmp_path):
    """`loraloop worker` runs each kind's worker_start (the shell kind warms its pool: a spare container
    owned by the worker appears) and, stopped with SIGTERM once ready, each kind's worker_stop: none of its
    containers stays."""
    env = {
        "LORALOOP_BROKER_URL": redis_url.rsplit("/", 1)[0] + "/6",
        "LORALOOP_POOL_SIZE": "1",
        "LORALOOP_STORE_URL": f"file://{tmp_path}",
    }
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen(
            LORALOOP + ["worker", "--concurrency", "1", "--loglevel", "info"],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    owned = ["docker", "ps", "-aq", "--filter", f"label={OWNER_LABEL}={socket.gethostname()}:{worker.pid}"]
    try:
        deadline = time.monotonic() + 120
        while not (
            subprocess.run(owned, capture_output=True, text=True).stdout.split() and " ready." in log.read_text()
        ):
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.2)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert subprocess.run(owned, capture_output=True, text=True).stdout.split() == [], log.read_text()[-2000:]
