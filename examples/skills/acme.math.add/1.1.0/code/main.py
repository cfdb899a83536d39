"""Entrypoint of acme.math.add 1.1.0."""

from .ops import add, add_all


def main(args):
    if "values" in args:
        return {"sum": add_all(args["values"]), "count": len(args["values"])}
    return {"sum": add(args["a"], args["b"]), "count": 2}
