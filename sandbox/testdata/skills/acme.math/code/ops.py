def double(args):
    return {"double": args["x"] * 2}
