"""Argument types shared by the subcommands. Each raises ArgumentTypeError with a
message that names the bad value and what is allowed (argparse adds the flag).

Rules every command follows (the parser in :mod:`occmodel.cli` enforces the first two):

* a flag that takes one value may be given once; a second ``--warps`` is an error,
  not a silent override;
* ``-D NAME=...``, ``--points NAME=...`` and ``--candidate`` may repeat (they
  accumulate), but one NAME may appear once: list its values in one flag;
* a range ``A..B`` needs A <= B; a list may not be empty or repeat a value;
* a sweep (the product of every list) holds at most :data:`MAX_SWEEP` configs;
* a config a sweep skips as invalid is always reported (a note or a row, and one
  line on stderr) and the command exits 2 (:func:`drop_configs`).
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Callable



def __getattr__(name):            # MAX_SWEEP and check_sweep_size live in occmodel.configs (one home),
    if name in ("MAX_SWEEP", "check_sweep_size"):    # imported when first needed, not by --help
        from .. import configs
        return getattr(configs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _max_sweep() -> int:
    from ..configs import MAX_SWEEP
    return MAX_SWEEP

MAX_BYTES = 2**31 - 1        # a byte size on the command line (shared memory per block is < 1 MB)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]i?[bB]?|[bB])?\s*$")


def byte_size(text: str) -> int:
    """'61440', '60K', '60KB', '60KiB' -> bytes (K = 1024)."""
    m = _SIZE.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; use bytes (61440) or KB (60K)")
    value, unit = float(m.group(1)), (m.group(2) or "").upper()
    scale = 1024 if unit.startswith("K") else 1024 * 1024 if unit.startswith("M") else 1
    if value * scale > MAX_BYTES:
        raise argparse.ArgumentTypeError(f"{text!r} is larger than any GPU's memory per block; "
                                         f"allowed up to {MAX_BYTES:,} bytes")
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
    """'4,8' or '2..4' or '2,3,4' -> [ints]; no empty lists, reversed ranges or repeats."""
    out: list[int] = []
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise argparse.ArgumentTypeError(f"{text!r} is an empty list; give integers (e.g. 4,8 or 2..4)")
    MAX_SWEEP = _max_sweep()
    for part in parts:
        m = re.fullmatch(r"(-?\d+)\s*\.\.\s*(-?\d+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo > hi:
                raise argparse.ArgumentTypeError(f"range {part!r} is reversed (empty); write {hi}..{lo}")
            if hi - lo + 1 + len(out) > MAX_SWEEP:
                raise argparse.ArgumentTypeError(f"range {part!r} has {hi - lo + 1:,} values; "
                                                 f"the limit is {MAX_SWEEP:,} per sweep")
            values = list(range(lo, hi + 1))
        else:
            try:
                values = [int(part, 0)]
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers (e.g. 4,8 or 2..4); "
                                                 f"bad entry {part!r}") from None
        for v in values:
            if v in out:
                raise argparse.ArgumentTypeError(f"{v} is listed twice in {text!r}")
        out += values
    return out


def drop_configs(args, dropped: list[tuple[dict, str]]) -> None:
    """Record configs a sweep skipped as invalid. The command still prints what it could;
    ``cli.main`` then says how many were dropped and why (one line) and exits 2."""
    if dropped:
        args.dropped = list(getattr(args, "dropped", [])) + list(dropped)
        args.exit_status = 2


def define(text: str) -> tuple[str, list[str]]:
    """-D NAME=VALUE[,VALUE...] -> (NAME, [VALUE, ...]) (values checked later by the card)."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise argparse.ArgumentTypeError(f"{text!r} must look like NAME=VALUE or NAME=V1,V2")
    items = [v.strip() for v in values.split(",")]
    MAX_SWEEP = _max_sweep()
    if any(not v for v in items):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty value; write NAME=V1,V2")
    if len(items) > MAX_SWEEP:
        raise argparse.ArgumentTypeError(f"{name.strip()} lists {len(items):,} values; the limit is {MAX_SWEEP:,}")
    dup = next((v for i, v in enumerate(items) if v in items[:i]), None)
    if dup is not None:
        raise argparse.ArgumentTypeError(f"{dup!r} is listed twice in {text!r}")
    return name.strip(), items


def assignments(text: str) -> dict[str, Any]:
    """'BLOCK_T=16,num_warps=4' -> {'BLOCK_T': '16', 'num_warps': '4'} (a NAME given twice is an error)."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"{part!r} in {text!r} must look like NAME=VALUE")
        if name.strip() in out:
            raise argparse.ArgumentTypeError(f"{name.strip()} is given twice in {text!r}")
        out[name.strip()] = value.strip()
    if not out:
        raise argparse.ArgumentTypeError(f"{text!r} is empty; write NAME=VALUE[,NAME=VALUE]")
    return out


class StoreOnce(argparse.Action):
    """Store a flag's value; the same flag given twice is an error (no silent last-wins)."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = namespace.__dict__.setdefault("_seen_flags", set())
        if self.dest in seen:
            parser.error(f"{option_string or self.dest} given twice; give it once"
                         + (" (lists go in one flag: 4,8 or 2..4)" if self.type is int_list else ""))
        seen.add(self.dest)
        setattr(namespace, self.dest, values)


class AppendNamed(argparse.Action):
    """Append (NAME, values) pairs (-D, --points); the same NAME twice is an error."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = list(getattr(namespace, self.dest, None) or [])
        name = values[0]
        inner = next((v for v in values[1] if isinstance(v, str) and "=" in v), None)
        if inner is not None:
            other = inner.split("=", 1)[0]
            parser.error(f"{option_string} {name}=...,{inner}: one NAME per flag; give "
                         f"{option_string} {name}=... {option_string} {other}=...")
        if any(n == name for n, _ in items):
            parser.error(f"{option_string} {name} given twice; list its values once: "
                         f"{option_string} {name}=V1,V2")
        items.append(values)
        setattr(namespace, self.dest, items)
