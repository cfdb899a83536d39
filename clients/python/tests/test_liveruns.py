"""Live runs: streamed and background runs, watch, cancel, get and list, against the real gateway."""

from __future__ import annotations

import pytest
from conftest import Gateway, run

from skillgate import Client, RpcError, RunEvent

CHATTY = """import runtime, time
def main(args):
    for i in range(args['n']):
        print('line', i)
        runtime.progress(i + 1, args['n'])
        time.sleep(args.get('pause', 0))
    return {'lines': args['n']}
"""


def client_for(gw: Gateway) -> Client:
    host, port = gw.tcp
    return Client(host, port)


def lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(n))


def well_formed(events: list[RunEvent]) -> str:
    """Checks started first, finished last, seq without holes; returns the log text."""
    assert events[0]["type"] == "started"
    assert events[-1]["type"] == "finished"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    return "".join(e.get("text", "") for e in events if e["type"] == "log")


def test_streamed_run_delivers_every_event_before_the_result(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            events: list[RunEvent] = []
            result = await c.run_code(CHATTY, args={"n": 30}, on_event=events.append)
            assert result["status"] == "completed"
            assert {e["run_id"] for e in events} == {result["run_id"]}
            assert well_formed(events) == lines(30)
            assert any(e["type"] == "progress" for e in events)
            with pytest.raises(ValueError):
                await c.run_code(CHATTY, on_event=events.append, background=True)

    run(body)


def test_background_run_watch_get_and_list(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as a:
            ref = await a.run_code(CHATTY, args={"n": 20, "pause": 0.02}, background=True)
            assert ref["status"] == "running"
        # The run outlives the connection that started it.
        async with client_for(shared_gateway) as b:
            events: list[RunEvent] = []
            final = await b.watch_run(ref["run_id"], events.append)
            assert final["status"] == "completed"
            assert well_formed(events) == lines(20)
            assert "request_id" not in events[0], "nobody waits on an async run's call"
            resumed: list[RunEvent] = []
            await b.watch_run(ref["run_id"], resumed.append, after_seq=3)
            assert resumed == events[3:]
            assert await b.get_run(ref["run_id"], wait_ms=100) == final
            page = await b.list_runs(status="finished", limit=100)
            assert ref["run_id"] in [r["run_id"] for r in page["runs"]]

    run(body)


def test_cancel_run(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            ref = await c.run_code(CHATTY, args={"n": 1000, "pause": 0.05}, background=True)
            cancelled = await c.cancel_run(ref["run_id"])
            assert cancelled == {"run_id": ref["run_id"], "status": "failed"}
            result = await c.get_run(ref["run_id"])
            assert result["error"]["type"] == "CANCELLED"
            again = await c.cancel_run(ref["run_id"])
            assert again["status"] == "failed", "cancelling a finished run answers its status"

    run(body)


def test_run_methods_refuse_unknown_runs_and_bad_params(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            for call in (
                c.get_run("run_0123456789abcdef"),
                c.cancel_run("run_0123456789abcdef"),
                c.watch_run("run_0123456789abcdef", lambda e: None),
            ):
                with pytest.raises(RpcError) as info:
                    await call
                assert info.value.string_code == "RUN_NOT_FOUND"
            with pytest.raises(RpcError) as info:
                await c.list_runs(status="done")
            assert info.value.string_code == "JSONRPC_INVALID_PARAMS"

    run(body)
