"""Helpers for code running in a skillgate sandbox.

    from runtime import blobs, log

blobs reads the run's input blobs and writes output blobs; log writes
lines into the run's logs.
"""

from . import blobs, log

__all__ = ["blobs", "log", "run_id"]

# The id of the current run; set when the job arrives.
run_id = ""
