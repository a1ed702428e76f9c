#!/usr/bin/env python
"""Check the built-in cards' models against real compiles, over each card's whole sweep.

For every card, arch and config of ``CARD.sweep()``: compile the kernel for that arch
(no GPU needed; results cached by occmodel.compile), and compare

* predicted shared memory (the card's sympy expression) with Triton's metadata.shared
  -- the target is an exact match;
* the register estimate with ptxas's register count (read from the cubin) -- an
  estimate; its median and worst error are reported.

    python scripts/check_shared_model.py                       # all cards, sm_120 sm_90 sm_80 sm_100
    python scripts/check_shared_model.py --card matmul --arch sm_90 --full
    python scripts/check_shared_model.py --json rows.json --jobs 8

Exit status 1 if any shared-memory prediction is off (or a compile fails).
CI runs a representative subset of this (tests/test_card_shared_model.py); this
script is the full check, a few minutes per card and arch on two cores the first
time (cached afterwards).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor

CARDS = ("decode_attention", "decode_attention_nopipe", "matmul")
ARCHS = ("sm_120", "sm_90", "sm_80", "sm_100")


def _card(name: str):
    return importlib.import_module(f"occmodel.kernels.{name}").CARD


def _compile(job: tuple[str, str, dict]) -> dict:
    name, arch, cfg = job
    from occmodel.compile import compile_kernel
    card = _card(name)
    res = compile_kernel(card.kernel, signature=card.signature(cfg), constexprs=card.constexprs(cfg), arch=arch,
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return {"status": res.status, "message": res.message, "shared": res.shared, "n_regs": res.n_regs,
            "n_spills": res.n_spills}


def _label(card, cfg: dict) -> str:
    base = card.resolve()
    keys = [k for k in cfg if cfg[k] != base.get(k) or k in ("num_warps", "num_stages")]
    tunables = [p.name for p in card.params if p.tunable] + ["num_warps", "num_stages"]
    keys = [k for k in tunables if k in cfg]
    return " ".join(f"{k}={cfg[k]}" for k in keys if k != "TARGET_CTAS" and k != "GROUP_M")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--card", action="append", choices=CARDS, help="card(s) to check (default: all)")
    ap.add_argument("--arch", action="append", help=f"arch(s) (default: {' '.join(ARCHS)})")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel compiles")
    ap.add_argument("--full", action="store_true", help="print every config, not only mismatches")
    ap.add_argument("--json", metavar="PATH", help="write every row to this JSON file")
    args = ap.parse_args(argv)

    from occmodel.model import predict_many
    from occmodel.spec import load_spec

    cards = args.card or list(CARDS)
    archs = args.arch or list(ARCHS)
    jobs, meta = [], []
    for name in cards:
        card = _card(name)
        for arch in archs:
            spec = load_spec(arch)
            cfgs = card.sweep()
            pred = predict_many(card, spec, cfgs)
            for i, cfg in enumerate(cfgs):
                jobs.append((name, arch, cfg))
                meta.append((int(pred["shared"][i]), int(pred["regs_estimate"][i])))
    t0 = time.time()
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(_compile, jobs, chunksize=4))
    else:
        results = [_compile(j) for j in jobs]

    rows = []
    for (name, arch, cfg), (p_shared, p_regs), res in zip(jobs, meta, results):
        rows.append({"card": name, "arch": arch, "config": cfg, "pred_shared": p_shared, "pred_regs": p_regs, **res})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)

    bad = 0
    print(f"{len(rows)} compiles in {time.time() - t0:.0f} s (triton {__import__('triton').__version__})\n")
    summary = []
    for name in cards:
        card = _card(name)
        for arch in archs:
            sel = [r for r in rows if r["card"] == name and r["arch"] == arch]
            ok = [r for r in sel if r["status"] == "ok"]
            exact = [r for r in ok if r["shared"] == r["pred_shared"]]
            clean = [r for r in ok if not r["n_spills"]]          # a spilling compile's n_regs says little
            errs = [min(r["pred_regs"], 255) - r["n_regs"] for r in clean]
            rel = [abs(e) / r["n_regs"] for e, r in zip(errs, clean)]
            agree = sum(1 for r in ok if (r["pred_regs"] > 255) == bool(r["n_spills"]))
            summary.append((name, arch, len(sel), len(exact), len(sel) - len(ok), len(clean),
                            statistics.median(abs(e) for e in errs) if errs else 0,
                            max(errs, key=abs) if errs else 0,
                            100 * statistics.median(rel) if rel else 0, 100 * max(rel) if rel else 0,
                            sum(1 for r in ok if r["n_spills"]), agree))
            shown = sel if args.full else [r for r in sel if r["status"] != "ok" or r["shared"] != r["pred_shared"]]
            if shown:
                print(f"== {name} on {arch}")
                print(f"   {'config':<58} {'predicted':>9} {'actual':>9}    {'regs est':>8} {'n_regs':>6} {'spills':>6}")
                for r in shown:
                    mark = "  " if r["status"] == "ok" and r["shared"] == r["pred_shared"] else "XX"
                    actual = r["shared"] if r["status"] == "ok" else r["status"]
                    print(f"{mark} {_label(card, r['config']):<58} {r['pred_shared']:>9} {actual!s:>9}    "
                          f"{r['pred_regs']:>8} {r['n_regs']!s:>6} {r['n_spills']!s:>6}")
                print()
            bad += len(sel) - len(exact)

    print(f"{'card':<24} {'arch':<7} {'configs':>7} {'shared exact':>13} {'failed':>6} | {'no spill':>8} "
          f"{'regs |err| med':>14} {'worst':>6} {'rel med':>7} {'rel worst':>9} | {'spilling':>8} {'spill pred ok':>13}")
    for name, arch, n, ex, failed, nclean, med, worst, rmed, rworst, spills, agree in summary:
        print(f"{name:<24} {arch:<7} {n:>7} {ex:>6} ({100 * ex / max(n, 1):3.0f}%) {failed:>6} | {nclean:>8} "
              f"{med:>14.1f} {worst:>+6d} {rmed:>6.1f}% {rworst:>8.1f}% | {spills:>8} {agree:>6}/{n - failed}")
    print("\nregs: the estimate (capped at 255) against ptxas, over the configs that do not spill; "
          "spill pred ok: estimate > 255 exactly when ptxas spills")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
