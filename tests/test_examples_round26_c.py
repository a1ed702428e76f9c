"""examples/dwconv1d_wgrad.py (the weight and bias gradient of Mamba's / Mamba-2's / Hyena's causal
depthwise conv1d: x, dy [B, L, D] fp16 / bf16 channel-last -> dW[d, t] = sum_{b, l} dy[b, l, d]
x[b, l - (W - 1) + t, d] (zero before each sequence's start) and db[d] = sum dy, fp32, W 2-4; a
[BLOCK_L, BLOCK_D] tile of dy and W row-shifted tiles of x a step, L_STEPS steps a slab of one
sequence, each slab's W + 1 partial rows into an fp32 workspace that `_reduce_kernel` sums)
against its torch reference on the CPU through Triton's interpreter, its launcher hooks against
the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round25_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round26_c.py dwconv1d_wgrad``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy
>= 2.3 the runtime loop bounds read as ints, see example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: EVEN_D x EVEN_L all four ways; W 2, 3 and 4; a sequence shorter
than the conv's halo (L 2 < W - 1: every shifted row of a tap past the start) and of one row; a
one-channel D; a channel block wider than D; one slab holding L and several with a short last one
(1-17 slabs a sequence; 34 slabs in all: two steps of the reduce, the second masked); a slab of
1024 rows; x a column slice of a wider buffer and dy a column slice of another (row pitches 88 and
56, read in place) whose other columns are NaN (a stray read poisons the result); fp16 and bf16;
BLOCK_D 16-128, BLOCK_L 4-16, L_STEPS 1-64, 1-8 warps, num_stages 1 / 2.

Per case: launch's [D, W + 1] against the fp32 reference within the dtype's tolerance (the
harness's per-element check) and each element within 2e-5 of the sum of its terms' magnitudes
(fp32 accumulation, only the order differs); the wrapper's dweight [D, W] / dbias [D], fp32 and
contiguous, equal to launch's columns bit for bit; a second launch equal bit for bit
(deterministic: no atomics); torch_baseline (the conv's eager backward) within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "dwconv1d_wgrad"
ROLE = "held-out-26"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["dwconv1d_wgrad"] once the lead adds it)
SWEEP_AXES = {"BLOCK_D": [32, 64, 128], "BLOCK_L": [8, 16], "L_STEPS": [4, 16, 64], "num_warps": [2, 4, 8],
              "num_stages": [1]}


def _cfg(bd, bl, ls, w=4, st=1):
    return {"BLOCK_D": bd, "BLOCK_L": bl, "L_STEPS": ls, "num_warps": w, "num_stages": st}


def _pt(B, L, D, W=4, dtype="bf16", **kw):
    return {"B": B, "L": L, "D": D, "W": W, "dtype": dtype, **kw}


# case -> (point, cfg); comments: EVEN_D / EVEN_L, slabs a sequence (n_ls), steps a slab
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # no mask but the causal head: EVEN_D 1 (64 = 2 x 32), EVEN_L 1 (64 = 8 x 8); 2 slabs of
        # 4 x 8 rows a sequence
        "even_bf16_w4": (_pt(2, 64, 64, 4, "bf16"), _cfg(32, 8, 4)),
        # EVEN_D 0 (45 = 32 + 13), EVEN_L 1 (48 = 3 x 16); slabs of 2 x 16: 2 a sequence, the last
        # one step; 2 warps
        "ragged_d_fp16_w3": (_pt(3, 48, 45, 3, "fp16"), _cfg(32, 16, 2, 2)),
        # EVEN_D 1, EVEN_L 0 (37 = 4 x 8 + 5); slabs of 3 x 8: 2 a sequence, the last 13 rows (2
        # steps, the second 5 rows); W 2; 8 warps
        "ragged_l_bf16_w2": (_pt(2, 37, 64, 2, "bf16"), _cfg(64, 8, 3, 8)),
        # a channel block of 128 over D 100 (EVEN_D 0), EVEN_L 0 (50 = 3 x 16 + 2); one slab of
        # 64 x 16 holds L: its loop runs 4 steps; num_stages 2
        "ragged_both_fp16_w4": (_pt(1, 50, 100, 4, "fp16"), _cfg(128, 16, 64, 4, 2)),
        # L 2 < W - 1 = 3: tap 0 sees only zero padding, taps 1-2 one row; 4 sequences of one slab
        # (one step of 8 rows, 6 masked); EVEN_D 0 (24 < 32); 1 warp
        "short_seq_bf16_w4": (_pt(4, 2, 24, 4, "bf16"), _cfg(32, 8, 1, 1)),
        # Mamba-2-like: x the columns 16 .. 64 of a [2, 40, 88] buffer, dy the columns 0 .. 48 of
        # a [2, 40, 56] one, their other columns NaN; EVEN_D 0 (48 = 32 + 16), EVEN_L 1; slabs of
        # 2 x 8: 3 a sequence, the last one step
        "pitched_bf16_w4": (_pt(2, 40, 48, 4, "bf16"), _cfg(32, 8, 2)),
        # one step a slab: 17 slabs a sequence (130 = 16 x 8 + 2: EVEN_L 0), 34 in all: the reduce
        # takes two steps of 32 slabs, the second masked; EVEN_D 1; 2 warps
        "many_slabs_fp16_w3": (_pt(2, 130, 32, 3, "fp16"), _cfg(32, 8, 1, 2)),
        # slabs of 64 x 16 = 1024 rows: 2 a sequence, the second 76 rows (5 steps, the last 12 rows:
        # EVEN_L 0); BLOCK_D 16 = D (EVEN_D 1); 8 warps
        "long_slab_bf16_w3": (_pt(1, 1100, 16, 3, "bf16"), _cfg(16, 16, 64, 8)),
        # one channel (D 1: EVEN_D 0 at BLOCK_D 32), L 9 (BLOCK_L 4: EVEN_L 0), slabs of 2 x 4: 2 a
        # sequence, the last one row; W 2; 1 warp
        "one_channel_fp16_w2": (_pt(2, 9, 1, 2, "fp16"), _cfg(32, 4, 2, 1)),
    },
}
PITCHED = "pitched_bf16_w4"
X_BUF, X_COL0, DY_BUF = 88, 16, 56

# configs compiled at the module's first POINT on sm_90 (BASELINE first): the 128 x 16 tile on 2
# warps (32 fp32 elements a thread a tile: the most registers), the smallest tile on 8 warps (one
# element a thread), the widest tile on 8 warps
COMPILE_CFGS = [_cfg(64, 16, 16, 4), _cfg(128, 16, 4, 2), _cfg(32, 8, 64, 8), _cfg(128, 16, 16, 8)]
SM120_CFGS = [_cfg(64, 16, 16, 4), _cfg(128, 16, 64, 8), _cfg(32, 8, 4, 2)]


def _flags(p, c):
    """(EVEN_D, EVEN_L, slabs a sequence, steps of the last slab) of a case."""
    L, slab = p["L"], c["BLOCK_L"] * c["L_STEPS"]
    n_ls = -(-L // slab)
    last = L - (n_ls - 1) * slab
    return int(p["D"] % c["BLOCK_D"] == 0), int(L % c["BLOCK_L"] == 0), n_ls, -(-last // c["BLOCK_L"])


def _reduce_bytes(cfg) -> int:
    """An upper bound of the epilogue's shared memory: the cross-warp partials of one BLOCK_D row
    reduction (fp32 a warp a channel)."""
    return cfg["num_warps"] * cfg["BLOCK_D"] * 4


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """PITCHED: x the columns X_COL0 .. X_COL0 + D of a [B, L, X_BUF] buffer, dy the first D columns
    of a [B, L, DY_BUF] one, every other column NaN."""
    import torch

    if name == PITCHED:
        x, dy = inputs["x"], inputs["dy"]
        B, L, D = x.shape
        bx = torch.full((B, L, X_BUF), float("nan"), dtype=x.dtype)
        bx[:, :, X_COL0:X_COL0 + D] = x
        by = torch.full((B, L, DY_BUF), float("nan"), dtype=dy.dtype)
        by[:, :, :D] = dy
        inputs["x"], inputs["dy"] = bx[:, :, X_COL0:X_COL0 + D], by[:, :, :D]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    D, W = p["D"], p["W"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [D, W + 1], res
    assert res["n_loose"] == 0, res                       # each element within 2e-5 of its terms' magnitude
    assert res["dweight"] == [[D, W], "fp32", True] and res["dbias"] == [[D], "fp32", True], res
    assert res["wrapper_equal"] is True and res["deterministic"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["nonzero"] is True, res
    if name == PITCHED:
        assert res["x_strides"] == [p["L"] * X_BUF, X_BUF, 1] and res["dy_strides"] == [p["L"] * DY_BUF, DY_BUF, 1], res


def test_cases_cover_every_code_path():
    """Every mask variant (EVEN_D x EVEN_L), W 2 / 3 / 4, both dtypes; a sequence shorter than the
    halo and one row long; one slab holding L and several with a short last one; more slabs than
    one step of the reduce; a channel block wider than D; the tunables bracketing the sweep."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["W"] for p, _ in cases} == {2, 3, 4}
    fl = [(p, c, _flags(p, c)) for p, c in cases]
    assert {(f[0], f[1]) for _, _, f in fl} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert any(p["L"] < p["W"] - 1 for p, _ in cases) and any(p["D"] == 1 for p, _ in cases)
    assert any(f[2] == 1 and f[3] > 1 for _, _, f in fl)                           # one slab, looping
    assert any(f[2] > 1 and f[3] < c["L_STEPS"] for _, c, f in fl)                # a short last slab
    assert any(p["B"] * f[2] > mod.RBLOCK_S for p, _, f in fl)                    # two reduce steps
    assert any(c["BLOCK_D"] > p["D"] for p, c in cases)
    for k in ("BLOCK_D", "BLOCK_L", "L_STEPS", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)
    assert {c["num_stages"] for _, c in cases} == {1, 2}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (x a column slice at the Mamba-2 point), n_ls, EVEN_D / EVEN_L, the grid, the steps a
    program (loop_iterations, cta_iterations) and the reduce kernel; bytes_moved / flops; 0.6-0.7 GB
    of x and dy read a point (roughly 130-170 us at the H200's HBM rate)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "secondary_kernels", "example_args", "torch_baseline", "conv1d_wgrad"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1 and mod.ROLE == ROLE
    assert mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, L, D, W = p["B"], p["L"], p["D"], p["W"]
        pitch = p.get("x_pitch", D)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (B, L, D) and a["X"].dtype == dts[p["dtype"]]
            assert a["X"].stride() == (L * pitch, pitch, 1)
            assert a["X"].data_ptr() == 2 * p.get("x_col0", 0) and a["X"].data_ptr() % 16 == 0
            assert a["DY"].shape == (B, L, D) and a["DY"].dtype == a["X"].dtype and a["DY"].is_contiguous()
            n_ls = -(-L // (cfg["BLOCK_L"] * cfg["L_STEPS"]))
            assert a["WS"].shape == (B * n_ls, W + 1, D) and a["WS"].dtype == torch.float32
            assert (a["D"], a["L"], a["n_ls"], a["KW"]) == (D, L, n_ls, W)
            assert (a["stride_xb"], a["stride_xl"], a["stride_yb"], a["stride_yl"], a["stride_ws"]) == (
                L * pitch, pitch, L * D, D, (W + 1) * D)
            assert (a["EVEN_D"], a["EVEN_L"]) == (int(D % cfg["BLOCK_D"] == 0), int(L % cfg["BLOCK_L"] == 0))
            assert (a["BLOCK_D"], a["BLOCK_L"], a["L_STEPS"]) == (cfg["BLOCK_D"], cfg["BLOCK_L"], cfg["L_STEPS"])
            gx = -(-D // cfg["BLOCK_D"])
            assert mod.grid(cfg, p) == (gx, B * n_ls)
            assert mod.loop_iterations(cfg, p) == min(cfg["L_STEPS"], -(-L // cfg["BLOCK_L"]))
            it = mod.cta_iterations(cfg, p)
            assert len(it) == gx * B * n_ls and max(it) == mod.loop_iterations(cfg, p)
            assert sum(it) == gx * B * sum(-(-min(cfg["BLOCK_L"] * cfg["L_STEPS"], L - k * cfg["BLOCK_L"] *
                                                 cfg["L_STEPS"]) // cfg["BLOCK_L"]) for k in range(n_ls))
            [sec] = mod.secondary_kernels(cfg, p)
            assert sec["grid"] == -(-D // mod.RBLOCK_D) * (W + 1)
            assert sec["iterations"] == -(-(B * n_ls) // mod.RBLOCK_S)
            assert sec["dram_bytes"] == sec["tile_bytes"] == mod.RBLOCK_S * mod.RBLOCK_D * 4
        assert mod.bytes_moved(p) == 2 * B * L * D * 2 + D * (W + 1) * 4
        assert mod.flops(p) == (2 * W + 1) * B * L * D
        assert 0.6e9 <= mod.bytes_moved(p) <= 0.72e9, p
        assert B * L * pitch * 2 < 2 * 2**30                                    # x's buffer under 2 GB
    # the points differ: D (narrow / mid / wide), W, the dtype, x's row pitch, a ragged L
    assert sorted(p["D"] for p in mod.POINTS) == [1536, 5376, 12288]
    assert {p["W"] for p in mod.POINTS} == {3, 4}
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert sum("x_pitch" in p for p in mod.POINTS) == 1
    flags = {(mod.example_args(c, p)["EVEN_D"], mod.example_args(c, p)["EVEN_L"]) for p in mod.POINTS for c in cfgs}
    assert flags == {(1, 1), (1, 0)}                                   # every D a multiple of 128; L 4500 not of 8
    assert any(p["L"] % (c["BLOCK_L"] * c["L_STEPS"]) for p in mod.POINTS for c in cfgs)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtype, the seed, the x slice of a pitched buffer; reference by hand on a
    tiny case (the causal padding); torch_baseline's columns; cta_iterations' order; bytes / flops."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 6, 5, 3, "fp16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, dy = inp["x"], inp["dy"]
    assert x.shape == dy.shape == (2, 6, 5) and x.dtype == dy.dtype == torch.float16 and inp["W"] == 3
    assert x.is_contiguous() and dy.is_contiguous()
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["dy"], dy)
    assert 0.003 < float(dy.float().std()) < 0.03 and 0.5 < float(x.float().std()) < 2.5
    ps = mod.make_inputs(_pt(2, 3, 4, 4, "bf16", x_pitch=10, x_col0=2), device="cpu")["x"]
    assert ps.shape == (2, 3, 4) and ps.stride() == (30, 10, 1) and ps.dtype == torch.bfloat16
    # by hand: dW[d, t] = sum_l dy[l] x[l - (W - 1) + t]
    xs = torch.tensor([[[1.0], [2.0], [3.0]]])
    ys = torch.tensor([[[1.0], [10.0], [100.0]]])
    ref = mod.reference({"x": xs, "dy": ys, "W": 3})
    # t = 2: 1 + 20 + 300; t = 1: 10 x 1 + 100 x 2; t = 0: 100 x 1; db 111
    assert ref.tolist() == [[100.0, 210.0, 321.0, 111.0]]
    base = mod.torch_baseline({"x": xs.half(), "dy": ys.half(), "W": 3})
    assert base.dtype == torch.float32 and base.tolist() == [[100.0, 210.0, 321.0, 111.0]]
    r = mod.reference(inp)
    assert r.shape == (5, 4) and r.dtype == torch.float32
    assert mod.cta_iterations(_cfg(4, 2, 3), _pt(2, 9, 8)) == [3, 3, 2, 2] * 2          # 2 channel blocks
    assert mod.grid(_cfg(4, 2, 3), _pt(2, 9, 8)) == (2, 4)
    assert mod.loop_iterations(_cfg(4, 2, 3), _pt(2, 9, 8)) == 3
    assert mod.loop_iterations(_cfg(4, 8, 64), _pt(2, 9, 8)) == 2
    assert mod.bytes_moved(p) == 2 * 2 * 6 * 5 * 2 + 5 * 4 * 4
    assert mod.flops(p) == 7 * 2 * 6 * 5


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(2, 8, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_D=48"):
        mod.conv1d_wgrad(x, x, 4, BLOCK_D=48)
    with pytest.raises(ValueError, match="BLOCK_L=0"):
        mod.conv1d_wgrad(x, x, 4, BLOCK_L=0)
    with pytest.raises(ValueError, match="8192"):
        mod.conv1d_wgrad(x, x, 4, BLOCK_D=1024, BLOCK_L=16)
    with pytest.raises(ValueError, match="L_STEPS=0"):
        mod.conv1d_wgrad(x, x, 4, L_STEPS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.conv1d_wgrad(x, x, 4, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.conv1d_wgrad(x, x, 4, num_stages=0)
    with pytest.raises(ValueError, match="width=5"):
        mod.conv1d_wgrad(x, x, 5)
    with pytest.raises(ValueError, match="width=1"):
        mod.conv1d_wgrad(x, x, 1)
    with pytest.raises(ValueError, match="expected x and dy"):
        mod.conv1d_wgrad(x[0], x[0], 4)
    with pytest.raises(ValueError, match="one shape"):
        mod.conv1d_wgrad(x, x[:, :4], 4)
    with pytest.raises(ValueError, match="fp16 / bf16 of one dtype"):
        mod.conv1d_wgrad(x, x.half(), 4)
    with pytest.raises(ValueError, match="fp16 / bf16 of one dtype"):
        mod.conv1d_wgrad(x.float(), x.float(), 4)
    with pytest.raises(ValueError, match="unit D stride"):
        mod.conv1d_wgrad(torch.ones(2, 16, 8, dtype=torch.bfloat16).transpose(1, 2), x, 4)
    long = torch.empty((2, 2**20, 2), dtype=torch.float16, device="meta")       # meta: checked, never launched
    with pytest.raises(ValueError, match="65535"):
        mod.conv1d_wgrad(long, long, 4, BLOCK_L=4, L_STEPS=1)
    wide = torch.empty((1, 4096, 2**20), dtype=torch.float16, device="meta")[:, :, :8]
    with pytest.raises(ValueError, match="int32 row offsets"):
        mod.conv1d_wgrad(wide, wide, 4)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 4, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="W=5"):
        mod.bytes_moved(_pt(1, 4, 4, 5))
    with pytest.raises(ValueError, match="L=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4))
    with pytest.raises(ValueError, match="x_pitch=10"):
        mod.example_args(mod.BASELINE, _pt(1, 4, 8, 4, x_pitch=10, x_col0=4))
    with pytest.raises(ValueError, match="BLOCK_D=96"):
        mod.grid(dict(mod.BASELINE, BLOCK_D=96), mod.POINTS[0])
    # empty batch, sequence or channels: nothing launched, zero gradients
    dw, db = mod.conv1d_wgrad(torch.ones(0, 8, 16, dtype=torch.bfloat16), torch.ones(0, 8, 16, dtype=torch.bfloat16), 3)
    assert dw.shape == (16, 3) and db.shape == (16,) and not dw.any() and not db.any()
    dw, db = mod.conv1d_wgrad(torch.ones(2, 0, 16, dtype=torch.float16), torch.ones(2, 0, 16, dtype=torch.float16), 4)
    assert dw.shape == (16, 4) and not dw.any()


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_D 32-128 x BLOCK_L 8 / 16 x L_STEPS 4 / 16 / 64 x 2 / 4 /
    8 warps, num_stages 1: tiles of 256-2048 elements, 1-32 a thread) with BASELINE among them; at
    every point each config is valid, its slabs fit the grid's second axis, it launches >= 4 waves
    of programs on an H200 (1152 at the fewest: Mamba-1 130M's 12 channel blocks of 128 x 96 slabs
    of 1024 rows), and its workspace is 0.4-16 % of the inputs ((W + 1) / slab rows). (Every config
    was compiled for sm_90 at every point with triton 3.6.0 and 3.9: all compile, none spills;
    32-253 registers under 3.6 (32-252 under 3.9), the most for the 128 x 16 tile on 2 warps at W 4
    (5 accumulator tiles of 32 fp32 registers; 64-bit row offsets spilled it, 6-10 registers); shared
    memory 256 B - 4 KiB under 3.6 (128 B - 4 KiB under 3.9): the row reductions after the loop.
    num_stages: no dot, the loop's loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy = mod.grid(c, p)
            assert gx * gy >= 4 * H200_SMS and gy <= 65535, (p, c)
            assert c["BLOCK_D"] * c["BLOCK_L"] <= 32 * 32 * c["num_warps"], c       # <= 32 elements a thread
            ws = gy * (p["W"] + 1) * p["D"] * 4
            assert 0.003 <= ws / (mod.bytes_moved(p) - p["D"] * (p["W"] + 1) * 4) <= 0.16, (p, c)
            assert _reduce_bytes(c) <= SM90_SMEM_PER_BLOCK


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
    """On sm_90: BASELINE and three more at the first point (Mamba-2 2.7B, x pitched, W 4), the
    128 x 16 tile on 2 warps (the most registers) among them, compile without spills, their shared
    memory at most the row reductions' partials; and BASELINE and the 2-warp 128 x 16 tile at the
    other two (Mamba-1 130M, fp16; StripedHyena, W 3, L ragged: EVEN_L 0)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= _reduce_bytes(cfg), (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert res.shared <= _reduce_bytes(cfg), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120: BASELINE, the widest tile on 8 warps and the smallest on 2 compile without spills,
    their shared memory the row reductions' (no pipeline: num_stages 1)."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(_reduce_bytes(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against the sum of
    its terms' magnitudes (2e-5); the wrapper's two outputs against launch's columns; a second launch
    bit for bit; torch_baseline against reference; strides; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        W = inputs["W"]
        mag = mod.reference({"x": inputs["x"].abs(), "dy": inputs["dy"].abs(), "W": W})
        loose = (out - ref).abs() > 2e-5 * mag + 1e-30
        dw, db = mod.conv1d_wgrad(inputs["x"], inputs["dy"], W, **cfg)
        again = mod.launch(inputs, cfg)
        return {"n_loose": int(loose.sum()),
                "dweight": [list(dw.shape), names.get(dw.dtype), dw.is_contiguous()],
                "dbias": [list(db.shape), names.get(db.dtype), db.is_contiguous()],
                "wrapper_equal": bool(torch.equal(dw, out[:, :W]) and torch.equal(db, out[:, W])),
                "deterministic": bool(torch.equal(again, out)),
                "nonzero": bool((ref != 0).any()),
                "x_strides": list(inputs["x"].stride()), "dy_strides": list(inputs["dy"].stride()),
                "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
