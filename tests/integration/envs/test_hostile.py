"""Hostile commands stay inside their container: the host, this process and the next episode are fine."""

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from loraloop.envs.shell.env import ShellEnv
from tests.helpers import BASH, simple_task

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture
def tight(settings_for):
    """Small limits so each attack hits them within seconds."""
    return settings_for(
        command_timeout_s=3, container_memory="256m", container_pids=128, container_max_file_mb=64, container_tmp_mb=32
    )


def step_timed(env, command):
    started = time.monotonic()
    result = env.step(BASH.format(command))
    return result, time.monotonic() - started


def next_episode_is_clean(settings):
    """A new episode starts, runs a command and finds none of the previous episode's debris."""
    with ShellEnv(simple_task(), settings) as env:
        env.reset()
        result, seconds = step_timed(env, "ls /root; ls /root/fill /tmp/fill 2>&1 | head -2; nproc")
        assert result.observation.startswith("The output of the OS:\n\nd\n") and seconds < 3
        assert "No such file" in result.observation


def container_gone(container):
    return subprocess.run(["docker", "inspect", container], capture_output=True).returncode != 0


def container_pids(container: str) -> int:
    """The container's pid count read from the host: its cgroup's pids.current (cgroup v1 or v2, cgroupfs or
    systemd driver), else the processes `docker top` lists. Not `docker exec … cat`: with the bomb at the limit,
    exec itself cannot fork and fails ("read init-p: connection reset by peer"), seen under load."""
    full = subprocess.run(["docker", "inspect", "-f", "{{.Id}}", container], capture_output=True, text=True, check=True)
    cid = full.stdout.strip()
    for path in (f"pids/docker/{cid}", f"docker/{cid}", f"system.slice/docker-{cid}.scope"):
        current = Path("/sys/fs/cgroup") / path / "pids.current"
        if current.is_file():
            return int(current.read_text())
    top = subprocess.run(["docker", "top", container, "-eo", "pid"], capture_output=True, text=True, check=True)
    return len(top.stdout.splitlines()) - 1


def test_fork_bomb_is_contained(tight):
    with ShellEnv(simple_task(), tight) as env:
        env.reset()
        step_timed(env, ":(){ :|:& };:")
        later, seconds = step_timed(env, "echo alive")
        assert seconds < 3 + 5 + 10  # the pids limit holds; the step ends within timeout and kill
        assert container_pids(env.container) <= 128
        container = env.container
    assert container_gone(container)
    next_episode_is_clean(tight)


def test_output_flood_and_endless_sleep(tight):
    with ShellEnv(simple_task(), tight) as env:
        env.reset()
        flood, seconds = step_timed(env, "yes")
        assert flood.info.error == "timeout" and seconds < 3 + 6
        assert flood.observation.startswith("The output of the OS:\n\ny\ny\n")
        assert "[truncated because the output is too long]" in flood.observation
        sleep, seconds = step_timed(env, "sleep 1000")
        assert sleep.info.error == "timeout" and seconds < 3 + 6
        assert step_timed(env, "echo still here")[0].observation == "The output of the OS:\n\nstill here\n"


def test_disk_and_memory_limits(tight):
    free_before = shutil.disk_usage("/").free
    with ShellEnv(simple_task(), tight) as env:
        env.reset()
        big_file, _ = step_timed(
            env, "dd if=/dev/zero of=/root/fill bs=1M count=500 2>&1 | tail -1; stat -c %s /root/fill"
        )
        # ulimit fsize: the file stops at 64 MiB (its size, not du's blocks: an extra block was allocated under load)
        assert big_file.observation.rstrip().endswith(f"\n{64 * 2**20}"), big_file.observation
        tmp, _ = step_timed(env, "dd if=/dev/zero of=/tmp/fill bs=1M count=500 2>&1")
        assert "No space left on device" in tmp.observation
        memory, _ = step_timed(env, 'python3 -c "b = bytearray(600 * 2**20)"; echo exit=$?')
        assert "MemoryError" in memory.observation or "Killed" in memory.observation or "exit=137" in memory.observation
        assert step_timed(env, "echo ok")[0].observation.endswith("ok\n")
    assert free_before - shutil.disk_usage("/").free < 512 * 2**20
    next_episode_is_clean(tight)


def test_rm_rf_root_and_the_network_stay_inside(tight, redis_url):
    host_port = redis_url.rsplit(":", 1)[1].split("/")[0]
    with ShellEnv(simple_task(), tight) as env:
        env.reset()
        net, _ = step_timed(env, f"curl -sS -m 2 http://127.0.0.1:{host_port}/ 2>&1; ls /sys/class/net")
        assert "Failed to connect" in net.observation and net.observation.rstrip().endswith("lo")
        step_timed(env, "rm -rf --no-preserve-root / 2>/dev/null; echo done")
        # The 3 s timeout may stop rm anywhere, and what it removed may include the shell's own tools,
        # so the wreck is counted from outside: the files the container lost.
        deleted = [
            line
            for line in subprocess.run(
                ["docker", "diff", env.container], capture_output=True, text=True, check=True
            ).stdout.splitlines()
            if line.startswith("D ")
        ]
        assert len(deleted) > 10, deleted
        _, seconds = step_timed(env, "ls /usr/bin | wc -l")  # the wrecked shell still answers in time
        assert seconds < 3 + 6
        container = env.container
    assert container_gone(container)
    assert (
        shutil.which("docker")
        and subprocess.run(["redis-cli", "-p", host_port, "ping"], capture_output=True, text=True).stdout.strip()
        == "PONG"
    )
    next_episode_is_clean(tight)


def test_many_files_cannot_fill_the_host_disk_on_the_envd_engine(settings_for, monkeypatch):
    """`make envd`'s engine (btrfs with quotas) caps what a container writes in all, not file by file: twelve
    100 MB files, each under the per-file limit, stop at LORALOOP_CONTAINER_DISK, and the engine's filesystem
    grows by no more than that."""
    running = subprocess.run(["bash", "scripts/envd.sh", "status"], capture_output=True, timeout=60).returncode == 0
    started = subprocess.run(
        ["bash", "scripts/envd.sh", "start"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "LORALOOP_ENVD_IMAGES": "loraloop/os-env:latest"},
    )
    assert started.returncode == 0, started.stderr
    try:
        socket = subprocess.run(["bash", "scripts/envd.sh", "socket"], capture_output=True, text=True).stdout.strip()
        monkeypatch.setenv("DOCKER_HOST", socket)
        root = "volumes/.run/envd/root"
        before = shutil.disk_usage(root).used
        settings = settings_for(container_disk="1g", container_max_file_mb=512, command_timeout_s=60)
        with ShellEnv(simple_task(), settings) as env:
            env.reset()
            result, _ = step_timed(
                env,
                "for i in $(seq 1 12); do dd if=/dev/zero of=/root/f$i bs=1M count=100 "
                "2>&1 | tail -n 1; done; du -sm /root | cut -f1",
            )
            written_mb = int(result.observation.strip().splitlines()[-1])
            grown_mb = (shutil.disk_usage(root).used - before) / 2**20
            container = env.container
        assert "Disk quota exceeded" in result.observation and written_mb < 1024, result.observation[-400:]
        assert grown_mb < 1024, grown_mb
        assert container_gone(container)
    finally:  # an engine this test started goes with it (it once outlived the suite); one found running stays
        if not running:
            subprocess.run(["bash", "scripts/envd.sh", "stop"], capture_output=True, timeout=120)
    print(f"envd: {written_mb} MB written of 1200 tried under a 1g cap; the engine's disk grew {grown_mb:.0f} MB")


def test_commands_run_on_the_cpus_rollouts_are_given(settings_for):
    """LORALOOP_ROLLOUT_CPUS keeps a shell episode's commands on its CPUs (docker run --cpuset-cpus), so that a
    trainer on the other cores of one machine keeps them; unset, a command may use every CPU."""
    cpu = max(os.sched_getaffinity(0))
    for rollout_cpus, allowed in ((str(cpu), str(cpu)), ("", None)):
        with ShellEnv(simple_task(), settings_for(rollout_cpus=rollout_cpus)) as env:
            env.reset()
            result, _ = step_timed(env, "grep Cpus_allowed_list /proc/self/status")
        listed = result.observation.split("Cpus_allowed_list:")[1].split()[0]
        assert listed == allowed if allowed else listed != str(cpu) or os.cpu_count() == 1, result.observation
