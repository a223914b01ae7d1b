"""`make tunnel` (scripts/tunnel.sh) through a real OpenSSH server standing in for the GPU host.

The "GPU host" is an sshd on a loopback port with its own host key and authorized key; its "vLLM" is
an HTTP server on another loopback port. The tunnel must bind 127.0.0.1 only, carry requests, say
when the connection drops (its sshd session killed) and come back by itself.
"""

import http.server
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers import free_port, needs, wait_port

SSHD = "/usr/sbin/sshd"


class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b"served on the gpu host\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def gpu_host(tmp_path):
    """(ssh options, remote service port, sshd pid) for an sshd that accepts one fresh key."""
    if not (os.path.exists(SSHD) and shutil.which("ssh")):
        needs("OpenSSH", f"no {SSHD} or no ssh on PATH", "run `make setup` (installs openssh-server)")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)], check=True)
    (tmp_path / "authorized_keys").write_text((tmp_path / "client_key.pub").read_text())
    os.chmod(tmp_path / "authorized_keys", 0o600)
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    ssh_port, service_port = free_port(), free_port()
    config = tmp_path / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\nPort {ssh_port}\nHostKey {tmp_path / 'host_key'}\n"
        f"AuthorizedKeysFile {tmp_path / 'authorized_keys'}\nPidFile {tmp_path / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "PermitRootLogin prohibit-password\nAllowTcpForwarding yes\n"
    )
    sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", service_port), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    wait_port(ssh_port)
    opts = (
        f"-p {ssh_port} -i {tmp_path / 'client_key'} -o StrictHostKeyChecking=no "
        f"-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    )
    yield opts, service_port, sshd.pid
    server.shutdown()
    sshd.terminate()
    sshd.wait(10)


def listening(port: int) -> list[str]:
    """Local addresses listening on `port`."""
    out = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines()]


def fetch(port: int, timeout: float = 30) -> str:
    """GET through the tunnel, retrying until it answers or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/", timeout=5).text
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_tunnel_forwards_on_loopback_says_when_it_drops_and_reconnects(gpu_host, tmp_path):
    opts, service_port, sshd_pid = gpu_host
    local = free_port()
    log = open(tmp_path / "tunnel.log", "w+")
    tunnel = subprocess.Popen(
        ["make", "--no-print-directory", "tunnel", "GPU_HOST=root@127.0.0.1", f"TUNNEL_PORTS={local}:{service_port}"],
        env={**os.environ, "TUNNEL_SSH_OPTS": opts, "TUNNEL_RETRY_S": "1"},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        assert fetch(local) == "served on the gpu host\n"
        assert listening(local) == [f"127.0.0.1:{local}"]  # loopback only, never 0.0.0.0
        sessions = subprocess.run(["pgrep", "-P", str(sshd_pid)], capture_output=True, text=True).stdout.split()
        assert sessions, "no sshd session for the tunnel"
        for pid in sessions:  # the connection dies on the GPU host's side
            os.kill(int(pid), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while "dropped" not in Path(log.name).read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        text = Path(log.name).read_text()
        assert "tunnel: the SSH connection to root@127.0.0.1 dropped" in text, text
        assert "unreachable until it is back. Reconnecting in 1 s." in text
        assert fetch(local) == "served on the gpu host\n"  # back by itself, on a new connection
        assert Path(log.name).read_text().count("tunnel: forwarding") == 2
    finally:
        os.killpg(tunnel.pid, signal.SIGTERM)
        tunnel.wait(10)
        log.close()
