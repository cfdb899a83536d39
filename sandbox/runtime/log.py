"""Log lines that end up in the run's logs (logs_preview)."""

import sys

__all__ = ["info", "warning", "error"]


def _emit(level, msg):
    # The original stderr, so that code redirecting sys.stderr cannot hide
    # its log lines from the run's logs.
    stream = sys.__stderr__ or sys.stderr
    try:
        stream.write("[%s] %s\n" % (level, msg))
        stream.flush()
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
