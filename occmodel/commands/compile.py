"""``occmodel compile``: what Triton and ptxas really produce for the spec's arch, no GPU.

Two modes, told apart by what --kernel names:
* a kernel card with a hand model (default: decode_attention at its baseline):
  baseline and one candidate compiled, actual vs predicted per field with the
  error, the premise decided from the compiled evidence (occmodel.evidence), and
  with --pipeline the pipelining report;
* a bare ``@triton.jit`` function (file.py:fn or module:fn) with --signature or
  --args: one row per config of the -D / --warps / --stages product.
A failing compile is a row with its status (exit 0); bad input exits 2.
"""

from __future__ import annotations

from . import SUMMARY

import argparse

from .. import evidence as E
from .. import pipeline as P
from ..configs import plain, swept_names
from ..errors import ConfigError
from ..report import Report, Section, fmt_occupancy
from ..spec import load_spec
from . import _configs


def add_parser(subs, common) -> None:
    p = subs.add_parser(
        "compile", parents=[common], help=SUMMARY["compile"],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compile with Triton for the spec's arch (no GPU needed) and read shared memory, registers "
                    "and spills from the cubin; occupancy from those real numbers. For a kernel card: baseline "
                    "and candidate, actual vs predicted with the error. For your own @triton.jit function: pass "
                    "--kernel path/to/file.py:fn and --signature; --warps, --stages and -D take comma lists.",
        epilog="examples:\n"
               "  occmodel compile --warps 8 --stages 3               # decode_attention on sm_120\n"
               "  occmodel compile --stages 3 --pipeline --spec sm_90  # which loads are pipelined, how deep\n"
               "  occmodel compile --kernel my.py:add_kernel --signature '*fp16:16,*fp16:16,*fp16:16,i32' \\\n"
               "      -D BLOCK=1024,2048 --warps 4,8 --stages 2,3\n"
               "  occmodel compile --kernel my.py:add_kernel --args my.py:example_args -D BLOCK=1024 --pipeline")
    _configs.add_config_args(p, sweep=True)
    p.add_argument("--pipeline", action="store_true",
                   help="add the pipelining report: which loads of the main loop Triton pipelined, how many "
                        "buffers deep, and loop iterations per CTA against that depth")
    p.set_defaults(run=run)


def run(args) -> Report:
    spec = load_spec(args.spec)
    card = _configs.kernel(args)
    carveout = _configs.check_carveout(args.carveout)
    if card.kind == "card" and card.has_model(spec.compute_capability, _configs.baseline(card, args)):
        return _card(args, spec, card, carveout)
    return _sweep(args, spec, card, carveout)


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
    cfgs = [base_cfg, cand_cfg]
    acts = E.compiled(card, spec, cfgs, carveout)
    preds = E.modelled(card, spec, cfgs, carveout)
    results = [a.result for a in acts]
    fields = [("shared memory per block, static + dynamic (B)", "shared", False),
              ("registers per thread", "regs", True),
              ("spills (registers; local bytes / 4)", None, False),
              ("resident blocks per SM", "blocks_per_sm", False),
              ("resident warps per SM", "warps_per_sm", False),
              ("occupancy", "occupancy", False),
              ("binding limit", "limiter", False)]
    rows = []
    for label, key, rel in fields:
        row = {"metric": label}
        for who, p, a in (("base", preds[0], acts[0]), ("cand", preds[1], acts[1])):
            if key is None:                     # spills: predicted = the estimate exceeds 255
                pv = "yes" if p.spills_predicted else "no"
                av = a.spills
                err = None if av is None else ("hit" if (pv == "yes") == (av > 0) else "miss")
            else:
                pv, av = _value(p, key), _value(a, key)
                if key == "regs":
                    pv = p.regs_estimate
                err = _err(pv, av, rel)
                if key == "occupancy":             # one format for people: a percent (points for the error)
                    pv, av = fmt_occupancy(pv), fmt_occupancy(av)
                    err = err if err in (None, "=") else err.rstrip("%") + " points"
            row.update({f"{who}_pred": pv, f"{who}_actual": av, f"{who}_error": err})
        rows.append(row)
    rows.append({"metric": "compile status", "base_actual": _status(acts[0]), "cand_actual": _status(acts[1])})
    cols = [("metric", "metric"), ("base_pred", "baseline predicted"), ("base_actual", "baseline actual"),
            ("base_error", "error"), ("cand_pred", "candidate predicted"), ("cand_actual", "candidate actual"),
            ("cand_error", "error")]
    title = f"{card.name} on {spec.name} (compiled for {spec.arch}): actual vs predicted"
    sections = [Section(title, cols, rows, [
        "baseline: " + ", ".join(f"{k}={v}" for k, v in base_cfg.items()),
        "error = actual - predicted (relative to actual); spills are predicted when the register estimate exceeds 255",
        STATUS_NOTE])]
    sections.append(_premise(card, spec, acts, carveout))
    if args.pipeline:
        sections += _pipeline_sections(card, cfgs, [a.pipeline for a in acts])
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
    configs = [{**_config_dict(a), "predicted": p.as_dict()} for a, p in zip(acts, preds)]
    return Report("compile", sections, assumptions,
                  extra={"spec": spec.name, "arch": spec.arch, "kernel": card.name, "baseline": configs[0],
                         "candidate": configs[1], "configs": configs, "results": [r.as_dict() for r in results]})


RESERVED_NOTE = ("static (B): the kernel's own static shared memory. cuobjdump can show {reserved:,} B more "
                 "(SHARED:{reserved} for a kernel with none on {spec}): that is the window the driver reserves in "
                 "every block, not the kernel's; it is left out here and counted once, by the occupancy rules "
                 "(+{reserved:,} B per block)")
STATUS_NOTE = ("status: ok; spills (fits, but registers spill to local memory); over limit (shared memory "
               "above the per-block opt-in limit); no block fits (registers or threads); or the compiler's "
               "failure status (message says why)")


def _config_dict(ev: E.Evidence) -> dict:
    """The typed object of one compiled config (JSON ``configs``): its numbers and the compiler's."""
    res = ev.result
    return {**ev.as_dict(), "local_bytes": getattr(res, "local_bytes", None),
            "compile_status": getattr(res, "status", None), "message": getattr(res, "message", "") or ev.reason}


def _value(ev: E.Evidence, key: str):
    if key == "occupancy":
        return round(ev.occupancy.occupancy, 4) if ev.occupancy else None
    return getattr(ev, key)


def _status(ev: E.Evidence) -> str:
    res = ev.result
    return ev.outcome if res.ok else f"{res.status}: {res.message}"


def _premise(card, spec, acts, carveout) -> Section:
    from .predict import premise_section
    base, cand = acts
    if base.config == cand.config:
        return premise_section([])
    prems, _, _ = E.premises(card, spec, base.config, cand.config, compile=True, carveout=carveout)
    return premise_section(prems)


def _load_rows(who: str, rep) -> list[dict]:
    """One row per load of every scf.for loop (the main loop marked)."""
    rows = []
    main = rep.main if rep else None
    for i, lp in enumerate(rep.loops if rep else ()):
        loop = f"{i}{' (main)' if lp is main else ''}" + (f" {lp.where}" if lp.where else "")
        for ld in lp.loads:
            notes = ["in an scf.if region"] if ld.in_branch else []
            if ld.rings > 1:
                notes.append(f"staged {ld.rings}x (once per consumer layout)")
            rows.append({"config": who, "loop": loop, "load": ld.name, "where": ld.where, "kind": ld.kind,
                         "pipelined": ld.pipelined, "buffers": ld.buffers, "ahead": ld.ahead, "tile": ld.tile,
                         "bytes": ld.slot_bytes, "note": "; ".join(notes)})
        if not lp.loads:
            rows.append({"config": who, "loop": loop, "load": "-", "note": "no loads in this loop"})
    if not rows:
        rows.append({"config": who, "load": "-", "note": "no TTGIR (compile failed)" if rep is None
                     else "no scf.for loop in the kernel"})
    return rows


def _pipeline_sections(card, cfgs, reports, names=("baseline", "candidate")) -> list[Section]:
    rows, notes = [], []
    for who, rep, cfg in zip(names, reports, cfgs):
        rows += _load_rows(f"{who} (S={cfg['num_stages']})", rep)
        if rep and rep.main:
            m = rep.main
            conflicts = m.conflicts()
            notes.append(f"{who}: main loop {m.where or '?'}; its async_wait leaves "
                         f"{'-' if m.wait_groups is None else m.wait_groups} of {m.groups_per_iteration} "
                         "copy groups per iteration in flight" + (
                             "; shared-memory bank conflicts: " + ", ".join(conflicts) if conflicts else ""))
    cols = [("config", "config"), ("loop", "loop"), ("load", "load"), ("where", "source"), ("kind", "kind"),
            ("buffers", "buffers"), ("ahead", "tiles ahead"), ("tile", "slot"), ("bytes", "slot bytes"),
            ("note", "note")]
    out = [Section("Pipelining of every loop (from the TTGIR)", cols, rows,
                   notes + ["buffers: depth of the shared-memory ring; tiles ahead = buffers - 1 can be in "
                            "flight while one is consumed; plain: a tt.load Triton did not pipeline; main: the "
                            "innermost loop with a dot, else the one with most loads"])]
    fill = []
    for who, rep, cfg in zip(names, reports, cfgs):
        if rep is None or not card.default_points:
            continue
        fill += [dict(r, config=who) for r in P.fill_rows(card, cfg, rep, card.default_points)]
    if fill:
        out.append(Section("Loop iterations per CTA against the pipeline depth (the kernel's workload points)",
                           [("config", "config"), ("point", "point"), ("ctas", "CTAs"),
                            ("iterations", "iterations/CTA"), ("ahead", "tiles ahead"),
                            ("prologue_share", "prologue share"), ("note", "note")], fill))
    return out


# ------------------------------------------------------------ sweeps
def _sweep(args, spec, card, carveout) -> Report:
    base = _configs.baseline(card, args)
    entries = _configs.sweep(card, base, args)
    bad = [(asked, err) for asked, cfg, err in entries if cfg is None]
    if bad:
        raise ConfigError(bad[0][1])
    cfgs = [cfg for _, cfg, _ in entries]
    evs = E.compiled(card, spec, cfgs, carveout)
    results = [ev.result for ev in evs]
    swept = [k for k in (list(entries[0][0]) if entries else []) if k in cfgs[0]]
    keys = swept or swept_names(cfgs)
    rows = []
    for cfg, ev in zip(cfgs, evs):
        res = ev.result
        row = {k: plain(cfg[k]) for k in keys}
        row.update(shared=ev.shared, static=ev.static_shared, regs=ev.regs, spills=ev.spills,
                   blocks_per_sm=ev.blocks_per_sm, warps_per_sm=ev.warps_per_sm,
                   occupancy=round(ev.occupancy.occupancy, 4) if ev.occupancy else None,
                   limiter=ev.limiter, status=ev.outcome, message=res.message or ev.reason)
        if args.pipeline and ev.pipeline is not None:
            row["pipelined"] = "; ".join(
                f"loop {i} ({lp.where or '?'}): " + (", ".join(
                    f"{ld.name} {ld.kind}" + (f" x{ld.buffers}" if ld.pipelined else "") for ld in lp.loads)
                    or "no loads")
                for i, lp in enumerate(ev.pipeline.loops)) or "no loop"
            conflicts = ev.pipeline.main.conflicts() if ev.pipeline.main is not None else []
            if conflicts:
                row["pipelined"] += "; bank conflicts: " + ", ".join(conflicts)
        rows.append(row)
    cols = [(k, k) for k in keys] + [
        ("shared", "shared (B)"), ("static", "of which static (B)"), ("regs", "regs/thread"),
        ("spills", "spills (regs)"), ("blocks_per_sm", "blocks/SM"), ("warps_per_sm", "warps/SM"), ("occupancy", "occupancy"),
        ("limiter", "limiter"), ("status", "status")] + (
        [("pipelined", "loops: loads (ring depth)")] if args.pipeline else []) + [("message", "message")]
    ok = [r for r in results if r.ok]
    fixed = [k for k in cfgs[0] if k not in keys]
    assumptions = [
        f"triton {results[0].triton_version}, ptxas {ok[0].ptxas_version if ok else 'not run'}; target "
        f"{spec.arch} (spec {spec.name}); no GPU involved",
        f"launch specialization: {card.specialization or 'as the card signature states'}",
        "signature used: " + ", ".join(f"{k}={v}" for k, v in results[0].signature.items()),
        "shared = static + dynamic shared memory of one block; occupancy from the cubin's registers and that; "
        f"carveout {'driver default' if carveout is None else f'{carveout}%'}"]
    title = f"{card.name} on {spec.name} (compiled for {spec.arch}): {len(rows)} config(s)"
    notes = [f"fixed: {', '.join(f'{k}={plain(cfgs[0][k])}' for k in fixed)}"] if fixed else []
    if spec.sm.reserved_shared_memory_per_block:
        notes.append(RESERVED_NOTE.format(reserved=spec.sm.reserved_shared_memory_per_block, spec=spec.name))
    notes.append(STATUS_NOTE)
    failed = sum(not r.ok for r in results)
    if failed:
        notes.append(f"{failed} config(s) failed to compile: their status and message are in the row")
    sections = [Section(title, cols, rows, notes)]
    if args.pipeline and len(cfgs) == 1 and evs[0].pipeline is not None:
        sections += _pipeline_sections(card, cfgs[:1], [evs[0].pipeline], ("config",))
    return Report("compile", sections, assumptions,
                  extra={"spec": spec.name, "arch": spec.arch, "kernel": card.name, "source": E.COMPILED,
                         "configs": [_config_dict(ev) for ev in evs], "results": [r.as_dict() for r in results]})
