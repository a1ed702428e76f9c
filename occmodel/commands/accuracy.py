"""``occmodel accuracy``: the model against real compiles over a card's config space.

Sweeps ``CARD.sweep()`` (or, when the card has none, its tunable choices x
num_warps {2,4,8} x num_stages {1,2,3,4}; or the product --warps/--stages/-D
give), compiles every config for the spec's arch and reports:
* shared memory: exact-match rate and every mismatching config;
* registers: median and worst absolute error (and relative to the actual);
* spills: predicted (estimate > 255) against actual (n_spills > 0), hits / misses;
* occupancy: predicted resident blocks/SM == actual (from n_regs and total shared).
Compile failures are counted and listed, never fatal.
"""

from __future__ import annotations

from . import SUMMARY

import argparse
import itertools
import statistics

from .. import evidence as E
from ..card import KernelCard
from ..configs import plain, swept_names
from ..errors import ConfigError
from ..report import Report, Section
from ..spec import load_spec
from . import _configs

DEFAULT_WARPS, DEFAULT_STAGES = (2, 4, 8), (1, 2, 3, 4)


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "accuracy", parents=[common], help=SUMMARY["accuracy"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compile every config of the card's sweep for the spec's arch (no GPU) and measure the model: "
                    "shared-memory exact-match rate, register error, spill prediction, occupancy agreement.",
        epilog="examples:\n"
               "  occmodel accuracy --kernel decode_attention --spec sm_90 --format markdown\n"
               "  occmodel accuracy --warps 4,8 --stages 2,3 -D BLOCK_T=16,32     # a smaller sweep")
    _configs.add_config_args(p, sweep=True)
    p.set_defaults(run=run)


def configs(card: KernelCard, args) -> list[dict]:
    """The sweep: the flags' product if any is given, else card.sweep(), else a default product."""
    base = _configs.baseline(card, args)
    if args.warps or args.stages or args.defines:
        entries = _configs.sweep(card, base, args)
        _configs.drop_configs(args, [(asked, err) for asked, cfg, err in entries if cfg is None])
        return [cfg for _, cfg, _ in entries if cfg is not None]
    own = card.sweep()
    if len(own) > 1:
        return own
    axes = {p.name: list(p.choices) for p in card.params if p.tunable and p.choices}
    axes.update(num_warps=list(DEFAULT_WARPS), num_stages=list(DEFAULT_STAGES))
    out = []
    for combo in itertools.product(*axes.values()):
        try:
            out.append(card.resolve(dict(zip(axes, combo)), base=base))
        except ConfigError:
            continue
    return out


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "n/a (nothing compiled)"


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    carveout = _configs.check_carveout(args.carveout)
    if card.kind != "card" or not card.has_model(spec.compute_capability, _configs.baseline(card, args)):
        raise ConfigError(f"{card.name} has no hand model to check (it is a {card.kind}); `occmodel fit` derives "
                          "a model from a few compiles and reports its error on the configs it did not compile")
    cfgs = configs(card, args)
    if not cfgs:
        raise ConfigError("the sweep is empty: every listed combination is invalid for the card")
    swept = swept_names(cfgs)
    preds = E.modelled(card, spec, cfgs, carveout)
    acts = E.compiled(card, spec, cfgs, carveout)
    results = [a.result for a in acts]
    rows = []
    for cfg, p, a in zip(cfgs, preds, acts):
        est = p.regs_estimate
        res = a.result
        rows.append({**{k: plain(cfg[k]) for k in swept}, "shared_pred": p.shared, "shared": a.shared,
                     "regs_est": est, "regs_pred": None if est is None else min(est, 255), "regs": a.regs,
                     "spill_pred": None if est is None else est > 255, "spills": a.spills,
                     "blocks_pred": p.blocks_per_sm, "blocks": a.blocks_per_sm,
                     "limiter_pred": p.limiter, "limiter": a.limiter,
                     "status": res.status, "message": res.message})
    ok = [r for r in rows if r["status"] == "ok"]
    metrics, summary = _metrics(ok, len(rows))
    label = lambda r: ", ".join(f"{k}={r[k]}" for k in swept)  # noqa: E731
    sections = [Section(f"Model accuracy: {card.name} on {spec.name} ({len(rows)} configs compiled for "
                        f"{spec.arch})", [("metric", "metric"), ("value", "value"), ("detail", "detail")], summary,
                        [f"swept: {', '.join(swept)}; fixed: " + ", ".join(
                            f"{k}={v}" for k, v in cfgs[0].items() if k not in swept)])]
    bad_shared = [r for r in ok if r["shared_pred"] != r["shared"]]
    if bad_shared:
        sections.append(Section("Shared-memory mismatches", [("config", "config"), ("shared_pred", "predicted (B)"),
                                ("shared", "actual (B)"), ("diff", "actual - predicted")],
                                [{"config": label(r), "shared_pred": r["shared_pred"], "shared": r["shared"],
                                  "diff": r["shared"] - r["shared_pred"]} for r in bad_shared]))
    bad_occ = [r for r in ok if r["blocks_pred"] is not None and r["blocks_pred"] != r["blocks"]]
    if bad_occ:
        sections.append(Section("Occupancy disagreements", [("config", "config"), ("blocks_pred", "predicted blocks/SM"),
                                ("blocks", "actual blocks/SM"), ("limiter_pred", "predicted limiter"),
                                ("limiter", "actual limiter")], [dict(r, config=label(r)) for r in bad_occ]))
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        sections.append(Section("Compile failures", [("config", "config"), ("status", "status"),
                                                     ("message", "message")],
                                [dict(r, config=label(r)) for r in failed]))
    cols = [(k, k) for k in swept] + [("shared_pred", "shared pred (B)"), ("shared", "shared actual (B)"),
                                      ("regs_est", "regs/thread est."), ("regs", "regs/thread actual"),
                                      ("spills", "spills (regs)"), ("blocks_pred", "blocks/SM pred"),
                                      ("blocks", "blocks/SM actual"), ("status", "status")]
    sections.append(Section("All configs", cols, rows))
    ok_res = [r for r in results if r.ok]
    assumptions = [
        f"triton {results[0].triton_version}, ptxas {ok_res[0].ptxas_version if ok_res else 'not run'}; "
        f"compiled for {spec.arch}; occupancy on {spec.name}, carveout "
        f"{'driver default' if carveout is None else f'{carveout}%'}",
        f"launch specialization: {card.specialization or 'as the card signature states'}",
        "predicted registers are the card's estimate capped at 255; a spill is predicted when the estimate "
        "exceeds 255; actual occupancy uses the cubin's registers and static + dynamic shared memory"]
    configs_out = [{**a.as_dict(), "predicted": p.as_dict(), "message": a.result.message}
                   for p, a in zip(preds, acts)]
    return Report("accuracy", sections, assumptions,
                  extra={"spec": spec.name, "arch": spec.arch, "kernel": card.name, "metrics": metrics,
                         "configs": configs_out})


def _metrics(ok: list[dict], total: int) -> tuple[dict, list[dict]]:
    n = len(ok)
    m: dict = {"configs": total, "compiled": n, "failed": total - n}
    shared_hits = sum(r["shared_pred"] == r["shared"] for r in ok)
    m["shared_exact_rate"] = shared_hits / n if n else None
    summary = [{"metric": "configs compiled", "value": f"{n}/{total}",
                "detail": f"{total - n} failed (listed below)" if total > n else "all compiled"},
               {"metric": "shared memory: exact match", "value": _pct(shared_hits, n),
                "detail": "every config matches to the byte" if n and shared_hits == n
                else "mismatches listed below"}]
    with_regs = [r for r in ok if r["regs_pred"] is not None]
    if not with_regs:
        summary.append({"metric": "registers / spills / occupancy", "value": "n/a",
                        "detail": "the card has no register model yet (registers() not implemented)"})
        return m, summary
    # ptxas's count means little once it spills (it can report 32 registers and spill kilobytes),
    # so the register error is taken over configs with no spill predicted or compiled
    clean = [r for r in with_regs if not r["spill_pred"] and r["spills"] == 0]
    err = [abs(r["regs_pred"] - r["regs"]) for r in clean]
    rel = [abs(r["regs_pred"] - r["regs"]) / r["regs"] for r in clean if r["regs"]]
    every = [abs(r["regs_pred"] - r["regs"]) for r in with_regs]
    m.update(regs_configs=len(clean), regs_abs_median=statistics.median(err) if err else None,
             regs_abs_worst=max(err) if err else None, regs_rel_median=statistics.median(rel) if rel else None,
             regs_rel_worst=max(rel) if rel else None,
             regs_mean_signed=statistics.fmean(r["regs_pred"] - r["regs"] for r in clean) if clean else None,
             regs_abs_median_all=statistics.median(every), regs_abs_worst_all=max(every))
    if clean:
        worst = max(clean, key=lambda r: abs(r["regs_pred"] - r["regs"]))
        summary += [
            {"metric": "registers: abs error median / worst", "value": f"{m['regs_abs_median']:g} / "
             f"{m['regs_abs_worst']}", "detail": f"{len(clean)} configs without spills; worst: predicted "
             f"{worst['regs_pred']}, actual {worst['regs']}; mean signed error {m['regs_mean_signed']:+.1f} "
             f"(predicted - actual)"},
            {"metric": "registers: relative error median / worst",
             "value": f"{m['regs_rel_median']:.1%} / {m['regs_rel_worst']:.1%}", "detail": ""}]
    if len(clean) < len(with_regs):
        summary.append({"metric": "registers: abs error incl. spilling configs",
                        "value": f"{m['regs_abs_median_all']:g} / {m['regs_abs_worst_all']}",
                        "detail": f"all {len(with_regs)} configs (spilling kernels report few registers)"})
    tp = sum(r["spill_pred"] and r["spills"] > 0 for r in with_regs)
    fp = sum(r["spill_pred"] and r["spills"] == 0 for r in with_regs)
    fn = sum(not r["spill_pred"] and r["spills"] > 0 for r in with_regs)
    tn = len(with_regs) - tp - fp - fn
    m.update(spill_hits=tp + tn, spill_misses=fp + fn, spill_true_pos=tp, spill_false_pos=fp, spill_false_neg=fn)
    summary.append({"metric": "spills: hits / misses", "value": f"{tp + tn} / {fp + fn}",
                    "detail": f"spilled and predicted {tp}; predicted but clean {fp}; spilled unpredicted {fn}; "
                              f"clean and predicted clean {tn}"})
    occ_hits = sum(r["blocks_pred"] == r["blocks"] for r in with_regs)
    lim_hits = sum(r["limiter_pred"] == r["limiter"] for r in with_regs)
    m.update(occupancy_agreement=occ_hits / len(with_regs), limiter_agreement=lim_hits / len(with_regs))
    summary += [{"metric": "occupancy: predicted blocks/SM == actual", "value": _pct(occ_hits, len(with_regs)),
                 "detail": "disagreements listed below" if occ_hits < len(with_regs) else ""},
                {"metric": "binding limit agrees", "value": _pct(lim_hits, len(with_regs)), "detail": ""}]
    return m, summary
