"""examples/embedding_bag.py against its fp64-accumulated torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its bag-size law, its study
sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round5_a.py, the interpreter must be chosen before triton is imported,
so the cases run in a subprocess (this file run as a script:
``python tests/test_examples_round12_c.py embedding_bag``) that prints one JSON line; the
tests assert per case. A second subprocess (``... prefilled_out``) runs cases into an ``out=``
buffer filled with NaN first (some of them a row-strided view of a wider buffer whose extra
columns must stay NaN), so an output row that no CTA writes (an empty bag, the last BLOCK_B
group) is a mismatch rather than whatever torch.empty held, and a stray write shows; it also
checks torch's [bags] offsets form (include_last_offset=False) against the [bags + 1] form,
bit for bit, and torch's default mode ("mean").

Shapes are small and odd: B not a multiple of BLOCK_B and smaller than it (bags past B), D
not a multiple of BLOCK_D and smaller than it (the D mask) as well as a multiple (EVEN_D),
bags longer than BLOCK_I and not multiples of it, empty bags (sum 0, mean 0), a batch of
empty bags only (no indices at all), one large bag among small ones, tiny tables (every row
repeats, Zipf ids) and a weight that is a row-strided view of a wider buffer, int32 as well
as int64 indices, per_sample_weights, fp32 output from fp16 / bf16 tables, both modes and
every dtype.

Tolerance (x max|ref|, absolute, per element): the reference sums in fp64 from the same
rounded weight and per-sample weights, so only the fp32 summation order and the one rounding
to the output dtype differ. bf16 1.5e-2: the interpreter's fp32 -> bf16 cast truncates (up
to one bf16 ulp, 2^-7 relative) and torch's bf16 baseline rounds as it goes; fp16 2e-3 (an
fp16 ulp is 2^-10); fp32 1e-5 (fp32 sums of <= 300 terms).
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
KERNEL = "embedding_bag"
TOL = {"bf16": 1.5e-2, "fp16": 2e-3, "fp32": 1e-5}


def _cfg(bd, bi, bb, w, s):
    return {"BLOCK_D": bd, "BLOCK_I": bi, "BLOCK_B": bb, "num_warps": w, "num_stages": s}


def _pt(B, L, D, V, dtype, mode, psw=False, out=None, zipf=0.0):
    return {"B": B, "L": L, "D": D, "V": V, "dtype": dtype, "out": out or dtype, "mode": mode, "psw": psw,
            "zipf": zipf}


# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        "ragged_b_and_d_mean_bf16": (_pt(37, 5, 100, 50, "bf16", "mean", zipf=1.0), _cfg(64, 4, 4, 2, 1)),
        "even_d_psw_fp32": (_pt(9, 13, 64, 300, "fp32", "sum", psw=True), _cfg(32, 8, 1, 4, 1)),
        "fp16_table_fp32_out": (_pt(20, 7, 48, 1000, "fp16", "sum", out="fp32"), _cfg(64, 16, 2, 4, 2)),
        "long_and_empty_bags_psw_bf16": (_pt(8, 36, 72, 500, "bf16", "sum", psw=True, out="fp32", zipf=1.1),
                                         _cfg(32, 16, 1, 8, 1)),
        "long_and_empty_bags_mean_fp16": (_pt(8, 36, 40, 700, "fp16", "mean"), _cfg(64, 32, 2, 4, 1)),
        "all_empty_mean_fp32": (_pt(5, 0, 24, 10, "fp32", "mean"), _cfg(32, 8, 2, 2, 1)),
        "bags_past_b_fp16": (_pt(3, 9, 130, 200, "fp16", "sum", zipf=0.8), _cfg(64, 8, 8, 4, 1)),
        "strided_weight_int32_fp32": (_pt(11, 17, 96, 400, "fp32", "sum"), _cfg(64, 32, 4, 8, 2)),
        "block_i_wider_than_bags_bf16": (_pt(30, 3, 128, 64, "bf16", "mean", zipf=1.0), _cfg(128, 32, 1, 4, 1)),
    },
}

# sizes that replace bag_sizes' draw in the named cases (summing to B * L)
SIZES = {
    "long_and_empty_bags_psw_bf16": [0, 200, 3, 0, 17, 64, 4, 0],
    "long_and_empty_bags_mean_fp16": [1, 0, 0, 250, 2, 0, 31, 4],
}
INT32 = ("strided_weight_int32_fp32", "bags_past_b_fp16")          # indices and offsets int32

# prefilled_out: cases run into a NaN-filled out= buffer (every row written, nothing else)
PREFILLED = ("ragged_b_and_d_mean_bf16", "long_and_empty_bags_psw_bf16", "all_empty_mean_fp32",
             "bags_past_b_fp16", "fp16_table_fp32_out")
STRIDED_OUT = ("ragged_b_and_d_mean_bf16", "bags_past_b_fp16")     # out a [B, D] view of [B, D + 8]

# configs compiled for each arch at the module's first POINT (BASELINE first)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(128, 16, 1, 4, 1), _cfg(256, 32, 4, 8, 1), _cfg(64, 8, 1, 2, 1), _cfg(256, 32, 4, 2, 1)],
}



def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: given sizes (one large bag, several empty); int32 indices and
    offsets; a weight that is a row-strided view of a wider buffer."""
    import torch

    if name in SIZES:
        sizes = torch.tensor(SIZES[name], dtype=torch.int64)
        assert sizes.numel() == point["B"] and int(sizes.sum()) == point["B"] * point["L"]
        off = torch.zeros(point["B"] + 1, dtype=torch.int64)
        torch.cumsum(sizes, 0, out=off[1:])
        inputs["offsets"] = off
    if name in INT32:
        inputs["indices"] = inputs["indices"].to(torch.int32)
        inputs["offsets"] = inputs["offsets"].to(torch.int32)
    if name == "strided_weight_int32_fp32":
        w = inputs["weight"]
        V, D = w.shape
        wide = torch.randn((V, D + 40), dtype=w.dtype) * 100.0         # columns D.. must not count
        wide[:, :D] = w
        inputs["weight"] = wide[:, :D]
        assert not inputs["weight"].is_contiguous() and inputs["weight"].stride(0) == D + 40


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


def test_torch_offsets_form_and_default_mode():
    """torch's [bags] offsets (include_last_offset=False) give what the [bags + 1] form gives,
    bit for bit; the default mode is torch's "mean"; the output dtype follows out_dtype."""
    res = _results("prefilled_out")["api"]
    assert "error" not in res, res.get("error")
    assert res["last_offset_forms_same"] and res["default_is_mean"] and res["dtypes"], res


def test_cases_cover_every_tunable_value():
    """Each tunable takes at least two values over the cases; the B, D and index tails, empty
    bags, both modes, per_sample_weights, fp32 output, both index dtypes and every dtype are hit."""
    mod = load_example(KERNEL)
    H.assert_tunables_covered(CASES)
    items = CASES[KERNEL].items()
    cases = [pc for _, pc in items]
    assert any(p["B"] % c["BLOCK_B"] for p, c in cases) and any(p["B"] < c["BLOCK_B"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] for p, c in cases) and any(p["D"] < c["BLOCK_D"] for p, c in cases)
    assert any(p["D"] % c["BLOCK_D"] == 0 for p, c in cases)                  # EVEN_D
    assert any(p["L"] > c["BLOCK_I"] and p["L"] % c["BLOCK_I"] for p, c in cases)
    assert any(p["L"] < c["BLOCK_I"] for p, c in cases) and any(p["L"] == 0 for p, _ in cases)
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["mode"] for p, _ in cases} == set(mod.MODES)
    assert any(p["psw"] for p, _ in cases) and any(p["out"] != p["dtype"] for p, _ in cases)
    assert any(p["zipf"] for p, _ in cases) and any(p["V"] < p["B"] * p["L"] for p, _ in cases)
    assert INT32 and all(n in CASES[KERNEL] for n in INT32)
    for name, sizes in SIZES.items():
        c = CASES[KERNEL][name][1]
        assert max(sizes) > 4 * c["BLOCK_I"] and max(sizes) % c["BLOCK_I"] and sizes.count(0) >= 2


def test_bag_sizes_are_realistic():
    """Exactly B * L lookups; skewed (median well below the mean, a long tail up to ~LEN_CAP x the
    mean), ~EMPTY_FRAC empty; deterministic in the seed, different across seeds; make_inputs'
    offsets are their prefix sums; indices stay inside the table, Zipf ids repeat."""
    import torch

    mod = load_example(KERNEL)
    for p in mod.POINTS:
        B, L = p["B"], p["L"]
        sizes = mod.bag_sizes(B, L)
        assert sizes.dtype == torch.int64 and sizes.shape == (B,) and int(sizes.sum()) == B * L
        assert (sizes >= 0).all()
        empty = float((sizes == 0).mean(dtype=torch.float64))
        assert mod.EMPTY_FRAC * 0.5 < empty < mod.EMPTY_FRAC * 2 + 0.01, empty
        assert float(sizes.double().median()) < 0.8 * L
        assert 6 * L < int(sizes.max()) <= 1.2 * mod.LEN_CAP * L
        assert torch.equal(sizes, mod.bag_sizes(B, L))
        assert not torch.equal(sizes, mod.bag_sizes(B, L, seed=1))
    p = _pt(300, 7, 16, 5000, "fp16", "sum", psw=True, zipf=1.0)
    inputs = mod.make_inputs(p, seed=4, device="cpu")
    off, idx = inputs["offsets"], inputs["indices"]
    assert off.dtype == torch.int64 and off.shape == (301,) and int(off[0]) == 0 and int(off[-1]) == 2100
    assert torch.equal(off[1:] - off[:-1], mod.bag_sizes(300, 7, seed=4))
    assert idx.dtype == torch.int64 and idx.shape == (2100,) and 0 <= int(idx.min()) and int(idx.max()) < 5000
    assert idx.unique().numel() < 0.6 * 2100                     # Zipf(1): hot ids repeat
    assert inputs["weight"].shape == (5000, 16) and inputs["weight"].dtype == torch.float16
    psw = inputs["per_sample_weights"]
    assert psw.shape == (2100,) and psw.dtype == torch.float16 and float(psw.min()) >= 0.09
    u = mod.make_inputs(_pt(300, 7, 16, 5000, "fp32", "sum"), seed=4, device="cpu")["indices"]
    assert u.unique().numel() > 0.75 * 2100 and u.unique().numel() <= 2100          # uniform ids


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (>= 40), BASELINE among them, every tunable but num_stages
    swept over >= 2 values; at every POINT each config is valid, its example_args are the
    point's bytes and it fills the GPU with >= 132 CTAs. (Every config was compiled for sm_90
    with triton 3.6.0 at every point: all compile, no spills.)"""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in SWEEP_AXES.items() if k != "num_stages") and SWEEP_AXES["num_stages"] == [1]
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert len(cfgs) == 54 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            args = mod.example_args(c, p)
            assert H.meta_nbytes(args) == mod.bytes_moved(p)
            assert mod.grid(c, p) >= 132 and mod.loop_iterations(c, p) >= 1


def test_launcher_hooks_agree_with_shapes():
    """At every default point: the meta tensors of example_args are exactly the bytes
    bytes_moved counts (indices, offsets, per-sample weights read once, one weight row per
    lookup, out written once), grid and loop_iterations are the tiling of those shapes."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "embedding_bag", "bag_sizes"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["mode"] for p in mod.POINTS} == set(mod.MODES) and any(p["psw"] for p in mod.POINTS)
    assert any(p["out"] != p["dtype"] for p in mod.POINTS)
    assert any(p["D"] == 128 and p["V"] == 2**20 and p["B"] == 65536 for p in mod.POINTS)     # DLRM
    assert any(p["D"] == 4096 for p in mod.POINTS)
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            B, L, D, V = p["B"], p["L"], p["D"], p["V"]
            e = 4 if p["dtype"] == "fp32" else 2
            eo = 4 if p["out"] == "fp32" else 2
            nnz = B * L
            assert 20 <= L <= 80 and 2048 <= B <= 65536
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            want = nnz * 8 + (B + 1) * 8 + (nnz * e if p["psw"] else 0) + nnz * D * e + B * D * eo
            assert H.meta_nbytes(args) == mod.bytes_moved(p) == want
            assert nnz * D * e > 10 * 50 * 10**6 and V * D * e > 5 * 50 * 10**6    # >10x, >5x the 50 MB L2
            assert args["IDX"].shape == (nnz,) and args["OFF"].shape == (B + 1,)
            assert args["W"].shape == (nnz, D) and args["W"].element_size() == e
            assert args["OUT"].shape == (B, D) and args["OUT"].element_size() == eo
            assert (args["PSW"] is not None) == p["psw"] == args["HAS_PSW"]
            assert (args["B"], args["D"], args["stride_w"], args["stride_o"]) == (B, D, D, D)
            assert args["MEAN"] == (p["mode"] == "mean") and args["EVEN_D"] == (D % cfg["BLOCK_D"] == 0)
            assert (args["BLOCK_D"], args["BLOCK_I"], args["BLOCK_B"]) == \
                (cfg["BLOCK_D"], cfg["BLOCK_I"], cfg["BLOCK_B"])
            assert mod.grid(cfg, p) == triton.cdiv(B, cfg["BLOCK_B"]) * triton.cdiv(D, cfg["BLOCK_D"])
            sizes = mod.bag_sizes(B, L)
            steps = int(((sizes + cfg["BLOCK_I"] - 1) // cfg["BLOCK_I"]).sum())
            assert mod.loop_iterations(cfg, p) == triton.cdiv(steps, triton.cdiv(B, cfg["BLOCK_B"]))
            assert mod.flops(p) == nnz * D * (2 if p["psw"] else 1) + (B * D if p["mode"] == "mean" else 0)
    assert mod.example_args(mod.BASELINE, mod.POINTS[0])["OUT"].dtype == torch.float32


def test_hooks_on_small_points_and_inputs():
    import torch

    mod = load_example(KERNEL)
    p = _pt(37, 5, 100, 50, "bf16", "mean")
    c = _cfg(64, 4, 4, 2, 1)
    assert mod.grid(c, p) == 10 * 2
    sizes = mod.bag_sizes(37, 5)
    assert mod.loop_iterations(c, p) == -(-int(((sizes + 3) // 4).sum()) // 10)
    assert mod.bytes_moved(p) == 185 * 8 + 38 * 8 + 185 * 100 * 2 + 37 * 100 * 2
    q = _pt(37, 5, 100, 50, "fp16", "sum", psw=True, out="fp32")
    assert mod.bytes_moved(q) == 185 * 8 + 38 * 8 + 185 * 2 + 185 * 100 * 2 + 37 * 100 * 4
    assert mod.flops(p) == 185 * 100 + 37 * 100 and mod.flops(q) == 2 * 185 * 100
    args = mod.example_args(c, p)
    assert not args["EVEN_D"] and args["MEAN"] and args["PSW"] is None and args["W"].dtype == torch.bfloat16
    inputs = mod.make_inputs(q, device="cpu")
    assert inputs["mode"] == "sum" and inputs["out_dtype"] == torch.float32
    ref = mod.reference(inputs)
    assert ref.shape == (37, 100) and ref.dtype == torch.float32
    off, idx, w, psw = inputs["offsets"], inputs["indices"], inputs["weight"], inputs["per_sample_weights"]
    for b in (0, 5, 36):
        lo, hi = int(off[b]), int(off[b + 1])
        want = (w[idx[lo:hi]].float() * psw[lo:hi].float()[:, None]).sum(0)
        assert torch.allclose(ref[b], want, atol=1e-4)
    base = mod.torch_baseline(inputs)
    assert base.shape == (37, 100) and base.dtype == torch.float32
    inputs["per_sample_weights"], inputs["mode"] = None, "mean"
    lo, hi = int(off[5]), int(off[6])
    want = w[idx[lo:hi]].float().mean(0) if hi > lo else torch.zeros(100)
    assert torch.allclose(mod.reference(inputs)[5], want, atol=1e-5)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(6, 4, 32, 40, "fp16", "sum", psw=True), device="cpu")
    idx, off, w, psw = inputs["indices"], inputs["offsets"], inputs["weight"], inputs["per_sample_weights"]
    with pytest.raises(ValueError, match="BLOCK_I=12"):
        mod.embedding_bag(idx, w, off, "sum", include_last_offset=True, BLOCK_I=12)
    with pytest.raises(ValueError, match="BLOCK_B=3"):
        mod.embedding_bag(idx, w, off, "sum", include_last_offset=True, BLOCK_B=3)
    with pytest.raises(ValueError, match="BLOCK_D=0"):
        mod.embedding_bag(idx, w, off, "sum", include_last_offset=True, BLOCK_D=0)
    with pytest.raises(ValueError, match="mode 'max'"):
        mod.embedding_bag(idx, w, off, "max")
    with pytest.raises(ValueError, match=r"weight \[num_embeddings, D\]"):
        mod.embedding_bag(idx, w[0], off)
    with pytest.raises(ValueError, match="not fp16, bf16 or fp32"):
        mod.embedding_bag(idx, w.double(), off)
    with pytest.raises(ValueError, match="1-D int32 / int64 indices"):
        mod.embedding_bag(idx.view(2, -1), w, off)
    with pytest.raises(ValueError, match="offsets must be 1-D"):
        mod.embedding_bag(idx, w, off.int())
    with pytest.raises(ValueError, match="offsets must be 1-D"):
        mod.embedding_bag(idx, w, off[:0], include_last_offset=True)
    with pytest.raises(ValueError, match="only supported with mode 'sum'"):
        mod.embedding_bag(idx, w, off, "mean", psw, include_last_offset=True)
    with pytest.raises(ValueError, match=r"per_sample_weights must be torch.float16 \[24\]"):
        mod.embedding_bag(idx, w, off, "sum", psw.float(), include_last_offset=True)
    with pytest.raises(ValueError, match="out_dtype"):
        mod.embedding_bag(idx, w, off, "sum", include_last_offset=True, out_dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"out must be a \[6, 32\]"):
        mod.embedding_bag(idx, w, off, "sum", include_last_offset=True, out=torch.empty((6, 32)))
    with pytest.raises(ValueError, match=r"out must be a \[6, 32\]"):
        mod.embedding_bag(idx, w, off, "sum", include_last_offset=True,
                          out=torch.empty((32, 6), dtype=torch.float16).T)
    with pytest.raises(ValueError, match="fp8"):
        mod.make_inputs(_pt(4, 2, 8, 10, "fp8", "sum"), device="cpu")
    with pytest.raises(ValueError, match="only supported with mode 'sum'"):
        mod.make_inputs(_pt(4, 2, 8, 10, "fp16", "mean", psw=True), device="cpu")
    with pytest.raises(ValueError, match="out 'bf16'"):
        mod.bytes_moved(_pt(4, 2, 8, 10, "fp16", "sum", out="bf16"))
    with pytest.raises(ValueError, match="mode 'max'"):
        mod.flops(_pt(4, 2, 8, 10, "fp16", "max"))


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
    """BASELINE at the other two points (bf16 mean, fp32 with per_sample_weights) and a D tail
    (EVEN_D false)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    tail = dict(mod.POINTS[2], D=200)
    for p in mod.POINTS[1:] + [tail]:
        args = mod.example_args(mod.BASELINE, p)
        assert args["EVEN_D"] == (p is not tail)
        res = compile_kernel(mod._kernel, args=args, arch=arch, num_warps=4, num_stages=1)
        assert res.status == "ok", f"{p} on {arch}: {res.status}: {res.message}"


@pytest.mark.slow
def test_num_stages_leaves_the_cubin_alone(shared_cache):
    """No dot and no pipelined load: num_stages 1, 2, 3 compile to the same cubin for sm_90 (why
    SWEEP_AXES holds num_stages at 1)."""
    SWEEP_AXES = H.study_sweeps([KERNEL], "held-out-12")[KERNEL][2]     # the study's sweep (scripts/rank_study.py SWEEPS)
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    p = mod.POINTS[2]
    for cfg in (mod.BASELINE, _cfg(256, 32, 4, 8, 1)):
        cubins = {compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=s, keep_ir=True).cubin for s in (1, 2, 3)}
        assert len(cubins) == 1 and None not in cubins, cfg


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= buffer, and the API
    checks ("api"); one JSON line."""
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
            buf = torch.full((B, D + pad), float("nan"), dtype=inputs["out_dtype"])
            out = buf[:, :D]
            got = mod.embedding_bag(inputs["indices"], inputs["weight"], inputs["offsets"], point["mode"],
                                    inputs["per_sample_weights"], True, out=out, out_dtype=inputs["out_dtype"],
                                    **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
            results[name]["pad_untouched"] = bool(torch.isnan(buf[:, D:]).all())
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    try:
        inputs = mod.make_inputs(_pt(13, 6, 40, 90, "fp16", "mean"), seed=2, device="cpu")
        idx, w, off = inputs["indices"], inputs["weight"], inputs["offsets"]
        kw = dict(BLOCK_D=32, BLOCK_I=4, BLOCK_B=2, num_warps=2)
        full = mod.embedding_bag(idx, w, off, "mean", include_last_offset=True, **kw)
        short = mod.embedding_bag(idx, w, off[:-1], "mean", include_last_offset=False, **kw)
        default = mod.embedding_bag(idx, w, off[:-1], **kw)
        f32 = mod.embedding_bag(idx, w, off[:-1], "sum", out_dtype=torch.float32, **kw)
        results["api"] = {"last_offset_forms_same": torch.equal(full, short),
                          "default_is_mean": torch.equal(default, full),
                          "dtypes": full.dtype == torch.float16 and f32.dtype == torch.float32}
    except Exception as exc:
        results["api"] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled_out":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
