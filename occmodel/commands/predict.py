"""``occmodel predict``: baseline and candidate side by side, from the model alone."""

from __future__ import annotations

from . import SUMMARY

import argparse

from .. import evidence as E
from ..model import expressions, largest_fitting, memo
from ..errors import ConfigError
from ..report import Report, Section, fmt_occupancy
from ..spec import load_spec
from . import _configs


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "predict", parents=[common], help=SUMMARY["predict"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Predict a candidate config beside the baseline: shared memory against the per-block limit, "
                    "registers, resident blocks and warps per SM, the binding limit, and the premise the change "
                    "would test. A card's hand model answers without compiling; a bare @triton.jit kernel (no "
                    "card) is compiled for the spec's arch (exact, cached). No GPU.",
        epilog="examples:\n"
               "  occmodel predict --warps 8 --stages 3          # two levers of a decode-attention kernel on sm_120\n"
               "  occmodel predict --stages 3 -D BLOCK_T=32 --spec sm_90\n"
               "  occmodel predict --kernel matmul --warps 8 --format markdown\n"
               "  occmodel predict --kernel examples/flash_attention.py:_attn_fwd --args "
               "examples/flash_attention.py:example_args \\\n"
               "      --baseline BLOCK_M=128,BLOCK_N=64,HEAD_DIM=64 --stages 3   # your own kernel, no card")
    _configs.add_config_args(p)
    p.set_defaults(run=run)


def _metric_rows(spec, base: E.Evidence, cand: E.Evidence) -> list[dict]:
    limit = spec.sm.shared_memory_per_block_optin
    compiled = base.source == E.COMPILED

    def pct(ev):
        return fmt_occupancy(ev.occupancy.occupancy) if ev.occupancy else None

    def change(a, b):
        if a == b:
            return "="
        return f"{b - a:+,}" if isinstance(a, int) and isinstance(b, int) else "changed"

    rows = [
        ("shared memory per block (B)", base.shared, cand.shared),
        (f"  per-block limit {limit:,} B: fits", _le(base.shared, limit), _le(cand.shared, limit)),
        ("registers per thread" + ("" if compiled else " (estimate)"), base.regs_estimate or base.regs,
         cand.regs_estimate or cand.regs),
    ]
    if compiled:
        rows.append(("spills (n_spills = local bytes / 4)", base.spills, cand.spills))
    rows += [
        ("threads per block", 32 * base.config["num_warps"], 32 * cand.config["num_warps"]),
        ("resident blocks per SM", base.blocks_per_sm, cand.blocks_per_sm),
        ("resident warps per SM", base.warps_per_sm, cand.warps_per_sm),
        ("occupancy", pct(base), pct(cand)),
        ("binding limit", base.limiter, cand.limiter),
        ("fits", base.fits, cand.fits),
    ]
    out = [{"metric": m, "baseline": a, "candidate": b,
            "change": change(a, b) if not isinstance(a, (bool, str)) else ("=" if a == b else "changed")}
           for m, a, b in rows]
    for ev, who in ((base, "baseline"), (cand, "candidate")):
        if ev.spills_predicted:
            out.append({"metric": f"{who}: spills predicted", "baseline": None, "candidate": None,
                        "change": f"estimate {ev.regs_estimate} > 255 registers"})
        if not ev.fits:
            out.append({"metric": f"{who}: why it does not fit" if ev.ok else f"{who}: compile",
                        "baseline": None, "candidate": None, "change": ev.reason or ev.message})
    return out


def _le(value, limit):
    return None if value is None else value <= limit


STAGES_SHOWN = range(1, 17)     # the num_stages a view of the model considers


def _domain(card, name: str) -> list[int]:
    if name == "num_stages":
        return list(STAGES_SHOWN)
    p = card.param(name)
    return list(p.choices) if p.choices else list(range(p.minimum, p.minimum + 256))


def _model_views(card, spec, cfg) -> dict:
    """The model as a person reads it, against num_stages alone and against the tile sizes
    alone (the other parameters at the candidate's values), plus the full expressions in the
    tunables (sympy syntax, for JSON). Builds the sympy expressions: memoised by the caller."""
    from ..exprfmt import fmt, prune
    shared, regs = expressions(card, spec, cfg)
    syms = card.symbols()
    fixed = {sym: cfg[name] for name, sym in syms.items() if not card.param(name).tunable}
    rows = []
    for expr, what in ((shared, "shared memory (B)"), (regs, "registers (estimate)")):
        for label, keep in (("num_stages", {"num_stages"}),
                            ("tile sizes", {n for n in syms if n.startswith("BLOCK")})):
            if not keep & set(syms):
                continue
            view = expr.subs({sym: cfg[name] for name, sym in syms.items() if name not in keep})
            view = prune(view, {n: _domain(card, n) for n in keep})
            rows.append({"question": f"{what} vs {label}", "answer": fmt(view)})
    return {"rows": rows, "model": {"shared_memory": str(shared.subs(fixed)), "registers": str(regs.subs(fixed))}}


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    carveout = _configs.check_carveout(args.carveout)
    base_cfg = _configs.baseline(card, args)
    cand_cfg = _configs.candidate(card, base_cfg, args)
    if cand_cfg == base_cfg:
        raise ConfigError("the candidate equals the baseline; change a lever, e.g. --warps 8 or --stages 3")
    prems, lever_evs, base = E.premises(card, spec, base_cfg, cand_cfg, carveout=carveout)
    cand = lever_evs[prems[-1].name]
    compiled = base.source == E.COMPILED
    cfg_note = ", ".join(f"{k}={v}" for k, v in base_cfg.items())
    title = (f"{card.name} on {spec.name} ({spec.product().name}): baseline vs candidate "
             f"[{prems[-1].name}]" + (f" (compiled for {spec.arch})" if compiled else ""))
    metrics = Section(title, [("metric", "metric"), ("baseline", "baseline"), ("candidate", "candidate"),
                              ("change", "change")], _metric_rows(spec, base, cand),
                      [f"baseline: {cfg_note}", f"numbers from: {base.source}"])
    sections = [metrics, premise_section(prems)]
    extra = {"spec": spec.name, "kernel": card.name, "source": base.source, "baseline": base.as_dict(),
             "candidate": cand.as_dict(), "premises": [p.as_dict() for p in prems]}
    if compiled:
        res = base.result
        assumptions = [
            _spec_line(spec, carveout),
            f"launch specialization: {card.specialization or 'as the card signature states'}; signature used: "
            + ", ".join(f"{k}={v}" for k, v in (res.signature if res else {}).items()),
            f"numbers compiled for {spec.arch} with triton {res.triton_version if res else '?'}, ptxas "
            f"{res.ptxas_version if res and res.ptxas_version else 'not run'} (exact for that toolchain; no "
            "hand model: `occmodel fit` derives one for configs not compiled)"]
        return Report("predict", sections, assumptions, extra=extra)
    views = memo(card, ("predict-views", list(spec.compute_capability), sorted(cand_cfg.items())),
                 lambda: _model_views(card, spec, cand_cfg))
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
    hr = occupancy_headroom(spec, cand, carveout)
    budget = ("no shared-memory reduction adds a block (another limit binds)" if hr is None or hr.smem_to_gain is None
              else f"{hr.smem_to_gain:,} B less shared memory per block adds a resident block")
    limits_rows = [
        *views["rows"],
        {"question": "largest num_stages that fits (candidate)", "answer":
            "none" if stages_max is None else (f"{stages_max}" + (" (or more)" if stages_max == 16 else ""))},
        *block_rows,
        {"question": "one more resident block (candidate)", "answer": budget},
    ]
    sections.append(Section("Limits from the model", [("question", "question"), ("answer", "answer")], limits_rows))
    assumptions = [
        _spec_line(spec, carveout),
        f"launch specialization: {card.specialization or 'as the card signature states'}",
        f"pipelined loads: {card.pipelined_loads or 'see the card'}",
        "shared memory is the card's model of what Triton allocates (`occmodel compile` shows the real value); "
        "registers are an estimate (see README for its measured error)",
    ]
    extra["model"] = views["model"]
    return Report("predict", sections, assumptions, extra=extra)


def premise_section(prems) -> Section:
    """One row per premise: each lever alone, then the combination (the same in compile and validate)."""
    rows = [{"premise": p.claim, "mechanism": p.mechanism,
             "why": p.evidence + (f"; note: {p.note}" if p.note else ""),
             "also": "; ".join(p.also_changed) or "-"} for p in prems]
    title = "Premises this change would test" + (" (one per lever, then the combination)" if len(prems) > 1 else "")
    return Section(title, [("premise", "premise"), ("mechanism", "mechanism"), ("why", "why"),
                           ("also", "also changed")], rows)


def _spec_line(spec, carveout) -> str:
    return (f"spec {spec.name}: {spec.sm.max_warps_per_sm} warps, {spec.sm.max_blocks_per_sm} blocks, "
            f"{spec.sm.shared_memory_per_sm:,} B shared per SM; opt-in {spec.sm.shared_memory_per_block_optin:,} B "
            f"per block; carveout {'driver default' if carveout is None else f'{carveout}%'}")


def occupancy_headroom(spec, ev: E.Evidence, carveout):
    """The occupancy headroom of one config's evidence (None when it has no occupancy)."""
    if ev.occupancy is None:
        return None
    from ..occupancy import occupancy
    return occupancy(spec, 32 * ev.config["num_warps"], ev.regs, ev.shared, carveout).headroom
