"""Entrypoint of acme.math.add 1.0.0."""

from .ops import add


def main(args):
    return {"sum": add(args["a"], args["b"])}
