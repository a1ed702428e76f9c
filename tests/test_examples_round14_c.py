"""examples/row_sort.py against its torch reference (a stable descending sort) on the CPU
through Triton's interpreter, its launcher hooks against the shapes, its study sweep against
the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round12_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round14_c.py row_sort``) that prints one JSON line; the tests
assert per case. A second subprocess (``... prefilled_out``) runs cases into out= buffers filled
with NaN / -1 first, so an element no program writes is a mismatch rather than whatever
torch.empty held.

Shapes are small, odd and ragged and together take every path: one row a tile with BLOCK_KEYS
below BLOCK_N (ROWS_PER_CTA 1) and several rows a tile with a last row block past B, N ragged
(masked lanes sorted behind the row), N a power of two, N = 1 and N below the 16-wide minimum
block, one program per row block (PROGRAMS_PER_SM 0) and the persistent grid-stride loop with
programs of unequal block counts and with more programs asked for than there are blocks,
LOOP_STAGES 1 / 2 / 3, every dtype (int64 keys for fp32, int32 for bf16 / fp16), strided rows,
many equal values (the tie rule), and -inf / +inf / -0.0 / +0.0 / NaN and rows of nothing but
-inf or one repeated value.

Tolerance: none. The sort compares exact integer keys and the values written are the inputs'
own bits (decoded from the key), so values must equal the reference's exactly (compared as
floats: -0.0 equals +0.0 -- the kernel writes -0.0 as +0.0 -- and a NaN matches a NaN at the
same place) and the indices must equal the stable sort's exactly; torch.sort's values (the
baseline) are the same sequence, so they match exactly too.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "row_sort"
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024


def _cfg(bk, ppm, ls, w, s=1):
    return {"BLOCK_KEYS": bk, "PROGRAMS_PER_SM": ppm, "LOOP_STAGES": ls, "num_warps": w, "num_stages": s}


def _pt(B, N, dtype, sms=None):
    p = {"B": B, "N": N, "dtype": dtype}
    if sms is not None:
        p["sms"] = sms
    return p


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "keys_below_row_fp32": (_pt(5, 100, "fp32"), _cfg(64, 0, 1, 4)),
        "rows_past_b_bf16": (_pt(7, 50, "bf16"), _cfg(256, 0, 2, 8)),
        "persistent_uneven_fp16": (_pt(11, 33, "fp16", sms=4), _cfg(128, 1, 2, 4, 3)),
        "persistent_three_stages_fp32": (_pt(13, 64, "fp32", sms=3), _cfg(64, 2, 3, 2)),
        "more_programs_than_blocks_bf16": (_pt(3, 200, "bf16", sms=2), _cfg(512, 4, 1, 16)),
        "single_column_fp32": (_pt(4, 1, "fp32"), _cfg(16, 0, 1, 1)),
        "narrow_rows_fp16": (_pt(9, 10, "fp16"), _cfg(64, 0, 2, 2, 2)),
        "pow2_row_bf16": (_pt(2, 256, "bf16"), _cfg(256, 0, 1, 4)),
        "strided_rows_fp32": (_pt(6, 70, "fp32", sms=2), _cfg(256, 1, 2, 8)),
        "strided_rows_fp16": (_pt(5, 90, "fp16"), _cfg(128, 0, 1, 4)),
        "ties_bf16": (_pt(5, 120, "bf16", sms=1), _cfg(256, 2, 2, 4)),
        "ties_fp32": (_pt(4, 97, "fp32"), _cfg(128, 0, 1, 8)),
        "specials_fp32": (_pt(6, 40, "fp32"), _cfg(128, 0, 1, 4)),
        "specials_bf16": (_pt(6, 40, "bf16", sms=2), _cfg(64, 1, 3, 4)),
        "specials_fp16": (_pt(6, 40, "fp16"), _cfg(256, 0, 2, 8)),
    },
}

# prefilled_out: cases run into out= buffers filled with NaN (values) and -1 (indices)
PREFILLED = ("rows_past_b_bf16", "persistent_uneven_fp16", "more_programs_than_blocks_bf16", "keys_below_row_fp32",
             "strided_rows_fp32")

# configs compiled for each arch at the module's first POINT (BASELINE first; all fit sm_120's 99 KiB too)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(4096, 0, 1, 8), _cfg(2048, 2, 2, 4), _cfg(8192, 1, 1, 16), _cfg(2048, 0, 2, 16)],
}


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: strided rows; many equal values; special values."""
    import torch

    x = inputs["x"]
    if name.startswith("strided_rows"):
        wide = torch.full((x.shape[0], x.shape[1] + 21), float("nan"), dtype=x.dtype)   # NaN: would sort first if read
        wide[:, :x.shape[1]] = x
        inputs["x"] = wide[:, :x.shape[1]]
        assert inputs["x"].stride() == (x.shape[1] + 21, 1)
    if name.startswith("ties"):
        # floor(N(0, 2^2)): ~12 distinct values over ~100 columns, no -0.0
        inputs["x"] = torch.floor(x.float()).to(x.dtype)
    if name.startswith("specials"):
        x = x.clone()
        inf, nan = float("inf"), float("nan")
        x[0, :8] = torch.tensor([0.0, -0.0, inf, -inf, 0.0, -inf, -0.0, inf], dtype=x.dtype)
        x[1, ::4] = nan                                       # NaN sorts first (column order among them)
        x[1, 1] = -nan
        x[2, :] = -inf                                        # a row of nothing but -inf
        x[3, :] = 1.5                                         # one repeated value: the identity permutation
        x[4, 5:] = -0.0                                       # many signed zeros around a few values
        x[4, 20:30] = 0.0
        inputs["x"] = x


# ----------------------------------------------------------------- the pytest side
def _results(which: str = KERNEL) -> dict:
    return H.interpreter_results(HERE, which)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    assert res["shape"] == [point["B"], point["N"]]
    for what, r in (("values", res), ("torch_baseline values", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    assert res["idx_bad"] == 0, f"{name}: {res['idx_bad']} of {res['numel']} indices differ from the stable sort's"
    assert res["idx_dtype"] == "torch.int32" and res["val_dtype"] == "torch." + {
        "fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}[point["dtype"]]


@pytest.mark.parametrize("name", PREFILLED)
def test_every_element_written(name):
    """Into out= buffers prefilled with NaN / -1: every element written (none left) and right."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0 and res["idx_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


def test_cases_cover_every_tunable_value_and_path():
    """Each tunable takes at least two values; one- and many-row tiles, a last row block past B,
    ragged and power-of-two rows, both grids (with unequal and surplus programs), each LOOP_STAGES,
    each dtype and strided rows are hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].items())
    rows = [(p, c, mod.rows_per_cta(c, p["N"])) for _, (p, c) in cases]
    assert any(r == 1 and c["BLOCK_KEYS"] < mod.block_n(p["N"]) for p, c, r in rows)
    assert any(r > 1 and p["B"] % r for p, c, r in rows)                      # a last row block past B
    assert any(p["N"] & (p["N"] - 1) for p, _, _ in rows) and any(p["N"] == mod.block_n(p["N"]) for p, _, _ in rows)
    assert any(p["N"] < mod.MIN_BLOCK_N for p, _, _ in rows) and any(p["N"] == 1 for p, _, _ in rows)
    assert {p["dtype"] for p, _, _ in rows} == set(mod.DTYPES)
    assert {c["LOOP_STAGES"] for _, c, _ in rows} >= {1, 2, 3}
    its = [mod.cta_iterations(c, p) for p, c, _ in rows if c["PROGRAMS_PER_SM"]]
    assert any(len(set(it)) > 1 for it in its)                                  # persistent, unequal programs
    assert any(max(it) > 1 for it in its)
    # more programs asked for than there are row blocks: the grid is the blocks
    assert any(c["PROGRAMS_PER_SM"] * p["sms"] > -(-p["B"] // r) for p, c, r in rows if c["PROGRAMS_PER_SM"])
    assert {c["PROGRAMS_PER_SM"] > 0 for _, c, _ in rows} == {False, True}
    assert sum(n.startswith("strided") for n, _ in cases) == 2


def test_sweep_fits_the_points():
    """The study sweep: the TUNABLES, 72 configs with BASELINE among them; at every POINT each
    config is valid, launches at least one CTA per SM of an H200, keeps <= 64 keys a thread in
    registers and fits its shared memory (the key tile, exchanged through shared memory by the
    cross-warp stages, plus LOOP_STAGES - 1 prefetched x tiles) in 227 KiB; each BLOCK_KEYS is a
    different tile at each point. (Every config was compiled for sm_90 with triton 3.6.0 at every
    point: all 216 compile, in 1-29 s each (18 min in all); 40-255 registers; 8-96 KiB of shared
    memory, exactly ROWS_PER_CTA x BLOCK_N x (key bytes + (LOOP_STAGES - 1) x x's bytes). 40 keep
    a few words in local memory, all noted here: 27 keep 2 words (values live across the row-block
    loop, stored once and reloaded once a block, where ptxas stops at 64-128 registers); BLOCK_KEYS
    8192 persistent on 4 warps at the N = 384 point 12 (LOOP_STAGES 1) / 28 (2) words at the
    255-register cap; BLOCK_KEYS 8192 persistent on 16 warps at the N = 2048 point 6-8 words at the
    128 cap of 512 threads; one 4 (BLOCK_KEYS 8192, 8 warps, LOOP_STAGES 2, N = 2048). Even the
    28-word one has 47 local loads / stores against a 23k-instruction loop body. BLOCK_KEYS 16384,
    left out, spills 48-404 words on 4 / 8 warps.)"""
    axes = H.study_sweeps([KERNEL], "held-out-14")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES) and all(len(v) >= 2 for k, v in axes.items() if k != "num_stages")
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert len(cfgs) == 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        key_bytes = 8 if p["dtype"] == "fp32" else 4
        e = 4 if p["dtype"] == "fp32" else 2
        for c in cfgs:
            mod._check_cfg(c)
            r = mod.rows_per_cta(c, p["N"])
            tile = r * mod.block_n(p["N"])
            assert mod.grid(c, p) >= H200_SMS, (p, c)
            assert tile // (32 * c["num_warps"]) <= 64, (p, c)
            assert tile * key_bytes + (c["LOOP_STAGES"] - 1) * tile * e <= H200_SMEM_PER_BLOCK, (p, c)
            assert sum(mod.cta_iterations(c, p)) == -(-p["B"] // r)
    # the points differ in character: key width, a ragged row (384 of 512), rows a tile at the baseline
    assert [p["dtype"] == "fp32" for p in mod.POINTS] == [True, False, True]
    assert [p["N"] == mod.block_n(p["N"]) for p in mod.POINTS] == [False, True, True]
    assert all(p["N"] % 16 == 0 for p in mod.POINTS)          # N: i32:16, so x's loads vectorize and LOOP_STAGES can prefetch
    assert [mod.rows_per_cta(mod.BASELINE, p["N"]) for p in mod.POINTS] == [8, 4, 2]
    # every BLOCK_KEYS of the sweep is a distinct tile at every point (no config repeats another)
    for p in mod.POINTS:
        assert len({mod.rows_per_cta({"BLOCK_KEYS": b}, p["N"]) for b in axes["BLOCK_KEYS"]}) == len(axes["BLOCK_KEYS"])


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes bytes_moved
    counts, the constexprs are the point's, grid / cta_iterations / loop_iterations are the row
    blocks' split."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "reference_indices", "bytes_moved", "flops", "grid",
               "loop_iterations", "cta_iterations", "example_args", "torch_baseline", "row_sort"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"fp32", "bf16"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, N = p["B"], p["N"]
            e = 4 if p["dtype"] == "fp32" else 2
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert args["X"].shape == args["VALS"].shape == args["IDX"].shape == (B, N)
            assert args["X"].element_size() == e and args["VALS"].dtype == args["X"].dtype
            assert args["IDX"].dtype == torch.int32
            assert (args["B"], args["N"], args["stride_x"], args["stride_v"], args["stride_i"]) == (B, N, N, N, N)
            bn = triton.next_power_of_2(N)
            assert args["BLOCK_N"] == bn and args["WIDTH"] == 8 * e and args["BF16"] == (p["dtype"] == "bf16")
            assert args["NUM_SMS"] == H200_SMS
            assert all(args[k] == cfg[k] for k in ("BLOCK_KEYS", "PROGRAMS_PER_SM", "LOOP_STAGES"))
            assert mod.bytes_moved(p) == H.meta_nbytes(args) == B * N * (2 * e + 4) > 20 * 2**20
            assert mod.bytes_moved(p) < 4 * 2**30
            L = bn.bit_length() - 1
            assert mod.flops(p) == B * bn * L * (L + 1) // 2 > 10**8
            r = max(1, cfg["BLOCK_KEYS"] // bn)
            blocks = triton.cdiv(B, r)
            g = mod.grid(cfg, p)
            its = mod.cta_iterations(cfg, p)
            if cfg["PROGRAMS_PER_SM"] == 0:
                assert g == blocks and its == [1] * blocks
            else:
                assert g == min(cfg["PROGRAMS_PER_SM"] * H200_SMS, blocks)
                assert len(its) == g and sum(its) == blocks and max(its) - min(its) <= 1
            assert mod.loop_iterations(cfg, p) == its[0] == max(its)


def test_hooks_on_small_points_and_inputs():
    """The hooks on small points: the persistent split against a scalar walk of the kernel's
    grid-stride loop, make_inputs' tensors, the reference's order and tie rule."""
    import torch

    mod = load_example(KERNEL)
    p, c = _pt(11, 33, "fp16", sms=4), _cfg(128, 1, 2, 4)
    assert mod.block_n(33) == 64 and mod.rows_per_cta(c, 33) == 2
    assert mod.grid(c, p) == 4 and mod.cta_iterations(c, p) == [2, 2, 1, 1] and mod.loop_iterations(c, p) == 2
    for B, N, ppm, sms, bk in ((1000, 100, 3, 7, 512), (37, 2000, 2, 5, 2048), (5, 300, 8, 132, 64)):
        cfg, pt = _cfg(bk, ppm, 1, 4), _pt(B, N, "bf16", sms=sms)
        r = mod.rows_per_cta(cfg, N)
        blocks = -(-B // r)
        g = min(ppm * sms, blocks)
        walk = [len(range(pid, blocks, ppm * sms)) for pid in range(g)]      # the kernel's tl.range, in Python
        assert mod.grid(cfg, pt) == g and mod.cta_iterations(cfg, pt) == walk and sum(walk) == blocks
    assert mod.grid(_cfg(64, 0, 1, 4), _pt(10, 100, "fp32")) == 10                 # BLOCK_KEYS < BLOCK_N: a row a CTA
    assert mod.grid(_cfg(1024, 0, 1, 4), _pt(10, 100, "fp32")) == 2                # 8 rows of 128
    assert mod.block_n(1) == 16 and mod.block_n(16) == 16 and mod.block_n(17) == 32 and mod.block_n(8192) == 8192
    assert mod.bytes_moved(_pt(3, 10, "bf16")) == 3 * 10 * 8 and mod.flops(_pt(3, 10, "bf16")) == 3 * 16 * 10
    for dt, tdt in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16)):
        inputs = mod.make_inputs(_pt(4, 300, dt), seed=3, device="cpu")
        x = inputs["x"]
        assert x.dtype == tdt and x.shape == (4, 300) and torch.isfinite(x).all()
        assert 1.5 < float(x.float().std()) < 2.5
        assert torch.equal(x, mod.make_inputs(_pt(4, 300, dt), seed=3, device="cpu")["x"])
        assert not torch.equal(x, mod.make_inputs(_pt(4, 300, dt), seed=4, device="cpu")["x"])
        ref, ids = mod.reference(inputs), mod.reference_indices(inputs)
        assert ref.dtype == torch.float32 and ids.dtype == torch.int64 and ref.shape == ids.shape == (4, 300)
        assert torch.all(ref[:, :-1] >= ref[:, 1:])
        assert torch.equal(mod.torch_baseline(inputs).float(), ref)
    # ties: the reference keeps column order
    inputs = {"x": torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0]])}
    assert mod.reference_indices(inputs).tolist() == [[1, 2, 4, 3, 0]]


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = mod.make_inputs(_pt(2, 100, "fp32"), device="cpu")["x"]
    with pytest.raises(ValueError, match="BLOCK_KEYS=48"):
        mod.row_sort(x, BLOCK_KEYS=48)
    with pytest.raises(ValueError, match="BLOCK_KEYS=8 must be a power of two >= 16"):
        mod.row_sort(x, BLOCK_KEYS=8)
    with pytest.raises(ValueError, match="PROGRAMS_PER_SM=-1"):
        mod.row_sort(x, PROGRAMS_PER_SM=-1)
    with pytest.raises(ValueError, match="LOOP_STAGES=0"):
        mod.row_sort(x, LOOP_STAGES=0)
    with pytest.raises(ValueError, match="sms=0"):
        mod.row_sort(x, PROGRAMS_PER_SM=1, sms=0)
    with pytest.raises(ValueError, match=r"\[B, N\]"):
        mod.row_sort(x[0])
    with pytest.raises(ValueError, match="fp32, bf16 or fp16"):
        mod.row_sort(x.double())
    with pytest.raises(ValueError, match="empty"):
        mod.row_sort(x[:0])
    with pytest.raises(ValueError, match="N=8193"):
        mod.row_sort(torch.zeros((1, 8193)))
    with pytest.raises(ValueError, match=r"out must be"):
        mod.row_sort(x, out=(torch.empty((2, 100)), torch.empty((2, 100), dtype=torch.int64)))
    with pytest.raises(ValueError, match=r"out must be"):
        mod.row_sort(x, out=(torch.empty((2, 99)), torch.empty((2, 100), dtype=torch.int32)))
    with pytest.raises(ValueError, match="fp64"):
        mod.make_inputs(_pt(2, 100, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="N=0"):
        mod.make_inputs(_pt(2, 0, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="int8"):
        mod.bytes_moved(_pt(2, 100, "int8"))


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_example_compiles(shared_cache, arch):
    mod = load_example(KERNEL)
    assert COMPILE_CFGS[KERNEL][0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS[KERNEL], arch):
        assert res.status == "ok", f"{cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0 and 0 < res.shared <= 99 * 1024, (cfg, arch, res.shared)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The bf16 point (int32 keys) and the long-row fp32 point at BASELINE, and a
    persistent, pipelined config at the bf16 point. The persistent grid-stride loop may keep a few
    loop-live words in local memory (triton 3.6, sm_90: 2 words at 27 sweep configs; triton 3.9,
    sm_120: 4 here), stored once and reloaded once a row block: allowed there, up to 4."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for cfg, p, spills in ((mod.BASELINE, mod.POINTS[1], 0), (mod.BASELINE, mod.POINTS[2], 0),
                           (_cfg(4096, 2, 2, 4), mod.POINTS[1], 4)):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills <= spills, f"{p} {cfg} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_loop_stages_prefetch_into_shared_memory(shared_cache):
    """On sm_90, LOOP_STAGES 2 adds exactly one x tile of shared memory (the cp.async prefetch of
    the next row block) to the sort's exchange buffer; the launch's num_stages changes nothing.
    (The exchange buffer itself is the compiler's: with triton 3.6 the whole key tile, 16 KiB
    here; with 3.9 2 KiB.)"""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[0]
    shared = {}
    for ls, s in ((1, 1), (2, 1), (1, 3)):
        cfg = _cfg(2048, 2, ls, 4, s)
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90", num_warps=4, num_stages=s)
        assert res.status == "ok", res.message
        shared[(ls, s)] = res.shared
    assert 0 < shared[(1, 1)] == shared[(1, 3)] <= 2048 * 8
    assert shared[(2, 1)] - shared[(1, 1)] == 2048 * 4                 # [4, 512] fp32 rows of x


# ----------------------------------------------------------------- the subprocess side
def _exact(out, ref) -> dict:
    """Elements of `out` (as fp32) not equal to `ref` (-0.0 equals +0.0; NaN equals NaN), in the
    fields H.mismatch reports."""
    import torch

    out = out.float()
    both_nan = torch.isnan(out) & torch.isnan(ref)
    bad = (out != ref) & ~both_nan
    diff = torch.where(bad, (out - ref).abs().nan_to_num(float("inf")), torch.zeros_like(out))
    finite = ref[torch.isfinite(ref)]
    return {"n_bad": int(bad.sum()), "numel": out.numel(), "max_err": float(diff.max()) if out.numel() else 0.0,
            "tol": 0.0, "scale": float(finite.abs().max()) if finite.numel() else 0.0, "shape": list(out.shape)}


def _case_inputs(mod, name: str, point: dict) -> dict:
    inputs = mod.make_inputs(point, seed=len(name), device="cpu")
    _prepare(name, point, inputs)
    return inputs


def _run_cases() -> None:
    """Under TRITON_INTERPRET=1: every case through row_sort; values against the reference and
    torch.sort's (exactly), indices against the stable sort's; one JSON line."""
    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name, (point, cfg) in CASES[KERNEL].items():
        try:
            inputs = _case_inputs(mod, name, point)
            vals, idx = mod._run(inputs, cfg)
            ref = mod.reference(inputs)
            res = _exact(vals, ref)
            res["baseline"] = _exact(mod.torch_baseline(inputs), ref)
            res["idx_bad"] = int((idx.long() != mod.reference_indices(inputs)).sum())
            res["idx_dtype"] = str(idx.dtype)
            res["val_dtype"] = str(vals.dtype)
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into out= buffers prefilled with NaN / -1."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = _case_inputs(mod, name, point)
            x = inputs["x"]
            out = (torch.full(x.shape, float("nan"), dtype=x.dtype), torch.full(x.shape, -1, dtype=torch.int32))
            vals, idx = mod.row_sort(x, **{k: v for k, v in cfg.items()}, sms=inputs.get("sms"), out=out)
            res = _exact(vals, mod.reference(inputs))
            res["idx_bad"] = int((idx.long() != mod.reference_indices(inputs)).sum())
            res["same_buffer"] = vals.data_ptr() == out[0].data_ptr() and idx.data_ptr() == out[1].data_ptr()
            results[name] = res
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        assert sys.argv[1] == KERNEL, sys.argv
        _run_cases()
