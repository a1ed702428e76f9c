"""``occmodel fit``: a shared-memory and register model for a kernel without a card,
derived from a designed sample of real compiles (:mod:`occmodel.derive`).

Compiles at most ``--sample`` of the -D / --warps / --stages product for the spec's
arch (a designed sample: base, one parameter at a time, each code path, then the
configs the model cannot cover yet), reads every shared buffer from the allocated
TTGIR, predicts the other configs, then compiles those too to report the model's
error on them (held out: never seen by the model). Shared memory is exact or
refused (the reason is in the row); registers are an estimate, clamped to 1..255.
"""

from __future__ import annotations

import argparse
import statistics

from .. import evidence as E
from ..configs import swept_names
from ..errors import ConfigError
from ..report import Report, Section
from ..spec import load_spec
from . import _configs
from ._args import assignments, define, int_list


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "fit", parents=[common], help="derive shared-memory / register models for your own kernel from a few compiles",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="For a @triton.jit function without a card: compile a designed sample of its config space for "
                    "the spec's arch, read every shared-memory buffer from the TTGIR after Triton's allocator, "
                    "express each in the swept parameters, predict the rest (exact shared memory or no answer; "
                    "estimated registers), and measure the model on those held-out configs (compiled too).",
        epilog="example:\n"
               "  occmodel fit --kernel my_gemm.py:kernel --signature '*fp16:16,*fp16:16,*fp16:16,i32,i32,i32,"
               "i32:16,i32:16,i32:16' \\\n      -D BM=64 -D BN=64 -D BK=16,32,64 --warps 4,8 --stages 2,3,4,5")
    _configs.add_kernel_args(p, default=None)
    p.add_argument("--baseline", type=assignments, default=None, metavar="NAME=V,...",
                   help="values of the parameters not swept (default: the kernel's)")
    p.add_argument("--warps", type=int_list, default=None, help="num_warps values (default 4)")
    p.add_argument("--stages", type=int_list, default=None, help="num_stages values (default 3)")
    p.add_argument("-D", dest="defines", type=define, action="append", default=[], metavar="NAME=V1,V2",
                   help="constexpr values; a comma list sweeps the parameter")
    p.set_defaults(sweep_command=True)
    p.add_argument("--sample", type=float, default=0.3, metavar="FRACTION",
                   help="upper bound on the share of the configs compiled to derive the model (default 0.3; "
                        "the first designed rounds may take more on a tiny sweep)")
    p.add_argument("--seed", type=int, default=0, help="unused: the designed sample is deterministic (kept for scripts)")
    p.set_defaults(run=run)


def summary(errors: list[float], actuals: list[int], total: int | None = None) -> dict:
    """exact "k/n" (n = every held-out config that compiled; a refused prediction is not
    exact), median / worst absolute error and worst relative error over the answered ones."""
    n = total if total is not None else len(errors)
    if not n:
        return {"exact": "n/a", "median": None, "worst": None, "worst_rel": None, "answered": "0/0"}
    rel = [e / a for e, a in zip(errors, actuals) if a]
    return {"exact": f"{sum(e < 0.5 for e in errors)}/{n}", "answered": f"{len(errors)}/{n}",
            "median": statistics.median(errors) if errors else None, "worst": max(errors) if errors else None,
            "worst_rel": round(max(rel), 4) if rel else None}


def run(args) -> Report:
    from ..derive import derive_model
    spec = load_spec(args.spec)
    fn = _configs.kernel(args)
    if not 0 < args.sample <= 1:
        raise ConfigError(f"--sample {args.sample} is out of range; allowed 0 < FRACTION <= 1")
    entries = _configs.sweep(fn, _configs.baseline(fn, args), args)
    bad_cfg = [err for _, cfg, err in entries if cfg is None]
    if bad_cfg:
        raise ConfigError(bad_cfg[0])
    cfgs = [cfg for _, cfg, _ in entries]
    swept = swept_names(cfgs)
    bad = [k for k in swept if not all(isinstance(c[k], (int, float)) and not isinstance(c[k], bool) for c in cfgs)]
    if bad:
        raise ConfigError(f"-D {bad[0]}: fit sweeps numeric parameters only")
    if not swept:
        raise ConfigError("nothing to fit: sweep at least one parameter (-D NAME=V1,V2, --warps, --stages)")

    def job(c):
        return E.compile_jobs(fn, spec, [c])[0]

    dm = derive_model(job, cfgs, arch=spec.arch, fraction=args.sample,
                      compile=lambda jobs: E.compile_results(jobs))
    sampled = set(dm.sample_index)
    sample = [cfgs[i] for i in sorted(sampled)]
    held = [c for i, c in enumerate(cfgs) if i not in sampled]
    h_res = E.compile_results([job(c) for c in held])
    rows, held_out, err = [], [], {"shared": ([], []), "regs": ([], [])}
    compiled = 0
    for cfg, res in zip(held, h_res):
        row = {k: cfg[k] for k in swept}
        row["shared_pred"], row["shared"] = dm.shared(cfg), res.total_shared
        row["regs_pred"], row["regs"] = dm.regs(cfg), res.n_regs
        row["spill_pred"] = dm.spills(cfg)
        if res.ok:
            compiled += 1
            for t in ("shared", "regs"):
                if row[f"{t}_pred"] is not None:
                    row[f"{t}_err"] = row[t] - row[f"{t}_pred"]
                    err[t][0].append(abs(row[f"{t}_err"]))
                    err[t][1].append(row[t])
        row["status"] = res.status if res.ok else f"{res.status}: {res.message}"
        row["why"] = dm.why_not(cfg) if row["shared_pred"] is None else ""
        rows.append(row)
        held_out.append({"config": dict(cfg), "status": res.status, "message": res.message,
                         "predicted": {"shared": row["shared_pred"], "regs": row["regs_pred"]},
                         "shared": res.total_shared if res.ok else None, "regs": res.n_regs if res.ok else None,
                         "spills": res.n_spills if res.ok else None, "why": row["why"]})
    summ = {t: summary(*err[t], total=compiled) for t in err}
    base = dm.sample[0].cfg
    buffers = [{"buffer": name, "bytes": b, "expression": expr} for name, expr, b in dm.buffers_at(base)]
    expr_rows = [{"quantity": "shared memory (B, static + dynamic)", "expression": dm.expression("shared")},
                 {"quantity": "registers per thread", "expression": dm.expression("regs")}]
    err_rows = [{"quantity": q, **summ[t]} for t, q in (("shared", "shared memory (B)"), ("regs", "registers"))]
    fixed = [k for k in cfgs[0] if k not in swept]
    replay_bad = [s for s in dm.sample if s.replay_error]
    sections = [
        Section(f"Derived model of {fn.name} on {spec.name} (compiled for {spec.arch})",
                [("quantity", "quantity"), ("expression", "expression")], expr_rows,
                [f"swept: {', '.join(swept)}" + (f"; fixed: {', '.join(f'{k}={cfgs[0][k]}' for k in fixed)}"
                                                  if fixed else ""),
                 f"{len(sample)} of {len(cfgs)} configs compiled to derive it ({100 * dm.fraction:.0f} %; "
                 f"{len(dm.sample)} compiled ok); code path decided by: "
                 + (" or ".join(", ".join(s) or "nothing" for s in dm.structural))]
                + [f"allocator replay differs from the compile at {s.cfg}: {s.replay_error}" for s in replay_bad]),
        Section("Shared-memory buffers at the base config "
                + ", ".join(f"{k}={base[k]}" for k in swept),
                [("buffer", "buffer"), ("bytes", "bytes"), ("expression", "expression (B)")], buffers),
        Section(f"Error on the {len(held)} held-out configs (predicted from the model, then compiled to check)",
                [("quantity", "quantity"), ("exact", "exact"), ("answered", "answered"),
                 ("median", "median abs error"), ("worst", "worst abs error"), ("worst_rel", "worst relative")],
                err_rows, ["a refused shared-memory prediction (no answer, reason in the row) counts as not exact"])]
    cols = [(k, k) for k in swept] + [("shared_pred", "shared pred (B)"), ("shared", "shared actual (B)"),
                                      ("shared_err", "error (B)"), ("regs_pred", "regs/thread pred"), ("regs", "regs/thread actual"),
                                      ("regs_err", "error (regs)"), ("status", "status"), ("why", "not covered because")]
    sections.append(Section("Held-out configs", cols, rows))
    ok = [r for r in h_res if r.ok]
    assumptions = [f"triton {h_res[0].triton_version if h_res else '?'}, ptxas "
                   f"{ok[0].ptxas_version if ok else 'not run'}; target {spec.arch}; no GPU involved",
                   "shared memory: every buffer read from the TTGIR after Triton's allocator, its size expressed in "
                   "the swept parameters (simplest exact forms), Triton's allocator replayed on the predicted sizes",
                   "registers: 32-bit words each thread holds across the main loop and loads in it (TTGIR layouts), "
                   "calibrated on the sample by least squares; clamped to 1..255"]
    return Report("fit", sections, assumptions, extra={
        "spec": spec.name, "arch": spec.arch, "kernel": fn.name,
        "fit": {"shared": {"expression": dm.expression("shared"), "structural": [list(s) for s in dm.structural]},
                "regs": {"expression": dm.expression("regs")}},
        "buffers": buffers, "held_out": summ, "sample": sample, "sample_fraction": round(dm.fraction, 4), "configs": held_out})
