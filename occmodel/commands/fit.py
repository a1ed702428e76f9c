"""``occmodel fit``: a shared-memory and register model for a kernel without a card.

Compiles a sample (~35 %, at least a handful) of the -D / --warps / --stages
product for the spec's arch, fits an expression to each quantity
(:mod:`occmodel.fit`), predicts the other configs from it, then compiles those
too to report the fit's error on them (held out: never seen by the fit).
"""

from __future__ import annotations

from . import SUMMARY

import argparse
import statistics

from .. import evidence as E
from ..configs import swept_names
from ..errors import ConfigError
from ..fit import choose_sample, fit_expression
from ..report import Report, Section
from ..spec import load_spec
from . import _configs
from ._args import assignments, define, int_list


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "fit", parents=[common], help=SUMMARY["fit"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="For a @triton.jit function without a card: compile a sample of its config space for the "
                    "spec's arch, fit shared memory and registers as expressions of the swept parameters, predict "
                    "the rest, and measure the fit on those held-out configs (compiled too).",
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
    p.add_argument("--sample", type=float, default=0.35, metavar="FRACTION",
                   help="share of the configs compiled for the fit (default 0.35; at least 6 configs)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample choice (default 0)")
    p.set_defaults(run=run)


def _summary(errors: list[float], actuals: list[int]) -> dict:
    if not errors:
        return {"exact": "n/a", "median": None, "worst": None, "worst_rel": None}
    rel = [e / a for e, a in zip(errors, actuals) if a]
    return {"exact": f"{sum(e < 0.5 for e in errors)}/{len(errors)}", "median": statistics.median(errors),
            "worst": max(errors), "worst_rel": round(max(rel), 4) if rel else None}


def run(args) -> Report:
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

    def jobs(sel):
        return E.compile_jobs(fn, spec, sel)

    idx = choose_sample(cfgs, args.sample, seed=args.seed)
    sample = [cfgs[i] for i in idx]
    s_res = E.compile_results(jobs(sample))
    train = [(c, r) for c, r in zip(sample, s_res) if r.ok]
    if len(train) < 3:
        raise ConfigError(f"only {len(train)} of the {len(sample)} sampled configs compiled; a fit needs 3 or more")
    fits = {t: fit_expression([c for c, _ in train], [getattr(r, a) for _, r in train], swept, t)
            for t, a in (("shared", "total_shared"), ("regs", "n_regs"))}
    held = [c for i, c in enumerate(cfgs) if i not in set(idx)]
    h_res = E.compile_results(jobs(held))
    rows, held_out, err = [], [], {"shared": ([], []), "regs": ([], [])}
    for cfg, res in zip(held, h_res):
        row = {k: cfg[k] for k in swept}
        for t, a in (("shared", "total_shared"), ("regs", "n_regs")):
            pred = round(fits[t].predict(cfg))
            row[f"{t}_pred"], row[t] = pred, getattr(res, a)
            if res.ok:
                row[f"{t}_err"] = getattr(res, a) - pred
                err[t][0].append(abs(getattr(res, a) - pred))
                err[t][1].append(getattr(res, a))
        row["status"] = res.status if res.ok else f"{res.status}: {res.message}"
        rows.append(row)
        held_out.append({"config": dict(cfg), "status": res.status, "message": res.message,
                         "predicted": {"shared": row["shared_pred"], "regs": row["regs_pred"]},
                         "shared": res.total_shared if res.ok else None, "regs": res.n_regs if res.ok else None,
                         "spills": res.n_spills if res.ok else None})
    expr_rows = []
    for t, f in fits.items():
        fitted_on = f"{f.samples - len(f.outliers)} of {f.samples} configs, " + (
            "exact" if f.exact else f"max error {f.sample_max_error:.1f}")
        if f.outliers:
            fitted_on += "; above it: " + "; ".join(
                f"{', '.join(f'{k}={train[i][0][k]}' for k in swept)} ({getattr(train[i][1], 'total_shared')} B)"
                for i in f.outliers)
        expr_rows.append({"quantity": "shared memory (B, static + dynamic)" if t == "shared"
                          else "registers per thread", "expression": str(f.expr), "sample": fitted_on,
                          "loo": round(f.loo_rmse, 2) if f.loo_rmse != float("inf") else None})
    summ = {t: _summary(*err[t]) for t in err}
    err_rows = [{"quantity": q, **summ[t]} for t, q in (("shared", "shared memory (B)"), ("regs", "registers"))]
    fixed = [k for k in cfgs[0] if k not in swept]
    sections = [
        Section(f"Fitted model of {fn.name} on {spec.name} (compiled for {spec.arch})",
                [("quantity", "quantity"), ("expression", "expression"), ("sample", "fitted on"),
                 ("loo", "leave-one-out RMSE")], expr_rows,
                [f"swept: {', '.join(swept)}" + (f"; fixed: {', '.join(f'{k}={cfgs[0][k]}' for k in fixed)}"
                                                  if fixed else ""),
                 f"{len(sample)} of {len(cfgs)} configs compiled for the fit ({len(train)} compiled ok)"]
                + (["configs above the shared-memory expression: another buffer (e.g. an epilogue scratch) wins a "
                    "Max() there; the expression does not model it"] if fits["shared"].outliers else [])),
        Section(f"Error on the {len(held)} held-out configs (predicted from the fit, then compiled to check)",
                [("quantity", "quantity"), ("exact", "exact"), ("median", "median abs error"),
                 ("worst", "worst abs error"), ("worst_rel", "worst relative")], err_rows)]
    cols = [(k, k) for k in swept] + [("shared_pred", "shared pred (B)"), ("shared", "shared actual (B)"),
                                      ("shared_err", "error (B)"), ("regs_pred", "regs/thread pred"),
                                      ("regs", "regs/thread actual"), ("regs_err", "error (regs)"), ("status", "status")]
    sections.append(Section("Held-out configs", cols, rows))
    ok = [r for r in s_res + h_res if r.ok]
    assumptions = [f"triton {s_res[0].triton_version}, ptxas {ok[0].ptxas_version if ok else 'not run'}; "
                   f"target {spec.arch}; no GPU involved",
                   "signature used: " + ", ".join(f"{k}={v}" for k, v in s_res[0].signature.items()),
                   "least squares over products of the swept parameters (x num_stages or Max(1, num_stages-1); "
                   "/ num_warps for registers), terms chosen by forward selection and leave-one-out error"]
    return Report("fit", sections, assumptions, extra={
        "spec": spec.name, "arch": spec.arch, "kernel": fn.name,
        "fit": {t: {"expression": str(f.expr), "terms": list(f.terms), "exact_on_sample": f.exact,
                    "outliers": [dict(train[i][0]) for i in f.outliers]}
                for t, f in fits.items()},
        "held_out": {t: summ[t] for t in summ}, "sample": [dict(c) for c in sample], "configs": held_out})
