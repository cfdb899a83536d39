"""Arithmetic helpers for acme.math.add."""

from numbers import Number


def add(a, b):
    """Return a + b for two real numbers (bool is refused)."""
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, Number):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return a + b
