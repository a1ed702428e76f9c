"""examples/streamk_gemm.py (a Stream-K GEMM: a persistent grid of PROGRAMS_PER_SM x SMs CTAs,
each a contiguous share of the (tile, k-step) work units, split tiles fixed up through a per-CTA
fp32 workspace and flags) against its fp64 torch reference on the CPU through Triton's
interpreter, the work split and its fixup protocol checked in Python (under random
interleavings), its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round14_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round15_a.py streamk_gemm``) that prints one JSON line; the tests assert per
case. A second subprocess (``... prefilled``) runs cases into an ``out=`` buffer filled with NaN
(a strided view of a wider one for one case) with the workspace NaN-filled too, twice on the
same workspace: an output element no CTA writes, or a partial a finisher reads that no CTA
wrote, is a NaN mismatch rather than whatever memory held; after each launch every flag must be
back at 0 (the kernel resets what it consumes, so the workspace is reused without a memset), and
the two results must be bitwise equal (the fixed summation order). The interpreter runs the CTAs
one after another in program-id order, the order the GPU dispatches them, so a finisher's wait
on a lower-numbered CTA is already satisfied; test_fixup_protocol_under_interleavings covers the
orders the interpreter cannot.

Shapes are small, odd and ragged (M, N not multiples of the tile: masked rows / columns; K not
a multiple of BLOCK_K: the EVEN_K=False masked loop) with a small SM count (the point's ``sms``)
so the grids are a few CTAs: pure Stream-K with every tile split in two (CTAs that finish one
tile and contribute to the next), tiles split over 3-5 CTAs (middle contributors holding neither
end), more CTAs than work units (idle CTAs), HYBRID with full data-parallel waves plus a split
leftover, with tiles a multiple of the grid (no Stream-K phase at all) and with fewer tiles than
CTAs (all Stream-K), PROGRAMS_PER_SM 2, BLOCK_M 128 / BLOCK_N 128 tiles, both dtypes, both
weight layouts (an [N, K] weight seen through .t() and a row-major [K, N] one), and A and B as
strided views of wider buffers.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same bf16 / fp16
inputs; the kernel accumulates in fp32 (products of two 8- or 11-bit mantissas are exact in
fp32; the sums err ~sqrt(K) 2^-24 relative, < 1e-5 here), keeps the split partials in fp32 and
adds them in fp32, then rounds once to the output dtype: half an ulp on the GPU, up to one ulp
with the interpreter's truncating cast; an ulp is at most 2^-7 = 7.8e-3 (bf16, 8 significant
bits) / 2^-10 = 9.8e-4 (fp16, 11) of an element <= max|ref|. bf16 1e-2 and fp16 2e-3 (the
harness's defaults) bound that; torch_baseline (torch's bf16 / fp16 matmul, one rounding of an
fp32 sum) stays inside them too. Measured: kernel max error <= 0.59 % (bf16) and 0.031 % (fp16)
of max|ref|, the baseline <= 0.33 % / 0.031 %.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "streamk_gemm"
TOL = {"bf16": 1e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bn, bk, pps, hybrid, w, st):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "PROGRAMS_PER_SM": pps, "HYBRID": hybrid,
            "num_warps": w, "num_stages": st}


def _pt(M, N, K, dtype, layout, sms=None):
    p = {"M": M, "N": N, "K": K, "dtype": dtype, "b_layout": layout}
    if sms is not None:
        p["sms"] = sms
    return p


# kernel module -> case name -> (point, cfg); the comments give (CTAs, tiles, data-parallel tiles,
# k-steps per tile) and the CTAs holding each Stream-K tile
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 5 CTAs, 6 tiles x 7 k-steps (K tail of 4): [0] [0,1] [1,2] [2,3] [3,4] [4]: CTAs 1-3 finish
        # one tile, then contribute to the next
        "pure_sk_ragged_bf16": (_pt(37, 50, 100, "bf16", "nk", 5), _cfg(16, 32, 16, 1, 0, 4, 2)),
        # 5 CTAs, 2 tiles x 7: [0,1,2] [2,3,4]: CTAs 1 and 3 hold the middle of a tile
        "middle_contributors_fp16": (_pt(20, 30, 224, "fp16", "kn", 5), _cfg(16, 32, 32, 1, 0, 8, 3)),
        # 2 CTAs, 9 tiles: 8 data-parallel (4 waves), the ninth split [0,1]
        "hybrid_leftover_bf16": (_pt(70, 90, 96, "bf16", "nk", 2), _cfg(32, 32, 32, 1, 1, 4, 3)),
        # 6 CTAs (2 a SM), 6 tiles: all data-parallel, no Stream-K phase
        "hybrid_exact_waves_fp16": (_pt(64, 96, 80, "fp16", "nk", 3), _cfg(32, 32, 16, 2, 1, 4, 2)),
        # 8 CTAs, 2 tiles < 8: HYBRID has no full wave, all Stream-K: [0,1,2,3] [3,4,5,6,7]
        "hybrid_fewer_tiles_than_ctas_bf16": (_pt(50, 30, 200, "bf16", "kn", 4), _cfg(32, 32, 32, 2, 1, 8, 2)),
        # 7 CTAs, 1 tile x 3 k-steps: CTAs 3-6 have no work
        "idle_ctas_fp16": (_pt(9, 17, 40, "fp16", "nk", 7), _cfg(16, 32, 16, 1, 0, 4, 3)),
        # 4 CTAs (2 a SM), A [45, 130] inside [45, 138], the [67, 130] weight inside [67, 154]
        "pps2_strided_bf16": (_pt(45, 67, 130, "bf16", "nk", 2), _cfg(16, 64, 32, 2, 0, 4, 3)),
        # 64 x 128 tiles, 4 CTAs over 6 tiles x 5
        "big_tiles_fp16": (_pt(130, 150, 320, "fp16", "kn", 4), _cfg(64, 128, 64, 1, 0, 8, 3)),
        # 128 x 64 tiles, 4 CTAs: 4 data-parallel tiles, 2 leftover split [0,1] [2,3]
        "block128_hybrid_bf16": (_pt(200, 140, 256, "bf16", "nk", 4), _cfg(128, 64, 64, 1, 1, 8, 4)),
        # 128 x 128 tiles (the BASELINE's), pure Stream-K over 3 CTAs, K tail
        "block128_pure_sk_fp16": (_pt(150, 250, 200, "fp16", "nk", 3), _cfg(128, 128, 32, 1, 0, 4, 3)),
    },
}

# prefilled: cases run twice into a NaN-filled out= buffer on one NaN-filled workspace
PREFILLED = ("pure_sk_ragged_bf16", "middle_contributors_fp16", "hybrid_leftover_bf16",
             "hybrid_fewer_tiles_than_ctas_bf16", "idle_ctas_fp16", "block128_hybrid_bf16")
STRIDED_OUT = "middle_contributors_fp16"        # its out= is a [M, N] view of a [M + 3, N + 5] buffer

# configs compiled for each arch at the module's first POINT (sm_90: BASELINE first; sm_120: those
# within its 99 KiB of shared memory)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(128, 128, 64, 1, 1, 8, 3), _cfg(128, 128, 64, 2, 0, 4, 4), _cfg(64, 128, 32, 1, 0, 8, 4),
             _cfg(64, 128, 64, 2, 1, 4, 3)],
}
SM120_CFGS = [_cfg(64, 128, 32, 1, 1, 4, 3), _cfg(128, 128, 32, 2, 0, 8, 2), _cfg(64, 128, 64, 1, 0, 4, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: A and the weight as views of wider buffers."""
    import torch

    if name == "pps2_strided_bf16":
        a, b = inputs["a"], inputs["b"]
        M, K = a.shape
        N = b.shape[1]
        wide = torch.zeros((M, K + 8), dtype=a.dtype)
        wide[:, :K] = a
        inputs["a"] = wide[:, :K]
        w = torch.zeros((N, K + 24), dtype=b.dtype)
        w[:, :K] = b.t()
        inputs["b"] = w[:, :K].t()
        assert inputs["a"].stride() == (K + 8, 1) and inputs["b"].stride() == (1, K + 24)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["M"], point["N"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_element_written_and_flags_reset(name):
    """Into a NaN-filled out= buffer, on a NaN-filled workspace, twice: every element written (no
    NaN left), right, into the caller's buffer; the flags all 0 after each launch; the second
    result bitwise the first."""
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")
    assert res["flags_after"] == [0, 0], f"{name}: flags left set after the launches: {res['flags_after']}"
    assert res["deterministic"], f"{name}: the second launch differs from the first"


def _mirror_first_cta(t_first: int, base: int, extra: int) -> int:
    """The kernel's first_cta arithmetic, in Python ints: the CTA holding unit t_first."""
    big = extra * (base + 1)
    return t_first // (base + 1) if t_first < big else extra + (t_first - big) // max(base, 1)


def _programs(mod, M, N, K, cfg, sms):
    """Each CTA's Stream-K program, as the kernel walks it: a list of segments (tile, lo, hi,
    role, waits) backwards over its range; role 'whole' / 'contrib' / 'finish'; waits: the CTAs
    a finisher waits for."""
    progs, tiles, dp, iters = mod._split(M, N, K, cfg, sms)
    units = (tiles - dp) * iters
    base, extra = divmod(units, progs)
    out = []
    for p, (start, end) in enumerate(mod.sk_ranges(M, N, K, cfg, sms)):
        segs = []
        if end > start:
            last = (end - 1) // iters
            for t in range(last, start // iters - 1, -1):
                t_first = t * iters
                lo, hi = max(start, t_first), min(end, t_first + iters)
                if lo == t_first and hi == t_first + iters:
                    segs.append((t, lo, hi, "whole", []))
                elif hi != t_first + iters:
                    segs.append((t, lo, hi, "contrib", []))
                else:
                    segs.append((t, lo, hi, "finish", list(range(_mirror_first_cta(t_first, base, extra), p))))
        out.append(segs)
    return out, iters


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; both dtypes and layouts, EVEN_K on and off, whole
    tiles inside a Stream-K range, split tiles with 2 and >= 3 holders (a middle contributor), a
    CTA that finishes one tile and contributes to another, idle CTAs, HYBRID with a leftover,
    with none (tiles a multiple of the grid) and with no full wave are all hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["b_layout"] for p, _ in cases} == {"nk", "kn"}
    assert {p["K"] % c["BLOCK_K"] == 0 for p, c in cases} == {True, False}
    assert any(p["M"] % c["BLOCK_M"] and p["N"] % c["BLOCK_N"] for p, c in cases)
    seen = set()
    for p, c in cases:
        progs, tiles, dp, iters = mod._split(p["M"], p["N"], p["K"], c, p["sms"])
        holders = mod.tile_holders(p["M"], p["N"], p["K"], c, p["sms"])
        walks, _ = _programs(mod, p["M"], p["N"], p["K"], c, p["sms"])
        roles = [{r for _, _, _, r, _ in w} for w in walks]
        seen |= {"whole_in_sk"} if any("whole" in r for r in roles) else set()
        seen |= {"split2"} if any(len(h) == 2 for h in holders) else set()
        seen |= {"split3+"} if any(len(h) >= 3 for h in holders) else set()
        seen |= {"finish_and_contrib"} if any({"contrib", "finish"} <= r for r in roles) else set()
        seen |= {"idle"} if any(it == 0 for it in mod.cta_iterations(c, p)) else set()
        if c["HYBRID"]:
            seen |= {"hybrid_leftover"} if 0 < dp < tiles else set()
            seen |= {"hybrid_no_sk"} if dp == tiles else set()
            seen |= {"hybrid_no_wave"} if dp == 0 else set()
    assert seen == {"whole_in_sk", "split2", "split3+", "finish_and_contrib", "idle", "hybrid_leftover",
                    "hybrid_no_sk", "hybrid_no_wave"}, seen


def test_split_arithmetic():
    """sk_ranges mirrors the kernel: the ranges tile [0, units) in order, their lengths differ by
    at most one; cta_iterations adds the data-parallel tiles; each CTA contributes at most once,
    as the first segment it walks, finishes a split tile at most once, as the last; a finisher's
    first_cta (the kernel's arithmetic) is the tile's first holder and it waits only on lower
    CTAs, each a contributor to that very tile; every split tile has exactly one finisher."""
    mod = load_example(KERNEL)
    for M, N, K in ((37, 50, 100), (1, 1, 1), (300, 17, 4096), (128, 128, 64), (1000, 700, 96)):
        for sms in (1, 3, 7, 132):
            for bm, bn, bk in ((16, 32, 16), (64, 128, 32), (128, 128, 64)):
                for pps, hybrid in ((1, 0), (2, 0), (1, 1), (3, 1)):
                    cfg = _cfg(bm, bn, bk, pps, hybrid, 4, 3)
                    progs, tiles, dp, iters = mod._split(M, N, K, cfg, sms)
                    assert progs == mod.grid(cfg, _pt(M, N, K, "bf16", "nk", sms)) == pps * sms
                    assert dp % progs == 0 and (dp == 0 if not hybrid else tiles - dp < progs)
                    ranges = mod.sk_ranges(M, N, K, cfg, sms)
                    assert ranges[0][0] == 0 and ranges[-1][1] == (tiles - dp) * iters
                    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
                    lens = [e - s for s, e in ranges]
                    assert max(lens) - min(lens) <= 1 and lens == sorted(lens, reverse=True)
                    its = mod.cta_iterations(cfg, _pt(M, N, K, "bf16", "nk", sms))
                    assert its == [dp // progs * iters + n for n in lens] and sum(its) == tiles * iters
                    holders = mod.tile_holders(M, N, K, cfg, sms)
                    walks, _ = _programs(mod, M, N, K, cfg, sms)
                    finishers = {}
                    for p, segs in enumerate(walks):
                        roles = [r for _, _, _, r, _ in segs]
                        assert roles.count("contrib") <= 1 and "contrib" not in roles[1:]
                        assert roles.count("finish") <= 1 and "finish" not in roles[:-1]
                        for t, lo, hi, role, waits in segs:
                            assert p in holders[t]
                            if role == "finish":
                                finishers[t] = p
                                assert waits == holders[t][:-1] and all(j < p for j in waits)
                                assert all(walks[j][0][3] == "contrib" and walks[j][0][0] == t for j in waits)
                    assert set(finishers) == {t for t, h in enumerate(holders) if len(h) > 1}
                    assert all(h == sorted(h) and h == list(range(h[0], h[-1] + 1)) for h in holders)


def test_fixup_protocol_under_interleavings():
    """The fixup protocol run by a scheduler in Python: the CTAs are dispatched in program-id
    order onto `slots` resident places (fewer than the grid too: PROGRAMS_PER_SM above what fits),
    and any resident CTA not blocked on a flag may take the next step. Under 300 random
    interleavings per small case (10 for the two of real size) nothing deadlocks, every tile's C
    is written once, as the sum of exactly its k-steps (each once), no partial is read before its
    flag is up nor overwritten before it is read, and every flag ends at 0."""
    mod = load_example(KERNEL)
    rng = random.Random(7)
    shapes = [(p["M"], p["N"], p["K"], c, p["sms"]) for p, c in CASES[KERNEL].values()]
    shapes += [(3072, 3072, 8192, _cfg(128, 128, 64, 1, 0, 4, 3), 16),
               (256, 7168, 4096, _cfg(128, 128, 64, 2, 1, 4, 3), 12)]
    for M, N, K, cfg, sms in shapes:
        progs, tiles, dp, iters = mod._split(M, N, K, cfg, sms)
        walks, _ = _programs(mod, M, N, K, cfg, sms)
        for trial in range(300 if tiles * iters <= 5000 else 10):
            slots = rng.choice([progs, max(1, progs // 2), 1])
            flags = [0] * progs
            ws = {}                                  # (cta, slot kind) -> set of (tile, k-step)
            read = set()
            out = {}
            steps = [[("dp", t) for t in range(p, dp, progs)] + [("seg", s) for s in segs]
                     for p, segs in enumerate(walks)]
            pos = [0] * progs
            wait_at = [0] * progs                    # a finisher's next CTA to wait for
            dispatched, done = 0, 0
            resident = []
            while done < progs:
                while len(resident) < slots and dispatched < progs:
                    resident.append(dispatched)
                    dispatched += 1
                runnable = []
                for p in resident:
                    if pos[p] == len(steps[p]):
                        runnable.append(p)
                        continue
                    kind, what = steps[p][pos[p]]
                    if kind == "seg" and what[3] == "finish" and wait_at[p] < len(what[4]) and \
                            flags[what[4][wait_at[p]]] != 1:
                        continue
                    runnable.append(p)
                assert runnable, f"deadlock: {M}x{N}x{K} {cfg} slots {slots}"
                p = rng.choice(runnable)
                if pos[p] == len(steps[p]):
                    resident.remove(p)
                    done += 1
                    continue
                kind, what = steps[p][pos[p]]
                if kind == "dp":
                    assert what not in out
                    out[what] = {(what, k) for k in range(iters)}
                    pos[p] += 1
                    continue
                t, lo, hi, role, waits = what
                mine = {(dp + t, u - t * iters) for u in range(lo, hi)}
                if role == "whole":
                    assert dp + t not in out
                    out[dp + t] = mine
                    pos[p] += 1
                elif role == "contrib":
                    assert (p, "contrib") not in ws or (p, "contrib") in read, "partial overwritten unread"
                    ws[(p, "contrib")] = mine
                    flags[p] = 1
                    pos[p] += 1
                elif wait_at[p] < len(waits):            # one wait: the CAS 1 -> 0
                    j = waits[wait_at[p]]
                    assert flags[j] == 1
                    flags[j] = 0
                    wait_at[p] += 1
                else:
                    total = set(mine)
                    for j in waits:
                        part = ws[(j, "contrib")]
                        assert not (total & part)
                        total |= part
                        read.add((j, "contrib"))
                    assert dp + t not in out
                    out[dp + t] = total
                    pos[p] += 1
            assert sorted(out) == list(range(tiles))
            assert all(out[t] == {(t, k) for k in range(iters)} for t in out)
            assert flags == [0] * progs


def _working_ctas(mod, cfg, point) -> int:
    return sum(1 for it in mod.cta_iterations(cfg, point) if it)


def _smem_bound(cfg) -> int:
    """Shared memory of a config, from what the sm_90 compiles showed (an upper bound of every
    one): num_stages buffers of an A [BLOCK_M, BLOCK_K] and a B [BLOCK_K, BLOCK_N] tile, 2 bytes an
    element, or the epilogue's fp32 [BLOCK_M, BLOCK_N] layout conversion when that is larger (it
    is, 64 KiB, only at 128 x 128 x 32, 3 stages, 8 warps; elsewhere the pipeline's bytes exactly)."""
    return max(cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * 2,
               4 * cfg["BLOCK_M"] * cfg["BLOCK_N"])


def test_sweep_fits_the_points():
    """The study sweep: 64 configs over the TUNABLES with BASELINE among them; at every POINT each
    config is valid, launches PROGRAMS_PER_SM x 132 >= 132 CTAs that all have work (the fewest
    work units, 112 tiles x 288 k-steps at the second point, are far more than 264 CTAs), and its
    buffers fit an H200's 227 KiB per block; at BASELINE no point's tile count divides the grid.
    (Every config was compiled for sm_90 with triton 3.6.0 at every point: all 192 compile,
    none spills, in ~1-15 s each (~3.5 min in all); 36-128 KiB of shared memory; registers
    102-252: BLOCK_M 64 on 8 warps 102-118, on 4 warps 126-164; BLOCK_M 128 on 8 warps 132-164,
    on 4 warps 210-252 (the fp32 128 x 128 accumulator alone is 128 a thread there; the most at
    the third point, fp16 with N contiguous). Above 128 registers on 8 warps one CTA fits an SM
    by registers, so PROGRAMS_PER_SM 2 then runs the second half of its CTAs after the first --
    still correct: a CTA only waits on lower-numbered ones.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-15")[KERNEL][2]     # scripts/rank_study.py SWEEPS
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) >= len(SWEEP_AXES) - 1
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p) >= H200_SMS and _working_ctas(mod, c, p) == mod.grid(c, p), (p, c)
            assert _smem_bound(c) <= H200_SMEM_PER_BLOCK, (p, c)
        # the points differ in character: split tiles vs whole waves at the BASELINE
        progs, tiles, dp, iters = mod._split(p["M"], p["N"], p["K"], mod.BASELINE, H200_SMS)
        assert tiles % progs != 0, p            # the tile count does not divide the grid


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes and types of a launch (meta tensors,
    the strides of the point's weight layout, a workspace of two slots a CTA), bytes_moved counts
    A, B and C once, grid / cta_iterations / loop_iterations are the split's; inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "streamk_gemm"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")                 # one kernel a launch
    assert len(mod.POINTS) == 3 and len({p["dtype"] for p in mod.POINTS}) == 2
    assert {p["b_layout"] for p in mod.POINTS} == {"nk", "kn"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            M, N, K = p["M"], p["N"], p["K"]
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]]
            assert args["A"].shape == (M, K) and args["B"].shape == (K, N) and args["C"].shape == (M, N)
            assert args["A"].dtype == args["B"].dtype == args["C"].dtype == dt
            assert (args["stride_am"], args["stride_ak"], args["stride_cm"], args["stride_cn"]) == (K, 1, N, 1)
            assert (args["stride_bk"], args["stride_bn"]) == ((1, K) if p["b_layout"] == "nk" else (N, 1))
            P = mod.grid(cfg, p)
            assert P == cfg["PROGRAMS_PER_SM"] * H200_SMS and args["NUM_SMS"] == H200_SMS
            assert args["WS"].dtype == torch.float32 and args["WS"].numel() == 2 * P * cfg["BLOCK_M"] * cfg["BLOCK_N"]
            assert args["FLAGS"].dtype == torch.int32 and args["FLAGS"].numel() == P
            assert args["EVEN_K"] == (K % cfg["BLOCK_K"] == 0) and args["GROUP_M"] == mod.GROUP_M
            assert {k: args[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "PROGRAMS_PER_SM", "HYBRID")} == \
                {k: cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "PROGRAMS_PER_SM", "HYBRID")}
            assert mod.bytes_moved(p) == 2 * (M * K + K * N + M * N) and mod.flops(p) == 2 * M * N * K
            assert H.meta_nbytes(args) < 4 * 2**30
            tiles = -(-M // cfg["BLOCK_M"]) * -(-N // cfg["BLOCK_N"])
            iters = -(-K // cfg["BLOCK_K"])
            its = mod.cta_iterations(cfg, p)
            assert len(its) == P and sum(its) == tiles * iters and max(its) - min(its) <= 1
            assert mod.loop_iterations(cfg, p) == -(-tiles * iters // P) == max(its)


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (shapes, the layout's strides, O(1) products, the seed's), the
    reference's and the baseline's shapes and dtypes, streamk_gemm's trivial shapes."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 50, 100, "bf16", "nk", 5)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    a, b = inputs["a"], inputs["b"]
    assert a.shape == (37, 100) and b.shape == (100, 50) and a.dtype == b.dtype == torch.bfloat16
    assert b.stride() == (1, 100) and inputs["num_sms"] == 5
    kn = mod.make_inputs(_pt(37, 50, 100, "fp16", "kn"), seed=1, device="cpu")
    assert kn["b"].stride() == (50, 1) and kn["b"].dtype == torch.float16 and kn["num_sms"] == H200_SMS
    ref = mod.reference(inputs)
    assert ref.shape == (37, 50) and ref.dtype == torch.float32 and 0.3 < float(ref.std()) < 3
    assert float(a.float().std()) > 0.1 and float(b.float().std()) > 0.1
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 50) and base.dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["a"], a)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["a"], a)
    # empty M / N, K = 0: no launch
    e = mod.streamk_gemm(torch.ones(0, 4, dtype=torch.float16), torch.ones(4, 3, dtype=torch.float16), num_sms=2)
    assert e.shape == (0, 3)
    z = mod.streamk_gemm(torch.ones(2, 0, dtype=torch.float16), torch.ones(0, 3, dtype=torch.float16), num_sms=2)
    assert z.shape == (2, 3) and not z.any()


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    a = torch.ones(8, 16, dtype=torch.bfloat16)
    b = torch.ones(16, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.streamk_gemm(a, b, BLOCK_M=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.streamk_gemm(a, b, BLOCK_K=8)
    with pytest.raises(ValueError, match="PROGRAMS_PER_SM=0"):
        mod.streamk_gemm(a, b, PROGRAMS_PER_SM=0)
    with pytest.raises(ValueError, match="HYBRID=2"):
        mod.streamk_gemm(a, b, HYBRID=2)
    with pytest.raises(ValueError, match="num_sms=0"):
        mod.streamk_gemm(a, b, num_sms=0)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.streamk_gemm(a, b.half())
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.streamk_gemm(a.float(), b.float())
    with pytest.raises(ValueError, match="expected a"):
        mod.streamk_gemm(a, b[:8])
    with pytest.raises(ValueError, match="out must be"):
        mod.streamk_gemm(a, b, out=torch.empty(8, 9, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(4, 4, 4, "fp32", "nk"), device="cpu")
    with pytest.raises(ValueError, match="b_layout 'mk'"):
        mod.example_args(mod.BASELINE, _pt(4, 4, 4, "bf16", "mk"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and three more (64 / 128 rows, 4 and 8 warps, both HYBRID values, 2
    programs a SM) compile without spills inside 227 KiB; the dot runs as a bf16 wgmma and the
    flags as acquire / release atomics."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0
        assert res.shared <= _smem_bound(cfg), cfg
    res = compile_kernel(mod._kernel, args=mod.example_args(mod.BASELINE, mod.POINTS[0]), arch="sm_90",
                         num_warps=8, num_stages=3, keep_ir=True)
    assert res.status == "ok", res.message
    assert "wgmma.mma_async" in res.ptx and ".bf16" in res.ptx
    assert ".acquire" in res.ptx and ".release" in res.ptx


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block) configs of 64 / 128 rows compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (M = 256, K = 18432) and the third (fp16, a row-major [K, N] weight: the
    B tile's unit stride along N) at a config fitting both archs."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    cfg = _cfg(64, 128, 32, 2, 1, 4, 3)
    for p in mod.POINTS[1:]:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, f"{p} on {arch}: {res.status}: {res.message}"
        assert res.shared <= (H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK)


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases, each twice into a NaN-filled out= buffer on a
    fresh NaN-filled workspace (zero flags) that the two launches share; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    plain = mod._workspace

    def nan_workspace(device, programs, bm, bn):
        if str(device) not in mod._WORKSPACES:
            ws, flags = plain(device, programs, bm, bn)
            ws.fill_(float("nan"))
            return ws, flags
        return plain(device, programs, bm, bn)

    mod._workspace = nan_workspace
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            mod._WORKSPACES.clear()
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            a, b = inputs["a"], inputs["b"]
            M, N = a.shape[0], b.shape[1]
            outs, flags_after = [], []
            for _ in range(2):
                if name == STRIDED_OUT:
                    out = torch.full((M + 3, N + 5), float("nan"), dtype=a.dtype)[1:M + 1, 2:N + 2]
                else:
                    out = torch.full((M, N), float("nan"), dtype=a.dtype)
                got = mod.streamk_gemm(a, b, out=out, num_sms=inputs["num_sms"], **cfg)
                outs.append((got, out))
                flags_after.append(int(mod._WORKSPACES["cpu"][1].abs().sum()))
            got, out = outs[0]
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = all(g.data_ptr() == o.data_ptr() for g, o in outs)
            results[name]["flags_after"] = flags_after
            results[name]["deterministic"] = bool(torch.equal(outs[0][0], outs[1][0]))
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
