"""Rendering: every command builds a :class:`Report` of plain data; this module
turns it into a terminal table, markdown, JSON or CSV. Pure (no torch, no GPU).

JSON is the stable machine-readable form::

    {"command": "predict", "schema_version": 2, "assumptions": [...],
     "sections": [{"title": ..., "columns": [...], "rows": [{...}, ...], "notes": [...]}],
     ...the command's own top-level keys (docs/json_schema.md)...}

Row values are JSON scalars keyed by the column keys; the other formats show
the same rows with human headers. People read one occupancy format everywhere
(a percent, :func:`fmt_occupancy`); JSON and CSV keep the fraction 0..1.
tabulate is imported only when a table is drawn (``--help`` never pays for it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .errors import OccmodelError

FORMATS = ("table", "markdown", "json", "csv")
SCHEMA_VERSION = 2


@dataclass
class Section:
    title: str
    columns: list[tuple[str, str]]          # (key, header)
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Report:
    command: str
    sections: list[Section]
    assumptions: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)   # JSON-only payload


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n:,} B ({n / 1024:.1f} KB)" if n >= 1024 else f"{n} B"


def fmt_occupancy(fraction: float | None) -> str | None:
    """The one way a person sees occupancy: resident warps / the SM's maximum, as a percent."""
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return None
    return f"{100 * fraction:.1f}%"


def _is_occupancy(key: str) -> bool:
    return key == "occupancy" or key.endswith("_occupancy")


def _cell(value: Any, key: str = "") -> str:
    if _is_occupancy(key) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt_occupancy(value) or "-"
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if hasattr(value, "item"):          # numpy scalars
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)                   # anything else a config may hold (a tl.dtype constexpr: "fp32")


def render(report: Report, fmt: str = "table") -> str:
    if fmt == "json":
        doc = {"command": report.command, "schema_version": SCHEMA_VERSION,
               "assumptions": report.assumptions,
               "sections": [{"title": s.title, "columns": [k for k, _ in s.columns],
                             "rows": [{k: _json_value(r.get(k)) for k, _ in s.columns} for r in s.rows],
                             "notes": s.notes} for s in report.sections]}
        doc.update(_json_value(report.extra))
        return json.dumps(doc, indent=2)
    if fmt == "csv":
        import csv
        import io
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        multi = len(report.sections) > 1
        for s in report.sections:
            writer.writerow((["section"] if multi else []) + [k for k, _ in s.columns])
            for r in s.rows:
                writer.writerow(([s.title] if multi else []) + ["" if r.get(k) is None else r.get(k)
                                                                for k, _ in s.columns])
        return buf.getvalue().rstrip("\n")
    from tabulate import tabulate
    tablefmt = "github" if fmt == "markdown" else "simple"
    parts = []
    for s in report.sections:
        body = tabulate([[_cell(r.get(k), k) for k, _ in s.columns] for r in s.rows],
                        headers=[h for _, h in s.columns], tablefmt=tablefmt, disable_numparse=True)
        if fmt == "markdown":
            parts.append(f"### {s.title}\n\n{body}")
            parts += ["\n" + "\n".join(f"- {n}" for n in s.notes)] if s.notes else []
        else:
            parts.append(f"{s.title}\n{body}")
            parts += ["\n".join(f"  {n}" for n in s.notes)] if s.notes else []
    if report.assumptions:
        head = "**Assumptions**\n\n" if fmt == "markdown" else "Assumptions:\n"
        bullet = "- " if fmt == "markdown" else "  - "
        parts.append(head + "\n".join(bullet + a for a in report.assumptions))
    return "\n\n".join(parts)


def write_output(path, data: str | bytes, what: str = "--out") -> None:
    """Write an output file atomically (a failed write leaves no half file); OccmodelError
    naming the file and the reason (a folder, read-only, no space, name too long)."""
    from pathlib import Path
    from ._cache import atomic_write
    path = Path(path)
    try:
        if path.is_dir():
            raise OccmodelError(f"cannot write {what} {str(path)!r}: it is a folder")
        atomic_write(path, data.encode() if isinstance(data, str) else data)
    except OSError as exc:
        raise OccmodelError(f"cannot write {what} {str(path)!r}: {exc.strerror or type(exc).__name__}") from None


def write_after_run(args, path, text: str, what: str = "--out") -> bool:
    """Write a report file after work that must not be lost: on failure the error is kept in
    ``args.late_errors`` (``cli.main`` prints the report first, then the error, and exits 2)."""
    try:
        write_output(path, text, what)
        return True
    except OccmodelError as exc:
        args.late_errors = list(getattr(args, "late_errors", [])) + [str(exc)]
        return False
