"""Blobs of any size: range reads, chunked uploads checked by SHA-256, and
the ``put``/``get`` file helpers built on them (docs/blobs.md, "Large blobs").

Every call a transfer makes may be repeated safely: a chunk re-sent at its
offset with the same bytes changes nothing, and a range read only reads. So
a transfer whose connection drops carries on where the last answer left it
once a client with :class:`skillgate.Reconnect` is connected again, and a
transfer cut for good is resumed by a later call (``upload_id`` for an
upload, the ``FILE.part`` left behind for a download).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
from typing import IO, Any, AsyncIterator, Callable, Mapping, Union, cast

from .errors import ConnectionClosedError, RpcError, TransferError
from .types import BlobContent, BlobInfo, UploadInfo, UploadProgress

__all__ = ["BlobTransfers", "PIECE_BYTES", "ProgressCallback"]

# The bytes of one upload_chunk or range read. Fixed rather than
# begin_upload's max_chunk_bytes, so that a resumed upload cuts the data
# where the first attempt did (the gateway takes a chunk re-sent with the
# bytes it holds, not one that overlaps them differently cut); its base64
# fits the default 1 MiB message. `skillgate blob put` uses the same size.
PIECE_BYTES = 512 * 1024

# How often one call of a transfer is repeated after losing its connection.
_MAX_RETRIES = 5

ProgressCallback = Callable[[int, int], None]
"""Called with (bytes done, bytes in all) after each piece."""

Source = Union[bytes, bytearray, memoryview, IO[bytes]]


class BlobTransfers:
    """Large-blob methods for classes that provide :meth:`call`."""

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Call any method; see :meth:`skillgate.Client.call`."""
        raise NotImplementedError

    def _reconnects(self) -> bool:
        """Whether a call that lost its connection may be repeated: only a
        client that reconnects can."""
        return False

    async def _again(self, method: str, params: Mapping[str, Any], timeout: float | None) -> dict[str, Any]:
        retries = _MAX_RETRIES if self._reconnects() else 0
        for attempt in range(retries + 1):
            try:
                return await self.call(method, params, timeout=timeout)
            except ConnectionClosedError:
                if attempt >= retries:
                    raise
            except RpcError as e:
                # A draining gateway refuses calls before it closes; the
                # reconnect lands on one that is not draining.
                if e.string_code != "SERVER_SHUTDOWN" or attempt >= retries:
                    raise
                await asyncio.sleep(e.retry.delay if e.retry is not None else 0.5)
        raise AssertionError("unreachable")

    # ---- the upload methods ------------------------------------------------

    async def begin_upload(
        self, size_bytes: int, *, kind: str = "application/octet-stream", timeout: float | None = None
    ) -> UploadInfo:
        """Begin a chunked upload of ``size_bytes``; returns its ``upload_id``
        and ``max_chunk_bytes``. Uploads left unfinished expire after an hour
        without a chunk."""
        params = {"kind": kind, "size_bytes": size_bytes}
        return cast(UploadInfo, await self.call("begin_upload", params, timeout=timeout))

    async def upload_chunk(
        self, upload_id: str, offset: int, content: bytes, *, timeout: float | None = None
    ) -> UploadProgress:
        """Send ``content`` at ``offset`` (where the received bytes end, or a
        resend of bytes already received); returns ``received_bytes``."""
        params = {
            "upload_id": upload_id,
            "offset": offset,
            "content": base64.b64encode(content).decode("ascii"),
            "encoding": "base64",
        }
        return cast(UploadProgress, await self.call("upload_chunk", params, timeout=timeout))

    async def finish_upload(self, upload_id: str, sha256: str, *, timeout: float | None = None) -> BlobInfo:
        """Make the blob, if ``sha256`` (64 hex digits) is the content's."""
        params = {"upload_id": upload_id, "sha256": sha256}
        return cast(BlobInfo, await self.call("finish_upload", params, timeout=timeout))

    # ---- uploads of any size -----------------------------------------------

    async def upload(
        self,
        data: Source,
        *,
        kind: str | None = None,
        upload_id: str | None = None,
        chunk_bytes: int | None = None,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> BlobInfo:
        """Upload ``data`` (bytes, or a seekable binary file, all of it) in
        chunks and return the blob.

        The SHA-256 of the data is checked by ``finish_upload``. To be able
        to resume an upload cut for good, begin it yourself
        (:meth:`begin_upload`) and pass its ``upload_id``, again to resume:
        the chunks the gateway holds already are accepted again unchanged,
        and the first answer says how far the upload got. A resumed upload
        must cut the data as the first attempt did: both use
        ``chunk_bytes`` (default :data:`PIECE_BYTES`, or the gateway's
        ``max_chunk_bytes`` when that is smaller). ``timeout`` bounds each
        call, not the whole upload.
        """
        src = _Reader(data)
        if chunk_bytes is not None and chunk_bytes < 1:
            raise ValueError("chunk_bytes must be positive")
        piece = chunk_bytes or PIECE_BYTES
        if upload_id is None:
            begun = await self.begin_upload(src.size, kind=kind or "application/octet-stream", timeout=timeout)
            upload_id = begun["upload_id"]
            piece = min(piece, begun["max_chunk_bytes"])
        elif kind is not None:
            raise ValueError("kind is given to begin_upload; a resumed upload keeps the kind it began with")
        digest = await self._send_chunks(upload_id, src, piece, on_progress, timeout)
        return cast(BlobInfo, await self._again("finish_upload", {"upload_id": upload_id, "sha256": digest}, timeout))

    async def _send_chunks(
        self, upload_id: str, src: _Reader, piece: int, on_progress: ProgressCallback | None, timeout: float | None
    ) -> str:
        digest = hashlib.sha256()
        offset = 0
        while offset < src.size:
            chunk = await src.read_at(offset, min(piece, src.size - offset))
            params = {
                "upload_id": upload_id,
                "offset": offset,
                "content": base64.b64encode(chunk).decode("ascii"),
                "encoding": "base64",
            }
            received = (await self._again("upload_chunk", params, timeout)).get("received_bytes")
            end = offset + len(chunk)
            if not isinstance(received, int) or received < end or received > src.size:
                raise TransferError(f"upload_chunk answered received_bytes {received!r} after a chunk ending at {end}")
            digest.update(chunk)
            if received > end:  # a resumed upload: the gateway holds more
                digest.update(await src.read_at(end, received - end))
            offset = received
            if on_progress is not None:
                on_progress(offset, src.size)
        return digest.hexdigest()

    async def put(
        self,
        path: str | os.PathLike[str],
        *,
        kind: str | None = None,
        upload_id: str | None = None,
        chunk_bytes: int | None = None,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> BlobInfo:
        """Upload the file at ``path`` as a blob (see :meth:`upload`)."""
        with open(path, "rb") as f:
            return await self.upload(
                f, kind=kind, upload_id=upload_id, chunk_bytes=chunk_bytes, on_progress=on_progress, timeout=timeout
            )

    # ---- reads of any size -------------------------------------------------

    async def read_blob_range(
        self, blob_id: str, offset: int = 0, max_bytes: int | None = None, *, timeout: float | None = None
    ) -> BlobContent:
        """Read ``max_bytes`` (default 4096) from ``offset``: ``read_blob``
        mode ``"range"``. The answer carries the blob's ``sha256`` and
        ``next_offset`` (None after the last piece)."""
        params: dict[str, Any] = {"blob_id": blob_id, "mode": "range", "offset": offset}
        if max_bytes is not None:
            params["max_bytes"] = max_bytes
        return cast(BlobContent, await self.call("read_blob", params, timeout=timeout))

    async def _pieces(
        self, blob_id: str, offset: int, timeout: float | None
    ) -> AsyncIterator[tuple[BlobContent, bytes]]:
        while True:
            params = {"blob_id": blob_id, "mode": "range", "offset": offset, "max_bytes": PIECE_BYTES}
            piece = cast(BlobContent, await self._again("read_blob", params, timeout))
            data = _decode(piece)
            yield piece, data
            offset += len(data)
            nxt = piece.get("next_offset")
            if nxt is None:
                return
            if nxt != offset:
                raise TransferError(f"read_blob answered next_offset {nxt} after {offset} bytes")

    async def iter_blob(
        self, blob_id: str, *, offset: int = 0, timeout: float | None = None
    ) -> AsyncIterator[bytes]:
        """Yield the blob's bytes from ``offset`` to its end, piece by piece.
        Nothing checks them against the blob's SHA-256: :meth:`read_blob_bytes`
        and :meth:`get` do."""
        async for _, data in self._pieces(blob_id, offset, timeout):
            yield data

    async def read_blob_bytes(self, blob_id: str, *, timeout: float | None = None) -> bytes:
        """The whole blob, in memory, checked against its SHA-256."""
        digest, parts, want = hashlib.sha256(), [], ""
        async for piece, data in self._pieces(blob_id, 0, timeout):
            digest.update(data)
            parts.append(data)
            want = piece.get("sha256", "")
        if digest.hexdigest() != want:
            raise TransferError(f"the bytes read have sha256 {digest.hexdigest()}, the blob {want}")
        return b"".join(parts)

    async def get(
        self,
        blob_id: str,
        path: str | os.PathLike[str],
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> BlobInfo:
        """Download a blob into ``path``; returns its id, size, kind and sha256.

        The bytes go to ``path + ".part"``, renamed to ``path`` once they
        match the blob's SHA-256; a ``.part`` left by a cut download is
        continued, and one that does not match is removed (the error is a
        :class:`TransferError`).
        """
        part = os.fspath(path) + ".part"
        try:
            last, digest = await self._download(blob_id, part, on_progress, timeout)
        except BaseException:
            if os.path.exists(part) and os.path.getsize(part) == 0:
                os.remove(part)  # nothing to continue from
            raise
        want = last.get("sha256", "")
        if digest != want:
            os.remove(part)
            raise TransferError(f"the downloaded bytes have sha256 {digest}, the blob {want}: {part} removed")
        os.replace(part, path)
        return {"blob_id": last["blob_id"], "size_bytes": last["size_bytes"], "kind": last["kind"], "sha256": want}

    async def _download(
        self, blob_id: str, part: str, on_progress: ProgressCallback | None, timeout: float | None
    ) -> tuple[BlobContent, str]:
        with open(part, "a+b") as f:
            f.seek(0)
            digest = hashlib.sha256()
            await asyncio.to_thread(_hash_into, f, digest)
            offset = f.tell()
            try:
                return await self._append(blob_id, f, offset, digest, on_progress, timeout)
            except RpcError as e:
                if offset == 0 or e.data.get("param") != "offset":
                    raise
            # The .part is longer than the blob: it was another blob's.
            f.truncate(0)
            digest = hashlib.sha256()
            return await self._append(blob_id, f, 0, digest, on_progress, timeout)

    async def _append(
        self,
        blob_id: str,
        f: IO[bytes],
        offset: int,
        digest: Any,
        on_progress: ProgressCallback | None,
        timeout: float | None,
    ) -> tuple[BlobContent, str]:
        last: BlobContent | None = None
        async for piece, data in self._pieces(blob_id, offset, timeout):
            await asyncio.to_thread(f.write, data)
            digest.update(data)
            offset += len(data)
            last = piece
            if on_progress is not None:
                on_progress(offset, piece["size_bytes"])
        assert last is not None  # _pieces yields at least once
        return last, str(digest.hexdigest())


class _Reader:
    """Random access to an upload's data: bytes, or a seekable file read in
    a thread so that the event loop never waits on the disk."""

    def __init__(self, data: Source) -> None:
        if isinstance(data, (bytes, bytearray, memoryview)):
            self._mem: memoryview | None = memoryview(data).cast("B")
            self._file: IO[bytes] | None = None
            self.size = self._mem.nbytes
            return
        if isinstance(data, str) or not hasattr(data, "read") or not hasattr(data, "seek"):
            raise TypeError(f"data must be bytes or a seekable binary file, not {type(data).__name__}")
        self._mem, self._file = None, data
        self.size = data.seek(0, os.SEEK_END)

    async def read_at(self, offset: int, n: int) -> bytes:
        if self._mem is not None:
            return bytes(self._mem[offset : offset + n])
        if self._file is None:
            raise AssertionError("a _Reader holds bytes or a file")
        return await asyncio.to_thread(_read_exactly, self._file, offset, n)


def _read_exactly(f: IO[bytes], offset: int, n: int) -> bytes:
    f.seek(offset)
    out = f.read(n)
    if not isinstance(out, bytes) or len(out) != n:
        raise TransferError(f"the file changed during the upload: {n} bytes at {offset} are gone")
    return out


def _decode(piece: BlobContent) -> bytes:
    if piece["encoding"] == "base64":
        return base64.b64decode(piece["content"])
    return piece["content"].encode("utf-8")


def _hash_into(f: IO[bytes], digest: Any) -> None:
    while block := f.read(1 << 20):
        digest.update(block)
