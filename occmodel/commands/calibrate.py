"""``occmodel calibrate``: measure the rank model's constants on the local GPU, once per GPU."""

from __future__ import annotations

from . import SUMMARY

import sys
from pathlib import Path

from .. import calibrate as C
from ..errors import NoGPUError
from ..report import Report, Section
from ..spec import load_spec


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "calibrate", parents=[common], help=SUMMARY["calibrate"],
        description="Runs short micro-benchmarks (well under a minute): device-to-device copy bandwidth, L2 "
                    "bandwidth, loaded memory latency as a curve of load (Little's law on a streaming Triton kernel "
                    "with one tile in flight per CTA, at 4 to 256 KB in flight per SM: rank reads the curve at 16 KB "
                    "per SM, which holds still across machine starts where one threshold-picked figure "
                    "did not) and kernel launch overhead in a CUDA graph. Writes them as YAML to --out or "
                    "~/.cache/occmodel/calibration/<spec>-<gpu>.yaml, where `occmodel rank --spec <spec>` finds it. "
                    "The whole set runs --repeats times and each figure keeps its best repeat (highest bandwidth, "
                    "lowest latency: a busy or just-started GPU only slows a probe down); figures whose repeats "
                    "differ by more than 1.25x are named.")
    p.add_argument("--out", type=Path, default=None, help="write the YAML here (default: the cache path)")
    p.add_argument("--quick", action="store_true", help="smaller buffers and fewer repetitions (~5 s a repeat)")
    p.add_argument("--repeats", type=_repeats, default=3, metavar="N",
                   help="measure the set N times (1-20) and keep each figure's best (default 3)")
    p.set_defaults(run=run)


MAX_REPEATS = 20


def _repeats(text: str) -> int:
    import argparse
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"--repeats {text!r}: give a whole number from 1 to {MAX_REPEATS}")
    return n


def _require_gpu() -> None:
    try:
        import torch
    except ImportError:
        raise NoGPUError("calibrate needs torch with CUDA on a GPU machine; without one, `occmodel rank` "
                         "uses the spec's datasheet figures") from None
    if not torch.cuda.is_available():
        raise NoGPUError("calibrate needs a CUDA GPU and none is visible (torch.cuda.is_available() is False); "
                         "without one, `occmodel rank` uses the spec's datasheet figures")


def run(args) -> Report:
    spec = load_spec(args.spec)
    _require_gpu()
    from .. import gpu_calibrate           # imports torch: only once a GPU is known to be there
    runs = []
    for i in range(args.repeats):
        say = (lambda m, i=i: print(f"calibrate ({i + 1}/{args.repeats}): {m}", file=sys.stderr, flush=True))
        runs.append(gpu_calibrate.measure(spec, quick=args.quick, progress=say))
    cal = C.best_of(runs)
    path = C.save(cal, args.out or C.default_path(spec.name, cal.gpu))
    sheet = C.datasheet(spec)
    spread = C.spreads(runs)
    rows = [{"figure": k, "measured": getattr(cal, k), "spread": spread.get(k), "datasheet/default": getattr(sheet, k)}
            for k in ("sms", "bandwidth_gbs", "latency_ns", "launch_us", "l2_bandwidth_gbs")]
    rows += [{"figure": f"latency_ns at {q / 1024:g} KB in flight per SM", "measured": ns,
              "spread": spread.get(f"latency_ns at {q / 1024:g} KB"), "datasheet/default": sheet.latency_ns}
             for q, ns in cal.latency_curve]
    notes = [f"written to {path}", f"measured: the best of {args.repeats} repeat(s); spread: the slowest repeat over "
                                   f"the fastest"]
    warn = C.spread_note(runs)
    if warn:
        notes.append(warn)
    return Report("calibrate", [Section(f"Calibration of {cal.gpu} for {spec.name}",
                                        [("figure", "figure"), ("measured", "measured"), ("spread", "spread"),
                                         ("datasheet/default", "datasheet / default")], rows, notes)],
                  [cal.source], extra={"calibration": cal.as_dict(), "path": str(path),
                                       "repeats": [r.as_dict() for r in runs]})
