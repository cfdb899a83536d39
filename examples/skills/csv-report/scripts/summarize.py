"""Summarize a CSV file: python3 scripts/summarize.py IN.csv OUT.json"""
import csv
import json
import sys


def column_type(values):
    kinds = {"int", "float"}
    for v in values:
        if v == "":
            continue
        try:
            int(v)
            continue
        except ValueError:
            kinds.discard("int")
        try:
            float(v)
        except ValueError:
            return "text"
    return "int" if "int" in kinds else "float"


def main(src, dst):
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    columns = rows[0].keys() if rows else []
    summary = {
        "rows": len(rows),
        "columns": {
            c: {"type": column_type([r[c] for r in rows]), "empty": sum(1 for r in rows if r[c] == "")}
            for c in columns
        },
    }
    with open(dst, "w") as f:
        json.dump(summary, f, sort_keys=True)
    print(f"{len(rows)} rows, {len(summary['columns'])} columns -> {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: summarize.py IN.csv OUT.json")
    main(sys.argv[1], sys.argv[2])
