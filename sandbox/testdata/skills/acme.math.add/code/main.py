from .util import add

from runtime import log


def main(args):
    log.info("adding %s and %s" % (args["a"], args["b"]))
    return {"sum": add(args["a"], args["b"])}
