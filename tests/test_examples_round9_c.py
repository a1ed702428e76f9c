"""examples/jagged_sum.py against its fp32 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its segment-length law, and a compile
for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round9_c.py jagged_sum``) that prints one JSON line; the tests
assert per case. A second subprocess (``... prefilled_out``) runs cases into an ``out=``
buffer filled with NaN first (one of them a row-strided view of a wider buffer whose extra
columns must stay NaN), so an output row that no CTA writes (an empty segment, the last
SEGS group) is a mismatch rather than whatever torch.empty held, and a stray write shows.

Shapes are small and odd: B not a multiple of SEGS and smaller than it (segments past B),
D not a multiple of BLOCK_D and smaller than it (the D mask) as well as a multiple (EVEN_D),
segments longer than BLOCK_L and not multiples of it, empty segments (sum 0, mean 0), a
batch of empty segments only (no rows at all), one long segment among short ones, offsets
that do not start at 0 with values as a row-strided view of a wider buffer, both offset
dtypes, both modes and every dtype.

Tolerance (x max|ref|, absolute, per element): the reference sums in fp64 from the same
inputs, so only the fp32 summation order and the one rounding to the output dtype differ.
bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up to one bf16 ulp, 2^-7
relative); fp16 2e-3 (an fp16 ulp is 2^-10); fp32 1e-5 (fp32 sums of <= 300 terms).
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
KERNEL = "jagged_sum"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3, "fp32": 1e-5}


def _cfg(bl, bd, segs, w, s):
    return {"BLOCK_L": bl, "BLOCK_D": bd, "SEGS": segs, "num_warps": w, "num_stages": s}


def _pt(B, L, D, dtype, mode, index):
    return {"B": B, "L": L, "D": D, "dtype": dtype, "mode": mode, "index": index}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_b_and_d_mean_bf16": (_pt(37, 5, 100, "bf16", "mean", "int32"), _cfg(4, 64, 4, 2, 1)),
        "even_d_sum_fp32": (_pt(9, 13, 64, "fp32", "sum", "int64"), _cfg(8, 32, 1, 4, 1)),
        "block_d_wider_than_d_fp16": (_pt(20, 7, 48, "fp16", "sum", "int32"), _cfg(16, 64, 2, 4, 2)),
        "long_and_empty_segments_bf16": (_pt(8, 36, 72, "bf16", "sum", "int64"), _cfg(16, 32, 1, 8, 1)),
        "long_and_empty_segments_mean_fp32": (_pt(8, 36, 40, "fp32", "mean", "int32"), _cfg(32, 64, 2, 4, 1)),
        "all_empty_mean_fp16": (_pt(5, 0, 24, "fp16", "mean", "int64"), _cfg(8, 32, 2, 2, 1)),
        "segs_past_b_fp16": (_pt(3, 9, 130, "fp16", "mean", "int64"), _cfg(8, 64, 8, 4, 1)),
        "strided_rows_offset_base_fp32": (_pt(11, 17, 96, "fp32", "sum", "int32"), _cfg(64, 32, 4, 8, 2)),
        "block_l_wider_than_segments_bf16": (_pt(30, 3, 128, "bf16", "mean", "int32"), _cfg(64, 128, 1, 4, 1)),
    },
}

# lengths that replace segment_lengths' draw in the named cases (summing to B * L)
LENGTHS = {
    "long_and_empty_segments_bf16": [0, 200, 3, 0, 17, 64, 4, 0],
    "long_and_empty_segments_mean_fp32": [1, 0, 0, 250, 2, 0, 31, 4],
}

# prefilled_out: cases run into a NaN-filled out= buffer (every row written, nothing else)
PREFILLED = ("ragged_b_and_d_mean_bf16", "long_and_empty_segments_bf16", "all_empty_mean_fp16",
             "segs_past_b_fp16", "block_d_wider_than_d_fp16")
STRIDED_OUT = ("ragged_b_and_d_mean_bf16", "segs_past_b_fp16")      # out a [B, D] view of [B, D + 8]

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(32, 128, 1, 4, 1), _cfg(64, 256, 4, 8, 1), _cfg(8, 64, 2, 4, 1), _cfg(64, 256, 1, 4, 1)],
}

# the GPU study's sweep: 4 x 3 x 3 x 2 = 72 configs. num_stages has one value: there is no
# dot and Triton does not pipeline these loads (1, 2 and 3 give the same cubin, checked below).


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: given lengths (one long segment, several empty); offsets that start
    past 0, with values a row-strided view of a wider buffer holding rows before and after."""
    import torch

    if name in LENGTHS:
        lens = torch.tensor(LENGTHS[name], dtype=torch.int64)
        assert lens.numel() == point["B"] and int(lens.sum()) == point["B"] * point["L"]
        off = torch.zeros(point["B"] + 1, dtype=torch.int64)
        torch.cumsum(lens, 0, out=off[1:])
        inputs["offsets"] = off.to(inputs["offsets"].dtype)
    if name == "strided_rows_offset_base_fp32":
        v = inputs["values"]
        n, D = v.shape
        wide = torch.randn((n + 9, D + 40), dtype=v.dtype) * 100.0     # rows 0-4 and n+5.. must not count
        wide[5:n + 5, :D] = v
        inputs["values"] = wide[:, :D]
        inputs["offsets"] = inputs["offsets"] + 5
        assert not inputs["values"].is_contiguous() and inputs["values"].stride(0) == D + 40


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    point = CASES[kernel][name][0]
    assert res["shape"] == [point["B"], point["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_row_written(name):
    """Into a NaN-filled out= buffer: every element written (no NaN left) and right; a strided
    out's extra columns untouched; the function returns that buffer."""
    res = _results("prefilled_out")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["pad_untouched"], res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled out")


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the B, D and row tails, empty
    segments, both modes, both offset dtypes and every dtype are hit."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    cases = CASES[KERNEL].values()
    assert any(p["B"] % c["SEGS"] for p, c in cases) and any(p["B"] < c["SEGS"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] for p, c in cases) and any(p["D"] < c["BLOCK_D"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] == 0 for p, c in cases)                  # EVEN_D
    assert any(p["L"] > c["BLOCK_L"] and p["L"] % c["BLOCK_L"] for p, c in cases)
    assert any(p["L"] < c["BLOCK_L"] for p, c in cases) and any(p["L"] == 0 for p, _ in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["mode"] for p, _ in cases} == set(mod.MODES)
    assert {p["index"] for p, _ in cases} == set(mod.INDEX_DTYPES)
    # the fixed-lengths cases: one segment many BLOCK_L steps long, empty segments among the rest
    for name, lens in LENGTHS.items():
        c = CASES[KERNEL][name][1]
        assert max(lens) > 4 * c["BLOCK_L"] and max(lens) % c["BLOCK_L"] and lens.count(0) >= 2


def test_segment_lengths_are_realistic():
    """Exactly B * L rows; skewed (median well below the mean, a long tail up to ~LEN_CAP x the
    mean), ~EMPTY_FRAC empty; deterministic in the seed, different across seeds; make_inputs'
    offsets are their prefix sums in the point's index dtype."""
    import torch

    mod = load_example(KERNEL)
    for B, L in ((32768, 24), (4096, 192), (4096, 100)):
        lens = mod.segment_lengths(B, L)
        assert lens.dtype == torch.int64 and lens.shape == (B,) and int(lens.sum()) == B * L
        assert (lens >= 0).all()
        empty = float((lens == 0).mean(dtype=torch.float64))
        assert mod.EMPTY_FRAC * 0.7 < empty < mod.EMPTY_FRAC * 2 + 0.01, empty
        assert float(lens.double().median()) < 0.75 * L
        assert 8 * L < int(lens.max()) <= 1.2 * mod.LEN_CAP * L
        assert int((lens > 4 * L).sum()) >= B // 200
        assert torch.equal(lens, mod.segment_lengths(B, L))
        assert not torch.equal(lens, mod.segment_lengths(B, L, seed=1))
    p = _pt(300, 7, 16, "fp16", "sum", "int32")
    inputs = mod.make_inputs(p, seed=4, device="cpu")
    off = inputs["offsets"]
    assert off.dtype == torch.int32 and off.shape == (301,) and int(off[0]) == 0 and int(off[-1]) == 2100
    assert torch.equal((off[1:] - off[:-1]).long(), mod.segment_lengths(300, 7, seed=4))
    assert inputs["values"].shape == (2100, 16) and inputs["values"].dtype == torch.float16


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (>= 40), BASELINE among them, every tunable but num_stages
    swept over >= 2 values; at every POINT each config is valid, its example_args are the
    point's bytes and it fills the GPU with >= 132 CTAs."""
    mod = load_example(KERNEL)
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-9")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            assert args["EVEN_D"] and mod.grid(c, p) >= 132
            assert mod.loop_iterations(c, p) >= 1


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (values and offsets read once, out written once), grid and
    loop_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "jagged_sum", "jagged_mean"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["mode"] for p in mod.POINTS} == set(mod.MODES)
    assert {p["index"] for p in mod.POINTS} == set(mod.INDEX_DTYPES)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, L, D = p["B"], p["L"], p["D"]
            e = 4 if p["dtype"] == "fp32" else 2
            ie = 4 if p["index"] == "int32" else 8
            assert 20 <= L <= 200 and 4096 <= B <= 65536 and 128 <= D <= 1024
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == B * L * D * e + (B + 1) * ie + B * D * e
            assert B * L * D * e > 10 * 50 * 10**6              # values alone > 10x the 50 MB L2
            assert args["VALUES"].shape == (B * L, D) and args["VALUES"].element_size() == e
            assert args["OFFSETS"].shape == (B + 1,) and args["OFFSETS"].element_size() == ie
            assert args["OUT"].shape == (B, D) and args["OUT"].dtype == args["VALUES"].dtype
            assert (args["B"], args["D"], args["stride_vl"], args["stride_ob"]) == (B, D, D, D)
            assert args["MEAN"] == (p["mode"] == "mean") and args["EVEN_D"] == (D % cfg["BLOCK_D"] == 0)
            assert (args["BLOCK_L"], args["BLOCK_D"], args["SEGS"]) == (cfg["BLOCK_L"], cfg["BLOCK_D"], cfg["SEGS"])
            assert mod.grid(cfg, p) == triton.cdiv(B, cfg["SEGS"]) * triton.cdiv(D, cfg["BLOCK_D"])
            lens = mod.segment_lengths(B, L)
            steps = int(((lens + cfg["BLOCK_L"] - 1) // cfg["BLOCK_L"]).sum())
            assert mod.loop_iterations(cfg, p) == triton.cdiv(steps, triton.cdiv(B, cfg["SEGS"]))
            assert mod.loop_iterations(cfg, p) >= cfg["SEGS"] * triton.cdiv(L, cfg["BLOCK_L"]) * 0.9
            assert mod.flops(p) == B * L * D + (B * D if p["mode"] == "mean" else 0)
    assert isinstance(mod.example_args(mod.BASELINE, mod.POINTS[0])["OFFSETS"], torch.Tensor)


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 5, 100, "bf16", "mean", "int32")
    c = _cfg(4, 64, 4, 2, 1)
    assert mod.grid(c, p) == 10 * 2
    lens = mod.segment_lengths(37, 5)
    assert mod.loop_iterations(c, p) == -(-int(((lens + 3) // 4).sum()) // 10)
    assert mod.bytes_moved(p) == 37 * 5 * 100 * 2 + 38 * 4 + 37 * 100 * 2
    assert mod.bytes_moved(_pt(37, 5, 100, "fp32", "sum", "int64")) == 37 * 5 * 100 * 4 + 38 * 8 + 37 * 100 * 4
    assert mod.flops(p) == 37 * 5 * 100 + 37 * 100
    args = mod.example_args(c, p)
    assert not args["EVEN_D"] and args["MEAN"] and args["OFFSETS"].dtype == torch.int32
    assert args["VALUES"].dtype == torch.bfloat16
    inputs = mod.make_inputs(p, device="cpu")
    assert inputs["mode"] == "mean" and inputs["values"].shape == (185, 100)
    ref = mod.reference(inputs)
    assert ref.shape == (37, 100) and ref.dtype == torch.float32
    off = inputs["offsets"].long()
    for b in (0, 5, 36):
        seg = inputs["values"][int(off[b]):int(off[b + 1])].float()
        want = seg.mean(0) if seg.shape[0] else torch.zeros(100)
        assert torch.allclose(ref[b], want, atol=1e-5)
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 100) and base.dtype == torch.bfloat16
    inputs["mode"] = "sum"
    assert torch.allclose(mod.reference(inputs)[5], inputs["values"][int(off[5]):int(off[6])].float().sum(0),
                          atol=1e-4)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(6, 4, 32, "fp16", "sum", "int64"), device="cpu")
    v, off = inputs["values"], inputs["offsets"]
    with pytest.raises(ValueError, match="BLOCK_L=12"):
        mod.jagged_sum(v, off, BLOCK_L=12)
    with pytest.raises(ValueError, match="SEGS=3"):
        mod.jagged_sum(v, off, SEGS=3)
    with pytest.raises(ValueError, match="BLOCK_D=0"):
        mod.jagged_sum(v, off, BLOCK_D=0)
    with pytest.raises(ValueError, match="mode 'max'"):
        mod.jagged_sum(v, off, "max")
    with pytest.raises(ValueError, match=r"values \[total_L, D\]"):
        mod.jagged_sum(v[0], off)
    with pytest.raises(ValueError, match="not fp16, bf16 or fp32"):
        mod.jagged_sum(v.double(), off)
    with pytest.raises(ValueError, match=r"int32 / int64 \[B \+ 1\]"):
        mod.jagged_sum(v, off.float())
    with pytest.raises(ValueError, match=r"int32 / int64 \[B \+ 1\]"):
        mod.jagged_sum(v, off[:0])
    with pytest.raises(ValueError, match=r"out must be a \[6, 32\]"):
        mod.jagged_sum(v, off, out=torch.empty((6, 32), dtype=torch.float32))
    with pytest.raises(ValueError, match=r"out must be a \[6, 32\]"):
        mod.jagged_sum(v, off, out=torch.empty((32, 6), dtype=torch.float16).T)
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(4, 2, 8, "fp8", "sum", "int64"), device="cpu")
    with pytest.raises(ValueError, match="int16"):
        mod.make_inputs(_pt(4, 2, 8, "fp16", "sum", "int16"), device="cpu")
    with pytest.raises(ValueError, match="mode 'max'"):
        mod.flops(_pt(4, 2, 8, "fp16", "max", "int64"))
    with pytest.raises(ValueError, match="fp8"):
        mod.bytes_moved(_pt(4, 2, 8, "fp8", "sum", "int64"))


def test_examples_import_without_torch():
    """The launcher contract: the module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles(shared_cache, kernel, arch):
    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], arch):
        assert res.status == "ok", f"{kernel} {cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared >= 0


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_every_point_compiles(shared_cache, arch):
    """BASELINE at the other two points (mean, int32 offsets, bf16 / fp16) and a D tail (EVEN_D
    false)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    tail = dict(mod.POINTS[2], D=1000)
    for p in mod.POINTS[1:] + [tail]:
        args = mod.example_args(mod.BASELINE, p)
        assert args["EVEN_D"] == (p is not tail)
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=4, num_stages=1)
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No dot and no pipelined load: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why
    SWEEP_AXES holds num_stages at 1)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[1]
    for cfg in (mod.BASELINE, _cfg(64, 256, 4, 8, 1)):
        cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
        assert len(cubins) == 1 and None not in cubins, cfg


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            B, D = point["B"], point["D"]
            pad = 8 if name in STRIDED_OUT else 0
            buf = torch.full((B, D + pad), float("nan"), dtype=inputs["values"].dtype)
            out = buf[:, :D]
            got = mod.jagged_sum(inputs["values"], inputs["offsets"], point["mode"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
            results[name]["pad_untouched"] = bool(torch.isnan(buf[:, D:]).all())
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)


def test_cta_iterations_sum_the_groups_row_steps():
    """rank's ragged schedule: each CTA's row steps, sum(ceil(len / BLOCK_L)) over its SEGS segments,
    repeated over the column blocks."""
    mod = load_example(KERNEL)
    pt = mod.POINTS[0]
    cfg = {"BLOCK_L": 32, "BLOCK_D": 64, "SEGS": 4}
    its = mod.cta_iterations(cfg, pt)
    assert len(its) == mod.grid(cfg, pt)
    lens = mod._lengths_cached(pt["B"], pt["L"], 0).tolist()
    n_dblk = -(-pt["D"] // 64)
    assert sum(its) == n_dblk * sum(-(-n // 32) for n in lens)
    assert its[:n_dblk] == [sum(-(-n // 32) for n in lens[:4])] * n_dblk
