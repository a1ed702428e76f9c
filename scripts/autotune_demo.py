"""Autotune the matmul card's kernel over a real sweep three times -- without occmodel's
pre-screening pruner, with it, and with it keeping only its top K by the rank estimate
(the point taken from the launch's M, N, K) -- and report what the pruner saved and
how the top-K pick compares with the best of the full sweep.

Each autotuning runs in its own child process with a fresh Triton cache and a fresh
occmodel cache, and is timed from the first launch (which compiles, prunes and
benchmarks) to its end; CUDA is initialised before the clock starts. The pruner
targets the local GPU's arch (sm_90 on an H200) with max_spills=0 and compiles in
parallel; the script also shows what a pruner for sm_120 would keep of the same
sweep (compiled for sm_120 on this machine, no sm_120 GPU needed).

On the GPU machine (about 3 minutes on an H200):

    python3 scripts/autotune_demo.py --out $OUT/autotune_demo.json

Prints a summary and writes every number (timings of every config, each pruning
decision with its reason) to --out.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # run from a checkout

TILES = ((64, 128), (128, 64), (128, 128), (128, 256), (256, 128), (256, 256))
SWEEP = [dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, num_warps=w, num_stages=s)
         for (m, n), k, w, s in itertools.product(TILES, (32, 64), (4, 8), (3, 5))]   # 48 configs


def _configs(limit: int | None):
    import triton
    sweep = SWEEP[:limit] if limit else SWEEP
    return [triton.Config({k: v for k, v in c.items() if k.startswith("BLOCK")}, num_warps=c["num_warps"],
                          num_stages=c["num_stages"]) for c in sweep]


def _args(size: int, device: str):
    import torch
    a = torch.randn(size, size, device=device, dtype=torch.float16)
    b = torch.randn(size, size, device=device, dtype=torch.float16)
    c = torch.empty(size, size, device=device, dtype=torch.float16)
    return (a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def _why(decisions: list[dict]) -> dict[str, int]:
    """Dropped configs counted by kind of reason."""
    out: dict[str, int] = {}
    for d in decisions:
        if not d["kept"]:
            r = d["reason"]
            kind = ("over the shared-memory limit" if "per-block limit" in r else "spilling" if "spills" in r
                    else "failed to compile" if "compile" in r else "no resident block" if "resident" in r
                    else "other")
            out[kind] = out.get(kind, 0) + 1
    return out


def _cubins(cache: str) -> int:
    return len(glob.glob(os.path.join(cache, "**", "*.cubin"), recursive=True))


def phase(args) -> dict:
    """One autotuning in this (child) process; caches come from the environment."""
    import torch
    import triton
    from occmodel.autotune import describe, pruner
    from occmodel.kernels import matmul as mm

    if not torch.cuda.is_available():
        raise SystemExit("autotune_demo: needs a CUDA GPU (torch.cuda.is_available() is False)")
    configs = _configs(args.limit)
    launch = _args(args.size, "cuda")
    torch.cuda.synchronize()                        # CUDA context up before the clock starts
    cache = os.environ["TRITON_CACHE_DIR"]
    out: dict = {"configs": len(configs)}
    prune_by = None
    if args.phase in ("pruned", "topk"):
        extra = dict(top_k=args.top_k, card="matmul") if args.phase == "topk" else {}
        screen = pruner(spec=args.spec, kernel=mm._kernel, max_spills=0, processes=args.processes, log=None,
                        **extra)

        def timed(cfgs, named_args, **kwargs):
            t0 = time.perf_counter()
            kept = screen(cfgs, named_args, **kwargs)
            out["prune_s"] = round(time.perf_counter() - t0, 2)
            out["cubins_after_prune"] = _cubins(cache)
            return kept
        prune_by = {"early_config_prune": timed}
    tuned = triton.autotune(configs, key=["M", "N", "K"], prune_configs_by=prune_by)(mm._kernel)

    def grid(meta):
        return (triton.cdiv(args.size, meta["BLOCK_M"]) * triton.cdiv(args.size, meta["BLOCK_N"]),)

    t0 = time.perf_counter()
    tuned[grid](*launch, GROUP_M=8)
    torch.cuda.synchronize()
    out["wall_s"] = round(time.perf_counter() - t0, 2)
    measured = getattr(tuned, "configs_timings", None) or {}      # unset when one config was left (3.9)
    timings = {describe(c): (None if t[0] == float("inf") else round(float(t[0]), 4)) for c, t in measured.items()}
    ref = launch[0].float() @ launch[1].float()
    err = float((launch[2].float() - ref).norm() / ref.norm())
    out.update(benchmarked=len(timings), compiled_cubins=_cubins(cache), best=describe(tuned.best_config),
               best_ms=timings.get(describe(tuned.best_config)), rel_error_of_best=err, timings_ms=timings)
    if args.phase in ("pruned", "topk"):
        out["decisions"] = screen.decisions
        out["ranked_by"], out["note"] = getattr(screen, "ranked_by", None), getattr(screen, "note", "")
    return out


def _child(which: str, args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(tmp, "triton"),
                   OCCMODEL_CACHE_DIR=os.path.join(tmp, "occmodel"))
        result = os.path.join(tmp, "result.json")
        cmd = [sys.executable, __file__, "--phase", which, "--result", result, "--spec", args.spec,
               "--size", str(args.size), "--processes", str(args.processes), "--out", args.out,
               "--top-k", str(args.top_k)]
        if args.limit:
            cmd += ["--limit", str(args.limit)]
        proc = subprocess.run(cmd, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"autotune_demo: the {which} phase failed (exit {proc.returncode})")
        with open(result) as f:
            return json.load(f)


def screen_for(spec: str, args) -> dict:
    """What a pruner for `spec` keeps of the sweep (AOT compiles on this machine, fresh cache)."""
    from occmodel.autotune import pruner
    from occmodel.kernels import matmul as mm
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OCCMODEL_CACHE_DIR"] = tmp
        configs = _configs(args.limit)
        screen = pruner(spec=spec, kernel=mm._kernel, max_spills=0, processes=args.processes, log=None)
        names = [p.name for p in mm._kernel.params]   # 64 x 64 CPU tensors specialise like the GPU's 4096s
        t0 = time.perf_counter()
        try:
            kept = screen(configs, dict(zip(names, _args(64, "cpu"))), GROUP_M=8, grid=None, warmup=False)
        except Exception as exc:                     # nothing fits: still a result
            kept = []
            print(f"  {spec}: {exc}")
        return {"spec": spec, "kept": len(kept), "of": len(configs), "seconds": round(time.perf_counter() - t0, 2),
                "decisions": screen.decisions}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--spec", default="auto", help="target spec of the pruner (default: the local GPU's arch)")
    ap.add_argument("--size", type=int, default=4096, help="M = N = K of the problem (default 4096)")
    ap.add_argument("--processes", type=int, default=min(16, os.cpu_count() or 1),
                    help="parallel compiles of the pruner (default: min(16, CPUs))")
    ap.add_argument("--limit", type=int, default=None, help="only the first N configs of the sweep")
    ap.add_argument("--top-k", type=int, default=5,
                    help="the third run keeps only the pruner's best K by the rank estimate (default 5)")
    ap.add_argument("--phase", choices=("plain", "pruned", "topk"), help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.phase:
        with open(args.result, "w") as f:
            json.dump(phase(args), f)
        return 0
    import torch
    import triton
    if not torch.cuda.is_available():
        print("autotune_demo: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 2
    if args.spec == "auto":
        major, minor = torch.cuda.get_device_capability(0)
        args.spec = f"sm_{major}{minor}"
    info = {"device": torch.cuda.get_device_name(0), "triton": triton.__version__, "torch": torch.__version__,
            "spec": args.spec, "problem": {"M": args.size, "N": args.size, "K": args.size, "dtype": "fp16"},
            "sweep": (SWEEP[:args.limit] if args.limit else SWEEP), "processes": args.processes}
    t0 = time.perf_counter()
    info["plain"] = _child("plain", args)
    info["pruned"] = _child("pruned", args)
    info["topk"] = _child("topk", args)
    info["screen_sm_120"] = screen_for("sm_120", args)
    info["total_s"] = round(time.perf_counter() - t0, 1)
    plain, pruned = info["plain"], info["pruned"]
    info["same_best"] = plain["best"] == pruned["best"]
    info["plain_ms_of_pruned_best"] = plain["timings_ms"].get(pruned["best"])
    finite = sorted((t, c) for c, t in plain["timings_ms"].items() if t is not None)
    info["pruned_best_rank_in_plain"] = next((i + 1 for i, (_, c) in enumerate(finite) if c == pruned["best"]), None)
    topk = info["topk"]
    info["topk_best_rank_in_plain"] = next((i + 1 for i, (_, c) in enumerate(finite) if c == topk["best"]), None)
    info["topk_best_vs_plain_best"] = (round(plain["timings_ms"][topk["best"]] / finite[0][0], 4)
                                       if finite and plain["timings_ms"].get(topk["best"]) else None)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=1)

    print(f"{info['device']}, triton {info['triton']}, {len(info['sweep'])} configs, "
          f"{args.size}^3 fp16 matmul, pruner target {args.spec}")
    for name, r in (("without pruner", plain), ("with pruner", pruned), (f"pruner top {args.top_k}", topk)):
        extra = (f", pruning {r['prune_s']} s, kept {sum(d['kept'] for d in r['decisions'])}"
                 if "prune_s" in r else "")
        print(f"  {name:15s} wall {r['wall_s']:7.1f} s  benchmarked {r['benchmarked']:3d}  "
              f"cubins compiled {r['compiled_cubins']:3d}{extra}  best {r['best']} = {r['best_ms']} ms")
    print(f"  same best config: {info['same_best']}; the plain run timed the pruned pick at "
          f"{info['plain_ms_of_pruned_best']} ms (rank {info['pruned_best_rank_in_plain']} of {len(finite)})")
    print(f"  top {args.top_k} by the rank estimate ({topk.get('ranked_by')}): its pick is rank "
          f"{info['topk_best_rank_in_plain']} of {len(finite)} in the plain run, "
          f"{info['topk_best_vs_plain_best']}x the best time; {topk.get('note') or ''}")
    s120 = info["screen_sm_120"]
    print(f"  sm_120 pre-screen (compiled here): keeps {s120['kept']} of {s120['of']} in {s120['seconds']} s")
    for name, decisions in ((args.spec, pruned["decisions"]), ("sm_120", s120["decisions"])):
        print(f"  dropped for {name}: " + (", ".join(f"{n} {why}" for why, n in _why(decisions).items()) or "none"))
    print(f"  wrote {args.out} (total {info['total_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
