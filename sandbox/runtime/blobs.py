"""Blobs of the current run.

read_text / read_bytes return the content of a blob the run was given in
input_blobs, or of one it wrote itself. write_text / write_json /
write_bytes store a new blob and return its id; the ids are assigned by the
gateway, in order, and their number is limited.
"""

import json
import os
import threading

__all__ = [
    "BlobError",
    "BlobNotFoundError",
    "BlobLimitError",
    "read_text",
    "read_bytes",
    "write_text",
    "write_json",
    "write_bytes",
]


class BlobError(Exception):
    """Base class of the errors raised by this module."""


class BlobNotFoundError(BlobError, LookupError):
    """The blob is neither an input of this run nor written by it."""


class BlobLimitError(BlobError):
    """Writing the blob would exceed a limit of the run."""


_lock = threading.Lock()
_inputs = {}  # blob id -> path of the read-only input file
_written = {}  # blob id -> (index, kind)
_output_ids = []
_dir_fd = -1
_max_bytes = 0


def _configure(inputs, output_ids, dir_fd, max_bytes):
    """Called once by the sandbox before the run's code is loaded."""
    global _dir_fd, _max_bytes
    _inputs.clear()
    _inputs.update(inputs)
    _output_ids[:] = output_ids
    _dir_fd = dir_fd
    _max_bytes = max_bytes


def _manifest():
    """The written blobs, in write order, for the gateway."""
    with _lock:
        return [{"index": i, "kind": k} for i, k in sorted(_written.values())]


def read_bytes(blob_id):
    """Return the content of an input blob or of a blob this run wrote."""
    if not isinstance(blob_id, str):
        raise TypeError("blob id must be a str, not %s" % type(blob_id).__name__)
    path = _inputs.get(blob_id)
    if path is not None:
        with open(path, "rb") as f:
            return f.read()
    with _lock:
        entry = _written.get(blob_id)
    if entry is None:
        raise BlobNotFoundError(
            "blob %r is not available to this run: only its input_blobs "
            "and the blobs it wrote can be read" % (blob_id,)
        )
    fd = os.open(str(entry[0]), os.O_RDONLY | os.O_NOFOLLOW, dir_fd=_dir_fd)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def read_text(blob_id):
    """Return the content of a blob decoded as UTF-8."""
    return read_bytes(blob_id).decode("utf-8")


def write_bytes(data, kind="application/octet-stream"):
    """Store data as a new blob of the given media type; return its id."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("write_bytes expects bytes, not %s" % type(data).__name__)
    return _write(bytes(data), kind)


def write_text(content, kind="text/plain"):
    """Store a string as a new blob (UTF-8); return its id."""
    if not isinstance(content, str):
        raise TypeError("write_text expects a str, not %s" % type(content).__name__)
    return _write(content.encode("utf-8"), kind)


def write_json(obj, kind="application/json"):
    """Store obj serialized as JSON as a new blob; return its id."""
    data = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    return _write(data.encode("utf-8"), kind)


def _check_kind(kind):
    if not isinstance(kind, str):
        raise TypeError("kind must be a str, not %s" % type(kind).__name__)
    if not (0 < len(kind) <= 255 and kind.isascii() and kind.isprintable()
            and "/" in kind and not kind.startswith("/")):
        raise ValueError("kind must be a media type like 'text/plain', got %r" % (kind,))


def _write(data, kind):
    _check_kind(kind)
    if len(data) > _max_bytes:
        raise BlobLimitError(
            "blob of %d bytes exceeds the limit of %d bytes" % (len(data), _max_bytes))
    with _lock:
        index = len(_written)
        if index >= len(_output_ids):
            raise BlobLimitError(
                "this run may write at most %d blobs" % len(_output_ids))
        fd = os.open(str(index), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o644, dir_fd=_dir_fd)
        os.fchmod(fd, 0o644)  # the gateway may not own it (subordinate ids)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        blob_id = _output_ids[index]
        _written[blob_id] = (index, kind)
    return blob_id


def _adopt(path, kind):
    """Make the file at path (in /workspace, the blob directory's file
    system) the run's next blob, moving it rather than copying; return its
    id."""
    _check_kind(kind)
    size = os.lstat(path).st_size
    if size > _max_bytes:
        raise BlobLimitError(
            "%s is %d bytes; a blob may hold at most %d" % (path, size, _max_bytes))
    with _lock:
        index = len(_written)
        if index >= len(_output_ids):
            raise BlobLimitError(
                "%s would be blob %d; this run may write at most %d blobs" % (path, index + 1, len(_output_ids)))
        os.rename(path, str(index), dst_dir_fd=_dir_fd)
        os.chmod(str(index), 0o644, dir_fd=_dir_fd, follow_symlinks=False)
        blob_id = _output_ids[index]
        _written[blob_id] = (index, kind)
    return blob_id
