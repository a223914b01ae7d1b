"""One look-up per task and one store read per episode: a planned rollout's registry is the one its preflight and
episodes use, a task is found by its index at once, and an episode already stored is read once, its end record
alone parsed; booking lists a run's folder once instead of asking for each episode."""

import pytest

from loraloop import task_registry
from loraloop.errors import TaskFormatError
from loraloop.rollout.episode import stored_summary
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.rollout.session import EpisodeSession
from loraloop.service.jobs import pending_specs, spec_key
from loraloop.store.backends import FileStore
from loraloop.store.trajectories import episode_end, parse_episode
from loraloop.tasks.base import Registry
from tests.unit.test_halo_agent import ANSWER, TASK, TextShell


class CountingStore(FileStore):
    """A real folder store that counts the requests made of it."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.calls: list[str] = []

    def get_bytes(self, key):
        self.calls.append("get")
        return super().get_bytes(key)

    def exists(self, key):
        self.calls.append("exists")
        return super().exists(key)

    def list(self, prefix=""):
        self.calls.append("list")
        return super().list(prefix)


def stored_episode(store, attempt: int, answer: str = ANSWER) -> str:
    session = EpisodeSession(store, TextShell(), TASK, mode="m", run_id="r", attempt=attempt)
    session.start()
    session.act("Act: bash\n```bash\nls\n```", source="worker")
    session.act(answer, source="worker")
    assert session.finish()
    return session.key


def test_a_planned_registry_is_the_one_its_episodes_use_and_a_worker_loads_each_once(monkeypatch, tmp_path):
    loads = []
    real = task_registry.load_registry
    monkeypatch.setattr(task_registry, "load_registry", lambda path: loads.append(path) or real(path))
    planned = task_registry.remember("configs/tasks/os", Registry(name="planned"))
    assert task_registry.shared_registry("configs/tasks/os") is planned and loads == []
    first = task_registry.shared_registry("tests/fixtures/rl_coin")
    assert task_registry.shared_registry("tests/fixtures/rl_coin") is first and loads == ["tests/fixtures/rl_coin"]
    for n in range(task_registry.SHARED):  # the oldest are let go past SHARED
        task_registry.remember(f"other-{n}", Registry(name=str(n)))
    assert task_registry.shared_registry("configs/tasks/os") is not planned and loads[-1] == "configs/tasks/os"


@pytest.mark.parametrize("size", [0, 1, 2, 50])
def test_a_task_is_found_by_its_index_and_the_first_of_a_name_wins(size):
    registry = task_registry.load_registry("configs/tasks/os")
    tasks = registry.tasks[:size]
    small = Registry(name="small", tasks=list(tasks))
    for task in tasks:
        assert small.get(task.index) is task
    with pytest.raises(TaskFormatError, match="registry small: no task with index 'nope'"):
        small.get("nope")
    if tasks:  # a task added after the first look-up is found too; a second of a name does not shadow the first
        extra = registry.tasks[size]
        small.tasks += [extra, tasks[0]]
        assert small.get(extra.index) is extra and small.get(tasks[0].index) is tasks[0]


def test_a_stored_episode_is_read_once_and_only_its_end_is_parsed(tmp_path):
    store = CountingStore(tmp_path)
    key = stored_episode(store, 0)
    store.calls.clear()
    summary = stored_summary(store, key)
    assert store.calls == ["get"]  # one request: no exists() before the read
    data = store.get_bytes(key)
    assert episode_end(key, data) == parse_episode(key, data).end
    assert summary.success and summary.skipped and summary.steps == 2
    store.calls.clear()
    assert stored_summary(store, key.replace("attempt_0", "attempt_9")) is None and store.calls == ["get"]


def test_booking_lists_each_run_once(tmp_path):
    store = CountingStore(tmp_path)
    done = {stored_episode(store, attempt) for attempt in (0, 2)}
    specs = [
        EpisodeSpec(
            mode="m",
            run_id="r",
            task_registry="x",
            task_id=TASK.index,
            task_index=0,
            attempt=k,
            seed=k,
            task_seed=0,
            temperature=0.0,
            policy="scripted",
            model=None,
            max_steps=2,
        )
        for k in range(4)
    ]
    store.calls.clear()
    todo = pending_specs(specs, store)
    assert [s.attempt for s in todo] == [1, 3] and {spec_key(s) for s in specs} - {spec_key(s) for s in todo} == done
    assert store.calls == ["list"]
    assert pending_specs([], store) == []
