"""``occmodel compile``: what Triton and ptxas really produce for the spec's arch, no GPU.

Two modes, told apart by what --kernel names:
* a kernel card (default: decode_attention at its baseline): baseline and one
  candidate compiled, actual vs predicted per field with the error, the premise
  checked on the compiled numbers (and on the TTGIR's pipelining for a
  num_stages change), and with --pipeline the pipelining report;
* a bare ``@triton.jit`` function (file.py:fn or module:fn) with --signature:
  one row per config of the -D / --warps / --stages product.
A failing compile is a row with its status (exit 0); bad input exits 2.
"""

from __future__ import annotations

import argparse

from .. import pipeline as P
from ..card import KernelCard
from ..errors import ConfigError
from ..premise import Prefetch, static_premise
from ..report import Report, Section
from ..spec import load_spec
from . import _configs
from .compiled_columns import actual, compile_configs, compile_jobs, model_values


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "compile", parents=[common], help="compile for the spec's arch (no GPU): actual vs predicted",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compile with Triton for the spec's arch (no GPU needed) and read shared memory, registers "
                    "and spills from the cubin; occupancy from those real numbers. For a kernel card: baseline "
                    "and candidate, actual vs predicted with the error. For your own @triton.jit function: pass "
                    "--kernel path/to/file.py:fn and --signature; --warps, --stages and -D take comma lists.",
        epilog="examples:\n"
               "  occmodel compile --warps 8 --stages 3               # decode_attention on sm_120\n"
               "  occmodel compile --stages 3 --pipeline --spec sm_90  # which loads are pipelined, how deep\n"
               "  occmodel compile --kernel my.py:add_kernel --signature '*fp16:16,*fp16:16,*fp16:16,i32' \\\n"
               "      -D BLOCK=1024,2048 --warps 4,8 --stages 2,3")
    _configs.add_config_args(p, sweep=True)
    p.add_argument("--signature", default=None, metavar="TYPES",
                   help="bare kernels: Triton AOT types of the runtime parameters, positional "
                        "('*fp16:16,*fp16:16,i32') or NAME=TYPE pairs; ':16' divisible by 16, ':1' equal to 1")
    p.add_argument("--pipeline", action="store_true",
                   help="add the pipelining report: which loads of the main loop Triton pipelined, how many "
                        "buffers deep, and loop iterations per CTA against that depth")
    p.set_defaults(run=run)


def run(args) -> Report:
    spec = load_spec(args.spec)
    target = _configs.load_kernel_arg(args.kernel)
    carveout = _configs.check_carveout(args.carveout)
    if isinstance(target, KernelCard):
        if args.signature is not None:
            raise ConfigError("--signature is for bare @triton.jit kernels; a card states its own signature")
        return _card(args, spec, target, carveout)
    if args.baseline is not None:
        raise ConfigError("--baseline needs a kernel card; for a bare kernel list configs with -D/--warps/--stages")
    return _bare(args, spec, target, carveout)


# ------------------------------------------------------------------ cards
def _one(values, flag: str):
    if values is None or len(values) == 1:
        return values[0] if values else None
    raise ConfigError(f"{flag} {','.join(map(str, values))}: compile compares one candidate with the baseline "
                      "for a card (use `occmodel table --compiled` to sweep)")


def _err(pred, act, rel: bool = False):
    if pred is None or act is None:
        return None
    if isinstance(pred, str) or isinstance(act, str):
        return "=" if pred == act else "differs"
    diff = act - pred
    if isinstance(diff, float):
        return f"{diff:+.1%}" if diff else "="
    text = f"{diff:+,}" if diff else "0"
    return text + (f" ({diff / act:+.0%})" if rel and diff and act else "")


def _card(args, spec, card, carveout) -> Report:
    args.warps, args.stages = _one(args.warps, "--warps"), _one(args.stages, "--stages")
    base_cfg = _configs.baseline(card, args)
    cand_cfg = _configs.candidate(card, base_cfg, args)
    stages_only = {k for k in cand_cfg if cand_cfg[k] != base_cfg[k]} == {"num_stages"}
    keep_ir = args.pipeline or stages_only
    results = compile_configs(card, spec, [base_cfg, cand_cfg], keep_ir=keep_ir)
    preds = model_values(card, spec, [base_cfg, cand_cfg], carveout)
    acts = [actual(spec, r, c["num_warps"], carveout) for r, c in zip(results, (base_cfg, cand_cfg))]
    fields = [("shared memory per block, static + dynamic (B)", "shared", "shared", False),
              ("registers per thread", "regs_estimate", "n_regs", True),
              ("spills (n_spills = local bytes / 4)", None, "n_spills", False),
              ("resident blocks per SM", "blocks_per_sm", "blocks_per_sm", False),
              ("resident warps per SM", "warps_per_sm", "warps_per_sm", False),
              ("occupancy", "occupancy", "occupancy", False),
              ("binding limit", "limiter", "limiter", False)]
    rows = []
    for label, pkey, akey, rel in fields:
        row = {"metric": label}
        for who, p, a in (("base", preds[0], acts[0]), ("cand", preds[1], acts[1])):
            if pkey is None:                     # spills: predicted = the estimate exceeds 255
                est = p["regs_estimate"]
                pv = None if est is None else ("yes" if est > 255 else "no")
                av = None if a["n_spills"] is None else a["n_spills"]
                err = None if pv is None or av is None else ("hit" if (pv == "yes") == (av > 0) else "miss")
            else:
                pv, av = p[pkey], a[akey]
                err = _err(pv, av, rel)
            row.update({f"{who}_pred": pv, f"{who}_actual": av, f"{who}_error": err})
        rows.append(row)
    rows.append({"metric": "compile status", "base_actual": _status(results[0]), "cand_actual": _status(results[1])})
    cols = [("metric", "metric"), ("base_pred", "baseline predicted"), ("base_actual", "baseline actual"),
            ("base_error", "error"), ("cand_pred", "candidate predicted"), ("cand_actual", "candidate actual"),
            ("cand_error", "error")]
    title = f"{card.name} on {spec.name} (compiled for {spec.arch}): actual vs predicted"
    sections = [Section(title, cols, rows, [
        "baseline: " + ", ".join(f"{k}={v}" for k, v in base_cfg.items()),
        "error = actual - predicted (relative to actual); spills are predicted when the register estimate exceeds 255"])]
    reports = [P.analyze(r) if keep_ir and r.ok else None for r in results]
    sections.append(_premise(base_cfg, cand_cfg, preds, acts, reports, stages_only))
    if args.pipeline:
        sections += _pipeline_sections(card, (base_cfg, cand_cfg), reports, results)
    ok = [r for r in results if r.ok]
    assumptions = [
        f"triton {results[0].triton_version}, ptxas {ok[0].ptxas_version if ok else 'not run'}; target "
        f"{spec.arch} (the spec's arch); no GPU involved",
        f"launch specialization: {card.specialization or 'as the card signature states'}",
        "signature used: " + ", ".join(f"{k}={v}" for k, v in results[1].signature.items()),
        "actual occupancy from the cubin's registers and all shared memory of a block (static + dynamic); "
        f"carveout {'driver default' if carveout is None else f'{carveout}%'}",
        "compile: " + ", ".join(f"{w} {'cached' if r.cached else f'{r.compile_seconds:.1f} s'}"
                                for w, r in zip(("baseline", "candidate"), results))]
    return Report("compile", sections, assumptions,
                  extra={"spec": spec.name, "arch": spec.arch, "kernel": card.name, "baseline": base_cfg,
                         "candidate": cand_cfg, "results": [r.as_dict() for r in results]})


def _status(res) -> str:
    return "ok" if res.ok else f"{res.status}: {res.message}"


def _premise(base_cfg, cand_cfg, preds, acts, reports, stages_only) -> Section:
    if all(a["status"] == "ok" for a in acts):
        src, pick = "compiled", [(a["warps_per_sm"], a["shared"]) for a in acts]
    else:
        src, pick = "predicted", [(p["warps_per_sm"] or 0, p["shared"] or 0) for p in preds]
    prefetch = None
    if stages_only and all(reports):
        prefetch = Prefetch(*P.prefetch_change(reports[0], reports[1]))
    prem = static_premise(base_cfg, cand_cfg, base_warps=pick[0][0], cand_warps=pick[1][0],
                          base_shared=pick[0][1], cand_shared=pick[1][1], cand_fits=pick[1][0] > 0,
                          source=src, prefetch=prefetch)
    return Section("Premise this change would test", [("premise", "premise"), ("mechanism", "mechanism"),
                                                      ("why", "why")],
                   [{"premise": prem.claim, "mechanism": prem.mechanism,
                     "why": prem.why + (f"; note: {prem.note}" if prem.note else "")}])


def _load_rows(who: str, rep) -> list[dict]:
    main = rep.main if rep else None
    rows = []
    for ld in (main.loads if main else ()):
        notes = ["in an scf.if region"] if ld.in_branch else []
        if ld.rings > 1:
            notes.append(f"staged {ld.rings}x (once per consumer layout)")
        rows.append({"config": who, "load": ld.name, "where": ld.where, "kind": ld.kind,
                     "pipelined": ld.pipelined, "buffers": ld.buffers, "ahead": ld.ahead, "tile": ld.tile,
                     "bytes": ld.slot_bytes, "note": "; ".join(notes)})
    if not rows:
        rows.append({"config": who, "load": "-", "note": "no TTGIR (compile failed)" if rep is None
                     else "no scf.for loop in the kernel"})
    return rows


def _pipeline_sections(card, cfgs, reports, results) -> list[Section]:
    rows, notes = [], []
    for who, rep, cfg in zip(("baseline", "candidate"), reports, cfgs):
        rows += _load_rows(f"{who} (S={cfg['num_stages']})", rep)
        if rep and rep.main:
            m = rep.main
            notes.append(f"{who}: main loop {m.where or '?'}; its async_wait leaves "
                         f"{'-' if m.wait_groups is None else m.wait_groups} of {m.groups_per_iteration} "
                         "copy groups per iteration in flight")
    cols = [("config", "config"), ("load", "load"), ("where", "source"), ("kind", "kind"),
            ("buffers", "buffers"), ("ahead", "tiles ahead"), ("tile", "slot"), ("bytes", "slot bytes"),
            ("note", "note")]
    out = [Section("Pipelining of the main loop (from the TTGIR)", cols, rows,
                   notes + ["buffers: depth of the shared-memory ring; tiles ahead = buffers - 1 can be in "
                            "flight while one is consumed; plain: a tt.load Triton did not pipeline"])]
    fill = []
    for who, rep, cfg in zip(("baseline", "candidate"), reports, cfgs):
        if rep is None or not card.default_points:
            continue
        try:
            fill += [dict(r, config=who) for r in P.fill_rows(card, cfg, rep, card.default_points)]
        except NotImplementedError:
            return out
    if fill:
        out.append(Section("Loop iterations per CTA against the pipeline depth (the card's workload points)",
                           [("config", "config"), ("point", "point"), ("ctas", "CTAs"),
                            ("iterations", "iterations/CTA"), ("ahead", "tiles ahead"),
                            ("prologue_share", "prologue share"), ("note", "note")], fill))
    return out


# ------------------------------------------------------------ bare kernels
def _bare(args, spec, fn, carveout) -> Report:
    from ..compile_pool import CompileJob
    swept, cfgs = _configs.kernel_sweep(args)
    signature = _configs.signature_arg(args.signature)
    jobs = [CompileJob(fn, signature=signature, arch=spec.arch, num_warps=c["num_warps"],
                       num_stages=c["num_stages"], keep_ir=args.pipeline,
                       constexprs={k: v for k, v in c.items() if k not in ("num_warps", "num_stages")})
            for c in cfgs]
    results = compile_jobs(jobs)
    rows = []
    for cfg, res in zip(cfgs, results):
        a = actual(spec, res, cfg["num_warps"], carveout)
        row = {k: _plain(cfg[k]) for k in cfg}
        row.update(shared=a["shared"], static=a["static_shared"], regs=a["n_regs"], spills=a["n_spills"],
                   blocks_per_sm=a["blocks_per_sm"], warps_per_sm=a["warps_per_sm"], occupancy=a["occupancy"],
                   limiter=a["limiter"], status=res.status, message=res.message or a.get("reason", ""))
        if args.pipeline and res.ok:
            rep = P.analyze(res)
            row["pipelined"] = "; ".join(f"{ld.name} ({ld.where}): {ld.kind}" + (
                                         f" x{ld.buffers}" if ld.pipelined else "")
                                         for ld in (rep.main.loads if rep.main else ())) or "no loop"
        rows.append(row)
    keys = list(cfgs[0])
    cols = [(k, k) for k in keys] + [
        ("shared", "shared (B)"), ("static", "of which static"), ("regs", "regs"), ("spills", "spills"),
        ("blocks_per_sm", "blocks/SM"), ("warps_per_sm", "warps/SM"), ("occupancy", "occupancy"),
        ("limiter", "limiter"), ("status", "status")] + (
        [("pipelined", "main-loop loads")] if args.pipeline else []) + [("message", "message")]
    ok = [r for r in results if r.ok]
    fixed = [k for k in keys if k not in swept]
    assumptions = [
        f"triton {results[0].triton_version}, ptxas {ok[0].ptxas_version if ok else 'not run'}; target "
        f"{spec.arch} (spec {spec.name}); no GPU involved",
        "signature used: " + ", ".join(f"{k}={v}" for k, v in results[0].signature.items()),
        "shared = static + dynamic shared memory of one block; occupancy from the cubin's registers and that; "
        f"carveout {'driver default' if carveout is None else f'{carveout}%'}"]
    title = f"{fn.__name__} on {spec.name} (compiled for {spec.arch}): {len(rows)} config(s)"
    notes = [f"fixed: {', '.join(f'{k}={_plain(cfgs[0][k])}' for k in fixed)}"] if fixed else []
    failed = sum(not r.ok for r in results)
    if failed:
        notes.append(f"{failed} config(s) failed to compile: their status and message are in the row")
    return Report("compile", [Section(title, cols, rows, notes)], assumptions,
                  extra={"spec": spec.name, "arch": spec.arch, "kernel": fn.__name__,
                         "results": [r.as_dict() for r in results]})


def _plain(value):
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)
