"""examples/w4a16_gemm.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round9_b.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round10_b.py w4a16_gemm``) that prints one JSON line; the tests
assert per case. Two more subprocesses check what a tolerance comparison does not see:
``... prefilled_out`` runs cases into an ``out=`` buffer filled with NaN first (a tile that no
CTA writes in the banded launch order is a NaN, a row-strided out's extra columns must stay
untouched), and ``... exact`` multiplies the identity by the weight (fp16, where the
interpreter rounds to nearest as the GPU does): the output is then the dequantised weight
itself, and must equal (q - z) * s rounded once to fp16 bit for bit -- every nibble of every
word, every zero point and scale in its place.

Shapes are small and odd: M, N, K not multiples of the blocks (wrapped row / column loads,
masked stores), K a multiple of 8 but not of BLOCK_K (the masked K loop, EVEN_K false) and
shorter than BLOCK_K, a partial last quantisation group, N not a multiple of 8 (a ragged
last zero word), BLOCK_N wider than N, more than GROUP_M = 8 tile rows (a short last band),
M = 1, x as a row view of a wider buffer and x with K not contiguous (copied), and every
BLOCK_K (32, 64, 128: 1 to 4 K steps per group).

Tolerance (x max|ref|, absolute, per element): the reference dequantises in fp32 and runs one
fp32 matmul of the same (rounded) x, so only the rounding of the dequantised weight to x's
dtype, the summation order and the one rounding of the output differ. bf16 1.5e-2: the
interpreter's fp32 -> bf16 cast truncates (up to one bf16 ulp, 2^-7 relative, where the GPU
rounds to nearest); fp16 2e-3 (an fp16 ulp is 2^-10 relative).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "w4a16_gemm"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}
SM90_MAX_SHARED = 232448        # bytes of shared memory one CTA may use on sm_90 (227 KiB)

# The GPU study's sweep (the integrator moves it into the study's registry): 3 x 3 x 2 x 2 x 2
# = 72 configs. Each was compiled for sm_90 with triton 3.6.0 at every POINT: all ok, 60-255
# registers, 12-195 KiB of shared memory (the largest, 128 x 256 x 128 at 3 stages, fits the
# 227 KiB). 7 of the 72 spill, the same at every point: the 128 x 256 tiles at 4 warps (256-262
# words a thread: the fp32 accumulator alone is 256 registers, plus the dequantised B tile),
# and 2 words for 128 x 128 x 128 at 4 warps / 2 stages and 128 x 256 x 128 at 8 warps. 4
# stages are left out: 128 x 256 x 128 at 4 stages needs 243 KiB (the x and packed-weight ring
# plus the one [BLOCK_K, BLOCK_N] dequantised B tile wgmma reads from shared memory).


def _cfg(bm, bn, bk, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": s}


def _pt(M, N, K, dtype):
    return {"M": M, "N": N, "K": K, "dtype": dtype}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_mnk_bf16": (_pt(20, 70, 296, "bf16"), _cfg(16, 32, 64, 4, 2)),
        "decode_rows_fp16": (_pt(5, 96, 384, "fp16"), _cfg(16, 64, 128, 2, 3)),
        "k_shorter_than_tile_fp16": (_pt(33, 43, 40, "fp16"), _cfg(32, 16, 128, 8, 1)),
        "exact_tiles_bf16": (_pt(64, 128, 256, "bf16"), _cfg(64, 128, 64, 4, 4)),
        "k_tail_in_group_block_n_wider_fp16": (_pt(17, 33, 200, "fp16"), _cfg(16, 256, 32, 1, 2)),
        "many_groups_bk32_bf16": (_pt(3, 50, 520, "bf16"), _cfg(16, 16, 32, 2, 3)),
        "two_bands_short_last_bf16": (_pt(150, 40, 128, "bf16"), _cfg(16, 16, 64, 4, 3)),
        "single_token_fp16": (_pt(1, 256, 1024, "fp16"), _cfg(16, 128, 128, 4, 3)),
        "strided_x_rows_bf16": (_pt(24, 64, 264, "bf16"), _cfg(32, 32, 64, 4, 2)),
        "x_not_k_contiguous_fp16": (_pt(9, 48, 136, "fp16"), _cfg(16, 32, 128, 2, 2)),
    },
}

# prefilled_out: cases run into a NaN-filled out= buffer; those in STRIDED_OUT into a row view
# of a wider one
PREFILLED = ("ragged_mnk_bf16", "two_bands_short_last_bf16", "k_tail_in_group_block_n_wider_fp16",
             "k_shorter_than_tile_fp16")
STRIDED_OUT = ("ragged_mnk_bf16", "two_bands_short_last_bf16")

# exact: x = the identity (M = K), out = the dequantised weight rounded once to fp16
EXACT = {
    "identity_k_tail_fp16": (_pt(136, 43, 136, "fp16"), _cfg(16, 32, 64, 4, 2)),
    "identity_bk128_fp16": (_pt(256, 72, 256, "fp16"), _cfg(64, 64, 128, 4, 3)),
}

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(16, 128, 128, 4, 3), _cfg(64, 256, 64, 8, 3), _cfg(128, 128, 128, 8, 2)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: x as a row view of a wider buffer; or x with K not contiguous."""
    import torch

    x = inputs["x"]
    if name == "strided_x_rows_bf16":
        wide = torch.randn((x.shape[0], x.shape[1] + 24)).to(x.dtype) * 100.0     # the extra columns must not count
        wide[:, 8:8 + x.shape[1]] = x
        inputs["x"] = wide[:, 8:8 + x.shape[1]]
        assert not inputs["x"].is_contiguous() and inputs["x"].stride(0) == x.shape[1] + 24
    if name == "x_not_k_contiguous_fp16":
        inputs["x"] = x.t().contiguous().t()
        assert inputs["x"].stride(1) != 1


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["M"], point["N"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_tile_written(name):
    """Into a NaN-filled out= buffer: every element written (no NaN left) and right; a
    row-strided out's extra columns untouched; the function returns that buffer."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["pad_untouched"], res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


@pytest.mark.parametrize("name", list(EXACT))
def test_dequant_is_exact(name):
    """identity @ W: the kernel's output is (q - z) * s rounded once to fp16, bit for bit."""
    res = _results("exact")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["n_diff"] == 0 and res["numel"] == EXACT[name][0]["K"] * EXACT[name][0]["N"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases (BLOCK_K all three); the M, N and
    K tails, K < BLOCK_K, partial groups, ragged zero words, a short last band and both
    dtypes are hit."""
    import triton

    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    assert {c["BLOCK_K"] for _, c in cases} == {32, 64, 128}
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases) and any(p["M"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] for p, c in cases) and any(p["K"] < c["BLOCK_K"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] == 0 for p, c in cases)                # EVEN_K: the unmasked loop
    assert any(p["K"] % mod.GROUP_SIZE for p, _ in cases)                   # a partial last group
    assert any(p["K"] > 2 * mod.GROUP_SIZE for p, _ in cases)               # several groups
    assert any(p["N"] % 8 for p, _ in cases)                                # a ragged last zero word
    assert any(triton.cdiv(p["M"], c["BLOCK_M"]) > mod.GROUP_M and triton.cdiv(p["M"], c["BLOCK_M"]) % mod.GROUP_M
               for p, c in cases)                                           # a short last band
    assert any(p["M"] == 1 for p, _ in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert all(p["K"] % 8 == 0 for p, _ in cases)


def test_sweep_fits_the_points():
    """The study sweep: 72 configs, its axes the TUNABLES, every tunable over >= 2 values,
    BASELINE among them; every config valid at every POINT: K a multiple of BLOCK_K (the
    unmasked loop), >= 132 tiles fill the GPU, and the pipelined x and packed-weight tiles plus
    the dequantised B tile fit sm_90's shared memory."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-10")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 72 and mod.BASELINE in cfgs
    for c in cfgs:
        mod._check_cfg(c)
        stage = c["BLOCK_M"] * c["BLOCK_K"] * 2 + c["BLOCK_K"] // 8 * c["BLOCK_N"] * 4
        assert c["num_stages"] * stage + c["BLOCK_K"] * c["BLOCK_N"] * 2 <= SM90_MAX_SHARED, c
        for p in mod.POINTS:
            args = mod.example_args(c, p)
            assert args["EVEN_K"] and mod.grid(c, p) >= 132, (c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (each read or written once), grid and loop_iterations are the tiling
    of those shapes; the decode points' packed weights are > 4x the 50 MB L2 and take >= 50 us
    at 4.8 TB/s, the prefill >= 50 us at 990 TFLOP/s."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "w4a16_gemm", "pack_int4", "unpack_int4", "dequant"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert sorted(p["M"] for p in mod.POINTS)[:2] == [16, 64] and max(p["M"] for p in mod.POINTS) >= 2048
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            M, N, K = p["M"], p["N"], p["K"]
            G, NZ = triton.cdiv(K, 128), triton.cdiv(N, 8)
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p), p
            assert mod.bytes_moved(p) == 2 * (M * K + G * N + M * N) + 4 * (K // 8 * N + G * NZ)
            dt = mod._torch_dtype(p["dtype"])
            assert args["X"].shape == (M, K) and args["X"].dtype == dt
            assert args["QW"].shape == (K // 8, N) and args["QW"].dtype == torch.int32
            assert args["S"].shape == (G, N) and args["S"].dtype == dt
            assert args["QZ"].shape == (G, NZ) and args["QZ"].dtype == torch.int32
            assert args["OUT"].shape == (M, N) and args["OUT"].dtype == dt
            assert (args["M"], args["N"], args["K"]) == (M, N, K)
            assert (args["stride_xm"], args["stride_qk"], args["stride_sg"], args["stride_zg"], args["stride_om"]) == \
                (K, N, N, NZ, N)
            assert (args["GROUP"], args["GROUP_M"]) == (128, 8)
            assert args["EVEN_K"] == (K % cfg["BLOCK_K"] == 0)
            assert tuple(args[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")) == \
                (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"])
            assert mod.grid(cfg, p) == triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.loop_iterations(cfg, p) == triton.cdiv(K, cfg["BLOCK_K"])
            assert mod.flops(p) == 2 * M * N * K
            if M <= 64:         # decode: memory-bound
                assert K * N // 2 > 4 * 50e6 and mod.bytes_moved(p) / 4.8e12 >= 50e-6, p
            else:               # prefill: compute-bound
                assert mod.flops(p) / 990e12 >= 50e-6 and M * K * 2 > 50e6, p


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(20, 70, 296, "bf16")
    c = _cfg(16, 32, 64, 4, 2)
    assert mod.grid(c, p) == 2 * 3 and mod.loop_iterations(c, p) == 5
    assert mod.bytes_moved(p) == 2 * (20 * 296 + 3 * 70 + 20 * 70) + 4 * (37 * 70 + 3 * 9)
    assert mod.flops(p) == 2 * 20 * 70 * 296
    args = mod.example_args(c, p)
    assert not args["EVEN_K"] and args["X"].dtype == torch.bfloat16 and args["QZ"].shape == (3, 9)
    assert mod.example_args(c, _pt(16, 16, 256, "fp16"))["EVEN_K"]
    inputs = mod.make_inputs(p, device="cpu")
    x, qw, s, qz = inputs["x"], inputs["qweight"], inputs["scales"], inputs["qzeros"]
    assert x.shape == (20, 296) and x.dtype == torch.bfloat16
    assert qw.shape == (37, 70) and qw.dtype == torch.int32 and qz.shape == (3, 9) and qz.dtype == torch.int32
    assert s.shape == (3, 70) and s.dtype == torch.bfloat16 and float(s.float().min()) > 0
    q, z = mod.unpack_int4(qw, 0, 296), mod.unpack_int4(qz, 1, 70)
    assert q.shape == (296, 70) and z.shape == (3, 70)
    assert set(q.unique().tolist()) == set(range(16)) and set(z.unique().tolist()) == set(range(16))
    assert int((qz[:, -1].long() >> 24).abs().sum()) == 0          # the ragged last word's unused nibbles
    assert torch.equal(mod.pack_int4(q, 0), qw) and torch.equal(mod.pack_int4(z, 1), qz)
    # the nibble order: the low nibble first, along K for qweight and along N for qzeros
    assert int(q[8 * 3 + 5, 7]) == (int(qw[3, 7]) >> 20) & 0xF
    assert int(z[2, 8 * 4 + 6]) == (int(qz[2, 4]) >> 24) & 0xF
    w = mod.dequant(qw, s, qz, 296)
    assert w.shape == (296, 70) and w.dtype == torch.float32
    assert float(w[130, 9]) == (int(q[130, 9]) - int(z[1, 9])) * float(s[1, 9])
    ref = mod.reference(inputs)
    assert ref.shape == (20, 70) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 3
    # the zero points matter: dropping them (z = 0) is far off
    flat = dict(inputs, qzeros=torch.zeros_like(qz))
    assert float((mod.reference(flat) - ref).abs().max()) > 0.5 * float(ref.abs().max())
    base = mod.torch_baseline(inputs)
    assert base.shape == (20, 70) and base.dtype == torch.bfloat16
    # pack_int4 pads a ragged K with zero nibbles, and 15 in the top nibble is a negative int32
    odd = torch.full((10, 3), 15)
    packed = mod.pack_int4(odd, 0)
    assert packed.shape == (2, 3) and int(packed[0, 0]) == -1 and int(packed[1, 0]) == 0xFF
    assert torch.equal(mod.unpack_int4(packed, 0, 10), odd)
    assert mod.make_inputs(_pt(4, 8, 128, "fp16"), device="cpu")["x"].dtype == torch.float16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(4, 16, 256, "fp16"), device="cpu")
    x, qw, s, qz = inputs["x"], inputs["qweight"], inputs["scales"], inputs["qzeros"]
    with pytest.raises(ValueError, match="BLOCK_K=16"):
        mod.w4a16_gemm(x, qw, s, qz, BLOCK_K=16)
    with pytest.raises(ValueError, match="BLOCK_K=256"):
        mod.w4a16_gemm(x, qw, s, qz, BLOCK_K=256)
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.w4a16_gemm(x, qw, s, qz, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_M=8"):
        mod.w4a16_gemm(x, qw, s, qz, BLOCK_M=8)
    with pytest.raises(ValueError, match=r"K=252 must be a multiple of 8"):
        mod.w4a16_gemm(x[:, :252], qw, s, qz)
    with pytest.raises(ValueError, match=r"qweight \[K / 8, N\] = \[32, N\]"):
        mod.w4a16_gemm(x, qw[:31], s, qz)
    with pytest.raises(ValueError, match="int32 qweight"):
        mod.w4a16_gemm(x, qw.long(), s, qz)
    with pytest.raises(ValueError, match="int32 qweight"):
        mod.w4a16_gemm(x.float(), qw, s, qz)
    with pytest.raises(ValueError, match=r"scales must be torch.float16 \[2, 16\]"):
        mod.w4a16_gemm(x, qw, s.bfloat16(), qz)
    with pytest.raises(ValueError, match=r"scales must be torch.float16 \[2, 16\]"):
        mod.w4a16_gemm(x, qw, s[:1], qz)
    with pytest.raises(ValueError, match=r"qzeros must be torch.int32 \[2, 2\]"):
        mod.w4a16_gemm(x, qw, s, qz[:, :1])
    with pytest.raises(ValueError, match="qweight needs a contiguous last axis"):
        mod.w4a16_gemm(x, qw.t().contiguous().t(), s, qz)
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[4, 16\]"):
        mod.w4a16_gemm(x, qw, s, qz, out=torch.empty((4, 15), dtype=torch.float16))
    with pytest.raises(ValueError, match=r"out must be torch.float16 \[4, 16\]"):
        mod.w4a16_gemm(x, qw, s, qz, out=torch.empty((16, 4), dtype=torch.float16).t())
    with pytest.raises(ValueError, match="0..15"):
        mod.pack_int4(torch.tensor([[16]]), 0)
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(4, 8, 128, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="K=12"):
        mod.make_inputs(_pt(4, 8, 12, "fp16"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 8, 128, "fp8"))
    # an empty batch launches nothing
    assert mod.w4a16_gemm(x[:0], qw, s, qz).shape == (0, 16)


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0


@pytest.mark.slow
def test_every_point_compiles_and_the_largest_sweep_tile_fits(shared_cache):
    """On sm_90: BASELINE at the other two points (bf16, M = 64; the fp16 prefill) and at a K
    tail (EVEN_K false); the sweep's largest shared-memory config (128 x 256 x 128, 3 stages)
    within the 227 KiB a CTA may use."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    tail = dict(mod.POINTS[0], K=8200)
    for p in mod.POINTS[1:] + [tail]:
        args = mod.example_args(mod.BASELINE, p)
        assert args["EVEN_K"] == (p is not tail)
        res = compile_kernel(mod._kernel, args=args, arch="sm_90", num_warps=4, num_stages=3)
        assert res.status == "ok", f"{p}: {res.status}: {res.message}"
    big = _cfg(128, 256, 128, 8, 3)
    res = compile_kernel(mod._kernel, args=mod.example_args(big, mod.POINTS[2]), arch="sm_90", num_warps=8,
                         num_stages=3)
    assert res.status == "ok" and 150 * 1024 < res.total_shared <= SM90_MAX_SHARED, res


@pytest.mark.slow
def test_sm90_pipelines_the_packed_weight_and_uses_wgmma(shared_cache):
    """On sm_90, BLOCK_M 64: the packed int32 weight tile is copied to shared memory
    asynchronously (cp.async, pipelined with x), the dot is a wgmma reading the dequantised B
    tile from shared memory, and the nibbles become floats with no int -> float conversion
    (the 2^23 bit trick); num_stages changes the cubin (why SWEEP_AXES sweeps it)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = COMPILE_CFGS[KERNEL][1]
    args = mod.example_args(cfg, mod.POINTS[1])
    cubins = []
    for s in (2, 3):
        res = compile_kernel(mod._kernel, args=args, arch="sm_90", num_warps=cfg["num_warps"], num_stages=s,
                             keep_ir=True)
        assert res.status == "ok", res.message
        assert "wgmma.mma_async" in res.ptx and "cp.async" in res.ptx
        assert "cvt.rn.f32.s32" not in res.ptx
        cubins.append(res.cubin)
    assert cubins[0] != cubins[1]


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(HERE.parent))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            M, N = point["M"], point["N"]
            pad = 8 if name in STRIDED_OUT else 0
            buf = torch.full((M, N + pad), float("nan"), dtype=inputs["x"].dtype)
            out = buf[:, :N]
            got = mod.w4a16_gemm(inputs["x"], inputs["qweight"], inputs["scales"], inputs["qzeros"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
            results[name]["pad_untouched"] = bool(torch.isnan(buf[:, N:]).all())
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def _run_exact() -> None:
    """Under TRITON_INTERPRET=1: identity @ W for the EXACT cases; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in EXACT.items():
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            K = point["K"]
            assert point["M"] == K and point["dtype"] == "fp16"
            inputs["x"] = torch.eye(K, dtype=torch.float16)
            got = mod.launch(inputs, cfg)
            want = mod.dequant(inputs["qweight"], inputs["scales"], inputs["qzeros"], K).to(torch.float16)
            results[name] = {"n_diff": int((got.view(torch.int16) != want.view(torch.int16)).sum()),
                             "numel": got.numel()}
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    elif sys.argv[1] == "exact":
        _run_exact()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
