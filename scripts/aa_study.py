"""A/A study on a GPU: the baseline validated against itself, many times.

Each repetition is one full validation of "candidate = baseline" at a workload
point, with the same machinery `occmodel validate` uses: `--rounds` rounds split
over `--blocks` independent blocks (gpu.time_blocks: fresh memory, input sets and
CUDA graphs per block, re-warm, random order per round); baseline A and A' are two
instances of the baseline config, the candidate a third (each its own CUDA graph
over the block's input sets, as validate times every config of a problem on the
same inputs); then stats.compare gives the verdict. A sound noise band makes
(nearly) all of them INCONCLUSIVE; the study reports how many were, and the bands,
ratios and within/between-block components seen.

    python scripts/aa_study.py --kernel decode_attention --spec sm_90 --points C=8,64 -D ctx=8192 \
        --repeats 20 --out reports/aa_study_h200
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from occmodel import gpu
from occmodel.card import load_card
from occmodel.stats import DEFAULT_BLOCKS, INCONCLUSIVE, block_schedule, compare, split_rounds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="decode_attention")
    ap.add_argument("--points", default="C=8,64", help="NAME=V1,V2 (one workload axis)")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="fixed workload parameter NAME=V")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=30, help="rounds per repetition in all, split over --blocks")
    ap.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    gpu.require_gpu()
    card = load_card(args.kernel)
    cfg = card.resolve()
    axis, _, values = args.points.partition("=")
    fixed = dict(d.split("=", 1) for d in args.defines)
    env = gpu.device_info()
    l2 = env.get("l2_bytes") or 50 * 2**20
    t0 = time.perf_counter()
    rows = []
    for value in values.split(","):
        point = card.resolve_point({**fixed, axis: value})
        names = ["baseline", "baseline'", "candidate"]
        for rep in range(args.repeats):
            def build(b, point=point, rep=rep):     # fresh input sets per block, shared by the three instances
                sets = gpu.input_sets(card, cfg, point, l2, seed=100 + 1000 * b + 100000 * rep)
                return {n: gpu.Bench(lambda s: card.launch(s, cfg), sets, flush_bytes=2 * l2) for n in names}
            schedule = block_schedule(names, split_rounds(args.rounds, args.blocks), seed=rep)
            t = gpu.time_blocks(build, schedule, seed=rep)
            o = compare(t["baseline"], t["baseline'"], t["candidate"], seed=rep)
            rows.append({"point": point, "repeat": rep, "ratio": o.ratio, "ci_low": o.ci_low,
                         "ci_high": o.ci_high, "band": o.band, "spread": o.base_spread,
                         "within_sd": o.within_sd, "between_sd": o.between_sd, "aa_within_sd": o.aa_within_sd,
                         "aa_between_sd": o.aa_between_sd, "median_us": o.base_median_s * 1e6,
                         "verdict": o.verdict})
            print(f"{point} #{rep}: ratio {o.ratio:.4f} CI {o.ci_low:.4f}..{o.ci_high:.4f} "
                  f"band +-{100 * o.band:.2f}% within {100 * o.within_sd:.2f}% between "
                  f"{100 * o.between_sd:.2f}% -> {o.verdict}", flush=True)
    n_inc = sum(r["verdict"] == INCONCLUSIVE for r in rows)
    summary = {"kernel": card.name, "config": cfg, "repeats": len(rows), "inconclusive": n_inc,
               "inconclusive_rate": n_inc / len(rows),
               "median_band": statistics.median(r["band"] for r in rows),
               "max_abs_delta": max(abs(r["ratio"] - 1) for r in rows),
               "median_spread": statistics.median(r["spread"] for r in rows),
               "median_between_sd": statistics.median(r["between_sd"] for r in rows),
               "median_within_sd": statistics.median(r["within_sd"] for r in rows),
               "rounds": args.rounds, "blocks": args.blocks, "env": env, "device_seconds": time.perf_counter() - t0,
               "command": "python " + " ".join(sys.argv)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "env"}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
