"""The Verified Action Cache in a real Redis: workers in other processes share it, counts are atomic, keys expire."""

import shutil
import subprocess
import sys
import threading
import time

import pytest
import redis

from loraloop.agents.vac import RedisActionCache, open_action_cache
from loraloop.errors import ServiceUnavailable
from loraloop.kinds.registry import env_kind
from tests.helpers import free_port, wait_port

SHELL = env_kind("shell")
KEY = "shell:t1:abc"
LS = "Act: bash\n```bash\nls\n```"
OTHER = "Act: answer(3)"


def in_another_process(redis_url: str, code: str) -> str:
    """Run `code` with `cache` open on the same Redis in a fresh Python process; return what it prints."""
    program = (
        "from loraloop.agents.vac import open_action_cache\nfrom loraloop.kinds.registry import env_kind\n"
        f"cache = open_action_cache({redis_url!r}, 'ns')\n{code}"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def lookup(cache) -> tuple:
    found = cache.lookup(KEY, kind=SHELL, observation="", recent_actions=[])
    return found.action, found.event


def test_two_processes_share_the_cache(redis_url):
    cache = open_action_cache(redis_url, "ns")
    assert isinstance(cache, RedisActionCache) and lookup(cache) == (None, "miss")
    in_another_process(redis_url, f"cache.verified({KEY!r}, {LS!r})")
    assert lookup(cache) == (LS, "hit")  # verified by another worker, used here
    cache.failed(KEY, LS)
    seen = in_another_process(
        redis_url,
        f"print(cache.lookup({KEY!r}, kind=env_kind('shell'), observation='', recent_actions=[{LS!r}]).event)",
    )
    assert seen == "repeat"  # still there after one failure; the other worker just took it
    in_another_process(redis_url, f"cache.failed({KEY!r}, {LS!r})")
    assert lookup(cache) == (None, "miss")  # the second failure, in the other process, evicted it
    assert (
        open_action_cache(redis_url, "other").lookup(KEY, kind=SHELL, observation="", recent_actions=[]).event == "miss"
    )


def test_failures_from_two_workers_at_once_are_both_counted(redis_url):
    """Two clients fail the same entry at the same moment, 20 times over: each time both failures count (the entry
    is evicted), where a read-then-write update would lose one now and then."""
    one, two = open_action_cache(redis_url, "race"), open_action_cache(redis_url, "race")
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    entry = f"race:vac:{KEY}"
    one.verified(KEY, LS)
    one.failed(KEY, OTHER)  # another action's failure counts nothing against the entry
    assert raw.hgetall(entry) == {"action": LS, "failures": "0"} and 0 < raw.ttl(entry) <= 7 * 24 * 3600
    for _ in range(20):
        one.verified(KEY, LS)
        barrier = threading.Barrier(2)

        def fail(cache, barrier=barrier):
            barrier.wait()
            cache.failed(KEY, LS)

        threads = [threading.Thread(target=fail, args=(c,)) for c in (one, two)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not raw.exists(entry)
    two.verified(KEY, OTHER)  # the state is free for another action
    assert lookup(one) == (OTHER, "hit")


def test_a_broker_that_does_not_answer_is_named_without_its_password():
    cache = RedisActionCache(f"redis://user:secret@127.0.0.1:{free_port()}/0", "ns", outage_s=0)  # no waiting
    with pytest.raises(ServiceUnavailable, match=r"action cache: lookup failed at redis://127\.0\.0\.1:\d+/0") as exc:
        lookup(cache)
    assert "secret" not in str(exc.value)


def test_a_broker_restart_is_waited_out(tmp_path):
    """The broker stops for 3 s under a worker: its next lookup waits (backoff) and finds the entry again (the
    server keeps its data on disk across the restart, as the Compose broker does)."""
    port = free_port()
    command = [
        shutil.which("redis-server"),
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
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    restarted: list = []
    restart = threading.Timer(3.0, lambda: restarted.append(subprocess.Popen(command, stdout=subprocess.DEVNULL)))
    try:
        wait_port(port, 30)
        cache = RedisActionCache(f"redis://127.0.0.1:{port}/0", "ns", outage_s=20)
        cache.verified(KEY, LS)
        server.terminate()
        server.wait()
        restart.start()
        started = time.monotonic()
        assert lookup(cache) == (LS, "hit")
        assert time.monotonic() - started >= 2.5  # it waited for the broker rather than failing the episode
    finally:
        restart.cancel()
        if restart.ident is not None:
            restart.join()
        for proc in [server, *restarted]:
            proc.terminate()
            proc.wait()
