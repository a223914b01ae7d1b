"""LORALOOP_ROLLOUT_CPUS: taskset syntax parsed exactly, bad lists named, and where it takes effect (an episode
thread's affinity, the shell container's --cpuset-cpus)."""

from __future__ import annotations

import os
import threading

import pytest

from loraloop.envs.shell.docker import Limits
from loraloop.errors import ConfigError
from loraloop.hardware import cpu_list
from loraloop.service.local import LocalJobs, pin_thread
from loraloop.settings import Settings

pytestmark = pytest.mark.unit
MINE = sorted(os.sched_getaffinity(0))


def test_lists_in_taskset_syntax():
    first = MINE[0]
    assert cpu_list("") == set() and cpu_list(f"{first}") == {first}
    assert cpu_list(f"{first}-{first}") == {first} and cpu_list(f" {first} , {first}") == {first}
    assert cpu_list(",".join(map(str, MINE))) == set(MINE) == cpu_list(f"{MINE[0]}-{MINE[-1]}")


@pytest.mark.parametrize("bad", ["a", "1-", "-1", "3-1", "0;1", "0-x"])
def test_a_malformed_list_is_named(bad):
    with pytest.raises(ConfigError, match=rf"LORALOOP_ROLLOUT_CPUS='{bad}': .* is not a CPU or a range"):
        cpu_list(bad)


def test_a_cpu_the_machine_lacks_is_named_before_any_episode(tmp_path):
    beyond = os.cpu_count()
    with pytest.raises(ConfigError, match=rf"CPU {beyond} is not one of this machine's \(0-{beyond - 1}\)"):
        LocalJobs(Settings(rollout_cpus=str(beyond), store_url=f"file://{tmp_path}"))


def test_a_trainer_pinned_to_other_cpus_may_still_give_rollouts_theirs(tmp_path):
    """bench/rl_async.py's layout: the process's main thread trains on the last CPU, the episodes run on the first."""
    found = {}

    def trainer():
        os.sched_setaffinity(0, {MINE[-1]})
        found["cpus"] = LocalJobs(Settings(rollout_cpus=str(MINE[0]), store_url=f"file://{tmp_path}")).cpus

    thread = threading.Thread(target=trainer)
    thread.start()
    thread.join()
    assert found["cpus"] == {MINE[0]}


def test_an_episode_thread_runs_on_the_listed_cpus_and_the_process_does_not_move():
    seen = {}

    def episode():
        pin_thread({MINE[-1]})
        seen["thread"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=episode)
    thread.start()
    thread.join()
    assert seen["thread"] == {MINE[-1]} and sorted(os.sched_getaffinity(0)) == MINE


def test_shell_containers_get_the_same_cpus():
    args = Limits.from_settings(Settings(rollout_cpus="0")).args()
    assert args[args.index("--cpuset-cpus") + 1] == "0"
    assert "--cpuset-cpus" not in Limits.from_settings(Settings()).args()
