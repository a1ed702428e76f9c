"""``occmodel validate``: did the occupancy change buy throughput? Verdicts on a GPU."""

from __future__ import annotations

from . import SUMMARY

import argparse
import sys
from pathlib import Path

from .. import validate as V
from ..configs import workload_points
from ..errors import ConfigError
from ..premise import verdict_line
from ..report import Report, Section, render
from ..spec import load_spec
from . import _configs
from ._args import assignments, define


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "validate", parents=[common], help=SUMMARY["validate"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="For each candidate and workload point: check the premise's mechanism statically "
                    "(predicted and compiled occupancy / pipeline depth), gate on correctness against the "
                    "torch reference, time baseline (twice: A/A) and candidates interleaved in random order over "
                    "rounds split into independent blocks (fresh inputs and graphs each) with the L2 flushed, "
                    "measure the A/A noise band, and give a verdict: CONFIRMED (gain beyond "
                    "the band), REFUTED (loss beyond it, or the mechanism did not happen) or INCONCLUSIVE.",
        epilog="example (two levers of the decode-attention kernel, timed on a GPU):\n"
               "  occmodel validate --kernel decode_attention --spec sm_90 \\\n"
               "      --baseline BLOCK_T=16,num_warps=4,num_stages=2 \\\n"
               "      --candidate num_warps=8 --candidate num_stages=3 --points C=1,8,48,64,96 -D ctx=8192\n"
               "  add --dry-run to see the plan and the device-time estimate without a GPU\n"
               "your own kernel, no card (a launcher file: make_inputs(point), launch(inputs, cfg), ...):\n"
               "  occmodel validate --kernel attn.py:_fwd --launcher attn.py --spec sm_90 \\\n"
               "      --baseline BLOCK_M=128,BLOCK_N=64,num_warps=4,num_stages=2 --candidate num_stages=3")
    _configs.add_kernel_args(p)
    p.add_argument("--baseline", type=assignments, default=None, metavar="NAME=V,...",
                   help="baseline config (default: the card's baseline)")
    p.add_argument("--candidate", type=assignments, action="append", default=[], metavar="NAME=V,...",
                   help="a candidate: changes on top of the baseline (repeatable)")
    p.add_argument("--points", type=define, action="append", default=[], metavar="NAME=V1,V2",
                   help="workload points to sweep, e.g. C=1,8,48,64,96 (repeatable; the product is taken)")
    p.add_argument("-D", dest="defines", type=define, action="append", default=[], metavar="NAME=VALUE",
                   help="fix a workload parameter (e.g. ctx=8192) or a card parameter for all configs")
    p.add_argument("--rounds", type=int, default=30,
                   help="interleaved rounds per point in all, split over --blocks (>= 3 per block; default 30)")
    p.add_argument("--blocks", type=int, default=5,
                   help="independent blocks per point (fresh inputs, graphs and warm-up each; >= 3; default 5): "
                        "the interval covers the variation between them")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--dry-run", action="store_true", help="show the plan and static analysis only (no GPU)")
    p.add_argument("--no-compile", action="store_true", help="skip the compiled occupancy (model only)")
    p.add_argument("--combined-only", action="store_true",
                   help="a candidate that changes several parameters is timed as one config only (by default "
                        "each lever is also timed alone, from the baseline: one premise per lever)")
    p.add_argument("--out", type=Path, default=None,
                   help="also write the A/B note as OUT.md and the full data as OUT.json")
    p.set_defaults(run=run)


def build_plan(args) -> V.Plan:
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    if args.rounds < 5:
        raise ConfigError(f"--rounds {args.rounds} is too few; allowed >= 5")
    if args.blocks < 3:
        raise ConfigError(f"--blocks {args.blocks} is too few; allowed >= 3")
    if args.rounds < 3 * args.blocks:
        raise ConfigError(f"--rounds {args.rounds} is too few for {args.blocks} blocks; allowed >= {3 * args.blocks} "
                          "(3 rounds per block)")
    if not args.candidate:
        raise ConfigError("no --candidate given; e.g. --candidate num_warps=8")
    points, card_defines = workload_points(card, args.points, args.defines)
    card_fixed = {n: v[0] for n, v in card_defines}
    base = card.resolve({**(args.baseline or {}), **card_fixed}) if args.baseline else card.resolve(card_fixed)
    cands = [card.resolve(c, base=base) for c in args.candidate]
    seen = []
    for flag, cand in zip(args.candidate, cands):
        if cand == base:
            raise ConfigError(f"--candidate {','.join(f'{k}={v}' for k, v in flag.items())} equals the baseline; "
                              "a candidate must change at least one parameter")
        if cand in seen:
            raise ConfigError(f"--candidate {','.join(f'{k}={v}' for k, v in flag.items())} is given twice")
        seen.append(cand)
    return V.plan(card, spec, base, cands, points, args.rounds, compiled=not args.no_compile,
                  combined_only=args.combined_only, blocks=args.blocks)


def run(args) -> Report:
    if not args.dry_run:
        V.require_gpu()                      # before any compile: fail fast, one line
    plan = build_plan(args)
    if not args.dry_run and not plan.card.has_launcher():
        launcher = getattr(plan.card, "launcher", None)
        if launcher is not None:
            launcher.require_run()               # names which of make_inputs / launch the file lacks
        raise ConfigError(f"validate times {plan.card.name} on the GPU and needs a launcher that runs it: give "
                          "--launcher FILE.py with make_inputs(point) and launch(inputs, cfg) (or use --dry-run)")
    if args.dry_run:
        return plan_report(plan)
    result = V.run(plan, seed=args.seed, progress=lambda m: print(m, file=sys.stderr, flush=True))
    report = result_report(result, args)
    if args.out:
        from ..report import write_after_run         # a failed write keeps the GPU run's report on stdout
        write_after_run(args, args.out.with_suffix(".md"), render(report, "markdown") + "\n")
        write_after_run(args, args.out.with_suffix(".json"), render(report, "json") + "\n")
    return report


def _static_section(plan: V.Plan) -> Section:
    rows = []
    for r in plan.static:
        m, c = r.model, r.compiled
        rows.append({"config": r.name, "pred_shared": m.shared if m else None,
                     "pred_regs": m.regs_estimate if m else None, "pred_warps_per_sm": m.warps_per_sm if m else None,
                     "shared": c.shared if c else None, "n_regs": c.regs if c else None,
                     "n_spills": c.spills if c else None, "warps_per_sm": c.warps_per_sm if c else None,
                     "compile": (c.outcome if c.status == "ok" else f"{c.status}: {c.message}") if c else "not compiled"})
    cols = [("config", "config"), ("pred_shared", "shared (B, pred.)"), ("pred_regs", "regs/thread (pred.)"),
            ("pred_warps_per_sm", "warps/SM (pred.)"), ("shared", f"shared (B, {plan.spec.arch})"),
            ("n_regs", "regs/thread"), ("n_spills", "spills (regs)"), ("warps_per_sm", "warps/SM"),
            ("compile", "compile")]
    versions = {f"triton {r.compiled.result.triton_version}, ptxas {r.compiled.result.ptxas_version}"
                for r in plan.static if r.compiled is not None and r.compiled.result is not None
                and r.compiled.result.ok}
    notes = [f"compiled with {v}; register counts (and so occupancy) differ between triton versions"
             for v in sorted(versions)]
    if all(r.model is None for r in plan.static):
        notes.append(f"{plan.card.name} has no hand model: the static picture is the compiled one")
    return Section(f"Static picture on {plan.spec.name} (model and real compile)", cols, rows, notes)


def _premise_section(plan: V.Plan) -> Section:
    from .predict import premise_section
    return premise_section(plan.premises)


def _what_section(plan: V.Plan, title: str, extra_rows=()) -> Section:
    base = ", ".join(f"{k}={v}" for k, v in plan.baseline.items())
    pts = "; ".join(", ".join(f"{k}={v}" for k, v in p.items()) for p in plan.points)
    check = ("correctness gated on the kernel's reference" if plan.card.has_reference()
             else "timed without a correctness check (the kernel has no reference)")
    rows = [{"item": "kernel", "value": f"{plan.card.name}: {plan.card.summary}"},
            {"item": "correctness", "value": check},
            {"item": "baseline", "value": base},
            {"item": "candidates", "value": "; ".join(V.name_of(plan.baseline, c) for c in plan.candidates)},
            {"item": "premises timed", "value": "; ".join(p.name for p in plan.premises)},
            {"item": "workload points", "value": pts}, {"item": "rounds per point", "value": _rounds_text(plan)},
            {"item": "spec", "value": f"{plan.spec.name} ({plan.spec.description})"}]
    return Section(title, [("item", "item"), ("value", "value")], rows + list(extra_rows))


def _rounds_text(plan: V.Plan) -> str:
    from ..stats import split_rounds
    sizes = sorted(set(split_rounds(plan.rounds, plan.blocks)))
    return f"{plan.rounds} ({plan.blocks} independent blocks x {'-'.join(map(str, sizes))} rounds)"


def _overall_text(res: V.Result, name: str) -> str:
    """overall[name], with the measured outcome beside a static refutation."""
    d = res.overall_detail.get(name)
    if d and d["refuted_statically"]:
        return f"{res.overall[name]} (statically: the mechanism did not happen); measured: {d['measured_text']}"
    return res.overall[name]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def plan_report(plan: V.Plan) -> Report:
    what = _what_section(plan, "Plan (dry run: nothing was timed)",
                         [{"item": "estimated device time", "value": f"{plan.est_device_s:.0f} s"}])
    return Report("validate", [what, _static_section(plan), _premise_section(plan)],
                  [f"spec {plan.spec.name}; estimate from the roofline of {plan.spec.product().name}"],
                  extra={"configs": static_configs(plan), "premises": [p.as_dict() for p in plan.premises]})


def static_configs(plan: V.Plan) -> list[dict]:
    """JSON ``configs``: per timed config (baseline first), its name, config and the predicted
    and compiled numbers (occmodel.evidence.Evidence.as_dict; null when not computed)."""
    return [{"name": r.name, "config": dict(r.config), "predicted": r.model.as_dict() if r.model else None,
             "compiled": r.compiled.as_dict() if r.compiled else None} for r in plan.static]


def _bandwidth(nbytes: float | None, seconds: float, copy_bw: float, peak: float, product: str) -> str:
    """Achieved DRAM bandwidth (the card's unavoidable bytes / median time) against the
    measured copy bandwidth and the product's datasheet peak."""
    if not nbytes:
        return "unknown (the kernel states no bytes_moved)"
    bw = nbytes / seconds
    return f"{bw / 1e9:,.0f} GB/s ({100 * bw / copy_bw:.0f}% of copy, {100 * bw / peak:.0f}% of {product} peak)"


def result_report(res: V.Result, args) -> Report:
    plan = res.plan
    product = plan.spec.product_for_gpu(str(res.env.get("gpu", ""))) or plan.spec.product()
    peak = product.memory_bandwidth_gbs * 1e9
    verdicts = [{"item": f"verdict: {name}", "value": _overall_text(res, name)} for name in res.overall]
    sections = [_what_section(plan, "What was tested", verdicts), _static_section(plan), _premise_section(plan)]
    unit = plan.card.throughput_unit
    sms = res.env.get("sms")
    for premise in plan.premises:
        name, cand = premise.name, premise.config
        rows = []
        for pr in res.points:
            label = ", ".join(f"{k}={v}" for k, v in pr.point.items())
            corr = pr.correctness.get(name, {})
            if not pr.correctness["baseline"]["ok"]:
                rows.append({"point": label, "verdict": "baseline incorrect: not timed",
                             "why": f"rel. error {pr.correctness['baseline']['rel_error']:.2e}"})
                continue
            if not corr.get("ok", False):
                rows.append({"point": label, "verdict": "candidate incorrect: not timed",
                             "why": f"rel. error {corr.get('rel_error', float('nan')):.2e}, "
                                    f"{corr.get('n_bad')} bad elements"})
                continue
            o = pr.outcomes[name]
            t_base = o.base_median_s
            rows.append({"point": label, "base": round(pr.base_throughput), "cand": round(plan.card.work_units(pr.point) / o.cand_median_s),
                         "delta": f"{100 * o.delta:+.1f}%", "ci": f"{100 * (o.ci_low - 1):+.1f}..{100 * (o.ci_high - 1):+.1f}%",
                         "band": f"+-{100 * o.band:.1f}%", "spread": f"{100 * o.base_spread:.1f}%",
                         "noise": f"{_pct(o.within_sd)} / {_pct(o.between_sd)}",
                         "bw": _bandwidth(pr.base_bytes, t_base, res.copy_bandwidth, peak, product.name),
                         "cand_bw": _bandwidth(plan.card.bytes_moved(cand, pr.point), o.cand_median_s,
                                               res.copy_bandwidth, peak, product.name),
                         "verdict": verdict_line(premise, o.verdict), "why": o.why,
                         "context": V.point_context(plan, name, pr.point, sms)})
        cols = [("point", "point"), ("base", f"baseline {unit}"), ("cand", f"candidate {unit}"), ("delta", "delta"),
                ("ci", "95% CI"), ("band", "A/A band"), ("noise", "SD within / between blocks"),
                ("spread", "baseline spread"), ("bw", "baseline HBM"), ("cand_bw", "candidate HBM"),
                ("verdict", "verdict"), ("why", "why"), ("context", "at this point")]
        sections.append(Section(f"{name}: overall {_overall_text(res, name)}", cols, rows,
                                [f"premise: {premise.claim}; mechanism {premise.mechanism}"]
                                + ([f"also changed: {'; '.join(premise.also_changed)}"] if premise.also_changed else [])))
    torch_rows = [{"point": ", ".join(f"{k}={v}" for k, v in pr.point.items()),
                   "ours_us": round(plan.card.work_units(pr.point) / pr.base_throughput * 1e6, 1) if pr.base_throughput else None,
                   "torch_us": round(pr.torch_ref_s * 1e6, 1) if pr.torch_ref_s else None}
                  for pr in res.points]
    for r in torch_rows:
        r["speedup"] = round(r["torch_us"] / r["ours_us"], 2) if r["ours_us"] and r["torch_us"] else None
    sections.append(Section("Baseline kernel against torch on the same shapes (median per launch)",
                            [("point", "point"), ("ours_us", "ours (us)"), ("torch_us", "torch (us)"),
                             ("speedup", "torch / ours")], torch_rows))
    env = res.env
    env_rows = [{"item": k, "value": v} for k, v in env.items()]
    env_rows += [{"item": "copy bandwidth (read + write)", "value": f"{res.copy_bandwidth / 1e9:,.0f} GB/s"},
                 {"item": "spec peak bandwidth", "value": f"{product.memory_bandwidth_gbs:,.0f} GB/s ({product.name}, "
                                                           f"{product.source})"},
                 {"item": "device time spent", "value": f"{res.device_seconds:.0f} s"},
                 {"item": "command", "value": "occmodel " + " ".join(sys.argv[1:])}]
    sections.append(Section("Environment", [("item", "item"), ("value", "value")], env_rows))
    assumptions = [f"spec {plan.spec.name}; timings: CUDA events around CUDA-graph replays, L2 flushed before "
                   f"every sample, inputs rotated over >= 3x L2; {_rounds_text(plan)} per point: each block "
                   "with fresh allocations and input sets, new CUDA graphs and a re-warm; in each round the "
                   "baseline twice (two instances, A and A') and every candidate once, in a random order",
                   "interval: one-way random-effects model on the per-block median log-ratios m_b: "
                   "mean(m_b) +- t(0.975, B-1) * sd(m_b) / sqrt(B), so it covers the variation between "
                   "blocks (what a re-run shows) as well as within them; 'SD within / between blocks' "
                   "splits it: round-to-round SD inside a block, and the block shift's SD by the method of "
                   "moments (sd(m_b)^2 - (pi/2) within^2 / rounds per block)",
                   "band: half-width of the same interval on the A/A log-ratio (baseline A vs A'); verdict "
                   "CONFIRMED/REFUTED only when the candidate's whole 95% interval is beyond it",
                   "overall: the decisive points (CONFIRMED/REFUTED) decide; INCONCLUSIVE points do not break "
                   "agreement; points that disagree give MIXED with the points named; a mechanism that did "
                   "not happen statically keeps REFUTED, the measured outcome beside it"]
    return Report("validate", sections, assumptions,
                  extra={"overall": res.overall, "overall_detail": res.overall_detail,
                         "premises": [p.as_dict() for p in plan.premises], "configs": static_configs(plan),
                         "blocks": plan.blocks, "rounds": plan.rounds, "device_seconds": res.device_seconds,
                         "copy_bandwidth": res.copy_bandwidth, "env": env,
                         "points": [{"point": pr.point, "correctness": pr.correctness,
                                     "outcomes": {k: vars(o) for k, o in pr.outcomes.items()}}
                                    for pr in res.points]})


