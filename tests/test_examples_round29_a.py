"""examples/farthest_point_sample.py (iterative farthest point sampling, as PointNet++'s pointnet2_ops,
PointNeXt / openpoints, OpenPCDet and pytorch3d's sample_farthest_points run it: xyz [B, N, 3] fp32 with
any strides, optional per-cloud lengths, npoint picks from index 0, each the point farthest from the
ones picked so far, ties to the lowest index, -1 past a cloud's length; one program a cloud, a head of
the cloud in registers, the rest streamed every pass from a scratch in one of two layouts) against its
torch reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round27_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round29_a.py farthest_point_sample``) that prints one JSON line. The
subprocess installs the harness's fix for triton 3.6's runtime loop bounds under numpy >= 2.3. The
interpreter runs EXACT 0 (the plain fp32 expression: numpy rounds every op, it cannot run the GPU's
inline mul.rn / add.rn); the compile tests build EXACT 1 and check its SASS has no FFMA.

Shapes are small, odd and ragged: clouds of 37-700 points (never a power of two: the head's and the
chunks' masks), a head holding the whole cloud, a head of 32-128 points with a tail of one to three
chunks (LAYOUT 0 rows and LAYOUT 1 planes), no head (HEAD_PPT 0: everything streamed); ragged lengths
ending inside the head (the tail loop runs 0 chunks), at the head's edge, inside the last chunk, 1 (no
pass at all) and 0 (every slot -1); npoint below, at and past a cloud's length (one past 128: the -1
padding's loop runs two steps); xyz contiguous, the first three channels of [B, N, 4] and of a
channel-first [B, 5, N] buffer (point stride 1), the rest of the buffer NaN (a stray read poisons a
distance); exact ties: points on an integer grid with duplicates (equal distances in the head, in the
tail and across them: the lowest index must win); int32 and int64 indices; PICK 0 / 1, KEY 0 / 1,
LAYOUT 0 / 1, HEAD_PPT 0-16, 1-16 warps, num_stages 1 / 2.

Per case: launch's indices equal to the reference's, bit for bit (the reference is the same arithmetic
in eager torch fp32); every slot past min(npoint, length) -1, the rest inside the cloud; a float64
check that is independent of both: each pick's squared distance to the earlier picks is the largest
over the cloud (to 1e-6 relative) and the picks distinct while the maximum is positive; shape, dtype,
contiguity; a second launch equal; the inputs unchanged; torch_baseline (the classic eager loop)
passing the same float64 check.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "farthest_point_sample"
ROLE = "held-out-29"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["farthest_point_sample"] once the lead adds it)
SWEEP_AXES = {"HEAD_PPT": [0, 16], "PICK": [0, 1], "KEY": [0, 1], "LAYOUT": [0, 1], "num_warps": [4, 8, 16],
              "num_stages": [1]}


def _cfg(head, pick=0, key=0, layout=1, w=4, st=1):
    return {"HEAD_PPT": head, "PICK": pick, "KEY": key, "LAYOUT": layout, "num_warps": w, "num_stages": st}


def _pt(B, N, npoint, index_dtype="int64", **kw):
    return {"B": B, "N": N, "npoint": npoint, "dtype": "fp32", "index_dtype": index_dtype, **kw}


# case -> (point, cfg); comments: HEAD = min(next_pow2(N), HEAD_PPT 32 num_warps), CHUNK = min(256
# num_warps, 1024), the tail's chunks
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # a ModelNet-like cloud whole in the head: 100 points in a 128-point head (1 warp, 4 a thread), no
        # tail; int32 indices; the pair argmax, the coordinates reloaded
        "whole_head_int32": (_pt(3, 100, 24, "int32"), _cfg(4, 0, 0, 1, 1)),
        # head 32 + a tail of 301 points in two 256-point chunks, rows (LAYOUT 0), pairs, reloads
        "head_tail_rows": (_pt(2, 333, 20), _cfg(1, 0, 0, 0, 1)),
        # no head: 700 points streamed as planes in two 512-point chunks (2 warps), int64 keys; lengths
        # 700, 513 (inside the second chunk), 1 (no pass) and 0 (all -1)
        "stream_keys_ragged": (_pt(4, 700, 30, ragged=1), _cfg(0, 0, 1, 1, 2)),
        # head 64 + tail (one chunk), keys carrying the coordinates, rows; xyz channel-first [3, 5, 300]
        # (point stride 1); lengths 300, 64 (the head's edge: 0 tail chunks) and 40 (inside the head)
        "pick_keys_ragged_cf": (_pt(3, 300, 16, "int32", ragged=1, channels=5, channel_first=1),
                                _cfg(2, 1, 1, 0, 1)),
        # head 32 + tail (one chunk), pairs carrying the coordinates, planes; xyz the first three of
        # [2, 280, 4] (rows 16 bytes apart); num_stages 2 (no effect: nothing pipelines)
        "pick_pairs_pitch4": (_pt(2, 280, 12, "int32", channels=4), _cfg(1, 1, 0, 1, 1, 2)),
        # head 32 + tail (one chunk), pairs carrying the coordinates, rows
        "pick_pairs_rows": (_pt(2, 150, 10), _cfg(1, 1, 0, 0, 1)),
        # exact ties: an integer 6 x 6 x 6 grid plus 40 duplicates (256 points), head 128 (2 warps) + a tail
        # of 128 (one chunk): ties inside the head, inside the tail and between them; pairs, planes
        "ties_grid_pairs": (_pt(2, 256, 40), _cfg(2, 0, 0, 1, 2)),
        # the same grid, keys carrying the coordinates, planes, head 64 (1 warp) + tail 192
        "ties_grid_keys_pick": (_pt(1, 256, 40, "int32"), _cfg(2, 1, 1, 1, 1)),
        # no head, 600 points streamed in three 256-point chunks (1 warp), pairs, planes: the 256-point grid
        # cloud repeated every 256 points (a point's duplicates share its lane, a chunk apart: the
        # running per-lane best must keep the earlier chunk)
        "ties_stream_chunks": (_pt(1, 600, 30), _cfg(0, 0, 0, 1, 1)),
        # npoint past N: 37 points, 150 slots (the -1 padding loop two 128-slot steps); the whole cloud in
        # a 64-point head on 4 warps, keys
        "npoint_past_n": (_pt(2, 37, 150), _cfg(16, 0, 1, 1, 4)),
        # 8 warps, the head holding 200 points (256), planes, pairs carrying the coordinates
        "wide_head_8w": (_pt(2, 200, 30), _cfg(16, 1, 0, 1, 8)),
        # 16 warps, no head: 600 points streamed in one 1024-point chunk, rows, keys
        "stream_16w": (_pt(2, 600, 25, "int32"), _cfg(0, 0, 1, 0, 16)),
        # npoint 1: only the start (no pass); HEAD 16 on 4 warps over 50 points
        "single_pick": (_pt(2, 50, 1), _cfg(16, 0, 0, 1, 4)),
    },
}
RAGGED_LENGTHS = {"stream_keys_ragged": [700, 513, 1, 0], "pick_keys_ragged_cf": [300, 64, 40]}
TIES = ("ties_grid_pairs", "ties_grid_keys_pick", "ties_stream_chunks")
# configs compiled at the module's first POINT on sm_90 (BASELINE first): no head with rows and keys
# on 4 warps, the most state (keys carrying the coordinates, 16 warps), the pairs carrying the
# coordinates on 4 warps; at the other two points BASELINE and OTHER_CFG (HEAD_PPT 16 on 4 warps with
# the pairs carrying the coordinates: the most registers of the sweep, ~200, at the third point)
COMPILE_CFGS = [_cfg(16, 0, 0, 1, 8), _cfg(0, 0, 1, 0, 4), _cfg(16, 1, 1, 1, 16), _cfg(16, 1, 0, 0, 4)]
OTHER_CFG = _cfg(16, 1, 0, 0, 4)
SM120_CFGS = [_cfg(16, 0, 0, 1, 8), _cfg(0, 1, 1, 0, 16), _cfg(16, 1, 0, 1, 4)]


def _sizes(N, c):
    """(HEAD, CHUNK, tail chunks) of a case, by hand."""
    w = c["num_warps"]
    head = min(1 << (N - 1).bit_length(), c["HEAD_PPT"] * 32 * w) if c["HEAD_PPT"] else 0
    chunk = min(256 * w, 1024)
    return head, chunk, -(-max(N - head, 0) // chunk)


def _grid_cloud(N: int, seed: int):
    """N points: an integer 6 x 6 x 6 grid (216) then duplicates of grid points, shuffled (fp32, exact); a
    case past 256 points repeats its first 256 every 256 points."""
    import torch
    g = torch.stack(torch.meshgrid(*(torch.arange(6.0),) * 3, indexing="ij"), -1).reshape(-1, 3)
    gen = torch.Generator().manual_seed(seed)
    pts = torch.cat([g, g[torch.randint(0, 216, (N - 216,), generator=gen)]])
    return pts[torch.randperm(N, generator=gen)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """RAGGED_LENGTHS: the case's own lengths (the padding NaN); TIES: grid clouds (exact, with
    duplicates); a pitched or channel-first buffer's other channels NaN. Then the inputs' copies."""
    import torch

    xyz = inputs["xyz"]
    B, N, _ = xyz.shape
    if name in RAGGED_LENGTHS:
        lens = RAGGED_LENGTHS[name]
        inputs["lengths"] = torch.tensor(lens, dtype=torch.int64)
        for b in range(B):
            xyz[b, lens[b]:] = float("nan")
    if name in TIES:
        for b in range(B):
            cloud = _grid_cloud(min(N, 256), 7 + b)
            xyz[b] = cloud.repeat(-(-N // 256), 1)[:N]
    if point.get("channels", 3) > 3:
        C = point["channels"]
        if point.get("channel_first"):
            buf = xyz.as_strided((B, C, N), (C * N, N, 1), xyz.storage_offset())
            buf[:, 3:, :] = float("nan")
        else:
            buf = xyz.as_strided((B, N, C), (N * C, C, 1), xyz.storage_offset())
            buf[:, :, 3:] = float("nan")
    inputs["xyz0"] = inputs["xyz"].clone()
    inputs["len0"] = None if inputs["lengths"] is None else inputs["lengths"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, c = CASES[KERNEL][name]
    B, N, npoint = p["B"], p["N"], p["npoint"]
    assert res["n_bad"] == 0 and res["n_diff"] == 0, H.mismatch(res, f"{name} launch")
    assert res["dtype"] == p["index_dtype"] and res["shape"] == [B, npoint] and res["contiguous"], res
    assert res["n_pad_wrong"] == 0 and res["n_out_of_cloud"] == 0, res
    assert res["check"]["n_not_farthest"] == 0 and res["check"]["n_repeat"] == 0, res["check"]
    assert res["deterministic"] is True and res["inputs_unchanged"] is True, res
    assert res["baseline"]["n_not_farthest"] == 0 and res["baseline"]["n_repeat"] == 0, res["baseline"]
    lens = RAGGED_LENGTHS.get(name, [N] * B)
    assert res["n_minus1"] == sum(npoint - min(npoint, L) for L in lens), res
    assert res["check"]["n_checked"] == sum(max(min(npoint, L) - 1, 0) for L in lens), res["check"]
    if name in TIES:
        # exact ties were met and broken to the lowest index (every pick the first of its maximum)
        assert res["check"]["n_tied"] > 0 and res["check"]["n_not_lowest"] == 0, res["check"]
    if name == "npoint_past_n":
        assert res["check"]["n_checked"] == B * (N - 1), res["check"]


def test_cases_cover_every_code_path():
    """Every tunable at two values at least and each sweep value; HEAD 0 / whole / with a tail of one and
    several chunks; TAIL 0 / 1 x LAYOUT 0 / 1 x PICK x KEY where a tail is streamed; lengths or not, a
    cloud whose tail is empty beside one with a tail; npoint below / past N, past PAD_BLOCK; int32 /
    int64; contiguous, pitched, channel-first xyz; exact ties."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL]
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    seen = set()
    for name, (p, c) in cases.items():
        inp = mod.make_inputs(p, seed=0, device="meta")
        lens = None if name not in RAGGED_LENGTHS else inp["lengths"]
        idx = __import__("torch").empty((p["B"], p["npoint"]), dtype=inp["index_dtype"], device="meta")
        head, chunk, tailp = mod._sizes(p["N"], c)
        a = mod._kernel_args(inp["xyz"], lens, idx, idx if tailp else None, p["npoint"], c)
        assert (a["HEAD"], a["CHUNK"], -(-a["TAILP"] // a["CHUNK"])) == _sizes(p["N"], c), name
        assert a["EXACT"] == 1                                   # meta / cuda: the GPU's arithmetic
        seen.add((a["HAS_LEN"], int(a["HEAD"] > 0), a["TAIL"], a["LAYOUT"], a["PICK"], a["KEY"]))
    assert {s[0] for s in seen} == {0, 1} and {(s[1], s[2]) for s in seen} == {(1, 0), (1, 1), (0, 1)}
    assert {(s[3], s[4], s[5]) for s in seen if s[2]} == set(itertools.product((0, 1), repeat=3))
    tails = [_sizes(p["N"], c)[2] for p, c in cases.values()]
    assert 0 in tails and 1 in tails and max(tails) >= 2
    assert any(p["npoint"] > p["N"] for p, _ in cases.values())
    assert any(p["npoint"] > mod.PAD_BLOCK for p, _ in cases.values())
    assert any(p["npoint"] == 1 for p, _ in cases.values())
    assert {p["index_dtype"] for p, _ in cases.values()} == {"int32", "int64"}
    assert any(p.get("channel_first") for p, _ in cases.values()) and any(
        p.get("channels", 3) > 3 and not p.get("channel_first") for p, _ in cases.values())
    # ragged: a length of 0, of 1, one ending inside the head, one at the head's edge, one in a tail chunk
    rl = {(n, L) for n, lens in RAGGED_LENGTHS.items() for L in lens}
    heads = {n: _sizes(cases[n][0]["N"], cases[n][1])[0] for n in RAGGED_LENGTHS}
    assert {0, 1} <= {L for _, L in rl}
    assert any(0 < L - heads[n] < cases[n][0]["N"] - heads[n] for n, L in rl)
    assert any(L == heads[n] for n, L in rl) and any(1 < L < heads[n] for n, L in rl)
    for n, lens in RAGGED_LENGTHS.items():
        assert cases[n][0].get("ragged") == 1 and len(lens) == cases[n][0]["B"] and lens[0] == cases[n][0]["N"]
    assert {c["num_stages"] for _, c in cases.values()} == {1, 2}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides
    (the channel-first view's point stride 1, the ragged batch's lengths), HEAD / CHUNK / TAILP and the
    constexprs, the grid (B programs) and the passes; bytes_moved / flops by hand; the work per point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "farthest_point_sample", "fps_reference"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    idt = {"int32": torch.int32, "int64": torch.int64}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, N, npoint = p["B"], p["N"], p["npoint"]
        C = p.get("channels", 3)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["XYZ"].shape == (B, N, 3) and a["XYZ"].dtype == torch.float32
            if p.get("channel_first"):
                assert a["XYZ"].stride() == (C * N, 1, N)
            else:
                assert a["XYZ"].stride() == (N * C, C, 1)
            assert (a["stride_b"], a["stride_n"], a["stride_c"]) == a["XYZ"].stride()
            assert a["IDX"].shape == (B, npoint) and a["IDX"].dtype == idt[p["index_dtype"]]
            assert a["IDX"].is_contiguous()
            if p.get("ragged"):
                assert a["LEN"].shape == (B,) and a["LEN"].dtype == torch.int64 and a["HAS_LEN"] == 1
            else:
                assert a["LEN"] is a["IDX"] and a["HAS_LEN"] == 0
            head, chunk, nchunks = _sizes(N, cfg)
            assert (a["HEAD"], a["CHUNK"], a["TAILP"]) == (head, chunk, nchunks * chunk)
            assert a["TAIL"] == int(nchunks > 0) and a["N"] == N and a["NPOINT"] == npoint
            if nchunks:
                assert a["SCR"].shape == (B, 4 * nchunks * chunk) and a["SCR"].dtype == torch.float32
            else:
                assert a["SCR"] is a["IDX"]
            assert (a["LAYOUT"], a["PICK"], a["KEY"], a["EXACT"]) == (cfg["LAYOUT"], cfg["PICK"], cfg["KEY"], 1)
            assert mod.grid(cfg, p) == (B,)
            assert mod.loop_iterations(cfg, p) == min(npoint, N) - 1
        lens = [N - (b * N) // (2 * B) for b in range(B)] if p.get("ragged") else [N] * B
        ie = 4 if p["index_dtype"] == "int32" else 8
        assert mod.bytes_moved(p) == 12 * sum(lens) + B * npoint * ie + (8 * B if p.get("ragged") else 0)
        assert mod.flops(p) == sum(9 * L * (min(npoint, L) - 1) for L in lens)
        # every point is 16 M - 0.3 G point updates: one program a cloud runs hundreds to thousands of
        # dependent passes (well over 50 us on an H100), the inputs a few MB
        assert 1.5e7 <= mod.flops(p) / 9 <= 3e8 and min(npoint, N) - 1 >= 500
        assert mod.bytes_moved(p) < 5e6
    # the regimes: a cloud whole in the head for every config with a head / whole or half / mostly streamed
    heads = [{_sizes(p["N"], c)[2] for c in cfgs if c["HEAD_PPT"]} for p in mod.POINTS]
    assert heads[0] == {0} and heads[1] == {0, 2} and min(heads[2]) >= 12
    assert [p["index_dtype"] for p in mod.POINTS] == ["int32", "int64", "int64"]
    assert [p["dtype"] for p in mod.POINTS] == ["fp32"] * 3          # the correctness gate's fp32 tolerance
    assert [p.get("channel_first", 0) for p in mod.POINTS] == [0, 1, 0]
    assert [p.get("ragged", 0) for p in mod.POINTS] == [0, 0, 1]


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, strides, the seed, the NaN padding, the lengths; the reference by hand on a
    line of points and a square (ties), against a brute-force float64 FPS on random clouds; bytes /
    flops by hand; the grid."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 10, 4, "int32", channels=6, channel_first=1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["xyz"]
    assert x.shape == (3, 10, 3) and x.stride() == (60, 1, 10) and x.dtype == torch.float32
    assert inp["lengths"] is None and inp["npoint"] == 4 and inp["index_dtype"] == torch.int32
    assert float(x.abs().max()) <= 1.0
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["xyz"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["xyz"], x)
    q = _pt(4, 5000, 7, ragged=1)
    inp = mod.make_inputs(q, seed=0, device="cpu")
    assert inp["lengths"].tolist() == [5000, 4375, 3750, 3125] and inp["xyz"].stride() == (15000, 3, 1)
    assert torch.isnan(inp["xyz"][3, 3125:]).all() and not torch.isnan(inp["xyz"][3, :3125]).any()
    assert float(inp["xyz"][0, :, 0].abs().max()) > 4.0                    # a room scan's extent
    # by hand: points on a line at 0, 1, 3, 7, 2: from 0 the farthest is 7 (index 3), then 3 (index 2:
    # distances 9 / 16 -> min 9 against 2's 4), then 1 and 2 tie at 1 -> the lower index, 1
    line = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [3, 0, 0], [7, 0, 0], [2, 0, 0]]])
    assert mod.fps_reference(line, 5).tolist() == [[0, 3, 2, 1, 4]]
    assert mod.fps_reference(line, 7).tolist() == [[0, 3, 2, 1, 4, -1, -1]]
    assert mod.fps_reference(line, 4, torch.tensor([3])).tolist() == [[0, 2, 1, -1]]
    assert mod.fps_reference(line, 3, torch.tensor([0])).tolist() == [[-1, -1, -1]]
    # a unit square's corners (0, 1, 2, 3 = (0,0), (1,0), (0,1), (1,1)): 3 is farthest, then 1 and 2 tie
    sq = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]])
    assert mod.fps_reference(sq, 4).tolist() == [[0, 3, 1, 2]]
    # against a brute-force float64 FPS (no near-ties at these sizes)
    gen = torch.Generator().manual_seed(3)
    pts = torch.rand((2, 300, 3), generator=gen)
    ref = mod.fps_reference(pts, 40)
    for b in range(2):
        P = pts[b].double()
        sel = [0]
        d = ((P - P[0]) ** 2).sum(1)
        for _ in range(39):
            sel.append(int(torch.argmax(d)))
            d = torch.minimum(d, ((P - P[sel[-1]]) ** 2).sum(1))
        assert ref[b].tolist() == sel
    assert torch.equal(mod.torch_baseline({"xyz": pts, "npoint": 40, "lengths": None}), ref)
    inp = mod.make_inputs(_pt(2, 30, 5), device="cpu")
    assert mod.reference(inp).dtype == torch.int64 and mod.reference(inp).shape == (2, 5)
    assert mod.bytes_moved(_pt(2, 30, 5)) == 12 * 60 + 2 * 5 * 8
    assert mod.bytes_moved(_pt(4, 100, 5, "int32", ragged=1)) == 12 * (100 + 88 + 75 + 63) + 4 * 5 * 4 + 32
    assert mod.flops(_pt(2, 30, 5)) == 2 * 9 * 30 * 4
    assert mod.flops(_pt(2, 3, 5)) == 2 * 9 * 3 * 2                         # min(npoint, N) - 1 passes
    assert mod.grid(_cfg(16), _pt(7, 30, 5)) == (7,)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.zeros(2, 10, 3)
    with pytest.raises(ValueError, match="expected xyz"):
        mod.farthest_point_sample(torch.zeros(2, 10, 4), 3)
    with pytest.raises(ValueError, match="expected xyz"):
        mod.farthest_point_sample(torch.zeros(10, 3), 3)
    with pytest.raises(ValueError, match="fp32"):
        mod.farthest_point_sample(x.half(), 3)
    with pytest.raises(ValueError, match="npoint=-1"):
        mod.farthest_point_sample(x, -1)
    with pytest.raises(ValueError, match="npoint=2.0"):
        mod.farthest_point_sample(x, 2.0)
    with pytest.raises(ValueError, match="index_dtype"):
        mod.farthest_point_sample(x, 3, index_dtype=torch.int16)
    with pytest.raises(ValueError, match="HEAD_PPT=3"):
        mod.farthest_point_sample(x, 3, HEAD_PPT=3)
    with pytest.raises(ValueError, match="HEAD_PPT=32 on num_warps=16"):
        mod.farthest_point_sample(x, 3, HEAD_PPT=32, num_warps=16)
    with pytest.raises(ValueError, match="PICK=2"):
        mod.farthest_point_sample(x, 3, PICK=2)
    with pytest.raises(ValueError, match="KEY=-1"):
        mod.farthest_point_sample(x, 3, KEY=-1)
    with pytest.raises(ValueError, match="LAYOUT=True"):
        mod.farthest_point_sample(x, 3, LAYOUT=True)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.farthest_point_sample(x, 3, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.farthest_point_sample(x, 3, num_stages=0)
    with pytest.raises(ValueError, match=r"lengths must be \[2\]"):
        mod.farthest_point_sample(x, 3, torch.tensor([3, 4, 5]))
    with pytest.raises(ValueError, match="lengths must be int32 / int64"):
        mod.farthest_point_sample(x, 3, torch.tensor([3.0, 4.0]))
    big = torch.empty((1, 2**20, 3), device="meta").expand(1, 2**20, 3).as_strided((1, 2**20, 3), (0, 4096, 1))
    with pytest.raises(ValueError, match="int32 in-cloud offsets"):
        mod.farthest_point_sample(big, 3)
    with pytest.raises(ValueError, match="N=33554432 exceeds"):
        mod.grid(mod.BASELINE, _pt(1, 2**25, 4))
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(dict(_pt(1, 8, 2), dtype="bf16"), device="cpu")
    with pytest.raises(ValueError, match="index_dtype 'int16'"):
        mod.bytes_moved(_pt(1, 8, 2, "int16"))
    with pytest.raises(ValueError, match="B=0"):
        mod.flops(_pt(0, 8, 2))
    with pytest.raises(ValueError, match="npoint=0"):
        mod.grid(mod.BASELINE, _pt(1, 8, 0))
    with pytest.raises(ValueError, match="channels=2"):
        mod.example_args(mod.BASELINE, _pt(1, 8, 2, channels=2))
    with pytest.raises(ValueError, match="ragged=2"):
        mod.example_args(mod.BASELINE, _pt(1, 8, 2, ragged=2))
    with pytest.raises(ValueError, match="channel_first=0.5"):
        mod.example_args(mod.BASELINE, _pt(1, 8, 2, channel_first=0.5))
    with pytest.raises(ValueError, match="HEAD_PPT=64"):
        mod.loop_iterations(dict(mod.BASELINE, HEAD_PPT=64), mod.POINTS[0])
    # nothing to do: empty outputs, nothing launched
    assert mod.farthest_point_sample(x, 0).shape == (2, 0)
    out = mod.farthest_point_sample(torch.zeros(3, 0, 3), 4, index_dtype=torch.int32)
    assert out.shape == (3, 4) and out.dtype == torch.int32 and (out == -1).all()
    assert mod.farthest_point_sample(torch.zeros(0, 5, 3), 4).shape == (0, 4)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (HEAD_PPT 0 / 16 x PICK 0 / 1 x KEY 0 / 1 x LAYOUT 0 / 1 x 4 / 8 / 16
    warps, num_stages 1: the sample loop is a dependent chain and the chunk loop's loads are L1 / L2 hits
    of the scratch it rewrites) with BASELINE among them; at every point each config is valid, its head
    at most 16 points a thread and its chunk 2-8 points a thread. The grid is B programs (32 / 16 / 8):
    fewer than 4 x 132 -- a real FPS batch is this small, and one program's chain is the time. Every
    config was compiled for sm_90 at every point with triton 3.6.0 and 3.9: no spills; triton 3.6
    (ptxas 12.8) 32-123 registers at ModelNet's point, 32-202 at S3DIS's, 32-204 at SUN RGB-D's;
    triton 3.9 (ptxas 12.9) 28-112, 32-205 and 32-201; shared memory 32 B - 4 KiB (the cross-warp
    reductions' partials; 2-4 KiB where LAYOUT 0's prologue converts the channel-first head's layout)."""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) == (p["B"],) and p["B"] <= 4 * H100_SMS
            head, chunk, nchunks = _sizes(p["N"], c)
            threads = 32 * c["num_warps"]
            assert head <= 16 * threads and 2 <= chunk // threads <= 8


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
    """On sm_90: BASELINE and three more at the first point (ModelNet, 1024 points: the whole cloud in
    the head, or none and streamed) compile without spills, their shared memory the reductions'
    partials; BASELINE's SASS has no FFMA (the distance's products and sums rounded apart: mul.rn /
    add.rn in its PTX); BASELINE and OTHER_CFG at the other two points (S3DIS's channel-first view;
    SUN RGB-D's ragged scenes with a 16-chunk tail) likewise."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= 1024, (cfg, res.shared)
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=1, keep_ir=True)
    assert "mul.rn.f32" in res.ptx and "add.rn.f32" in res.ptx
    assert res.sass and "FMUL" in res.sass and "FFMA" not in res.sass
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], OTHER_CFG):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.shared <= 4096, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, no head with keys carrying the coordinates on 16 warps, and
    the pairs carrying them on 4 warps compile at the first point without spills, their shared memory
    within the block's."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _fps_check(xyz, lengths, idx) -> dict:
    """Independent of the kernel and the reference: in float64, each pick's squared distance to the
    earlier picks against the largest such distance over the cloud (relative 1e-6), the picks distinct
    while that maximum is positive, exact ties met (another point at the same maximum) and whether the
    pick was the lowest index among the points at its maximum (in fp32, as the kernel's rounding: the
    reference's distances recomputed)."""
    import torch

    B, N, _ = xyz.shape
    out = {"n_checked": 0, "n_not_farthest": 0, "n_repeat": 0, "n_tied": 0, "n_not_lowest": 0}
    for b in range(B):
        L = N if lengths is None else max(0, min(int(lengths[b]), N))
        K = min(idx.shape[1], L)
        if K == 0:
            continue
        P = xyz[b, :L].double()
        P32 = xyz[b, :L].float()
        sel = idx[b, :K].tolist()
        d = ((P - P[sel[0]]) ** 2).sum(1)
        d32 = torch.full((L,), float("inf"))
        c = P32[sel[0]]
        for i in range(1, K):
            dx, dy, dz = (P32 - c).unbind(1)
            d32 = torch.minimum(d32, (dx * dx + dy * dy) + dz * dz)
            j = sel[i]
            out["n_checked"] += 1
            m = float(d.max())
            if float(d[j]) < m * (1 - 1e-6):
                out["n_not_farthest"] += 1
            if m > 0 and j in sel[:i]:
                out["n_repeat"] += 1
            at_max = (d32 == d32.max()).nonzero().flatten()
            if at_max.numel() > 1:
                out["n_tied"] += 1
            if int(at_max[0]) != j:
                out["n_not_lowest"] += 1
            d = torch.minimum(d, ((P - P[j]) ** 2).sum(1))
            c = P32[j]
    return out


def _run() -> None:
    """Every case through launch against reference (exactly), the -1 padding, the float64 FPS check of
    launch's and torch_baseline's picks, a second launch, the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.int32: "int32", torch.int64: "int64"}

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        xyz, lens = inputs["xyz"], inputs["lengths"]
        B, N, _ = xyz.shape
        o = out.to(torch.int64)
        Ls = [N if lens is None else max(0, min(int(lens[b]), N)) for b in range(B)]
        slot = torch.arange(out.shape[1])[None, :]
        K = torch.tensor([min(out.shape[1], L) for L in Ls])[:, None]
        pad_wrong = (slot >= K) & (o != -1)
        out_of_cloud = (slot < K) & ((o < 0) | (o >= torch.tensor(Ls)[:, None]))
        again = mod.launch(inputs, cfg)
        same = (torch.equal(xyz.view(torch.int32), inputs["xyz0"].view(torch.int32))      # bits: NaN padding
                and (lens is None or torch.equal(lens, inputs["len0"])))
        return {"dtype": names.get(out.dtype), "contiguous": out.is_contiguous(),
                "n_diff": int((o != ref).sum()), "n_pad_wrong": int(pad_wrong.sum()),
                "n_out_of_cloud": int(out_of_cloud.sum()), "n_minus1": int((o == -1).sum()),
                "deterministic": bool(torch.equal(again, out)), "inputs_unchanged": bool(same),
                "check": _fps_check(xyz, lens, o), "baseline": _fps_check(xyz, lens, mod.torch_baseline(inputs))}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
