"""The eight Skills Protocol methods and their errors, against the real gateway."""

from __future__ import annotations

import asyncio
import math
from types import MappingProxyType

import pytest
from conftest import Gateway, run

import skillgate
from skillgate import Client, RpcError


def client_for(gw: Gateway, **kwargs: object) -> Client:
    host, port = gw.tcp
    return Client(host, port, **kwargs)  # type: ignore[arg-type]


def test_initialize_returns_the_session(shared_gateway: Gateway) -> None:
    async def body() -> None:
        c = client_for(shared_gateway, client_name="pytest", client_version="9.9")
        session = await c.connect()
        try:
            assert session["protocol_version"] == "1.0"
            assert session["server"]["name"] == "skillgate"
            assert session["session_id"].startswith("s-")
            assert session["max_message_size"] == 1 << 20
            assert session["keepalive_interval_ms"] == 30000
            assert "run_code" in session["methods"]
            assert c.session == session
        finally:
            await c.close()
        assert c.closed

    run(body)
    # The log line arrives through a pipe, after the answer: wait for it.
    shared_gateway.wait_record("session initialized", client="pytest", client_version="9.9")


def test_discovery_methods(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            listed = await c.list_skills(detail="summary")
            names = {s["name"] for s in listed["skills"]}
            assert {"acme.math.add", "acme.text.wordcount", "skills.protocol.guide"} <= names
            assert listed["next_cursor"] is None

            page = await c.list_skills(limit=1)
            assert len(page["skills"]) == 1 and page["next_cursor"]
            rest = await c.list_skills(cursor=page["next_cursor"], limit=100)
            assert page["skills"][0] not in rest["skills"]

            described = await c.describe_skill("acme.math.add", version="1.0.0")
            assert described["skill"]["version"] == "1.0.0"
            assert described["skill"]["manifest"]["kind"] == "action"

            f = await c.read_skill_file("acme.math.add", "SKILL.md")
            assert f["encoding"] == "utf-8" and f["content"].startswith("---")
            assert skillgate.blob_bytes(f).decode() == f["content"]
            part = await c.read_skill_file("acme.math.add", "SKILL.md", offset=4, max_bytes=10)
            assert part["content"] == f["content"][4:14] and part["next_offset"] == 14

            guide = await c.load_skills_protocol_guide()
            assert "list_skills" in guide["content"]

    run(body)


def test_execute_skill_and_run_code(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            res = await c.execute_skill("acme.math.add", {"a": 2, "b": 3})
            assert res["status"] == "completed" and res["output"] == {"sum": 5, "count": 2}

            code = "from skills.acme.math.add import main as add\n\ndef go(args):\n    return add({'values': args['xs']})\n"
            res = await c.run_code(code, entrypoint="go", args={"xs": [1, 2, 3.5]}, mount_skills=["acme.math.add"])
            assert res["status"] == "completed", res
            assert res["output"] == {"sum": 6.5, "count": 3}

            failed = await c.run_code("def main(args):\n    raise ValueError('no')\n")
            assert failed["status"] == "failed"
            assert failed["error"]["type"] == "ValueError"

    run(body)


def test_blob_round_trip(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            text = "the cat and the hat\nthe end\n"
            blob = await c.create_blob(text)
            assert blob["blob_id"].startswith("blob:") and blob["size_bytes"] == len(text)
            back = await c.read_blob(blob["blob_id"], mode="full")
            assert back["content"] == text and not back["truncated"]

            raw = bytes(range(256))
            bin_blob = await c.create_blob(raw)
            assert bin_blob["kind"] == "application/octet-stream"
            got = await c.read_blob(bin_blob["blob_id"], mode="full")
            assert got["encoding"] == "base64" and skillgate.blob_bytes(got) == raw

            # Through a run: the skill reads the input blob and writes one.
            res = await c.execute_skill("acme.text.wordcount", {"text_blob": blob["blob_id"], "top": 1}, input_blobs=[blob["blob_id"]])
            assert res["status"] == "completed", res
            assert res["output"]["words"] == 7
            top = await c.read_blob(res["output"]["top_words_blob"], mode="full")
            assert '"the"' in top["content"]

    run(body)


def test_concurrent_calls_get_their_own_answers(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            reads = [c.read_skill_file("acme.math.add", "SKILL.md", offset=i, max_bytes=1) for i in range(60)]
            adds = [c.execute_skill("acme.math.add", {"a": i, "b": 1000}) for i in range(4)]
            files, runs = await asyncio.gather(asyncio.gather(*reads), asyncio.gather(*adds))
            whole = (await c.read_skill_file("acme.math.add", "SKILL.md"))["content"]
            assert [f["offset"] for f in files] == list(range(60))
            assert "".join(f["content"] for f in files) == whole[:60]
            assert [r["output"]["sum"] for r in runs] == [i + 1000 for i in range(4)]

    run(body)


def test_unknown_skill_raises_skill_not_found(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            with pytest.raises(RpcError) as caught:
                await c.describe_skill("acme.no.such")
            e = caught.value
            assert (e.code, e.string_code, e.method) == (-32602, "SKILL_NOT_FOUND", "describe_skill")
            assert "acme.no.such" in (e.details or "")
            with pytest.raises(RpcError) as caught:
                await c.execute_skill("acme.math.add", {}, version="7.0.0")
            assert caught.value.string_code == "SKILL_NOT_FOUND"
            assert (await c.ping()) >= 0  # the connection lives on

    run(body)


def test_error_responses_carry_string_codes(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            with pytest.raises(RpcError) as caught:
                await c.read_blob("not-a-blob")
            assert caught.value.string_code == "JSONRPC_INVALID_PARAMS"
            assert caught.value.data.get("param") == "blob_id"
            with pytest.raises(RpcError) as caught:
                await c.read_blob("blob:00000000000000000000000000000000")
            assert caught.value.string_code == "BLOB_NOT_FOUND"
            with pytest.raises(RpcError) as caught:
                await c.call("no_such_method")
            assert (caught.value.code, caught.value.string_code) == (-32601, "JSONRPC_METHOD_NOT_FOUND")
            with pytest.raises(RpcError) as caught:
                await c.call("Initialize", {"protocol_version": "1.0"})
            assert caught.value.string_code == "ALREADY_INITIALIZED"

    run(body)


def test_bad_arguments_fail_locally_and_leave_the_connection_usable(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            with pytest.raises(TypeError):
                await c.call("list_skills", [1, 2])  # type: ignore[arg-type]
            with pytest.raises(ValueError):
                await c.run_code("def main(a): return a", args={"x": math.nan})
            with pytest.raises(TypeError):
                await c.call("list_skills", {"x": object()})
            with pytest.raises(TypeError):
                await c.run_code("", mount_skills="acme.math.add")
            with pytest.raises(TypeError):
                await c.create_blob(123)  # type: ignore[arg-type]
            assert (await c.list_skills())["skills"]
            # Any mapping is a JSON object, not only a dict.
            assert (await c.call("list_skills", MappingProxyType({"limit": 1})))["skills"]

    run(body)


def test_calls_before_initialize_are_refused_by_the_gateway(shared_gateway: Gateway) -> None:
    async def body() -> None:
        c = client_for(shared_gateway)
        await c.open()
        try:
            await c.ping()  # transport messages work before Initialize
            with pytest.raises(RpcError) as caught:
                await c.list_skills()
            assert caught.value.string_code == "JSONRPC_METHOD_NOT_FOUND"
            await c.initialize()
            assert (await c.list_skills())["skills"]
        finally:
            await c.close()

    run(body)


def test_a_call_can_time_out_and_the_late_answer_is_dropped(shared_gateway: Gateway) -> None:
    async def body() -> None:
        async with client_for(shared_gateway) as c:
            with pytest.raises(asyncio.TimeoutError):
                await c.run_code("import time\ndef main(args):\n    time.sleep(0.5)\n    return {}\n", timeout=0.01)
            # The answer to the abandoned call arrives later and must not
            # break the connection: a run behind it is answered normally.
            res = await c.run_code("def main(args):\n    return {'ok': True}\n")
            assert res["output"] == {"ok": True}
            assert not c.closed

    run(body)
