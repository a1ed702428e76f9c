"""A/A study on a GPU: the baseline validated against itself, many times.

Each repetition is one full validation of "candidate = baseline" at a workload
point, with the same machinery `occmodel validate` uses: the candidate is an
independent instance of the baseline config (its own CUDA graph over the same
input sets, as validate times every config of a problem on the same inputs),
timed interleaved with baseline A and A' over `--rounds` rounds, then
stats.compare gives the verdict. A sound noise band makes (nearly) all of them
INCONCLUSIVE; the study reports how many were, and the bands and ratios seen.

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
from occmodel.stats import INCONCLUSIVE, compare


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="decode_attention")
    ap.add_argument("--points", default="C=8,64", help="NAME=V1,V2 (one workload axis)")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="fixed workload parameter NAME=V")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=15)
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
        sets = gpu.input_sets(card, cfg, point, l2, seed=100)     # shared, as validate shares them
        benches = [gpu.Bench(lambda s: card.launch(s, cfg), sets, flush_bytes=2 * l2) for _ in range(2)]
        for rep in range(args.repeats):
            a, a2, b = [], [], []
            for _ in range(args.rounds):
                a.append(benches[0].sample())
                b.append(benches[1].sample())
                a2.append(benches[0].sample())
            o = compare(a, a2, b, seed=rep)
            rows.append({"point": point, "repeat": rep, "ratio": o.ratio, "ci_low": o.ci_low,
                         "ci_high": o.ci_high, "band": o.band, "spread": o.base_spread,
                         "median_us": o.base_median_s * 1e6, "verdict": o.verdict})
            print(f"{point} #{rep}: ratio {o.ratio:.4f} CI {o.ci_low:.4f}..{o.ci_high:.4f} "
                  f"band +-{100 * o.band:.2f}% -> {o.verdict}", flush=True)
    n_inc = sum(r["verdict"] == INCONCLUSIVE for r in rows)
    summary = {"kernel": card.name, "config": cfg, "repeats": len(rows), "inconclusive": n_inc,
               "inconclusive_rate": n_inc / len(rows),
               "median_band": statistics.median(r["band"] for r in rows),
               "max_abs_delta": max(abs(r["ratio"] - 1) for r in rows),
               "median_spread": statistics.median(r["spread"] for r in rows),
               "rounds": args.rounds, "env": env, "device_seconds": time.perf_counter() - t0,
               "command": "python " + " ".join(sys.argv)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, default=str))
    print(json.dumps({k: v for k, v in summary.items() if k != "env"}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
