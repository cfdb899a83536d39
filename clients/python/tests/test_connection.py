"""Connection behaviour a well-behaved gateway never shows, against a tiny
scripted server on loopback."""

from __future__ import annotations

import asyncio
import json
from types import TracebackType
from typing import Any, Mapping

import pytest
from conftest import run

from skillgate import (
    Client,
    ConnectionClosedError,
    ErrorInfo,
    KeepaliveTimeoutError,
    ProtocolError,
    RpcError,
)
from skillgate import _wire


class Peer:
    """The server side of one accepted connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def read(self) -> dict[str, Any]:
        body = await _wire.read_frame(self.reader, 1 << 20)
        assert body is not None, "the client closed the connection"
        msg = json.loads(body)
        assert isinstance(msg, dict)
        return msg

    async def read_until_eof(self) -> list[dict[str, Any]]:
        msgs = []
        while (body := await _wire.read_frame(self.reader, 1 << 20)) is not None:
            msgs.append(json.loads(body))
        return msgs

    def send(self, msg: Mapping[str, Any]) -> None:
        self.send_raw(_wire.encode_frame(json.dumps(msg).encode(), 1 << 20))

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    def answer(self, req: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": req["id"], "result": result})


class FakeServer:
    """Accepts connections on 127.0.0.1 and hands them to the test."""

    def __init__(self) -> None:
        self.peers: asyncio.Queue[Peer] = asyncio.Queue()
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> FakeServer:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        for w in self._writers:
            w.close()
        self.server.close()
        await self.server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        await self.peers.put(Peer(reader, writer))

    def client(self, **kwargs: Any) -> Client:
        return Client("127.0.0.1", self.port, **kwargs)


async def opened(server: FakeServer, **kwargs: Any) -> tuple[Client, Peer]:
    kwargs.setdefault("keepalive_interval", 0)
    c = server.client(**kwargs)
    await c.open()
    return c, await server.peers.get()


def test_server_keepalive_is_answered_and_unknown_requests_refused() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            peer.send({"jsonrpc": "2.0", "method": "_Keepalive", "params": {}, "id": "gw-1"})
            assert await peer.read() == {"jsonrpc": "2.0", "result": {}, "id": "gw-1"}
            peer.send({"jsonrpc": "2.0", "method": "Surprise", "params": {}, "id": "gw-2"})
            refused = await peer.read()
            assert refused["id"] == "gw-2" and refused["error"]["code"] == -32601
            assert refused["error"]["data"]["string_code"] == "JSONRPC_METHOD_NOT_FOUND"
            await c.close()

    run(body)


def test_error_and_info_notifications_reach_the_callbacks() -> None:
    async def body() -> None:
        errors: list[ErrorInfo] = []
        infos: list[tuple[str, Mapping[str, Any]]] = []
        others: list[str] = []
        async with FakeServer() as srv:
            c, peer = await opened(
                srv,
                on_error=lambda info, params: errors.append(info),
                on_info=lambda m, p: infos.append((m, p)),
                on_notification=lambda m, p: others.append(m),
            )
            call = asyncio.ensure_future(c.call("Echo", {"v": 1}))
            req = await peer.read()
            peer.send({"jsonrpc": "2.0", "method": "_Error", "params": {"id": req["id"], "error": {"code": 1, "message": "odd", "data": {"string_code": "ODD"}}}})
            peer.send({"jsonrpc": "2.0", "method": "_Info", "params": {"message": "hello"}})
            peer.send({"jsonrpc": "2.0", "method": "run_event", "params": {"run_id": "r"}})
            peer.answer(req, {"v": 1})
            assert await call == {"v": 1}  # notifications have no control-flow effect
            assert [e.string_code for e in errors] == ["ODD"]
            assert infos == [("_Info", {"message": "hello"})]
            assert others == ["run_event"]
            await c.close()

    run(body)


def test_malformed_error_notifications_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        errors: list[ErrorInfo] = []
        async with FakeServer() as srv:
            c, peer = await opened(srv, on_error=lambda info, params: errors.append(info))
            peer.send({"jsonrpc": "2.0", "method": "_Error", "params": {"error": {"code": "x"}}})
            peer.send({"jsonrpc": "2.0", "method": "_CloseReason", "params": {}})
            call = asyncio.ensure_future(c.call("Echo"))
            peer.answer(await peer.read(), {})
            assert await call == {}
            peer.writer.close()
            err = await c.wait_closed()
            assert err.info is None and not err.from_server  # the malformed reason was not adopted
            assert errors == []

    run(body)
    assert any("ignored a malformed _CloseReason" in r.getMessage() for r in caplog.records)


def test_a_keepalive_answered_with_an_error_still_proves_the_server_alive() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv, keepalive_interval=0.05, keepalive_timeout=5)
            for _ in range(3):
                ping = await peer.read()
                peer.send({"jsonrpc": "2.0", "id": ping["id"], "error": {"code": -32601, "message": "no"}})
            assert not c.closed
            await c.close()

    run(body)


def test_a_callback_that_raises_does_not_break_the_connection() -> None:
    async def body() -> None:
        def boom(method: str, params: Mapping[str, Any]) -> None:
            raise RuntimeError("callback bug")

        async with FakeServer() as srv:
            c, peer = await opened(srv, on_info=boom)
            peer.send({"jsonrpc": "2.0", "method": "_Info", "params": {}})
            call = asyncio.ensure_future(c.call("Echo"))
            peer.answer(await peer.read(), {})
            assert await call == {}
            await c.close()

    run(body)


def test_close_reason_is_raised_with_its_fields() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            pending = asyncio.ensure_future(c.call("Slow"))
            await peer.read()
            reason = {"code": 1, "message": "Bye.", "data": {"string_code": "OVERLOADED", "details": "full",
                                                           "retry": {"suggested_delay_ms": 250, "max_attempts": 4}}}
            peer.send({"jsonrpc": "2.0", "method": "_CloseReason", "params": {"error": reason}})
            peer.send({"jsonrpc": "2.0", "method": "_CloseReason", "params": {"error": {"code": 2, "message": "later"}}})
            peer.writer.close()
            with pytest.raises(ConnectionClosedError) as caught:
                await pending
            e = caught.value
            assert (e.string_code, e.code, e.message, e.details, e.from_server) == ("OVERLOADED", 1, "Bye.", "full", True)
            assert e.retry is not None and (e.retry.suggested_delay_ms, e.retry.max_attempts) == (250, 4)
            assert await c.wait_closed() is e
            assert c.close_error is e

    run(body)


@pytest.mark.parametrize(
    ("data", "string_code"),
    [
        (b"xyz00000:{}\n", "JSONRPC_PARSE_ERROR"),
        (b"00000003:{}}\n", "JSONRPC_PARSE_ERROR"),
        (_wire.encode_frame(b"[{}]", 100), "JSONRPC_INVALID_REQUEST"),
        (_wire.encode_frame(b'{"jsonrpc":"2.0","result":{},"id":"py-999"}', 100), "JSONRPC_INVALID_REQUEST"),
        (_wire.encode_frame(b'{"jsonrpc":"2.0","result":{},"id":12345}', 100), "JSONRPC_INVALID_REQUEST"),
        (_wire.encode_frame(b'{"jsonrpc":"2.0","method":"_Error","params":[]}', 100), "JSONRPC_INVALID_REQUEST"),
    ],
)
def test_protocol_violations_abort_with_a_close_reason(data: bytes, string_code: str) -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            pending = asyncio.ensure_future(c.call("Echo"))
            await peer.read()
            peer.send_raw(data)
            with pytest.raises(ProtocolError) as caught:
                await pending
            assert caught.value.string_code == string_code and not caught.value.from_server
            sent = await peer.read_until_eof()
            assert [m["method"] for m in sent] == ["_CloseReason"]
            assert sent[0]["params"]["error"]["data"]["string_code"] == string_code
            with pytest.raises(ProtocolError):
                await c.call("Echo")

    run(body)


def test_oversize_header_aborts_without_waiting_for_the_body() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv, max_message_size=1000)
            pending = asyncio.ensure_future(c.call("Big"))
            await peer.read()
            peer.send_raw(b"000003e9:")  # 1001 bytes announced, none sent
            with pytest.raises(ProtocolError, match="exceeds the limit of 1000"):
                await pending
            sent = await peer.read_until_eof()
            assert sent[0]["params"]["error"]["code"] == -32700

    run(body)


def test_the_stream_ending_inside_a_frame_is_a_closed_connection() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            pending = asyncio.ensure_future(c.call("Echo"))
            await peer.read()
            peer.send_raw(b"00000010:{")
            peer.writer.close()
            with pytest.raises(ConnectionClosedError, match="inside a frame") as caught:
                await pending
            assert caught.value.string_code is None

    run(body)


def test_keepalive_timeout_against_a_silent_server() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv, keepalive_interval=0.05, keepalive_timeout=0.2)
            ping = await peer.read()
            assert ping["method"] == "_Keepalive" and ping["params"] == {} and ping["id"].startswith("py-")
            err = await c.wait_closed()  # never answered
            assert isinstance(err, KeepaliveTimeoutError) and err.string_code == "KEEPALIVE"
            sent = await peer.read_until_eof()
            assert sent[-1]["method"] == "_CloseReason"
            assert sent[-1]["params"]["error"]["code"] == -32000

    run(body)


def test_answered_keepalives_keep_the_connection() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv, keepalive_interval=0.05, keepalive_timeout=5)
            for _ in range(5):
                ping = await peer.read()
                assert ping["method"] == "_Keepalive"
                peer.answer(ping, {})
            assert not c.closed
            await c.close()

    run(body)


def test_concurrent_requests_are_matched_by_id_and_written_together() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            writes: list[bytes] = []
            conn = c._conn
            assert conn is not None
            real_write = conn._writer.write

            def counting_write(data: bytes) -> None:
                writes.append(bytes(data))
                real_write(data)

            conn._writer.write = counting_write  # type: ignore[assignment]
            calls = [asyncio.ensure_future(c.call("Echo", {"n": n})) for n in range(20)]
            reqs = [await peer.read() for _ in range(20)]
            assert len(writes) == 1, "requests queued together leave in one write"
            assert len({r["id"] for r in reqs}) == 20
            for r in reversed(reqs):  # answered out of order
                peer.answer(r, {"n": r["params"]["n"]})
            assert [(await f)["n"] for f in calls] == list(range(20))
            await c.close()

    run(body)


def test_error_response_becomes_rpc_error() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            call = asyncio.ensure_future(c.call("Pay", {"amount": 5000}))
            req = await peer.read()
            peer.send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": 1, "message": "Too high.",
                       "data": {"string_code": "AMOUNT_TOO_HIGH", "limit": 1000, "retry": {"suggested_delay_ms": 10, "max_attempts": 1}}}})
            with pytest.raises(RpcError) as caught:
                await call
            e = caught.value
            assert (e.method, e.code, e.string_code, e.data["limit"]) == ("Pay", 1, "AMOUNT_TOO_HIGH", 1000)
            assert e.retry is not None and e.retry.delay == 0.01
            await c.close()

    run(body)


def test_close_fails_calls_in_flight_and_is_idempotent() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            c, peer = await opened(srv)
            pending = asyncio.ensure_future(c.call("Slow"))
            await peer.read()
            await c.close()
            await c.close()
            with pytest.raises(ConnectionClosedError, match="closed by this client"):
                await pending
            assert await peer.read_until_eof() == []  # a normal close sends no _CloseReason

    run(body)


def test_connect_failure_is_a_connection_error() -> None:
    async def body() -> None:
        async with FakeServer() as srv:
            port = srv.port
        with pytest.raises(ConnectionClosedError, match="cannot connect"):
            await Client("127.0.0.1", port, connect_timeout=5).connect()

    run(body)


def test_invalid_options_are_refused() -> None:
    with pytest.raises(ValueError):
        Client(keepalive_interval=1, keepalive_timeout=0)
    with pytest.raises(ValueError):
        Client(max_message_size=0)
    with pytest.raises(ValueError):
        Client(key_file="k.pem")
