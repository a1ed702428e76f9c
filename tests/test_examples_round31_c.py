"""examples/lookback_scan.py (a single-pass device-wide inclusive prefix sum with decoupled look-back, as CUB's
DeviceScan: a tile id from an atomic counter, the tile scanned in registers as [32 x num_warps, ITEMS], its
aggregate and then its inclusive prefix published in a flag + value status word, the exclusive prefix built by
looking back LOOKBACK status words at a time; int32 -> int64 offsets or fp32 -> fp32) against its torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep
against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round30_b.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round31_c.py lookback_scan``) that prints one JSON line. The subprocess installs
the harness's interpreter fixes (bf16 rounding; under triton 3.6 with numpy >= 2.3 the runtime loop bounds
read as ints).

Shapes are small, odd and ragged: N of 1 (one element), 12800 (a routing map of 16 experts, 13 tiles of 1024
with a short last one), 3001 (24 tiles of 128), 5600 (175 tiles of 32) to 20000 (3 tiles of 8192); N a
multiple of the tile (EVEN_N 1) and not, for int32 and fp32 each; one tile (no look-back at all); look-back
windows reaching past tile 0 (LOOKBACK 16 / 32 over 5-8 tiles); int32 values up to +-(2^31 - 1) (prefixes past
2^32 and negative: the status word's 62-bit values); all-zero counts; a routing map, sparse counts, softmax
rows, signed values; x a column of a wider table (stride 3, the other columns NaN or a sentinel), y written
into a given strided buffer; ITEMS 1-32, LOOKBACK 1-32, 1-16 warps, num_stages 1 / 2.

Per case: launch's output exactly the int64 reference (int32) or within (i + 1) u S_i of the fp64 reference
(fp32; u = 2^-24, S_i the sum of |x| up to i: the bound of any summation order), fresh and contiguous, the
inputs unchanged; the wrapper into a given strided out (the pad untouched); the workspace after a launch
(every tile PREFIX_AVAILABLE with its inclusive prefix, the counter at the tile count) and reused for a
second launch; fp32 in place (x as out) equal to the fresh output; torch_baseline within tolerance. And the
look-back past AGGREGATE_AVAILABLE words, which a sequential interpreter never produces on its own: `_kernel`
launched over its last tiles only, on a workspace whose first k tiles the test published by hand (this
file's own encoding of the status words: value << 2 | flag) -- aggregates everywhere but tile 0 and one tile m
placed so that tile k's look-back must step down a window and then ignore the lanes below m -- and the
counter set to k: the launched tiles' outputs and status words against the reference, the first k tiles'
outputs untouched.
"""

from __future__ import annotations

import itertools
import re
import struct
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "lookback_scan"
ROLE = "held-out-31"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
U32 = 2.0 ** -24
TOL = dict(H.TOL, int32=0.0)        # int32 -> int64 sums: exact

# the study's sweep (scripts/rank_study.py SWEEPS["lookback_scan"] once the lead adds it)
SWEEP_AXES = {"ITEMS": [4, 8, 16], "LOOKBACK": [1, 4, 16, 32], "num_warps": [2, 4, 8, 16], "num_stages": [1]}


def _cfg(items, lb, w, ns=1):
    return {"ITEMS": items, "LOOKBACK": lb, "num_warps": w, "num_stages": ns}


def _pt(N, dtype, data="signed", **kw):
    return {"N": N, "dtype": dtype, "data": data, **kw}


# case -> (point, cfg); comments: TILE x tiles, EVEN_N
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # a routing map of 16 experts x 800 tokens, top-2 (int32 -> int64): 1024 x 13, the last of 512 (EVEN_N 0)
        "routing_int32": (_pt(16 * 800, "int32", "routing", experts=16, topk=2), _cfg(4, 4, 8)),
        # sparse counts: 1024 x 8 (EVEN_N 1); LOOKBACK 16 over 8 tiles: every window reaches past tile 0
        "counts_even_int32": (_pt(8192, "int32", "counts", density=0.05, max_count=9), _cfg(8, 16, 4)),
        # 5 softmax rows of 1000 (fp32): 1024 x 5, the last of 904; a 32-word window over 5 tiles
        "probs_fp32": (_pt(5000, "fp32", "probs", rows=5), _cfg(16, 32, 2)),
        # int32 up to +-(2^31 - 1): prefixes past 2^32, negative; 128 x 24 (the last of 57), one word a step
        "signed_big_int32": (_pt(3001, "int32", scale=2**31 - 1), _cfg(4, 1, 1, 2)),
        # one tile of 4096 (EVEN_N 1): tile 0 only, no look-back; signed fp32
        "one_tile_fp32": (_pt(4096, "fp32"), _cfg(32, 4, 4)),
        # x a column of an [N, 3] int32 table (the others a sentinel), y into a strided buffer: 512 x 3 (EVEN_N 0)
        "strided_int32": (_pt(1500, "int32", scale=1000), _cfg(8, 32, 2)),
        # x a column of an [N, 3] fp32 buffer of NaNs: 8192 x 3, the last of 3616; 16 warps, num_stages 2
        "strided_fp32": (_pt(20000, "fp32"), _cfg(16, 16, 16, 2)),
        # one element: a tile of 128 holding one
        "tiny_fp32": (_pt(1, "fp32"), _cfg(1, 4, 4)),
        # all-ones routing (8 of 8 experts): 32 x 175 (EVEN_N 1), one warp, a 32-word window
        "many_tiles_int32": (_pt(8 * 700, "int32", "routing", experts=8, topk=8), _cfg(1, 32, 1)),
        # all-zero counts: 64 x 16, the last of 40 (EVEN_N 0)
        "zero_counts_int32": (_pt(1000, "int32", "counts", density=0.0), _cfg(2, 4, 1)),
        # 2048 x 3 (EVEN_N 1), ITEMS 32 on 2 warps, one word a step
        "even_multi_int32": (_pt(6144, "int32", scale=70000), _cfg(32, 1, 2, 2)),
        # signed fp32, 128 x 24, the last of 56 (EVEN_N 0), one word a step
        "ragged_fp32": (_pt(3000, "fp32"), _cfg(2, 1, 2)),
        # 8 softmax rows of 1024 (fp32): 512 x 16 (EVEN_N 1), 4 words a step
        "even_probs_fp32": (_pt(8192, "fp32", "probs", rows=8), _cfg(4, 4, 4)),
        # signed fp32 in tiles of 64: 47, the last of 56; 16 words a step
        "walk16_fp32": (_pt(3000, "fp32"), _cfg(1, 16, 2)),
    },
}
STRIDED = ("strided_int32", "strided_fp32")
X_COLS, OUT_PAD = 3, 2
INT_SENTINEL = -7

# configs compiled on sm_90 at the module's first POINT (DeepSeek-V3 routing map, int32 -> int64) (BASELINE
# first): the most registers (ITEMS 16 on 16 warps, 128 at most), the smallest tile with one word a step, the
# widest window on 4 warps; then at the voxel counts and the fp32 CDF (ragged for tiles of 4096 / 8192)
COMPILE_CFGS = [_cfg(16, 32, 8), _cfg(16, 16, 16), _cfg(4, 1, 2), _cfg(8, 32, 4)]
P1_CFGS = [_cfg(16, 32, 8), _cfg(16, 4, 2)]
P2_CFGS = [_cfg(16, 32, 8), _cfg(16, 4, 16), _cfg(4, 4, 4)]
SM120_CFGS = [_cfg(16, 32, 8), _cfg(16, 16, 16), _cfg(4, 4, 2)]


def _tile(c) -> int:
    return c["ITEMS"] * 32 * c["num_warps"]


def _tiles(p, c) -> int:
    return -(-p["N"] // _tile(c))


def seed_plan(tiles: int, lookback: int):
    """The hand-published look-back of a case: (k, m, windows) -- tiles 0 .. k-1 published, PREFIX_AVAILABLE at
    0 and m (placed so that the first window holds no prefix where there is room: the look-back must step
    down a window and then ignore the window's lanes below m), AGGREGATE_AVAILABLE elsewhere; windows: the
    look-back steps tile k takes -- or None for fewer than 3 tiles."""
    if tiles < 3:
        return None
    k = max(2, tiles - 2)
    m = k - lookback - 2 if k - lookback - 2 >= 1 else k // 2
    j, windows = k, 0
    while True:
        windows += 1
        if any(t in (0, m) for t in range(max(0, j - lookback), j)):
            return k, m, windows
        j -= lookback


def spin_loop_barriers(ptx: str) -> list[int]:
    """For each PTX loop (a branch back to an earlier label) whose body holds the look-back's volatile load:
    the barriers (bar.sync / barrier.sync) in it."""
    lines = ptx.splitlines()
    labels = {}
    for i, ln in enumerate(lines):
        head = ln.strip().split()[0] if ln.strip() else ""
        if re.fullmatch(r"\$L__BB\w+:", head):
            labels[head[:-1]] = i
    out = []
    for i, ln in enumerate(lines):
        mt = re.search(r"bra(?:\.uni)?\s+(\$L__BB\w+);", ln)
        if mt and labels.get(mt.group(1), i) < i:
            body = lines[labels[mt.group(1)]:i + 1]
            if any("ld.volatile" in b for b in body):
                out.append(sum(("bar.sync" in b or "barrier.sync" in b) for b in body))
    return out


def _smem_bound(cfg, p) -> int:
    """An upper bound of a config's shared memory: the whole tile in the accumulator's type (8 bytes int64, 4
    fp32), the most a layout conversion or the scan's cross-warp step can stage."""
    return _tile(cfg) * (8 if p["dtype"] == "int32" else 4)


def pack_word(value, flag: int, dtype: str) -> int:
    """A status word as this file encodes it (independently of the kernel's _pack): the value's bits (an
    int64, or an fp32's 32 bits sign-extended) << 2 | flag, as a signed 64-bit int."""
    bits = int(value) if dtype == "int32" else struct.unpack("<i", struct.pack("<f", float(value)))[0]
    w = (bits << 2) | flag
    assert -2**63 <= w < 2**63
    return w


def unpack_word(w: int, dtype: str):
    """(flag, value) of a status word."""
    flag, bits = w & 3, w >> 2
    if dtype == "int32":
        return flag, bits
    return flag, struct.unpack("<f", struct.pack("<i", ((bits + 2**31) % 2**32) - 2**31))[0]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: x column 1 of an [N, 3] buffer whose other columns are NaN (fp32) or a sentinel (int32). Then
    a copy of x, to check it is left alone."""
    import torch

    if name in STRIDED:
        x = inputs["x"]
        fill = float("nan") if x.dtype == torch.float32 else 123456
        buf = torch.full((x.shape[0], X_COLS), fill, dtype=x.dtype)
        buf[:, 1] = x
        inputs["x"] = buf[:, 1]
    inputs["x0"] = inputs["x"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, c = CASES[KERNEL][name]
    N = p["N"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    want_dt = "int64" if p["dtype"] == "int32" else "fp32"
    assert res["shape"] == [N] and res["dtype"] == want_dt and res["out_strides"] == [1], res
    if p["dtype"] == "int32":
        assert res["exact"] is True, res
    assert res["n_loose"] == 0, res                 # fp32: (i + 1) u S_i, any summation order's bound
    assert res["inputs_unchanged"] is True, res
    assert res["given"]["n_loose"] == 0 and res["given"]["same_buffer"] is True, res["given"]
    assert res["given"]["pad_untouched"] is True and res["given"]["equal_fresh"] is True, res["given"]
    ws = res["workspace"]
    assert ws["counter"] == _tiles(p, c) and ws["flags"] == [2], ws
    assert ws["n_bad_prefix"] == 0 and ws["reuse_equal"] is True, ws
    assert ws["words"] == 16 * -(-_tiles(p, c) // 16) + 1, ws
    if p["dtype"] == "fp32":
        assert res["inplace_equal"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    seeded = res["seeded"]
    plan = seed_plan(_tiles(p, c), c["LOOKBACK"])
    if plan is not None:
        assert (seeded["k"], seeded["m"]) == plan[:2] and seeded["n_agg"] == plan[0] - 1 - (plan[1] > 0), seeded
        assert seeded["n_loose"] == 0 and seeded["head_untouched"] is True, seeded
        assert seeded["flags"] == [2] and seeded["counter"] == _tiles(p, c), seeded
        assert seeded["n_bad_prefix"] == 0, seeded
    else:
        assert seeded is None
    if name == "signed_big_int32":
        assert res["max_abs_prefix"] > 2**33 and res["min_prefix"] < -2**32, res
    if name == "zero_counts_int32":
        assert res["ref_nonzero"] is False and res["out_nonzero"] is False, res
    if name == "probs_fp32":
        assert abs(res["last"] - 5.0) < 1e-4, res   # five rows of probabilities
    if name in STRIDED:
        assert res["x_strides"] == [X_COLS], res


def test_cases_cover_every_code_path():
    """EVEN_N both ways for int32 and fp32 each; one tile and many (175); windows past tile 0 and one word a
    step over 24 tiles; prefixes past 2^32 and negative; zeros; every data kind; strided x and out; every
    sweep value of every tunable, and ITEMS 1 / 2, 1 warp, num_stages 2; the hand-published look-back
    (k >= 2 tiles, an aggregate among them) at every LOOKBACK and both dtypes."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    fl = {(p["dtype"], int(p["N"] % _tile(c) == 0)) for p, c in cases}
    assert fl == set(itertools.product(mod.DTYPES, (0, 1)))
    assert {p.get("data", "signed") for p, _ in cases} == set(mod.DATA)
    tiles = [_tiles(p, c) for p, c in cases]
    assert min(tiles) == 1 and max(tiles) >= 100
    assert any(c["LOOKBACK"] >= _tiles(p, c) >= 3 for p, c in cases)          # windows past tile 0
    assert any(c["LOOKBACK"] == 1 and _tiles(p, c) >= 20 for p, c in cases)
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert {1, 2} <= {c["ITEMS"] for _, c in cases} and 1 in {c["num_warps"] for _, c in cases}
    assert 2 in {c["num_stages"] for _, c in cases}
    seeded = {(p["dtype"], c["LOOKBACK"]) for p, c in cases if _tiles(p, c) >= 3}
    assert seeded == set(itertools.product(mod.DTYPES, (1, 4, 16, 32))), seeded
    # the hand-published look-back steps down windows of every width (int32 1 / 4 / 32, fp32 1 / 4 / 16)
    steps = {(p["dtype"], c["LOOKBACK"]) for p, c in cases
             if (seed_plan(_tiles(p, c), c["LOOKBACK"]) or (0, 0, 0))[2] >= 2}
    assert {lb for _, lb in steps} == {1, 4, 16, 32} and {dt for dt, _ in steps} == set(mod.DTYPES), steps


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta (x [N] in the point's dtype, y [N] int64 / fp32,
    the workspace's status [tiles] and counter [1] views, 16-byte aligned), the constexprs, the grid (one
    CTA a tile), the loop length, the zero-fill; bytes_moved / flops; 0.2-1.1 GB moved a point (68-362 us at
    an H100's ~3 TB/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "secondary_kernels", "lookback_scan", "tile_size",
               "workspace_words"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    for p in mod.POINTS:
        N = p["N"]
        xdt, ydt = (torch.int32, torch.int64) if p["dtype"] == "int32" else (torch.float32, torch.float32)
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            tiles = _tiles(p, cfg)
            assert a["X"].shape == (N,) and a["X"].dtype == xdt and a["stride_x"] == 1
            assert a["Y"].shape == (N,) and a["Y"].dtype == ydt and a["stride_y"] == 1
            assert a["STATUS"].shape == (tiles,) and a["STATUS"].dtype == torch.int64
            assert a["COUNTER"].shape == (1,) and a["COUNTER"].dtype == torch.int64
            assert a["STATUS"].data_ptr() % 16 == 0 and a["COUNTER"].data_ptr() % 128 == 0
            assert a["COUNTER"].data_ptr() >= a["STATUS"].data_ptr() + 8 * tiles      # on its own line
            assert (a["N"], a["ROWS"], a["ITEMS"], a["LOOKBACK"]) == (N, 32 * cfg["num_warps"], cfg["ITEMS"],
                                                                     cfg["LOOKBACK"])
            assert a["EVEN_N"] == int(N % _tile(cfg) == 0)
            assert mod.tile_size(cfg) == _tile(cfg)
            assert mod.grid(cfg, p) == tiles and mod.loop_iterations(cfg, p) == 1
            words = 16 * -(-tiles // 16) + 1
            assert mod.workspace_words(N, cfg) == words
            assert mod.secondary_kernels(cfg, p) == [{"name": "status_zero_fill", "grid": -(-words // 512),
                                                     "iterations": 1, "tile_bytes": 4096, "dram_bytes": 4096}]
            assert 8 * words <= 0.004 * mod.bytes_moved(p), (p, cfg)             # the workspace: small
        assert mod.bytes_moved(p) == N * (12 if p["dtype"] == "int32" else 8)
        assert mod.flops(p) == N
        assert 50e-6 <= mod.bytes_moved(p) / 3.0e12 <= 20e-3, p
        assert 16 * 2**20 <= N <= 2**30
    # the points differ: a 0/1 routing map (EVEN_N at every tile), sparse counts of 90 M voxels, fp32
    # probabilities (4096 and 8192 do not divide 200 x 128256)
    assert [p["data"] for p in mod.POINTS] == ["routing", "counts", "probs"]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    evens = {(i, mod.example_args(c, p)["EVEN_N"]) for i, p in enumerate(mod.POINTS) for c in _cfgs()}
    assert (2, 0) in evens and (2, 1) in evens and (0, 0) not in evens


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, each data kind's law; reference and torch_baseline by hand; the
    wrapper on no elements; tile_size / workspace_words / grid / loop / zero-fill / bytes / flops by hand;
    the test's status-word encoding round trip."""
    import torch

    mod = load_example(KERNEL)
    r = mod.make_inputs(_pt(32 * 50, "int32", "routing", experts=32, topk=4), seed=1, device="cpu")["x"]
    assert r.shape == (1600,) and r.dtype == torch.int32 and r.is_contiguous()
    rm = r.view(32, 50)                                        # expert-major: [experts, tokens]
    assert set(r.unique().tolist()) == {0, 1} and bool((rm.sum(0) == 4).all())
    assert not torch.equal(rm.sum(1), torch.full((32,), rm.sum(1)[0].item()))  # experts differ in load
    same = mod.make_inputs(_pt(32 * 50, "int32", "routing", experts=32, topk=4), seed=1, device="cpu")["x"]
    other = mod.make_inputs(_pt(32 * 50, "int32", "routing", experts=32, topk=4), seed=2, device="cpu")["x"]
    assert torch.equal(same, r) and not torch.equal(other, r)
    c = mod.make_inputs(_pt(20000, "int32", "counts", density=0.1, max_count=5), seed=0, device="cpu")["x"]
    assert c.dtype == torch.int32 and 0.08 < float((c > 0).float().mean()) < 0.12
    assert int(c.min()) == 0 and int(c.max()) == 5
    pr = mod.make_inputs(_pt(3 * 700, "fp32", "probs", rows=3), seed=0, device="cpu")["x"]
    assert pr.dtype == torch.float32 and bool((pr > 0).all())
    assert torch.allclose(pr.view(3, 700).sum(1), torch.ones(3), atol=1e-5)
    s = mod.make_inputs(_pt(5000, "int32", scale=10), seed=0, device="cpu")["x"]
    assert int(s.min()) == -10 and int(s.max()) == 10
    f = mod.make_inputs(_pt(5000, "fp32"), seed=0, device="cpu")["x"]
    assert 0.9 < float(f.std()) < 1.1 and float(f.min()) < 0
    # reference and torch_baseline by hand
    xi = torch.tensor([3, -1, 0, 2**31 - 1, 2**31 - 1], dtype=torch.int32)
    want = torch.tensor([3, 2, 2, 2**31 + 1, 2**32], dtype=torch.int64)
    assert torch.equal(mod.reference({"x": xi}), want) and torch.equal(mod.torch_baseline({"x": xi}), want)
    xf = torch.tensor([0.5, 0.25, -1.0, 2.0])
    assert torch.equal(mod.reference({"x": xf}), torch.tensor([0.5, 0.75, -0.25, 1.75]))
    assert mod.reference({"x": xf}).dtype == torch.float32
    assert torch.equal(mod.torch_baseline({"x": xf}), torch.tensor([0.5, 0.75, -0.25, 1.75]))
    # the wrapper on no elements: an empty output of the promoted dtype, or the given one
    e = mod.lookback_scan(torch.zeros(0, dtype=torch.int32))
    assert e.shape == (0,) and e.dtype == torch.int64
    given = torch.zeros(0)
    assert mod.lookback_scan(torch.zeros(0), out=given) is given
    # hooks by hand: N 100000 in tiles of 16 x 32 x 8 = 4096 (25 tiles, the last of 1696)
    q = _pt(100000, "int32", "counts")
    b = mod.BASELINE
    assert mod.tile_size(b) == 4096 and mod.grid(b, q) == 25 and mod.loop_iterations(b, q) == 1
    assert mod.tile_size(_cfg(4, 1, 2)) == 256 and mod.grid(_cfg(4, 1, 2), q) == 391
    assert mod.workspace_words(100000, b) == 33 and mod.workspace_words(100000, _cfg(4, 1, 2)) == 401
    assert mod.workspace_words(4096 * 16, b) == 17                       # 16 tiles: the counter right after
    assert mod.secondary_kernels(_cfg(4, 1, 2), q) == [{"name": "status_zero_fill", "grid": 1, "iterations": 1,
                                                         "tile_bytes": 4096, "dram_bytes": 4096}]
    a = mod.example_args(b, q)
    assert a["EVEN_N"] == 0 and a["STATUS"].shape == (25,) and a["COUNTER"].data_ptr() == 8 * 32
    assert mod.example_args(b, dict(q, N=4096 * 3))["EVEN_N"] == 1
    assert mod.bytes_moved(q) == 1200000 and mod.bytes_moved(_pt(100000, "fp32")) == 800000
    assert mod.flops(q) == 100000
    # the status-word encoding of this file
    for v, dt in ((5, "int32"), (-(2**40) - 3, "int32"), (2**61 - 1, "int32"), (-2**61, "int32"),
                  (1.5, "fp32"), (-3.25, "fp32"), (0.0, "fp32")):
        for fl in (1, 2):
            assert unpack_word(pack_word(v, fl, dt), dt) == (fl, v)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(100, dtype=torch.int32)
    with pytest.raises(ValueError, match="ITEMS=3"):
        mod.lookback_scan(x, ITEMS=3)
    with pytest.raises(ValueError, match="ITEMS=128"):
        mod.lookback_scan(x, ITEMS=128)
    with pytest.raises(ValueError, match="LOOKBACK=64"):
        mod.lookback_scan(x, LOOKBACK=64)
    with pytest.raises(ValueError, match="LOOKBACK=0"):
        mod.lookback_scan(x, LOOKBACK=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.lookback_scan(x, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.lookback_scan(x, num_stages=0)
    with pytest.raises(ValueError, match=r"expected a 1-d x \[N\]"):
        mod.lookback_scan(x.view(10, 10))
    with pytest.raises(ValueError, match="int32 .* or fp32"):
        mod.lookback_scan(x.to(torch.int64))
    with pytest.raises(ValueError, match="int32 .* or fp32"):
        mod.lookback_scan(x.half())
    with pytest.raises(ValueError, match=r"out must be a 1-d torch.int64 \[N=100\]"):
        mod.lookback_scan(x, out=torch.zeros(100, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"out must be a 1-d torch.float32 \[N=100\]"):
        mod.lookback_scan(x.float(), out=torch.zeros(99))
    with pytest.raises(ValueError, match="stride 0"):
        mod.lookback_scan(x.float(), out=torch.zeros(1).expand(100))
    with pytest.raises(ValueError, match="out must be on"):
        mod.lookback_scan(x.float(), out=torch.zeros(100, device="meta"))
    with pytest.raises(ValueError, match="workspace must be a contiguous 1-d int64 tensor of at least 17 words"):
        mod.lookback_scan(x, workspace=torch.zeros(1, dtype=torch.int64))
    with pytest.raises(ValueError, match="workspace must be"):
        mod.lookback_scan(x, workspace=torch.zeros(8, dtype=torch.int32))
    big = torch.empty((2**30 + 1,), dtype=torch.int32, device="meta")
    with pytest.raises(ValueError, match="N=1073741825 elements exceed"):
        mod.lookback_scan(big)
    with pytest.raises(ValueError, match="dtype 'fp16'"):
        mod.make_inputs(_pt(8, "fp16"), device="cpu")
    with pytest.raises(ValueError, match="data 'uniform'"):
        mod.bytes_moved(_pt(8, "int32", "uniform"))
    with pytest.raises(ValueError, match="data 'probs' is drawn as fp32, not dtype 'int32'"):
        mod.grid(mod.BASELINE, _pt(8, "int32", "probs"))
    with pytest.raises(ValueError, match="N=0"):
        mod.flops(_pt(0, "int32"))
    with pytest.raises(ValueError, match="N=2147483648"):
        mod.bytes_moved(_pt(2**31, "fp32"))
    with pytest.raises(ValueError, match="experts=3 must be a positive int dividing N=8"):
        mod.example_args(mod.BASELINE, _pt(8, "int32", "routing", experts=3, topk=1))
    with pytest.raises(ValueError, match="topk=9"):
        mod.make_inputs(_pt(16, "int32", "routing", experts=8, topk=9), device="cpu")
    with pytest.raises(ValueError, match="density=1.5"):
        mod.make_inputs(_pt(16, "int32", "counts", density=1.5), device="cpu")
    with pytest.raises(ValueError, match="max_count=0"):
        mod.bytes_moved(_pt(16, "int32", "counts", max_count=0))
    with pytest.raises(ValueError, match="rows=3"):
        mod.grid(mod.BASELINE, _pt(16, "fp32", "probs", rows=3))
    with pytest.raises(ValueError, match="scale=-1"):
        mod.make_inputs(_pt(16, "int32", scale=-1), device="cpu")
    with pytest.raises(ValueError, match="ITEMS=24"):
        mod.grid(dict(mod.BASELINE, ITEMS=24), mod.POINTS[0])
    with pytest.raises(ValueError, match="LOOKBACK=2.5"):
        mod.loop_iterations(dict(mod.BASELINE, LOOKBACK=2.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_warps=64"):
        mod.secondary_kernels(dict(mod.BASELINE, num_warps=64), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (ITEMS 4 / 8 / 16 x LOOKBACK 1 / 4 / 16 / 32 x 2 / 4 / 8 / 16 warps, num_stages
    1: tiles of 256-8192 elements) with BASELINE (CUB's 256 threads x ~16 items, a warp's 32 status words a
    step) among them; at every point each config is valid, launches >= 4 waves of programs on an H100 (2048 at
    the fewest: the routing map in tiles of 8192) and its shared memory bound (the tile in the accumulator's
    type, at most 64 KiB) fits sm_90's 227 KiB. (Every config was compiled for sm_90 at every point with
    triton 3.6.0 and 3.9.0: all compile, none spills; registers 24-94 under 3.6 and 24-82 under 3.9 (the most
    for 16 items a thread on 16 warps at the int64 points, under 16 warps' cap of 128; 24-64 at the fp32
    CDF); shared memory 8 B - 16 KiB under both: 1 KiB a warp at the int64 points (the int64 tile's layout
    conversion for 16-byte stores), at most 128 B a warp at the fp32 point (the scans' cross-warp step); the
    look-back's spin loop holds no barrier in any of the 288 PTX files (its reductions are warp-local: redux
    and shuffles). ITEMS 32 was dropped from the sweep: under 3.9 ptxas settled on 128 registers and spilled
    2 for 32 items on 8 warps with a 16-word window; an earlier flat 1-D tl.cumsum form spilled 10-54 at 32
    items on 16 warps.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p) for p in mod.POINTS for c in cfgs)
    assert fewest == 2048
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert 4 * H100_SMS <= mod.grid(c, p) < 2**31, (p, c)
            assert _smem_bound(c, p) <= 64 * 1024 <= SM90_SMEM_PER_BLOCK, (p, c)
            assert c["LOOKBACK"] <= 32                  # the window's reductions stay inside a warp


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
    """On sm_90: BASELINE, ITEMS 16 on 16 warps (the most registers, under 16 warps' cap of 128), the smallest
    tile with one word a step and a 32-word window on 4 warps at the first point (the routing map, int32 ->
    int64); BASELINE and ITEMS 16 on 2 warps at the voxel counts; BASELINE and ITEMS 16 on 16 warps (tiles
    that do not divide N: the masked path) and a 512-element tile at the fp32 CDF: all compile without
    spills, their shared memory within the bound; in the PTX of three of them the look-back's spin loop (the
    one loop with the volatile load) holds no barrier."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    p0 = mod.POINTS[0]
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= _smem_bound(cfg, p0), (cfg, res.shared)
    for p, cfgs in ((mod.POINTS[1], P1_CFGS), (mod.POINTS[2], P2_CFGS)):
        for cfg in cfgs:
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.n_regs <= 255 and res.shared <= _smem_bound(cfg, p), (cfg, res.n_regs, res.shared)
    assert {mod.example_args(c, mod.POINTS[2])["EVEN_N"] for c in P2_CFGS} == {0, 1}
    # the spin loop holds no barrier (warps whose look-backs took different turns never meet at one)
    for p, cfg in ((p0, mod.BASELINE), (mod.POINTS[2], _cfg(16, 16, 16)), (p0, _cfg(4, 1, 2))):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok" and res.ptx, (cfg, res.status)
        assert spin_loop_barriers(res.ptx) == [0], (cfg, spin_loop_barriers(res.ptx))


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, ITEMS 16 on 16 warps and the smallest tile with 4 words a step
    compile at the first point without spills within their shared memory bound."""
    mod = load_example(KERNEL)
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(_smem_bound(cfg, mod.POINTS[0]), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance, exact for int32) and against
    (i + 1) u S_i; the wrapper into a given strided out; the workspace after a launch and reused; fp32 in
    place; the look-back over hand-published aggregates; torch_baseline against reference; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def same(a, b):
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def n_loose(got, x, ref, lo=0):
        """Elements from lo on farther from ref than (i + 1) u S_i (fp32; 0 / 1 mismatches for ints)."""
        if not x.is_floating_point():
            return int((got[lo:] != ref[lo:]).sum())
        S = torch.cumsum(x.double().abs(), 0)
        i = torch.arange(x.shape[0], dtype=torch.float64)
        loose = (got.double() - ref.double()).abs() > (i + 1) * U32 * S * 1.0001 + 1e-30
        return int(loose[lo:].sum())

    def prefix_check(status, ref, tile, dt, x, first=0):
        """(flags seen, tiles whose published inclusive prefix is off) over the status words of tiles first ..
        of a finished workspace (fp32: within (i + 2) u S_i of the reference at the tile's last element)."""
        words = status.tolist()
        flags, bad = set(), 0
        S = torch.cumsum(x.double().abs(), 0)
        for t in range(first, len(words)):
            fl, v = unpack_word(words[t], dt)
            flags.add(fl)
            end = min((t + 1) * tile, ref.shape[0]) - 1
            if dt == "int32":
                bad += int(v != int(ref[end]))
            else:
                bad += int(abs(v - float(ref[end])) > (end + 2) * U32 * float(S[end]) * 1.0001 + 1e-30)
        return sorted(flags), bad

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        x = inputs["x"]
        n, dt = x.shape[0], point["dtype"]
        tile = mod.tile_size(cfg)
        tiles = -(-n // tile)
        res = {"dtype": {torch.int64: "int64", torch.float32: "fp32"}.get(out.dtype, str(out.dtype)),
               "out_strides": list(out.stride()), "exact": bool(torch.equal(out, ref)),
               "n_loose": n_loose(out, x, ref), "inputs_unchanged": same(x, inputs["x0"]),
               "x_strides": list(x.stride()), "ref_nonzero": bool((ref != 0).any()),
               "out_nonzero": bool((out != 0).any()), "last": float(out[-1]),
               "max_abs_prefix": float(ref.abs().max()), "min_prefix": float(ref.min())}
        # the wrapper into a given strided out: column 0 of an [N, 1 + OUT_PAD] buffer, the rest a sentinel
        fill = INT_SENTINEL if dt == "int32" else float("nan")
        buf = torch.full((n, 1 + OUT_PAD), fill, dtype=out.dtype)
        got = mod.lookback_scan(x, out=buf[:, 0], **cfg)
        pad = buf[:, 1:]
        res["given"] = {"n_loose": n_loose(buf[:, 0], x, ref), "same_buffer": got.data_ptr() == buf.data_ptr(),
                        "pad_untouched": bool((pad == INT_SENTINEL).all()) if dt == "int32"
                        else bool(pad.isnan().all()), "equal_fresh": bool(torch.equal(buf[:, 0], out))}
        # the workspace after a launch (given, with stale words in it), then reused
        ws = torch.full((mod.workspace_words(n, cfg) + 5,), 99, dtype=torch.int64)
        y1 = mod.lookback_scan(x, workspace=ws, **cfg)
        status, counter = mod._split(ws[:mod.workspace_words(n, cfg)], n, cfg)
        flags, bad = prefix_check(status, ref, tile, dt, x)
        y2 = mod.lookback_scan(x, workspace=ws, **cfg)
        res["workspace"] = {"counter": int(counter[0]), "flags": flags, "n_bad_prefix": bad,
                            "words": mod.workspace_words(n, cfg),
                            "reuse_equal": bool(torch.equal(y1, out) and torch.equal(y2, out))}
        if dt == "fp32":
            xc = x.clone()
            res["inplace_equal"] = bool(torch.equal(mod.lookback_scan(xc, out=xc, **cfg), out))
        # the look-back over hand-published words: tiles 0 .. k-1 published (PREFIX_AVAILABLE at 0 and at m,
        # AGGREGATE_AVAILABLE elsewhere), the counter at k, `_kernel` launched over tiles k .. tiles-1
        res["seeded"] = None
        plan = seed_plan(tiles, cfg["LOOKBACK"])
        if plan is not None:
            k, m, _ = plan
            wide = x.long() if dt == "int32" else x.double()
            incl = torch.cumsum(wide, 0)
            words = torch.zeros(mod.workspace_words(n, cfg), dtype=torch.int64)
            st, ctr = mod._split(words, n, cfg)
            n_agg = 0
            for t in range(k):
                lo, hi = t * tile, min((t + 1) * tile, n)
                if t in (0, m):
                    v = incl[hi - 1].item()
                    st[t] = pack_word(v if dt == "int32" else float(torch.tensor(v).float()), 2, dt)
                else:
                    v = wide[lo:hi].sum().item()
                    st[t] = pack_word(v if dt == "int32" else float(torch.tensor(v).float()), 1, dt)
                    n_agg += 1
            ctr[0] = k
            y = torch.full((n,), fill, dtype=out.dtype)
            mod._kernel[(tiles - k,)](**mod._kernel_args(x, y, st, ctr, cfg), num_warps=cfg["num_warps"],
                                      num_stages=cfg["num_stages"])
            head = y[:k * tile]
            flags_after, bad = prefix_check(st, ref, tile, dt, x, first=k)
            res["seeded"] = {"k": k, "m": m, "n_agg": n_agg, "n_loose": n_loose(y, x, ref, lo=k * tile),
                             "head_untouched": bool((head == INT_SENTINEL).all()) if dt == "int32"
                             else bool(head.isnan().all()), "flags": flags_after, "counter": int(ctr[0]),
                             "n_bad_prefix": bad}
        return res

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, baseline=True, extra=extra)


if __name__ == "__main__":
    _run()
