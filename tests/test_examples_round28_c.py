"""examples/sparse_conv_gemm.py (the gather-GEMM-scatter core of a 3-D sparse convolution as an
output-stationary implicit GEMM, TorchSparse++ / spconv 2.x style: out[order[i]] = sum_k x[nbr[i, k]]
@ weight[k] over the neighbours nbr[i, k] >= 0 of row i of the kernel map, fp32 accumulation; each
program loops over the offsets its tile of rows has a neighbour at x the C_in chunks) against its
torch reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round27_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round28_c.py sparse_conv_gemm``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 dot operands widened to fp32; bf16
rounding; under triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged, on real voxel sets (make_inputs' LiDAR sweeps and rooms, cropped to
100-400 voxels): every (SORTED, EVEN_K, EVEN_N) branch of the kernel (8); N_out a multiple of no
BLOCK_M (rows past it clamped, never stored) and N_out below one tile; C_in 16-128 and C_out 16-128,
chunks and column tiles that divide them and that do not; 3x3x3 maps, a 5x5x5 one (125 offsets) and a
1x1x1 one (one offset); both layouts (TorchSparse's [N, K^3] map and [K^3, C_in, C_out] weight, spconv's
[K^3, N] pair table and [C_out, K^3, C_in] weight, seen transposed); a generalized stride-2 2x2x2
downsampling map (N_in != N_out, 8 offsets, built here from the voxels) sorted by bitmask; x and the
weight slices of wider NaN-filled buffers (a stray read poisons the result) with a whole tile of rows
that have no neighbour (no active offset: the loop runs zero steps); tile lists kept with the map and
computed by the wrapper; fp16 and bf16; BLOCK_M 16-128, BLOCK_N 32-128, BLOCK_K 32 / 64, 2-8 warps,
num_stages 1-4.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's
per-element check) and each element within half an ulp of the output dtype of its own value plus
1e-5 of the sum of its terms' magnitudes (fp32 accumulation, one rounding); the output fresh,
contiguous, in x's dtype; the inputs unchanged; with a sorted map, the order changing the result; the
rows without neighbours exactly zero; torch_baseline (the explicit gather-mm-index_add) within
tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "sparse_conv_gemm"
ROLE = "held-out-28"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["sparse_conv_gemm"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [64, 128], "BLOCK_N": [64, 128], "BLOCK_K": [32, 64], "num_warps": [4, 8],
              "num_stages": [1, 2, 3, 4]}


def _cfg(bm, bn, bk, w=4, st=2):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": st}


def _pt(scene, N, c_in, c_out, dtype="fp16", layout="torchsparse", srt=0, K=3, voxel=None):
    if voxel is None:
        voxel = 0.02 if scene == "indoor" else 0.05
    return {"scene": scene, "voxel": voxel, "N": N, "K": K, "C_in": c_in, "C_out": c_out, "dtype": dtype,
            "layout": layout, "sorted": srt}


# case -> (point, cfg); comments: (SORTED, EVEN_K, EVEN_N), row tiles x column tiles
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (1, 1, 1): a KITTI sweep's nearest 300 voxels sorted by bitmask; 5 row tiles (the last 44
        # rows) x 1; 2 chunks an offset
        "kitti_sorted_fp16": (_pt("kitti", 300, 64, 64, "fp16", srt=1), _cfg(64, 64, 32, 4, 2)),
        # (0, 0, 1): a room's 200 voxels in voxel order (dense: ~all 27 offsets a tile); C_in 40 = 32 + 8
        # (the last chunk short); 4 x 1; 8 warps
        "indoor_unsorted_bf16": (_pt("indoor", 200, 40, 64, "bf16"), _cfg(64, 64, 32, 8, 3)),
        # (1, 0, 1): spconv layouts (the [27, N] pair table, the [C_out, 27, C_in] weight), sorted; C_in
        # 48 = 32 + 16; 2 x 1 (the second 122 rows)
        "waymo_spconv_fp16": (_pt("waymo", 250, 48, 64, "fp16", "spconv", srt=1), _cfg(128, 64, 32, 4, 4)),
        # (0, 1, 0): spconv layouts in voxel order; one chunk of 64; C_out 40 in one 128-wide column
        # tile; 11 x 1 tiles of 32 rows; one stage
        "indoor_spconv_bf16": (_pt("indoor", 333, 64, 40, "bf16", "spconv"), _cfg(32, 128, 64, 4, 1)),
        # (0, 1, 1): a 5x5x5 map (125 offsets); 10 x 1 tiles of 16 rows; 2 warps
        "kitti_k5_bf16": (_pt("kitti", 150, 32, 32, "bf16", K=5), _cfg(16, 32, 32, 2, 2)),
        # (0, 0, 0): a 1x1x1 map (one offset: a gathered GEMM); N 100 below one 128-row tile; C 16 below
        # the chunk of 32 and the column tile of 64
        "waymo_k1_fp16": (_pt("waymo", 100, 16, 16, "fp16", K=1), _cfg(128, 64, 32, 4, 3)),
        # (1, 0, 0): x the columns 3 .. 27 of a [200, 32] buffer, the weight the [27, 24, 40] corner of
        # a [27, 32, 56] one, the rest NaN; sorted, its rows 64 .. 127 without neighbours (tile 1: no
        # active offset); the tile lists computed by the wrapper
        "strided_nan_fp16": (_pt("kitti", 200, 24, 40, "fp16", srt=1), _cfg(64, 64, 32, 4, 2)),
        # (1, 1, 0): a stride-2 2x2x2 downsampling map (MinkUNet's stage transitions) over a room's
        # 400 voxels, sorted by bitmask; C_out 48 in a 64-wide tile; the tile lists computed by the
        # wrapper; 8 warps, 4 stages
        "downsample_bf16": (_pt("indoor", 400, 32, 48, "bf16"), _cfg(64, 64, 32, 8, 4)),
        # (1, 1, 1): 128-wide column tiles, chunks of 64 over C 128: 3 x 1 tiles; 8 warps, one stage
        "waymo_wide_bf16": (_pt("waymo", 260, 128, 128, "bf16", srt=1), _cfg(128, 128, 64, 8, 1)),
    },
}
STRIDED, DOWN = "strided_nan_fp16", "downsample_bf16"
X_PITCH, X_COL0, W_PAD_C, W_PAD_N = 32, 3, 8, 16
EMPTY_ROWS = (64, 128)

# configs compiled at the module's first POINT on sm_90 (BASELINE first): the most registers (128 x
# 128 x 64 on 4 warps at one stage: 224), the most shared memory (128 x 128 x 64, 4 stages), the
# smallest tile (64 x 64 x 32 on 8 warps: 42 registers), 128 x 64 x 64 at one stage
COMPILE_CFGS = [_cfg(128, 64, 32, 4, 3), _cfg(128, 128, 64, 4, 1), _cfg(128, 128, 64, 8, 4), _cfg(64, 64, 32, 8, 2),
                _cfg(128, 64, 64, 4, 1)]
SM120_CFGS = [_cfg(128, 64, 32, 4, 3), _cfg(128, 128, 64, 8, 4), _cfg(64, 64, 32, 4, 2)]


def _flags(name, p, c):
    """(SORTED, EVEN_K, EVEN_N) of a case (DOWN is sorted by this file's _prepare)."""
    return (int(p["sorted"] or name == DOWN), int(p["C_in"] % c["BLOCK_K"] == 0), int(p["C_out"] % c["BLOCK_N"] == 0))


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory: the A [BLOCK_M, BLOCK_K] and B [BLOCK_K, BLOCK_N]
    16-bit tiles max(2, num_stages) times, the index vector, or the epilogue's staging of the
    [BLOCK_M, BLOCK_N] output tile, whichever is larger."""
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    tiles = max(2, cfg["num_stages"]) * (bm * bk + bk * bn) * 2 + 4 * bm + 64
    return max(tiles, bm * bn * 2)


def _downsample_map(coords):
    """The stride-2 2x2x2 map of voxels coords [N, 3] (a dict, independent of the module): the
    parents (coords // 2, distinct, sorted) and nbr [N_out, 8] int32, offset (dx, dy, dz) in {0, 1}^3
    (dz fastest) the input row of the voxel 2 parent + offset, -1 where none."""
    import torch

    rows = {tuple(c): i for i, c in enumerate(coords.tolist())}
    parents = sorted({(x // 2, y // 2, z // 2) for x, y, z in rows})
    offs = list(itertools.product((0, 1), repeat=3))
    nbr = torch.full((len(parents), 8), -1, dtype=torch.int32)
    for o, (px, py, pz) in enumerate(parents):
        for k, (dx, dy, dz) in enumerate(offs):
            nbr[o, k] = rows.get((2 * px + dx, 2 * py + dy, 2 * pz + dz), -1)
    return nbr


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: x and the weight corners of NaN-filled buffers, rows EMPTY_ROWS without neighbours, the
    tile lists dropped. DOWN: the downsampling map of the voxels (sorted by bitmask), a [8, C_in, C_out]
    weight, the tile lists dropped. Then the inputs' copies."""
    import torch

    mod = load_example(KERNEL)
    x, w = inputs["x"], inputs["weight"]
    gen = torch.Generator().manual_seed(11)
    if name == STRIDED:
        n, c_in = x.shape
        kv, _, c_out = w.shape
        bx = torch.full((n, X_PITCH), float("nan"), dtype=x.dtype)
        bx[:, X_COL0:X_COL0 + c_in] = x
        inputs["x"] = bx[:, X_COL0:X_COL0 + c_in]
        bw = torch.full((kv, c_in + W_PAD_C, c_out + W_PAD_N), float("nan"), dtype=w.dtype)
        bw[:, :c_in, :c_out] = w
        inputs["weight"] = bw[:, :c_in, :c_out]
        nbr = inputs["nbr"].clone()
        nbr[EMPTY_ROWS[0]:EMPTY_ROWS[1]] = -1
        inputs["nbr"] = nbr
        inputs["pairs"] = mod._pairs(nbr, inputs["order"])
        del inputs["tiles"]
    if name == DOWN:
        nbr = _downsample_map(inputs["coords"])
        order = mod.neighbour_order(nbr)
        inputs["nbr"] = nbr[order].contiguous()
        inputs["order"] = order.to(torch.int32)
        inputs["weight"] = (torch.randn((8, x.shape[1], w.shape[2]), generator=gen) / 16.0).to(w.dtype)
        inputs["pairs"] = mod._pairs(inputs["nbr"], inputs["order"])
        del inputs["tiles"]
    inputs["copies"] = [None if inputs[k] is None else inputs[k].clone() for k in ("x", "weight", "nbr", "order")]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    n_out = res["n_out"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [n_out, p["C_out"]] and res["dtype"] == p["dtype"], res
    assert res["out_strides"] == [p["C_out"], 1], res
    assert res["n_loose"] == 0, res                # within half an ulp + 1e-5 of the terms' magnitude
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if p["K"] > 1:                                 # every row its centre and more (but EMPTY_ROWS)
        assert res["n_pairs"] > n_out, res
    else:
        assert res["n_pairs"] == n_out, res
    if res["sorted"]:
        assert res["order_matters"] is True, res
    if name == STRIDED:
        assert res["x_strides"] == [X_PITCH, 1], res
        assert res["w_strides"] == [(p["C_in"] + W_PAD_C) * (p["C_out"] + W_PAD_N), p["C_out"] + W_PAD_N, 1], res
        assert res["empty_rows_zero"] is True and res["n_empty_tiles"] == 1, res
    elif p["layout"] == "spconv":
        n, kv = n_out, p["K"] ** 3
        assert res["w_strides"] == [p["C_in"], 1, kv * p["C_in"]] and res["nbr_strides"] == [1, n], res
    else:
        assert res["nbr_strides"] == [res["k_vol"], 1], res
    if name == DOWN:
        assert res["k_vol"] == 8 and res["n_in"] == p["N"] and p["N"] // 8 <= n_out < p["N"], res
    else:
        assert res["k_vol"] == p["K"] ** 3 and res["n_in"] == n_out == p["N"], res


def test_cases_cover_every_code_path():
    """Every (SORTED, EVEN_K, EVEN_N) branch, both layouts, both dtypes, all three scenes, K 1 / 3 / 5,
    a generalized map; N below one tile and ragged; every sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {_flags(n, p, c) for n, (p, c) in CASES[KERNEL].items()} == set(itertools.product((0, 1), repeat=3))
    assert {p["layout"] for p, _ in cases} == set(mod.LAYOUTS) and {p["scene"] for p, _ in cases} == set(mod.SCENES)
    assert {p["K"] for p, _ in cases} == {1, 3, 5}
    assert any(p["N"] < c["BLOCK_M"] for p, c in cases) and any(p["N"] % c["BLOCK_M"] for p, c in cases)
    assert any(p["C_out"] < c["BLOCK_N"] for p, c in cases) and any(p["C_in"] < c["BLOCK_K"] for p, c in cases)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (spconv's transposed pair table and KRSC weight at the Waymo point), the flags, the grid,
    cta_iterations (one count a program, at most K^3 chunks) and their mean loop_iterations;
    bytes_moved / flops; 45-80 MB moved and 6-50 GFLOP a point; inputs under 1 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "sparse_conv_gemm", "tile_offsets"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        n, c_in, c_out, kv, srt = p["N"], p["C_in"], p["C_out"], p["K"] ** 3, p["sorted"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (n, c_in) and a["X"].dtype == dts[p["dtype"]] and a["X"].stride() == (c_in, 1)
            assert a["W"].shape == (kv, c_in, c_out) and a["W"].dtype == a["X"].dtype
            assert a["NBR"].shape == (n, kv) and a["NBR"].dtype == torch.int32
            if p["layout"] == "spconv":
                assert a["W"].stride() == (c_in, 1, kv * c_in) and a["NBR"].stride() == (1, n)
            else:
                assert a["W"].stride() == (c_in * c_out, c_out, 1) and a["NBR"].stride() == (kv, 1)
            if srt:
                assert a["ORDER"].shape == (n,) and a["ORDER"].dtype == torch.int32
            else:
                assert a["ORDER"] is a["X"]
            T = -(-n // cfg["BLOCK_M"])
            assert a["TOFF"].shape == (T, kv) and a["TCNT"].shape == (T,) and a["TOFF"].dtype == torch.int32
            assert a["OUT"].shape == (n, c_out) and a["OUT"].dtype == a["X"].dtype and a["OUT"].is_contiguous()
            assert (a["N_out"], a["C_in"], a["C_out"], a["K_vol"]) == (n, c_in, c_out, kv)
            assert (a["stride_xm"], a["stride_om"]) == (c_in, c_out)
            assert (a["stride_wk"], a["stride_wc"], a["stride_wn"]) == a["W"].stride()
            assert (a["stride_nm"], a["stride_nk"]) == a["NBR"].stride()
            assert (a["SORTED"], a["EVEN_K"], a["EVEN_N"]) == (srt, int(c_in % cfg["BLOCK_K"] == 0),
                                                              int(c_out % cfg["BLOCK_N"] == 0))
            assert (a["BLOCK_M"], a["BLOCK_N"], a["BLOCK_K"]) == (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"])
            tiles_n = -(-c_out // cfg["BLOCK_N"])
            assert mod.grid(cfg, p) == T * tiles_n
            its = mod.cta_iterations(cfg, p)
            n_c = -(-c_in // cfg["BLOCK_K"])
            assert len(its) == T * tiles_n and all(n_c <= s <= kv * n_c and s % n_c == 0 for s in its)
            assert its[:tiles_n] == [its[0]] * tiles_n                     # the column tiles of a row tile
            assert mod.loop_iterations(cfg, p) == -(-sum(its) // len(its))
            assert H.meta_nbytes(a) < 2**30
        assert mod.bytes_moved(p) == 2 * (n * c_in + kv * c_in * c_out + n * c_out) + 4 * n * kv + 4 * n * srt
        assert mod.flops(p) == 2 * mod.kernel_map_pairs(p) * c_in * c_out
        assert 45e6 <= mod.bytes_moved(p) <= 80e6 and 6e9 <= mod.flops(p) <= 50e9, p
    # the points differ: the scene (and so the neighbours a voxel), the channels, the dtype, the
    # layouts, sorted or not
    mean_nbrs = [mod.kernel_map_pairs(p) / p["N"] for p in mod.POINTS]
    assert 4 < mean_nbrs[0] < 6 and 12 < mean_nbrs[1] < 15 and 5.5 < mean_nbrs[2] < 7.5, mean_nbrs
    assert [(p["C_in"], p["C_out"]) for p in mod.POINTS] == [(96, 96), (128, 96), (64, 64)]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES) and {p["layout"] for p in mod.POINTS} == set(mod.LAYOUTS)
    assert [p["sorted"] for p in mod.POINTS] == [1, 0, 1]
    # the sorted maps' tiles skip most offsets, the dense indoor one none
    base = mod.BASELINE
    act = [mod.loop_iterations(base, p) / -(-p["C_in"] // base["BLOCK_K"]) for p in mod.POINTS]
    assert act[0] < 10 and act[1] > 26 and act[2] < 15, act


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed; the kernel map against a brute-force neighbour search of
    its voxels (the centre offset the row itself), the sorted order (bitmasks non-increasing), the tile
    lists, the pairs, spconv's layouts; reference and torch_baseline by hand on a 3-voxel map;
    tile_offsets by hand; the grid, cta_iterations, loop_iterations, bytes / flops."""
    import torch

    mod = load_example(KERNEL)
    p = _pt("kitti", 120, 16, 24, "fp16", srt=1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x, w, nbr, order, coords = inp["x"], inp["weight"], inp["nbr"], inp["order"], inp["coords"]
    assert x.shape == (120, 16) and x.dtype == torch.float16 and w.shape == (27, 16, 24) and w.dtype == x.dtype
    assert nbr.shape == (120, 27) and nbr.dtype == torch.int32 and order.dtype == torch.int32
    assert coords.shape == (120, 3) and int(coords.min()) >= 1
    assert len({tuple(c) for c in coords.tolist()}) == 120
    assert sorted(order.tolist()) == list(range(120))
    rows = {tuple(c): i for i, c in enumerate(coords.tolist())}
    offs = list(itertools.product((-1, 0, 1), repeat=3))
    want = torch.tensor([[rows.get((cx + dx, cy + dy, cz + dz), -1) for dx, dy, dz in offs]
                         for cx, cy, cz in coords[order.long()].tolist()], dtype=torch.int32)
    assert torch.equal(nbr, want)
    assert torch.equal(nbr[:, 13], order)                                  # the centre: the voxel itself
    bits = ((nbr >= 0).long() << torch.arange(27)).sum(1)
    assert bool((bits[:-1] >= bits[1:]).all())
    for bm in mod.TILE_ROWS:
        o, c = inp["tiles"][bm]
        ro, rc = mod.tile_offsets(nbr, bm)
        assert torch.equal(o, ro) and torch.equal(c, rc) and o.shape == (-(-120 // bm), 27)
    assert sum(int(s.numel()) for s, _ in inp["pairs"]) == int((nbr >= 0).sum()) == mod.kernel_map_pairs(p, seed=1)
    src, dst = inp["pairs"][5]
    assert torch.equal(nbr[:, 5][nbr[:, 5] >= 0].long(), src) and torch.equal(order[nbr[:, 5] >= 0].long(), dst)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["coords"], coords)
    assert 0.9 < float(x.float().std()) < 1.1 and abs(float(w.float().std()) * (27 * 16) ** 0.5 - 1) < 0.1
    q = mod.make_inputs(_pt("indoor", 90, 16, 32, "bf16", "spconv"), device="cpu")
    assert q["weight"].stride() == (16, 1, 27 * 16) and q["nbr"].stride() == (1, 90) and q["order"] is None
    assert q["x"].dtype == torch.bfloat16 and torch.equal(q["nbr"][:, 13], torch.arange(90, dtype=torch.int32))
    assert float((q["nbr"] >= 0).float().sum(1).mean()) > 6                 # a room: surfaces, corners
    # by hand: voxels 0, 1, 2; two offsets; x [[1, 2], [3, 4], [5, 6]], weight[0] = I, weight[1] = [[1], [1]]
    hx = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    hw = torch.stack([torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[1.0, 1.0], [1.0, 1.0]])])
    hn = torch.tensor([[1, 2], [0, -1], [2, 0]], dtype=torch.int32)      # processing rows
    ho = torch.tensor([2, 0, 1], dtype=torch.int32)                         # their output rows
    hand = {"x": hx, "weight": hw, "nbr": hn, "order": ho, "pairs": mod._pairs(hn, ho)}
    # row 0 -> out 2: x1 + (x2 summed) = [3, 4] + [11, 11]; row 1 -> out 0: x0; row 2 -> out 1: x2 + [3, 3]
    assert mod.reference(hand).tolist() == [[1.0, 2.0], [8.0, 9.0], [14.0, 15.0]]
    base = mod.torch_baseline(dict(hand, x=hx.half(), weight=hw.half()))
    assert base.dtype == torch.float16 and base.tolist() == [[1.0, 2.0], [8.0, 9.0], [14.0, 15.0]]
    assert mod.reference(dict(hand, order=None)).tolist() == [[14.0, 15.0], [1.0, 2.0], [8.0, 9.0]]
    # tile_offsets by hand: 5 rows, tiles of 2 (the last 1 row)
    tn = torch.tensor([[-1, 3, -1], [-1, -1, -1], [-1, -1, -1], [-1, -1, -1], [4, -1, 0]], dtype=torch.int32)
    o, c = mod.tile_offsets(tn, 2)
    assert c.tolist() == [1, 0, 2] and o.tolist() == [[1, 0, 2], [0, 1, 2], [0, 2, 1]]
    cfg = _cfg(64, 64, 32)
    assert mod.grid(cfg, _pt("kitti", 130, 40, 96)) == 3 * 2
    its = mod.cta_iterations(_cfg(32, 16, 16), p)
    cnt = mod.tile_offsets(mod._structure("kitti", 0.05, 120, 3, 1, 0)[1], 32)[1]
    assert its == (cnt.long() * 1).repeat_interleave(2).tolist()            # 24 channels: 2 column tiles of 16
    assert mod.loop_iterations(_cfg(32, 16, 16), p) == -(-sum(its) // len(its))
    assert mod.bytes_moved(p) == 2 * (120 * 16 + 27 * 16 * 24 + 120 * 24) + 4 * 120 * 27 + 4 * 120
    assert mod.flops(p) == 2 * mod.kernel_map_pairs(p) * 16 * 24


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(10, 16, dtype=torch.float16)
    w = torch.ones(27, 16, 8, dtype=torch.float16)
    nb = torch.zeros(6, 27, dtype=torch.int32)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.sparse_conv_gemm(x, w, nb, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.sparse_conv_gemm(x, w, nb, BLOCK_K=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.sparse_conv_gemm(x, w, nb, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.sparse_conv_gemm(x, w, nb, num_stages=0)
    with pytest.raises(ValueError, match="128 a thread"):
        mod.sparse_conv_gemm(x, w, nb, BLOCK_M=128, BLOCK_N=128, num_warps=2)
    with pytest.raises(ValueError, match="expected x"):
        mod.sparse_conv_gemm(x[0], w, nb)
    with pytest.raises(ValueError, match="do not match"):
        mod.sparse_conv_gemm(x, w[:, :8], nb)
    with pytest.raises(ValueError, match="do not match"):
        mod.sparse_conv_gemm(x, w, nb[:, :8])
    with pytest.raises(ValueError, match="fp16 / bf16 of one dtype"):
        mod.sparse_conv_gemm(x, w.bfloat16(), nb)
    with pytest.raises(ValueError, match="fp16 / bf16 of one dtype"):
        mod.sparse_conv_gemm(x.float(), w.float(), nb)
    with pytest.raises(ValueError, match="must be int32"):
        mod.sparse_conv_gemm(x, w, nb.long())
    with pytest.raises(ValueError, match="must be int32"):
        mod.sparse_conv_gemm(x, w, nb, torch.arange(6))
    with pytest.raises(ValueError, match=r"order must be \[N_out\]"):
        mod.sparse_conv_gemm(x, w, nb, torch.arange(5, dtype=torch.int32))
    with pytest.raises(ValueError, match="unit channel stride"):
        mod.sparse_conv_gemm(torch.ones(16, 10, dtype=torch.float16).t(), w, nb)
    with pytest.raises(ValueError, match="tile_offsets"):
        mod.sparse_conv_gemm(x, w, nb, tiles=mod.tile_offsets(torch.zeros(200, 27, dtype=torch.int32), 64))
    with pytest.raises(ValueError, match="int32 offsets"):                    # meta: never launched
        big = torch.empty_strided((2**20, 16), (2**12, 1), dtype=torch.float16, device="meta")
        mnb = torch.empty((4, 27), dtype=torch.int32, device="meta")
        mw = torch.empty((27, 16, 8), dtype=torch.float16, device="meta")
        mt = (torch.empty((1, 27), dtype=torch.int32, device="meta"),
              torch.empty((1,), dtype=torch.int32, device="meta"))
        mod.sparse_conv_gemm(big, mw, mnb, None, mt)
    with pytest.raises(ValueError, match="scene 'city'"):
        mod.make_inputs(dict(_pt("kitti", 10, 16, 16), scene="city"), device="cpu")
    with pytest.raises(ValueError, match="voxel=0"):
        mod.bytes_moved(_pt("kitti", 10, 16, 16, voxel=0))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt("kitti", 0, 16, 16))
    with pytest.raises(ValueError, match="K=2"):
        mod.flops(_pt("kitti", 10, 16, 16, K=2))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt("kitti", 10, 16, 16, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="layout 'minkowski'"):
        mod.example_args(mod.BASELINE, _pt("kitti", 10, 16, 16, layout="minkowski"))
    with pytest.raises(ValueError, match="sorted=2"):
        mod.bytes_moved(_pt("kitti", 10, 16, 16, srt=2))
    with pytest.raises(ValueError, match="BLOCK_N=96"):
        mod.grid(dict(mod.BASELINE, BLOCK_N=96), mod.POINTS[0])
    # nothing to compute: an empty output; no input rows: zeros
    e = mod.sparse_conv_gemm(x, w, torch.zeros(0, 27, dtype=torch.int32))
    assert e.shape == (0, 8) and e.dtype == torch.float16
    e = mod.sparse_conv_gemm(x, torch.ones(27, 16, 0, dtype=torch.float16), nb)
    assert e.shape == (6, 0)
    z = mod.sparse_conv_gemm(torch.ones(0, 16, dtype=torch.bfloat16), w.bfloat16(),
                             torch.full((5, 27), -1, dtype=torch.int32))
    assert z.shape == (5, 8) and z.dtype == torch.bfloat16 and not bool(z.any())


def test_sweep_fits_the_points():
    """The study sweep: 64 configs (tiles 64 x 64 .. 128 x 128, chunks of 32 / 64 channels, 4 / 8 warps,
    num_stages 1-4) with BASELINE among them; at every point each config is valid, launches >= 4 waves
    of programs on an H100 (704 at the fewest: KITTI's 90k voxels in 128-row tiles x one 128-wide
    column tile), at most 128 fp32 accumulators a thread, and its operand tiles fit sm_90's shared
    memory (num_stages buffers of them would: 130 KiB at most; Triton's two take at most 64 KiB).
    (Every config was compiled for sm_90 at every point with triton 3.6.0 and 3.9: all compile, none
    spilled; 42-241 registers under 3.9, 42-244 under 3.6.0, the most for 128 x 128 x 64 on 4 warps at
    one stage (synchronous loads to registers); shared memory 8-64.5 KiB: Triton double-buffers the A
    and B blocks at every num_stages >= 2, the loop's index chain taking the deeper stages.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert len(cfgs) == 64 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            g = mod.grid(c, p)
            assert g >= 4 * H100_SMS, (p, c)
            assert c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"], c
            assert _smem_bound(c) <= SM90_SMEM_PER_BLOCK, c                 # even num_stages buffers
            assert 2 * (c["BLOCK_M"] + c["BLOCK_N"]) * c["BLOCK_K"] * 2 <= 64 * 1024, c   # the two Triton uses
            assert c["BLOCK_M"] in mod.TILE_ROWS


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
    """On sm_90: BASELINE and four more at the first point (KITTI, fp16, 96 -> 96, sorted) -- the most
    registers (128 x 128 x 64 on 4 warps, one stage), the most shared memory (128 x 128 x 64, 4 stages),
    the smallest tile on 8 warps, 128 x 64 x 64 at one stage -- compile without spills, their shared
    memory within the operand tiles' or the output staging's bound; and BASELINE and both 128 x 128 x
    64 at the other two (ScanNet's bf16 128 -> 96 unsorted; Waymo's spconv layouts: 241 registers under
    3.9, 244 under 3.6.0 for the one-stage config, the sweep's most)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= _smem_bound(cfg), (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in COMPILE_CFGS[:3]:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.shared <= _smem_bound(cfg), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, 128 x 128 x 64 on 8 warps at 4 stages and 64 x 64 x 32
    compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp
    of each element plus 1e-5 of the sum of its terms' magnitudes; torch_baseline against reference;
    the output's strides, the inputs unchanged, the order's effect, the empty rows; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        x, w, nbr, order = inputs["x"], inputs["weight"], inputs["nbr"], inputs["order"]
        # the terms' magnitudes (the NaN pads of the strided buffers are outside x and the weight)
        mag = mod.reference(dict(inputs, x=x.abs(), weight=w.abs()))
        half_ulp = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[out.dtype]
        loose = (out.float() - ref).abs() > half_ulp * ref.abs() + 1e-5 * mag + 1e-30
        same = all(a is None and b is None or torch.equal(a, b)
                   for a, b in zip((x, w, nbr, order), inputs["copies"]))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "inputs_unchanged": bool(same), "nonzero": bool((ref != 0).any()), "n_out": nbr.shape[0],
               "n_in": x.shape[0], "k_vol": nbr.shape[1], "n_pairs": int((nbr >= 0).sum()),
               "x_strides": list(x.stride()), "w_strides": list(w.stride()), "nbr_strides": list(nbr.stride()),
               "sorted": order is not None,
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if order is not None:
            res["order_matters"] = bool((mod.reference(dict(inputs, order=None)) - ref).abs().max() > 0.1)
        if name == STRIDED:
            rows = order[EMPTY_ROWS[0]:EMPTY_ROWS[1]].long()           # their output rows
            res["empty_rows_zero"] = bool((out[rows] == 0).all()) and bool((ref[rows] == 0).all())
            res["n_empty_tiles"] = int((mod.tile_offsets(nbr, CASES[KERNEL][name][1]["BLOCK_M"])[1] == 0).sum())
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
