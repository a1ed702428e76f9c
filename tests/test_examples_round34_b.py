"""examples/kan_linear.py (the forward pass of a KAN layer, efficient-kan's KANLinear: y = silu(x) @ W_base^T +
B(x) @ W_spline^T with the G + 3 cubic B-spline basis values of every input feature computed in registers from
the x tile and fed straight to tl.dot, one dot a basis function, never materialized) against its float64
Cox-de Boor reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study
sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round33_a.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round34_b.py kan_linear``) that prints one JSON line. The subprocess installs the
harness's interpreter fixes.

Shapes are small, odd and ragged: both dtypes; G of 1, 3, 5, 8 (4 to 11 basis functions); K of 1 to 77, ragged
against BLOCK_K and below it; M and N ragged against their blocks and below them; several row groups with
GROUP_M 1 and 8 (a last group shorter than GROUP_M); x with padded rows (a strided view), w_base a column slice of
a wider weight, the packed spline weight a strided slice; a grid range other than [-1, 1]; x values beyond the
extended grid and on knots; every sweep value of every tunable.

Per case: launch's output within the dtype's tolerance x max|ref| of the float64 reference, the output [M, N]
in x's dtype, fresh and contiguous; the inputs unchanged; torch_baseline within tolerance too.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "kan_linear"
ROLE = "held-out-34"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = {"fp16": 4e-3, "bf16": 2e-2}        # x max|ref|: the A operands (silu, basis) and y rounded to x's dtype

# the study's sweep (scripts/rank_study.py SWEEPS["kan_linear"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [32, 64, 128], "BLOCK_K": [16, 32], "GROUP_M": [1, 8],
              "num_warps": [8], "num_stages": [1, 2]}


def _cfg(bm, bn, bk=16, gm=8, w=8, st=2):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm, "num_warps": w, "num_stages": st}


def _pt(M, K, N, G=5, dtype="bf16"):
    return {"M": M, "K": K, "N": N, "G": G, "dtype": dtype}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the token point scaled down: bf16, G 5, K 77 in 3 steps of 32 (the last 13 wide), 3 x 2 tiles
        "tokens_bf16_g5": (_pt(150, 77, 130, 5, "bf16"), _cfg(64, 64, 32, 8, 8, 2)),
        # the vision point scaled down: fp16, G 8 (11 basis functions), 128-row tiles over 200 rows
        "vision_fp16_g8": (_pt(200, 40, 70, 8, "fp16"), _cfg(128, 32, 16, 1, 4, 1)),
        # the regression point scaled down: fp16, G 5, 128 x 128 tiles, one column tile, K 64 in 2 steps
        "regress_fp16_g5": (_pt(130, 64, 100, 5, "fp16"), _cfg(128, 128, 32, 8, 8, 3)),
        # 9 row tiles x 3 column tiles of 32 with GROUP_M 8 (a last group of one row tile), G 3, bf16
        "groups_bf16_g3": (_pt(9 * 16 + 3, 33, 90, 3, "bf16"), _cfg(16, 32, 16, 8, 4, 2)),
        # the same grid row-major (GROUP_M 1), fp16
        "rowmajor_fp16_g3": (_pt(9 * 16 + 3, 33, 90, 3, "fp16"), _cfg(16, 64, 16, 1, 4, 2)),
        # one input feature, G 1 (4 basis functions): K far below BLOCK_K
        "k1_g1_bf16": (_pt(37, 1, 21, 1, "bf16"), _cfg(64, 128, 16, 8, 4, 2)),
        # M and N below their blocks, bf16 on 128 x 128 tiles on 4 warps
        "tiny_bf16": (_pt(5, 20, 3, 5, "bf16"), _cfg(128, 128, 16, 1, 4, 3)),
        # strided x / w_base / packed weight, G 8, fp16
        "strided_fp16_g8": (_pt(70, 45, 50, 8, "fp16"), _cfg(64, 64, 16, 8, 8, 2)),
        # a grid range of [-2, 0.5] (x beyond it on the right), bf16, G 5, num_stages 1
        "range_bf16": (_pt(66, 48, 65, 5, "bf16"), _cfg(64, 64, 32, 1, 8, 1)),
        # x on the knots and far outside the extended grid, fp16, G 5, BLOCK_K 32 with K 31
        "edges_fp16": (_pt(64, 31, 64, 5, "fp16"), _cfg(64, 64, 32, 8, 4, 2)),
    },
}
STRIDED = ("strided_fp16_g8",)
RANGED = {"range_bf16": (-2.0, 0.5)}
EDGES = ("edges_fp16",)
X_PAD, W_PAD = 7, 5

# configs compiled on sm_90: BASELINE at the first point, the most registers and shared memory (128 x 128 tiles,
# BLOCK_K 32, 2 stages: 160 KiB at G 5, 208 KiB at G 8) at the G 5 and G 8 points, the fewest (64 x 32 x 16, one
# stage) at the third
COMPILE_CFGS = {0: [_cfg(128, 128, 16, 8, 8, 2), _cfg(128, 128, 32, 1, 8, 2)],
                1: [_cfg(128, 128, 32, 8, 8, 2)],
                2: [_cfg(64, 32, 16, 8, 8, 1)]}
SM120_CFGS = [_cfg(64, 64, 16, 8, 4, 2), _cfg(128, 64, 16, 8, 8, 2)]


def _smem_bound(cfg, G) -> int:
    """An upper bound of a config's shared memory: num_stages buffers of a step's x tile and its G + 4 weight
    tiles (2-byte elements), plus 4 KiB of layout-conversion scratch."""
    step = 2 * (cfg["BLOCK_M"] * cfg["BLOCK_K"] + (G + 4) * cfg["BLOCK_K"] * cfg["BLOCK_N"])
    return cfg["num_stages"] * step + 4096


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided, ranged and edge variants (module doc), then copies of the inputs."""
    import torch

    x = inputs["x"]
    if name in STRIDED:
        M, K = x.shape
        big = torch.full((M, K + X_PAD), float("nan"), dtype=x.dtype)
        big[:, :K] = x
        inputs["x"] = big[:, :K]
        wb = inputs["w_base"]
        bw = torch.full((wb.shape[0], K + W_PAD), float("nan"), dtype=wb.dtype)
        bw[:, W_PAD:] = wb
        inputs["w_base"] = bw[:, W_PAD:]
        wp = inputs["w_packed"]
        nb, N, _ = wp.shape
        bp = torch.full((2 * nb, N + 3, K), float("nan"), dtype=wp.dtype)
        bp[::2, 1:N + 1] = wp
        inputs["w_packed"] = bp[::2, 1:N + 1]
    if name in RANGED:
        inputs["grid_range"] = RANGED[name]
    if name in EDGES:
        G = point["G"]
        knots = [-1.0 + (i - 3) * 2.0 / G for i in range(G + 7)]          # exact in fp16 for G 5? kept as is
        vals = torch.tensor(knots + [-5.0, 5.0, -2.6, 2.6, 0.0, 1.0, -1.0], dtype=x.dtype)
        flat = x.reshape(-1).clone()
        flat[: 3 * vals.numel()] = vals.repeat(3)
        inputs["x"] = flat.reshape(x.shape)
    for k in ("x", "w_base", "w_packed", "w_spline"):
        inputs[k + "0"] = inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["M"], p["N"]] and res["dtype"] == p["dtype"], res
    assert res["contiguous"] is True and res["inputs_unchanged"] is True, res
    assert res["baseline_bad"] == 0, res
    assert res["scale"] > 0.1 and res["n_distinct"] > 1, res
    # the spline term matters: the result without it is far from the reference
    assert res["base_only_err"] > 0.1 * res["scale"], res


def test_cases_cover_every_code_path():
    """Both dtypes; G 1 / 3 / 5 / 8; K below BLOCK_K and ragged above it; M and N below their blocks and ragged
    above them; several row groups with GROUP_M 1 and 8, a last group shorter than GROUP_M; strided operands; a
    grid range other than [-1, 1]; knot and out-of-grid x; every sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["G"] for p, _ in cases.values()} >= {1, 3, 5, 8}
    assert any(p["K"] < c["BLOCK_K"] for p, c in cases.values())
    assert any(p["K"] % c["BLOCK_K"] and p["K"] > c["BLOCK_K"] for p, c in cases.values())
    for d, b in (("M", "BLOCK_M"), ("N", "BLOCK_N")):
        assert any(p[d] < c[b] for p, c in cases.values()), d
        assert any(p[d] % c[b] and p[d] > c[b] for p, c in cases.values()), d
    tiles_m = {n: -(-p["M"] // c["BLOCK_M"]) for n, (p, c) in cases.items()}
    assert any(tiles_m[n] > c["GROUP_M"] > 1 and tiles_m[n] % c["GROUP_M"] for n, (p, c) in cases.items())
    assert any(tiles_m[n] > 1 and c["GROUP_M"] == 1 and -(-p["N"] // c["BLOCK_N"]) > 1
               for n, (p, c) in cases.items())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (meta tensors) with the launch's shapes, dtypes, strides
    and constants; the 1-D grid and the loop length; bytes_moved / flops; 70-110 MB moved a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "kan_linear", "pack_spline_weight", "b_splines"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        M, K, N, G = p["M"], p["K"], p["N"], p["G"]
        dt = dts[p["dtype"]]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            x, wb, wp, o = a["X"], a["WB"], a["WS"], a["OUT"]
            assert all(t.device.type == "meta" and t.dtype == dt for t in (x, wb, wp, o))
            assert x.shape == (M, K) and wb.shape == (N, K) and wp.shape == (G + 3, N, K) and o.shape == (M, N)
            assert (a["M"], a["N"], a["K"], a["NB"]) == (M, N, K, G + 3)
            assert (a["stride_xm"], a["stride_bn"], a["stride_sj"], a["stride_sn"], a["stride_om"]) == (
                K, K, N * K, K, N)
            assert a["grid_lo"] == -1.0 and a["inv_h"] == G / 2
            assert all(a[k] == cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"))
            assert mod.grid(cfg, p) == ((-(-M // cfg["BLOCK_M"])) * (-(-N // cfg["BLOCK_N"])),)
            assert mod.loop_iterations(cfg, p) == -(-K // cfg["BLOCK_K"])
        assert mod.bytes_moved(p) == 2 * (M * K + (G + 4) * N * K + M * N)
        assert 60e6 < mod.bytes_moved(p) < 120e6
        assert mod.flops(p) == 2 * M * N * K * (G + 4) + M * K * (4 + 10 * (G + 3))
        # >= 50 us on an H200 at 990 TFLOP/s dense
        assert mod.flops(p) / 990e12 > 50e-6, p
    assert [(p["M"], p["K"], p["N"], p["G"], p["dtype"]) for p in mod.POINTS] == [
        (16384, 1024, 1024, 5, "bf16"), (65536, 256, 256, 8, "fp16"), (4096, 2048, 1024, 5, "fp16")]


def test_hooks_on_small_points_and_inputs():
    """The basis: Cox-de Boor against the kernel's closed form, a partition of unity inside the grid, zero beyond
    the extended grid; reference and torch_baseline by hand; make_inputs' seed, dtypes, spread and packing;
    grid / loop; bytes / flops; an empty batch."""
    import torch

    mod = load_example(KERNEL)
    for G, rng in ((5, (-1.0, 1.0)), (8, (-1.0, 1.0)), (3, (-2.0, 0.5))):
        lo, hi = rng
        h = (hi - lo) / G
        x = torch.linspace(lo - 4 * h, hi + 4 * h, 2001, dtype=torch.float64)
        b = mod.b_splines(x, G, rng)
        assert b.shape == (2001, G + 3)
        u = (x - lo) / h + 1.0
        t = (u[:, None] - torch.arange(G + 3, dtype=torch.float64)[None, :]).abs()
        closed = torch.where(t < 1, (4 - 6 * t * t + 3 * t ** 3) / 6, torch.where(t < 2, (2 - t) ** 3 / 6, 0.0))
        assert torch.allclose(b, closed, atol=1e-12), G
        inside = (x >= lo) & (x < hi)
        assert torch.allclose(b[inside].sum(1), torch.ones(int(inside.sum()), dtype=torch.float64))
        outside = (x < lo - 3 * h) | (x >= hi + 3 * h)
        assert int(outside.sum()) > 0 and float(b[outside].abs().max()) == 0.0
    # by hand: x 0 at G 2 on [-1, 1] (h 1): u 4 -> B_1, B_2, B_3 = 1/6, 4/6, 1/6; x 0.5: u 4.5
    x = torch.tensor([[0.0], [0.5]])
    ws = torch.zeros((1, 1, 5))
    ws[0, 0] = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    inp = {"x": x, "w_base": torch.tensor([[2.0]]), "w_spline": ws, "w_packed": mod.pack_spline_weight(ws)}
    want0 = 0.0 + (2 + 12 + 4) / 6
    s = 1 / (1 + 2.718281828459045 ** -0.5)
    want1 = 2 * 0.5 * s + (2 * 0.125 / 6 + 3 * (4 - 6 * 0.25 + 3 * 0.125) / 6 + 4 * (4 - 6 * 0.25 + 3 * 0.125) / 6
                           + 5 * 0.125 / 6)
    ref = mod.reference(inp)
    assert ref.dtype == torch.float64 and abs(float(ref[0, 0]) - want0) < 1e-12
    assert abs(float(ref[1, 0]) - want1) < 1e-9
    assert torch.allclose(mod.torch_baseline(inp).double(), ref, atol=1e-5)
    # make_inputs: seeded, dtypes, spread, packing
    p = _pt(300, 40, 24, 8, "fp16")
    a = mod.make_inputs(p, seed=1, device="cpu")
    assert a["x"].dtype == torch.float16 and a["x"].shape == (300, 40)
    assert a["w_base"].shape == (24, 40) and a["w_spline"].shape == (24, 40, 11)
    assert a["w_packed"].shape == (11, 24, 40) and a["w_packed"].is_contiguous()
    assert torch.equal(a["w_packed"][3], a["w_spline"][:, :, 3]) and a["grid_range"] == (-1.0, 1.0)
    assert 0.5 < float(a["x"].float().std()) < 0.7 and a["x"].unique().numel() > 1000
    assert 0.02 < float((a["x"].float().abs() > 1).float().mean()) < 0.2
    assert float(a["w_base"].float().abs().max()) <= 40 ** -0.5 + 1e-3
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], a["x"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], a["x"])
    assert mod.make_inputs(_pt(4, 4, 4), device="cpu")["x"].dtype == torch.bfloat16
    # grid / loop, bytes / flops
    c = _cfg(64, 64, 32)
    assert mod.grid(c, p) == (5,) and mod.loop_iterations(c, p) == 2
    assert mod.bytes_moved(p) == 2 * (300 * 40 + 12 * 24 * 40 + 300 * 24)
    assert mod.flops(p) == 2 * 300 * 24 * 40 * 12 + 300 * 40 * 114
    # an empty batch: [0, N], nothing launched
    e = mod.kan_linear(a["x"][:0], a["w_base"], a["w_packed"])
    assert e.shape == (0, 24) and e.dtype == torch.float16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(20, 24, 16, 5, "fp16"), device="cpu")
    x, wb, wp = inp["x"], inp["w_base"], inp["w_packed"]
    with pytest.raises(ValueError, match="BLOCK_M=100"):
        mod.kan_linear(x, wb, wp, BLOCK_M=100)
    with pytest.raises(ValueError, match="BLOCK_N=8"):
        mod.kan_linear(x, wb, wp, BLOCK_N=8)
    with pytest.raises(ValueError, match="BLOCK_K=24"):
        mod.kan_linear(x, wb, wp, BLOCK_K=24)
    with pytest.raises(ValueError, match="GROUP_M=0"):
        mod.kan_linear(x, wb, wp, GROUP_M=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.kan_linear(x, wb, wp, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.kan_linear(x, wb, wp, num_stages=0)
    with pytest.raises(ValueError, match="x must be a 2-d float16"):
        mod.kan_linear(x.float(), wb, wp)
    with pytest.raises(ValueError, match="unit K stride"):
        mod.kan_linear(torch.zeros((24, 20), dtype=torch.float16).t(), wb, wp)
    with pytest.raises(ValueError, match="w_base must be"):
        mod.kan_linear(x, wb[:, :23], wp)
    with pytest.raises(ValueError, match="w_base must be"):
        mod.kan_linear(x, wb.bfloat16(), wp)
    with pytest.raises(ValueError, match="w_packed must be"):
        mod.kan_linear(x, wb, wp[:3])
    with pytest.raises(ValueError, match="w_packed must be"):
        mod.kan_linear(x, wb, inp["w_spline"])
    with pytest.raises(ValueError, match="w_packed must have a unit K stride"):
        mod.kan_linear(x, wb, torch.zeros((8, 24, 16), dtype=torch.float16).transpose(1, 2))
    with pytest.raises(ValueError, match="basis stride 536870912"):
        mod.kan_linear(x, wb, torch.empty_strided((8, 16, 24), (2**29, 24, 1), dtype=torch.float16, device="meta"))
    with pytest.raises(ValueError, match="x's device"):
        mod.kan_linear(x, wb, wp.to("meta"))
    with pytest.raises(ValueError, match="grid_range"):
        mod.kan_linear(x, wb, wp, (1.0, -1.0))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(2, 4, 4, 5, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="G=0"):
        mod.bytes_moved(_pt(2, 4, 4, 0))
    with pytest.raises(ValueError, match="M=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 4))
    with pytest.raises(ValueError, match="K=2.5"):
        mod.flops(_pt(2, 2.5, 4))
    with pytest.raises(ValueError, match="N=-1"):
        mod.example_args(mod.BASELINE, _pt(2, 4, -1))
    with pytest.raises(ValueError, match="BLOCK_K=3"):
        mod.loop_iterations(dict(mod.BASELINE, BLOCK_K=3), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK_M='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK_M="abc"), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep (SWEEP_AXES, BASELINE among it): at every point each config is valid, launches >= 1 wave of
    programs on an H100 and fits the shared-memory bound. (Every config was compiled for sm_90 at every point with
    triton 3.6.0 and 3.9: none spills; registers 73-181 under 3.6, 71-181 under 3.9; shared memory 7168-212992
    bytes under both, within _smem_bound. 3 stages (240-312 KiB at BLOCK_K 32 x BLOCK_N 128), 4 warps (92-102
    spills at 128 x 128 x 32) and 16 warps (34-44 spills) are left out.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_warps") and axes["num_warps"] == [8]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            (g,) = mod.grid(c, p)
            assert g >= H100_SMS, (p, c)
            assert _smem_bound(c, p["G"]) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod.loop_iterations(c, p) == -(-p["K"] // c["BLOCK_K"])


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
    """On sm_90 at each point: BASELINE, and the sweep's most registers / most shared memory, compile without
    spills within the shared bound."""
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
            assert 0 <= res.shared <= min(_smem_bound(cfg, p["G"]), SM90_SMEM_PER_BLOCK), (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): two configs that fit it compile at the first point without spills."""
    mod = load_example(KERNEL)
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        bound = _smem_bound(cfg, mod.POINTS[0]["G"])
        assert 0 <= res.shared <= min(bound, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference; torch_baseline against reference; the base-only result's
    distance from it; the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        unchanged = all(torch.equal(inputs[k].nan_to_num(), inputs[k + "0"].nan_to_num())
                        for k in ("x", "w_base", "w_packed", "w_spline"))
        base = H.compare(mod.torch_baseline(inputs), ref, point["dtype"], TOL)
        base_only = torch.nn.functional.silu(inputs["x"].double()) @ inputs["w_base"].double().t()
        return {"dtype": {torch.float16: "fp16", torch.bfloat16: "bf16"}.get(out.dtype, str(out.dtype)),
                "contiguous": out.is_contiguous(), "inputs_unchanged": unchanged, "baseline_bad": base["n_bad"],
                "base_only_err": float((base_only - ref).abs().max()), "n_distinct": int(out.unique().numel())}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
