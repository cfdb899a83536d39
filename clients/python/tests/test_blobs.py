"""Blobs of any size against the real gateway: range reads, chunked uploads
checked by SHA-256, resumed uploads and downloads, and the file helpers."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from conftest import Gateway, StartGateway, free_port, run, spawn_gateway

from skillgate import PIECE_BYTES, Client, Reconnect, RpcError, TransferError


def client_for(gw: Gateway, **kwargs: object) -> Client:
    host, port = gw.tcp
    return Client(host, port, **kwargs)  # type: ignore[arg-type]


# More than two pieces, and not a multiple of 3 (base64) nor of a piece.
BIG = os.urandom(2 * PIECE_BYTES + 12_345)


def test_read_blob_range_follows_next_offset(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            text = "the cat sat on the mat\nthe end\n"
            blob = await c.create_blob(text)
            piece = await c.read_blob(blob["blob_id"], offset=4, max_bytes=8)
            assert (piece["content"], piece["offset"], piece["next_offset"]) == ("cat sat ", 4, 12)
            assert piece["sha256"] == hashlib.sha256(text.encode()).hexdigest()
            last = await c.read_blob_range(blob["blob_id"], 12, 1000)
            assert last["content"] == text[12:] and last["next_offset"] is None
            with pytest.raises(RpcError) as e:
                await c.read_blob(blob["blob_id"], offset=len(text) + 1)
            assert e.value.string_code == "JSONRPC_INVALID_PARAMS" and e.value.data.get("param") == "offset"
            with pytest.raises(RpcError) as e:
                await c.read_blob(blob["blob_id"], mode="sample_head", offset=1)
            assert e.value.data.get("param") == "offset"

    run(body)


def test_upload_in_chunks_and_read_back(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            progress: list[tuple[int, int]] = []
            info = await c.upload(BIG, kind="application/x-test", on_progress=lambda d, t: progress.append((d, t)))
            assert info["size_bytes"] == len(BIG) and info["kind"] == "application/x-test"
            assert info["sha256"] == hashlib.sha256(BIG).hexdigest()
            assert [d for d, _ in progress] == [PIECE_BYTES, 2 * PIECE_BYTES, len(BIG)]
            assert {t for _, t in progress} == {len(BIG)}
            assert await c.read_blob_bytes(info["blob_id"]) == BIG
            pieces = [p async for p in c.iter_blob(info["blob_id"], offset=PIECE_BYTES)]
            assert len(pieces) >= 2 and b"".join(pieces) == BIG[PIECE_BYTES:]
            empty = await c.upload(b"")
            assert empty["size_bytes"] == 0 and await c.read_blob_bytes(empty["blob_id"]) == b""

    run(body)


def test_put_and_get_files(shared_gateway: Gateway, tmp_path: Path) -> None:
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(BIG)

    async def body() -> None:
        async with client_for(shared_gateway) as c:
            info = await c.put(src, kind="application/octet-stream")
            got = await c.get(info["blob_id"], dst)
            assert got == info
            assert dst.read_bytes() == BIG and not Path(f"{dst}.part").exists()
            text = tmp_path / "notes.txt"
            text.write_text("héllo\n" * 50_000, encoding="utf-8")
            tinfo = await c.put(text, kind="text/plain", chunk_bytes=100_000)
            await c.get(tinfo["blob_id"], tmp_path / "notes.copy")
            assert (tmp_path / "notes.copy").read_bytes() == text.read_bytes()

    run(body)


def test_get_continues_a_part_file_and_drops_a_wrong_one(shared_gateway: Gateway, tmp_path: Path) -> None:
    dst = tmp_path / "out.bin"
    part = Path(f"{dst}.part")

    async def body() -> None:
        async with client_for(shared_gateway) as c:
            info = await c.upload(BIG)
            part.write_bytes(BIG[:PIECE_BYTES + 7])  # a download cut short
            seen: list[int] = []
            await c.get(info["blob_id"], dst, on_progress=lambda d, _: seen.append(d))
            assert dst.read_bytes() == BIG and seen[0] > PIECE_BYTES + 7
            dst.unlink()
            part.write_bytes(b"x" * 100)  # not the blob's bytes
            with pytest.raises(TransferError, match="removed"):
                await c.get(info["blob_id"], dst)
            assert not part.exists() and not dst.exists()
            await c.get(info["blob_id"], dst)  # the next attempt starts afresh
            assert dst.read_bytes() == BIG
            dst.unlink()
            part.write_bytes(BIG + b"more")  # longer than the blob: another blob's
            await c.get(info["blob_id"], dst)
            assert dst.read_bytes() == BIG

    run(body)


def test_resume_an_upload_by_id(shared_gateway: Gateway, tmp_path: Path) -> None:
    data = os.urandom(10_000)
    src = tmp_path / "data.bin"
    src.write_bytes(data)

    async def body() -> None:
        async with client_for(shared_gateway) as c:
            begun = await c.begin_upload(len(data), kind="application/octet-stream")
            assert begun["max_chunk_bytes"] >= 1000
            uid = begun["upload_id"]
            for off in (0, 1000, 2000):  # an earlier attempt, cut after three chunks
                got = await c.upload_chunk(uid, off, data[off : off + 1000])
            assert got["received_bytes"] == 3000
            progress: list[int] = []
            info = await c.put(src, upload_id=uid, chunk_bytes=1000, on_progress=lambda d, _: progress.append(d))
            assert progress[0] == 3000, "the first resent chunk answers how far the upload got"
            assert info["sha256"] == hashlib.sha256(data).hexdigest()
            assert await c.read_blob_bytes(info["blob_id"]) == data
            with pytest.raises(RpcError) as e:
                await c.put(src, upload_id=uid, chunk_bytes=1000)
            assert e.value.string_code == "UPLOAD_NOT_FOUND"

    run(body)


def test_transfer_bad_inputs(shared_gateway: Gateway, tmp_path: Path) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            begun = await c.begin_upload(3, kind="text/plain")
            await c.upload_chunk(begun["upload_id"], 0, b"abc")
            with pytest.raises(RpcError) as e:
                await c.finish_upload(begun["upload_id"], "0" * 64)
            assert e.value.data.get("param") == "sha256"
            with pytest.raises(RpcError) as e:
                await c.begin_upload(1, kind="nonsense")
            assert e.value.data.get("param") == "kind"
            with pytest.raises(RpcError) as e:
                await c.get("blob:" + "0" * 32, tmp_path / "none")
            assert e.value.string_code == "BLOB_NOT_FOUND"
            assert list(tmp_path.iterdir()) == [], "no .part is left for a blob that does not exist"
            with pytest.raises(ValueError):
                await c.upload(b"abc", upload_id=begun["upload_id"], kind="text/plain")
            with pytest.raises(ValueError):
                await c.upload(b"abc", chunk_bytes=0)
            with pytest.raises(TypeError):
                await c.upload("text is not bytes")  # type: ignore[arg-type]
            with pytest.raises(FileNotFoundError):
                await c.put(tmp_path / "missing")
            # A file object is read whole, wherever it was positioned.
            f = io.BytesIO(b"0123456789")
            f.seek(5)
            info = await c.upload(f)
            assert await c.read_blob_bytes(info["blob_id"]) == b"0123456789"

    run(body)


def test_an_upload_carries_on_across_a_gateway_restart(start_gateway: StartGateway, tmp_path: Path) -> None:
    """The gateway dies after the first chunk; the client reconnects to its
    successor on the same port and data dir and the upload goes on."""
    port, data = free_port(), tmp_path / "data"
    first = spawn_gateway(data, listen=f"127.0.0.1:{port}")
    started = [first]
    payload = os.urandom(5 * 4096)

    def restart_once(done: int, _: int) -> None:
        if len(started) == 1:
            first.stop()
            started.append(spawn_gateway(data, listen=f"127.0.0.1:{port}"))

    async def body() -> None:
        policy = Reconnect(max_attempts=5, delay=0.05, max_delay=0.5)
        async with client_for(first, reconnect=policy) as c:
            info = await c.upload(payload, chunk_bytes=4096, on_progress=restart_once)
            assert len(started) == 2
            assert await c.read_blob_bytes(info["blob_id"]) == payload

    try:
        run(body)
    finally:
        for gw in started:
            gw.stop()
