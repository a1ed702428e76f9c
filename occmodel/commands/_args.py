"""Argument types shared by the subcommands. Each raises ArgumentTypeError with a
message that names the bad value and what is allowed (argparse adds the flag)."""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]i?[bB]?|[bB])?\s*$")


def byte_size(text: str) -> int:
    """'61440', '60K', '60KB', '60KiB' -> bytes (K = 1024)."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; use bytes (61440) or KB (60K)")
    value, unit = float(m.group(1)), (m.group(2) or "").upper()
    scale = 1024 if unit.startswith("K") else 1024 * 1024 if unit.startswith("M") else 1
    if value * scale != int(value * scale):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes")
    return int(value * scale)


def int_in(lo: int, hi: int | None, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer ({what})") from None
        if value < lo or (hi is not None and value > hi):
            allowed = f"{lo}..{hi}" if hi is not None else f">= {lo}"
            raise argparse.ArgumentTypeError(f"{value} is out of range for {what}; allowed {allowed}")
        return value
    return parse


def int_list(text: str) -> list[int]:
    """'4,8' or '2..4' or '2,3,4' -> [ints]."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", part)
        try:
            out += list(range(int(m.group(1)), int(m.group(2)) + 1)) if m else [int(part, 0)]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers (e.g. 4,8 or 2..4)") from None
    return out


def define(text: str) -> tuple[str, list[str]]:
    """-D NAME=VALUE[,VALUE...] -> (NAME, [VALUE, ...]) (values checked later by the card)."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"{text!r} must look like NAME=VALUE or NAME=V1,V2")
    return name.strip(), [v.strip() for v in values.split(",")]


def assignments(text: str) -> dict[str, Any]:
    """'BLOCK_T=16,num_warps=4' -> {'BLOCK_T': '16', 'num_warps': '4'}."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name or not value:
            raise argparse.ArgumentTypeError(f"{part!r} in {text!r} must look like NAME=VALUE")
        out[name.strip()] = value.strip()
    return out
