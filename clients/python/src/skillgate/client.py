"""The client: dialing (TCP or TLS), Initialize, calls and reconnection."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Mapping, cast

from . import _wire
from ._version import __version__
from .connection import Connection, ConnectionOptions, ErrorCallback, NotificationCallback
from .errors import ConnectionClosedError, RpcError
from .methods import EventCallback, SkillsMethods
from .types import InitializeResult, RunEvent

__all__ = ["Client", "Reconnect", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = "1.0"

# Close reasons that say this client misbehaved: reconnecting would only
# repeat the mistake.
_NO_RECONNECT = frozenset({"JSONRPC_PARSE_ERROR", "JSONRPC_INVALID_REQUEST"})


@dataclass(frozen=True)
class Reconnect:
    """Opt-in reconnection: when a call finds the connection gone, dial again.

    The server's retry hint wins when it sent one (``SERVER_SHUTDOWN`` says
    1 s, 3 attempts): the first attempt waits ``suggested_delay_ms`` and the
    attempts are capped by its ``max_attempts``. Without a hint (the
    connection dropped, a keepalive timed out) ``delay`` is used. The delay
    doubles after each failed attempt, up to ``max_delay``. Calls that were
    in flight when the connection ended are not repeated: they raise
    :class:`ConnectionClosedError`, since the server may have run them.
    """

    max_attempts: int = 5
    delay: float = 0.5
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.delay < 0 or self.max_delay < self.delay:
            raise ValueError("Reconnect needs max_attempts >= 1 and 0 <= delay <= max_delay")

    def allows(self, err: ConnectionClosedError) -> bool:
        """Whether the way the connection ended is worth a reconnect."""
        if err.retry is not None:
            return err.retry.max_attempts > 0
        return err.string_code is None or err.string_code not in _NO_RECONNECT


class Client(SkillsMethods):
    """A skillgate client over the framed transport.

    ``async with Client(...) as c`` connects and initializes, and closes on
    exit. Calls may run concurrently from many tasks. Errors:
    :class:`RpcError` for an error response (the connection lives on),
    :class:`ConnectionClosedError` when the connection ends (its
    ``string_code``, ``message`` and ``retry`` come from the server's
    ``_CloseReason``), :class:`FrameTooLargeError` for a request larger than
    the server accepts.

    TLS is used when ``tls`` is true or an ``ssl.SSLContext``, or when any
    of ``ca_file``, ``cert_file`` is given; ``cert_file``/``key_file`` are
    the client certificate for mutual TLS.

    ``max_message_size`` bounds incoming frames; by default it follows the
    ``max_message_size`` the server announces (1 MiB until then). Outgoing
    frames are always checked against the server's announced limit.

    ``on_error(info, params)`` receives ``_Error`` notifications,
    ``on_info(method, params)`` ``_Info`` ones and ``on_notification(method,
    params)`` any other; without a callback they are logged.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 7400,
        *,
        token: str | None = None,
        tls: bool | ssl.SSLContext = False,
        ca_file: str | None = None,
        cert_file: str | None = None,
        key_file: str | None = None,
        server_hostname: str | None = None,
        client_name: str = "skillgate-python",
        client_version: str = __version__,
        keepalive_interval: float = 30.0,
        keepalive_timeout: float = 20.0,
        connect_timeout: float = 10.0,
        max_message_size: int | None = None,
        reconnect: Reconnect | None = None,
        on_error: ErrorCallback | None = None,
        on_info: NotificationCallback | None = None,
        on_notification: NotificationCallback | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if keepalive_interval > 0 and keepalive_timeout <= 0:
            raise ValueError("keepalive_timeout must be positive when keepalives are on")
        if max_message_size is not None and max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        self.host, self.port = host, port
        self._token = token
        self._client_info = {"name": client_name, "version": client_version}
        self._ssl = _ssl_context(tls, ca_file, cert_file, key_file)
        self._server_hostname = server_hostname
        self._connect_timeout = connect_timeout
        self._max_message_size = max_message_size
        self._reconnect = reconnect
        self._conn_opts = ConnectionOptions(
            keepalive_interval=keepalive_interval,
            keepalive_timeout=keepalive_timeout,
            on_error=on_error,
            on_info=on_info,
            on_notification=self._notified,
            logger=logger,
        )
        self._on_notification = on_notification
        # Listeners of run_event: a streamed call's by its request id, a
        # watch_run's by run id. Called on the read loop.
        self._by_request: dict[str, EventCallback] = {}
        self._by_run: dict[str, EventCallback] = {}
        self._log = logger or logging.getLogger("skillgate")
        self._conn: Connection | None = None
        self._session: InitializeResult | None = None
        self._reconnect_lock = asyncio.Lock()

    # ---- lifecycle ---------------------------------------------------------

    async def connect(self) -> InitializeResult:
        """Dial and send Initialize; returns the session parameters.

        When Initialize fails the connection is closed and the error raised.
        """
        await self.open()
        try:
            return await self.initialize()
        except BaseException:
            await self.close()
            raise

    async def open(self) -> None:
        """Dial without initializing, for callers that pipeline Initialize.

        Requests sent in the same loop iteration as :meth:`initialize` leave
        in the same write, behind it.
        """
        if self._conn is not None and not self._conn.closed:
            raise RuntimeError("the client is already connected")
        self._session = None
        self._conn = await self._dial()

    async def initialize(self) -> InitializeResult:
        """Send Initialize (with the token, if any) on the open connection."""
        params: dict[str, Any] = {"protocol_version": PROTOCOL_VERSION, "client": dict(self._client_info)}
        if self._token is not None:
            params["token"] = self._token
        conn = self._require_conn()
        result = cast(InitializeResult, await conn.request("Initialize", params))
        self._adopt_session(conn, result)
        return result

    async def close(self) -> None:
        """Close the connection; calls in flight fail. Idempotent."""
        if self._conn is not None:
            await self._conn.close()

    async def wait_closed(self) -> ConnectionClosedError:
        """Wait until the connection ends; returns why (does not raise it)."""
        return await self._require_conn().wait_closed()

    async def __aenter__(self) -> Client:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def session(self) -> InitializeResult | None:
        """The result of the last successful Initialize."""
        return self._session

    @property
    def closed(self) -> bool:
        """Whether there is no open connection."""
        return self._conn is None or self._conn.closed

    @property
    def close_error(self) -> ConnectionClosedError | None:
        """Why the current connection ended, if it has."""
        return self._conn.error if self._conn is not None else None

    # ---- calls -------------------------------------------------------------

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Call ``method`` with ``params`` (a JSON object) and return its result.

        ``timeout`` (seconds) gives up waiting with ``asyncio.TimeoutError``;
        the server may still run the call. With :class:`Reconnect`, a call
        that finds the connection gone reconnects first.
        """
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise TypeError(f"params must be a mapping (a JSON object), not {type(params).__name__}")
        conn = await self._usable_conn()
        request = conn.request(method, dict(params))
        result = await (asyncio.wait_for(request, timeout) if timeout is not None else request)
        return dict(result)

    async def call_streaming(
        self,
        method: str,
        params: Mapping[str, Any],
        on_event: EventCallback,
        *,
        run_id: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Call a method that streams a run's ``run_event`` notifications
        (``execute_skill``/``run_code`` with ``stream``, ``watch_run`` with
        ``run_id``). ``on_event`` gets each event's params, in order and
        before the result; it runs on the connection's reader, so it must
        not block. Events of a run streamed twice on one connection (a
        stream and a watch of it) may go to either listener.
        """
        conn = await self._usable_conn()
        keys: list[str] = []

        def listen(request_id: str) -> None:
            keys.append(request_id)
            self._by_request[request_id] = on_event

        if run_id is not None:
            self._by_run[run_id] = on_event
        try:
            request = conn.request(method, dict(params), on_id=None if run_id is not None else listen)
            result = await (asyncio.wait_for(request, timeout) if timeout is not None else request)
        finally:
            for k in keys:
                self._by_request.pop(k, None)
            if run_id is not None and self._by_run.get(run_id) is on_event:
                del self._by_run[run_id]
        return dict(result)

    def _reconnects(self) -> bool:
        return self._reconnect is not None

    def _notified(self, method: str, params: Mapping[str, Any]) -> None:
        if method == "run_event":
            cb = self._by_run.get(params.get("run_id", "")) or self._by_request.get(params.get("request_id", ""))
            if cb is not None:
                cb(cast(RunEvent, dict(params)))
                return
        if self._on_notification is not None:
            self._on_notification(method, params)
        else:
            self._log.debug("skillgate: %s %s", method, dict(params))

    async def ping(self, *, timeout: float | None = None) -> float:
        """Send a ``_Keepalive`` and return the round trip in seconds."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        await self.call("_Keepalive", {}, timeout=timeout)
        return loop.time() - start

    # ---- internals ---------------------------------------------------------

    def _require_conn(self) -> Connection:
        if self._conn is None:
            raise ConnectionClosedError("the client is not connected; call connect() first")
        return self._conn

    async def _dial(self) -> Connection:
        hostname = (self._server_hostname or self.host) if self._ssl else None
        opened = asyncio.open_connection(self.host, self.port, ssl=self._ssl, server_hostname=hostname)
        try:
            reader, writer = await asyncio.wait_for(opened, self._connect_timeout)
        except (OSError, ssl.SSLError, asyncio.TimeoutError) as e:
            raise ConnectionClosedError(f"cannot connect to {self.host}:{self.port} ({e.__class__.__name__}: {e})") from e
        opts = dataclasses.replace(self._conn_opts)
        limit = self._max_message_size or _wire.DEFAULT_MAX_MESSAGE_SIZE
        opts.send_limit, opts.receive_limit = _wire.DEFAULT_MAX_MESSAGE_SIZE, limit
        return Connection(reader, writer, opts)

    def _adopt_session(self, conn: Connection, result: InitializeResult) -> None:
        self._session = result
        announced = result.get("max_message_size")
        if isinstance(announced, int) and not isinstance(announced, bool) and announced > 0:
            conn.set_limits(send=announced, receive=self._max_message_size or announced)

    async def _usable_conn(self) -> Connection:
        conn = self._require_conn()
        if not conn.closed or self._reconnect is None:
            return conn
        async with self._reconnect_lock:
            if self._conn is not None and self._conn.closed:
                await self._reconnect_after(self._reconnect, self._conn.error)
        return self._require_conn()

    async def _reconnect_after(self, policy: Reconnect, err: ConnectionClosedError | None) -> None:
        assert err is not None
        if not policy.allows(err):
            raise err
        attempts, delay = policy.max_attempts, policy.delay
        if err.retry is not None:
            attempts, delay = min(attempts, err.retry.max_attempts), err.retry.delay
        last: Exception = err
        for attempt in range(1, attempts + 1):
            await asyncio.sleep(min(delay, policy.max_delay))
            try:
                await self.connect()
                self._log.info("skillgate: reconnected after %s (attempt %d)", err.string_code or err, attempt)
                return
            except (ConnectionClosedError, RpcError) as e:
                if isinstance(e, RpcError) and e.retry is None:
                    raise  # Initialize refused for good (e.g. AUTH_REQUIRED)
                last = e
                hinted = e.retry.delay if e.retry is not None else 0.0
                delay = max(delay * 2, hinted)
                self._log.warning("skillgate: reconnect attempt %d/%d failed: %s", attempt, attempts, e)
        raise ConnectionClosedError(f"gave up reconnecting after {attempts} attempts: {last}") from last


def _ssl_context(
    tls: bool | ssl.SSLContext, ca_file: str | None, cert_file: str | None, key_file: str | None
) -> ssl.SSLContext | None:
    if key_file is not None and cert_file is None:
        raise ValueError("key_file needs cert_file")
    if isinstance(tls, ssl.SSLContext):
        if ca_file is not None or cert_file is not None:
            raise ValueError("give either an SSLContext or ca_file/cert_file, not both")
        return tls
    if not tls and ca_file is None and cert_file is None:
        return None
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file is not None:
        ctx.load_cert_chain(cert_file, key_file)
    return ctx
