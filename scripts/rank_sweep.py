"""Does the static throughput model (occmodel.rank) rank configs the way a GPU does?

On a CUDA GPU, for decode_attention and matmul: >= 40 valid configs each, three workload
points each; every config timed with validate's machinery (occmodel.gpu.Bench: CUDA-graph
replays after an L2 flush, shared input sets; median of --samples), every config estimated
(compiled resources: real n_regs / shared / spills and the TTGIR's ring depth), then per
(kernel, point): Spearman's rank correlation and whether the measured best is in the
estimate's top 3 -- with the measured calibration, with the datasheet figures, and (an
in-sample diagnostic, said so) with the latency that would have ranked best.

    PYTHONPATH=$PWD python3 scripts/rank_sweep.py --out $OUT/rank [--spec sm_90 --product H200]

Writes OUT.json and OUT.md. One failing config (compile, launch, timing) is a row with its
error, never the end of the sweep. Compiles run in parallel: occmodel's AOT compiles
(compile_many) and a pool of GPU processes that launch each config once so Triton's JIT
cache is warm before the timing process launches it.
Importing this module needs no torch (the tests use its pure parts on the CPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from occmodel import calibrate as C  # noqa: E402
from occmodel import rank as R  # noqa: E402
from occmodel.card import load_card  # noqa: E402
from occmodel.spec import load_spec  # noqa: E402

# "development": the points of the first sweep (session 1), whose measurements the current
# model's structure was chosen on; "held-out": measured first after that model was frozen.
DECODE_POINTS = [{"C": 1, "ctx": 8192}, {"C": 8, "ctx": 8192}, {"C": 64, "ctx": 8192}]
MATMUL_POINTS = [{"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 4096},
                 {"M": 128, "N": 8192, "K": 8192}]
DECODE_HELDOUT = [{"C": 2, "ctx": 32768}, {"C": 32, "ctx": 4096}, {"C": 128, "ctx": 2048}]
MATMUL_HELDOUT = [{"M": 2048, "N": 2048, "K": 8192}, {"M": 16384, "N": 1024, "K": 4096},
                  {"M": 512, "N": 4096, "K": 4096}]
SEED_LEVERS = {"baseline": {}, "num_warps=8": {"num_warps": 8}, "num_stages=3": {"num_stages": 3}}
LATENCY_GRID_NS = [400, 600, 800, 1000, 1500, 2000, 3000, 4000, 6000, 8000]


# ------------------------------------------------------------------ configs (pure)
def decode_configs(card) -> list[dict]:
    """BLOCK_T x BLOCK_H x warps x stages, only combinations the card accepts (PAGE_SIZE % BLOCK_T)."""
    out = []
    for t, h, w, s in itertools.product((16, 32, 64), (16, 32), (2, 4, 8), (1, 2, 3, 4)):
        try:
            out.append(card.resolve({"BLOCK_T": t, "BLOCK_H": h, "num_warps": w, "num_stages": s}))
        except Exception:                   # a combination the card rules out
            continue
    return out


def matmul_configs(card) -> list[dict]:
    return [card.resolve({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_warps": w, "num_stages": s})
            for m, n, k, w, s in itertools.product((64, 128), (64, 128, 256), (32, 64), (4, 8), (2, 3, 4))]


def label(cfg: dict, keys: list[str]) -> str:
    return ",".join(f"{k}={cfg[k]}" for k in keys)


def summarize(measured: list[float | None], estimated: list[float], k: int = 3) -> dict[str, Any]:
    """Spearman and top-k hit over the configs with both a measurement and a finite estimate."""
    idx = [i for i, (m, e) in enumerate(zip(measured, estimated)) if m is not None and math.isfinite(e)]
    ms, es = [measured[i] for i in idx], [estimated[i] for i in idx]
    if not idx:
        return {"n": 0, "spearman": None, "best_in_top3": None, "best": None, "best_est_rank": None}
    best = min(range(len(ms)), key=lambda i: ms[i])
    rho = R.spearman(ms, es)
    return {"n": len(idx), "spearman": None if math.isnan(rho) else round(rho, 4),
            "best_in_top3": R.best_in_top(ms, es, k), "best": idx[best],
            "best_est_rank": int(sorted(es).index(es[best]) + 1)}


def with_latency(cal: C.Calibration, latency_ns: float) -> C.Calibration:
    return C.Calibration(**{**cal.as_dict(), "latency_ns": latency_ns, "source": cal.source + f"; latency {latency_ns} ns"})


# ------------------------------------------------------------------ GPU side
def _warm_one(kernel: str, cfg: dict, points: list[dict]) -> str:
    """(worker process) launch cfg once at every point so Triton's disk cache holds its kernels."""
    try:
        import torch
        card = load_card(kernel)
        for pt in points:
            inputs = card.make_inputs(cfg, card.resolve_point(pt), device="cuda")
            card.launch(inputs, cfg)
            torch.cuda.synchronize()
            del inputs
        return ""
    except Exception as exc:  # noqa: BLE001 - a failing config is data
        return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def warm(kernel: str, cfgs: list[dict], points: list[dict], workers: int) -> list[str]:
    """Parallel JIT warm-up; per config '' or the error. A dead pool leaves the rest to the timer."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    errors = [""] * len(cfgs)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
            futs = [pool.submit(_warm_one, kernel, cfg, points) for cfg in cfgs]
            for i, f in enumerate(futs):
                try:
                    errors[i] = f.result(timeout=300)
                except Exception as exc:  # noqa: BLE001
                    errors[i] = f"warm-up worker: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001
        print(f"warm-up pool failed ({type(exc).__name__}); the timing process compiles", file=sys.stderr)
    return errors


def measure(card, cfgs: list[dict], ok: list[bool], points: list[dict], samples: int, l2: int,
            log) -> tuple[list[list[float | None]], list[list[str]]]:
    """times[i][j] (median seconds per launch) and errors[i][j]; None/'...' where it failed."""
    import torch
    from occmodel import gpu
    times = [[None] * len(points) for _ in cfgs]
    errors = [[""] * len(points) for _ in cfgs]
    for j, pt in enumerate(points):
        pt = card.resolve_point(pt)
        t0 = time.time()
        sets = gpu.input_sets(card, cfgs[0], pt, l2, seed=100)
        for i, cfg in enumerate(cfgs):
            if not ok[i]:
                errors[i][j] = "skipped"
                continue
            try:
                bench = gpu.Bench(lambda s, cfg=cfg: card.launch(s, cfg), sets, flush_bytes=2 * l2)
                times[i][j] = sorted(bench.sample() for _ in range(samples))[samples // 2]
                del bench
            except Exception as exc:  # noqa: BLE001 - one config never stops the sweep
                errors[i][j] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                torch.cuda.synchronize()
        del sets
        torch.cuda.empty_cache()
        log(f"{card.name} {pt}: {sum(t[j] is not None for t in times)} configs timed in {time.time() - t0:.1f} s")
    return times, errors


# ------------------------------------------------------------------ one kernel
def run_kernel(kernel: str, spec, product: str | None, cals: dict[str, C.Calibration], samples: int,
               workers: int, l2: int, log, heldout: bool = True) -> dict[str, Any]:
    from occmodel import evidence as E
    card = load_card(kernel)
    cfgs = decode_configs(card) if kernel == "decode_attention" else matmul_configs(card)
    dev, held = ((DECODE_POINTS, DECODE_HELDOUT) if kernel == "decode_attention" else (MATMUL_POINTS, MATMUL_HELDOUT))
    points = [card.resolve_point(p) for p in dev + (held if heldout else [])]
    sets = ["development"] * len(dev) + ["held-out"] * (len(points) - len(dev))
    keys = [k for k in cfgs[0] if len({c[k] for c in cfgs}) > 1]
    t0 = time.time()
    evs = E.compiled(card, spec, cfgs, progress=False)
    compiled = [ev.result for ev in evs]
    ok = [ev.fits for ev in evs]
    log(f"{kernel}: {len(cfgs)} configs compiled for {spec.arch} in {time.time() - t0:.1f} s; {sum(ok)} fit")
    estimates = {name: R.estimate_many(card, spec, cal, cfgs, points, evs, product) for name, cal in cals.items()}
    # the seed's levers, ranked before anything is timed
    seed = {}
    if kernel == "decode_attention":
        for name, change in SEED_LEVERS.items():
            i = next(i for i, c in enumerate(cfgs) if c == card.resolve(change))
            seed[name] = {"index": i, "estimate_us": {n: [round(e.total_s * 1e6, 2) for e in est[i]]
                                                      for n, est in estimates.items()}}
        log(f"seed levers ranked before timing: {json.dumps(seed)}")
    t0 = time.time()
    warm_err = warm(kernel, [c for c, g in zip(cfgs, ok) if g], points, workers)
    log(f"{kernel}: JIT warm-up in {time.time() - t0:.1f} s, {sum(bool(e) for e in warm_err)} failed")
    times, errors = measure(card, cfgs, ok, points, samples, l2, log)
    per_point = []
    for j, pt in enumerate(points):
        meas = [times[i][j] for i in range(len(cfgs))]
        entry = {"point": pt, "set": sets[j], "by_calibration": {}}
        for name, est in estimates.items():
            entry["by_calibration"][name] = summarize(meas, [est[i][j].total_s for i in range(len(cfgs))])
        per_point.append(entry)
    fitted = fit_latency(card, spec, product, cals["measured" if "measured" in cals else "datasheet"],
                         cfgs, points, evs, times)
    if seed:
        for s in seed.values():
            s["measured_us"] = [None if t is None else round(t * 1e6, 2) for t in times[s["index"]]]
    rows = []
    for i, cfg in enumerate(cfgs):
        res = R.resources(card, cfg, points[0], evs[i])
        rows.append({"config": label(cfg, keys), "resources": dataclasses.asdict(res),
                     "compile": compiled[i].status, "blocks_per_sm": evs[i].blocks_per_sm,
                     "n_regs": compiled[i].n_regs, "n_spills": compiled[i].n_spills, "shared": evs[i].shared,
                     "measured_us": [None if t is None else round(t * 1e6, 3) for t in times[i]],
                     "errors": errors[i],
                     "estimates": {n: [_finite_dict(est[i][j].as_dict()) for j in range(len(points))]
                                   for n, est in estimates.items()}})
    return {"kernel": kernel, "keys": keys, "points": points, "per_point": per_point, "seed_levers": seed,
            "fitted_latency": fitted, "configs": rows, "n_measured": sum(any(t is not None for t in r) for r in times)}


def fit_latency(card, spec, product, cal, cfgs, points, evs, times) -> dict[str, Any]:
    """In-sample: the latency on LATENCY_GRID_NS with the best mean Spearman over the points."""
    best = None
    for lat in LATENCY_GRID_NS:
        est = R.estimate_many(card, spec, with_latency(cal, lat), cfgs, points, evs, product)
        rhos = [summarize([times[i][j] for i in range(len(cfgs))], [est[i][j].total_s for i in range(len(cfgs))])
                for j in range(len(points))]
        vals = [r["spearman"] for r in rhos if r["spearman"] is not None]
        mean = sum(vals) / len(vals) if vals else -2
        if best is None or mean > best["mean_spearman"]:
            best = {"latency_ns": lat, "mean_spearman": round(mean, 4), "per_point": rhos}
    return best


def _finite_dict(d: dict) -> dict:
    """inf (a config that does not fit) as None: strict JSON."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


# ------------------------------------------------------------------ report
def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# rank sweep on {doc['env'].get('gpu')} ({doc['spec']})", "",
             f"{doc['wall_s']:.0f} s wall. Calibrations: " + "; ".join(
                 f"**{n}**: {c['bandwidth_gbs']} GB/s, {c['latency_ns']} ns, launch {c['launch_us']} us, "
                 f"L2 {c['l2_bandwidth_gbs']} GB/s, L2 latency {c.get('l2_latency_ns')} ns, shared "
                 f"{c.get('shared_bandwidth_gbs')} GB/s" for n, c in doc["calibrations"].items()), ""]
    for k in doc["kernels"]:
        if "error" in k:
            lines += [f"## {k['kernel']}: failed: {k['error']}", ""]
            continue
        lines += [f"## {k['kernel']}: {k['n_measured']} configs measured", "",
                  "| point | set | calibration | n | Spearman | measured best in est. top 3 | its est. rank |",
                  "|---|---|---|---|---|---|---|"]
        for pp in k["per_point"]:
            pt = ",".join(f"{a}={b}" for a, b in pp["point"].items())
            for name, s in pp["by_calibration"].items():
                lines.append(f"| {pt} | {pp.get('set', '')} | {name} | {s['n']} | {s['spearman']} | "
                             f"{s['best_in_top3']} | {s['best_est_rank']} |")
        f = k["fitted_latency"]
        lines += ["", f"In-sample diagnostic: latency {f['latency_ns']} ns would give mean Spearman "
                      f"{f['mean_spearman']} (" + ", ".join(str(r["spearman"]) for r in f["per_point"]) + ")."]
        for name, s in k["seed_levers"].items():
            lines.append(f"- seed lever {name}: estimated {s['estimate_us']} us, measured {s.get('measured_us')} us")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="write OUT.json and OUT.md")
    ap.add_argument("--spec", default="sm_90")
    ap.add_argument("--product", default=None,
                    help="the spec product for datasheet figures (default: the local GPU's, else the first)")
    ap.add_argument("--kernels", default="decode_attention,matmul")
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--calibration", default=None, help="a calibration YAML (default: measure one, --quick)")
    ap.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 4))
    ap.add_argument("--no-heldout", action="store_true", help="only the development points")
    ap.add_argument("--full-calibration", action="store_true", help="calibrate without --quick")
    args = ap.parse_args(argv)
    t_start = time.time()

    def log(m: str) -> None:
        print(f"[{time.time() - t_start:6.1f} s] {m}", file=sys.stderr, flush=True)

    from occmodel.errors import OccmodelError
    try:
        from occmodel import gpu
        gpu.require_gpu()
    except (ImportError, OccmodelError) as exc:
        print(f"rank_sweep: error: needs a CUDA GPU: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    spec = load_spec(args.spec)
    env = gpu.device_info()
    l2 = env.get("l2_bytes") or 50 * 2**20
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.product is None:
        match = spec.product_for_gpu(str(env.get("gpu", "")))
        args.product = match.name if match else spec.product().name
    cals = {"datasheet": C.datasheet(spec, args.product)}
    if args.calibration:
        cals["measured"] = C.load(args.calibration)
    else:
        from occmodel import gpu_calibrate
        cals["measured"] = gpu_calibrate.measure(spec, quick=not args.full_calibration, progress=lambda m: log(f"calibrate: {m}"))
        C.save(cals["measured"], args.out.with_suffix(".calibration.yaml"))
    log(f"calibration: {cals['measured'].as_dict()}")
    kernels = []
    for kernel in args.kernels.split(","):
        try:
            kernels.append(run_kernel(kernel, spec, args.product, cals, args.samples, args.workers, l2, log,
                                      heldout=not args.no_heldout))
        except Exception as exc:  # noqa: BLE001 - report and go on to the next kernel
            kernels.append({"kernel": kernel, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]})
            log(f"{kernel} failed: {kernels[-1]['error']}")
        doc = {"spec": spec.name, "product": args.product, "env": env, "wall_s": time.time() - t_start,
               "calibrations": {n: c.as_dict() for n, c in cals.items()}, "kernels": kernels}
        # written after every kernel, so a run cut short keeps what it measured
        args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
        args.out.with_suffix(".md").write_text(markdown(doc))
        log(f"wrote {args.out.with_suffix('.json')} and .md ({kernel})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
