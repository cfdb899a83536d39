"""Log lines that end up in the run's logs (logs_preview) as the "log"
stream, apart from what the code prints to stdout and stderr."""

from . import _pipe

__all__ = ["info", "warning", "error"]

# The gateway's bound on one line's frame; longer lines are split.
FRAME_LIMIT = 16 << 10


def _emit(level, msg):
    # The result pipe rather than stderr: the line keeps its own stream,
    # and code redirecting sys.stderr cannot hide it from the run's logs.
    data = ("[%s] %s\n" % (level, msg)).encode("utf-8", "replace")
    _pipe.settle()
    try:
        while data:
            end = min(FRAME_LIMIT, len(data))
            while end < len(data) and data[end] & 0xC0 == 0x80:
                end -= 1  # never split a character between two frames
            _pipe.send(b"L", data[:end])
            data = data[end:]
    except (OSError, ValueError):
        pass


def info(msg):
    """Write an informational line to the run's logs."""
    _emit("info", msg)


def warning(msg):
    """Write a warning line to the run's logs."""
    _emit("warning", msg)


def error(msg):
    """Write an error line to the run's logs."""
    _emit("error", msg)
