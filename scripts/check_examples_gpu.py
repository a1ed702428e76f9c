"""On a CUDA GPU: every examples/ launcher against its reference, and its example_args
against what Triton's launcher really compiled.

For each kernel: small odd shapes in each dtype (as in tests/test_examples_interpret.py,
but compiled, bf16 dots included), then every default POINT at the launcher's baseline
config: correctness against the reference, one timing (triton.testing.do_bench, median),
and the JIT-launched kernel's registers / spills / shared memory beside
occmodel.compile_kernel(args=example_args(...)) for the GPU's own arch.

    python scripts/check_examples_gpu.py [--out results.json] [kernel ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_examples_interpret import CASES, TOL, load_example  # noqa: E402


# fp32 tl.dot runs as tf32 on a GPU (10-bit mantissa): fp32 cases of the dot kernels are
# off by ~1e-3 x max|ref| there (measured on an H200: 1.8e-3 flash attention, 8e-4 split-K),
# while the interpreter's 1e-4 holds for exact fp32.
GPU_TOL = dict(TOL, fp32=5e-3)


def _err(out, ref, dtype: str) -> dict:
    import torch
    out = out.float()
    scale = float(ref.abs().max())
    diff = (out - ref).abs()
    tol = GPU_TOL[dtype] * max(scale, 1e-6)
    return {"ok": bool(((diff <= tol) & torch.isfinite(out)).all()), "max_err": float(diff.max()), "tol": tol}


def check(kernel: str) -> dict:
    import torch
    import triton
    from occmodel import compile_kernel

    mod = load_example(kernel)
    res = {"cases": {}, "points": []}
    for name, (point, cfg) in CASES[kernel].items():
        inputs = mod.make_inputs(point, seed=3, device="cuda")
        res["cases"][name] = _err(mod.launch(inputs, cfg), mod.reference(inputs), point["dtype"])
    cfg = dict(mod.BASELINE)
    cc = torch.cuda.get_device_capability()
    arch = f"sm_{cc[0]}{cc[1]}"
    for point in mod.POINTS:
        inputs = mod.make_inputs(point, seed=0, device="cuda")
        mod._kernel.device_caches.clear()          # so the cache holds this launch's kernel alone
        out = mod.launch(inputs, cfg)
        row = {"point": point, "cfg": cfg, **_err(out, mod.reference(inputs), point["dtype"])}
        ms = triton.testing.do_bench(lambda: mod.launch(inputs, cfg), warmup=25, rep=200)
        row["ms"] = ms
        row["GB/s"] = mod.bytes_moved(point) / ms / 1e6
        row["TFLOP/s"] = mod.flops(point) / ms / 1e9
        # the kernel Triton's launcher compiled for this launch (the JIT cache's one entry for the signature)
        jit = mod._kernel
        compiled = [k for per_dev in jit.device_caches.values() for k in per_dev[0].values()]
        args = mod.example_args(cfg, point)
        ours = compile_kernel(jit, args=args, arch=arch, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        row["ours"] = {"regs": ours.n_regs, "spills": ours.n_spills, "shared": ours.shared}
        row["jit"] = sorted({(k.n_regs, k.n_spills, k.metadata.shared) for k in compiled})
        row["match"] = (ours.n_regs, ours.n_spills, ours.shared) in row["jit"]
        res["points"].append(row)
        del inputs, out
        torch.cuda.empty_cache()
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*", default=list(CASES))
    ap.add_argument("--out")
    a = ap.parse_args()
    import torch
    import triton
    results = {"device": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__}
    for k in a.kernels:
        t0 = time.time()
        try:
            results[k] = check(k)
        except Exception as exc:
            results[k] = {"error": f"{type(exc).__name__}: {exc}"}
        r = results[k]
        print(f"== {k} ({time.time() - t0:.0f} s)")
        if "error" in r:
            print("   ERROR", r["error"])
            continue
        for name, c in r["cases"].items():
            print(f"   {'ok ' if c['ok'] else 'BAD'} {name}: max err {c['max_err']:.3g} (tol {c['tol']:.3g})")
        for row in r["points"]:
            print(f"   {'ok ' if row['ok'] else 'BAD'} {row['point']}: {row['ms']:.3f} ms, {row['GB/s']:.0f} GB/s, "
                  f"{row['TFLOP/s']:.1f} TFLOP/s; max err {row['max_err']:.3g}; "
                  f"example_args {row['ours']} vs launched {row['jit']}: {'same' if row['match'] else 'DIFFERENT'}")
    if a.out:
        Path(a.out).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
