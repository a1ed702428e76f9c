"""Benchmark: predict a 10,000-config sweep of a kernel card (target: under 1 s on 2 cores).

    python benchmarks/bench_predict_sweep.py [--kernel decode_attention] [--spec sm_120] [--repeats 5]

Configs: the product of num_warps {1,2,4,8,16} x num_stages 1..10 x the card's
tunable power-of-two block parameters over their allowed values, repeated with
other problem sizes until 10,000 distinct-or-repeated configs are reached. Times
`predict_many` (expression evaluation + exact occupancy) and, separately, the
validation of the 10,000 config dicts (`card.resolve`). Median of --repeats runs.
"""

import argparse
import itertools
import statistics
import time

from occmodel.card import load_card
from occmodel.model import predict_many
from occmodel.spec import load_spec


def sweep_configs(card, n):
    axes = {"num_warps": [1, 2, 4, 8, 16], "num_stages": list(range(1, 11))}
    for p in card.params:
        if p.tunable and p.choices and not isinstance(p.default, str):
            axes[p.name] = list(p.choices)
    combos = [dict(zip(axes, c)) for c in itertools.product(*axes.values())]
    out = []
    for combo in itertools.cycle(combos):
        try:
            out.append(card.resolve(combo))
        except Exception:
            continue
        if len(out) == n:
            return out, axes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="decode_attention")
    ap.add_argument("--spec", default="sm_120")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    card, spec = load_card(args.kernel), load_spec(args.spec)
    t0 = time.perf_counter()
    cfgs, axes = sweep_configs(card, args.n)
    t_resolve = time.perf_counter() - t0
    predict_many(card, spec, cfgs[:10])                      # warm-up: builds the lambdified expressions
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out = predict_many(card, spec, cfgs)
        times.append(time.perf_counter() - t0)
    print(f"{len(cfgs):,} configs of {card.name} on {spec.name} (axes: {', '.join(axes)}): "
          f"predict median {statistics.median(times) * 1e3:.0f} ms (min {min(times) * 1e3:.0f}, "
          f"max {max(times) * 1e3:.0f}; {args.repeats} runs); building/validating the configs "
          f"{t_resolve * 1e3:.0f} ms; {int(out['fits'].sum()):,} fit")


if __name__ == "__main__":
    main()
