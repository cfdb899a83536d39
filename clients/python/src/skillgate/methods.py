"""Typed helpers for the eight Skills Protocol methods.

Each helper builds the params object (leaving out arguments that are None so
the gateway applies its defaults) and calls :meth:`SkillsMethods.call`.
"""

from __future__ import annotations

import base64
from typing import Any, Mapping, Sequence, cast

from .types import (
    BlobContent,
    BlobInfo,
    DescribeSkillResult,
    GuideResult,
    ListSkillsResult,
    RunResult,
    SkillFile,
)

__all__ = ["SkillsMethods"]


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


class SkillsMethods:
    """The Skills Protocol methods, for classes that provide :meth:`call`."""

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Call any method; see :meth:`skillgate.Client.call`."""
        raise NotImplementedError

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
        timeout: float | None = None,
    ) -> RunResult:
        """Run an action skill's entrypoint with ``args``.

        A failing run is a result with ``status == "failed"``, not an
        exception; :class:`RpcError` is for calls the gateway refuses.
        """
        params = _params(
            name=name,
            args=args,
            version=version,
            input_blobs=_strings("input_blobs", input_blobs),
            timeout_ms=timeout_ms,
        )
        return cast(RunResult, await self.call("execute_skill", params, timeout=timeout))

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
        timeout: float | None = None,
    ) -> RunResult:
        """Run Python source in the sandbox: ``entrypoint`` (default ``main``) gets ``args``.

        ``mount_skills`` names skills (``"name"`` or ``"name@version"``) the
        code may import as ``skills.<name>``.
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
        return cast(RunResult, await self.call("run_code", params, timeout=timeout))

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
        max_bytes: int | None = None,
        timeout: float | None = None,
    ) -> BlobContent:
        """Read a blob (``mode``: ``"sample_head"``, ``"sample_tail"`` or ``"full"``)."""
        params = _params(blob_id=blob_id, mode=mode, max_bytes=max_bytes)
        return cast(BlobContent, await self.call("read_blob", params, timeout=timeout))

    async def load_skills_protocol_guide(self, *, timeout: float | None = None) -> GuideResult:
        """Return the guide that teaches an agent the Skills Protocol."""
        return cast(GuideResult, await self.call("load_skills_protocol_guide", {}, timeout=timeout))


def blob_bytes(blob: BlobContent | SkillFile) -> bytes:
    """Decode the ``content`` of a ``read_blob`` or ``read_skill_file`` result."""
    if blob["encoding"] == "base64":
        return base64.b64decode(blob["content"])
    return blob["content"].encode("utf-8")
