"""The Docker shell environment on real containers, and every bundled task proven solvable."""

import subprocess

import pytest

from loraloop.envs.shell.env import ShellEnv
from loraloop.task_registry import load_registry
from tests.helpers import BASH, outcome_of, play_both, simple_task

pytestmark = pytest.mark.usefixtures("docker_ready")
TASKS = load_registry("configs/tasks/os").tasks


def test_state_persists_and_timeouts_keep_the_shell(settings_for):
    settings = settings_for(command_timeout_s=2)
    with ShellEnv(simple_task(), settings) as env:
        assert env.reset()[0].startswith("Task: How many files")
        env.step(BASH.format("cd /root/d && export X=7 && (sleep 300 &)"))
        out = env.step(BASH.format("pwd; echo $X")).observation
        assert out == "The output of the OS:\n\n/root/d\n7\n"
        killed = env.step(BASH.format("sleep 100"))
        assert killed.info.error == "timeout" and "killed after 2 s" in killed.observation
        assert env.step(BASH.format('echo "unbalanced')).observation.startswith("The output of the OS:\n\nbash:")
        assert "/root/d" in env.step(BASH.format("cat; pwd")).observation  # cat must not eat the framing
        flood = env.step(BASH.format("yes | head -c 100000"))
        assert flood.observation.endswith("[truncated because the output is too long]")
        bad = env.step("I am not sure")
        assert not bad.done and "no valid action" in bad.observation
        done = env.step("Act: answer(1)")
        assert done.done and done.reward == 1.0 and done.info.success
        container = env.container
    gone = subprocess.run(["docker", "inspect", container], capture_output=True)
    assert gone.returncode != 0


def test_round_limit_and_network_none(settings_for):
    with ShellEnv(simple_task(), settings_for(), max_rounds=2) as env:
        env.reset()
        net = env.step(BASH.format("cat /sys/class/net/*/operstate | sort | tr '\\n' ' '; ls /sys/class/net"))
        assert "lo" in net.observation and "eth0" not in net.observation
        last = env.step(BASH.format("true"))
        assert last.done and last.info.status == "round_limit" and last.reward == 0.0


def test_failing_init_is_an_environment_error(settings_for):
    from loraloop.errors import EnvironmentFailure

    task = simple_task(create={"init": "exit 3"})
    env = ShellEnv(task, settings_for())
    with pytest.raises(EnvironmentFailure, match="init script #0 failed with exit 3"):
        env.reset()
    assert env.container is None


def test_init_failure_names_its_cause_not_apt_noise(settings_for):
    """`apt` warns about its CLI on stderr first; the cause (E: …) comes last, past 300 characters."""
    from loraloop.errors import EnvironmentFailure

    env = ShellEnv(simple_task(create={"init": "apt update && apt install -y net-tools iproute2 lsof"}), settings_for())
    with pytest.raises(EnvironmentFailure) as failure:
        env.reset()
    message = str(failure.value)
    assert "init script #0 failed with exit 100" in message
    assert message.endswith("E: Unable to locate package lsof") and "stable CLI interface" not in message
    assert len(message) < 400


def test_the_episodes_seed_reaches_init_and_checks_and_none_leaves_it_unset(settings_for):
    """reset(seed=k) gives the task's scripts $LORALOOP_SEED=k (init makes k files, the check compares the answer
    with it): a task that draws at random draws the same for the same seed; without a seed the variable is unset."""
    task = simple_task(
        create={"init": 'mkdir -p /root/d && for i in $(seq "$LORALOOP_SEED"); do touch /root/d/$i; done'},
        evaluation={"check": [{"language": "bash", "code": '[ "$1" = "${LORALOOP_SEED-unset}" ]'}]},
    )
    with ShellEnv(task, settings_for()) as env:
        env.reset(seed=3)
        assert env.step(BASH.format("ls /root/d | wc -l")).observation == "The output of the OS:\n\n3\n"
        assert env.handle()["seed"] == 3 and env.step("Act: answer(3)").info.success
        env.reset()
        assert env.step(BASH.format("ls /root/d | wc -l")).observation == "The output of the OS:\n\n0\n"
        assert env.step("Act: answer(unset)").info.success


def test_init_may_run_longer_than_a_check_up_to_its_own_timeout(settings_for):
    """A published init sleeps 60 s (train_0317 #356): init has LORALOOP_INIT_TIMEOUT_S, not 30 s."""
    from loraloop.errors import EnvironmentFailure

    slow = simple_task(create={"init": "sleep 3 && mkdir -p /root/d && touch /root/d/a"})
    with ShellEnv(slow, settings_for(init_timeout_s=40)) as env:
        env.reset()
        assert env.step("Act: answer(1)").info.success
    env = ShellEnv(slow, settings_for(init_timeout_s=1))
    with pytest.raises(EnvironmentFailure, match=r"task t-00000: init script #0: docker exec timed out after 1 s"):
        env.reset()
    assert env.container is None


def test_start_su_takes_over_the_shell(settings_for):
    """AgentBench types `start` into its one shell: after `su - jack` every command runs as jack."""
    task = simple_task(create={"init": "useradd -m jack && mkdir -p /root/d && touch /root/d/a"}, start="su - jack")
    settings = settings_for(command_timeout_s=2)
    with ShellEnv(task, settings, shared=True, max_rounds=20) as env:
        env.reset()
        assert env.step(BASH.format("whoami; pwd")).observation == "The output of the OS:\n\njack\n/home/jack\n"
        env.step(BASH.format("cd /tmp && export X=7 && (sleep 300 &)"))
        step = env.step(BASH.format("echo $X; pwd; ls /root"))
        assert (
            step.observation.startswith("The output of the OS:\n\n7\n/tmp\n")
            and "Permission denied" in step.observation
        )
        assert step.info.exit_code == 2
        killed = env.step(BASH.format("sleep 100"))
        assert killed.info.error == "timeout" and "killed after 2 s" in killed.observation
        assert env.step(BASH.format('echo "unbalanced')).info.exit_code == 2  # jack's sh (dash) survives it
        assert env.step(BASH.format("cat; whoami; pwd")).observation == "The output of the OS:\n\njack\n/tmp\n"
        processes = subprocess.run(
            ["docker", "exec", env.container, "ps", "-o", "user=,args=", "-u", "jack"], capture_output=True, text=True
        ).stdout
        assert "-sh" in processes and "sleep 300" in processes and "sleep 100" not in processes
        replica = ShellEnv.attach(
            task, settings, episode_id=env.episode_id, container=env.container, turn=env.turn, expected=env.expected
        )  # another process goes on with it
        assert replica.step(BASH.format("whoami; echo $X; pwd")).observation == (
            "The output of the OS:\n\njack\n7\n/tmp\n"
        )
        replica.detach()
        back = env.step(BASH.format("exit 3"))  # jack's shell ends: root's, below it, answers again
        assert back.info.exit_code == 3 and back.info.error is None
        assert env.step(BASH.format("whoami")).observation == "The output of the OS:\n\nroot\n"
        assert env.step("Act: answer(1)").info.success


@pytest.fixture(scope="module")
def bundled_outcomes(docker_ready, tmp_path_factory):
    """Every bundled task played (example, then a wrong answer) four episodes at a time, once for the module."""
    from loraloop.settings import Settings

    return play_both(TASKS, Settings(store_url=f"file://{tmp_path_factory.mktemp('store')}"))


@pytest.mark.parametrize("task", TASKS, ids=[t.index for t in TASKS])
def test_every_bundled_task_is_solvable_and_a_wrong_answer_fails(task, bundled_outcomes):
    solved, failed = outcome_of(bundled_outcomes, task)
    assert solved.info.success, f"{task.index}: example solution did not pass"
    assert failed.done and not failed.info.success, f"{task.index}: a wrong answer passed"


def test_tool_call_protocol_runs_the_same_env(settings_for):
    from loraloop.agents.policy import tool_call_text

    with ShellEnv(simple_task(), settings_for(), protocol="tools") as env:
        env.reset()
        assert "bash_action" in env.instructions and env.examples[1]["content"].startswith('{"name": "bash_action"')
        out = env.step(tool_call_text("bash_action", {"script": "ls /root/d | wc -l"}))
        assert out.observation == "The output of the OS:\n\n1\n"
        bad = env.step('{"name": "sudo_action", "arguments": {}}')
        assert not bad.done and "unknown tool 'sudo_action'" in bad.observation
        done = env.step(tool_call_text("answer_action", {"answer": "1"}))
        assert done.done and done.reward == 1.0


def test_network_is_opt_in_per_task(settings_for):
    """`create.network` names a Docker network; the test engine has only `host` and `none` (no bridge)."""
    with ShellEnv(
        simple_task(create={"init": "mkdir -p /root/d && touch /root/d/a", "network": "host"}), settings_for()
    ) as env:
        env.reset()
        assert "lo" in env.step(BASH.format("ls /sys/class/net")).observation
        inspect = subprocess.run(
            ["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}", env.container], capture_output=True, text=True
        ).stdout.strip()
        assert inspect == "host"
    with ShellEnv(simple_task(), settings_for()) as env:
        env.reset()
        inspect = subprocess.run(
            ["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}", env.container], capture_output=True, text=True
        ).stdout.strip()
        assert inspect == "none"
