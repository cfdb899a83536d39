"""Pure counting helpers (no I/O), easy to test."""

import re
from collections import Counter

WORD = re.compile(r"\w[\w'-]*")


def count(text):
    """Return (stats dict, Counter of lowercased words) for text."""
    words = [w.lower() for w in WORD.findall(text)]
    stats = {
        "lines": len(text.splitlines()),
        "words": len(words),
        "chars": len(text),
        "unique_words": len(set(words)),
    }
    return stats, Counter(words)


def top_words(counter, n):
    """The n most frequent words, ties broken alphabetically."""
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"word": w, "count": c} for w, c in ranked[:n]]
