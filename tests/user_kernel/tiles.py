"""A helper module beside the user's kernel file (the kernel file imports it by name)."""

DEFAULT_TILES = {"BM": 64, "BN": 64, "BK": 32}
