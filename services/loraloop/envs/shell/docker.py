"""A thin client over the docker CLI (it honours DOCKER_HOST and contexts like users expect)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from dataclasses import dataclass

from loraloop.errors import EnvironmentFailure, ServiceUnavailable
from loraloop.settings import get_settings

LABEL = "loraloop.role=shell-env"
OWNER_LABEL = "loraloop.owner"
CREATOR_LABEL = "loraloop.creator"  # the process that started the container, whoever owns it (`shared_owner`)
PROJECT_LABEL = "loraloop.project"


def owner_id() -> str:
    """This process as a container owner: host name and pid (a dead owner's containers are reaped)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def shared_owner() -> str:
    """The owner of a shared episode's container (a Task Server in Redis mode): this host, no process. Any replica
    goes on with the episode after the one that started it stops, so no pid check may reap it; the episode's end
    or the Task Servers' idle expiry removes it, and `reap` once it has stopped."""
    return f"{socket.gethostname()}:shared"


@dataclass
class ExecResult:
    """Exit code and captured output of a command run in a container."""

    returncode: int
    stdout: str
    stderr: str


def _docker(*args: str, input: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
    if shutil.which("docker") is None:
        raise ServiceUnavailable("docker CLI not found: install Docker (e.g. 'apt-get install -y docker.io')")
    try:
        proc = subprocess.run(
            ["docker", *args], input=input, capture_output=True, text=True, timeout=timeout, errors="replace"
        )
    except subprocess.TimeoutExpired as exc:
        raise EnvironmentFailure(f"docker {args[0]} timed out after {timeout:.0f} s") from exc
    if proc.returncode != 0 and "Cannot connect to the Docker daemon" in proc.stderr:
        raise ServiceUnavailable(proc.stderr.strip().splitlines()[0])
    return proc


@dataclass(frozen=True)
class Limits:
    """What one environment container may use; hostile commands hit these, not the host."""

    memory: str = "512m"
    pids: int = 256
    cpus: float = 1.0
    max_file_mb: int = 512
    tmp_mb: int = 256
    disk: str = ""
    network: str = "none"
    cpuset: str = ""  # the CPUs it runs on (LORALOOP_ROLLOUT_CPUS; empty: any)

    @classmethod
    def from_settings(cls, settings, network: str = "none") -> Limits:
        """The limits configured in the settings (LORALOOP_CONTAINER_*)."""
        return cls(
            memory=settings.container_memory,
            pids=settings.container_pids,
            cpus=settings.container_cpus,
            max_file_mb=settings.container_max_file_mb,
            tmp_mb=settings.container_tmp_mb,
            disk=settings.container_disk,
            network=network,
            cpuset=settings.rollout_cpus,
        )

    def args(self) -> list[str]:
        """`docker run` flags: no network by default, memory without swap, pids, CPUs, file size, /tmp."""
        fsize = self.max_file_mb * 1024 * 1024
        args = [
            "--network",
            self.network,
            "--memory",
            self.memory,
            "--memory-swap",
            self.memory,
            "--pids-limit",
            str(self.pids),
            "--cpus",
            str(self.cpus),
            "--ulimit",
            f"fsize={fsize}:{fsize}",
            "--tmpfs",
            f"/tmp:rw,exec,size={self.tmp_mb}m",
            "--security-opt",
            "no-new-privileges",
            "--cap-drop",
            "NET_RAW",
            "--cap-drop",
            "MKNOD",
            "--cap-drop",
            "SYS_CHROOT",
            "--cap-drop",
            "AUDIT_WRITE",
            "--cap-drop",
            "SETFCAP",
        ]
        if self.cpuset:
            args += ["--cpuset-cpus", self.cpuset]
        if self.disk:
            args += ["--storage-opt", f"size={self.disk}"]
        return args


def run_container(image: str, *, labels: dict[str, str], limits: Limits, owner: str | None = None) -> str:
    """Start a detached, resource-limited container that idles until removed, owned by `owner` (this process by
    default); return its id."""
    args = ["run", "-d", *limits.args(), "--label", LABEL, "--label", f"{OWNER_LABEL}={owner or owner_id()}"]
    args += ["--label", f"{CREATOR_LABEL}={owner_id()}"]
    project = get_settings().project
    if project:  # a Compose stack's `make down` removes its environment containers by this label
        args += ["--label", f"{PROJECT_LABEL}={project}"]
    for key, value in labels.items():
        args += ["--label", f"loraloop.{key}={value}"]
    proc = _docker(*args, image, "sleep", "infinity")
    if proc.returncode != 0:
        raise EnvironmentFailure(f"cannot start a container from image {image!r}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def exec_in(
    container: str,
    argv: list[str],
    *,
    input: str | None = None,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
) -> ExecResult:
    """Run argv in the container (stdin from `input`, `env` added to its environment) and capture its output."""
    options = [*(["-i"] if input is not None else []), *(f"--env={k}={v}" for k, v in (env or {}).items())]
    proc = _docker("exec", *options, container, *argv, input=input, timeout=timeout)
    return ExecResult(proc.returncode, proc.stdout, proc.stderr)


def remove(container: str) -> None:
    """Force-remove a container; a container already gone is fine."""
    _docker("rm", "-f", container, timeout=30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap(owner: str | None = None) -> int:
    """Remove environment containers whose owner process on this host is gone (or those of `owner`), and this
    host's containers that stopped (an environment container runs until removed: one that stopped was killed,
    or its engine restarted, and serves nobody).

    Running containers of live processes, and containers of other hosts sharing the engine, are left alone.
    """
    proc = _docker(
        "ps",
        "-a",
        "--filter",
        f"label={LABEL}",
        "--format",
        f'{{{{.ID}}}} {{{{.State}}}} {{{{.Label "{OWNER_LABEL}"}}}}',
    )
    host = socket.gethostname()
    doomed = []
    for line in proc.stdout.splitlines():
        cid, state, who = (line.split(" ", 2) + ["", ""])[:3]
        who_host, _, pid = who.rpartition(":")
        if owner is not None:
            if who == owner:
                doomed.append(cid)
        elif who_host == host and (state in ("exited", "dead") or pid.isdigit() and not _alive(int(pid))):
            doomed.append(cid)
    if doomed:
        _docker("rm", "-f", *doomed, timeout=120)
    return len(doomed)


def image_exists(image: str) -> bool:
    """True when the engine has the image locally."""
    return _docker("image", "inspect", image).returncode == 0
