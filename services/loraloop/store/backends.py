"""Object stores with whole-object writes: a local folder (file://) or an S3 bucket (s3://).

Every object is written with the SHA-256 of its bytes in its metadata (S3 user metadata `sha256`; a file's
extended attribute `user.loraloop.sha256`), so `loraloop store verify` can tell a damaged object from a whole one.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from loraloop.errors import ConfigError, StoreUnavailable, without_credentials
from loraloop.input_rules import store_key_problem
from loraloop.logs import get_logger
from loraloop.settings import Settings, get_settings


class Store(Protocol):
    """Keys are '/'-separated paths; put_bytes replaces an object whole or not at all."""

    url: str
    shown: str  # the store named for a client: no host folder, no credentials (shown_store)

    def put_bytes(self, key: str, data: bytes) -> None: ...

    def put_new(self, key: str, data: bytes) -> bool: ...

    def get_bytes(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def list(self, prefix: str = "") -> Iterator[str]: ...

    def checksum(self, key: str) -> str | None: ...

    waited_s: float  # seconds spent waiting for an unreachable server (0 for a folder)


CHECKSUM_XATTR = "user.loraloop.sha256"


def sha256(data: bytes) -> str:
    """The hex SHA-256 an object's metadata carries."""
    return hashlib.sha256(data).hexdigest()


class FileStore:
    """A folder; writes go to a temporary file that is renamed into place."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        self._root = str(self.root)
        self.waited_s = 0.0  # a folder never waits; the same field as S3Store's
        self.url = f"file://{self.root}"
        self.shown = shown_store(self.url)

    def _file(self, key: str) -> str:
        """The object's file path as a string (reads are hot in exports: no pathlib per key). A key that would leave
        the folder, or that no file could have (input_rules.store_key_problem), is a ConfigError naming the rule and
        not the host's folder."""
        parts = key.split("/")
        if key.startswith("/") or ".." in parts or "\\" in key:
            raise ConfigError(f"store key {key[:200]!r} escapes the store root (a '..' part, a leading '/' or a '\\')")
        problem = store_key_problem(key)
        if problem:
            raise ConfigError(problem)
        return os.path.join(self._root, *[p for p in parts if p and p != "."])

    def _path(self, key: str) -> Path:
        return Path(self._file(key))

    def _write(self, key: str, data: bytes, place) -> bool:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                try:  # set before the file is placed, so no reader sees the object without it
                    os.setxattr(handle.fileno(), CHECKSUM_XATTR, sha256(data).encode())
                except OSError:  # a filesystem without user xattrs: the object is kept, unverifiable
                    pass
                os.fsync(handle.fileno())
            return place(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)

    def put_bytes(self, key: str, data: bytes) -> None:
        """Write the object atomically (temp file + fsync + rename)."""
        self._write(key, data, os.replace)

    def put_new(self, key: str, data: bytes) -> bool:
        """Write the object atomically unless the key exists; False (nothing written) if it does."""

        def link(tmp: str, path: Path) -> bool:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            return True

        return self._write(key, data, link)

    def get_bytes(self, key: str) -> bytes:
        """Read an object; a missing key raises FileNotFoundError naming it."""
        with open(self._file(key), "rb") as handle:
            return handle.read()

    def exists(self, key: str) -> bool:
        """True when the object exists."""
        return os.path.isfile(self._file(key))

    def checksum(self, key: str) -> str | None:
        """The SHA-256 written with the object; None when it has none (written before checksums, or no xattrs)."""
        try:
            return os.getxattr(self._file(key), CHECKSUM_XATTR).decode()
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{self.url}: no object {key}") from exc
        except OSError:  # no such attribute, or a filesystem without user xattrs
            return None

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys under prefix, sorted, skipping partial writes."""
        base = self._path(prefix) if prefix else self.root
        if base.is_file():
            yield prefix
            return
        if not base.is_dir():
            return
        root = str(self.root)
        keys = []
        for folder, _, files in os.walk(base):
            rel = os.path.relpath(folder, root).replace(os.sep, "/")
            keys += [name if rel == "." else f"{rel}/{name}" for name in files if not name.endswith(".part")]
        yield from sorted(keys)


class S3Store:
    """An S3 bucket and prefix; each PUT is atomic, so readers see whole objects only."""

    def __init__(self, url: str, settings: Settings) -> None:
        import boto3
        from botocore.config import Config

        parsed = urlparse(url)
        if not parsed.netloc:
            raise ConfigError(f"store URL {url!r} needs a bucket: s3://BUCKET[/PREFIX]")
        self.url = url
        self.shown = shown_store(url, settings.s3_endpoint_url)
        self.retry_s = settings.store_retry_s
        self.waited_s = 0.0  # seconds this store spent waiting for an unreachable server
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        self.endpoint = settings.s3_endpoint_url
        self.client = boto3.client(
            "s3",
            endpoint_url=settings.s3_endpoint_url,
            region_name=settings.s3_region,
            aws_access_key_id=settings.s3_access_key,
            aws_secret_access_key=settings.s3_secret_key,
            config=Config(
                retries={"max_attempts": 5, "mode": "standard"},
                connect_timeout=5,
                read_timeout=60,
                s3={"addressing_style": "path"},
            ),
        )

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _call(self, method: str, **kwargs):
        """One S3 call. While the server cannot be reached (refused, reset, timed out), it is tried again with
        backoff (0.5 s doubling to 8 s) for up to LORALOOP_STORE_RETRY_S, so an outage shorter than that loses no
        episode; the seconds waited add up in `waited_s`."""
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            ReadTimeoutError,
        )

        deadline, delay = None, 0.5
        while True:
            try:
                return getattr(self.client, method)(**kwargs)
            except (EndpointConnectionError, ConnectionClosedError, ConnectTimeoutError, ReadTimeoutError) as exc:
                now = time.monotonic()
                deadline = deadline or now + self.retry_s
                where = f"S3 store unreachable: {self.shown}"
                if now >= deadline:
                    raise StoreUnavailable(
                        f"{where}: gave up after {self.retry_s:.0f} s (LORALOOP_STORE_RETRY_S)"
                    ) from exc
                pause = min(delay, deadline - now)
                get_logger("loraloop.store").warning(
                    "store unreachable, trying again",
                    fields={
                        "call": method,
                        "key": kwargs.get("Key"),
                        "in_s": round(pause, 1),
                        "error": type(exc).__name__,
                    },
                )
                time.sleep(pause)
                self.waited_s += pause
                delay = min(delay * 2, 8.0)
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                if code in ("NoSuchKey", "404"):
                    raise FileNotFoundError(f"{self.url}: no object {kwargs.get('Key')}") from exc
                if code == "NoSuchBucket":
                    raise ConfigError(f"{self.url}: bucket {self.bucket!r} does not exist") from exc
                raise

    def ensure_bucket(self) -> None:
        """Create the bucket when it does not exist yet."""
        from botocore.exceptions import ClientError

        try:
            self._call("head_bucket", Bucket=self.bucket)
        except (ClientError, FileNotFoundError, ConfigError):
            self._call("create_bucket", Bucket=self.bucket)

    def put_bytes(self, key: str, data: bytes) -> None:
        """PUT the object (S3 makes it visible whole or not at all)."""
        self._call("put_object", Bucket=self.bucket, Key=self._key(key), Body=data, Metadata={"sha256": sha256(data)})

    def put_new(self, key: str, data: bytes) -> bool:
        """PUT with If-None-Match: *; False (nothing written) when the key exists."""
        from botocore.exceptions import ClientError

        try:
            self._call(
                "put_object",
                Bucket=self.bucket,
                Key=self._key(key),
                Body=data,
                IfNoneMatch="*",
                Metadata={"sha256": sha256(data)},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                return False
            raise
        return True

    def get_bytes(self, key: str) -> bytes:
        """GET the object's bytes."""
        return self._call("get_object", Bucket=self.bucket, Key=self._key(key))["Body"].read()

    def exists(self, key: str) -> bool:
        """True when the object exists."""
        try:
            self._call("head_object", Bucket=self.bucket, Key=self._key(key))
            return True
        except FileNotFoundError:
            return False

    def checksum(self, key: str) -> str | None:
        """The SHA-256 written with the object (its `sha256` user metadata); None when it has none."""
        head = self._call("head_object", Bucket=self.bucket, Key=self._key(key))
        return head.get("Metadata", {}).get("sha256")

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys under prefix, in S3's (sorted) order."""
        paginator = self.client.get_paginator("list_objects_v2")
        full = self._key(prefix)
        strip = len(self.prefix) + 1 if self.prefix else 0
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full):
                for obj in page.get("Contents", []):
                    yield obj["Key"][strip:]
        except Exception as exc:  # botocore raises several types here; name the URL either way
            from botocore.exceptions import EndpointConnectionError

            if isinstance(exc, EndpointConnectionError):
                raise StoreUnavailable(f"S3 store unreachable: {self.shown}") from exc
            raise


def shown_store(url: str, endpoint: str | None = None) -> str:
    """A store as an answer to a client may name it: a folder by its last part only (`file://…/store`), never the
    host path; a bucket with its prefix and the S3 endpoint without credentials (`s3://bucket/prefix on
    http://host:9000`)."""
    parsed = urlparse(url)
    if parsed.scheme == "s3":
        bucket = f"s3://{parsed.hostname or ''}{parsed.path.rstrip('/')}"
        return f"{bucket} on {without_credentials(endpoint)}" if endpoint else bucket
    return f"file://…/{Path(url.removeprefix('file://')).name}"


def shown_under(shown: str, prefix: str) -> str:
    """A folder of a store as shown_store shows the store: the prefix goes after the bucket, before its endpoint
    (`s3://bucket/trajectories/teacher/RUN/ on http://host:9000`)."""
    where, on, endpoint = shown.partition(" on ")
    return f"{where.rstrip('/')}/{prefix.strip('/')}/{on}{endpoint}"


def open_store(url: str | None = None, settings: Settings | None = None) -> Store:
    """Open the store named by a file:// or s3:// URL (default: settings.store_url)."""
    settings = settings or get_settings()
    url = url or settings.store_url
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return FileStore(url[len("file://") :])
    if parsed.scheme == "s3":
        store = S3Store(url, settings)
        store.ensure_bucket()
        return store
    if parsed.scheme == "":
        return FileStore(url)
    raise ConfigError(f"store URL {url!r}: scheme must be file:// or s3://")
