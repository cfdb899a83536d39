"""Helpers for code running in a skillgate sandbox.

    from runtime import blobs, log

blobs reads the run's input blobs and writes output blobs; log writes
lines into the run's logs; progress(done, total=None, message=None)
reports how far the run has come to clients that stream it.
"""

from . import blobs, log
from ._progress import progress

__all__ = ["blobs", "log", "progress", "run_id"]

# The id of the current run; set when the job arrives.
run_id = ""
