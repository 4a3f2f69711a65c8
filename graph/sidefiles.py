"""The files a store keeps beside its LanceDB tables (the writer and people locks, the commit
journal, notes of screenshots a forget is deleting), in a local folder or in an ``s3://`` bucket.

``side_files(uri)`` gives one of two with the same methods:

- ``LocalFiles``: files in the store folder, written whole (a temporary file renamed), mode 0600;
  a lock is an ``fcntl.flock`` on its file, released by the kernel when its holder dies.
- ``BucketFiles``: objects under the store's prefix, through boto3 (the ``mnemo[s3]`` extra). An
  object is written whole by S3 itself. A lock is a lease: an object created only if absent
  (``If-None-Match: *``), renewed by its holder every ``RENEW_S`` seconds, each renewal only if the
  object is still the one it wrote (``If-Match``). A holder that dies stops renewing, and after
  ``LEASE_S`` seconds, measured on the server's clock (its ``Date`` against the object's
  ``Last-Modified``), the next writer takes the lock over. A holder whose renewal fails has lost it
  and must stop writing: ``Lease.check`` raises ``LockLost``.

Credentials and the endpoint come from the usual AWS settings (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL`` for an S3-compatible server, and
``AWS_ALLOW_HTTP=true`` for one that speaks plain HTTP), read by boto3 and LanceDB alike. Other
object stores (``gs://``, ``az://``) are refused: their side files are not written yet.
"""

from __future__ import annotations

import contextlib
import email.utils
import fcntl
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

LEASE_S = 60.0  # a bucket lock not renewed for this long is taken over (its holder died)
RENEW_S = 15.0


class LockBusy(RuntimeError):
    """The lock is held by ``holder`` and was not released within the wait given."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


class LockLost(RuntimeError):
    """A bucket lock's lease could not be renewed: another process may hold it now."""


class SideFilesError(RuntimeError):
    """The store's URI names a place whose side files cannot be kept (or a missing extra)."""


class Lease(Protocol):
    def check(self) -> None: ...


class SideFiles(Protocol):
    where: str

    def read(self, name: str) -> bytes | None: ...
    def write(self, name: str, data: bytes) -> None: ...
    def delete(self, name: str) -> None: ...
    def names(self, folder: str) -> list[str]: ...
    def sizes(self) -> dict[str, int]: ...
    def lock(
        self,
        name: str,
        holder: str,
        wait_s: float | None = None,
        say: Callable[[str], None] | None = None,
    ) -> contextlib.AbstractContextManager[Lease]: ...


def side_files(uri: str) -> SideFiles:
    if "://" not in uri:
        return LocalFiles(Path(uri))
    if uri.startswith("s3://"):
        return BucketFiles(uri)
    raise SideFilesError(
        f"{uri}: a store is a local folder or an s3:// location; "
        f"{uri.split('://')[0]}:// is not supported"
    )


def delete_folder(files: SideFiles, folder: str) -> None:
    for name in files.names(folder):
        files.delete(name)


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while walking
                pass
    return total


def _wait_loop(
    holder_now: Callable[[], str],
    wait_s: float | None,
    say: Callable[[str], None] | None,
    what: str,
) -> Callable[[], None]:
    """One pause of a lock's wait: says once who holds it, raises ``LockBusy`` past ``wait_s``."""
    deadline = None if wait_s is None else time.monotonic() + wait_s
    told = False

    def pause() -> None:
        nonlocal told
        holder = holder_now() or "another process"
        if deadline is not None and time.monotonic() >= deadline:
            raise LockBusy(holder)
        if not told and say is not None:
            say(f"{what} is being written by {holder}; waiting for it to finish")
            told = True
        time.sleep(0.2)

    return pause


class _Held:
    def check(self) -> None:
        """A kernel lock is held until its holder closes it or dies: never lost."""


class LocalFiles:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def read(self, name: str) -> bytes | None:
        try:
            return (self.root / name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        path = self.root / name
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        work = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        fd = os.open(work, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(work, path)  # whole or not at all

    def delete(self, name: str) -> None:
        path = self.root / name
        path.unlink(missing_ok=True)
        if path.parent != self.root:
            with contextlib.suppress(OSError):  # the folder goes with its last file
                path.parent.rmdir()

    def names(self, folder: str) -> list[str]:
        base = self.root / folder
        if not base.is_dir():
            return []
        return sorted(str(p.relative_to(self.root)) for p in base.rglob("*") if p.is_file())

    def sizes(self) -> dict[str, int]:
        """Bytes under each top-level entry of the store."""
        if not self.root.is_dir():
            return {}
        return {
            p.name: folder_bytes(p) if p.is_dir() else p.lstat().st_size
            for p in self.root.iterdir()
        }

    @contextlib.contextmanager
    def lock(
        self,
        name: str,
        holder: str,
        wait_s: float | None = None,
        say: Callable[[str], None] | None = None,
    ) -> Iterator[Lease]:
        fd = os.open(self.root / name, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            pause = _wait_loop(
                lambda: os.pread(fd, 300, 0).decode(errors="replace").strip(),
                wait_s,
                say,
                self.where,
            )
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pause()
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode(), 0)
            yield _Held()
        finally:
            os.close(fd)  # and the lock with it


class BucketFiles:
    def __init__(self, uri: str) -> None:
        try:
            import boto3
            from botocore.exceptions import ClientError
        except ImportError:
            raise SideFilesError(
                f"{uri}: a store on S3 needs boto3: pip install 'mnemo[s3]'"
            ) from None
        endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT") or ""
        if endpoint.startswith("http://") and os.environ.get("AWS_ALLOW_HTTP", "").lower() not in (
            "1",
            "true",
        ):
            raise SideFilesError(
                f"{uri}: the S3 endpoint {endpoint} is plain HTTP; set AWS_ALLOW_HTTP=true "
                "to use it anyway (everything in the store travels unencrypted)"
            )
        self.where = uri
        self.bucket, _, prefix = uri.removeprefix("s3://").partition("/")
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._s3 = boto3.client("s3", endpoint_url=endpoint or None)
        self._error = ClientError
        try:
            self._s3.head_bucket(Bucket=self.bucket)
        except ClientError as e:
            why = {
                "404": "does not exist: create it first",
                "NoSuchBucket": "does not exist: create it first",
                "403": "refuses these credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)",
            }
            raise SideFilesError(
                f"{uri}: the bucket {self.bucket} {why.get(self._code(e), str(e))}"
            ) from None
        except Exception as e:  # botocore's own errors: no endpoint, no credentials, no region
            raise SideFilesError(
                f"{uri}: cannot reach the bucket {self.bucket} ({type(e).__name__}: {e}); "
                "check AWS_ENDPOINT_URL, AWS_REGION and the credentials"
            ) from None

    def _key(self, name: str) -> str:
        return self.prefix + name

    def _code(self, e: Exception) -> str:
        return getattr(e, "response", {}).get("Error", {}).get("Code", "")

    def read(self, name: str) -> bytes | None:
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=self._key(name))["Body"].read()
        except self._error as e:
            if self._code(e) in ("NoSuchKey", "404"):
                return None
            raise

    def write(self, name: str, data: bytes) -> None:
        self._s3.put_object(Bucket=self.bucket, Key=self._key(name), Body=data)

    def delete(self, name: str) -> None:
        self._s3.delete_object(Bucket=self.bucket, Key=self._key(name))

    def _objects(self, under: str) -> Iterator[dict]:
        pages = self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self._key(under)
        )
        for page in pages:
            yield from page.get("Contents", [])

    def names(self, folder: str) -> list[str]:
        return sorted(o["Key"][len(self.prefix) :] for o in self._objects(folder.rstrip("/") + "/"))

    def sizes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self._objects(""):
            top = o["Key"][len(self.prefix) :].split("/")[0]
            out[top] = out.get(top, 0) + o["Size"]
        return out

    # ---- the lease ---------------------------------------------------------------------------

    def _put(self, key: str, holder: str, **condition) -> str | None:
        """Write a lease body (a fresh token in each, so no two bodies share an ETag) if
        ``condition`` holds; its ETag, or None when it did not hold."""
        body = json.dumps({"holder": holder, "token": uuid.uuid4().hex}).encode()
        try:
            return self._s3.put_object(Bucket=self.bucket, Key=key, Body=body, **condition)["ETag"]
        except self._error as e:
            if self._code(e) in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
                return None
            raise

    def _current(self, key: str) -> tuple[str, float, str] | None:
        """The lease object's ETag, age in seconds on the server's clock, and holder."""
        try:
            got = self._s3.get_object(Bucket=self.bucket, Key=key)
        except self._error as e:
            if self._code(e) in ("NoSuchKey", "404"):
                return None
            raise
        body = got["Body"].read()
        try:
            holder = str(json.loads(body)["holder"])
        except (ValueError, KeyError, TypeError):
            holder = "an unknown process"
        server_now = email.utils.parsedate_to_datetime(
            got["ResponseMetadata"]["HTTPHeaders"]["date"]
        )
        return got["ETag"], (server_now - got["LastModified"]).total_seconds(), holder

    @contextlib.contextmanager
    def lock(
        self,
        name: str,
        holder: str,
        wait_s: float | None = None,
        say: Callable[[str], None] | None = None,
    ) -> Iterator[Lease]:
        key = self._key(name)
        seen = {"holder": ""}
        pause = _wait_loop(lambda: seen["holder"], wait_s, say, self.where)
        while True:
            etag = self._put(key, holder, IfNoneMatch="*")
            if etag is not None:
                break
            current = self._current(key)
            if current is None:
                continue  # released meanwhile: try again at once
            old_etag, age_s, seen["holder"] = current
            if age_s > LEASE_S:  # its holder stopped renewing it
                etag = self._put(key, holder, IfMatch=old_etag)
                if etag is not None:
                    if say is not None:
                        say(
                            f"{self.where}: took over the lock of {seen['holder']}, not renewed for {age_s:.0f} s"
                        )
                    break
                continue
            pause()
        lease = _BucketLease(self, key, holder, etag)
        try:
            yield lease
        finally:
            lease.release()


class _BucketLease:
    def __init__(self, files: BucketFiles, key: str, holder: str, etag: str) -> None:
        self.files, self.key, self.holder, self.etag = files, key, holder, etag
        self.renewed = time.monotonic()
        self.lost: str | None = None  # why the last renewal failed
        self.taken = False
        self._stop = threading.Event()
        self._mutex = threading.Lock()
        self._thread = threading.Thread(target=self._renew, name=f"lease {key}", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_S):
            with self._mutex:
                try:
                    etag = self.files._put(self.key, self.holder, IfMatch=self.etag)
                except (
                    Exception
                ) as e:  # the server unreachable: the lease runs out unless a later try works
                    self.lost = f"renewing it failed: {e}"
                    continue
                if etag is None:
                    self.lost, self.taken = "another process took it over", True
                    return
                self.etag, self.lost, self.renewed = etag, None, time.monotonic()

    def check(self) -> None:
        """Raise ``LockLost`` once the lease was taken over, or not renewed for so long that
        another process may take it before the next renewal."""
        since = time.monotonic() - self.renewed
        if self.taken or since > LEASE_S - RENEW_S:
            why = self.lost or f"not renewed for {since:.0f} s"
            raise LockLost(
                f"{self.files.where}: lost the lock {self.key.rsplit('/', 1)[-1]} ({why}); "
                "stopped writing: run the command again"
            )

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        with self._mutex:
            try:  # only the object this holder wrote: one taken over since stays
                self.files._s3.delete_object(
                    Bucket=self.files.bucket, Key=self.key, IfMatch=self.etag
                )
            except self.files._error:
                pass
