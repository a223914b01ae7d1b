"""A warm pool of started containers, each with its interactive shell already open.

Starting a container costs about half a second; an episode that takes one from the pool pays
only its task's own init. Every container serves one episode and is then removed: the pool
hands out fresh ones and refills itself in the background. One pool per process (per Celery
worker, per API replica); its containers carry the process as owner, so a dead process's spares
are reaped like any other leftover, and `close()` removes them on a clean shutdown.
"""

from __future__ import annotations

import atexit
import threading
from collections import defaultdict

from loraloop.envs.shell import docker
from loraloop.envs.shell.session import ShellSession
from loraloop.logs import get_logger

log = get_logger("loraloop.pool")


class ContainerPool:
    """Up to `size` ready (container, shell) pairs per image and limits."""

    def __init__(self, size: int, output_cap: int) -> None:
        self.size = size
        self.output_cap = output_cap
        self._ready: dict[tuple, list[tuple[str, ShellSession]]] = defaultdict(list)
        self._starting: dict[tuple, int] = defaultdict(int)
        self._lock = threading.Lock()
        self._closed = False

    def _start(
        self, image: str, limits: docker.Limits, labels: dict[str, str], owner: str | None = None
    ) -> tuple[str, ShellSession]:
        container = docker.run_container(image, labels=labels, limits=limits, owner=owner)
        try:
            return container, ShellSession(container, output_cap=self.output_cap)
        except BaseException:
            docker.remove(container)
            raise

    def acquire(
        self, image: str, limits: docker.Limits, labels: dict[str, str], owner: str | None = None
    ) -> tuple[str, ShellSession]:
        """A fresh container and its open shell: from the pool when one is ready, else started now.

        A spare whose shell has died (the engine restarted, the container was killed) is removed, not handed
        out: after an engine restart the pool is rebuilt by the next episodes instead of failing them. A container
        for another `owner` than this process (a shared episode's) is started now: a spare's owner label, this
        process, cannot be changed, and the reaper would remove it once this process is gone.
        """
        if owner is not None:
            return self._start(image, limits, labels, owner)
        key = (image, limits)
        while True:
            with self._lock:
                entry = self._ready[key].pop() if self._ready[key] else None
            if entry is None or entry[1].alive:
                break
            log.warning("spare container lost its shell; removed", fields={"container": entry[0][:12]})
            self._discard(entry)
        if self.size > 0:
            self._refill(key)
        return entry if entry is not None else self._start(image, limits, labels)

    def _refill(self, key: tuple) -> None:
        with self._lock:
            missing = self.size - len(self._ready[key]) - self._starting[key]
            self._starting[key] += max(missing, 0)
        for _ in range(max(missing, 0)):
            threading.Thread(target=self._add, args=(key,), daemon=True, name="pool-refill").start()

    def _add(self, key: tuple) -> None:
        image, limits = key
        try:
            entry = self._start(image, limits, {"pool": "spare"})
        except Exception as exc:  # the next acquire starts one cold and tries the refill again
            log.warning("pool refill failed", fields={"image": image, "error": exc})
            entry = None
        with self._lock:
            self._starting[key] -= 1
            if entry is not None and not self._closed:
                self._ready[key].append(entry)
                entry = None
        if entry is not None:
            self._discard(entry)

    def ready(self, image: str, limits: docker.Limits) -> int:
        """How many spares wait for this image and limits."""
        with self._lock:
            return len(self._ready[(image, limits)])

    def warm(self, image: str, limits: docker.Limits) -> None:
        """Start filling the pool for an image before the first episode asks."""
        if self.size > 0:
            self._refill((image, limits))

    @staticmethod
    def _discard(entry: tuple[str, ShellSession]) -> None:
        container, session = entry
        session.close()
        docker.remove(container)

    def close(self) -> None:
        """Remove every spare container (a clean shutdown of the process)."""
        with self._lock:
            self._closed = True
            spares = [entry for entries in self._ready.values() for entry in entries]
            self._ready.clear()
        for entry in spares:
            self._discard(entry)


_pools: dict[tuple[int, int], ContainerPool] = {}
_pools_lock = threading.Lock()


def get_pool(size: int, output_cap: int) -> ContainerPool:
    """This process's pool for the given size (0 = no spares: every container starts on demand)."""
    with _pools_lock:
        key = (size, output_cap)
        if key not in _pools:
            _pools[key] = ContainerPool(size, output_cap)
            atexit.register(_pools[key].close)
        return _pools[key]
