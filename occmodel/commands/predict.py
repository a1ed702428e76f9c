"""``occmodel predict``: baseline and candidate side by side, from the model alone."""

from __future__ import annotations

import argparse

import sympy

from ..card import load_card
from ..model import Prediction, expressions, largest_fitting, predict
from ..premise import static_premise
from ..report import Report, Section
from ..spec import load_spec
from . import _configs


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "predict", parents=[common], help="predict shared memory, registers and occupancy: baseline vs candidate",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Predict a candidate config beside the baseline from the kernel card's model: shared memory "
                    "against the per-block limit, registers, resident blocks and warps per SM, the binding limit, "
                    "and the occupancy premise the change would test. No compile, no GPU.",
        epilog="examples:\n"
               "  occmodel predict --warps 8 --stages 3          # the seed's levers, decode_attention on sm_120\n"
               "  occmodel predict --stages 3 -D BLOCK_T=32 --spec sm_90\n"
               "  occmodel predict --kernel matmul --warps 8 --format markdown")
    _configs.add_config_args(p)
    p.set_defaults(run=run)


def _metric_rows(spec, base: Prediction, cand: Prediction) -> list[dict]:
    limit = spec.sm.shared_memory_per_block_optin

    def pct(o):
        return f"{100 * o.occupancy:.1f}%"

    def change(a, b):
        if a == b:
            return "="
        return f"{b - a:+,}" if isinstance(a, int) and isinstance(b, int) else "changed"

    rows = [
        ("shared memory per block (B)", base.shared, cand.shared),
        (f"  per-block limit {limit:,} B: fits", base.shared <= limit, cand.shared <= limit),
        ("registers per thread (estimate)", base.regs_estimate, cand.regs_estimate),
        ("threads per block", base.threads, cand.threads),
        ("resident blocks per SM", base.occupancy.blocks_per_sm, cand.occupancy.blocks_per_sm),
        ("resident warps per SM", base.occupancy.warps_per_sm, cand.occupancy.warps_per_sm),
        ("occupancy", pct(base.occupancy), pct(cand.occupancy)),
        ("binding limit", base.occupancy.limiter, cand.occupancy.limiter),
        ("fits", base.fits, cand.fits),
    ]
    out = [{"metric": m, "baseline": a, "candidate": b,
            "change": change(a, b) if not isinstance(a, (bool, str)) else ("=" if a == b else "changed")}
           for m, a, b in rows]
    for pred, who in ((base, "baseline"), (cand, "candidate")):
        if pred.spills_predicted:
            out.append({"metric": f"{who}: spills predicted", "baseline": None, "candidate": None,
                        "change": f"estimate {pred.regs_estimate} > 255 registers"})
        if not pred.fits:
            out.append({"metric": f"{who}: why it does not fit", "baseline": None, "candidate": None,
                        "change": pred.reason})
    return out


def _views(card, cfg, expr, what: str) -> list[dict]:
    """The model as a function of num_stages alone and of the tile sizes alone (the other
    parameters at the candidate's values): readable where the full expression is not."""
    syms = card.symbols()
    rows = []
    for label, keep in (("num_stages", {"num_stages"}),
                        ("tile sizes", {n for n in syms if n.startswith("BLOCK")})):
        if not keep & set(syms):
            continue
        sub = {sym: cfg[name] for name, sym in syms.items() if name not in keep}
        view = sympy.piecewise_fold(sympy.simplify(expr.subs(sub)))
        rows.append({"question": f"{what} vs {label}", "answer": str(view)})
    return rows


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = load_card(args.kernel)
    carveout = _configs.check_carveout(args.carveout)
    base_cfg = _configs.baseline(card, args)
    cand_cfg = _configs.candidate(card, base_cfg, args)
    base, cand = predict(card, spec, base_cfg, carveout), predict(card, spec, cand_cfg, carveout)
    premise = static_premise(base_cfg, cand_cfg, base_warps=base.occupancy.warps_per_sm,
                             cand_warps=cand.occupancy.warps_per_sm, base_shared=base.shared,
                             cand_shared=cand.shared, cand_fits=cand.fits)
    cfg_note = ", ".join(f"{k}={v}" for k, v in base_cfg.items())
    title = (f"{card.name} on {spec.name} ({spec.product().name}): baseline vs candidate "
             f"[{premise.lever}]")
    metrics = Section(title, [("metric", "metric"), ("baseline", "baseline"), ("candidate", "candidate"),
                              ("change", "change")], _metric_rows(spec, base, cand), [f"baseline: {cfg_note}"])
    shared_expr, regs_expr = expressions(card, spec, cand_cfg)
    fixed = {sym: cand_cfg[name] for name, sym in card.symbols().items()
             if not card.param(name).tunable}          # show the model in the tunables only
    shared_expr, regs_expr = sympy.simplify(shared_expr.subs(fixed)), sympy.simplify(regs_expr.subs(fixed))
    stages_max = largest_fitting(card, spec, cand_cfg, "num_stages", range(1, 17))
    block_rows = []
    for p in card.params:                 # tunable power-of-two tile sizes: the largest that fits
        if p.tunable and p.choices and not isinstance(p.default, str) and p.name.startswith("BLOCK"):
            valid = []
            for v in p.choices:
                try:
                    card.check({**cand_cfg, p.name: v})
                    valid.append(v)
                except Exception:            # a value the card rules out for this config
                    continue
            best = largest_fitting(card, spec, cand_cfg, p.name, valid) if valid else None
            block_rows.append({"question": f"largest {p.name} that fits (candidate)",
                               "answer": "none" if best is None else str(best)})
    hr = cand.occupancy.headroom
    budget = ("no shared-memory reduction adds a block (another limit binds)" if hr.smem_to_gain is None
              else f"{hr.smem_to_gain:,} B less shared memory per block adds a resident block")
    premise_rows = [{"premise": premise.claim, "mechanism": premise.mechanism,
                     "why": premise.why + (f"; note: {premise.note}" if premise.note else "")}]
    limits_rows = [
        *_views(card, cand_cfg, shared_expr, "shared memory (B)"),
        *_views(card, cand_cfg, regs_expr, "registers (estimate)"),
        {"question": "largest num_stages that fits (candidate)", "answer":
            "none" if stages_max is None else (f"{stages_max}" + (" (or more)" if stages_max == 16 else ""))},
        *block_rows,
        {"question": "one more resident block (candidate)", "answer": budget},
    ]
    assumptions = [
        f"spec {spec.name}: {spec.sm.max_warps_per_sm} warps, {spec.sm.max_blocks_per_sm} blocks, "
        f"{spec.sm.shared_memory_per_sm:,} B shared per SM; opt-in {spec.sm.shared_memory_per_block_optin:,} B "
        f"per block; carveout {'driver default' if carveout is None else f'{carveout}%'}",
        f"launch specialization: {card.specialization or 'as the card signature states'}",
        f"pipelined loads: {card.pipelined_loads or 'see the card'}",
        "shared memory is the card's model of what Triton allocates (`occmodel compile` shows the real value); "
        "registers are an estimate (see README for its measured error)",
    ]
    return Report("predict", [metrics,
                              Section("Premise this change would test", [("premise", "premise"),
                                      ("mechanism", "mechanism"), ("why", "why")], premise_rows),
                              Section("Limits from the model", [("question", "question"), ("answer", "answer")],
                                      limits_rows)],
                  assumptions, extra={"spec": spec.name, "kernel": card.name, "baseline": base_cfg,
                                      "candidate": cand_cfg,
                                      "model": {"shared_memory": str(shared_expr), "registers": str(regs_expr)}})
