"""S3-compatible object storage: ``s3://bucket/prefix`` locations and one small client.

Object stores cannot append or rename, so trainledger never writes a run *in* the store: the
writers keep writing a local directory as always, and ``storage.mirror`` copies finished bytes
up as whole objects (see there). This module is the only one that talks to the store.

The client is ``s3fs`` (fsspec), chosen because it resolves credentials through botocore's own
chain (environment, shared ``~/.aws`` config and credentials files and profiles, SSO, container
and instance metadata) and honours the standard ``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``
variables, so MinIO, Ceph or a cloud's S3 API need no trainledger setting at all. Its multipart
upload makes an object visible only when ``CompleteMultipartUpload`` succeeds, so a writer killed
mid-upload leaves no partial object under a final name; small files go up in one ``PutObject``,
which is atomic too. ``s3fs`` is imported only when a location is used (extra ``s3``).

Every call is bounded in time (``docs/object-storage.md``, "Time limits"): a connect timeout
(``TRAINLEDGER_OBJECT_CONNECT_TIMEOUT``, default 10 s), a read timeout
(``TRAINLEDGER_OBJECT_READ_TIMEOUT``, 60 s) and at most ``TRAINLEDGER_OBJECT_ATTEMPTS`` (5)
attempts with botocore's exponential backoff. PutObject is sent without ``Expect:
100-continue``: aiohttp's wait for the ``100`` answer has no timeout, so a store that stops
answering mid-upload would hang the writer forever.

A listed key is trusted only after ``key_problem``: the bucket is written by other people, and
a key like ``r1/../../../home/u/.bashrc`` must never name a local file outside a cache.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainledger.errors import MissingExtraError, ObjectStoreError, UnsupportedLocationError

if TYPE_CHECKING:  # (asyncio imports socket and subprocess: a local query loads neither)
    import asyncio
    from concurrent.futures import Future

__all__ = [
    "SUPPORTED_SCHEMES",
    "ObjectInfo",
    "ObjectLocation",
    "ObjectStore",
    "location_scheme",
    "is_object_url",
    "check_location",
    "key_problem",
    "store_settings",
    "shared_store",
]

#: URL schemes trainledger stores runs under; any other ``scheme://`` is refused
SUPPORTED_SCHEMES = ("s3",)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
#: below this size an upload is one PutObject; above, multipart parts of this size
MULTIPART_CHUNK = 16 * 2**20
#: downloads in flight at once, as the peers' clients use (each waits a round trip to the
#: store, not for this machine's cores: the first sync of a big base is all round trips)
DOWNLOADS_AT_ONCE = 64


#: the longest name of one path component on the file systems we write (bytes)
_MAX_NAME_BYTES = 255
#: the longest relative key we take into a local directory (bytes; S3's own limit is 1,024)
_MAX_KEY_BYTES = 1024


def store_settings() -> dict[str, float]:
    """The time limits of every store call, from the environment (see the module doc)."""

    def number(name: str, default: float) -> float:
        text = os.environ.get(name, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            raise ValueError(f"{name} expected a number of seconds, received {text!r}") from None
        if value <= 0:
            raise ValueError(f"{name} expected a positive number, received {text!r}")
        return value

    return {
        "connect_timeout": number("TRAINLEDGER_OBJECT_CONNECT_TIMEOUT", 10.0),
        "read_timeout": number("TRAINLEDGER_OBJECT_READ_TIMEOUT", 60.0),
        "attempts": max(1, int(number("TRAINLEDGER_OBJECT_ATTEMPTS", 5))),
        "deadline": number("TRAINLEDGER_OBJECT_DEADLINE", 300.0),
    }


def key_problem(rel: str) -> str | None:
    """Why the listed key ``rel`` (relative to a prefix) cannot be a local file, or None.

    Refused: empty segments (absolute keys, ``a//b``, folder markers ``a/``), ``.`` and
    ``..`` segments, backslashes, NUL, and names
    longer than a file system takes. Callers also check the joined path stays inside the
    directory (``storage.cache``): this is the first of two walls.
    """
    if not rel:
        return "an empty name"
    if "\\" in rel:
        return "a backslash"
    if "\0" in rel:
        return "a NUL character"
    parts = rel.split("/")
    if any(p == "" for p in parts):
        return "an empty path segment (a folder marker, or a leading or double '/')"
    if any(p in (".", "..") for p in parts):
        return "a '.' or '..' segment"
    if len(rel.encode("utf-8", "surrogatepass")) > _MAX_KEY_BYTES or any(
        len(p.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES for p in parts
    ):
        return "a name too long for a local file"
    return None


def location_scheme(path: object) -> str | None:
    """The URL scheme of ``path`` (``"s3"`` for ``s3://b/k``), None for a plain local path."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        return None
    match = _SCHEME.match(path)
    return match.group(1).lower() if match else None


def is_object_url(path: object) -> bool:
    """True for a location in object storage (``s3://...``)."""
    return location_scheme(path) in SUPPORTED_SCHEMES


def check_location(path: object, what: str = "path") -> None:
    """Refuse a URL whose scheme trainledger does not store to, instead of taking it as a
    local directory (``gs://b/r`` would otherwise become a folder named ``gs:``)."""
    scheme = location_scheme(path)
    if scheme is not None and scheme not in SUPPORTED_SCHEMES:
        supported = ", ".join(f"{s}://" for s in SUPPORTED_SCHEMES)
        raise UnsupportedLocationError(
            f"{what} {path!r} uses the URL scheme {scheme!r}, which trainledger cannot store "
            f"to; expected a local path or one of: {supported}"
        )


@dataclass(frozen=True)
class ObjectLocation:
    """A bucket and a key prefix (no leading or trailing slash)."""

    bucket: str
    key: str = ""

    @classmethod
    def parse(cls, url: str | os.PathLike[str]) -> ObjectLocation:
        """``s3://bucket/a/b/`` -> ``ObjectLocation("bucket", "a/b")``."""
        text = os.fspath(url)
        scheme = location_scheme(text)
        if scheme not in SUPPORTED_SCHEMES:
            raise UnsupportedLocationError(f"expected an s3:// URL, received {text!r}")
        rest = text.split("://", 1)[1]
        bucket, _, key = rest.partition("/")
        if not bucket:
            raise UnsupportedLocationError(f"expected s3://BUCKET/PREFIX, received {text!r}")
        parts = [p for p in key.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise UnsupportedLocationError(f"'.' and '..' are not allowed in {text!r}")
        return cls(bucket, "/".join(parts))

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.key}" if self.key else f"s3://{self.bucket}"

    def child(self, relative: str) -> ObjectLocation:
        """The location of ``relative`` (a ``/``-separated path) under this prefix."""
        rel = relative.replace(os.sep, "/").strip("/")
        return ObjectLocation(self.bucket, f"{self.key}/{rel}" if self.key else rel)

    def relative(self, key: str) -> str:
        """``key`` relative to this prefix (a key of the listing)."""
        return key[len(self.key) + 1 :] if self.key else key


@dataclass(frozen=True)
class ObjectInfo:
    """What a listing says of one object: enough to tell whether it changed."""

    size: int
    etag: str
    mtime_ns: int = 0  # LastModified, in ns since the epoch (second resolution on S3)


class ObjectStore:
    """The few operations trainledger needs, over one ``s3fs`` client.

    Every error of the store or the network is raised as ``ObjectStoreError`` naming the
    location; credentials never appear in messages (botocore does not put them there).
    """

    def __init__(self, fs: Any = None) -> None:
        self._fs = fs
        self._downloads: asyncio.Semaphore | None = None  # (made on the client's loop)

    @property
    def fs(self) -> Any:
        if self._fs is None:
            try:
                import s3fs  # noqa: PLC0415 - optional extra, imported on first use
            except ModuleNotFoundError as exc:
                raise MissingExtraError(
                    "s3:// locations need the 's3' extra: pip install 'trainledger[s3]'"
                ) from exc
            limits = store_settings()
            # no listing cache: a mirror must see what other writers did since its last look
            fs = s3fs.S3FileSystem(
                skip_instance_cache=True,
                use_listings_cache=False,
                config_kwargs={
                    "connect_timeout": limits["connect_timeout"],
                    "read_timeout": limits["read_timeout"],
                    "retries": {"max_attempts": int(limits["attempts"]), "mode": "standard"},
                    "max_pool_connections": DOWNLOADS_AT_ONCE,
                },
            )
            fs.retries = 1  # botocore retries (with backoff): s3fs's own loop would multiply them
            fs.connect()
            fs.s3.meta.events.register_last("before-call.s3", _no_expect_continue)
            self._fs = fs
        return self._fs

    def _path(self, loc: ObjectLocation) -> str:
        return f"{loc.bucket}/{loc.key}"

    def check_bucket(self, loc: ObjectLocation) -> None:
        """Raise ``ObjectStoreError`` unless ``loc``'s bucket exists and answers: a run learns
        of a wrong bucket name or missing credentials before it trains, not at its end."""
        try:
            self.fs.call_s3("head_bucket", Bucket=loc.bucket)
        except FileNotFoundError:
            raise ObjectStoreError(
                f"expected an existing bucket for {loc.url}, received: bucket "
                f"{loc.bucket!r} does not exist (create it first)"
            ) from None
        except Exception as exc:
            raise ObjectStoreError(f"could not reach the bucket of {loc.url}: {exc}") from exc

    def put_file(self, local: str, loc: ObjectLocation) -> ObjectInfo:
        """Upload ``local`` as one object; visible only once complete (PutObject or multipart).
        Returns the object's size and ETag, which its change record names
        (``storage.change_log``): from PutObject's own answer, or one HEAD after a multipart
        upload.

        ``FileNotFoundError`` means the local file vanished (the next pass sees why); a bucket
        that vanished is an ``ObjectStoreError`` (s3fs reports both as ``FileNotFoundError``).
        """
        try:
            size = os.path.getsize(local)
            if size < MULTIPART_CHUNK:
                with open(local, "rb") as fh:
                    body = fh.read()
                answer = self.fs.call_s3("put_object", Bucket=loc.bucket, Key=loc.key, Body=body)
                return ObjectInfo(len(body), str(answer.get("ETag", "")).strip('"'))
            self.fs.put_file(local, self._path(loc), chunksize=MULTIPART_CHUNK)
            info = self.fs.info(self._path(loc))
            return ObjectInfo(int(info.get("size") or 0), str(info.get("ETag", "")).strip('"'))
        except FileNotFoundError as exc:
            if not os.path.exists(local):
                raise
            raise ObjectStoreError(f"could not upload {local!r} to {loc.url}: {exc}") from exc
        except Exception as exc:
            raise ObjectStoreError(f"could not upload {local!r} to {loc.url}: {exc}") from exc

    def put_bytes(self, loc: ObjectLocation, body: bytes) -> None:
        """One small object (a change record, a snapshot), in one PutObject."""
        try:
            self.fs.call_s3("put_object", Bucket=loc.bucket, Key=loc.key, Body=body)
        except Exception as exc:
            raise ObjectStoreError(f"could not write {loc.url}: {exc}") from exc

    def get_bytes(self, loc: ObjectLocation) -> bytes:
        """A small object's bytes (``FileNotFoundError`` when there is none)."""
        try:
            return bytes(self.fs.cat_file(self._path(loc)))
        except FileNotFoundError:
            raise
        except Exception as exc:
            raise ObjectStoreError(f"could not read {loc.url}: {exc}") from exc

    def list_keys(
        self, bucket: str, prefix: str, start_after: str = "", limit: int = 1000
    ) -> tuple[list[str], bool]:
        """Keys under ``prefix`` after ``start_after``, in key order: at most ``limit`` (one
        LIST request of up to 1,000 keys) and whether more follow."""
        params: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": limit}
        if start_after:
            params["StartAfter"] = start_after
        try:
            answer = self.fs.call_s3("list_objects_v2", **params)
        except FileNotFoundError as exc:
            raise ObjectStoreError(f"could not list s3://{bucket}/{prefix}: {exc}") from exc
        except Exception as exc:
            raise ObjectStoreError(f"could not list s3://{bucket}/{prefix}: {exc}") from exc
        keys = [str(item["Key"]) for item in answer.get("Contents", [])]
        return keys, bool(answer.get("IsTruncated"))

    def delete_keys(self, bucket: str, keys: list[str]) -> None:
        """Delete many keys, 1,000 a request (compaction's old records)."""
        for start in range(0, len(keys), 1000):
            objects = [{"Key": k} for k in keys[start : start + 1000]]
            try:
                self.fs.call_s3(
                    "delete_objects", Bucket=bucket, Delete={"Objects": objects, "Quiet": True}
                )
            except Exception as exc:
                raise ObjectStoreError(f"could not delete in s3://{bucket}: {exc}") from exc

    def get_file(self, loc: ObjectLocation, local: str) -> None:
        """Download to ``local`` through a temporary name, so a reader never sees half a file."""
        self.start_get(loc, local).result()

    def start_get(self, loc: ObjectLocation, local: str) -> Future[None]:
        """Start ``get_file(loc, local)`` on the client's own event loop; at most
        ``DOWNLOADS_AT_ONCE`` run at a time, the rest queued. Why not a thread each: a first
        sync makes tens of thousands of small GETs, and 64 threads handing each one to the
        loop and waiting for it cost this process a fifth more CPU than the loop alone,
        taken from the cores a local store (MinIO, moto) serves the GETs with. Errors are
        ``get_file``'s: ``FileNotFoundError`` for a gone object, else ``ObjectStoreError``."""
        import asyncio  # noqa: PLC0415 - on use (the TYPE_CHECKING note above)

        return asyncio.run_coroutine_threadsafe(self._get(loc, local), self.fs.loop)

    async def _get(self, loc: ObjectLocation, local: str) -> None:
        import asyncio  # noqa: PLC0415 - on use (the TYPE_CHECKING note above)

        if self._downloads is None:  # (on the loop's one thread: no race)
            self._downloads = asyncio.Semaphore(DOWNLOADS_AT_ONCE)
        async with self._downloads:
            directory = os.path.dirname(local) or "."
            os.makedirs(directory, exist_ok=True)
            name = f".{os.path.basename(local)}.part-{uuid.uuid4().hex[:8]}"
            tmp = os.path.join(directory, name)
            try:
                await self.fs._get_file(self._path(loc), tmp)  # (fsspec's async API)
                os.replace(tmp, local)
            except FileNotFoundError:
                raise
            except Exception as exc:
                raise ObjectStoreError(f"could not download {loc.url}: {exc}") from exc
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)

    def delete(self, loc: ObjectLocation) -> None:
        try:
            self.fs.rm_file(self._path(loc))
        except FileNotFoundError:
            return
        except Exception as exc:
            raise ObjectStoreError(f"could not delete {loc.url}: {exc}") from exc

    def list(
        self,
        prefix: ObjectLocation,
        on_page: Callable[[dict[str, ObjectInfo], str], None] | None = None,
    ) -> dict[str, ObjectInfo]:
        """Every object under ``prefix``, keyed by its path relative to the prefix.
        ``on_page(page, last)`` sees each page (up to 1,000) as it arrives (``last``: its
        greatest path), so a caller can start on them while the rest is listed."""
        params: dict[str, Any] = {"Bucket": prefix.bucket}
        params["Prefix"] = f"{prefix.key}/" if prefix.key else ""
        out: dict[str, ObjectInfo] = {}
        while True:
            try:
                answer = self.fs.call_s3("list_objects_v2", **params)
            except Exception as exc:  # a missing bucket too (an empty prefix lists as {})
                raise ObjectStoreError(f"could not list {prefix.url}: {exc}") from exc
            page = {}
            for item in answer.get("Contents", []):
                if rel := prefix.relative(str(item["Key"])):
                    modified = item.get("LastModified")
                    page[rel] = ObjectInfo(
                        int(item.get("Size") or 0),
                        str(item.get("ETag") or "").strip('"'),
                        int(modified.timestamp() * 1e9) if modified is not None else 0,
                    )
            out.update(page)
            if on_page is not None and page:
                on_page(page, max(page))
            if not answer.get("IsTruncated") or not answer.get("NextContinuationToken"):
                return out
            params["ContinuationToken"] = answer["NextContinuationToken"]


_SHARED: dict[tuple[Any, ...], ObjectStore] = {}


def shared_store() -> ObjectStore:
    """This process's client for the environment's store: a new s3fs client costs about
    0.1 s (its session and credential chain), more than a quiet refresh's one LIST. Keyed by
    the process and the variables that choose the store and its credentials, so a fork or a
    changed setting gets a client of its own."""
    names = (
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "TRAINLEDGER_OBJECT_CONNECT_TIMEOUT",
        "TRAINLEDGER_OBJECT_READ_TIMEOUT",
        "TRAINLEDGER_OBJECT_ATTEMPTS",
    )
    key = (os.getpid(), *(os.environ.get(n) for n in names))
    store = _SHARED.get(key)
    if store is None:
        store = _SHARED[key] = ObjectStore()
    return store


def _no_expect_continue(params: dict[str, Any], **_: Any) -> None:
    """Drop botocore's ``Expect: 100-continue`` (see the module doc: its wait never times out)."""
    params.get("headers", {}).pop("Expect", None)
