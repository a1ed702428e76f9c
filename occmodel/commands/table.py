"""``occmodel table``: the feasibility table of every combination, for a design review."""

from __future__ import annotations

from . import SUMMARY

import argparse

from .. import evidence as E
from ..configs import plain
from ..errors import ConfigError
from ..report import Report, Section
from ..spec import load_spec
from . import _configs


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "table", parents=[common], help=SUMMARY["table"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Every combination of the listed values, on top of the baseline: shared memory against the "
                    "per-block limit, registers, resident blocks and warps per SM, occupancy and the binding "
                    "limit. Configs that do not fit stay in the table with the reason. A card's hand model "
                    "answers without compiling (--compiled adds what Triton and ptxas really produce); a bare "
                    "@triton.jit kernel is compiled for the spec's arch (no GPU needed). The source column says "
                    "which.",
        epilog="examples:\n"
               "  occmodel table --warps 4,8 --stages 2,3,4 -D BLOCK_T=16,32 --format markdown\n"
               "  occmodel table --kernel matmul --stages 2..5 -D BLOCK_M=64,128 --spec sm_90 --compiled\n"
               "  occmodel table --kernel my_attn.py:_fwd --args my_attn.py:example_args \\\n"
               "      --baseline HEAD_DIM=64 -D BLOCK_M=64,128 -D BLOCK_N=32,64 --stages 2,3")
    _configs.add_config_args(p, sweep=True)
    p.add_argument("--derive", type=float, default=None, metavar="FRACTION",
                   help="compile a designed sample of at most FRACTION of the sweep (e.g. 0.3) and derive the "
                        "rest from its IR (exact shared memory or no answer; estimated registers): `source` says "
                        "compiled or derived per row")
    p.add_argument("--compiled", action="store_true",
                   help="also compile every row for the spec's arch and show actual shared/regs/spills")
    p.set_defaults(run=run)


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    carveout = _configs.check_carveout(args.carveout)
    base = _configs.baseline(card, args)
    if not (args.warps or args.stages or args.defines):
        args.warps, args.stages = [4, 8], [2, 3, 4]
    entries = _configs.sweep(card, base, args)
    swept = list(entries[0][0]) if entries else []
    good = [cfg for _, cfg, _ in entries if cfg is not None]
    # a constexpr the launcher derives from a swept tunable (ROWS = BLOCK // D) varies too: a column
    derived = [k for k in base if k not in swept and any(cfg.get(k) != base[k] for cfg in good)]
    if args.derive is not None and not 0 < args.derive <= 1:
        raise ConfigError(f"--derive {args.derive} is out of range; allowed 0 < FRACTION <= 1")
    evs = iter(E.gather(card, spec, good, carveout=carveout, derive=args.derive))
    compiled = None
    limit = spec.sm.shared_memory_per_block_optin
    rows, valid, configs = [], [], []
    for asked, cfg, error in entries:
        row = {k: plain(asked[k]) for k in swept}
        row.update({k: plain(cfg[k]) if cfg is not None else "" for k in derived})
        if cfg is None:
            row.update(status="invalid", why=error)
            rows.append(row)
            configs.append({"config": {k: plain(v) for k, v in asked.items()}, "status": "invalid", "why": error})
            continue
        ev = next(evs)
        compiled = ev.source in (E.COMPILED, E.DERIVED)
        row.update(shared=ev.shared, regs=ev.regs_estimate if ev.regs_estimate is not None else ev.regs,
                   blocks_per_sm=ev.blocks_per_sm, warps_per_sm=ev.warps_per_sm,
                   occupancy=round(ev.occupancy.occupancy, 4) if ev.occupancy else None, limiter=ev.limiter,
                   source=ev.source)
        if compiled:
            row["spills"] = ev.spills
        status, why = ev.outcome, ev.message
        if ev.status == "ok":
            why = "" if ev.fits else _why(spec, ev.shared, ev.regs_estimate or ev.regs, 32 * cfg["num_warps"])
            if status == "spills" and not compiled:
                why = f"estimate {ev.regs_estimate} registers > 255: ptxas would spill"
        row.update(status=status, why=why)
        rows.append(row)
        configs.append({**ev.as_dict(), "status": status, "why": why})
        valid.append((row, cfg, configs[-1]))
    columns = [(k, k) for k in swept] + [(k, f"{k} (derived)") for k in derived] + [
        ("shared", "shared (B)"), ("regs", "regs/thread" if compiled else "regs/thread (est.)")] + (
        [("spills", "spills (regs)")] if compiled else []) + [
        ("blocks_per_sm", "blocks/SM"), ("warps_per_sm", "warps/SM"), ("occupancy", "occupancy"),
        ("limiter", "limiter"), ("source", "source"), ("status", "status"), ("why", "why")]
    if args.compiled and not compiled:
        columns += _compiled_columns(card, spec, valid, carveout)
    fixed = ", ".join(f"{k}={plain(v)}" for k, v in base.items() if k not in swept and k not in derived)
    notes = [f"fixed: {fixed}", f"shared-memory limit per block on {spec.name}: {limit:,} B (opt-in)"]
    _configs.drop_configs(args, [(asked, err) for asked, cfg, err in entries if cfg is None])
    src = (f"a designed sample (at most {args.derive:.0%}) compiled for {spec.arch}, the rest derived from its IR "
           "(shared exact where answered; registers estimated)" if args.derive is not None else
           "compiled for " + spec.arch + " (real Triton and ptxas; no hand model)" if compiled
           else "the card's hand model" + ("; the actual columns come from real Triton compiles"
                                          if args.compiled else ""))
    assumptions = [f"spec {spec.name}; carveout {'driver default' if carveout is None else f'{carveout}%'}",
                   f"launch specialization: {card.specialization or 'as the card signature states'}",
                   f"shared and regs: {src}"]
    return Report("table", [Section(f"{card.name} on {spec.name}: {len(rows)} configs", columns, rows, notes)],
                  assumptions, extra={"spec": spec.name, "kernel": card.name, "configs": configs})


COMPILED_COLUMNS = [("c_shared", "actual shared (B)"), ("c_regs", "actual regs/thread"),
                    ("c_spills", "actual spills (regs)"), ("c_blocks", "actual blocks/SM"),
                    ("c_occupancy", "actual occupancy"), ("c_status", "compile")]


def _compiled_columns(card, spec, valid, carveout) -> list[tuple[str, str]]:
    """Compile every valid row for spec.arch and add the actual columns to it."""
    evs = E.compiled(card, spec, [cfg for _, cfg, _ in valid], carveout)
    for (row, _, obj), ev in zip(valid, evs):
        res = ev.result
        row.update(c_shared=ev.shared, c_regs=ev.regs, c_spills=ev.spills, c_blocks=ev.blocks_per_sm,
                   c_occupancy=round(ev.occupancy.occupancy, 4) if ev.occupancy else None,
                   c_status=ev.outcome if res.ok else f"{res.status}: {res.message}")
        obj["compiled"] = ev.as_dict()
    return list(COMPILED_COLUMNS)


def _why(spec, shared: int, regs: int, threads: int) -> str:
    from ..occupancy import occupancy
    try:
        return occupancy(spec, threads, min(regs, 255), shared, with_headroom=False).reason
    except ConfigError as exc:
        return str(exc)
