"""Does the static rank model (occmodel.rank) order configs of kernels it has never seen?

Two steps, so the model can be developed and judged without the GPU in the loop:

    # on the GPU: time every config of every sweep, calibrate (several times), write raw data
    PYTHONPATH=$PWD python3 scripts/rank_study.py measure --out $OUT/study.json \
        [--kernels flash_attention,splitk_gemm,...] [--samples 7] [--calibrations 2]

    # anywhere (no GPU): compile every (config, point) for the GPU's arch with the triton the
    # GPU ran, estimate with the model as it is now, compare; --kernels picks which to judge
    python3 scripts/rank_study.py evaluate reports/h200/rank_study_h200.json \
        --out reports/h200/rank_study_eval [--role held-out] [--calibration measured|datasheet|...]

The sweeps (SWEEPS) and the development / held-out split are the ones declared in
reports/kernels_dev_heldout.md before any of them was timed. `measure` times each config
at each point with occmodel.gpu.Bench (CUDA-graph replays after an L2 flush, rotating
input sets; configs in random order, round-robin over `--samples` rounds so drift spreads
over all of them), checks each config's output against the kernel's torch reference once
per point, and keeps every sample. One failing config (compile, launch, wrong output) is a
row with its error, never the end of the sweep; the JSON is rewritten after every kernel.
Importing this module needs no torch (the tests use its pure parts on the CPU).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# kernel -> where it lives, its role (reports/kernels_dev_heldout.md), the swept axes
SWEEPS: dict[str, dict[str, Any]] = {
    "flash_attention": {"file": "examples/flash_attention.py", "role": "held-out",
                        "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8],
                                 "num_stages": [1, 2, 3, 4]}},
    "splitk_gemm": {"file": "examples/splitk_gemm.py", "role": "held-out",
                    "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [64], "SPLIT_K": [1, 2, 4, 8],
                             "num_warps": [4, 8], "num_stages": [3, 4]}},
    "moe_gather": {"file": "examples/moe_gather.py", "role": "held-out",
                   "axes": {"BLOCK_T": [1, 2, 4, 8], "BLOCK_D": [64, 128, 256, 512], "num_warps": [1, 2, 4, 8],
                            "num_stages": [2]}},
    "softmax_online": {"file": "examples/softmax_online.py", "role": "held-out",
                       "axes": {"BLOCK_N": [128, 256, 512, 1024, 2048, 4096, 8192, 16384],
                                "num_warps": [1, 2, 4, 8, 16], "num_stages": [2]}},
    "rmsnorm": {"file": "examples/rmsnorm.py", "role": "development",
                "axes": {"BLOCK_N": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16],
                         "num_stages": [1, 2]}},
    "decode_attention": {"card": "decode_attention", "role": "development",
                         "axes": {"BLOCK_T": [16, 32, 64], "BLOCK_H": [16, 32], "num_warps": [2, 4, 8],
                                  "num_stages": [1, 2, 3, 4]},
                         "points": [{"C": 1, "ctx": 8192}, {"C": 8, "ctx": 8192}, {"C": 64, "ctx": 8192},
                                    {"C": 2, "ctx": 32768}, {"C": 32, "ctx": 4096}, {"C": 128, "ctx": 2048}]},
    "matmul": {"card": "matmul", "role": "development",
               "axes": {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64], "num_warps": [4, 8],
                        "num_stages": [2, 3, 4]},
               "points": [{"M": 4096, "N": 4096, "K": 4096}, {"M": 8192, "N": 8192, "K": 4096},
                          {"M": 128, "N": 8192, "K": 8192}, {"M": 2048, "N": 2048, "K": 8192},
                          {"M": 16384, "N": 1024, "K": 4096}, {"M": 512, "N": 4096, "K": 4096}]},
}
DEFAULT_KERNELS = "flash_attention,splitk_gemm,moe_gather,softmax_online,rmsnorm"


# ------------------------------------------------------------------ pure helpers
def sweep_configs(axes: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of the axes, in axis order."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[n] for n in names))]


def load_kernel(name: str):
    """(KernelCard, launcher points) for a SWEEPS entry: a built-in card, or an example's bare
    `_kernel` with the file as its launcher."""
    from occmodel.source import load_source
    entry = SWEEPS[name]
    if "card" in entry:
        card = load_source(entry["card"])
        return card, [card.resolve_point(p) for p in entry["points"]]
    path = str(ROOT / entry["file"])
    kernel = load_source(f"{path}:_kernel", launcher=path)
    return kernel, [dict(p) for p in kernel.default_points]


def full_config(kernel, cfg: dict[str, Any]) -> dict[str, Any]:
    """What the kernel launches with: a card resolves its defaults; a launcher reads the swept keys."""
    return kernel.resolve(cfg) if getattr(kernel, "kind", "") != "bare kernel" else dict(cfg)


def valid_configs(kernel, cfgs: list[dict]) -> list[dict]:
    """The configs the kernel accepts (a card's rules, e.g. decode's PAGE_SIZE % BLOCK_T)."""
    out = []
    for c in cfgs:
        try:
            full_config(kernel, c)
        except Exception:  # noqa: BLE001 - a combination the card rules out
            continue
        out.append(c)
    return out


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------------ GPU side
def _warm_chunk(name: str, cfgs: list[dict], point: dict) -> list[str]:
    """(worker process) launch each config once at `point` so Triton's disk cache holds its kernel."""
    import torch
    out = []
    try:
        kernel, _ = load_kernel(name)
        inputs = kernel.make_inputs(full_config(kernel, cfgs[0]), point, device="cuda", seed=0)
    except Exception as exc:  # noqa: BLE001
        return [f"inputs: {type(exc).__name__}: {exc}".splitlines()[0][:300]] * len(cfgs)
    for cfg in cfgs:
        try:
            kernel.launch(inputs, full_config(kernel, cfg))
            torch.cuda.synchronize()
            out.append("")
        except Exception as exc:  # noqa: BLE001 - a failing config is data
            out.append(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    return out


def warm(name: str, cfgs: list[dict], point: dict, workers: int) -> list[str]:
    """Parallel JIT warm-up of every config at one point; per config '' or the error."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    chunks = [list(range(i, len(cfgs), workers)) for i in range(min(workers, len(cfgs)))]
    errors = [""] * len(cfgs)
    try:
        with ProcessPoolExecutor(max_workers=len(chunks), mp_context=mp.get_context("spawn")) as pool:
            futs = [(c, pool.submit(_warm_chunk, name, [cfgs[i] for i in c], point)) for c in chunks]
            for c, f in futs:
                try:
                    for i, e in zip(c, f.result(timeout=480)):
                        errors[i] = e
                except Exception as exc:  # noqa: BLE001
                    for i in c:
                        errors[i] = f"warm-up worker: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001
        print(f"warm-up pool failed ({type(exc).__name__}); the timing process compiles", file=sys.stderr)
    return errors


def _check(kernel, cfg, inputs, ref) -> dict[str, Any]:
    """The output of one launch against the reference (occmodel.gpu's tolerance rule)."""
    import torch
    from occmodel import gpu
    out = kernel.launch(inputs, cfg)
    torch.cuda.synchronize()
    tol = gpu.tolerance(cfg, gpu._dtype_name(out))
    out = out.float()
    rel = float(torch.linalg.vector_norm(torch.nan_to_num(out - ref, nan=1e30)) / torch.linalg.vector_norm(ref))
    return {"ok": bool(math.isfinite(rel) and rel <= tol), "rel_error": rel, "tolerance": tol}


def measure_point(kernel, cfgs: list[dict], skip: list[str], point: dict, samples: int, l2: int, seed: int,
                  group: int = 16) -> tuple[list[list[float]], list[str], list[dict | None]]:
    """Per config: its samples (s per launch), '' or an error, the correctness check. Configs in
    random order, in groups of `group` whose benches live together; each group times `samples`
    rounds, every config once per round in a fresh random order."""
    import torch
    from occmodel import gpu
    rng = random.Random(seed)
    full = [full_config(kernel, c) for c in cfgs]
    sets = gpu.input_sets(kernel, full[0], point, l2, seed=100)
    ref = kernel.reference(sets[0]).float() if kernel.has_reference() else None
    times: list[list[float]] = [[] for _ in cfgs]
    errors = list(skip)
    checks: list[dict | None] = [None] * len(cfgs)
    order = [i for i in range(len(cfgs)) if not errors[i]]
    rng.shuffle(order)
    for g in range(0, len(order), group):
        benches = {}
        for i in order[g:g + group]:
            try:
                if ref is not None:
                    checks[i] = _check(kernel, full[i], sets[0], ref)
                benches[i] = gpu.Bench(lambda s, cfg=full[i]: kernel.launch(s, cfg), sets, flush_bytes=2 * l2)
                benches[i].sample()                                  # re-warm after capture
            except Exception as exc:  # noqa: BLE001 - one config never stops the sweep
                errors[i] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                torch.cuda.synchronize()
        for _ in range(samples):
            names = list(benches)
            rng.shuffle(names)
            for i in names:
                times[i].append(benches[i].sample())
        del benches
        torch.cuda.empty_cache()
    del sets, ref
    torch.cuda.empty_cache()
    return times, errors, checks


def calibrate(spec, log) -> dict[str, Any]:
    from occmodel import gpu_calibrate
    t0 = time.time()
    cal = gpu_calibrate.measure(spec, quick=False)
    log(f"calibration in {time.time() - t0:.1f} s: latency {cal.latency_ns} ns, curve {cal.latency_curve}")
    return {**cal.as_dict(), "at": time.strftime("%Y-%m-%dT%H:%M:%S")}


def cmd_measure(args) -> int:
    t_start = time.time()

    def log(m: str) -> None:
        print(f"[{time.time() - t_start:6.1f} s] {m}", file=sys.stderr, flush=True)

    from occmodel.errors import OccmodelError
    try:
        from occmodel import gpu
        gpu.require_gpu()
    except (ImportError, OccmodelError) as exc:
        print(f"rank_study: error: measure needs a CUDA GPU: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    from occmodel.spec import load_spec
    spec = load_spec(args.spec)
    env = gpu.device_info()
    l2 = env.get("l2_bytes") or 50 * 2**20
    doc: dict[str, Any] = {"spec": spec.name, "env": env, "samples": args.samples, "calibrations": [],
                           "kernels": [], "command": " ".join(sys.argv)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        doc["wall_s"] = round(time.time() - t_start, 1)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=None, default=str) + "\n")
        os.replace(tmp, out)

    for _ in range(args.calibrations):
        doc["calibrations"].append(calibrate(spec, log))
    save()
    for name in args.kernels.split(","):
        t0 = time.time()
        try:
            kernel, points = load_kernel(name)
            cfgs = valid_configs(kernel, sweep_configs(SWEEPS[name]["axes"]))[:args.limit or None]
            entry = {"kernel": name, "role": SWEEPS[name]["role"], "axes": SWEEPS[name]["axes"], "points": points,
                     "configs": cfgs, "samples": [], "errors": [], "checks": []}
            for j, pt in enumerate(points):
                skip = warm(name, cfgs, pt, args.workers)
                log(f"{name} {pt}: warm-up {time.time() - t0:.0f} s, {sum(bool(e) for e in skip)} failed")
                times, errors, checks = measure_point(kernel, cfgs, skip, pt, args.samples, l2, seed=j)
                entry["samples"].append(times)
                entry["errors"].append(errors)
                entry["checks"].append(checks)
                bad = sum(1 for c in checks if c and not c["ok"])
                log(f"{name} {pt}: {sum(bool(t) for t in times)} timed, {bad} wrong output, "
                    f"{time.time() - t0:.0f} s so far")
        except Exception as exc:  # noqa: BLE001 - report and go on to the next kernel
            entry = {"kernel": name, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
            log(f"{name} failed: {entry['error']}")
        doc["kernels"].append(entry)
        save()
    for _ in range(args.calibrations_after):
        doc["calibrations"].append(calibrate(spec, log))
    save()
    log(f"wrote {out}")
    return 0


# ------------------------------------------------------------------ evaluation (CPU)
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="time the sweeps on the local GPU (writes raw JSON)")
    m.add_argument("--out", required=True)
    m.add_argument("--spec", default="sm_90")
    m.add_argument("--kernels", default=DEFAULT_KERNELS)
    m.add_argument("--samples", type=int, default=7)
    m.add_argument("--calibrations", type=int, default=2, help="full calibrations before the sweeps")
    m.add_argument("--calibrations-after", type=int, default=1, help="full calibrations after the sweeps")
    m.add_argument("--limit", type=int, default=0, help="only the first N configs of each sweep (a smoke run)")
    m.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 4))
    m.set_defaults(run=cmd_measure)
    args = ap.parse_args(argv)
    unknown = [k for k in getattr(args, "kernels", "").split(",") if k and k not in SWEEPS]
    if unknown:
        print(f"rank_study: error: unknown kernel {unknown[0]!r}; allowed: {', '.join(SWEEPS)}", file=sys.stderr)
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
