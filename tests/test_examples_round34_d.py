"""examples/complex_gemm.py (planar complex GEMM on the tensor cores: C = A @ B, or A @ conj(B), with A, B, C
each two real planes, fp16 / bf16 in and out, fp32 accumulation; four tl.dot a K step into two accumulators, a
GROUP_M swizzled tile order, a batch grid axis; the correlator's C = A A^H from A's transposed views) against
its torch reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study
sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round33_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round34_d.py complex_gemm``) that prints one JSON line; the subprocess installs
the harness's interpreter fixes (bf16 rounding; bf16 dots; the loop bounds).

Shapes are small, odd and ragged: M, N from 1 to 300 against tiles of 64 / 128 rows and 32 / 64 columns (a
last tile row / column partly past M / N, M below one tile), K from 1 to 160 (EVEN_K both ways: a last K step
partly past K, K below one step), batch 1 to 3; fp16 and bf16; both ops (nn; herm: B the transposed views of
A, CONJ_B); 2-d inputs; an A that is a column-major view and a B that is a column slice of a NaN-padded
buffer (never read past N); GROUP_M 8 over 5 row tiles (a last group of fewer); every sweep value of every
tunable.

Per case: launch's output against the module's float64 reference (the harness's tolerance); an output buffer
prefilled with NaN written everywhere (every tile once); an independent complex128 recomputation at sampled
entries; the inputs unchanged; the flags the launch used; the grid; torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "complex_gemm"
ROLE = "held-out-34"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["complex_gemm"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64], "BLOCK_K": [32, 64], "GROUP_M": [1, 8],
              "num_warps": [4, 8], "num_stages": [2, 4]}
FLAG_KEYS = ("CONJ_B", "EVEN_K", "M", "N", "K", "stride_ak", "stride_am", "stride_bk", "stride_bn", "BLOCK_M",
             "BLOCK_N", "BLOCK_K", "GROUP_M")
PAD_N = 5


def _cfg(bm=128, bn=64, bk=64, g=8, w=4, st=4):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": st}


def _pt(batch, M, N, K, dtype="fp16", op="nn"):
    return {"batch": batch, "M": M, "N": N, "K": K, "dtype": dtype, "op": op}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


# case -> (point, cfg); comments: (op, EVEN_K), tiles
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (nn, 0): BASELINE on a ragged fp16 GEMM: 1 x 2 tiles, K 100 = 64 + 36 (the last step masked)
        "baseline_fp16": (_pt(1, 77, 90, 100, "fp16"), _cfg()),
        # (nn, 1): bf16, batch 3, K 64 in two steps of 32; 64 x 32 tiles on 8 warps, 2 x 2 tiles, row-major
        "batched_bf16": (_pt(3, 70, 33, 64, "bf16"), _cfg(64, 32, 32, 1, 8, 2)),
        # (herm, 0): a correlator of 2 channels, 50 inputs x K 96 time samples (64 + 32 masked), 1 x 2 tiles
        "herm_fp16": (_pt(2, 50, 50, 96, "fp16", "herm"), _cfg(64, 32, 64, 8, 4, 2)),
        # (herm, 1): bf16, 40 inputs, K 64 = 2 x 32; one 128 x 64 tile, 8 warps
        "herm_bf16": (_pt(2, 40, 40, 64, "bf16", "herm"), _cfg(128, 64, 32, 1, 8, 4)),
        # (nn, 0): GROUP_M 8 over 5 row tiles (300 / 64) x 2 column tiles: one group of 5 rows; K 33 < one step
        "swizzle_fp16": (_pt(1, 300, 70, 33, "fp16"), _cfg(64, 64, 64, 8, 4, 4)),
        # (nn, 1): 2-d planes (no batch axis), A a column-major view, K 160 = 5 x 32; bf16
        "colmajor_a_bf16": (_pt(1, 45, 64, 160, "bf16"), _cfg(64, 64, 32, 8, 8, 2)),
        # (nn, 0): B a column slice of a NaN-padded [K, N + 5] buffer (row stride N + 5), fp16, K 17
        "padded_b_fp16": (_pt(2, 20, 37, 17, "fp16"), _cfg(128, 32, 32, 1, 4, 4)),
        # (nn, 0): 1 x 1 x 1: one element, K 1 below every step
        "scalar_bf16": (_pt(1, 1, 1, 1, "bf16"), _cfg(64, 32, 64, 8, 4, 2)),
    },
}
COLMAJOR, PADDED = "colmajor_a_bf16", "padded_b_fp16"

# configs compiled on sm_90 at each point: BASELINE, the smallest tile on 8 warps, the 128 x 64 tile on 8 warps
COMPILE_CFGS = {0: [_cfg(), _cfg(64, 32, 32, 1, 8, 2), _cfg(128, 64, 64, 8, 8, 4)],
                1: [_cfg(), _cfg(128, 64, 32, 1, 4, 2)],
                2: [_cfg(), _cfg(64, 64, 64, 8, 8, 4)]}
# sm_120 (99 KiB a block, mma.sync: the accumulators and operand fragments in registers): BASELINE's 4 stages
# of 128 x 64 x 64 need 176 KiB, and a 128 x 64 tile on 4 warps spills there (84 spills under triton 3.9); these
# fit
SM120_CFGS = [_cfg(128, 64, 64, 8, 8, 2), _cfg(64, 32, 32, 1, 8, 4), _cfg(64, 64, 64, 8, 4, 2)]


def _tiles(p, c):
    return math.ceil(p["M"] / c["BLOCK_M"]) * math.ceil(p["N"] / c["BLOCK_N"])


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """2-d / column-major A, NaN-padded B; then copies of the inputs."""
    import torch

    if name == COLMAJOR:
        for k in ("a_re", "a_im"):
            inputs[k] = inputs[k][0].t().contiguous().t()
        for k in ("b_re", "b_im"):
            inputs[k] = inputs[k][0]
    if name == PADDED:
        for k in ("b_re", "b_im"):
            b = inputs[k]
            buf = torch.full((b.shape[0], b.shape[1], b.shape[2] + PAD_N), float("nan"), dtype=b.dtype)
            buf[:, :, 1:1 + b.shape[2]] = b
            inputs[k] = buf[:, :, 1:1 + b.shape[2]]
    inputs["_copies"] = {k: inputs[k].clone() for k in ("a_re", "a_im", "b_re", "b_im")}


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    b, M, N, K = p["batch"], p["M"], p["N"], p["K"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    shape = [2, M, N] if name == COLMAJOR else [2, b, M, N]
    assert res["shape"] == shape and res["dtype"] == p["dtype"], res
    assert res["nan_out_written"] is True and res["same_as_nan_out"] is True, res
    assert res["sample_err"] <= res["tol"], res
    assert res["inputs_unchanged"] is True, res
    fl = res["flags"]
    assert (fl["M"], fl["N"], fl["K"]) == (M, N, K)
    assert fl["CONJ_B"] == int(p["op"] == "herm") and fl["EVEN_K"] == int(K % cfg["BLOCK_K"] == 0), fl
    assert all(fl[k] == cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")), fl
    if p["op"] == "herm":
        assert (fl["stride_ak"], fl["stride_am"], fl["stride_bk"], fl["stride_bn"]) == (1, K, 1, K), fl
    elif name == COLMAJOR:
        assert (fl["stride_ak"], fl["stride_am"], fl["stride_bk"], fl["stride_bn"]) == (M, 1, N, 1), fl
    elif name == PADDED:
        assert (fl["stride_ak"], fl["stride_bk"], fl["stride_bn"]) == (1, N + PAD_N, 1), fl
    else:
        assert (fl["stride_ak"], fl["stride_am"], fl["stride_bk"], fl["stride_bn"]) == (1, K, N, 1), fl
    assert res["grid"] == [_tiles(p, cfg), 1 if name == COLMAJOR else b], res


def test_swizzle_visits_every_tile_once():
    """The kernel's GROUP_M order, recomputed here: a permutation of the tiles for ragged tile counts."""
    for tm, tn, g in itertools.product((1, 3, 5, 8, 9, 17), (1, 2, 7, 16), (1, 4, 8)):
        seen = []
        for pid in range(tm * tn):
            in_group = g * tn
            first = (pid // in_group) * g
            gm = min(tm - first, g)
            seen.append((first + (pid % in_group) % gm, (pid % in_group) // gm))
        assert sorted(seen) == [(i, j) for i in range(tm) for j in range(tn)], (tm, tn, g)


def test_cases_cover_every_code_path():
    """Both ops x EVEN_K both ways; fp16 and bf16; both ops in both dtypes; a last tile row and column past M /
    N, M below a tile; a K step past K; GROUP_M larger than the row tiles and a partial group; batch > 1; every
    sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    fl = [r["flags"] for r in res.values()]
    assert {(f["CONJ_B"], f["EVEN_K"]) for f in fl} == set(itertools.product((0, 1), (0, 1)))
    assert {(p["op"], p["dtype"]) for p, _ in cases.values()} == set(itertools.product(mod.OPS, mod.DTYPES))
    assert any(p["M"] % c["BLOCK_M"] and p["M"] > c["BLOCK_M"] for p, c in cases.values())
    assert any(p["N"] % c["BLOCK_N"] and p["N"] > c["BLOCK_N"] for p, c in cases.values())
    assert any(p["K"] < c["BLOCK_K"] for p, c in cases.values())
    assert any(p["K"] % c["BLOCK_K"] and p["K"] > c["BLOCK_K"] for p, c in cases.values())
    assert any(c["GROUP_M"] > 1 and 1 < math.ceil(p["M"] / c["BLOCK_M"]) < c["GROUP_M"] for p, c in cases.values())
    assert any(p["batch"] > 1 for p, _ in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (every tensor on meta) with the launch's shapes, dtypes,
    strides and flags; the grid; the loop length; bytes_moved and flops; each point >= 50 us on an H200 both
    at 4.8 TB/s and at 990 TFLOP/s."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "complex_gemm"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        b, M, N, K = p["batch"], p["M"], p["N"], p["K"]
        herm = p["op"] == "herm"
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(v.device.type == "meta" for v in a.values() if isinstance(v, torch.Tensor))
            for k in ("AR", "AI"):
                assert a[k].shape == (b, M, K) and a[k].dtype == dts[p["dtype"]]
            for k in ("BR", "BI"):
                assert a[k].shape == (b, K, N) and a[k].dtype == dts[p["dtype"]]
            for k in ("CR", "CI"):
                assert a[k].shape == (b, M, N) and a[k].dtype == dts[p["dtype"]]
            assert (a["M"], a["N"], a["K"]) == (M, N, K)
            assert (a["stride_ab"], a["stride_am"], a["stride_ak"]) == (M * K, K, 1)
            assert (a["stride_bb"], a["stride_bk"], a["stride_bn"]) == ((M * K, 1, K) if herm else (K * N, N, 1))
            assert (a["stride_cb"], a["stride_cm"], a["stride_cn"]) == (M * N, N, 1)
            assert a["CONJ_B"] == int(herm) and a["EVEN_K"] == 1
            assert all(a[k] == cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"))
            assert mod.grid(cfg, p) == (_tiles(p, cfg), b)
            assert mod.loop_iterations(cfg, p) == K // cfg["BLOCK_K"]
        reads = M * K + (0 if herm else K * N)
        assert mod.bytes_moved(p) == 4 * b * (reads + M * N)
        assert mod.flops(p) == 8 * b * M * N * K
        assert mod.bytes_moved(p) / 4.8e12 >= 30e-6 and mod.flops(p) / 990e12 >= 250e-6, p
    P = mod.POINTS
    assert {p["dtype"] for p in P} == set(mod.DTYPES) and {p["op"] for p in P} == set(mod.OPS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the scale, herm's views; reference by hand (a 1 x 1 complex
    product, conj); torch_baseline; grid / loop; bytes / flops; the 2-d form and the out buffer."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 30, 20, 256, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["a_re"].shape == (2, 30, 256) and inp["b_im"].shape == (2, 256, 20) and inp["conj_b"] is False
    assert inp["a_re"].dtype == torch.bfloat16 and inp["b_re"].dtype == torch.bfloat16
    assert 0.2 < float(inp["a_re"].float().std()) < 0.3                              # 256^-1/4 = 0.25
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["b_re"], inp["b_re"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["b_re"], inp["b_re"])
    assert not torch.equal(inp["a_re"], inp["a_im"])
    h = mod.make_inputs(_pt(1, 8, 8, 16, "fp16", "herm"), device="cpu")
    assert h["conj_b"] is True and h["b_re"].data_ptr() == h["a_re"].data_ptr() and h["b_re"].stride() == (128, 1, 16)
    # reference by hand: (1 + 2i)(3 - 1i) = 5 + 5i; with conj(B): (1 + 2i)(3 + 1i) = 1 + 7i
    one = lambda v: torch.tensor([[[v]]], dtype=torch.float16)                         # noqa: E731
    hand = {"a_re": one(1.0), "a_im": one(2.0), "b_re": one(3.0), "b_im": one(-1.0), "conj_b": False}
    assert mod.reference(hand).flatten().tolist() == [5.0, 5.0]
    assert mod.torch_baseline(hand).float().flatten().tolist() == [5.0, 5.0]
    hand["conj_b"] = True
    assert mod.reference(hand).flatten().tolist() == [1.0, 7.0]
    assert mod.torch_baseline(hand).float().flatten().tolist() == [1.0, 7.0]
    q = _pt(4, 1000, 300, 500, "fp16")
    assert mod.grid(_cfg(128, 64), q) == (8 * 5, 4) and mod.grid(_cfg(64, 32), q) == (16 * 10, 4)
    assert mod.loop_iterations(_cfg(bk=64), q) == 8 and mod.loop_iterations(_cfg(bk=32), q) == 16
    assert mod.flops(q) == 8 * 4 * 1000 * 300 * 500
    assert mod.bytes_moved(q) == 2 * 2 * 4 * (1000 * 500 + 500 * 300 + 1000 * 300)
    assert mod.bytes_moved(_pt(3, 10, 10, 7, "bf16", "herm")) == 2 * 2 * 3 * (70 + 100)
    assert mod.example_args(_cfg(bk=32), _pt(1, 64, 64, 48))["EVEN_K"] == 0


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    a = torch.zeros(2, 8, 16, dtype=torch.float16)
    b = torch.zeros(2, 16, 4, dtype=torch.float16)
    f = mod.complex_gemm
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        f(a, a, b, b, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        f(a, a, b, b, BLOCK_N=8)
    with pytest.raises(ValueError, match="BLOCK_K=512"):
        f(a, a, b, b, BLOCK_K=512)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        f(a, a, b, b, GROUP_M=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(a, a, b, b, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(a, a, b, b, num_stages=0)
    with pytest.raises(ValueError, match="a_re must be a 2-d or 3-d fp16 / bf16"):
        f(a.float(), a, b, b)
    with pytest.raises(ValueError, match="b_im must be a 2-d or 3-d"):
        f(a, a, b, b[0, 0])
    with pytest.raises(ValueError, match="share one dtype"):
        f(a, a.bfloat16(), b, b)
    with pytest.raises(ValueError, match="all be 2-d or all 3-d"):
        f(a, a, b[0], b[0])
    with pytest.raises(ValueError, match="a_re and a_im must share shape and strides"):
        f(a, a[:, :7], b, b)
    with pytest.raises(ValueError, match="b_re and b_im must share shape and strides"):
        f(a, a, b, b.transpose(1, 2).contiguous().transpose(1, 2))
    with pytest.raises(ValueError, match=r"B must be \[batch=2, K=16, N\]"):
        f(a, a, b[:, :15], b[:, :15])
    with pytest.raises(ValueError, match="empty problem"):
        f(a[:, :0], a[:, :0], b, b)
    with pytest.raises(ValueError, match="out must be a contiguous"):
        f(a, a, b, b, out=torch.empty(2, 2, 8, 5, dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 3, 3, 3, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="op 'tn'"):
        mod.bytes_moved(_pt(1, 3, 3, 3, op="tn"))
    with pytest.raises(ValueError, match="needs N == M"):
        mod.flops(_pt(1, 3, 4, 3, op="herm"))
    with pytest.raises(ValueError, match="K=0"):
        mod.grid(mod.BASELINE, _pt(1, 3, 3, 0))
    with pytest.raises(ValueError, match="batch=70000"):
        mod.grid(mod.BASELINE, _pt(70000, 3, 3, 3))
    with pytest.raises(ValueError, match="exceeds 2147483647"):
        mod.example_args(mod.BASELINE, _pt(1, 65536, 65536, 16))
    with pytest.raises(ValueError, match="BLOCK_K=100"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_K=100), mod.POINTS[0])
    with pytest.raises(ValueError, match="GROUP_M=1.5"):
        mod.grid(dict(mod.BASELINE, GROUP_M=1.5), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 64 configs (BLOCK_M 64 / 128 x BLOCK_N 32 / 64 complex outputs a tile, BLOCK_K 32 / 64,
    GROUP_M 1 / 8, 4 / 8 warps, 2 / 4 stages) with BASELINE among them; at every point each config is valid,
    launches >= 2 waves of programs on an H200 and its pipeline buffers fit sm_90's shared memory
    (192 KiB at most: 128 x 64 x 64, 4 stages).
    (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9: all 192 a Triton compile,
    none spills; registers 63-234 under 3.6 and 63-239 under 3.9 -- the most for BLOCK_M 128 x BLOCK_N 64 on 4
    warps, two 128-register accumulators a thread (234 / 239 at the square bf16 point, 220 / 234 at the
    correlator's transposed B) --; shared memory 20480-180224 bytes under both, the pipeline's buffers
    (176 KiB for 128 x 64 x 64 at 4 stages). Complex tiles of 128 x 128 are left out of the sweep: 256
    accumulator registers a thread on 4 warps.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values()) and "num_warps" in axes
    cfgs = _cfgs()
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert math.prod(mod.grid(c, p)) >= 2 * H200_SMS, (p, c)
            smem = c["num_stages"] * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2 * 2
            assert smem <= 192 * 1024 < SM90_SMEM_PER_BLOCK, (p, c)
            assert c["BLOCK_M"] * c["BLOCK_N"] <= 8192 and p["K"] % c["BLOCK_K"] == 0


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
    """On sm_90 at each point (bf16 nn, fp16 nn, fp16 herm with its transposed B): BASELINE, the smallest tile
    on 8 warps and the largest on 4 and 8 compile without spills, pipeline buffers within sm_90's shared
    memory."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0][0] == mod.BASELINE
    for pi, cfgs in COMPILE_CFGS.items():
        p = mod.POINTS[pi]
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok", f"{cfg} at point {pi} on sm_90: {res.status}: {res.message}"
            assert 0 < res.n_regs <= 255 and res.n_spills == 0, (pi, cfg, res.n_regs, res.n_spills)
            buf = cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * 4
            assert 0 < res.shared <= SM90_SMEM_PER_BLOCK and res.shared <= buf + 8192, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): configs whose stages fit compile without spills within its shared memory
    (at the first point)."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), a NaN-prefilled out buffer,
    sampled complex128 entries, the inputs' buffers, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16"}

    def same(a, b):
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        ar, ai, br, bi = (inputs[k] for k in ("a_re", "a_im", "b_re", "b_im"))
        nan_out = torch.full(out.shape, float("nan"), dtype=out.dtype)
        args = {k: cfg[k] for k in cfg}
        mod.complex_gemm(ar, ai, br, bi, conj_b=inputs["conj_b"], out=nan_out, **args)
        # sampled entries, complex128, one dot each
        b3 = (lambda t: t if t.dim() == 3 else t.unsqueeze(0))
        A = torch.complex(b3(ar).double(), b3(ai).double())
        B = torch.complex(b3(br).double(), b3(bi).double())
        O = out if out.dim() == 4 else out.unsqueeze(1)
        g = torch.Generator().manual_seed(7)
        err = 0.0
        for _ in range(24):
            bb = int(torch.randint(A.shape[0], (1,), generator=g))
            i = int(torch.randint(A.shape[1], (1,), generator=g))
            j = int(torch.randint(B.shape[2], (1,), generator=g))
            col = B[bb, :, j].conj() if inputs["conj_b"] else B[bb, :, j]
            v = (A[bb, i, :] * col).sum()
            err = max(err, abs(float(O[0, bb, i, j]) - v.real.item()), abs(float(O[1, bb, i, j]) - v.imag.item()))
        a3 = b3(ar)
        a = mod._kernel_args(a3, b3(ai), b3(br), b3(bi), O[0], O[1], inputs["conj_b"], cfg)
        base = H.compare(mod.torch_baseline(inputs), ref, point["dtype"])
        tol = H.TOL[point["dtype"]] * max(float(ref.abs().max()), 1e-6)
        return {"dtype": names.get(out.dtype), "nan_out_written": not bool(nan_out.isnan().any()),
                "same_as_nan_out": torch.equal(nan_out, out), "sample_err": err, "tol": tol,
                "inputs_unchanged": all(same(inputs[k], inputs["_copies"][k]) for k in inputs["_copies"]),
                "baseline": base, "flags": {k: a[k] for k in FLAG_KEYS},
                "grid": list(mod._grid(a["M"], a["N"], a3.shape[0], cfg))}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
