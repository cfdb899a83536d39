from . import PREFIX


def run(args):
    print("echoing", args.get("text"))
    return {"text": PREFIX + args.get("text", "")}
