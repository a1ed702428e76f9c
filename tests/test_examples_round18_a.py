"""examples/hadamard_transform.py (the fast Walsh-Hadamard transform along the last dimension, the
online rotation of QuaRot / SpinQuant-style quantised inference: a [ROWS, D] tile a CTA, log2(D)
butterfly stages in registers, the low ones optionally one tensor-core tl.dot with H_16 / H_32 /
H_64) against its fp64 torch reference (x @ the Sylvester H_D) on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so the
cases run in a subprocess (this file run as a script: ``python tests/test_examples_round18_a.py
hadamard_transform``) that prints one JSON line; the tests assert per case.

Shapes are small, odd and ragged: row counts that ROWS does not divide (the masked EVEN_ROWS=False
path, a last CTA with 1-3 live rows) and ones it does (EVEN_ROWS=True), ROWS = 1 (BLOCK <= D) and
ROWS up to 64, D from 16 to 2048, every DOT_H (0: butterflies only; 16 / 32 / 64: the dot of the
16-bit input with H_DOT_H, then butterflies -- D = DOT_H itself: the dot alone), both dtypes, a
non-default scale, x as a row-strided view of a wider buffer, a 3-D input (batch dims flattened),
and an out= buffer filled with NaN (an element no CTA writes stays NaN: a mismatch).

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same bf16 / fp16
inputs; the kernel's dot multiplies 16-bit values by +-1 (exact) into fp32, its butterflies add in
fp32 (log2(D) <= 11 roundings of 2^-24 relative to the row's norm, < 1e-6 here), then it scales and
rounds once to the output dtype: half an ulp on the GPU, up to one ulp with the interpreter's
truncating cast; an ulp is at most 2^-7 = 7.8e-3 (bf16) / 2^-10 = 9.8e-4 (fp16) of an element <=
max|ref|. bf16 1e-2 and fp16 2e-3 (the harness's defaults) bound that; torch_baseline (an fp32
matmul with H_D, one rounding) stays inside them too.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "hadamard_transform"
ROLE = "held-out-18"
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(block, dot_h, w, st=1):
    return {"BLOCK": block, "DOT_H": dot_h, "num_warps": w, "num_stages": st}


def _pt(rows, D, dtype, **kw):
    return {"rows": rows, "D": D, "dtype": dtype, **kw}


# case -> (point, cfg); the comments give ROWS and the grid
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # ROWS 2, 3 CTAs, the last with one live row; butterflies only
        "butterfly_ragged_bf16": (_pt(5, 64, "bf16"), _cfg(128, 0, 4)),
        # ROWS 1 (BLOCK < D), 3 CTAs, EVEN_ROWS; butterflies only, D 1024 (ten stages)
        "butterfly_one_row_fp16": (_pt(3, 1024, "fp16"), _cfg(256, 0, 8, 2)),
        # ROWS 4, 2 CTAs, the last with 3 live rows; H_16 dot + 4 butterflies
        "dot16_ragged_fp16": (_pt(7, 256, "fp16"), _cfg(1024, 16, 4)),
        # ROWS 64 of a KV-head-like D 128, 2 CTAs (the last with 36 live rows); H_32 dot + 2 stages
        "dot32_many_rows_bf16": (_pt(100, 128, "bf16"), _cfg(8192, 32, 8)),
        # ROWS 1, H_64 dot + 5 stages, 3 CTAs
        "dot64_one_row_bf16": (_pt(3, 2048, "bf16"), _cfg(1024, 64, 4, 2)),
        # D = DOT_H = 16: the dot alone, no butterfly; ROWS 16, 2 CTAs (5 live rows in the last)
        "dot16_only_fp16": (_pt(21, 16, "fp16"), _cfg(256, 16, 4)),
        # D = DOT_H = 64, ROWS 16, 2 CTAs, EVEN_ROWS, a non-default scale (1.0: the unnormalised H x)
        "dot64_only_scale_fp16": (_pt(32, 64, "fp16", scale=1.0), _cfg(1024, 64, 8)),
        # x a [9, 512] view of a [9, 520] buffer (row stride 520), ROWS 2, 5 CTAs
        "strided_rows_bf16": (_pt(9, 512, "bf16"), _cfg(1024, 16, 8)),
        # a [3, 5, 128] input (15 rows), ROWS 8, 2 CTAs; into a NaN-filled out=
        "batched_nan_out_bf16": (_pt(15, 128, "bf16"), _cfg(1024, 32, 4, 2)),
        # into a NaN-filled out=, ROWS 16, 4 CTAs, the last with 2 live rows; butterflies only
        "nan_out_ragged_fp16": (_pt(50, 32, "fp16"), _cfg(512, 0, 8)),
    },
}
STRIDED = "strided_rows_bf16"
BATCHED = "batched_nan_out_bf16"
NAN_OUT = ("batched_nan_out_bf16", "nan_out_ragged_fp16")

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(8192, 16, 8), _cfg(4096, 0, 4), _cfg(16384, 64, 16), _cfg(32768, 32, 8)],
}
SM120_CFGS = [_cfg(8192, 16, 8), _cfg(4096, 0, 4), _cfg(16384, 64, 16)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: a strided x, a 3-D x, NaN-filled out= buffers."""
    import torch

    x = inputs["x"]
    rows, D = x.shape
    if name == STRIDED:
        wide = torch.zeros((rows, D + 8), dtype=x.dtype)
        wide[:, :D] = x
        inputs["x"] = wide[:, :D]
        assert inputs["x"].stride() == (D + 8, 1)
    if name == BATCHED:
        inputs["x"] = x.reshape(3, rows // 3, D)
    if name in NAN_OUT:
        inputs["out"] = torch.full(inputs["x"].shape, float("nan"), dtype=x.dtype)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


def _sweep():
    return H.study_sweeps([KERNEL], ROLE)[KERNEL]      # (configs, points, axes) of scripts/rank_study.py SWEEPS


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    want = [3, point["rows"] // 3, point["D"]] if name == BATCHED else [point["rows"], point["D"]]
    assert res["shape"] == want
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; every DOT_H, both dtypes, EVEN_ROWS on and off, ROWS
    1 and > 1, a D with no butterfly after the dot, the default and a given scale."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {c["DOT_H"] for _, c in cases} == set(mod.DOT_HS)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    rows = [(p["rows"], mod.rows_per_cta(c, p["D"])) for p, c in cases]
    assert {r % k == 0 for r, k in rows} == {True, False}
    assert min(k for _, k in rows) == 1 and max(k for _, k in rows) >= 64
    assert any(c["DOT_H"] == p["D"] for p, c in cases)
    assert {"scale" in p for p, _ in cases} == {True, False}


def test_sweep_fits_the_points():
    """The study sweep: 48 configs over the TUNABLES with BASELINE among them; at every POINT each
    config is valid, launches >= 1024 CTAs (>= 7.7 waves of 132 SMs), and its shared memory fits an
    H200's 227 KiB per block. ROWS differs between the points: 32-256 at D = 128, 1-8 at D = 4096,
    1-2 at D = 16384 (BLOCK < D there gives one row, so 4096 / 8192 / 16384 repeat ROWS 1).
    (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 144 compile in
    0.1-3 s each (~1 min in all); registers 24-242 (8 warps 64-242, 16 warps 32-125, 32 warps
    24-64: capped at 64 by 1024 threads); shared memory 8-128 KiB (butterflies only 8-32 KiB: the
    stages are mostly register renames and shuffles; the dot's operand / result staging up to
    128 KiB at BLOCK 32768); no spills except BLOCK 32768 on 32 warps with DOT_H 32 / 64, which
    keep 4 / 12 bytes local at every point. 4 warps, left out of the sweep, spill 76-860 bytes at
    BLOCK 32768.)"""
    cfgs, points, axes = _sweep()
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in axes.values()) >= len(axes) - 1
    every = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert cfgs == every and 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    assert points == mod.POINTS
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c, p["D"])
            assert mod.grid(c, p) >= 1024, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)
    assert {mod.rows_per_cta(mod.BASELINE, p["D"]) for p in mod.POINTS} == {64, 2, 1}


def _smem_bound(cfg, point) -> int:
    """Shared memory a config may use, an upper bound of what the sm_90 compiles showed: the fp32
    tile (ROWS x D x 4 bytes: the layout conversions of the high stages / the dot's result) or the
    dot operands' staging, whichever is larger, at most 64 KiB above the tile."""
    tile = 4 * max(cfg["BLOCK"], point["D"])
    return tile + 64 * 1024


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors, a
    [DOT_H, DOT_H] matrix in x's dtype, ROWS, LOG_D, EVEN_ROWS), bytes_moved counts x and out once,
    grid is cdiv(rows, ROWS), one loop iteration; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "hadamard_transform"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and len({p["dtype"] for p in mod.POINTS}) == 2
    assert len({p["D"] for p in mod.POINTS}) == 3
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            rows, D = p["rows"], p["D"]
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
            assert args["X"].shape == args["OUT"].shape == (rows, D) and args["X"].dtype == args["OUT"].dtype == dt
            assert args["HMAT"].shape == ((cfg["DOT_H"] or 16),) * 2 and args["HMAT"].dtype == dt
            assert args["stride_x"] == args["stride_o"] == D and args["n_rows"] == rows
            assert 2 ** args["LOG_D"] == D and args["DOT_H"] == cfg["DOT_H"] and args["scale"] == D ** -0.5
            R = args["ROWS"]
            assert R == max(1, cfg["BLOCK"] // D) and args["EVEN_ROWS"] == (rows % R == 0)
            assert mod.grid(cfg, p) == -(-rows // R) and mod.loop_iterations(cfg, p) == 1
            assert mod.bytes_moved(p) == 4 * rows * D
            assert mod.flops(p) == rows * D * (args["LOG_D"] + 1)
            assert H.meta_nbytes(args) < 4 * 2**30


def test_hooks_on_small_inputs():
    """make_inputs' tensors (shape, dtype, outlier channels, the seed's), the Hadamard matrix (its
    rows orthogonal: H H^T = n I), the reference's and the baseline's shapes and dtypes, an
    empty input."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(6, 256, "fp16")
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    x = inputs["x"]
    assert x.shape == (6, 256) and x.dtype == torch.float16 and inputs["scale"] is None
    assert float(x.float().abs().max()) > 20 and 0.5 < float(x.float().abs().median()) < 0.9  # outliers; |N(0,1)| median 0.67
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    h = mod.hadamard_matrix(64)
    assert torch.equal(h @ h.t(), 64 * torch.eye(64)) and set(h.unique().tolist()) == {-1.0, 1.0}
    ref = mod.reference(inputs)
    assert ref.shape == (6, 256) and ref.dtype == torch.float32
    # the orthonormal rotation keeps each row's norm
    assert torch.allclose(ref.double().norm(dim=1), x.double().norm(dim=1), rtol=1e-6)
    base = mod.torch_baseline(inputs)
    assert base.shape == (6, 256) and base.dtype == torch.float16
    e = mod.hadamard_transform(torch.ones(0, 64, dtype=torch.bfloat16))
    assert e.shape == (0, 64)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(8, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="D=96"):
        mod.hadamard_transform(torch.ones(8, 96, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="D=8"):
        mod.hadamard_transform(torch.ones(8, 8, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="bfloat16"):
        mod.hadamard_transform(x.float())
    with pytest.raises(ValueError, match="BLOCK=100"):
        mod.hadamard_transform(x, BLOCK=100)
    with pytest.raises(ValueError, match="DOT_H=8"):
        mod.hadamard_transform(x, DOT_H=8)
    with pytest.raises(ValueError, match="DOT_H=64"):
        mod.hadamard_transform(torch.ones(8, 32, dtype=torch.bfloat16), DOT_H=64)
    with pytest.raises(ValueError, match="ROWS"):
        mod.hadamard_transform(x, BLOCK=64, DOT_H=64)          # one row of 64: a dot of 1 row
    with pytest.raises(ValueError, match="out must be"):
        mod.hadamard_transform(x, out=torch.empty(8, 64, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 64, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="D=100"):
        mod.example_args(mod.BASELINE, _pt(4, 100, "bf16"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (BLOCK 4096-32768, every warp count, butterflies only and
    the H_32 / H_64 dots) compile without spills inside 227 KiB; DOT_H > 0 runs a 16-bit mma."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
        assert res.shared <= _smem_bound(cfg, mod.POINTS[0]), cfg
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=1, keep_ir=True)
    assert res.status == "ok", res.message
    assert "mma" in res.ptx and ".bf16" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) the BASELINE and two more compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (fp16, D 4096) and the third (bf16, D 16384: one row a CTA) at the BASELINE."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


if __name__ == "__main__":
    H.run_cases(sys.argv[1], CASES[sys.argv[1]], prepare=_prepare, baseline=True)
