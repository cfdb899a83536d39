"""Typed helpers for the Skills Protocol methods and the run methods.

Each helper builds the params object (leaving out arguments that are None so
the gateway applies its defaults) and calls :meth:`SkillsMethods.call`.
"""

from __future__ import annotations

import base64
from typing import Any, Callable, Mapping, Sequence, cast

from .transfer import BlobTransfers
from .types import (
    BlobContent,
    BlobInfo,
    DescribeSkillResult,
    GuideResult,
    ListRunsResult,
    ListSkillsResult,
    RunEvent,
    RunRef,
    RunResult,
    SkillFile,
)

__all__ = ["SkillsMethods"]


EventCallback = Callable[[RunEvent], None]


def _params(**kwargs: Any) -> dict[str, Any]:
    return {k: v for k, v in kwargs.items() if v is not None}


def _strings(name: str, values: Sequence[str] | None) -> list[str] | None:
    # A bare string is a Sequence[str] too; sent as is it would be a
    # confusing server-side type error, so refuse it here.
    if values is None:
        return None
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a list of strings, not a single string")
    return list(values)


class SkillsMethods(BlobTransfers):
    """The Skills Protocol methods, for classes that provide :meth:`call`."""

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Call any method; see :meth:`skillgate.Client.call`."""
        raise NotImplementedError

    async def call_streaming(
        self,
        method: str,
        params: Mapping[str, Any],
        on_event: EventCallback,
        *,
        run_id: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Call a method whose run sends ``run_event`` notifications; see
        :meth:`skillgate.Client.call_streaming`."""
        raise NotImplementedError

    async def _run(
        self,
        method: str,
        params: dict[str, Any],
        on_event: EventCallback | None,
        background: bool,
        timeout: float | None,
    ) -> Any:
        if on_event is not None and background:
            raise ValueError("on_event (a streamed run) and background (an async run) exclude each other")
        if background:
            params["async"] = True
            return await self.call(method, params, timeout=timeout)
        if on_event is not None:
            params["stream"] = True
            return await self.call_streaming(method, params, on_event, timeout=timeout)
        return await self.call(method, params, timeout=timeout)

    async def list_skills(
        self,
        *,
        namespace: str | None = None,
        detail: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        timeout: float | None = None,
    ) -> ListSkillsResult:
        """List skills (``detail``: ``"names"`` or ``"summary"``), a page at a time."""
        params = _params(namespace=namespace, detail=detail, limit=limit, cursor=cursor)
        return cast(ListSkillsResult, await self.call("list_skills", params, timeout=timeout))

    async def describe_skill(
        self,
        name: str,
        *,
        version: str | None = None,
        detail: str | None = None,
        timeout: float | None = None,
    ) -> DescribeSkillResult:
        """Describe a skill (``detail``: ``"manifest"``, ``"summary"`` or ``"full"``)."""
        params = _params(name=name, version=version, detail=detail)
        return cast(DescribeSkillResult, await self.call("describe_skill", params, timeout=timeout))

    async def read_skill_file(
        self,
        name: str,
        path: str,
        *,
        version: str | None = None,
        offset: int | None = None,
        max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> SkillFile:
        """Read a file of a skill package; large files come in pages (``next_offset``)."""
        params = _params(name=name, path=path, version=version, offset=offset, max_bytes=max_bytes)
        return cast(SkillFile, await self.call("read_skill_file", params, timeout=timeout))

    async def execute_skill(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        version: str | None = None,
        input_blobs: Sequence[str] | None = None,
        timeout_ms: int | None = None,
        on_event: EventCallback | None = None,
        background: bool = False,
        timeout: float | None = None,
    ) -> RunResult:
        """Run an action skill's entrypoint with ``args``.

        A failing run is a result with ``status == "failed"``, not an
        exception; :class:`RpcError` is for calls the gateway refuses.
        With ``on_event`` the run is streamed: ``on_event`` receives each
        ``run_event``'s params before the result comes. With ``background``
        the answer is ``{"run_id", "status": "running"}`` at once (a
        :class:`RunRef`); follow the run with :meth:`watch_run` or
        :meth:`get_run`.
        """
        params = _params(
            name=name,
            args=args,
            version=version,
            input_blobs=_strings("input_blobs", input_blobs),
            timeout_ms=timeout_ms,
        )
        return cast(RunResult, await self._run("execute_skill", params, on_event, background, timeout))

    async def run_code(
        self,
        code: str,
        *,
        args: Mapping[str, Any] | None = None,
        entrypoint: str | None = None,
        language: str = "python",
        mount_skills: Sequence[str] | None = None,
        input_blobs: Sequence[str] | None = None,
        timeout_ms: int | None = None,
        on_event: EventCallback | None = None,
        background: bool = False,
        timeout: float | None = None,
    ) -> RunResult:
        """Run Python source in the sandbox: ``entrypoint`` (default ``main``) gets ``args``.

        ``mount_skills`` names skills (``"name"`` or ``"name@version"``) the
        code may import as ``skills.<name>``. ``on_event`` and
        ``background`` are as for :meth:`execute_skill`.
        """
        params = _params(
            language=language,
            code=code,
            args=args,
            entrypoint=entrypoint,
            mount_skills=_strings("mount_skills", mount_skills),
            input_blobs=_strings("input_blobs", input_blobs),
            timeout_ms=timeout_ms,
        )
        return cast(RunResult, await self._run("run_code", params, on_event, background, timeout))

    async def get_run(self, run_id: str, *, wait_ms: int | None = None, timeout: float | None = None) -> RunResult:
        """A run: its status and progress while it runs, its run object once
        finished. ``wait_ms`` (at most 60000) waits for it to finish."""
        return cast(RunResult, await self.call("get_run", _params(run_id=run_id, wait_ms=wait_ms), timeout=timeout))

    async def watch_run(
        self, run_id: str, on_event: EventCallback, *, after_seq: int = 0, timeout: float | None = None
    ) -> RunResult:
        """Replay a run's events after ``after_seq`` to ``on_event``, follow
        it until it finishes and return its run object: how a client that
        lost its connection resumes a stream."""
        params = _params(run_id=run_id, after_seq=after_seq)
        return cast(RunResult, await self.call_streaming("watch_run", params, on_event, run_id=run_id, timeout=timeout))

    async def cancel_run(self, run_id: str, *, timeout: float | None = None) -> RunRef:
        """Stop a run (it finishes ``failed`` with ``CANCELLED``); a finished
        run answers its final status."""
        return cast(RunRef, await self.call("cancel_run", {"run_id": run_id}, timeout=timeout))

    async def list_runs(
        self,
        *,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        timeout: float | None = None,
    ) -> ListRunsResult:
        """List your runs, newest first (``status``: ``"running"`` or ``"finished"``)."""
        params = _params(status=status, limit=limit, cursor=cursor)
        return cast(ListRunsResult, await self.call("list_runs", params, timeout=timeout))

    async def create_blob(
        self,
        content: str | bytes,
        *,
        kind: str | None = None,
        timeout: float | None = None,
    ) -> BlobInfo:
        """Store a blob for later runs; returns its ``blob:<id>``.

        ``bytes`` are sent base64-encoded (kind defaulting to
        ``application/octet-stream``), ``str`` as UTF-8 text (``text/plain``).
        """
        if isinstance(content, (bytes, bytearray, memoryview)):
            encoded = base64.b64encode(content).decode("ascii")
            params = _params(content=encoded, kind=kind or "application/octet-stream", encoding="base64")
        elif isinstance(content, str):
            params = _params(content=content, kind=kind)
        else:
            raise TypeError(f"content must be str or bytes, not {type(content).__name__}")
        return cast(BlobInfo, await self.call("create_blob", params, timeout=timeout))

    async def read_blob(
        self,
        blob_id: str,
        *,
        mode: str | None = None,
        offset: int | None = None,
        max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> BlobContent:
        """Read a blob (``mode``: ``"sample_head"``, ``"sample_tail"``,
        ``"full"`` or ``"range"``, which ``offset`` implies).

        A range answer adds the blob's ``sha256`` and ``next_offset``; for
        whole blobs of any size see :meth:`get`, :meth:`read_blob_bytes`
        and :meth:`iter_blob`.
        """
        if offset is not None and mode is None:
            mode = "range"
        params = _params(blob_id=blob_id, mode=mode, offset=offset, max_bytes=max_bytes)
        return cast(BlobContent, await self.call("read_blob", params, timeout=timeout))

    async def load_skills_protocol_guide(self, *, timeout: float | None = None) -> GuideResult:
        """Return the guide that teaches an agent the Skills Protocol."""
        return cast(GuideResult, await self.call("load_skills_protocol_guide", {}, timeout=timeout))


def blob_bytes(blob: BlobContent | SkillFile) -> bytes:
    """Decode the ``content`` of a ``read_blob`` or ``read_skill_file`` result."""
    if blob["encoding"] == "base64":
        return base64.b64decode(blob["content"])
    return blob["content"].encode("utf-8")
