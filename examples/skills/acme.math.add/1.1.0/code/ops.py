"""Arithmetic helpers for acme.math.add."""

from numbers import Number


def check_number(name, value):
    """Refuse anything but real numbers (bool included)."""
    if isinstance(value, bool) or not isinstance(value, Number):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return value


def add(a, b):
    return check_number("a", a) + check_number("b", b)


def add_all(values):
    if not isinstance(values, list):
        raise TypeError(f"values must be a list, got {type(values).__name__}")
    total = 0
    for i, value in enumerate(values):
        total += check_number(f"values[{i}]", value)
    return total
