"""``occmodel cache info`` (where the caches are, their sizes and entry counts) and
``occmodel cache clear [--older-than DAYS]`` (free them).

The caches live under ``$OCCMODEL_CACHE_DIR`` (default ``~/.cache/occmodel``):
``compile/`` holds occmodel's results (one entry per config, with its IR), ``triton/``
holds Triton's own compile cache for occmodel's compiles (bounded: the oldest entries
go once it passes ``$OCCMODEL_TRITON_CACHE_MB``, default 256), ``model/`` the model memo
(the numeric form of each card's expressions, :func:`occmodel.model.memo`). ``calibration/``
holds measurements, not a cache: neither shown nor cleared here. ``$TRITON_CACHE_DIR`` and
``~/.triton`` are Triton's for your own runs; occmodel neither uses nor clears them.
"""

from __future__ import annotations

import argparse
import statistics
import time

from .. import _cache
from ..report import Report, Section


def fmt_bytes(n: int) -> str:
    """'512 B', '45.7 KB', '256.0 MB', '1.2 GB' (K = 1024)."""
    for unit, scale in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"

_COLUMNS = [("cache", "cache"), ("path", "path"), ("entries", "entries"), ("bytes", "size (B)"),
            ("size", "size"), ("note", "note")]


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "cache", parents=[common], help="show or free occmodel's caches (compile results, Triton's cache, model memo)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="`occmodel cache info` lists the caches occmodel writes (its compile results, Triton's "
                    "own cache for occmodel's compiles, and the model memo: each card's expressions in numeric "
                    "form) with their paths, entry counts and sizes; `occmodel cache clear` deletes their "
                    "entries (only those older than --older-than DAYS when given). Calibrations are kept. Set "
                    "OCCMODEL_CACHE_DIR to move them all, OCCMODEL_TRITON_CACHE_MB to bound Triton's (default 256).",
        epilog="examples:\n  occmodel cache info\n  occmodel cache clear --older-than 30\n  occmodel cache clear")
    p.add_argument("action", choices=("info", "clear"), help="info: show the caches; clear: free them")
    p.add_argument("--older-than", type=_days, default=None, metavar="DAYS",
                   help="clear: only entries last written more than DAYS days ago (fractions allowed)")
    p.set_defaults(run=run)


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days (e.g. 30 or 0.5)") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is out of range for --older-than; allowed: days >= 0")
    return value


def _info() -> dict:
    comp = _cache.compile_entries()
    trit = _cache.triton_entries()
    memo = _cache.model_entries()
    by_arch: dict[str, list[float]] = {}
    ok = failed = 0
    for _key, paths, _size, _t in comp:
        data = _cache.read_json(paths[0]) if paths[0].suffix == ".json" else None
        if not isinstance(data, dict):
            continue
        ok += data.get("status") == "ok"
        failed += data.get("status") not in ("ok", None)
        secs = data.get("compile_seconds")
        if isinstance(secs, (int, float)) and not isinstance(secs, bool) and secs > 0 and isinstance(
                data.get("arch"), str):
            by_arch.setdefault(data["arch"], []).append(float(secs))
    return {
        "root": str(_cache.root()),
        "compile": {"path": str(_cache.compile_dir()), "entries": len(comp),
                    "bytes": sum(size for _k, _p, size, _t in comp), "ok": ok, "failed": failed,
                    "compile_seconds_median": {a: round(statistics.median(t), 3) for a, t in sorted(by_arch.items())}},
        "triton": {"path": str(_cache.triton_root()), "entries": len(trit),
                   "bytes": sum(size for _p, size, _t in trit), "limit_bytes": _cache.triton_limit()},
        "model": {"path": str(_cache.model_dir()), "entries": len(memo), "bytes": sum(size for _p, size, _t in memo)},
    }


def run(args) -> Report:
    if args.older_than is not None and args.action != "clear":
        from ..errors import OccmodelError
        raise OccmodelError("--older-than applies to `occmodel cache clear` only")
    if args.action == "clear":
        cleared = _cache.clear(None if args.older_than is None else args.older_than * 86400.0, time.time())
        info = _info()
        which = "" if args.older_than is None else f" (entries older than {args.older_than:g} days)"
        rows = [{"cache": name, "path": info[name]["path"], "entries": cleared[name]["entries"],
                 "bytes": cleared[name]["bytes"], "size": fmt_bytes(cleared[name]["bytes"]),
                 "note": f"{info[name]['entries']:,} entries left"} for name in _cache.CACHES]
        return Report("cache", [Section(f"Cleared{which}", _COLUMNS, rows)],
                      [f"cache root {info['root']} (OCCMODEL_CACHE_DIR)"], extra={**info, "cleared": cleared})
    info = _info()
    c, t, m = info["compile"], info["triton"], info["model"]
    med = ", ".join(f"{a} {s:g} s" for a, s in c["compile_seconds_median"].items()) or "none measured yet"
    rows = [{"cache": "compile", "path": c["path"], "entries": c["entries"], "bytes": c["bytes"],
             "size": fmt_bytes(c["bytes"]),
             "note": f"occmodel's results: {c['ok']:,} ok, {c['failed']:,} compiler failures; median compile {med}"},
            {"cache": "triton", "path": t["path"], "entries": t["entries"], "bytes": t["bytes"],
             "size": fmt_bytes(t["bytes"]),
             "note": f"Triton's cache for occmodel's compiles; bounded to {fmt_bytes(t['limit_bytes'])} "
                     f"(OCCMODEL_TRITON_CACHE_MB), oldest entries first"},
            {"cache": "model", "path": m["path"], "entries": m["entries"], "bytes": m["bytes"],
             "size": fmt_bytes(m["bytes"]),
             "note": "the model memo: each card's expressions in numeric form (rebuilt on a miss)"}]
    return Report("cache", [Section("Caches", _COLUMNS, rows,
                                    ["`occmodel cache clear [--older-than DAYS]` frees all three; clearing "
                                     "costs only recompiles (and a rebuilt memo)"])],
                  [f"cache root {info['root']} (OCCMODEL_CACHE_DIR); $TRITON_CACHE_DIR and ~/.triton are not "
                   "occmodel's and are left alone"], extra=info)
