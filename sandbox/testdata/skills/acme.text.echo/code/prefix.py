import os

_here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(_here, "..", "resources", "prefix.txt")) as f:
    PREFIX = f.read().strip()
