"""Exceptions raised by the client, kept together in one module.

Every error a server can send is read into an :class:`ErrorInfo`; the
exceptions expose its fields. Processing should branch on ``string_code``, as
the transport specification says, never on ``message``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "ErrorInfo",
    "Retry",
    "SkillgateError",
    "RpcError",
    "ConnectionClosedError",
    "KeepaliveTimeoutError",
    "ProtocolError",
    "FrameTooLargeError",
    "TransferError",
    "string_code_for",
]

# The transport specification's mapping from numeric codes to string codes,
# used when an error carries no string_code of its own.
_CODE_TO_STRING = {
    -32700: "JSONRPC_PARSE_ERROR",
    -32600: "JSONRPC_INVALID_REQUEST",
    -32601: "JSONRPC_METHOD_NOT_FOUND",
    -32602: "JSONRPC_INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
    -32000: "KEEPALIVE",
}

CODE_PARSE_ERROR = -32700
CODE_INVALID_REQUEST = -32600
CODE_METHOD_NOT_FOUND = -32601
CODE_KEEPALIVE = -32000


def string_code_for(code: int) -> str:
    """Return the string code the specification maps a numeric code to."""
    return _CODE_TO_STRING.get(code, "UNKNOWN")


@dataclass(frozen=True)
class Retry:
    """A server's hint that the failed operation may succeed when retried."""

    suggested_delay_ms: int
    max_attempts: int

    @property
    def delay(self) -> float:
        """The suggested delay in seconds."""
        return self.suggested_delay_ms / 1000.0

    @classmethod
    def from_wire(cls, value: object) -> Retry | None:
        """Read ``data.retry``; anything not of the gateway's shape is None."""
        if not isinstance(value, Mapping):
            return None
        delay, attempts = value.get("suggested_delay_ms"), value.get("max_attempts")
        if not isinstance(delay, int) or not isinstance(attempts, int):
            return None
        if isinstance(delay, bool) or isinstance(attempts, bool) or delay < 0 or attempts < 0:
            return None
        return cls(suggested_delay_ms=delay, max_attempts=attempts)


@dataclass(frozen=True)
class ErrorInfo:
    """A JSON-RPC error object as the transport specification extends it."""

    code: int
    message: str
    string_code: str
    details: str | None = None
    retry: Retry | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: Mapping[str, Any]) -> ErrorInfo:
        """Build from an error object whose code and message are checked.

        A missing or mistyped ``string_code`` falls back to the numeric
        mapping, as receivers must tolerate it.
        """
        code, message = obj["code"], obj["message"]
        data = obj.get("data")
        if not isinstance(data, Mapping):
            data = {}
        sc = data.get("string_code")
        details = data.get("details")
        return cls(
            code=code,
            message=message,
            string_code=sc if isinstance(sc, str) and sc else string_code_for(code),
            details=details if isinstance(details, str) else None,
            retry=Retry.from_wire(data.get("retry")),
            data=dict(data),
        )

    def to_wire(self) -> dict[str, Any]:
        """Return the error object to send."""
        data: dict[str, Any] = {"string_code": self.string_code}
        if self.details is not None:
            data["details"] = self.details
        return {"code": self.code, "message": self.message, "data": data}

    def __str__(self) -> str:
        text = f"{self.string_code} ({self.code}): {self.message}"
        return f"{text} [{self.details}]" if self.details else text


class SkillgateError(Exception):
    """Base class of every error this package raises on purpose."""


class RpcError(SkillgateError):
    """The server answered a request with a JSON-RPC error.

    The connection stays usable. ``retry`` is set when the server says a
    retry can help (for example ``OVERLOADED`` or ``RATE_LIMITED``).
    """

    def __init__(self, info: ErrorInfo, method: str = "") -> None:
        self.info = info
        self.method = method
        prefix = f"{method}: " if method else ""
        super().__init__(f"{prefix}{info}")

    @property
    def code(self) -> int:
        """The numeric JSON-RPC code."""
        return self.info.code

    @property
    def message(self) -> str:
        """The human-readable message."""
        return self.info.message

    @property
    def string_code(self) -> str:
        """The code to branch on, e.g. ``SKILL_NOT_FOUND``."""
        return self.info.string_code

    @property
    def details(self) -> str | None:
        """Diagnostics, when the server sent them."""
        return self.info.details

    @property
    def retry(self) -> Retry | None:
        """The retry hint, when the server sent one."""
        return self.info.retry

    @property
    def data(self) -> Mapping[str, Any]:
        """The whole ``data`` object, application fields included."""
        return self.info.data


class ConnectionClosedError(SkillgateError):
    """The connection ended; calls in flight on it fail with this.

    ``info`` holds the ``_CloseReason`` the server sent (``from_server`` is
    then true), or the reason this client aborted for; it is None when the
    connection simply dropped.
    """

    def __init__(self, message: str, info: ErrorInfo | None = None, *, from_server: bool = False) -> None:
        self.info = info
        self.from_server = from_server
        super().__init__(f"{message}: {info}" if info else message)

    @property
    def code(self) -> int | None:
        """The numeric code of the close reason, if any."""
        return self.info.code if self.info else None

    @property
    def string_code(self) -> str | None:
        """The string code of the close reason, e.g. ``SERVER_SHUTDOWN``."""
        return self.info.string_code if self.info else None

    @property
    def message(self) -> str | None:
        """The close reason's message, if any."""
        return self.info.message if self.info else None

    @property
    def details(self) -> str | None:
        """The close reason's details, if any."""
        return self.info.details if self.info else None

    @property
    def retry(self) -> Retry | None:
        """The server's hint on when to reconnect, if any."""
        return self.info.retry if self.info else None


class KeepaliveTimeoutError(ConnectionClosedError):
    """This client's ``_Keepalive`` went unanswered: the server is gone."""


class ProtocolError(ConnectionClosedError):
    """The server broke the transport rules and this client aborted.

    ``info`` is the ``_CloseReason`` the client sent (-32700 for framing and
    JSON, -32600 for messages).
    """


class FrameTooLargeError(SkillgateError, ValueError):
    """A request would exceed the server's message size; nothing was sent."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"message of {size} bytes exceeds the limit of {limit} bytes")


class TransferError(SkillgateError):
    """A blob transfer went wrong on the client's side of the wire: the bytes
    read do not match the blob's SHA-256, or an answer contradicts the
    transfer (a ``received_bytes`` or ``next_offset`` that does not follow)."""
