"""examples/parquet_dict_decode.py (the dictionary-page decode of a Parquet reader: a stream of bit-packed
dictionary indices -- bit width 1-24, value k's bits at bit k x bw, little-endian int32 words, `first`
values skipped -- unpacked and gathered from the page's int32 / int64 / fp32 / fp64 dictionary; a program
walks STEPS steps of BLOCK values, each value's field cut from its two words) against its torch reference on
the CPU through Triton's interpreter, its launcher hooks against the shapes, its study sweep against the
points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round31_b.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round32_b.py parquet_dict_decode``) that prints one JSON line. The subprocess
installs the harness's interpreter fixes.

Shapes are small, odd and ragged: every dtype, EVICT 0 and 1; bit widths 1 (a constant after Triton's
specialization), 3, 5-12, 16 (specialized :16), 19, 20, 24; `first` 0 and mid-group (3, 5, 6, 7, 13); N from
1 to 5000, ragged against BLOCK x STEPS, whole steps past N, a block wider than the column; a stream cut to
exactly the words its fields need (the last field ending at a word's end: its high word masked), a
dictionary of one entry, indices past a trimmed dictionary (0 out); BLOCK 32-2048, STEPS 1-8, 4 / 8 warps,
num_stages 1 / 2.

Per case: launch's output equal to the reference (exact: a gather), and equal, bit for bit in its own dtype,
to the dictionary gathered at the indices make_inputs drew (independent of the reference's unpacking); the
output fresh, contiguous, in the point's dtype and shape; the inputs unchanged; torch_baseline equal too.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "parquet_dict_decode"
ROLE = "held-out-32"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TOL = dict(H.TOL, int32=1e-7, int64=1e-7, fp64=1e-7)   # the harness compares in fp32 (exactness: equal_to_draw)
MAX_INDEX_ELEMS = 30_000_000                             # the stream's words example_args carries

# the study's sweep (scripts/rank_study.py SWEEPS["parquet_dict_decode"] once the lead adds it)
SWEEP_AXES = {"BLOCK": [512, 1024, 2048], "STEPS": [1, 2, 4, 8], "EVICT": [0, 1], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(block, steps=1, evict=1, w=4, st=1):
    return {"BLOCK": block, "STEPS": steps, "EVICT": evict, "num_warps": w, "num_stages": st}


def _pt(N, bw, D, first=0, dtype="int32"):
    return {"N": N, "bw": bw, "D": D, "first": first, "dtype": dtype}


# case -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # the l_shipdate point scaled down: int32, bw 12; 3001 values in 3 programs of 2 x 512 (the last ragged)
        "shipdate_int32_bw12": (_pt(3001, 12, 97), _cfg(512, 2, 1, 4)),
        # the ss_item_sk point scaled down: int64, bw 19, 5 values skipped (mid-group); 3 programs of 1024 on
        # 8 warps, EVICT 0
        "item_sk_int64_bw19": (_pt(2500, 19, 3000, 5, "int64"), _cfg(1024, 1, 0, 8)),
        # the l_extendedprice point scaled down: fp64, bw 20; 3 programs of 2048 on 8 warps
        "price_fp64_bw20": (_pt(5000, 20, 4000, 0, "fp64"), _cfg(2048, 1, 1, 8)),
        # fp32, bw 7, first 13; 2 programs of 8 x 512: the second holds 3 values, 7 whole steps past N
        "fp32_bw7_steps8": (_pt(4099, 7, 100, 13, "fp32"), _cfg(512, 8, 0, 4)),
        # bw 1 (a specialized constant: the mask 1), first 3; blocks of 32 x 4 steps
        "bw1_flags": (_pt(77, 1, 2, 3), _cfg(32, 4, 1, 4)),
        # the widest field, bw 24 (a field over two words at most shifts), first 7, int64; num_stages 2
        "bw24_int64": (_pt(1000, 24, 20000, 7, "int64"), _cfg(64, 2, 0, 4, 2)),
        # bw 16 (specialized :16: every field inside one word, never straddling), fp32, 8 warps x 4 steps
        "bw16_fp32": (_pt(640, 16, 40000, 0, "fp32"), _cfg(128, 4, 1, 8)),
        # one value, first 6 (in the first group's last byte pair), a block of 1024 x 4 over it
        "one_value_fp64": (_pt(1, 9, 300, 6, "fp64"), _cfg(1024, 4, 0, 4)),
        # the stream cut to the words its fields need ((3 + 93) x 11 bits = 33 words exactly): the last field
        # ends at the last word's end, its high word past the stream (masked); a block of 2048 over 93
        "tight_stream_bw11": (_pt(93, 11, 1500, 3, "int32"), _cfg(2048, 2, 1, 4)),
        # indices drawn over 1000 entries, the dictionary trimmed to 600: the rest decode to 0
        "past_dictionary_bw10": (_pt(1500, 10, 1000, 0, "int32"), _cfg(256, 2, 0, 8)),
        # a dictionary of one entry (every index 0) at bw 3, int64, 8 warps x 8 steps
        "single_entry_bw3": (_pt(200, 3, 1, 0, "int64"), _cfg(1024, 8, 1, 8)),
        # bw 5, first 5 (fields straddling bytes and words), fp64, the sweep's 512 x 4 on 8 warps
        "bw5_fp64": (_pt(2999, 5, 31, 5, "fp64"), _cfg(512, 4, 0, 8)),
    },
}
TIGHT, PAST = "tight_stream_bw11", "past_dictionary_bw10"
PAST_D = 600

# configs compiled on sm_90: at each point BASELINE, the most values a thread (2048 on 4 warps: 16) and the
# fewest (512 on 8 warps: 2)
COMPILE_CFGS = {0: [_cfg(1024, 2, 1, 4), _cfg(2048, 8, 0, 4), _cfg(512, 1, 1, 8)],
                1: [_cfg(2048, 4, 1, 4), _cfg(512, 8, 0, 8)],
                2: [_cfg(2048, 1, 0, 4), _cfg(1024, 4, 1, 8)]}
SM120_CFGS = [_cfg(1024, 2, 1, 4), _cfg(2048, 8, 0, 4), _cfg(512, 1, 1, 8)]


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory: none is needed (no reduction, no layout conversion: the
    loads, the unpack, the gather and the store share one blocked layout) -- the driver's reserve."""
    return 1024


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """The stream / dictionary variants (module doc), then copies of the inputs."""
    import torch

    if name == TIGHT:
        need = -(-(point["first"] + point["N"]) * point["bw"] // 32)
        inputs["words"] = inputs["words"][:need].clone()
    if name == PAST:
        inputs["dictionary"] = inputs["dictionary"][:PAST_D].clone()
    for k in ("words", "dictionary"):
        inputs[k + "0"] = inputs[k].clone()
    assert isinstance(inputs["words"], torch.Tensor)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, cfg = CASES[KERNEL][name]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [p["N"]] and res["dtype"] == p["dtype"] and res["contiguous"] is True, res
    assert res["equal_to_draw"] is True, res            # bit for bit: the dictionary at the drawn indices
    assert res["inputs_unchanged"] is True, res
    assert res["baseline_equal"] is True, res
    if name == TIGHT:
        assert res["n_words"] == 33 and res["last_field_ends_word"] is True, res
    if name == PAST:
        assert res["n_past"] > 300 and res["zeros_past"] is True, res
    else:
        assert res["n_past"] == 0, res
    if p["D"] > 1 and p["N"] > 1:
        assert res["n_distinct"] > 1, res               # the output is no constant


def test_cases_cover_every_code_path():
    """EVICT 0 / 1 at every dtype, bit widths 1 (constant), 16 (:16) and 3-24 straddling words, first 0 and
    mid-group, whole steps past N and a block wider than N, a tight stream, indices past D; every sweep
    value of every tunable, BLOCK 32-256, num_stages 2."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {(p["dtype"], c["EVICT"]) for p, c in cases.values()} == set(itertools.product(mod.DTYPES, (0, 1)))
    bws = {p["bw"] for p, _ in cases.values()}
    assert {1, 16, 24} <= bws and len(bws - {1, 16, 24}) >= 6
    assert any(p["first"] % 8 for p, _ in cases.values()) and any(p["first"] == 0 for p, _ in cases.values())
    # a program whose last step(s) lie wholly past N, a block wider than the column
    assert any(-(-p["N"] // (c["BLOCK"] * c["STEPS"])) * c["BLOCK"] * c["STEPS"] - p["N"] >= c["BLOCK"]
               for p, c in cases.values())
    assert any(p["N"] < c["BLOCK"] for p, c in cases.values())
    assert any(p["N"] % c["BLOCK"] and p["N"] > c["BLOCK"] * c["STEPS"] for p, c in cases.values())
    assert any(p["D"] == 1 for p, _ in cases.values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k
    assert {32, 64, 128, 256} <= {c["BLOCK"] for _, c in cases.values()}
    assert 2 in {c["num_stages"] for _, c in cases.values()}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args -- the stream's words with data on the CPU (make_inputs'
    seed-0 draw, at most 30M words), the dictionary and out on meta -- with the launch's shapes, dtypes and
    constants; the grid and the loop length; bytes_moved / flops; 0.22-0.51 GB moved a point."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "parquet_dict_decode", "pack_bits", "unpack_bits"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"int32": torch.int32, "int64": torch.int64, "fp32": torch.float32, "fp64": torch.float64}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        N, bw, D, first = p["N"], p["bw"], p["D"], p["first"]
        nw = -(-(-(-(first + N) // 8) * bw) // 4)
        assert nw <= MAX_INDEX_ELEMS and 2 ** (bw - 1) < D <= 2**bw, p        # the narrowest width for D
        words = mod.make_inputs(p, seed=0, device="cpu")["words"]
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            w, d, o = a["WORDS"], a["DICT"], a["OUT"]
            assert w.device.type == "cpu" and w.dtype == torch.int32 and w.shape == (nw,)
            assert d.device.type == "meta" and o.device.type == "meta"
            assert d.shape == (D,) and o.shape == (N,) and d.dtype == o.dtype == dts[p["dtype"]]
            assert (a["N"], a["first"], a["bw"], a["n_words"], a["D"]) == (N, first, bw, nw, D)
            assert (a["BLOCK"], a["STEPS"], a["EVICT"]) == (cfg["BLOCK"], cfg["STEPS"], cfg["EVICT"])
            assert mod.grid(cfg, p) == -(-N // (cfg["BLOCK"] * cfg["STEPS"]))
            assert mod.loop_iterations(cfg, p) == cfg["STEPS"]
        assert torch.equal(mod.example_args(mod.BASELINE, p)["WORDS"], words)
        e = 4 if p["dtype"] in ("int32", "fp32") else 8
        skipped = first * bw // 32
        assert mod.bytes_moved(p) == 4 * (nw - skipped) + D * e + N * e
        assert 0.2e9 < mod.bytes_moved(p) < 0.55e9
        assert mod.flops(p) == 10 * N
    # the points differ: dtype, width, dictionary size (L1 / L2), first
    P = mod.POINTS
    assert [p["dtype"] for p in P] == ["int32", "int64", "fp64"]
    assert [(p["N"], p["bw"], p["D"]) for p in P] == [(40_000_000, 12, 2_526), (48_000_000, 19, 300_000),
                                                     (36_000_000, 20, 1_000_000)]
    assert {p["first"] for p in P} == {0, 5}


def test_hooks_on_small_points_and_inputs():
    """pack_bits against the Parquet spec's example and by hand; unpack_bits its inverse at every width and
    offset; make_inputs' seed and spread; reference by hand (0 past D); grid / loop; bytes / flops;
    torch_baseline's dtype; the wrapper's empty column."""
    import numpy as np
    import torch

    mod = load_example(KERNEL)
    # the spec's BIT_PACKED example (hybrid bit-packed run): 0..7 at width 3 -> 10001000 11000110 11111010
    w = mod.pack_bits(list(range(8)), 3)
    assert w.dtype == torch.int32 and w.shape == (1,)
    assert bytes(w.numpy().view(np.uint8))[:3] == bytes([0b10001000, 0b11000110, 0b11111010])
    assert int(w[0]) == 0xFAC688
    # by hand: width 20, values 0xABCDE, 0x12345 -> bits 0-19 and 20-39 (the second straddles the words)
    w = mod.pack_bits([0xABCDE, 0x12345], 20)
    assert w.shape == (5,)                                 # one group of 8 values: 20 bytes
    assert int(w[0]) & 0xFFFFFFFF == 0xABCDE | ((0x12345 & 0xFFF) << 20) and int(w[1]) == 0x12345 >> 12
    assert w[2:].tolist() == [0, 0, 0]
    # width 8 is bytes in order
    assert bytes(mod.pack_bits([1, 2, 3, 250], 8).numpy().view(np.uint8))[:4] == bytes([1, 2, 3, 250])
    rng = np.random.default_rng(3)
    for bw in (1, 2, 5, 7, 8, 11, 13, 16, 17, 20, 23, 24):
        v = rng.integers(0, 2**bw, size=203)
        words = mod.pack_bits(v, bw)
        assert words.shape == (mod.n_words(203, bw),) == (-(-26 * bw // 4),)
        for first in (0, 1, 9):
            got = mod.unpack_bits(words, bw, first, 203 - first)
            assert got.tolist() == v[first:].tolist(), (bw, first)
    with pytest.raises(ValueError, match="bw=4"):
        mod.pack_bits([16], 4)
    # make_inputs: seeded, the dictionary's dtype and distinct values, the indices spread over D
    p = _pt(1000, 9, 400, 3, "int64")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["words"].dtype == torch.int32 and inp["words"].shape == (mod.n_words(1003, 9),)
    assert inp["dictionary"].dtype == torch.int64 and inp["dictionary"].unique().numel() == 400
    assert (inp["bw"], inp["n"], inp["first"]) == (9, 1000, 3)
    idx = mod.unpack_bits(inp["words"], 9, 0, 1003)
    assert int(idx.max()) < 400 and idx.unique().numel() > 350
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["words"], inp["words"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["words"], inp["words"])
    assert mod.make_inputs(_pt(10, 4, 16, 0, "fp32"), device="cpu")["dictionary"].dtype == torch.float32
    # reference by hand: fields 2, 0, 3, 1 at width 2 of a 3-entry dictionary; the 3 past D -> 0
    d = torch.tensor([10.5, -2.0, 7.25], dtype=torch.float64)
    ref = mod.reference({"words": mod.pack_bits([2, 0, 3, 1], 2), "dictionary": d, "bw": 2, "first": 0, "n": 4})
    assert ref.tolist() == [7.25, 10.5, 0.0, -2.0]
    ref = mod.reference({"words": mod.pack_bits([2, 0, 3, 1], 2), "dictionary": d, "bw": 2, "first": 1, "n": 2})
    assert ref.tolist() == [10.5, 0.0]
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.int64 and base.shape == (1000,)
    assert torch.equal(base.double(), mod.reference(inp))
    # grid / loop, bytes / flops
    c = _cfg(256, 2)
    assert mod.grid(c, p) == 2 and mod.grid(c, _pt(513, 9, 400)) == 2 and mod.grid(c, _pt(512, 9, 400)) == 1
    assert mod.loop_iterations(c, p) == 2
    assert mod.bytes_moved(p) == 4 * (mod.n_words(1003, 9) - 0) + 400 * 8 + 1000 * 8
    assert mod.bytes_moved(_pt(64, 8, 256, 0, "fp32")) == 4 * 16 + 256 * 4 + 64 * 4
    assert mod.flops(p) == 10_000
    # nothing to decode: an empty column, nothing launched
    e = mod.parquet_dict_decode(inp["words"], inp["dictionary"], 9, 0)
    assert e.shape == (0,) and e.dtype == torch.int64


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inp = mod.make_inputs(_pt(100, 7, 90), device="cpu")
    w, d = inp["words"], inp["dictionary"]
    with pytest.raises(ValueError, match="BLOCK=100"):
        mod.parquet_dict_decode(w, d, 7, 100, BLOCK=100)
    with pytest.raises(ValueError, match="BLOCK=16"):
        mod.parquet_dict_decode(w, d, 7, 100, BLOCK=16)
    with pytest.raises(ValueError, match="STEPS=0"):
        mod.parquet_dict_decode(w, d, 7, 100, STEPS=0)
    with pytest.raises(ValueError, match="EVICT=2"):
        mod.parquet_dict_decode(w, d, 7, 100, EVICT=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.parquet_dict_decode(w, d, 7, 100, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.parquet_dict_decode(w, d, 7, 100, num_stages=0)
    with pytest.raises(ValueError, match="bw=25"):
        mod.parquet_dict_decode(w, d, 25, 10)
    with pytest.raises(ValueError, match="bw=0"):
        mod.parquet_dict_decode(w, d, 0, 10)
    with pytest.raises(ValueError, match="first=-1"):
        mod.parquet_dict_decode(w, d, 7, 10, -1)
    with pytest.raises(ValueError, match="need 24"):
        mod.parquet_dict_decode(w, d, 7, 106)
    with pytest.raises(ValueError, match="words must be a contiguous 1-d int32"):
        mod.parquet_dict_decode(w.long(), d, 7, 100)
    with pytest.raises(ValueError, match="words must be a contiguous 1-d int32"):
        mod.parquet_dict_decode(torch.zeros(60, dtype=torch.int32)[::2], d, 7, 100)
    with pytest.raises(ValueError, match="dictionary must be a 1-d"):
        mod.parquet_dict_decode(w, d.view(9, 10), 7, 100)
    with pytest.raises(ValueError, match="dictionary must be a 1-d"):
        mod.parquet_dict_decode(w, d.to(torch.int16), 7, 100)
    with pytest.raises(ValueError, match="dictionary must be contiguous"):
        mod.parquet_dict_decode(w, torch.zeros(20, dtype=torch.int32)[::2], 7, 100)
    with pytest.raises(ValueError, match="words' device"):
        mod.parquet_dict_decode(w, d.to("meta"), 7, 100)
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(_pt(10, 4, 16, 0, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="D=17"):
        mod.bytes_moved(_pt(10, 4, 17))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(0, 4, 16))
    with pytest.raises(ValueError, match="bw=30"):
        mod.flops(_pt(10, 30, 16))
    with pytest.raises(ValueError, match="first=2.5"):
        mod.example_args(mod.BASELINE, dict(_pt(10, 4, 16), first=2.5))
    with pytest.raises(ValueError, match="STEPS=3.5"):
        mod.loop_iterations(dict(mod.BASELINE, STEPS=3.5), mod.POINTS[0])
    with pytest.raises(ValueError, match="BLOCK='abc'"):
        mod.grid(dict(mod.BASELINE, BLOCK="abc"), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK 512 / 1024 / 2048, STEPS 1 / 2 / 4 / 8, EVICT 0 / 1, 4 / 8 warps,
    num_stages 1) with BASELINE among them; at every point each config is valid, launches >= 4 waves of
    programs on an H100 (2198 at the fewest: 16384 values a program at the 36M-row l_extendedprice point)
    and needs no shared memory beyond the driver's reserve. (Every config was compiled for sm_90 at every
    point with triton 3.6.0 and 3.9.0: all compile, none spills; registers 16-72
    under both -- 16-70 under 3.6 and 16-56 under 3.9 at the l_shipdate point, 16-72 under both at the other
    two (64-bit dictionary values) --, the most for 2048 values on 4 warps (16 values a thread) over 2-4 steps,
    the fewest for 512 on 8 warps in one step (2 a thread); shared memory 0 for every config under both: the
    loads, the unpack, the gather and the store share one blocked layout.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p) for p in mod.POINTS for c in cfgs)
    assert fewest == 2198
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= 4 * H100_SMS, (p, c)
            assert _smem_bound(c) <= SM90_SMEM_PER_BLOCK, (p, c)
            assert mod.loop_iterations(c, p) == c["STEPS"]


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
    """On sm_90 at each point: BASELINE, the most values a thread (2048 on 4 warps: 16 gathers in flight) and
    the fewest (512 on 8 warps) compile without spills and without shared memory beyond the bound."""
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
            assert 0 <= res.shared <= _smem_bound(cfg), (pi, cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, 2048 x 8 steps on 4 warps and 512 on 8 warps compile at the
    first point (l_shipdate, int32, bw 12) without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (exact) and against the dictionary gathered at the
    indices make_inputs drew (bit for bit, in the dictionary's dtype); torch_baseline against reference;
    the inputs unchanged; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.int32: "int32", torch.int64: "int64", torch.float32: "fp32", torch.float64: "fp64"}

    def extra(name, point, inputs, out, ref):
        P = mod._check_point(point)
        drawn = mod._data(mod._items(P), len(name))["idx"][P["first"]:]       # run_cases' seed: len(name)
        d = inputs["dictionary"]
        past = drawn >= d.shape[0]
        want = torch.where(past, torch.zeros((), dtype=d.dtype), d[drawn.clamp(max=d.shape[0] - 1)])
        bits = (P["first"] + P["N"]) * P["bw"]
        return {"dtype": names.get(out.dtype), "contiguous": out.is_contiguous(),
                "equal_to_draw": bool(out.dtype == d.dtype and torch.equal(out, want)),
                "inputs_unchanged": bool(torch.equal(inputs["words"], inputs["words0"])
                                         and torch.equal(d, inputs["dictionary0"])),
                "baseline_equal": bool(torch.equal(mod.torch_baseline(inputs).double(), ref)),
                "n_words": int(inputs["words"].shape[0]), "last_field_ends_word": bits % 32 == 0,
                "n_past": int(past.sum()), "zeros_past": bool((out[past] == 0).all()),
                "n_distinct": int(out.unique().numel())}

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=TOL, prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
