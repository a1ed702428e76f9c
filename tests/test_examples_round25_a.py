"""examples/gram_syrk.py (the batched Gram matrix G = X X^T as a SYRK -- Muon's Newton-Schulz A = X X^T,
Shampoo / SOAP's G G^T statistic: X [B, M, K] bf16 / fp16, fp32 accumulation, G [B, M, M] in X's dtype
or fp32; only the lower-triangle tile pairs (i >= j) of BLOCK_M x BLOCK_M tiles computed, decoded
from a linear index row by row, an off-diagonal tile stored twice, itself and its transpose)
against its torch reference on the CPU through Triton's interpreter, its launcher hooks against the
shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round24_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round25_a.py gram_syrk``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop
bounds under numpy >= 2.3; bf16 dot operands widened to fp32).

Shapes are small, odd and ragged: one tile (only the diagonal, no mirror store); 2-13 tile rows
(3-91 tile pairs: the decode of many linear indices); the four load / store variants EVEN_M x
EVEN_K; a last row block of 2 rows (a tile of mostly clamped rows); one K step shorter than BLOCK_K
(a single masked step); a batch of 1-3 matrices and one 2-D matrix; x a slice of a wider buffer
(row pitch and batch stride larger than K and M K, read in place) and G written into a caller's
pitched buffer (its pad untouched); bf16 and fp16 inputs, G in the input dtype and in fp32;
BLOCK_M 16-128, BLOCK_K 16-64, 2-8 warps, num_stages 2-6.

Per case: launch's output within the dtype's tolerance of the fp32 reference (the harness's
per-element check) and each element within about one ulp of G's dtype of its own value; its
shape, dtype and strides; the off-diagonal tiles exactly symmetric (a
tile and its mirror are one accumulator stored twice); torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "gram_syrk"
ROLE = "held-out-25"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["gram_syrk"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8], "num_stages": [2, 3, 4, 5, 6]}


def _cfg(bm, bk, w=4, st=3):
    return {"BLOCK_M": bm, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(b, m, k, dtype="bf16", out_dtype=None):
    p = {"B": b, "M": m, "K": k, "dtype": dtype}
    if out_dtype is not None:
        p["out_dtype"] = out_dtype
    return p


# case -> (point, cfg); comments: T tile rows, tile pairs T (T + 1) / 2, EVEN_M / EVEN_K, K steps
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # M 24 < BLOCK_M 64: T 1, one diagonal tile (no mirror store), EVEN_M 0; K 40: 2 steps of 32,
        # the second 8 columns (EVEN_K 0)
        "one_tile_bf16": (_pt(1, 24, 40, "bf16"), _cfg(64, 32, 4, 2)),
        # 3 matrices, M 50: T 4 (the last block 2 rows), 10 pairs each; K 70: 3 steps of 32 (EVEN_K 0);
        # 2 warps
        "ragged_batch_fp16": (_pt(3, 50, 70, "fp16"), _cfg(16, 32, 2, 3)),
        # no mask at all: M 64 = 2 x 32, K 96 = 3 x 32; G in fp32
        "even_fp32_out_bf16": (_pt(2, 64, 96, "bf16", "fp32"), _cfg(32, 32, 4, 4)),
        # EVEN_M 1 (128 = 2 x 64), EVEN_K 0 (K 100: 2 steps of 64, the second 36 columns); 8 warps
        "even_m_ragged_k_fp16": (_pt(2, 128, 100, "fp16"), _cfg(64, 64, 8, 5)),
        # BLOCK_M 128: M 130, T 2, the second row block 2 real rows of 128 (EVEN_M 0); K 64 one step
        # (EVEN_K 1); 8 warps, 6 stages
        "ragged_m_even_k_bf16": (_pt(1, 130, 64, "bf16"), _cfg(128, 64, 8, 6)),
        # one 2-D matrix [200, 48]: T 13, 91 tile pairs (the decode over many t), EVEN_M 0 (200 =
        # 12 x 16 + 8), EVEN_K 1 (3 steps of 16); G in fp32
        "many_tiles_2d_fp16": (_pt(1, 200, 48, "fp16", "fp32"), _cfg(16, 16, 4, 2)),
        # x the rows 1:41 and columns :56 of a [2, 43, 80] buffer (row pitch 80, batch stride 3440),
        # G into the [:40, :40] corner of a [2, 42, 48] buffer filled with SENTINEL: T 3, EVEN_M 0,
        # EVEN_K 0 (56 = 32 + 24)
        "strided_x_pitched_out_bf16": (_pt(2, 40, 56, "bf16"), _cfg(16, 32, 4, 3)),
        # K 8 shorter than BLOCK_K 64: one masked step; M 33 at BLOCK_M 32: T 2, the last block one row
        "k_below_step_fp16": (_pt(2, 33, 8, "fp16"), _cfg(32, 64, 4, 2)),
    },
}
TWO_D, STRIDED = "many_tiles_2d_fp16", "strided_x_pitched_out_bf16"
X_BUF, G_BUF, SENTINEL = (43, 80), (42, 48), -7.0

# configs compiled at the module's first POINT on sm_90 (BASELINE first): the largest tile on 4
# warps at the deepest pipeline (the most registers and shared memory), the smallest tile
COMPILE_CFGS = [_cfg(128, 64, 8, 3), _cfg(128, 64, 4, 6), _cfg(64, 32, 8, 2), _cfg(64, 64, 4, 4)]
# sm_120 (a cp.async pipeline of num_stages - 1 buffers): BASELINE (64 KiB), 128 x 64 at 4 stages
# (96 KiB) and two small ones fit its 99 KiB; 128 x 64 at 5 stages (128 KiB) does not
SM120_CFGS = [_cfg(128, 64, 8, 3), _cfg(128, 64, 8, 4), _cfg(64, 64, 8, 6), _cfg(128, 32, 4, 6)]
SM120_TOO_BIG = _cfg(128, 64, 8, 5)


def _smem(cfg, arch="sm_90") -> int:
    """The K loop's pipeline: num_stages buffers of the two [BLOCK_M, BLOCK_K] 16-bit panels on
    sm_90, num_stages - 1 on sm_120 (what triton 3.6 and 3.9 allocate)."""
    bufs = cfg["num_stages"] - (arch == "sm_120")
    return bufs * 2 * cfg["BLOCK_M"] * cfg["BLOCK_K"] * 2


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """TWO_D: x the one [M, K] matrix; STRIDED: x the rows 1:1+M, columns :K of a wider buffer,
    and a pitched output buffer full of SENTINEL whose [:M, :M] corner is G."""
    import torch

    x = inputs["x"]
    B, M, K = x.shape
    if name == TWO_D:
        inputs["x"] = x[0]
    if name == STRIDED:
        wide = torch.full((B, *X_BUF), 9.0, dtype=x.dtype)
        wide[:, 1:1 + M, :K] = x
        inputs["x"] = wide[:, 1:1 + M, :K]
        full = torch.full((B, *G_BUF), SENTINEL, dtype=inputs["out_dtype"])
        inputs["out"] = full[:, :M, :M]
        inputs["full"] = full


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _tiles(M, bm):
    return -(-M // bm)


def _flags(p, c):
    """(T, tile pairs, EVEN_M, EVEN_K, K steps) of a case."""
    T = _tiles(p["M"], c["BLOCK_M"])
    return T, T * (T + 1) // 2, int(p["M"] % c["BLOCK_M"] == 0), int(p["K"] % c["BLOCK_K"] == 0), \
        -(-p["K"] // c["BLOCK_K"])


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    B, M = p["B"], p["M"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["dtype"] == p.get("out_dtype", p["dtype"]), res
    assert res["n_loose"] == 0, res                       # each element within ~1 ulp of its own value
    assert res["n_asym_offdiag"] == 0, res
    assert res["n_asym_diag"] <= res["n_diag_pairs"], res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["x_unchanged"] is True, res
    if name == TWO_D:
        assert res["shape"] == [M, M] and res["out_strides"] == [M, 1], res
    elif name == STRIDED:
        assert res["shape"] == [B, M, M], res
        assert res["x_strides"] == [X_BUF[0] * X_BUF[1], X_BUF[1], 1], res
        assert res["out_strides"] == [G_BUF[0] * G_BUF[1], G_BUF[1], 1] and res["pad_untouched"] is True, res
    else:
        assert res["shape"] == [B, M, M] and res["out_strides"] == [M * M, M, 1], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; both input dtypes, G in each; the four
    EVEN_M x EVEN_K variants; one tile (no mirror) and many (T up to 13); one K step and several,
    a K shorter than one step; a last row block of a few rows; a batch of one and several, a 2-D x."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {(p["dtype"], p.get("out_dtype", p["dtype"])) for p, _ in cases} == {
        ("bf16", "bf16"), ("fp16", "fp16"), ("bf16", "fp32"), ("fp16", "fp32")}
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {(f[2], f[3]) for _, _, f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert 1 in {f[0] for _, _, f in fl} and max(f[0] for _, _, f in fl) >= 10
    assert {f[4] == 1 for _, _, f in fl} == {True, False}
    assert any(p["K"] < c["BLOCK_K"] for p, c in cases)
    assert any(0 < p["M"] % c["BLOCK_M"] <= 2 and p["M"] > c["BLOCK_M"] for p, c in cases)
    assert {p["B"] for p, _ in cases} >= {1, 2, 3}
    for k in ("BLOCK_M", "BLOCK_K", "num_warps", "num_stages"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)


def test_tile_decode_is_exact():
    """The kernel's decode of t -> (i, j) (fp32 sqrt, then one integer correction each way) against
    the exact one, at every t around every triangular number for T up to 5792 (the launcher's limit:
    T (T + 1) / 2 < 2^24 tile pairs) and over all t of T = 40; tile_pair agrees; the order is row by
    row of the lower triangle."""
    import numpy as np

    mod = load_example(KERNEL)
    T = 5792
    assert T * (T + 1) // 2 < 2**24 <= (T + 1) * (T + 2) // 2
    ii = np.arange(T, dtype=np.int64)
    tri = ii * (ii + 1) // 2
    t = np.unique(np.concatenate([tri - 1, tri, tri + 1, tri + ii, np.arange(40 * 41 // 2)]))
    t = t[(t >= 0) & (t < T * (T + 1) // 2)].astype(np.int32)
    # the kernel's arithmetic: int32, fp32 sqrt (correctly rounded, as tl.sqrt's sqrt.rn / the
    # interpreter's np.sqrt), truncating conversion, then the two corrections
    i = ((np.sqrt((8 * t + 1).astype(np.float32)) - np.float32(1.0)) * np.float32(0.5)).astype(np.int32)
    i = np.where((i + 1) * (i + 2) // 2 <= t, i + 1, i)
    i = np.where(i * (i + 1) // 2 > t, i - 1, i)
    j = t - i * (i + 1) // 2
    i_exact = ((np.sqrt(8 * t.astype(np.float64) + 1) - 1) // 2).astype(np.int64)
    i_exact += (i_exact + 1) * (i_exact + 2) // 2 <= t
    assert np.array_equal(i, i_exact)
    assert (j >= 0).all() and (j <= i).all()
    for tt in list(t[:500]) + list(t[-500:]):
        assert mod.tile_pair(int(tt)) == (int(i[t == tt][0]), int(j[t == tt][0]))
    order = [mod.tile_pair(k) for k in range(10)]
    assert order == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2), (3, 3)]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, EVEN_M / EVEN_K, the grid (tile pairs, B) and the K steps; bytes_moved / flops; inputs
    < 4 GB; 0.1-0.3 TFLOP of the triangle's work a point (compute-bound: roughly 150-500 us at the
    H200's dense bf16 rate)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "gram", "tile_pair"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, M, K = p["B"], p["M"], p["K"]
        odt = p.get("out_dtype", p["dtype"])
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (B, M, K) and a["X"].dtype == dts[p["dtype"]] and a["X"].is_contiguous()
            assert a["G"].shape == (B, M, M) and a["G"].dtype == dts[odt] and a["G"].is_contiguous()
            assert (a["M"], a["K"], a["stride_xb"], a["stride_xm"], a["stride_gb"], a["stride_gm"]) == (
                M, K, M * K, K, M * M, M)
            assert (a["EVEN_M"], a["EVEN_K"]) == (int(M % cfg["BLOCK_M"] == 0), int(K % cfg["BLOCK_K"] == 0))
            assert (a["BLOCK_M"], a["BLOCK_K"]) == (cfg["BLOCK_M"], cfg["BLOCK_K"])
            T = _tiles(M, cfg["BLOCK_M"])
            assert mod.grid(cfg, p) == (T * (T + 1) // 2, B)
            assert mod.loop_iterations(cfg, p) == -(-K // cfg["BLOCK_K"])
        assert mod.bytes_moved(p) == B * M * K * size[p["dtype"]] + B * M * M * size[odt]
        assert mod.flops(p) == B * M * (M + 1) * K
        assert B * M * K * size[p["dtype"]] + B * M * M * size[odt] < 4 * 2**30
        assert 1e11 <= mod.flops(p) <= 3e11, p
    # the points differ: the batch, M (128 divides it or not), K, the dtype and the output dtype
    assert sorted(p["B"] for p in mod.POINTS) == [1, 32, 48]
    assert sorted(p["M"] for p in mod.POINTS) == [1024, 1600, 4096]
    assert all(p["M"] <= p["K"] for p in mod.POINTS)                 # Muon's orientation
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p.get("out_dtype", p["dtype"]) for p in mod.POINTS} == {"bf16", "fp32"}
    assert any(p["M"] % 128 for p in mod.POINTS) and any(p["M"] % 128 == 0 for p in mod.POINTS)
    flags = {(mod.example_args(c, p)["EVEN_M"], mod.example_args(c, p)["EVEN_K"]) for p in mod.POINTS for c in cfgs}
    assert {f[0] for f in flags} == {0, 1} and {f[1] for f in flags} == {1}      # every K a multiple of 64


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shape, dtype, the seed, rows of different norms; reference the full fp32
    product, symmetric, a hand-checked element; torch_baseline's dtype; bytes / flops by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 5, 7, "fp16", "fp32")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (2, 5, 7) and x.dtype == torch.float16 and x.is_contiguous()
    assert inp["out_dtype"] == torch.float32
    assert mod.make_inputs(_pt(1, 3, 4, "bf16"), device="cpu")["out_dtype"] == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    big = mod.make_inputs(_pt(1, 64, 512, "bf16"), device="cpu")["x"].float()
    norms = big[0].norm(dim=1) / 512 ** 0.5
    assert float(norms.min()) < 0.8 and float(norms.max()) > 1.6
    ref = mod.reference(inp)
    assert ref.shape == (2, 5, 5) and ref.dtype == torch.float32
    assert torch.allclose(ref, ref.transpose(1, 2))
    xf = x.float()
    assert abs(float(ref[1, 3, 1]) - float((xf[1, 3] * xf[1, 1]).sum())) < 1e-4
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.float32 and base.shape == (2, 5, 5)
    assert mod.bytes_moved(p) == 2 * 5 * 7 * 2 + 2 * 5 * 5 * 4
    assert mod.flops(p) == 2 * 5 * 6 * 7
    assert mod.grid(_cfg(2 ** 4, 32), _pt(3, 50, 8)) == (10, 3)
    assert mod.loop_iterations(_cfg(16, 32), _pt(3, 50, 70)) == 3


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 8, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.gram(x, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.gram(x, BLOCK_K=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.gram(x, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.gram(x, num_stages=0)
    with pytest.raises(ValueError, match="expected x"):
        mod.gram(torch.ones(1, 2, 8, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.gram(x.float())
    with pytest.raises(ValueError, match="out_dtype must be"):
        mod.gram(x, out_dtype=torch.float16)
    with pytest.raises(ValueError, match="unit K stride"):
        mod.gram(torch.ones(2, 16, 8, dtype=torch.bfloat16).transpose(1, 2))
    with pytest.raises(ValueError, match=r"out must be \[2, 8, 8\]"):
        mod.gram(x, out=torch.empty(2, 8, 9, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="out must be torch.float32"):
        mod.gram(x, out_dtype=torch.float32, out=torch.empty(2, 8, 8, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="unit column stride"):
        mod.gram(x, out=torch.empty(2, 8, 8, dtype=torch.bfloat16).transpose(1, 2))
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 4, 4, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.bytes_moved(_pt(1, 4, 4, "bf16", "fp64"))
    with pytest.raises(ValueError, match="M=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4))
    with pytest.raises(ValueError, match="K=-1"):
        mod.flops(_pt(1, 4, -1))
    with pytest.raises(ValueError, match="BLOCK_M=96"):
        mod.grid(dict(mod.BASELINE, BLOCK_M=96), mod.POINTS[0])
    # empty batch or rows: nothing to launch, an empty G
    assert mod.gram(torch.ones(0, 8, 16, dtype=torch.bfloat16)).shape == (0, 8, 8)
    assert mod.gram(torch.ones(2, 0, 16, dtype=torch.float16)).shape == (2, 0, 0)


def test_sweep_fits_the_points():
    """The study sweep: 40 configs (BLOCK_M 64 / 128 x BLOCK_K 32 / 64 x 4 / 8 warps x 2-6 stages)
    with BASELINE among them; at every point each config is valid, its pipeline's shared memory
    (16-192 KiB) within sm_90's 227 KiB, its accumulator <= 128 fp32 registers a thread, and it
    launches >= 4 waves of CTAs on an H200 (528 CTAs at the fewest: the one 4096 x 4096 Gram matrix
    at BLOCK_M 128). (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9:
    all compile, none spills; 42-255 registers, the most for the fp32-output 128 x 128 tiles on 4
    warps at the GPT-2 XL point, whose ragged M masks both stores; shared memory exactly the
    pipeline's, the epilogue's transpose reusing it. BLOCK_K 128 is not swept: 128 x 128 at 4 stages
    takes 256 KiB. On sm_120, 99 KiB a block and num_stages - 1 buffers, 128 x 64 at 5-6 stages would
not fit; there 64 x 64 on 4 warps at 2 stages spills 2 registers under triton 3.6.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 36 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    too_big_sm120 = {(c["BLOCK_M"], c["BLOCK_K"], c["num_stages"]) for c in cfgs
                     if _smem(c, "sm_120") > SM120_SMEM_PER_BLOCK}
    assert too_big_sm120 == {(128, 64, 5), (128, 64, 6)}
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * H200_SMS and gy <= 65535, (p, c)
            assert _smem(c) <= SM90_SMEM_PER_BLOCK, c
            assert c["BLOCK_M"] ** 2 <= 128 * 32 * c["num_warps"], c


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE and three more at the first point (Llama-3-8B's down_proj, bf16, EVEN_M),
    the 128 x 128 tile on 4 warps at 6 stages (the most registers and shared memory) among them,
    compile without spills and with the pipeline's shared memory; and BASELINE and the 4-warp
    128 x 128 tile at the other two (the GPT-2 XL point: ragged M, fp32 G, both stores masked)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert _smem(cfg) <= res.shared <= SM90_SMEM_PER_BLOCK, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert _smem(cfg) <= res.shared <= SM90_SMEM_PER_BLOCK, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (mma v2, no wgmma; num_stages - 1 buffers): the configs within 99 KiB compile without
    spills; 128 x 64 at 5 stages asks for 128 KiB, past sm_120's shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert _smem(cfg, "sm_120") <= res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)
    [(cfg, res)] = list(H.compile_results(KERNEL, [SM120_TOO_BIG], "sm_120"))
    assert res.status != "ok" or res.shared > SM120_SMEM_PER_BLOCK, (cfg, res.status, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and torch_baseline
    against reference; the symmetry of the off-diagonal tiles (exact) and of the diagonal ones; the
    output's dtype and strides, x's strides and x unchanged, the pitched buffer's pad; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        bm = CASES[KERNEL][name][1]["BLOCK_M"]
        g = out.float() if out.dim() == 3 else out.float()[None]
        M = g.shape[-1]
        blk = torch.arange(M) // bm
        same_tile = blk[:, None] == blk[None, :]
        asym = g != g.transpose(1, 2)
        x0 = mod.make_inputs(point, seed=len(name), device="cpu")["x"]
        xin = inputs["x"] if inputs["x"].dim() == 3 else inputs["x"][None]
        # elementwise: within 1 ulp of G's dtype (half an ulp of rounding, the rest the fp32 sums'
        # order) of each element's own value, not only of the largest
        rtol = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -20}[out.dtype]
        r3 = ref if ref.dim() == 3 else ref[None]
        loose = (g - r3).abs() > 2 * rtol * r3.abs() + 1e-5 * float(r3.abs().max())
        res = {"dtype": names.get(out.dtype), "n_loose": int(loose.sum()), "out_strides": list(out.stride()),
               "x_strides": list(inputs["x"].stride()),
               "n_asym_offdiag": int((asym & ~same_tile).sum()), "n_asym_diag": int((asym & same_tile).sum()),
               "n_diag_pairs": int(same_tile.sum()) * g.shape[0],
               "x_unchanged": bool(torch.equal(xin, x0)),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if name == STRIDED:
            full = inputs["full"]
            pad = torch.ones(full.shape, dtype=torch.bool)
            pad[:, :M, :M] = False
            res["pad_untouched"] = bool((full[pad] == SENTINEL).all())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
