"""Framing and message validation against literal bytes (no network)."""

from __future__ import annotations

import asyncio

import pytest

from skillgate import ErrorInfo, FrameTooLargeError, Retry
from skillgate import _wire


def test_encode_matches_the_specification_example() -> None:
    frame = _wire.encode_frame(b'{"a":"b!"}', 100)
    assert frame == b'0000000a:{"a":"b!"}\n'
    assert frame.hex(" ") == "30 30 30 30 30 30 30 61 3a 7b 22 61 22 3a 22 62 21 22 7d 0a"


def test_encode_refuses_an_oversize_body() -> None:
    assert _wire.encode_frame(b"x" * 16, 16).startswith(b"00000010:")
    with pytest.raises(FrameTooLargeError) as caught:
        _wire.encode_frame(b"x" * 17, 16)
    assert (caught.value.size, caught.value.limit) == (17, 16)
    assert isinstance(caught.value, ValueError)


def test_encode_message_is_compact_and_strict() -> None:
    assert _wire.encode_message({"a": [1, "é"]}) == '{"a":[1,"é"]}'.encode()
    with pytest.raises(ValueError):
        _wire.encode_message({"x": float("inf")})


@pytest.mark.parametrize(
    ("header", "size"),
    [(b"0000000a:", 10), (b"0000000A:", 10), (b"00000000:", 0), (b"000003e8:", 1000)],
)
def test_parse_header_accepts_both_cases(header: bytes, size: int) -> None:
    assert _wire.parse_header(header, 1000) == size


@pytest.mark.parametrize(
    "header",
    [
        b"+000000a:",  # int() would take a sign
        b"0x00000a:",  # or a prefix
        b" 000000a:",  # or spaces
        b"0000_00a:",  # or underscores
        b"0000000g:",
        b"0000000a;",
        b"0000000a",
        "00000٠0a:".encode(),  # non-ASCII digits
    ],
)
def test_parse_header_rejects_bad_headers(header: bytes) -> None:
    with pytest.raises(_wire.Violation) as caught:
        _wire.parse_header(header, 1 << 20)
    assert caught.value.info.string_code == "JSONRPC_PARSE_ERROR"
    assert caught.value.info.code == -32700


def test_parse_header_enforces_the_limit_before_the_body() -> None:
    with pytest.raises(_wire.Violation, match="declared length 1001 exceeds the limit of 1000"):
        _wire.parse_header(b"000003e9:", 1000)
    with pytest.raises(_wire.Violation):
        _wire.parse_header(b"ffffffff:", 1 << 20)


def feed(data: bytes) -> asyncio.StreamReader:
    r = asyncio.StreamReader()
    r.feed_data(data)
    r.feed_eof()
    return r


def test_read_frame_tells_clean_eof_from_truncation() -> None:
    async def body() -> None:
        r = feed(b'00000002:{}\n')
        assert await _wire.read_frame(r, 100) == b"{}"
        assert await _wire.read_frame(r, 100) is None
        with pytest.raises(asyncio.IncompleteReadError):
            await _wire.read_frame(feed(b"0000"), 100)
        with pytest.raises(asyncio.IncompleteReadError):
            await _wire.read_frame(feed(b"00000002:{"), 100)
        with pytest.raises(_wire.Violation, match="newline"):
            await _wire.read_frame(feed(b"00000002:{}X"), 100)

    asyncio.run(body())


def test_decode_messages() -> None:
    req = _wire.decode_message(b'{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":"gw-1"}')
    assert req == _wire.Request("gw-1", "_Keepalive", {})
    note = _wire.decode_message(b'{"jsonrpc":"2.0","method":"_Info","params":{"message":"hi"}}')
    assert note == _wire.Notification("_Info", {"message": "hi"})
    ok = _wire.decode_message(b' {"jsonrpc":"2.0","result":{"x":1},"id":"py-1"}\n')
    assert ok == _wire.Response("py-1", {"x": 1}, None)
    err = _wire.decode_message(
        b'{"jsonrpc":"2.0","id":"py-2","error":{"code":-32602,"message":"Skill not found.",'
        b'"data":{"string_code":"SKILL_NOT_FOUND","details":"d","retry":{"suggested_delay_ms":50,"max_attempts":2},"extra":1}}}'
    )
    assert isinstance(err, _wire.Response) and err.error is not None
    assert err.error.string_code == "SKILL_NOT_FOUND" and err.error.details == "d"
    assert err.error.retry == Retry(50, 2) and err.error.data["extra"] == 1


@pytest.mark.parametrize(
    ("body", "string_code"),
    [
        (b"{", "JSONRPC_PARSE_ERROR"),
        (b'{"jsonrpc":"2.0","result":{"x":NaN},"id":"a"}', "JSONRPC_PARSE_ERROR"),
        (b'\xff{"jsonrpc":"2.0"}', "JSONRPC_PARSE_ERROR"),
        (b"[" * 100000, "JSONRPC_PARSE_ERROR"),
        (b"[]", "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"1.0","result":{},"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","result":{},"id":1}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","result":[],"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","result":{},"error":{"code":1,"message":""},"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","error":{"code":"1","message":""},"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","error":{"code":true,"message":""},"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","error":{"code":4294967296,"message":""},"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","error":{"code":1},"id":"a"}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","method":"_Keepalive","params":{},"id":7}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","method":"x","params":[1]}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","method":5,"params":{}}', "JSONRPC_INVALID_REQUEST"),
        (b'{"jsonrpc":"2.0","id":"a"}', "JSONRPC_INVALID_REQUEST"),
    ],
)
def test_decode_rejects_invalid_messages(body: bytes, string_code: str) -> None:
    with pytest.raises(_wire.Violation) as caught:
        _wire.decode_message(body)
    assert caught.value.info.string_code == string_code


def test_error_info_falls_back_to_the_code_mapping() -> None:
    assert ErrorInfo.from_wire({"code": -32601, "message": ""}).string_code == "JSONRPC_METHOD_NOT_FOUND"
    assert ErrorInfo.from_wire({"code": -32000, "message": "", "data": {"string_code": 5}}).string_code == "KEEPALIVE"
    assert ErrorInfo.from_wire({"code": 1, "message": "", "data": "junk"}).string_code == "UNKNOWN"
    bad_retry = {"code": 1, "message": "", "data": {"retry": {"suggested_delay_ms": "1", "max_attempts": 2}}}
    assert ErrorInfo.from_wire(bad_retry).retry is None
