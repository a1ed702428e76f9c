"""``occmodel plot occupancy`` (NVIDIA's three calculator curves) and ``occmodel plot heatmap``
(a card's predicted occupancy over two config axes). PNG or SVG by the --out suffix."""

from __future__ import annotations

from . import SUMMARY

import argparse

from ..errors import ConfigError
from ..report import Report, Section
from ..spec import load_spec
from . import _configs
from ._args import assignments, byte_size, define, int_in


def add_parser(subs, common) -> None:
    p = subs.add_parser("plot", help=SUMMARY["plot"],
                        description="Draw what occmodel computes (needs matplotlib: pip install 'occmodel[plot]'). "
                                    "The format follows the --out suffix: .png or .svg.")
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    occ = kinds.add_parser(
        "occupancy", parents=[common], help="resident warps per SM vs threads, registers and shared memory",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The three curves NVIDIA's Occupancy Calculator draws -- resident warps per SM against threads "
                    "per block, registers per thread and shared memory per block -- each varying one input with "
                    "the other two held at the given config, which is marked.",
        epilog="example:\n  occmodel plot occupancy --spec sm_120 --threads 128 --regs 96 --smem 60K --out fig.png")
    size = occ.add_mutually_exclusive_group(required=True)
    size.add_argument("--threads", type=int_in(1, 1024, "threads per block"), help="threads per block (1..1024)")
    size.add_argument("--warps", type=int_in(1, 32, "warps per block"), help="warps per block (threads = 32 x warps)")
    occ.add_argument("--regs", type=int_in(1, 255, "registers per thread"), required=True,
                     help="registers per thread (1..255)")
    occ.add_argument("--smem", type=byte_size, default=0, help="shared memory per block: bytes or KB (60K)")
    occ.add_argument("--carveout", type=int_in(0, 100, "carveout percent"), default=None,
                     help="preferred shared-memory carveout in percent (default: the driver default)")
    occ.add_argument("--out", required=True, help="output file, .png or .svg")
    occ.set_defaults(run=run_occupancy)

    heat = kinds.add_parser(
        "heatmap", parents=[common], help="predicted occupancy over two config axes, infeasible cells marked",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A kernel card's predicted occupancy for every (x, y) pair of config values, on top of the "
                    "card's baseline; configs that do not fit the spec are hatched and crossed, each cell is "
                    "annotated (occupancy and warps per SM, or the shared memory it needs).",
        epilog="example:\n  occmodel plot heatmap --kernel decode_attention --spec sm_120 --x num_warps=1,2,4,8 "
               "--y num_stages=1,2,3,4,5 -D BLOCK_T=32 --out fig.svg")
    _configs.add_kernel_args(heat)
    heat.add_argument("--x", type=define, required=True, metavar="NAME=V1,V2,...", help="the horizontal axis")
    heat.add_argument("--y", type=define, required=True, metavar="NAME=V1,V2,...", help="the vertical axis")
    heat.add_argument("-D", dest="defines", type=define, action="append", default=[], metavar="NAME=VALUE",
                      help="fix a card parameter for every cell (repeatable)")
    heat.add_argument("--baseline", type=assignments, default=None, metavar="NAME=V,...",
                      help="baseline config under every cell (default: the card's)")
    heat.add_argument("--carveout", type=int_in(0, 100, "carveout percent"), default=None,
                      help="preferred shared-memory carveout in percent (default: the driver default)")
    heat.add_argument("--out", required=True, help="output file, .png or .svg")
    heat.set_defaults(run=run_heatmap)


def run_occupancy(args) -> Report:
    from ..occupancy import occupancy
    from ..plot import check_out, occupancy_figure, save
    check_out(args.out)
    spec = load_spec(args.spec)
    threads = args.threads if args.threads is not None else 32 * args.warps
    occ = occupancy(spec, threads, args.regs, args.smem, args.carveout, with_headroom=False)
    path = save(occupancy_figure(spec, threads, args.regs, args.smem, args.carveout), args.out)
    rows = [{"threads": threads, "regs": args.regs, "smem": args.smem, "blocks_per_sm": occ.blocks_per_sm,
             "warps_per_sm": occ.warps_per_sm, "occupancy": round(occ.occupancy, 4), "limiter": occ.limiter}]
    cols = [(k, k) for k in rows[0]]
    return Report("plot", [Section(f"Occupancy curves on {spec.name} -> {path}", cols, rows,
                                   ["curves: resident warps per SM vs threads per block, registers per thread, "
                                    "shared memory per block; the config above is marked"])],
                  extra={"kind": "occupancy", "out": str(path), "spec": spec.name})


def run_heatmap(args) -> Report:
    from ..plot import check_out, heatmap_figure, save
    check_out(args.out)
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    axes = {}
    for which, (name, values) in (("--x", args.x), ("--y", args.y)):
        param = card.param(name)                              # unknown names: one line with the valid ones
        if name in axes:
            raise ConfigError(f"{which} {name} is already the other axis; pick two different parameters")
        axes[name] = [param.check(v) for v in values]
    fixed = {}
    for name, values in args.defines:
        if len(values) != 1:
            raise ConfigError(f"-D {name}={','.join(values)}: give one value (the axes are --x and --y)")
        if name in axes:
            raise ConfigError(f"-D {name} is also an axis; drop one of them")
        fixed[name] = card.param(name).check(values[0])
    base = card.resolve(base=args.baseline) if args.baseline is not None else None
    (xn, xv), (yn, yv) = axes.items()
    fig, cells = heatmap_figure(card, spec, (xn, xv), (yn, yv), fixed=fixed, base=base, carveout=args.carveout)
    path = save(fig, args.out)
    rows = []
    for row in cells:
        for c in row:
            pred = c["prediction"]
            rows.append({xn: c["asked"][xn], yn: c["asked"][yn],
                         "shared": None if pred is None else pred.shared,
                         "warps_per_sm": None if pred is None else pred.warps_per_sm,
                         "occupancy": None if pred is None or pred.occupancy is None
                         else round(pred.occupancy.occupancy, 4), "source": None if pred is None else pred.source,
                         "fits": False if pred is None else pred.fits, "why": c["reason"]})
    cols = [(xn, xn), (yn, yn), ("shared", "shared (B)"), ("warps_per_sm", "warps/SM"), ("occupancy", "occupancy"),
            ("fits", "fits"), ("source", "source"), ("why", "why")]
    notes = [f"fixed: {', '.join(f'{k}={v}' for k, v in fixed.items())}"] if fixed else []
    return Report("plot", [Section(f"{card.name} on {spec.name}: predicted occupancy -> {path}", cols, rows, notes)],
                  ["shared memory and registers: " + ("the card's model (no compile)" if card.kind == "card"
                                                      else f"compiled for {spec.arch} (no hand model)")],
                  extra={"kind": "heatmap", "out": str(path), "spec": spec.name, "kernel": card.name})
