"""One framed connection: a reader task, a coalescing writer, keepalives.

State and who changes it (everything runs on one event loop, so no locks
guard plain fields):

- ``_pending`` maps the id of every request sent and not yet answered to its
  future. The reader resolves and removes entries; a caller that gives up
  (cancelled or timed out) leaves its cancelled future so that the late
  answer is recognised and dropped instead of aborting as an unknown id.
- ``_out`` holds frames not yet handed to the socket. Frames queued in the
  same loop iteration leave in one write (a request pipelined behind
  ``Initialize`` shares its segment); transport answers jump the queue.
- ``_error`` is the first reason the connection ended; once set, it is what
  every later call raises. ``_fail`` alone sets it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from . import _wire
from .errors import (
    CODE_KEEPALIVE,
    CODE_METHOD_NOT_FOUND,
    ConnectionClosedError,
    ErrorInfo,
    KeepaliveTimeoutError,
    ProtocolError,
    RpcError,
)

__all__ = ["Connection", "ConnectionOptions", "ErrorCallback", "NotificationCallback"]

KEEPALIVE = "_Keepalive"
ErrorCallback = Callable[[ErrorInfo, Mapping[str, Any]], None]
NotificationCallback = Callable[[str, Mapping[str, Any]], None]

# Above this many bytes buffered in the socket transport, senders wait.
_HIGH_WATER = 1 << 20
# How long closing may wait for queued bytes (a _CloseReason) to leave.
_CLOSE_GRACE = 1.0


@dataclass
class ConnectionOptions:
    """Settings of one connection; see :class:`skillgate.Client` for meanings."""

    keepalive_interval: float = 30.0
    keepalive_timeout: float = 20.0
    send_limit: int = _wire.DEFAULT_MAX_MESSAGE_SIZE
    receive_limit: int = _wire.DEFAULT_MAX_MESSAGE_SIZE
    id_prefix: str = "py"
    on_error: ErrorCallback | None = None
    on_info: NotificationCallback | None = None
    on_notification: NotificationCallback | None = None
    logger: logging.Logger | None = None


class Connection:
    """A framed JSON-RPC connection over an established stream.

    Safe for any number of concurrent :meth:`request` calls from tasks of the
    loop that created it. The server's ``_Keepalive`` requests are answered;
    this side sends its own after ``keepalive_interval`` without incoming
    traffic and aborts with ``KEEPALIVE`` when one is not answered within
    ``keepalive_timeout``.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, options: ConnectionOptions) -> None:
        self._reader = reader
        self._writer = writer
        self._opts = options
        self._log = options.logger or logging.getLogger("skillgate")
        self._loop = asyncio.get_running_loop()
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[_wire.Response]] = {}
        self._out: list[bytes] = []
        self._flush_handle: asyncio.Handle | None = None
        self._drain_lock = asyncio.Lock()
        self._error: ConnectionClosedError | None = None
        self._close_reason: ErrorInfo | None = None
        self._closed = self._loop.create_future()
        self._last_rx = self._loop.time()
        self._tasks = [
            self._loop.create_task(self._read_loop()),
            self._loop.create_task(self._keepalive_loop()),
        ]

    # ---- public ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the connection has ended."""
        return self._error is not None

    @property
    def error(self) -> ConnectionClosedError | None:
        """Why the connection ended, once it has."""
        return self._error

    def set_limits(self, *, send: int | None = None, receive: int | None = None) -> None:
        """Adjust the frame size limits, e.g. to what Initialize announced."""
        if send is not None:
            self._opts.send_limit = send
        if receive is not None:
            self._opts.receive_limit = receive

    async def request(
        self, method: str, params: Mapping[str, Any], *, on_id: Callable[[str], None] | None = None
    ) -> Mapping[str, Any]:
        """Send a request and wait for its result.

        ``on_id`` is called with the request's id before it is sent (a
        streamed run's events carry it as ``request_id``). Raises :class:`RpcError` for an error response,
        :class:`ConnectionClosedError` when the connection ends first and
        :class:`FrameTooLargeError` (nothing sent) for an over-size request.
        """
        if self._error is not None:
            raise self._error
        msg_id = f"{self._opts.id_prefix}-{next(self._ids)}"
        if on_id is not None:
            on_id(msg_id)
        frame = _wire.encode_frame(
            _wire.encode_message({"jsonrpc": "2.0", "method": method, "params": params, "id": msg_id}),
            self._opts.send_limit,
        )
        fut: asyncio.Future[_wire.Response] = self._loop.create_future()
        self._pending[msg_id] = fut
        self._enqueue(frame)
        try:
            await self._backpressure()
            resp = await fut
        finally:
            if not fut.done():
                fut.cancel()  # the caller gave up; a late answer is dropped
        if resp.error is not None:
            raise RpcError(resp.error, method)
        assert resp.result is not None
        return resp.result

    async def close(self) -> None:
        """Close the connection; calls in flight fail. Idempotent."""
        self._fail(ConnectionClosedError("the connection was closed by this client"))
        await self.wait_closed()

    async def wait_closed(self) -> ConnectionClosedError:
        """Wait until the connection has ended and its tasks are done."""
        await asyncio.shield(self._closed)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        assert self._error is not None
        return self._error

    # ---- writing -----------------------------------------------------------

    def _enqueue(self, frame: bytes, *, urgent: bool = False) -> None:
        if urgent:
            self._out.insert(0, frame)
        else:
            self._out.append(frame)
        if self._flush_handle is None:
            self._flush_handle = self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_handle = None
        if self._error is None and self._out:
            data = b"".join(self._out)
            self._out.clear()
            self._writer.write(data)

    async def _backpressure(self) -> None:
        """Wait while the socket has too much unsent data (a slow server)."""
        transport = self._writer.transport
        if transport.get_write_buffer_size() <= _HIGH_WATER:
            return
        async with self._drain_lock:
            try:
                await self._writer.drain()
            except (ConnectionError, OSError):
                pass  # the reader sees the end and fails the request

    def _send_result(self, msg_id: str, result: Mapping[str, Any]) -> None:
        body = _wire.encode_message({"jsonrpc": "2.0", "result": result, "id": msg_id})
        self._enqueue(_wire.encode_frame(body, self._opts.send_limit), urgent=True)

    def _send_error(self, msg_id: str, info: ErrorInfo) -> None:
        body = _wire.encode_message({"jsonrpc": "2.0", "error": info.to_wire(), "id": msg_id})
        self._enqueue(_wire.encode_frame(body, self._opts.send_limit), urgent=True)

    # ---- reading -----------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                body = await _wire.read_frame(self._reader, self._opts.receive_limit)
                if body is None:
                    self._fail(self._ended("the server closed the connection"))
                    return
                self._last_rx = self._loop.time()
                self._dispatch(_wire.decode_message(body))
        except _wire.Violation as v:
            self._abort(ProtocolError("the server broke the transport protocol", v.info), v.info)
        except asyncio.IncompleteReadError:
            self._fail(self._ended("the connection ended inside a frame"))
        except (ConnectionError, OSError, ssl.SSLError) as e:
            self._fail(self._ended(f"the connection failed ({e.__class__.__name__}: {e})"))
        except Exception as e:  # a bug here must not leave calls hanging
            self._log.exception("skillgate: reader failed")
            self._fail(ConnectionClosedError(f"the client's reader failed ({e.__class__.__name__}: {e})"))

    def _ended(self, what: str) -> ConnectionClosedError:
        """The error for a stream that ended, naming the server's reason."""
        if self._close_reason is not None:
            return ConnectionClosedError("the server closed the connection", self._close_reason, from_server=True)
        return ConnectionClosedError(what)

    def _dispatch(self, msg: _wire.Message) -> None:
        if isinstance(msg, _wire.Response):
            self._resolve(msg)
        elif isinstance(msg, _wire.Request):
            self._serve(msg)
        else:
            self._notified(msg)

    def _resolve(self, msg: _wire.Response) -> None:
        fut = self._pending.pop(msg.id, None)
        if fut is None:
            raise _wire.invalid_message(f"response to unknown request id {msg.id!r}")
        if not fut.done():  # else its caller gave up waiting
            fut.set_result(msg)

    def _serve(self, req: _wire.Request) -> None:
        if req.method == KEEPALIVE:
            self._send_result(req.id, {})
            self._log.debug("skillgate: answered server _Keepalive %s", req.id)
            return
        self._log.debug("skillgate: refused server request %s", req.method)
        self._send_error(
            req.id,
            ErrorInfo(CODE_METHOD_NOT_FOUND, "Method not found.", "JSONRPC_METHOD_NOT_FOUND", req.method),
        )

    def _notified(self, note: _wire.Notification) -> None:
        if note.method == "_CloseReason":
            self._on_close_reason(note.params)
        elif note.method == "_Error":
            self._on_error_notification(note.params)
        elif note.method == "_Info":
            self._callback(self._opts.on_info, logging.INFO, note.method, note.params)
        else:
            self._callback(self._opts.on_notification, logging.DEBUG, note.method, note.params)

    def _on_close_reason(self, params: Mapping[str, Any]) -> None:
        # The first reason is definitive; the server closes the stream
        # itself, so this side only waits for the end of it.
        info = self._notified_error("_CloseReason", params)
        if info is None:
            return
        if self._close_reason is None:
            self._close_reason = info
        self._log.warning("skillgate: server closing the connection: %s", info)

    def _on_error_notification(self, params: Mapping[str, Any]) -> None:
        info = self._notified_error("_Error", params)
        if info is None:
            return
        if self._opts.on_error is None:
            self._log.warning("skillgate: server reported %s (params %s)", info, dict(params))
            return
        try:
            self._opts.on_error(info, params)
        except Exception:
            self._log.exception("skillgate: on_error callback failed")

    def _notified_error(self, method: str, params: Mapping[str, Any]) -> ErrorInfo | None:
        """The error a _CloseReason or _Error carries; None (logged) if malformed.

        The message itself is valid, only its params are not: that is no
        reason to abort, and these notifications must never be answered.
        """
        try:
            return _wire.decode_error(params.get("error"))
        except _wire.Violation as v:
            self._log.warning("skillgate: ignored a malformed %s (%s): %s", method, v.info.details, dict(params))
            return None

    def _callback(self, cb: NotificationCallback | None, level: int, method: str, params: Mapping[str, Any]) -> None:
        if cb is None:
            self._log.log(level, "skillgate: %s %s", method, dict(params))
            return
        try:
            cb(method, params)
        except Exception:
            self._log.exception("skillgate: %s callback failed", method)

    # ---- keepalive ---------------------------------------------------------

    async def _keepalive_loop(self) -> None:
        interval, timeout = self._opts.keepalive_interval, self._opts.keepalive_timeout
        if interval <= 0:
            return
        while self._error is None:
            await asyncio.sleep(max(interval - (self._loop.time() - self._last_rx), 0.001))
            if self._loop.time() - self._last_rx < interval:
                continue  # traffic was seen: the server is alive
            try:
                await asyncio.wait_for(self.request(KEEPALIVE, {}), timeout)
            except asyncio.TimeoutError:
                info = ErrorInfo(CODE_KEEPALIVE, "Keepalive timeout.", "KEEPALIVE", f"no answer within {timeout:g}s")
                self._abort(KeepaliveTimeoutError("the server did not answer a _Keepalive", info), info)
                return
            except RpcError as e:
                # An answer, even an error, shows the server is alive.
                self._log.debug("skillgate: _Keepalive answered with %s", e.info)
            except ConnectionClosedError:
                return  # the reader records why the connection ended

    # ---- ending ------------------------------------------------------------

    def _abort(self, err: ConnectionClosedError, reason: ErrorInfo) -> None:
        """End the connection after telling the server why (spec: abort)."""
        if self._error is not None:
            return
        note = _wire.encode_message({"jsonrpc": "2.0", "method": "_CloseReason", "params": {"error": reason.to_wire()}})
        try:
            # write() never blocks: the frame is buffered and the close
            # below gives it a bounded grace period to leave.
            self._writer.write(_wire.encode_frame(note, self._opts.send_limit))
        except (ConnectionError, OSError, RuntimeError):
            pass
        self._log.warning("skillgate: aborting the connection: %s", reason)
        self._fail(err)

    def _fail(self, err: ConnectionClosedError) -> None:
        """Record the first reason the connection ended and tear it down."""
        if self._error is not None:
            return
        self._error = err
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out.clear()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(err)
        self._pending.clear()
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        self._tasks.append(self._loop.create_task(self._close_stream()))

    async def _close_stream(self) -> None:
        self._writer.close()
        try:
            await asyncio.wait_for(self._writer.wait_closed(), _CLOSE_GRACE)
        except (asyncio.TimeoutError, ConnectionError, OSError, ssl.SSLError):
            self._writer.transport.abort()
        finally:
            if not self._closed.done():
                self._closed.set_result(None)
