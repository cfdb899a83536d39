"""runtime.progress: report how far the run has come.

Reports travel to the gateway on the result pipe, each as b"G" and a
length-prefixed JSON object, while the run lasts. At most 20 a second are
sent; a report that completes the work (progress == total) always is.
"""

import json
import math
import threading
import time

from . import _pipe

MIN_INTERVAL = 0.05
MESSAGE_LIMIT = 256

_lock = threading.Lock()
_last = [0.0]


def _number(name, value, allow_none):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError("runtime.progress: %s must be a finite number%s, not %r"
                        % (name, " or None" if allow_none else "", value))
    return value


def progress(done, total=None, message=None):
    """Report progress: done out of total (None: unknown), with an optional
    message of at most 256 characters."""
    done = _number("done", done, False)
    total = _number("total", total, True)
    if message is not None:
        if not isinstance(message, str):
            raise TypeError("runtime.progress: message must be a str or None, not %r" % (message,))
        message = message[:MESSAGE_LIMIT]
    now = time.monotonic()
    with _lock:
        final = total is not None and done >= total
        if not final and now - _last[0] < MIN_INTERVAL:
            return
        _last[0] = now
        data = json.dumps({"progress": done, "total": total, "message": message},
                          ensure_ascii=True).encode("ascii")
        _pipe.send(b"G", data)
