"""scripts/tunnel.sh (`make tunnel`) names a bad port before it connects anywhere."""

import subprocess


def test_a_bad_port_is_named_before_any_connection():
    proc = subprocess.run(
        ["bash", "scripts/tunnel.sh", "root@127.0.0.1", "8000 vllm"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2 and "'vllm' is not a port" in proc.stderr
