"""examples/jagged_to_padded.py (FBGEMM's jagged_to_padded_dense: jagged values [total_L, D] with offsets
[B + 1] -> a padded [B, max_L, D], sequence b's first min(len_b, max_L) rows copied, the rest the padding
value; a 2-d grid of (row-block group, sequence) programs, each walking L_ITERS blocks of BLOCK_L rows in
column chunks of BLOCK_D, fill-only blocks issuing no load) against its torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round31_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round32_d.py jagged_to_padded``) that prints one JSON line; the subprocess
installs the harness's interpreter fixes (bf16 rounding of the padding value; the loop bounds).

Shapes are small, odd and ragged: B 1-12 sequences (B 1: a one-row grid), max_L 6-40 (a last row block past
max_L, a whole block group past it: BLOCK_L 32 > max_L 6), D 1 (a constexpr), 16, 24, 32, 40, 64, 130 against
column chunks of 1-128 (one chunk with and without a column mask, two chunks with and without one, a 130-wide
row in 128 + 2); lengths from the module's draw (empty, partial, exactly a block, truncated sequences) and a
case where every sequence is empty; fp32 / fp16 / bf16 with pads 0, -1.5, 3.25, 1e5 (rounded to the dtype);
int32 and int64 offsets; a case whose values are a column slice of a NaN-padded buffer behind 3 junk rows
(offsets[0] = 3), its offsets a stride-2 view (a stray read shows as NaN); every sweep value of every tunable.

Per case: launch's output against the module's reference (the harness's check) and bit for bit; shape,
dtype, contiguity; the padding positions equal to the padding value rounded to the dtype, the copied rows
equal to the values' rows (an independent computation here); the inputs unchanged (their whole buffers);
the flags the launch used; the mix of blocks (copy / fill / partial) the case exercises; torch_baseline
bit for bit.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "jagged_to_padded"
ROLE = "held-out-32"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["jagged_to_padded"] once the lead adds it)
SWEEP_AXES = {"BLOCK_L": [4, 8, 16, 32], "D_SPLIT": [1, 2], "L_ITERS": [1, 4], "num_warps": [2, 4, 8],
              "num_stages": [1]}
FLAG_KEYS = ("EVEN_D", "N_CHUNKS", "BLOCK_L", "BLOCK_D", "L_ITERS", "max_L", "D", "pad")
ESIZE = {"fp32": 4, "fp16": 2, "bf16": 2}


def _cfg(bl, ds, li=1, w=4, st=1):
    return {"BLOCK_L": bl, "D_SPLIT": ds, "L_ITERS": li, "num_warps": w, "num_stages": st}


def _pt(B, max_L, D, dtype="fp32", off="int64", pad=0.0):
    return {"B": B, "max_L": max_L, "D": D, "dtype": dtype, "offsets": off, "pad": pad}


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def _pow2(v: int) -> int:
    return 1 << max(0, (v - 1).bit_length())


# case -> (point, cfg); comments: (EVEN_D, N_CHUNKS), BLOCK_D, grid
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # (1, 1): BASELINE; D 32 in one chunk, max_L 19 in blocks of 8 (the last block 3 rows past max_L)
        "baseline_fp32": (_pt(7, 19, 32, "fp32", "int64", 0.0), _cfg(8, 1, 1, 4)),
        # (0, 2): D 24 in two 16-column chunks (the second 8 wide), bf16 padded with -1.5, int32 offsets,
        # 4-row blocks 4 a program on 2 warps
        "split_ragged_d_bf16": (_pt(9, 13, 24, "bf16", "int32", -1.5), _cfg(4, 2, 4, 2)),
        # (1, 1): max_L 6 under a 32-row block (26 rows past max_L): many truncated sequences, fp16, 8 warps
        "truncated_fp16": (_pt(12, 6, 16, "fp16", "int64", 3.25), _cfg(32, 1, 1, 8)),
        # (0, 2): the NaN-padded views (module doc); D 40 in two 32-column chunks, fp16, num_stages 2
        # (nothing to pipeline), 8 warps
        "strided_nan_fp16": (_pt(10, 11, 40, "fp16", "int64", -1.0), _cfg(8, 2, 1, 8, 2)),
        # (1, 1): D 1 (a constexpr), 16-row blocks 4 a program, a pad of 1e5 (65536 + ... in fp32)
        "d1_fp32": (_pt(6, 9, 1, "fp32", "int32", 1e5), _cfg(16, 1, 4, 2)),
        # (0, 2): D 130 in 128 + 2, bf16 (the pad 1e5 rounds to 99840 in bf16)
        "wide_rows_bf16": (_pt(5, 10, 130, "bf16", "int64", 1e5), _cfg(4, 2, 1, 8)),
        # (1, 1): every sequence empty (the offsets all equal: the whole output padding), int32
        "all_empty_fp32": (_pt(4, 8, 16, "fp32", "int32", -2.0), _cfg(8, 1, 4, 4)),
        # (1, 2): one sequence (B 1), max_L 40 in 16-row blocks 4 a program (64 rows: 24 past max_L);
        # D 64 in two 32-column chunks, bf16
        "one_seq_bf16": (_pt(1, 40, 64, "bf16", "int64", 0.0), _cfg(16, 2, 4, 2, 2)),
    },
}
STRIDED, EMPTY, ONE = "strided_nan_fp16", "all_empty_fp32", "one_seq_bf16"
PAD_V, JUNK = 3, 3

# configs compiled on sm_90 at each point: BASELINE, the largest tile on the fewest warps (the most
# registers), and a small-tile 8-warp corner
COMPILE_CFGS = {0: [_cfg(8, 1, 1, 4), _cfg(32, 1, 1, 2), _cfg(4, 2, 4, 8)],
                1: [_cfg(32, 1, 4, 2), _cfg(4, 1, 1, 8)],
                2: [_cfg(32, 1, 1, 2), _cfg(16, 2, 4, 4)]}
SM120_CFGS = [_cfg(8, 1, 1, 4), _cfg(32, 1, 1, 2), _cfg(4, 2, 4, 8)]


def _plan(p, c):
    """(BLOCK_D, chunks, EVEN_D) of a case."""
    bd = _pow2(-(-p["D"] // c["D_SPLIT"]))
    return bd, -(-p["D"] // bd), int(p["D"] % bd == 0)


def _root(t):
    """The whole buffer under a view, 1-d."""
    return t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The strided / all-empty / one-long-sequence variants (module doc), then copies of the inputs."""
    import torch

    v, off = inputs["values"], inputs["offsets"]
    T, D = v.shape
    if name == STRIDED:
        buf = torch.full((T + JUNK, D + PAD_V), float("nan"), dtype=v.dtype)
        buf[JUNK:, 1:1 + D] = v
        inputs["values"] = buf[:, 1:1 + D]
        ob = torch.full((off.shape[0], 2), -7, dtype=off.dtype)
        ob[:, 0] = off + JUNK
        inputs["offsets"] = ob[:, 0]
    if name == EMPTY:
        inputs["offsets"] = torch.full_like(off, 5)
    if name == ONE:                                    # one sequence of 29 rows (two blocks, the second partial)
        inputs["offsets"] = torch.tensor([0, 29], dtype=off.dtype)
        inputs["values"] = torch.randn(31, D, generator=torch.Generator().manual_seed(1)).to(v.dtype)
    for k in ("values", "offsets"):
        inputs[k + "_root0"] = _root(inputs[k]).clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    B, L, D = p["B"], p["max_L"], p["D"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [B, L, D] and res["dtype"] == p["dtype"] and res["contiguous"] is True, res
    assert res["n_diff"] == 0 and res["n_indep_diff"] == 0, res           # a copy: bit for bit
    assert res["pad_ok"] is True and res["inputs_unchanged"] is True, res
    assert res["baseline_diff"] == 0, res
    bd, n, even = _plan(p, cfg)
    fl = res["flags"]
    assert (fl["EVEN_D"], fl["N_CHUNKS"], fl["BLOCK_D"]) == (even, n, bd), fl
    assert (fl["BLOCK_L"], fl["L_ITERS"], fl["max_L"], fl["D"]) == (cfg["BLOCK_L"], cfg["L_ITERS"], L, D), fl
    assert fl["pad"] == p["pad"], fl
    assert res["grid"] == [-(-L // (cfg["BLOCK_L"] * cfg["L_ITERS"])), B], res
    blk = res["blocks"]
    if name == EMPTY:
        assert blk["copy"] == 0 and blk["rows_copied"] == 0 and res["pad_count"] == B * L * D, res
    else:
        assert blk["copy"] >= 1 and blk["rows_copied"] >= 1, res
    if name == STRIDED:
        assert res["strides"] == {"values": [D + PAD_V, 1], "offsets": [2]} and res["first_offset"] == JUNK, res
    else:
        assert res["strides"] == {"values": [D, 1], "offsets": [1]}, res
    if name == ONE:
        assert blk == {"copy": 2, "fill": 1, "partial": 1, "truncated": 0, "empty": 0, "rows_copied": 29}, blk


def test_cases_cover_every_code_path():
    """EVEN_D both ways with one and two chunks; copy, fill-only and partial blocks; truncated and empty
    sequences; a last row block past max_L and a whole block group past it; every dtype, offsets dtype;
    the strided view; pads that round; every sweep value of every tunable."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    res = _results()
    cases = CASES[KERNEL]
    fl = {n: r["flags"] for n, r in res.items()}
    assert {(f["EVEN_D"], f["N_CHUNKS"]) for f in fl.values()} == {(1, 1), (0, 2), (1, 2)}
    blk = [r["blocks"] for r in res.values()]
    assert sum(b["copy"] for b in blk) >= 20 and sum(b["fill"] for b in blk) >= 20
    assert sum(b["partial"] for b in blk) >= 5 and sum(b["truncated"] for b in blk) >= 3
    assert sum(b["empty"] for b in blk) >= 2
    assert any(p["max_L"] % c["BLOCK_L"] for p, c in cases.values())                       # a ragged last block
    assert any(p["max_L"] <= c["BLOCK_L"] * (c["L_ITERS"] - 1) or p["max_L"] < c["BLOCK_L"]
               for p, c in cases.values())                                                  # a block past max_L
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p["offsets"] for p, _ in cases.values()} == set(mod.OFFSET_DTYPES)
    assert any(p["B"] == 1 for p, _ in cases.values()) and any(p["D"] == 1 for p, _ in cases.values())
    assert any(r["pad_rounded"] for r in res.values())                                    # 1e5 in bf16
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args (the offsets with data on the CPU -- make_inputs' seed-0
    draw --, the rest on meta) with the launch's shapes, dtypes, strides and flags; the grid; the loop length;
    bytes_moved (the output once, the copied rows once, the offsets) and flops 0; 0.3-1.3 GB a point
    (0.1-0.45 ms at an H100's ~3 TB/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "jagged_to_padded_dense", "draw_lengths", "block_d", "copied_rows"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    its = {"int32": torch.int32, "int64": torch.int64}
    for p in mod.POINTS:
        B, L, D = p["B"], p["max_L"], p["D"]
        lens = mod.draw_lengths(B, L, torch.Generator().manual_seed(0))
        off0 = torch.cat((torch.zeros(1, dtype=torch.int64), lens.cumsum(0)))
        off = None
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in a.items()
                       if k != "OFFSETS")
            if off is None:
                off = a["OFFSETS"]
                assert off.device.type == "cpu" and off.dtype == its[p["offsets"]] and off.shape == (B + 1,)
                assert torch.equal(off.long(), off0)                                   # make_inputs' seed 0
            assert a["OFFSETS"] is off                                                 # cached per point
            assert a["VALUES"].shape == (int(off0[-1]), D) and a["VALUES"].dtype == dts[p["dtype"]]
            assert a["OUT"].shape == (B, L, D) and a["OUT"].dtype == dts[p["dtype"]]
            assert (a["stride_v"], a["stride_off"], a["stride_ob"], a["stride_ol"]) == (D, 1, L * D, D)
            assert (a["max_L"], a["D"], a["pad"]) == (L, D, p["pad"])
            bd, n, even = _plan(p, cfg)
            assert (a["BLOCK_D"], a["N_CHUNKS"], a["EVEN_D"]) == (bd, n, 1) and bd == D // cfg["D_SPLIT"]
            assert (a["BLOCK_L"], a["L_ITERS"]) == (cfg["BLOCK_L"], cfg["L_ITERS"])
            assert mod.grid(cfg, p) == (L // (cfg["BLOCK_L"] * cfg["L_ITERS"]), B)
            assert mod.loop_iterations(cfg, p) == cfg["L_ITERS"] * n
        e = ESIZE[p["dtype"]]
        rows = int(lens.clamp(max=L).sum())
        assert mod.copied_rows(p) == rows
        ib = 4 if p["offsets"] == "int32" else 8
        assert mod.bytes_moved(p) == B * L * D * e + rows * D * e + (B + 1) * ib
        assert mod.flops(p) == 0
        assert 0.3e9 <= mod.bytes_moved(p) <= 1.3e9, p
        assert 50e-6 <= mod.bytes_moved(p) / 3.0e12 <= 20e-3
        assert 0.1 < rows / (B * L) < 0.25                    # the output mostly padding at long-tailed lengths
        assert B + 1 <= 30_000_000
    P = mod.POINTS
    assert {p["dtype"] for p in P} == set(mod.DTYPES) and {p["offsets"] for p in P} == set(mod.OFFSET_DTYPES)
    assert sorted(p["D"] for p in P) == [64, 128, 256] and sorted(p["max_L"] for p in P) == [256, 512, 4096]
    assert {p["pad"] for p in P} == {0.0, -1.0}


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed; draw_lengths' distribution (log-uniform to 1.25 max_L, 5 %
    empty); reference by hand on a tiny case; torch_baseline; the chunk plan; grid / loop; bytes / flops;
    nothing launched for B 0 or max_L 0."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(9, 13, 24, "bf16", "int32", -1.5)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    v, off = inp["values"], inp["offsets"]
    assert off.shape == (10,) and off.dtype == torch.int32 and int(off[0]) == 0
    assert bool((off[1:] >= off[:-1]).all()) and v.shape == (int(off[-1]), 24) and v.dtype == torch.bfloat16
    assert (inp["max_L"], inp["pad"]) == (13, -1.5)
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["offsets"], off) and torch.equal(again["values"], v)
    other = mod.make_inputs(p, seed=2, device="cpu")
    assert not torch.equal(other["offsets"], off)
    assert 0.9 < float(v.float().std()) < 1.1
    # lengths: log-uniform in [1, 1.25 max_L] (so P(len > max_L) = ln 1.25 / ln(1.25 max_L + 1)), 5 % empty
    lens = mod.draw_lengths(200_000, 1024, torch.Generator().manual_seed(3))
    assert int(lens.min()) == 0 and int(lens.max()) == 1280
    assert 0.045 < float((lens == 0).float().mean()) < 0.055
    over = math.log(1.25) / math.log(1281.0)
    assert abs(float((lens > 1024).float().mean()) - 0.95 * over) < 0.004
    pos = lens[lens > 0].double().log()
    assert abs(float(pos.mean()) - math.log(1281.0) / 2) < 0.15                   # uniform in log (floored)
    assert float(pos.mean()) < math.log(1281.0) / 2                               # the floor lowers it
    # reference by hand: lengths [2, 0, 4] at max_L 3, D 2, pad 7
    vals = torch.arange(12.0).reshape(6, 2)
    hand = {"values": vals, "offsets": torch.tensor([0, 2, 2, 6]), "max_L": 3, "pad": 7.0}
    want = torch.tensor([[[0, 1], [2, 3], [7, 7]], [[7, 7]] * 3, [[4, 5], [6, 7], [8, 9]]], dtype=torch.float32)
    assert torch.equal(mod.reference(hand), want)
    assert torch.equal(mod.torch_baseline(hand), want)
    # the reference rounds the pad to the dtype: 1e5 in bf16 is 99840
    hb = dict(hand, values=vals.bfloat16(), pad=1e5)
    assert float(mod.reference(hb)[1, 0, 0]) == 99840.0 and float(mod.torch_baseline(hb)[1, 0, 0]) == 99840.0
    # torch_baseline on the drawn inputs
    assert torch.equal(mod.torch_baseline(inp).float(), mod.reference(inp))
    # the chunk plan
    assert [mod.block_d(D, 2) for D in (1, 3, 24, 64, 130, 256)] == [1, 2, 16, 32, 128, 128]
    assert [mod._plan(D, _cfg(4, 2)) for D in (1, 24, 40, 130)] == [(1, 1), (16, 2), (32, 2), (128, 2)]
    q = _pt(100, 37, 40)
    assert mod.grid(_cfg(8, 1, 1), q) == (5, 100) and mod.grid(_cfg(4, 2, 4), q) == (3, 100)
    assert mod.loop_iterations(_cfg(8, 1, 1), q) == 1 and mod.loop_iterations(_cfg(4, 2, 4), q) == 8
    assert mod.flops(q) == 0
    rows = mod.copied_rows(q)
    assert mod.bytes_moved(q) == 100 * 37 * 40 * 4 + rows * 40 * 4 + 101 * 8 and 0 < rows < 100 * 37
    # nothing to do: no launch (CPU tensors are fine then)
    e = mod.jagged_to_padded_dense(torch.empty(0, 8), torch.zeros(1, dtype=torch.int64), 5)
    assert e.shape == (0, 5, 8)
    e = mod.jagged_to_padded_dense(torch.ones(3, 8).half(), torch.tensor([0, 3]), 0)
    assert e.shape == (1, 0, 8) and e.dtype == torch.float16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    v = torch.zeros(10, 8)
    off = torch.tensor([0, 4, 10])
    f = mod.jagged_to_padded_dense
    with pytest.raises(ValueError, match="BLOCK_L=3"):
        f(v, off, 4, BLOCK_L=3)
    with pytest.raises(ValueError, match="BLOCK_L=512"):
        f(v, off, 4, BLOCK_L=512)
    with pytest.raises(ValueError, match="D_SPLIT=0"):
        f(v, off, 4, D_SPLIT=0)
    with pytest.raises(ValueError, match="L_ITERS=0"):
        f(v, off, 4, L_ITERS=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(v, off, 4, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(v, off, 4, num_stages=0)
    with pytest.raises(ValueError, match="pad=nan"):
        f(v, off, 4, float("nan"))
    with pytest.raises(ValueError, match="pad='x'"):
        f(v, off, 4, "x")
    with pytest.raises(ValueError, match="max_L=-1"):
        f(v, off, -1)
    with pytest.raises(ValueError, match="max_L=2.5"):
        f(v, off, 2.5)
    with pytest.raises(ValueError, match=r"values must be a 2-d fp32 / fp16 / bf16 tensor \[total_L, D\]"):
        f(v[0], off, 4)
    with pytest.raises(ValueError, match="values must be a 2-d"):
        f(v.double(), off, 4)
    with pytest.raises(ValueError, match=r"offsets must be a 1-d int32 / int64 tensor \[B \+ 1\]"):
        f(v, off.float(), 4)
    with pytest.raises(ValueError, match="offsets must be a 1-d"):
        f(v, off[None], 4)
    with pytest.raises(ValueError, match="offsets must be a 1-d"):
        f(v, off[:0], 4)
    with pytest.raises(ValueError, match="offsets must be on values' device"):
        f(v, off.to("meta"), 4)
    with pytest.raises(ValueError, match="unit column stride"):
        f(torch.zeros(8, 10).t(), off, 4)
    with pytest.raises(ValueError, match="B=70000 sequences exceed the grid's 65535"):
        f(v, torch.zeros(70001, dtype=torch.int64), 4)
    with pytest.raises(ValueError, match="at most 16384"):
        f(torch.zeros(10, 1024), off, 4, BLOCK_L=32)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(3, 4, 8, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="offsets 'int16'"):
        mod.bytes_moved(_pt(3, 4, 8, off="int16"))
    with pytest.raises(ValueError, match="pad=inf"):
        mod.flops(_pt(3, 4, 8, pad=float("inf")))
    with pytest.raises(ValueError, match="B=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 8))
    with pytest.raises(ValueError, match="max_L=1.5"):
        mod.loop_iterations(mod.BASELINE, _pt(3, 1.5, 8))
    with pytest.raises(ValueError, match="D=True"):
        mod.example_args(mod.BASELINE, _pt(3, 4, True))
    with pytest.raises(ValueError, match="B=65536 sequences exceed"):
        mod.grid(mod.BASELINE, _pt(65536, 4, 8))
    with pytest.raises(ValueError, match="L_ITERS=1.5"):
        mod.loop_iterations(dict(mod.BASELINE, L_ITERS=1.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="at most 16384"):
        mod.grid(_cfg(128, 1), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_L 4 / 8 / 16 / 32, D_SPLIT 1 / 2, L_ITERS 1 / 4, 2 / 4 / 8 warps,
    num_stages 1: no loop-carried load to pipeline) with BASELINE among them; at every point each config is
    valid (whole chunks: the points' D are powers of two) and launches >= 4 waves of programs on an H200
    (8192 at the fewest: 128 rows a program over the TorchRec point's 256 x 4096 and the third point's
    512 x 2048). No shared memory (a copy: no reduction, no layout conversion). (Every config was compiled
    for sm_90 at every point with triton 3.6.0 and 3.9.0: all compile, none spills; registers 17-167 under
    3.6 and 17-128 under 3.9 -- the most for 32 rows of D 256 bf16 in one chunk on 2 warps at the HSTU point,
    128 elements a thread; 17-69 at the other points --; shared memory 0 under both. With D 512 fp16 at 32
    rows in one chunk on 2 warps (256 elements a thread) triton 3.6 spilled 2 registers at 255 and 3.9 used
    254 -- hence the third point's D 128.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and "num_warps" in axes
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    progs = [math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs]
    assert min(progs) == 8192
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert math.prod(mod.grid(c, p)) >= 4 * H200_SMS, (p, c)
            bd, n = mod._plan(p["D"], c)
            assert p["D"] % bd == 0 and n == c["D_SPLIT"]
            assert c["BLOCK_L"] * bd <= mod.MAX_TILE


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
    corners compile without spills, without shared memory."""
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
            assert res.shared <= 1024, (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the register-heaviest and a small-tile config at the first point
    (HSTU, bf16 D 256) compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(1024, SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance and bit for bit), an independent
    row-by-row check, the inputs' buffers, the block mix, torch_baseline; one JSON line."""
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
        v, off = inputs["values"], inputs["offsets"].long().tolist()
        B, L, D = out.shape
        padv = torch.tensor(float(torch.tensor(point["pad"], dtype=torch.float32)), dtype=torch.float32).to(v.dtype)
        indep = torch.empty_like(out)
        is_pad = torch.ones(B, L, dtype=torch.bool)
        blocks = {"copy": 0, "fill": 0, "partial": 0, "truncated": 0, "empty": 0, "rows_copied": 0}
        BL = cfg["BLOCK_L"]
        for b in range(B):
            ln = off[b + 1] - off[b]
            n = min(ln, L)
            blocks["truncated"] += ln > L
            blocks["empty"] += ln == 0
            blocks["rows_copied"] += n
            for l in range(L):
                if l < n:
                    indep[b, l] = v[off[b] + l]
                    is_pad[b, l] = False
                else:
                    indep[b, l] = padv
            for l0 in range(0, L, BL):
                if l0 < n:
                    blocks["copy"] += 1
                    blocks["partial"] += n < min(l0 + BL, L)
                else:
                    blocks["fill"] += 1
        a = mod._kernel_args(inputs["values"], inputs["offsets"], out, point["pad"], cfg)
        base = mod.torch_baseline(inputs)
        return {"dtype": names.get(out.dtype), "contiguous": out.is_contiguous(),
                "n_diff": int((out.float() != ref).sum()), "n_indep_diff": int((~(out == indep)).sum()),
                "pad_ok": bool((out[is_pad] == padv).all()), "pad_count": int(is_pad.sum()) * D,
                "pad_rounded": float(padv) != float(point["pad"]),
                "inputs_unchanged": same(_root(inputs["values"]), inputs["values_root0"])
                and same(_root(inputs["offsets"]), inputs["offsets_root0"]),
                "baseline_diff": int((base.float() != ref).sum()),
                "flags": {k: a[k] for k in FLAG_KEYS}, "grid": list(mod._grid(B, L, cfg)), "blocks": blocks,
                "first_offset": off[0],
                "strides": {"values": list(inputs["values"].stride()), "offsets": list(inputs["offsets"].stride())}}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
