"""examples/bev_pool.py (BEVDet's bev_pool_v2 / BEVFusion's bev_pool: frustum points pre-sorted by BEV cell and
run-length encoded into intervals; for each interval the sum of its points' feature rows feat[ranks_feat[p]]
times their depth weights depth[ranks_depth[p]], fp32, stored to the interval's cell of a zero-filled
channel-last [B, Y, X, C] grid; a 1-d grid of (interval group, C chunk) programs, each walking its INTS
intervals BLOCK_P points a step) against its torch reference on the CPU through Triton's interpreter, its
launcher hooks against the shapes and the drawn geometry, its study sweep against the points, and a compile
for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round32_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round33_c.py bev_pool``) that prints one JSON line; the subprocess installs the
harness's interpreter fixes (bf16 rounding; the runtime loop bounds -- the interval walk's trip count is a
loaded length).

Shapes are small, odd and ragged: 1-2 samples of 2-3 cameras, 3-6 depth bins, 3x5 to 4x9 feature maps (the
module's ring-camera geometry: intervals of 1 to ~200 points, a grid of 1 x 1 cells -- every point in one
interval of ~100 points walked 4 a step -- up to 16 x 16); C 1 (a constexpr), 16, 24, 32, 64, 80 against
chunks of 1-128 (one chunk with and without a column mask, two with and without one: C 80 as 128 masked or
64 + 16); interval counts not divisible by INTS (a group partly past N_int); fp32 / fp16 / bf16. A strided
case: feat a column slice of a channel-last NaN-padded buffer, the ranks stride-2 views and the interval
table the columns of an [N_int, 3] tensor (a stray read shows as NaN).

Per case: launch's output against the module's reference (the harness's tolerance); an independent
point-by-point float64 sum here; the unoccupied cells exactly 0; shape, dtype, contiguity; the inputs unchanged
(their whole buffers); the flags and grid the launch used; the walk's steps; torch_baseline within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "bev_pool"
ROLE = "held-out-33"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["bev_pool"] once the lead adds it)
SWEEP_AXES = {"BLOCK_P": [4, 8, 16, 32], "C_SPLIT": [1, 2], "INTS": [1, 4], "num_warps": [2, 4, 8],
              "num_stages": [1]}
FLAG_KEYS = ("EVEN_C", "N_CB", "BLOCK_P", "BLOCK_C", "INTS", "C", "n_intervals")
INDEX_KEYS = ("RANKS_DEPTH", "RANKS_FEAT", "STARTS", "LENGTHS", "CELLS")
GEO_KEYS = ("ranks_depth", "ranks_feat", "interval_starts", "interval_lengths", "interval_cells")
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _cfg(bp, cs, it=1, w=4, st=1):
    return {"BLOCK_P": bp, "C_SPLIT": cs, "INTS": it, "num_warps": w, "num_stages": st}


def _pt(B, cams, D, fH, fW, C, X, dtype="fp32"):
    return {"B": B, "cams": cams, "D": D, "fH": fH, "fW": fW, "C": C, "X": X, "dtype": dtype}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


# case -> (point, cfg); comments: (EVEN_C, N_CB), BLOCK_C
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (1, 1): BASELINE; C 64 in one chunk, 2 cameras on an 8 x 8 grid
        "baseline_fp32": (_pt(1, 2, 5, 3, 7, 64, 8, "fp32"), _cfg(8, 1, 1, 4)),
        # (0, 2): C 24 in two 16-column chunks (the second 8 wide), bf16, 4 points a step, 4 intervals a
        # program on 2 warps, 2 samples on a 16 x 16 grid
        "split_ragged_c_bf16": (_pt(2, 3, 4, 4, 5, 24, 16, "bf16"), _cfg(4, 2, 4, 2)),
        # (0, 1): C 80 in one 128-wide masked chunk (BEVFusion's C), fp16, 32 points a step, 8 warps
        "c80_fp16": (_pt(1, 3, 6, 3, 9, 80, 10, "fp16"), _cfg(32, 1, 1, 8)),
        # (0, 2): C 80 as 64 + 16, fp16, 16 points a step, 4 intervals a program, 8 warps, num_stages 2
        # (nothing to pipeline)
        "c80_split_fp16": (_pt(1, 2, 6, 4, 7, 80, 12, "fp16"), _cfg(16, 2, 4, 8, 2)),
        # (1, 2): the strided NaN-padded views (module doc); C 32 in two 16-column chunks, fp32, 2 warps
        "strided_nan_fp32": (_pt(1, 2, 5, 3, 7, 32, 8, "fp32"), _cfg(8, 2, 1, 2)),
        # (1, 1): a 1 x 1 grid: every point in one interval (~100 points, 25 steps of 4), 4 intervals a
        # program (3 past N_int), bf16, C 16
        "one_cell_bf16": (_pt(1, 2, 6, 3, 5, 16, 1, "bf16"), _cfg(4, 1, 4, 4)),
        # (1, 1): C 1 (a constexpr; C_SPLIT 2 still one 1-wide chunk), 32 points a step on 2 warps
        "c1_fp32": (_pt(2, 2, 3, 3, 5, 1, 6, "fp32"), _cfg(32, 2, 1, 2)),
    },
}
STRIDED, ONE_CELL = "strided_nan_fp32", "one_cell_bf16"
JUNK_C = 5                                      # depth-logit columns before feat's in the channel-last buffer

# configs compiled on sm_90 at each point: BASELINE, the largest tile on the fewest warps (the most
# registers), and a small-tile 8-warp corner
COMPILE_CFGS = {0: [_cfg(8, 1, 1, 4), _cfg(32, 1, 4, 2), _cfg(4, 2, 1, 8)],
                1: [_cfg(32, 1, 1, 2), _cfg(4, 2, 4, 8)],
                2: [_cfg(32, 1, 4, 2), _cfg(16, 2, 1, 4)]}
SM120_CFGS = [_cfg(8, 1, 1, 4), _cfg(32, 1, 4, 2), _cfg(4, 2, 1, 8)]


def _plan(p, c):
    """(BLOCK_C, chunks, EVEN_C) of a case."""
    bc = _pow2(-(-p["C"] // c["C_SPLIT"]))
    return bc, -(-p["C"] // bc), int(p["C"] % bc == 0)


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided variant (module doc), then copies of the inputs' buffers."""
    import torch

    if name == STRIDED:
        f = inputs["feat"]
        buf = torch.full((f.shape[0], JUNK_C + f.shape[1] + 2), float("nan"), dtype=f.dtype)
        buf[:, JUNK_C:JUNK_C + f.shape[1]] = f
        inputs["feat"] = buf[:, JUNK_C:JUNK_C + f.shape[1]]
        for k in ("ranks_depth", "ranks_feat"):
            r = inputs[k]
            rb = torch.full((r.shape[0], 2), 2**30, dtype=r.dtype)
            rb[:, 0] = r
            inputs[k] = rb[:, 0]
        tab = torch.stack([inputs[k] for k in GEO_KEYS[2:]], dim=1).contiguous()      # [N_int, 3]
        for j, k in enumerate(GEO_KEYS[2:]):
            inputs[k] = tab[:, j]
    for k in ("depth", "feat", *GEO_KEYS):
        inputs[k + "_root0"] = _root(inputs[k]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["B"], p["X"], p["X"], p["C"]] and res["dtype"] == p["dtype"], res
    assert res["contiguous"] is True and res["inputs_unchanged"] is True, res
    tol = H.TOL[p["dtype"]]
    assert res["indep_err"] <= tol * res["scale"], res                   # the independent float64 sum
    assert res["baseline_err"] <= 4 * tol * res["scale"], res
    assert res["zeros_ok"] is True and res["n_empty_cells"] == p["B"] * p["X"] ** 2 - res["n_int"], res
    assert res["scale"] > 0.05, res                                       # real sums, not zeros
    bc, n, even = _plan(p, cfg)
    fl = res["flags"]
    assert (fl["EVEN_C"], fl["N_CB"], fl["BLOCK_C"]) == (even, n, bc), fl
    assert (fl["BLOCK_P"], fl["INTS"], fl["C"], fl["n_intervals"]) == (cfg["BLOCK_P"], cfg["INTS"], p["C"],
                                                                        res["n_int"]), fl
    assert res["grid"] == -(-res["n_int"] // cfg["INTS"]) * n, res
    assert res["steps"] == sum(-(-ln // cfg["BLOCK_P"]) for ln in res["lengths"]), res
    assert sum(res["lengths"]) == res["n_pts"] and min(res["lengths"]) >= 1, res
    if name == STRIDED:
        assert res["strides"] == {"feat": [JUNK_C + p["C"] + 2, 1], "ranks": [2, 2], "table": [3, 3, 3]}, res
    else:
        assert res["strides"] == {"feat": [p["C"], 1], "ranks": [1, 1], "table": [1, 1, 1]}, res
    if name == ONE_CELL:
        assert res["n_int"] == 1 and res["lengths"][0] >= 60 and res["grid"] == 1, res


def test_cases_cover_every_code_path():
    """EVEN_C both ways with one and two chunks; one-step and many-step intervals; a group partly past N_int;
    every dtype; C 1; the strided views; every sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    fl = {n: r["flags"] for n, r in res.items()}
    assert {(f["EVEN_C"], f["N_CB"]) for f in fl.values()} == {(1, 1), (0, 1), (0, 2), (1, 2)}
    assert any(r["n_int"] % cases[n][1]["INTS"] for n, r in res.items())                 # a ragged last group
    lens = [(ln, cases[n][1]["BLOCK_P"]) for n, r in res.items() for ln in r["lengths"]]
    assert any(ln <= bp for ln, bp in lens) and any(ln > 8 * bp for ln, bp in lens)        # 1 step and many
    assert any(ln % bp for ln, bp in lens) and any(ln == 1 for ln, _ in lens)             # a ragged last step
    assert max(ln for ln, _ in lens) >= 60
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert any(p["C"] == 1 for p, _ in cases.values()) and any(p["C"] == 80 for p, _ in cases.values())
    assert sum(r["n_int"] for r in res.values()) >= 100
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (the five index tensors with data on the CPU --
    draw_geometry's seed-0 draw, cached --, the rest on meta) with the launch's shapes, dtypes, strides and
    flags; the grid; the loop length and each program's steps; bytes_moved and flops from the draw; the
    points' sizes (index data under 30 M elements, 0.07-0.2 GB of DRAM traffic and 0.25-1 GB of gathered
    feature rows a launch)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "secondary_kernels", "example_args", "torch_baseline", "bev_pool",
               "draw_geometry", "block_c", "geometry_stats"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    for p in mod.POINTS:
        B, N, D, fH, fW, C, X = (p[k] for k in ("B", "cams", "D", "fH", "fW", "C", "X"))
        geo = mod.draw_geometry(B, N, D, fH, fW, X, 0)
        n_pts, n_int = geo["ranks_depth"].shape[0], geo["interval_starts"].shape[0]
        lens = geo["interval_lengths"].long()
        first = None
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in a.items()
                       if k not in INDEX_KEYS)
            if first is None:
                first = a
                for k, gk in zip(INDEX_KEYS, GEO_KEYS):
                    assert a[k].device.type == "cpu" and a[k].dtype == torch.int32
                    assert torch.equal(a[k], geo[gk]), k                                  # make_inputs' seed 0
            assert all(a[k] is first[k] for k in INDEX_KEYS)                             # cached per point
            assert a["DEPTH"].shape == (B, N, D, fH, fW) and a["DEPTH"].dtype == dts[p["dtype"]]
            assert a["FEAT"].shape == (B * N * fH * fW, C) and a["FEAT"].dtype == dts[p["dtype"]]
            assert a["OUT"].shape == (B, X, X, C) and a["OUT"].dtype == dts[p["dtype"]]
            assert (a["stride_feat"], a["stride_out"], a["stride_rd"], a["stride_rf"]) == (C, C, 1, 1)
            assert (a["stride_st"], a["stride_len"], a["stride_cell_id"]) == (1, 1, 1)
            assert (a["n_intervals"], a["C"]) == (n_int, C)
            bc, n, even = _plan(p, cfg)
            assert (a["BLOCK_C"], a["N_CB"], a["EVEN_C"]) == (bc, n, even)
            assert (a["BLOCK_P"], a["INTS"]) == (cfg["BLOCK_P"], cfg["INTS"])
            g = -(-n_int // cfg["INTS"]) * n
            assert mod.grid(cfg, p) == g
            steps = (lens + cfg["BLOCK_P"] - 1) // cfg["BLOCK_P"]
            ci = mod.cta_iterations(cfg, p)
            assert len(ci) == g and sum(ci) == n * int(steps.sum()) and min(ci) >= 1
            assert ci[:n] == [int(steps[:cfg["INTS"]].sum())] * n
            assert mod.loop_iterations(cfg, p) == -(-int(steps.sum()) // -(-n_int // cfg["INTS"]))
            sk = mod.secondary_kernels(cfg, p)
            e = ESIZE[p["dtype"]]
            assert sk == [{"name": "zero_fill", "grid": -(-B * X * X * C // mod.FILL_BLOCK), "iterations": 1,
                           "tile_bytes": e * mod.FILL_BLOCK, "dram_bytes": e * mod.FILL_BLOCK}]
        e = ESIZE[p["dtype"]]
        rows = int(geo["ranks_feat"].unique().numel())
        assert rows == B * N * fH * fW                                      # every pixel keeps some point
        want = 8 * n_pts + 12 * n_int + e * n_pts + e * C * rows + e * C * B * X * X + e * C * n_int
        assert mod.bytes_moved(p) == want
        assert mod.flops(p) == 2 * n_pts * C
        assert 0.07e9 <= want <= 0.2e9, p
        assert 0.25e9 <= n_pts * C * e <= 1.0e9, p                             # gathered rows (L2)
        assert 2 * n_pts + 3 * n_int <= 30_000_000
        assert 0.3 < n_pts / (B * N * D * fH * fW) < 0.7                      # points dropped out of range
        assert int(lens.max()) >= 200 and int(lens.min()) <= 10
    P = mod.POINTS
    assert {p["dtype"] for p in P} == set(mod.DTYPES)
    assert sorted(p["C"] for p in P) == [64, 80, 128] and sorted(p["X"] for p in P) == [128, 200, 200]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed; draw_geometry's structure (sorted cells, run-length intervals,
    the feature index the depth index's pixel, the points inside the grid); reference by hand on a tiny case;
    torch_baseline; the chunk plan; grid / loop; nothing launched without intervals."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 4, 4, 5, 24, 16, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    d, f = inp["depth"], inp["feat"]
    assert d.shape == (2, 3, 4, 4, 5) and d.dtype == torch.bfloat16 and f.shape == (120, 24)
    assert f.dtype == torch.bfloat16 and inp["bev_shape"] == (2, 16, 16)
    assert torch.allclose(d.float().sum(2), torch.ones(2, 3, 4, 5), atol=2e-2)           # a softmax over D
    assert 0.85 < float(f.float().std()) < 1.15
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert all(torch.equal(again[k], inp[k]) for k in ("depth", "feat", *GEO_KEYS))
    other = mod.make_inputs(p, seed=2, device="cpu")
    assert not torch.equal(other["feat"], f) and not torch.equal(other["ranks_depth"], inp["ranks_depth"])
    # the geometry's structure
    rd, rf = inp["ranks_depth"].long(), inp["ranks_feat"].long()
    st, ln, cells = (inp[k].long() for k in GEO_KEYS[2:])
    assert all(inp[k].dtype == torch.int32 for k in GEO_KEYS)
    assert 0 < rd.numel() < 2 * 3 * 4 * 4 * 5 and rd.unique().numel() == rd.numel()
    assert torch.equal(rf, (rd // (4 * 20)) * 20 + rd % 20)                    # (b, n, h, w) of (b, n, d, h, w)
    assert bool((cells[1:] > cells[:-1]).all()) and int(cells.max()) < 2 * 16 * 16 and int(cells.min()) >= 0
    assert int(st[0]) == 0 and torch.equal(st[1:], torch.cumsum(ln, 0)[:-1]) and int(ln.sum()) == rd.numel()
    assert bool((ln >= 1).all())
    owner = torch.repeat_interleave(torch.arange(ln.numel()), ln)
    same = owner[1:] == owner[:-1]
    assert bool((rd[1:][same] > rd[:-1][same]).all())                           # stable within a cell
    assert bool(((cells[owner] // 256) == rd // (3 * 80)).all())               # the sample's own grid
    # a camera sees its own half-plane: every point within 60 m + the ring of the ego, in front of its camera
    # reference by hand: feat rows [1, 2], [3, 4], [5, 6]; depth [0.5, 2, 1, 4]; cells 0 <- points 0, 1; 3 <- 2
    hand = {"feat": torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), "depth": torch.tensor([0.5, 2.0, 1.0, 4.0]),
            "ranks_depth": torch.tensor([1, 3, 0], dtype=torch.int32),
            "ranks_feat": torch.tensor([2, 0, 1], dtype=torch.int32),
            "interval_starts": torch.tensor([0, 2], dtype=torch.int32),
            "interval_lengths": torch.tensor([2, 1], dtype=torch.int32),
            "interval_cells": torch.tensor([0, 3], dtype=torch.int32), "bev_shape": (1, 2, 2)}
    want = torch.tensor([[[[14.0, 20.0], [0, 0]], [[0, 0], [1.5, 2.0]]]])
    assert torch.equal(mod.reference(hand), want)
    assert torch.equal(mod.torch_baseline(hand), want)
    base = mod.torch_baseline(inp)
    ref = mod.reference(inp)
    assert base.dtype == torch.bfloat16 and float((base.float() - ref).abs().max()) < 0.05 * float(ref.abs().max())
    # the chunk plan
    assert [mod.block_c(C, 2) for C in (1, 3, 24, 64, 80, 128, 256)] == [1, 2, 16, 32, 64, 64, 128]
    assert [mod._plan(C, _cfg(4, 2)) for C in (1, 24, 80, 130)] == [(1, 1), (16, 2), (64, 2), (128, 2)]
    q = _pt(1, 2, 5, 3, 7, 80, 8)
    s = mod.geometry_stats(q)
    lens = mod.draw_geometry(1, 2, 5, 3, 7, 8)["interval_lengths"].long()
    assert s["n_int"] == lens.numel() and s["n_pts"] == int(lens.sum()) and s["max_len"] == int(lens.max())
    assert mod.grid(_cfg(8, 1, 1), q) == s["n_int"] and mod.grid(_cfg(8, 2, 4), q) == 2 * -(-s["n_int"] // 4)
    assert mod.loop_iterations(_cfg(4, 1, 1), q) == -(-int(((lens + 3) // 4).sum()) // s["n_int"])
    assert mod.flops(q) == 2 * s["n_pts"] * 80
    # nothing to do: no launch (CPU tensors are fine then), a zero grid
    z = torch.zeros(0, dtype=torch.int32)
    e = mod.bev_pool(torch.ones(4), torch.ones(3, 8), z, z, z, z, z, (1, 2, 3))
    assert e.shape == (1, 2, 3, 8) and not bool(e.any())


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    d, f = torch.ones(4), torch.ones(3, 8)
    i3 = torch.zeros(3, dtype=torch.int32)
    i1 = torch.zeros(1, dtype=torch.int32)
    args = (d, f, i3, i3, i1, i1 + 3, i1)

    def call(*a, shape=(1, 2, 2), **kw):
        a = a or args
        return mod.bev_pool(*a, shape, **kw)

    with pytest.raises(ValueError, match="BLOCK_P=3"):
        call(BLOCK_P=3)
    with pytest.raises(ValueError, match="BLOCK_P=512"):
        call(BLOCK_P=512)
    with pytest.raises(ValueError, match="C_SPLIT=0"):
        call(C_SPLIT=0)
    with pytest.raises(ValueError, match="INTS=0"):
        call(INTS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        call(num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        call(num_stages=0)
    with pytest.raises(ValueError, match=r"bev_shape=\(1, 2\) must be three ints"):
        call(shape=(1, 2))
    with pytest.raises(ValueError, match="bev_shape=.*must be three ints"):
        call(shape=(1, -2, 2))
    with pytest.raises(ValueError, match=r"feat must be a 2-d fp32 / fp16 / bf16 tensor \[N_feat, C\]"):
        call(d, f[0], *args[2:])
    with pytest.raises(ValueError, match="feat must be a 2-d"):
        call(d.double(), f.double(), *args[2:])
    with pytest.raises(ValueError, match="depth must have feat's dtype"):
        call(d.half(), f, *args[2:])
    with pytest.raises(ValueError, match="depth must be contiguous"):
        call(torch.ones(4, 2).t(), f, *args[2:])
    with pytest.raises(ValueError, match="unit column stride"):
        call(d, torch.ones(8, 3).t(), *args[2:])
    with pytest.raises(ValueError, match="ranks_depth must be a 1-d int32 tensor"):
        call(d, f, i3.long(), *args[3:])
    with pytest.raises(ValueError, match="ranks_feat must be a 1-d int32 tensor"):
        call(d, f, i3, i3[None], *args[4:])
    with pytest.raises(ValueError, match="interval_cells must be a 1-d int32 tensor"):
        call(*args[:6], i1.float())
    with pytest.raises(ValueError, match="interval_starts must be on feat's device"):
        call(d, f, i3, i3, i1.to("meta"), i1, i1)
    with pytest.raises(ValueError, match="depth must be on feat's device"):
        call(d.to("meta"), f, *args[2:])
    with pytest.raises(ValueError, match="must have one length"):
        call(d, f, i3, i3[:2], i1, i1, i1)
    with pytest.raises(ValueError, match="the interval table's lengths differ"):
        call(d, f, i3, i3, i1, i3, i1)
    with pytest.raises(ValueError, match="at most 8192"):
        call(d, torch.ones(3, 1024), *args[2:], BLOCK_P=16)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 2, 3, 3, 5, 8, 4, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="cams=0"):
        mod.bytes_moved(_pt(1, 0, 3, 3, 5, 8, 4))
    with pytest.raises(ValueError, match="X=2.5"):
        mod.flops(_pt(1, 2, 3, 3, 5, 8, 2.5))
    with pytest.raises(ValueError, match="C=True"):
        mod.example_args(mod.BASELINE, _pt(1, 2, 3, 3, 5, True, 4))
    with pytest.raises(ValueError, match="fewer than 2"):
        mod.grid(mod.BASELINE, _pt(1024, 6, 1024, 32, 88, 8, 4))
    with pytest.raises(ValueError, match="INTS=1.5"):
        mod.loop_iterations(dict(mod.BASELINE, INTS=1.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="C_SPLIT=None"):
        mod.cta_iterations(dict(mod.BASELINE, C_SPLIT=None), mod.POINTS[0])
    with pytest.raises(ValueError, match="at most 8192"):
        mod.grid(_cfg(128, 1), mod.POINTS[2])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_P 4 / 8 / 16 / 32, C_SPLIT 1 / 2, INTS 1 / 4, 2 / 4 / 8 warps,
    num_stages 1: no loop-carried load to pipeline) with BASELINE among them; at every point each config is
    valid and launches >= 4 waves of programs on an H200 (the fewest: cdiv(N_int, 4) at BEVDet-R50's ~78 k
    intervals, ~19 k programs). (Every config was compiled for sm_90 at every point with triton 3.6.0 and
    3.9.0: all 144 compile, none spills; registers 31-128 under 3.6 and 32-128 under 3.9 -- the most for 32
    points of a 128-wide chunk on 2 warps at the C 80 / C 128 points, 72-80 at BEVDet-R50's C 64 --; shared
    memory 256 B - 4 KiB under both, the cross-warp reduction along the points.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and "num_warps" in axes
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    progs = [mod.grid(c, p) for p in mod.POINTS for c in cfgs]
    assert min(progs) >= 100 * H200_SMS
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 4 * H200_SMS, (p, c)
            bc, n = mod._plan(p["C"], c)
            assert n == (1 if p["C"] <= bc else 2) and c["BLOCK_P"] * bc <= mod.MAX_TILE


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
    """On sm_90 at each point: BASELINE, the largest tiles on 2 warps (the most registers) and small-tile
    corners compile without spills, within a few KiB of shared memory (the reduction's scratch)."""
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
            assert res.shared <= 16384, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest and a small-tile config at the first point
    (BEVDet-R50, fp32 C 64) compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(16384, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance), an independent point-by-point
    float64 sum, the unoccupied cells, the inputs' buffers, the walk's steps, torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def same(a, b):
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        feat, depth = inputs["feat"], inputs["depth"].reshape(-1)
        rd, rf = inputs["ranks_depth"].tolist(), inputs["ranks_feat"].tolist()
        st, ln, cells = (inputs[k].tolist() for k in GEO_KEYS[2:])
        B, Y, X, C = out.shape
        indep = torch.zeros(B * Y * X, C, dtype=torch.float64)
        for s, n, c in zip(st, ln, cells):
            for q in range(s, s + n):
                indep[c] += feat[rf[q]].double() * float(depth[rd[q]])
        flat = out.reshape(-1, C).float()
        empty = torch.ones(B * Y * X, dtype=torch.bool)
        empty[torch.tensor(cells, dtype=torch.long)] = False
        a = mod._kernel_args(inputs["depth"], feat, inputs["ranks_depth"], inputs["ranks_feat"],
                             inputs["interval_starts"], inputs["interval_lengths"], inputs["interval_cells"],
                             out, cfg)
        base = mod.torch_baseline(inputs).float()
        return {"dtype": names.get(out.dtype), "contiguous": out.is_contiguous(),
                "indep_err": float((flat.double() - indep).abs().max()),
                "baseline_err": float((base - ref).abs().max()),
                "zeros_ok": bool((flat[empty] == 0).all()), "n_empty_cells": int(empty.sum()),
                "inputs_unchanged": all(same(_root(inputs[k]), inputs[k + "_root0"])
                                        for k in ("depth", "feat", *GEO_KEYS)),
                "flags": {k: a[k] for k in FLAG_KEYS}, "grid": mod._grid(len(st), C, cfg),
                "n_int": len(st), "n_pts": len(rd), "lengths": ln,
                "steps": sum(-(-n // cfg["BLOCK_P"]) for n in ln),
                "strides": {"feat": list(feat.stride()),
                            "ranks": [inputs["ranks_depth"].stride(0), inputs["ranks_feat"].stride(0)],
                            "table": [inputs[k].stride(0) for k in GEO_KEYS[2:]]}}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
