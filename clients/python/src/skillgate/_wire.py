"""Framing and message model of the transport (spec 001), without I/O policy.

A frame is 8 hex digits of body length, a colon, the JSON body and a newline.
Incoming data is checked strictly because the specification makes every
violation fatal: the caller aborts the connection with the ``ErrorInfo`` of
the :class:`Violation` raised here.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Mapping, Union

from .errors import (
    CODE_INVALID_REQUEST,
    CODE_PARSE_ERROR,
    ErrorInfo,
    FrameTooLargeError,
)

HEADER_LEN = 9  # length digits plus the colon
MAX_DECLARABLE = 0xFFFFFFFF  # the largest length 8 hex digits can declare
DEFAULT_MAX_MESSAGE_SIZE = 1 << 20  # the gateway's default --max-message-size
_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")
_INT32 = range(-(2**31), 2**31)


class Violation(Exception):
    """Incoming data broke the transport rules; ``info`` is the close reason."""

    def __init__(self, info: ErrorInfo) -> None:
        self.info = info
        super().__init__(str(info))


def parse_error(details: str) -> Violation:
    """A framing or JSON error (-32700)."""
    return Violation(ErrorInfo(CODE_PARSE_ERROR, "Parse error.", "JSONRPC_PARSE_ERROR", details))


def invalid_message(details: str) -> Violation:
    """Valid JSON that is no valid message (-32600)."""
    return Violation(ErrorInfo(CODE_INVALID_REQUEST, "Invalid request.", "JSONRPC_INVALID_REQUEST", details))


# ---- framing ---------------------------------------------------------------


def encode_frame(body: bytes, limit: int) -> bytes:
    """Frame ``body``, refusing a body the receiver would abort on."""
    if len(body) > min(limit, MAX_DECLARABLE):
        raise FrameTooLargeError(len(body), min(limit, MAX_DECLARABLE))
    return b"%08x:%s\n" % (len(body), body)


def parse_header(header: bytes, limit: int) -> int:
    """Return the body length a header declares, checked against ``limit``.

    ``int(x, 16)`` alone would also accept signs, underscores, spaces and a
    ``0x`` prefix, so every digit is checked first.
    """
    if len(header) != HEADER_LEN or header[8] != 0x3A or not all(b in _HEX_DIGITS for b in header[:8]):
        raise parse_error(f"invalid frame header {header!r}")
    size = int(header[:8], 16)
    if size > limit:
        raise parse_error(f"declared length {size} exceeds the limit of {limit} bytes")
    return size


async def read_frame(reader: asyncio.StreamReader, limit: int) -> bytes | None:
    """Read one frame body; None on a clean end of stream between frames.

    A stream ending inside a frame raises ``asyncio.IncompleteReadError``.
    The declared length is checked before the body is read.
    """
    try:
        header = await reader.readexactly(HEADER_LEN)
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise
    size = parse_header(header, limit)
    body = await reader.readexactly(size + 1)
    if body[-1] != 0x0A:
        raise parse_error("frame body is not followed by a newline")
    return body[:-1]


# ---- messages --------------------------------------------------------------


def encode_message(msg: Mapping[str, Any]) -> bytes:
    """Encode a message compactly; NaN and infinities are refused (ValueError)."""
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


@dataclass(frozen=True)
class Request:
    """A request from the server (it has a string id)."""

    id: str
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Notification:
    """A notification (a method without an id)."""

    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class Response:
    """A response; exactly one of ``result`` and ``error`` is set."""

    id: str
    result: Mapping[str, Any] | None
    error: ErrorInfo | None


Message = Union[Request, Notification, Response]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_message(body: bytes) -> Message:
    """Parse and validate one frame body."""
    try:
        obj = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise parse_error(f"invalid JSON: {e}") from None
    if not isinstance(obj, dict):
        raise invalid_message(f"a message must be a JSON object, not {type(obj).__name__}")
    if obj.get("jsonrpc") != "2.0":
        raise invalid_message('"jsonrpc" must be "2.0"')
    if "method" in obj:
        return _decode_call(obj)
    if "result" in obj or "error" in obj:
        return _decode_response(obj)
    raise invalid_message("neither a request, a notification nor a response")


def _decode_call(obj: dict[str, Any]) -> Request | Notification:
    method, params = obj["method"], obj.get("params", {})
    if not isinstance(method, str):
        raise invalid_message('"method" must be a string')
    if not isinstance(params, dict):
        raise invalid_message('"params" must be a JSON object')
    if "id" not in obj:
        return Notification(method, params)
    if not isinstance(obj["id"], str):
        raise invalid_message('a request "id" must be a string')
    return Request(obj["id"], method, params)


def _decode_response(obj: dict[str, Any]) -> Response:
    msg_id = obj.get("id")
    if not isinstance(msg_id, str):
        raise invalid_message('a response "id" must be a string')
    if ("result" in obj) == ("error" in obj):
        raise invalid_message('a response carries exactly one of "result" and "error"')
    if "result" in obj:
        if not isinstance(obj["result"], dict):
            raise invalid_message('"result" must be a JSON object')
        return Response(msg_id, obj["result"], None)
    return Response(msg_id, None, decode_error(obj["error"]))


def decode_error(err: object) -> ErrorInfo:
    """Validate an error object's mandatory fields and read it."""
    if not isinstance(err, dict):
        raise invalid_message('"error" must be a JSON object')
    code, message = err.get("code"), err.get("message")
    if not isinstance(code, int) or isinstance(code, bool) or code not in _INT32:
        raise invalid_message('"error.code" must be a 32-bit integer')
    if not isinstance(message, str):
        raise invalid_message('"error.message" must be a string')
    return ErrorInfo.from_wire(err)
