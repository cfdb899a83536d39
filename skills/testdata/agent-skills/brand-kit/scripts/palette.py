"""Print the brand palette: python3 scripts/palette.py"""
import json
import pathlib

palette = json.loads((pathlib.Path(__file__).parent.parent / "assets" / "palette.json").read_text())
for name, colour in sorted(palette.items()):
    print(f"{name:8} {colour}")
