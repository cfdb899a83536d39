"""The result pipe, shared by the runtime's reports while the code runs.

Each report is a tag byte and a length-prefixed body: b"G" progress (JSON),
b"L" a runtime.log line (UTF-8), then the result frame without a tag. One
lock keeps reports of several threads from interleaving.
"""

import array
import fcntl
import os
import struct
import sys
import termios
import threading
import time

RESULT_FD = 4
_lock = threading.Lock()


def send(tag, body):
    view = memoryview(tag + struct.pack(">I", len(body)) + body)
    with _lock:
        while view:
            view = view[os.write(RESULT_FD, view):]


def settle(fds=(1, 2), limit=0.1):
    """Wait, at most limit seconds, until the gateway has read what was
    written to fds. stdout, stderr and the result pipe are read apart, in
    the order the data arrives: a report sent after settle lands in the
    logs after what the code printed before it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    deadline = time.monotonic() + limit
    unread = array.array("i", [0])
    for fd in fds:
        while True:
            try:
                fcntl.ioctl(fd, termios.FIONREAD, unread, True)
            except OSError:
                break  # closed, or not a pipe: nothing to wait for
            if unread[0] == 0 or time.monotonic() >= deadline:
                break
            time.sleep(0.0005)
