from ..prefix import PREFIX  # noqa: F401  (two-level relative import)
