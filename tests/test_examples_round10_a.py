"""examples/persistent_gemm.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round10_a.py persistent_gemm``) that prints one JSON line; the
tests assert per case. A second subprocess (``... prefilled_out``) runs cases into an
``out=`` buffer filled with NaN first (some of them a strided view of a wider buffer whose
extra columns must stay NaN), so an output tile that no program reaches (a slip in the
grid-stride loop or the GROUP_M swizzle) is a mismatch rather than whatever torch.empty held,
and a stray write shows.

The persistent loop is exercised by giving a case a small SM count (the point's ``sms``):
programs walk 2-15 tiles each, the tiles not a multiple of the programs (an uneven share),
a single program walking every tile, and fewer tiles than SMs (one tile each). Shapes are
small and odd: M not a multiple of BLOCK_M (and smaller than it), N likewise, K not a
multiple of BLOCK_K (the masked K tail) and a multiple (EVEN_K), tile rows not a multiple of
GROUP_M (a short last group) and GROUP_M wider than all the tile rows, GROUP_M = 1 (row-major
order), a bias and none, both B layouts (an nn.Linear weight [N, K].t() and a row-major
[K, N]), a and b as strided views (row stride > K, column stride 2), both dtypes.

Tolerance (x max|ref|, absolute, per element): the reference multiplies the same (rounded)
inputs in fp32, so only the summation order and the one rounding to the output dtype
differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16 ulp,
2^-7 relative); fp16 2e-3 (an fp16 ulp is 2^-10 relative).
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
KERNEL = "persistent_gemm"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3}

# the GPU study's sweep: 2 x 2 x 2 x 2 x 2 x 2 = 64 configs x the 3 POINTS; the integrator
# moves it into the study's registry. (Every config was compiled for sm_90 with triton 3.6.0
# at every point; see test_sweep_fits_the_points.)


def _cfg(bm, bn, bk, g, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": s}


def _pt(M, N, K, dtype, bias=False, b_layout="nk", sms=None):
    p = {"M": M, "N": N, "K": K, "dtype": dtype, "bias": bias, "b_layout": b_layout}
    if sms is not None:
        p["sms"] = sms
    return p


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "bias_tails_four_tiles_each_bf16": (_pt(70, 50, 40, "bf16", bias=True, sms=3), _cfg(32, 16, 16, 3, 4, 2)),
        "kn_uneven_share_fp16": (_pt(33, 64, 64, "fp16", b_layout="kn", sms=5), _cfg(16, 32, 32, 1, 4, 3)),
        "short_last_group_bf16": (_pt(100, 48, 48, "bf16", sms=4), _cfg(16, 16, 16, 4, 2, 2)),
        "group_wider_than_rows_bias_fp16": (_pt(20, 96, 80, "fp16", bias=True, sms=2), _cfg(16, 32, 16, 8, 4, 1)),
        "fewer_tiles_than_sms_bf16": (_pt(40, 40, 32, "bf16"), _cfg(32, 32, 32, 2, 4, 2)),
        "everything_smaller_than_blocks_fp16": (_pt(5, 7, 3, "fp16", bias=True), _cfg(64, 64, 64, 8, 8, 3)),
        "one_program_walks_all_kn_bf16": (_pt(48, 80, 100, "bf16", b_layout="kn", sms=1), _cfg(16, 16, 32, 2, 4, 4)),
        "exact_tiles_long_k_fp16": (_pt(64, 64, 256, "fp16", sms=3), _cfg(32, 32, 64, 2, 8, 3)),
        "strided_views_bias_bf16": (_pt(37, 29, 52, "bf16", bias=True, sms=4), _cfg(16, 16, 16, 2, 4, 2)),
        "strided_views_kn_fp16": (_pt(45, 24, 64, "fp16", b_layout="kn", sms=7), _cfg(32, 16, 64, 1, 2, 2)),
    },
}

# a and b replaced by strided views of wider buffers holding the same values
STRIDED_IN = ("strided_views_bias_bf16", "strided_views_kn_fp16")

# prefilled_out: cases run into a NaN-filled out= buffer (every element written, nothing else)
PREFILLED = ("bias_tails_four_tiles_each_bf16", "kn_uneven_share_fp16", "short_last_group_bf16",
             "group_wider_than_rows_bias_fp16", "one_program_walks_all_kn_bf16", "everything_smaller_than_blocks_fp16")
STRIDED_OUT = ("short_last_group_bf16", "one_program_walks_all_kn_bf16")      # out a [M, N] view of [M, N + 8]

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(128, 256, 64, 8, 8, 3), _cfg(128, 128, 64, 8, 4, 4), _cfg(64, 128, 32, 1, 4, 3)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: a and b as strided views of wider buffers (a's rows longer than K,
    b's columns every other one of a wider row-major buffer) with the same values."""
    import torch

    if name in STRIDED_IN:
        a, b = inputs["a"], inputs["b"]
        M, K = a.shape
        N = b.shape[1]
        aw = torch.randn((M, K + 24)).to(a.dtype) * 100.0
        aw[:, 8:8 + K] = a
        bw = torch.randn((K, 2 * N + 1)).to(b.dtype) * 100.0
        bw[:, 1::2] = b
        inputs["a"], inputs["b"] = aw[:, 8:8 + K], bw[:, 1::2]
        assert inputs["a"].stride() == (K + 24, 1) and inputs["b"].stride() == (2 * N + 1, 2)
        assert torch.equal(inputs["a"], a) and torch.equal(inputs["b"], b)


def _tiles(point, cfg) -> tuple[int, int]:
    return -(-point["M"] // cfg["BLOCK_M"]), -(-point["N"] // cfg["BLOCK_N"])


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
    """Into a NaN-filled out= buffer: every element written (no NaN left) and right; a strided
    out's extra columns untouched; the function returns that buffer."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["pad_untouched"], res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the M, N and K tails, EVEN_K,
    the persistent loop's shares (several tiles a program, uneven, one program, fewer tiles
    than SMs), the GROUP_M edge cases, both layouts, bias or none and both dtypes are hit."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = list(CASES[KERNEL].values())
    assert any(p["M"] % c["BLOCK_M"] for p, c in cases) and any(p["M"] < c["BLOCK_M"] for p, c in cases)
    assert any(p["N"] % c["BLOCK_N"] for p, c in cases) and any(p["N"] < c["BLOCK_N"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] for p, c in cases) and any(p["K"] < c["BLOCK_K"] for p, c in cases)
    assert any(p["K"] % c["BLOCK_K"] == 0 for p, c in cases)                 # EVEN_K
    shares = [(tm * tn, mod.grid(c, p)) for p, c in cases for tm, tn in [_tiles(p, c)]]
    assert any(t >= 4 * g for t, g in shares) and any(t % g for t, g in shares)       # persistent, uneven
    assert any(g == 1 and t > 10 for t, g in shares)                         # one program walks them all
    assert any(t == g < mod.NUM_SMS for t, g in shares)                      # fewer tiles than SMs
    rows = [(_tiles(p, c)[0], c["GROUP_M"]) for p, c in cases]
    assert any(tm % g and tm > g > 1 for tm, g in rows) and any(g > tm for tm, g in rows)
    assert any(g == 1 and tm > 1 for tm, g in rows)
    assert {p["b_layout"] for p, _ in cases} == {"nk", "kn"}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["bias"] for p, _ in cases} == {True, False}


def test_tile_order_is_a_permutation():
    """The swizzle's arithmetic (the kernel's, in Python): every tile id maps to a distinct
    (tile_m, tile_n) in range, for tile grids with and without a short last group; GROUP_M = 1
    is row-major; a group walks down its GROUP_M rows before moving to the next column."""
    def order(tiles_m, tiles_n, G):
        out = []
        for tile in range(tiles_m * tiles_n):
            group, in_group = divmod(tile, G * tiles_n)
            gm = min(tiles_m - group * G, G)
            out.append((group * G + in_group % gm, in_group // gm))
        return out

    for tiles_m, tiles_n, G in [(7, 3, 4), (2, 3, 8), (64, 18, 8), (16, 16, 8), (5, 5, 1), (1, 9, 8)]:
        o = order(tiles_m, tiles_n, G)
        assert sorted(o) == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]
        if G == 1:
            assert o == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]
    assert order(16, 16, 8)[:10] == [(m, 0) for m in range(8)] + [(0, 1), (1, 1)]


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, each over >= 2 values, 64 configs with BASELINE among
    them; at every POINT each config is valid, runs the unmasked K loads (EVEN_K), has at
    least 132 output tiles (the grid is the 132 SMs, each program walking 2-109 tiles), and
    its pipeline buffers (num_stages x the A and B tiles) fit an H200's 227 KiB of shared
    memory per block. (Every config was compiled for sm_90 with triton 3.6.0 at every point:
    all 192 compile, 68-255 registers, 36-192 KiB of shared memory -- exactly the pipeline
    buffers, num_stages x (BLOCK_M + BLOCK_N) x BLOCK_K x 2 bytes, the epilogue reusing
    them; the 8 configs of BLOCK_M 128 x BLOCK_N 256 at 4 warps spill at every point,
    198-322 words a thread: their fp32 accumulator alone is 256 registers a thread; and at
    the third point ([K, N] B) BLOCK_M 64 x BLOCK_N 256 x BLOCK_K 64, GROUP_M 8, 4 warps,
    3 stages spills 2 words at 255 registers.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-10")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert list(SWEEP_AXES) == list(mod.TUNABLES) and all(len(v) >= 2 for v in SWEEP_AXES.values())
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 64 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            tm, tn = _tiles(p, c)
            assert args["EVEN_K"] and mod.grid(c, p) == mod.NUM_SMS == 132 <= tm * tn, (p, c)
            assert mod.loop_iterations(c, p) // (p["K"] // c["BLOCK_K"]) == -(-tm * tn // 132) >= 2
            assert c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2 <= 227 * 1024


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (A, B, bias read once, C written once), with the strides of the
    point's B layout; grid is min(132, tiles) and loop_iterations the busiest program's
    tiles x K tiles; the working set exceeds the L2 and the work is >= 0.2 TFLOP."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "persistent_gemm"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["b_layout"] for p in mod.POINTS} == {"nk", "kn"} and {p["bias"] for p in mod.POINTS} == {True, False}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            M, N, K = p["M"], p["N"], p["K"]
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p), p
            assert mod.bytes_moved(p) == 2 * (M * K + K * N + M * N + (N if p["bias"] else 0))
            assert 2 * (M * K + K * N) > 50 * 2**20 and mod.bytes_moved(p) > 150 * 2**20
            assert args["A"].shape == (M, K) and args["A"].stride() == (K, 1)
            assert args["B"].shape == (K, N)
            assert args["B"].stride() == ((1, K) if p["b_layout"] == "nk" else (N, 1))
            assert args["C"].shape == (M, N) and args["C"].stride() == (N, 1)
            assert args["A"].dtype == args["B"].dtype == args["C"].dtype == mod._torch_dtype(p["dtype"])
            assert (args["BIAS"] is not None) == p["bias"] == args["HAS_BIAS"]
            assert (args["M"], args["N"], args["K"]) == (M, N, K)
            assert (args["stride_am"], args["stride_ak"], args["stride_cm"], args["stride_cn"]) == (K, 1, N, 1)
            assert args["EVEN_K"] == (K % cfg["BLOCK_K"] == 0)
            tiles = triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
            assert mod.grid(cfg, p) == min(132, tiles)
            assert mod.loop_iterations(cfg, p) == triton.cdiv(tiles, mod.grid(cfg, p)) * triton.cdiv(K, cfg["BLOCK_K"])
            assert mod.flops(p) == 2 * M * N * K >= 2 * 10**11
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["C"].dtype == torch.bfloat16


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(70, 50, 40, "bf16", bias=True, sms=3)
    c = _cfg(32, 16, 16, 3, 4, 2)
    assert mod.grid(c, p) == 3 and mod.loop_iterations(c, p) == 4 * 3          # 12 tiles over 3, 3 K tiles
    assert mod.grid(c, dict(p, sms=5)) == 5 and mod.loop_iterations(c, dict(p, sms=5)) == 3 * 3
    q = _pt(70, 50, 40, "fp16")
    assert mod.grid(c, q) == 12 and mod.loop_iterations(c, q) == 3                  # one tile each
    assert mod.bytes_moved(p) == 2 * (70 * 40 + 40 * 50 + 70 * 50 + 50) and mod.bytes_moved(q) == \
        2 * (70 * 40 + 40 * 50 + 70 * 50)
    assert mod.flops(p) == 2 * 70 * 50 * 40
    args = mod.example_args(c, p)
    assert not args["EVEN_K"] and args["HAS_BIAS"] and args["B"].stride() == (1, 40)
    assert mod.example_args(c, dict(p, K=48))["EVEN_K"]
    inputs = mod.make_inputs(p, device="cpu")
    a, b, bias = inputs["a"], inputs["b"], inputs["bias"]
    assert a.shape == (70, 40) and a.dtype == torch.bfloat16 and a.is_contiguous()
    assert b.shape == (40, 50) and b.stride() == (1, 40) and bias.shape == (50,) and inputs["num_sms"] == 3
    ref = mod.reference(inputs)
    assert ref.shape == (70, 50) and ref.dtype == torch.float32 and 0.5 < float(ref.std()) < 3
    base = mod.torch_baseline(inputs)
    assert base.shape == (70, 50) and base.dtype == torch.bfloat16
    kn = mod.make_inputs(_pt(8, 24, 16, "fp16", b_layout="kn"), device="cpu")
    assert kn["b"].stride() == (24, 1) and kn["bias"] is None and kn["num_sms"] == mod.NUM_SMS


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(16, 32, 24, "fp16", bias=True), device="cpu")
    a, b, bias = inputs["a"], inputs["b"], inputs["bias"]
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        mod.persistent_gemm(a, b, bias, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.persistent_gemm(a, b, bias, BLOCK_K=8)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        mod.persistent_gemm(a, b, bias, GROUP_M=0)
    with pytest.raises(ValueError, match="num_sms=0"):
        mod.persistent_gemm(a, b, bias, num_sms=0)
    with pytest.raises(ValueError, match=r"expected a \[M, K\] and b \[K, N\]"):
        mod.persistent_gemm(a, b[:16], bias)
    with pytest.raises(ValueError, match=r"expected a \[M, K\] and b \[K, N\]"):
        mod.persistent_gemm(a[0], b, bias)
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.persistent_gemm(a.float(), b.float())
    with pytest.raises(ValueError, match="one fp16 / bf16 dtype"):
        mod.persistent_gemm(a, b.bfloat16())
    with pytest.raises(ValueError, match=r"bias must be torch.float16 \[32\]"):
        mod.persistent_gemm(a, b, bias[:8])
    with pytest.raises(ValueError, match=r"bias must be torch.float16 \[32\]"):
        mod.persistent_gemm(a, b, bias.float())
    with pytest.raises(ValueError, match=r"out must be a \[16, 32\]"):
        mod.persistent_gemm(a, b, bias, out=torch.empty((32, 16), dtype=torch.float16))
    with pytest.raises(ValueError, match="fp32"):
        mod.make_inputs(_pt(4, 4, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 4, 4, "fp8"))
    with pytest.raises(ValueError, match="b_layout 'tn'"):
        mod.example_args(mod.BASELINE, _pt(4, 4, 4, "bf16", b_layout="tn"))


def test_empty_problems_need_no_launch():
    """M or N = 0: an empty C; K = 0: C is the bias (or zeros), no kernel launched (on the CPU
    a launch would fail outside the interpreter)."""
    import torch

    mod = load_example(KERNEL)
    a = torch.zeros((6, 0), dtype=torch.bfloat16)
    b = torch.zeros((0, 5), dtype=torch.bfloat16)
    bias = torch.arange(5).to(torch.bfloat16)
    assert torch.equal(mod.persistent_gemm(a, b, bias), bias.expand(6, 5))
    assert torch.equal(mod.persistent_gemm(a, b), torch.zeros((6, 5), dtype=torch.bfloat16))
    assert mod.persistent_gemm(torch.zeros((0, 3), dtype=torch.float16),
                               torch.zeros((3, 4), dtype=torch.float16)).shape == (0, 4)


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
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """BASELINE at the other two points (fp16 with no bias; the [K, N] layout) and with a K tail
    (EVEN_K false)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = mod.BASELINE
    tail = dict(mod.POINTS[0], K=3600)
    for p in mod.POINTS[1:] + [tail]:
        args = mod.example_args(cfg, p)
        assert args["EVEN_K"] == (p is not tail)
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_k_loop_is_pipelined_inside_the_tile_loop(shared_cache):
    """The K loop, nested in the persistent tile loop, is software-pipelined for sm_90: the
    shared memory is num_stages copies of the A and B tiles (why SWEEP_AXES varies num_stages)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    for s in (3, 4):
        cfg = _cfg(64, 128, 32, 8, 4, s)
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=4, num_stages=s)
        assert res.status == "ok", res.message
        assert res.shared == s * (64 + 128) * 32 * 2, (s, res.shared)


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
            buf = torch.full((M, N + pad), float("nan"), dtype=inputs["a"].dtype)
            out = buf[:, :N]
            got = mod.persistent_gemm(inputs["a"], inputs["b"], inputs["bias"], out=out,
                                      num_sms=inputs["num_sms"], **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
            results[name]["pad_untouched"] = bool(torch.isnan(buf[:, N:]).all())
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
