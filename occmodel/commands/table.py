"""``occmodel table``: the feasibility table of every combination, for a design review."""

from __future__ import annotations

import argparse

from ..card import load_card
from ..errors import ConfigError
from ..model import predict_many
from ..occupancy import LIMITERS
from ..report import Report, Section
from ..spec import load_spec
from . import _configs


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "table", parents=[common], help="feasibility table over a sweep of configs (markdown for design reviews)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Every combination of the listed values, on top of the baseline: predicted shared memory "
                    "against the per-block limit, registers, resident blocks and warps per SM, occupancy and "
                    "the binding limit. Configs that do not fit stay in the table with the reason. "
                    "--compiled adds what Triton and ptxas really produce for each row (no GPU needed).",
        epilog="examples:\n"
               "  occmodel table --warps 4,8 --stages 2,3,4 -D BLOCK_T=16,32 --format markdown\n"
               "  occmodel table --kernel matmul --stages 2..5 -D BLOCK_M=64,128 --spec sm_90 --compiled")
    _configs.add_config_args(p, sweep=True)
    p.add_argument("--compiled", action="store_true",
                   help="also compile every row for the spec's arch and show actual shared/regs/spills")
    p.set_defaults(run=run)


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = load_card(args.kernel)
    carveout = _configs.check_carveout(args.carveout)
    base = _configs.baseline(card, args)
    if not (args.warps or args.stages or args.defines):
        args.warps, args.stages = [4, 8], [2, 3, 4]
    entries = _configs.sweep(card, base, args)
    swept = list(entries[0][0]) if entries else []
    good = [cfg for _, cfg, _ in entries if cfg is not None]
    pred = predict_many(card, spec, good, carveout) if good else {}
    limit = spec.sm.shared_memory_per_block_optin
    rows, i = [], 0
    for asked, cfg, error in entries:
        row = {k: asked[k] for k in swept}
        if cfg is None:
            row.update(status="invalid", why=error)
            rows.append(row)
            continue
        fits = bool(pred["fits"][i])
        row.update(shared=int(pred["shared"][i]), regs=int(pred["regs_estimate"][i]),
                   blocks_per_sm=int(pred["blocks_per_sm"][i]), warps_per_sm=int(pred["warps_per_sm"][i]),
                   occupancy=round(float(pred["occupancy"][i]), 4),
                   limiter=LIMITERS[int(pred["limiter"][i])] if fits else "-",
                   status="fits" if fits else "does not fit")
        row["why"] = "" if fits else _why(spec, row["shared"], row["regs"], 32 * cfg["num_warps"])
        rows.append(row)
        i += 1
    columns = [(k, k) for k in swept] + [
        ("shared", "shared (B)"), ("regs", "regs (est.)"), ("blocks_per_sm", "blocks/SM"),
        ("warps_per_sm", "warps/SM"), ("occupancy", "occupancy"), ("limiter", "limiter"), ("status", "status"),
        ("why", "why")]
    if args.compiled:
        from .compiled_columns import add_compiled_columns
        columns += add_compiled_columns(card, spec, entries, rows, carveout)
    fixed = ", ".join(f"{k}={v}" for k, v in base.items() if k not in swept)
    notes = [f"fixed: {fixed}", f"shared-memory limit per block on {spec.name}: {limit:,} B (opt-in)"]
    _configs.drop_configs(args, [(asked, err) for asked, cfg, err in entries if cfg is None])
    assumptions = [f"spec {spec.name}; carveout {'driver default' if carveout is None else f'{carveout}%'}",
                   f"launch specialization: {card.specialization or 'as the card signature states'}",
                   "shared and regs are the model's prediction" + (
                       "; the actual columns come from real Triton compiles" if args.compiled else "")]
    return Report("table", [Section(f"{card.name} on {spec.name}: {len(rows)} configs", columns, rows, notes)],
                  assumptions, extra={"spec": spec.name, "kernel": card.name})


def _why(spec, shared: int, regs: int, threads: int) -> str:
    from ..occupancy import occupancy
    try:
        return occupancy(spec, threads, min(regs, 255), shared, with_headroom=False).reason
    except ConfigError as exc:
        return str(exc)
