"""Connection lifecycle against the real gateway: keepalives, drain,
reconnection, pipelining, frame limits and tokens."""

from __future__ import annotations

import asyncio
import logging
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import BINARY, Gateway, StartGateway, free_port, run

from skillgate import (
    Client,
    ConnectionClosedError,
    FrameTooLargeError,
    KeepaliveTimeoutError,
    ProtocolError,
    Reconnect,
    RpcError,
)

SLOW_RUN = "import time\ndef main(args):\n    time.sleep(args['s'])\n    return {'slept': args['s']}\n"


def client_for(gw: Gateway, **kwargs: object) -> Client:
    host, port = gw.tcp
    return Client(host, port, **kwargs)  # type: ignore[arg-type]


def test_client_answers_server_keepalives(start_gateway: StartGateway, caplog: pytest.LogCaptureFixture) -> None:
    # Unanswered, the gateway would abort 100ms + 1s after its first
    # _Keepalive; 15 answered ones are 1.4s or more apart from the first, so
    # the idle client (its own keepalives off) has outlived that.
    gw = start_gateway("--keepalive-interval", "100ms", "--keepalive-timeout", "1s")
    caplog.set_level(logging.DEBUG, logger="skillgate")

    def answered() -> int:
        return sum("answered server _Keepalive" in r.getMessage() for r in caplog.records)

    async def body() -> None:
        async with client_for(gw, keepalive_interval=0) as c:
            while answered() < 15 and not c.closed:
                await asyncio.sleep(0.05)
            assert not c.closed, c.close_error
            assert (await c.list_skills())["skills"]

    run(body)
    assert not any(r.get("string_code") == "KEEPALIVE" for r in gw.records)


def test_keepalive_timeout_detects_a_stopped_server(start_gateway: StartGateway) -> None:
    gw = start_gateway()

    async def body() -> None:
        async with client_for(gw, keepalive_interval=0.2, keepalive_timeout=0.5) as c:
            gw.freeze()
            try:
                with pytest.raises(KeepaliveTimeoutError) as caught:
                    await c.list_skills()  # never answered: the keepalive gives up
                err = await c.wait_closed()
            finally:
                gw.signal(signal.SIGCONT)
            assert caught.value is err
            assert (err.code, err.string_code, err.from_server) == (-32000, "KEEPALIVE", False)
            with pytest.raises(KeepaliveTimeoutError):
                await c.ping()

    run(body)


def test_drain_finishes_the_call_then_reports_server_shutdown(start_gateway: StartGateway) -> None:
    gw = start_gateway(workers=1)

    async def body() -> None:
        async with client_for(gw) as c:
            slow = asyncio.ensure_future(c.run_code(SLOW_RUN, args={"s": 1}))
            await c.ping()  # answered after the run was read: the run is in flight
            gw.signal(signal.SIGTERM)
            assert (await slow)["output"] == {"slept": 1}
            err = await c.wait_closed()
            assert err.from_server and err.string_code == "SERVER_SHUTDOWN"
            assert err.message == "The server is shutting down."
            assert err.retry is not None and (err.retry.suggested_delay_ms, err.retry.max_attempts) == (1000, 3)
            with pytest.raises(ConnectionClosedError) as caught:
                await c.list_skills()
            assert caught.value.string_code == "SERVER_SHUTDOWN"

    run(body)
    assert gw.wait_exit() == 0


def test_reconnect_honours_the_shutdown_hint(start_gateway: StartGateway) -> None:
    port = free_port()
    first = start_gateway(listen=f"127.0.0.1:{port}")

    async def body() -> None:
        async with client_for(first, reconnect=Reconnect(max_attempts=3)) as c:
            old_session = c.session
            assert old_session is not None
            first.signal(signal.SIGTERM)
            err = await c.wait_closed()
            assert err.string_code == "SERVER_SHUTDOWN"
            assert first.wait_exit() == 0
            start_gateway(listen=f"127.0.0.1:{port}")
            loop = asyncio.get_running_loop()
            began = loop.time()
            assert (await c.list_skills())["skills"]
            assert loop.time() - began >= 0.9, "the server's suggested delay was honoured"
            assert c.session is not None and c.session["session_id"] != old_session["session_id"]

    run(body)


def test_reconnect_gives_up_after_bounded_attempts(start_gateway: StartGateway) -> None:
    gw = start_gateway()

    async def body() -> None:
        policy = Reconnect(max_attempts=2, delay=0.01, max_delay=0.05)
        async with client_for(gw, reconnect=policy) as c:
            gw.stop()  # killed: no close reason, no hint
            err = await c.wait_closed()
            assert err.string_code is None and not err.from_server
            with pytest.raises(ConnectionClosedError, match="gave up reconnecting after 2 attempts"):
                await c.list_skills()

    run(body)


def test_without_reconnect_the_close_reason_is_raised(start_gateway: StartGateway) -> None:
    gw = start_gateway()

    async def body() -> None:
        async with client_for(gw) as c:
            gw.signal(signal.SIGTERM)
            await c.wait_closed()
            assert gw.wait_exit() == 0
            with pytest.raises(ConnectionClosedError) as caught:
                await c.list_skills()
            assert caught.value.string_code == "SERVER_SHUTDOWN"

    run(body)


def test_calls_pipelined_behind_initialize(shared_gateway: Gateway) -> None:
    # Initialize and the calls leave in one write; the gateway must hold the
    # calls until Initialize has succeeded instead of refusing them.
    async def body() -> None:
        c = client_for(shared_gateway)
        await c.open()
        try:
            session, listed, described, guide = await asyncio.gather(
                c.initialize(),
                c.list_skills(),
                c.describe_skill("acme.math.add"),
                c.load_skills_protocol_guide(),
            )
            assert session["session_id"]
            assert listed["skills"] and described["skill"]["name"] == "acme.math.add" and guide["content"]
        finally:
            await c.close()

    run(body)


def test_oversize_requests_are_refused_before_sending(start_gateway: StartGateway) -> None:
    gw = start_gateway("--max-message-size", "16384")

    async def body() -> None:
        async with client_for(gw) as c:
            assert c.session is not None and c.session["max_message_size"] == 16384
            with pytest.raises(FrameTooLargeError) as caught:
                await c.create_blob("x" * 17000)
            assert caught.value.limit == 16384
            blob = await c.create_blob("x" * 16000)  # under the limit: sent and stored
            assert blob["size_bytes"] == 16000

    run(body)
    assert not any(r.get("message") == "aborting connection" for r in gw.records)


def test_oversize_incoming_frame_aborts_before_the_body(start_gateway: StartGateway) -> None:
    gw = start_gateway()

    async def body() -> None:
        async with client_for(gw, max_message_size=512) as c:
            with pytest.raises(ProtocolError) as caught:
                await c.load_skills_protocol_guide()  # far larger than 512 bytes
            assert caught.value.string_code == "JSONRPC_PARSE_ERROR"
            assert "exceeds the limit of 512" in (caught.value.details or "")

    run(body)
    reported = gw.wait_record("peer reported an error")
    assert (reported["method"], reported["string_code"]) == ("_CloseReason", "JSONRPC_PARSE_ERROR")


def _issue_token(tmp_path: Path) -> tuple[str, Path]:
    out = subprocess.run([str(BINARY), "token"], capture_output=True, text=True, timeout=30, check=True).stdout
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    token, digest = fields["token"].strip(), fields["hash"].strip()
    auth = tmp_path / "auth.yaml"
    auth.write_text(
        f'identities:\n  - name: ci\n    class: service\n    tokens: ["{digest}"]\n'
        '    methods: ["*"]\n    namespaces: ["*"]\n'
    )
    return token, auth


def test_initialize_sends_the_token(start_gateway: StartGateway, tmp_path: Path) -> None:
    token, auth = _issue_token(tmp_path)
    gw = start_gateway("--auth-file", str(auth))

    async def body() -> None:
        async with client_for(gw, token=token) as c:
            assert c.session is not None and c.session["identity"] == "ci"
            assert (await c.list_skills())["skills"]
        with pytest.raises(RpcError) as caught:
            async with client_for(gw, token="sgt_wrong") as c:
                pass
        assert caught.value.method == "Initialize"
        assert caught.value.string_code in {"AUTH_REQUIRED", "PERMISSION_DENIED"}

    run(body)
