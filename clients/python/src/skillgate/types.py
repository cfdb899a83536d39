"""Typed shapes of the results the gateway returns.

They are ``TypedDict`` views of plain dictionaries: the client returns the
decoded JSON unchanged, so fields a newer gateway adds are still there.
Fields marked optional by ``total=False`` may be absent.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = [
    "ServerInfo",
    "InitializeResult",
    "SkillEntry",
    "ListSkillsResult",
    "DescribeSkillResult",
    "SkillFile",
    "RunError",
    "RetryHint",
    "RunResult",
    "BlobInfo",
    "BlobContent",
    "UploadInfo",
    "UploadProgress",
    "GuideResult",
    "RunRef",
    "RunSummary",
    "ListRunsResult",
    "RunEvent",
]


class ServerInfo(TypedDict):
    """The server's name and version."""

    name: str
    version: str


class InitializeResult(TypedDict):
    """The session parameters Initialize returns."""

    protocol_version: str
    server: ServerInfo
    session_id: str
    identity: str
    max_message_size: int
    keepalive_interval_ms: int
    keepalive_timeout_ms: int
    methods: list[str]


class _SkillEntryBase(TypedDict):
    name: str
    version: str


class SkillEntry(_SkillEntryBase, total=False):
    """One skill of ``list_skills``; the optional fields come with ``detail="summary"``."""

    description: str
    namespace: str
    kind: str


class ListSkillsResult(TypedDict):
    """A page of skills; pass ``next_cursor`` back for the next one."""

    skills: list[SkillEntry]
    next_cursor: str | None


class DescribeSkillResult(TypedDict):
    """``describe_skill``: the skill's manifest and, by detail, more."""

    skill: dict[str, Any]


class _SkillFileBase(TypedDict):
    name: str
    version: str
    path: str
    size_bytes: int
    sha256: str
    offset: int
    encoding: str
    content: str
    truncated: bool


class SkillFile(_SkillFileBase, total=False):
    """A (part of a) file of a skill package; ``encoding`` is utf-8 or base64."""

    next_offset: int


class RunError(TypedDict):
    """Why a run failed: a Python exception class name or a gateway type."""

    type: str
    message: str


class RetryHint(TypedDict):
    """A retry hint inside a run result."""

    suggested_delay_ms: int
    max_attempts: int


class _RunResultBase(TypedDict):
    status: str
    run_id: str
    summary: str
    output_blobs: list[str]
    logs_preview: str
    duration_ms: int


class RunResult(_RunResultBase, total=False):
    """The result of ``execute_skill`` and ``run_code``.

    ``status`` is ``"completed"`` (``output`` set) or ``"failed"`` (``error``
    set, and ``retry`` when a retry can help).
    """

    output: Any
    error: RunError
    retry: RetryHint
    logs_blob: str


class BlobInfo(TypedDict):
    """A stored blob, as ``create_blob`` returns it."""

    blob_id: str
    size_bytes: int
    kind: str
    sha256: str


class _BlobContentBase(TypedDict):
    blob_id: str
    kind: str
    size_bytes: int
    encoding: str
    content: str
    truncated: bool


class BlobContent(_BlobContentBase, total=False):
    """A piece of a blob (``read_blob``); ``encoding`` is utf-8 or base64.

    Mode ``"range"`` adds the whole blob's ``sha256``, the piece's
    ``offset`` and ``next_offset``: where the next piece starts, None after
    the last one."""

    sha256: str
    offset: int
    next_offset: int | None


class UploadInfo(TypedDict):
    """``begin_upload``'s answer: the id and the most one chunk may hold."""

    upload_id: str
    max_chunk_bytes: int


class UploadProgress(TypedDict):
    """``upload_chunk``'s answer: the upload's bytes received so far."""

    received_bytes: int


class GuideResult(TypedDict):
    """The Skills Protocol guide."""

    content: str


class RunRef(TypedDict):
    """A run's id and status: an async start's answer, cancel_run's."""

    run_id: str
    status: str


class RunSummary(TypedDict):
    """One entry of list_runs."""

    run_id: str
    status: str
    what: str
    started_at: str
    duration_ms: int


class ListRunsResult(TypedDict):
    """list_runs' page; ``next_cursor`` is None on the last one."""

    runs: list[RunSummary]
    next_cursor: str | None


class _RunEventBase(TypedDict):
    run_id: str
    seq: int
    type: str


class RunEvent(_RunEventBase, total=False):
    """A run_event's params: ``type`` says which other members it has
    (started: what, queued_ms; log: stream ("stdout", "stderr" or "log"),
    text, and from_seq when merged for a client that fell behind; progress:
    progress, total, message; blob: blob_id, kind, size_bytes; gap:
    from_seq, to_seq; finished: status). An event with from_seq stands for
    the seqs from_seq..seq."""

    request_id: str
    what: str
    queued_ms: int
    stream: str
    text: str
    progress: float
    total: float | None
    message: str | None
    blob_id: str
    kind: str
    size_bytes: int
    from_seq: int
    to_seq: int
    status: str
