"""examples/gather_cache_dequant.py (gather a paged KV cache into a contiguous bf16 buffer,
dequantising fp8 e4m3 with a per-tensor scale or passing bf16 through: vLLM's
gather_and_maybe_dequant_cache) against its fp64 torch reference on the CPU through Triton's
interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round15_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python tests/test_examples_round19_c.py
gather_cache_dequant``) that prints one JSON line; the tests assert per case. A second subprocess
(``... prefilled``) gathers into a NaN-filled ``out=`` buffer (a row-strided view of a wider one):
a row no CTA writes stays NaN and fails the comparison.

Every case's cache has its blocks that no sequence uses set to NaN, so a token that reads a
wrong page (a bad block-table index, a wrong sequence from the binary search) is a NaN mismatch.
Shapes are small, odd and ragged: empty sequences (len_min 0) including a first and a last one,
B = 1 (a search of zero steps), sequences shorter than one tile, tiles straddling sequences
(FLAT=1), CTAs past a short sequence's end (FLAT=0: no iteration), a CTA holding fewer tiles than
TILES_PER_CTA, D not a multiple of BLOCK_D (576 = 512 + 64 shrunk to 72 / 40; masked columns)
and a multiple, BLOCK_D above D, pages of 1, 4, 8 and 16 tokens, a cache whose slots are strided
(a D-column view of a wider cache); both dtypes, both layouts, BLOCK_T 1-32, BLOCK_D 16-64,
TILES_PER_CTA 1-4, num_warps 1-8 and num_stages 1-3.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same cache
values. bf16 passthrough is a copy: exact (error 0). fp8: e4m3 -> fp32 is exact and the product
with the fp32 scale errs 2^-24 relative, then one rounding to bf16: half an ulp on the GPU, up
to one ulp with the interpreter's truncating cast, 2^-7 = 7.8e-3 of an element <= max|ref|. The
harness's bf16 1e-2 bounds both; torch_baseline (the same product in eager fp32, rounded once)
stays inside it too. Measured: kernel max error <= 0.7 % of max|ref| (fp8), 0 (bf16); the
baseline <= 0.2 % / 0.
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
KERNEL = "gather_cache_dequant"
TOL = {"fp8": 1e-2, "bf16": 1e-2}     # the output is bf16 in both
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bt, bd, tiles, flat, w, st):
    return {"BLOCK_T": bt, "BLOCK_D": bd, "TILES_PER_CTA": tiles, "FLAT": flat, "num_warps": w, "num_stages": st}


def _pt(B, lo, hi, D, page, dtype, seed):
    return {"B": B, "len_min": lo, "len_max": hi, "D": D, "page": page, "dtype": dtype, "len_seed": seed,
            "spare": 0.5}


# case name -> (point, cfg); the comments give the lengths (random.Random(len_seed))
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # lens [15, 19, 6, 25, 30]: flat tiles of 8 straddle sequences, 2 tiles a CTA, D 72 = 2 x 32 + 8
        "flat_straddle_fp8": (_pt(5, 0, 40, 72, 8, "fp8", 4), _cfg(8, 32, 2, 1, 4, 2)),
        # the same per sequence: CTAs past the short ones' ends run nothing
        "per_seq_fp8": (_pt(5, 0, 40, 72, 8, "fp8", 4), _cfg(8, 32, 2, 0, 2, 1)),
        # 9 sequences of 0-12 (empty ones, shorter than a tile), page 4, tiles of 16 over 4 a CTA
        "flat_empty_short_bf16": (_pt(9, 0, 12, 40, 4, "bf16", 7), _cfg(16, 16, 4, 1, 1, 3)),
        "per_seq_empty_short_bf16": (_pt(9, 0, 12, 40, 4, "bf16", 7), _cfg(16, 64, 4, 0, 8, 2)),
        # B = 1 (zero search steps), page 16, D 64 = BLOCK_D (no column mask)
        "single_seq_flat_fp8": (_pt(1, 50, 70, 64, 16, "fp8", 2), _cfg(32, 64, 1, 1, 4, 3)),
        # page 1 (every token its own block), BLOCK_T 1 (one token a tile), BLOCK_D 64 > D 40
        "page1_token_tiles_fp8": (_pt(4, 1, 9, 40, 1, "fp8", 5), _cfg(1, 64, 3, 0, 1, 1)),
        # 17 sequences of 0-20, flat, 4 tiles of 4: a CTA's tiles cross several sequences
        "many_ragged_flat_bf16": (_pt(17, 0, 20, 48, 8, "bf16", 11), _cfg(4, 16, 4, 1, 2, 2)),
        # strided cache slots (a D-column view of a wider cache), per sequence
        "strided_cache_fp8": (_pt(3, 10, 45, 72, 16, "fp8", 6), _cfg(16, 32, 1, 0, 4, 2)),
    },
}
STRIDED = "strided_cache_fp8"
PREFILLED = ("flat_straddle_fp8", "per_seq_empty_short_bf16", "many_ragged_flat_bf16")

# compiled at the module's first POINT (sm_90: BASELINE first; all fit sm_120's 99 KiB)
COMPILE_CFGS = [_cfg(32, 128, 1, 1, 4, 2), _cfg(64, 256, 4, 0, 8, 2), _cfg(16, 64, 4, 1, 4, 2),
                _cfg(64, 128, 1, 0, 4, 2)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Poison the cache blocks no sequence reads with NaN; the strided case views a wider cache."""
    import torch

    cache, bt, cu = inputs["cache"], inputs["block_table"], inputs["cu_seq_lens"]
    page = cache.shape[1]
    used = set()
    for b in range(bt.shape[0]):
        n = int(cu[b + 1] - cu[b])
        used |= set(bt[b, :-(-n // page)].tolist())
    nan = torch.full(cache.shape[1:], float("nan")).to(cache.dtype)
    for k in range(cache.shape[0]):
        if k not in used:
            cache[k] = nan
    if name == STRIDED:
        nb, pg, D = cache.shape
        wide = torch.full((nb, pg, D + 24), float("nan")).to(cache.dtype)
        wide[:, :, :D] = cache
        inputs["cache"] = wide[:, :, :D]
        assert inputs["cache"].stride() == (pg * (D + 24), D + 24, 1)


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results(KERNEL)[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    point = CASES[KERNEL][name][0]
    mod = load_example(KERNEL)
    assert res["shape"] == [sum(mod.seq_lens(point)), point["D"]]
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{name} {what}")
    if point["dtype"] == "bf16":
        assert res["max_err"] == 0.0            # a passthrough copy is exact


@pytest.mark.parametrize("name", PREFILLED)
def test_every_row_written_into_out(name):
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")


def test_cases_cover_every_code_path():
    """Each tunable at >= 2 values, both dtypes and layouts, masked and unmasked columns, empty
    sequences, B = 1, a flat tile spanning two sequences, idle CTAs (FLAT=0), a CTA with fewer
    tiles than TILES_PER_CTA."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {c["FLAT"] for _, c in cases} == {0, 1}
    assert {p["D"] % c["BLOCK_D"] == 0 for p, c in cases} == {True, False}
    assert any(0 in mod.seq_lens(p) for p, _ in cases) and any(p["B"] == 1 for p, _ in cases)
    straddle = idle = partial = False
    for p, c in cases:
        lens = mod.seq_lens(p)
        its = mod.cta_iterations(c, p)
        dch = -(-p["D"] // c["BLOCK_D"])
        idle |= 0 in its
        partial |= any(0 < i < c["TILES_PER_CTA"] * dch for i in its)
        if c["FLAT"]:
            bounds = list(itertools.accumulate(lens))
            straddle |= any(b % c["BLOCK_T"] for b in bounds[:-1] if b)
    assert straddle and idle and partial


def test_hooks_agree_with_shapes():
    """At every default point and a few configs: example_args has a launch's shapes and types (meta
    tensors), the grid matches the layout, cta_iterations has one entry a CTA summing to the
    token tiles x D chunks, loop_iterations is a full CTA's, bytes_moved counts each row once;
    inputs < 4 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "gather_cache_dequant"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels")
    assert len(mod.POINTS) == 3 and {p["dtype"] for p in mod.POINTS} == {"fp8", "bf16"}
    for cfg in [mod.BASELINE] + COMPILE_CFGS:
        for p in mod.POINTS:
            lens = mod.seq_lens(p)
            total, B, D = sum(lens), p["B"], p["D"]
            args = mod.example_args(cfg, p)
            # the block table and cu_seq_lens with data (rank reads the gathered pages from them), the rest on meta
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for k, v in args.items()
                       if k not in ("BT", "CU"))
            assert args["CU"].tolist() == [0] + list(itertools.accumulate(lens))
            assert args["BT"].device.type == "cpu" and int(args["BT"].max()) < args["CACHE"].shape[0]
            assert args["CACHE"].shape[1:] == (p["page"], D) and args["OUT"].shape == (total, D)
            assert args["CACHE"].dtype == (torch.float8_e4m3fn if p["dtype"] == "fp8" else torch.bfloat16)
            assert args["OUT"].dtype == torch.bfloat16 and args["IS_FP8"] == (p["dtype"] == "fp8")
            assert args["BT"].shape == (B, -(-max(lens) // p["page"])) and args["CU"].shape == (B + 1,)
            assert args["CACHE"].shape[0] >= sum(-(-n // p["page"]) for n in lens)
            assert args["total_tokens"] == total and args["B"] == B and 2 ** args["SEARCH_STEPS"] >= B
            assert (args["stride_cb"], args["stride_cs"], args["stride_ot"]) == (p["page"] * D, D, D)
            assert H.meta_nbytes(args) < 4 * 2**30
            g = mod.grid(cfg, p)
            chunk = cfg["BLOCK_T"] * cfg["TILES_PER_CTA"]
            assert g == ((-(-total // chunk),) if cfg["FLAT"] else (-(-max(lens) // chunk), B))
            its = mod.cta_iterations(cfg, p)
            dch = -(-D // cfg["BLOCK_D"])
            tiles = -(-total // cfg["BLOCK_T"]) if cfg["FLAT"] else sum(-(-n // cfg["BLOCK_T"]) for n in lens)
            assert len(its) == (g[0] if cfg["FLAT"] else g[0] * g[1]) and sum(its) == tiles * dch
            assert mod.loop_iterations(cfg, p) == max(its) == cfg["TILES_PER_CTA"] * dch
            el = 1 if p["dtype"] == "fp8" else 2
            assert total * D * (el + 2) <= mod.bytes_moved(p) < total * D * (el + 2) * 1.01


def test_small_inputs_and_hooks():
    """make_inputs: the lengths, distinct physical pages a sequence, the seed's; reference and
    baseline shapes; a zero-token batch launches nothing."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(6, 0, 30, 40, 4, "fp8", 3)
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    lens = mod.seq_lens(p)
    cu = inputs["cu_seq_lens"]
    assert cu.dtype == torch.int32 and cu.tolist() == [0] + list(itertools.accumulate(lens))
    pages = [inputs["block_table"][b, :-(-n // 4)].tolist() for b, n in enumerate(lens)]
    flat = [x for pg in pages for x in pg]
    assert len(set(flat)) == len(flat) and flat != sorted(flat)
    assert inputs["cache"].dtype == torch.float8_e4m3fn and 0.5 < float(inputs["cache"].float().std()) < 8
    ref = mod.reference(inputs)
    assert ref.shape == (sum(lens), 40) and ref.dtype == torch.float32
    assert mod.torch_baseline(inputs).dtype == torch.bfloat16
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["block_table"], inputs["block_table"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["block_table"], inputs["block_table"])
    empty = mod.gather_cache_dequant(inputs["cache"], inputs["block_table"][:1], torch.zeros(2, dtype=torch.int32),
                                     inputs["scale"])
    assert empty.shape == (0, 40)


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(3, 1, 9, 32, 4, "fp8", 1), device="cpu")
    c, bt, cu, s = inputs["cache"], inputs["block_table"], inputs["cu_seq_lens"], inputs["scale"]
    with pytest.raises(ValueError, match="BLOCK_T=24"):
        mod.gather_cache_dequant(c, bt, cu, s, BLOCK_T=24)
    with pytest.raises(ValueError, match="TILES_PER_CTA=0"):
        mod.gather_cache_dequant(c, bt, cu, s, TILES_PER_CTA=0)
    with pytest.raises(ValueError, match="FLAT=2"):
        mod.gather_cache_dequant(c, bt, cu, s, FLAT=2)
    with pytest.raises(ValueError, match="scale"):
        mod.gather_cache_dequant(c, bt, cu, None)
    with pytest.raises(ValueError, match="int32"):
        mod.gather_cache_dequant(c, bt.long(), cu, s)
    with pytest.raises(ValueError, match="float8_e4m3fn or bfloat16"):
        mod.gather_cache_dequant(c.float(), bt, cu, s)
    with pytest.raises(ValueError, match="dtype 'fp16'"):
        mod.example_args(mod.BASELINE, dict(mod.POINTS[0], dtype="fp16"))


def test_sweep_fits_the_points():
    """The study sweep: 72 configs (BLOCK_T 16-64 x BLOCK_D 64-256 x TILES_PER_CTA 1 / 4 x both
    layouts x 4 / 8 warps; num_stages fixed at 2: the loads are plain, the sm_90 cubin is the same
    for num_stages 1, 2 and 3), BASELINE among them; at every POINT each config is valid and
    launches >= 132 CTAs with work (fewest: 390, the GQA point flat at 256 tokens a CTA). (Every
    config was compiled for sm_90 with triton 3.6.0 at every point: all 216 compile in 0.1-3.4 s
    each (~2 min in all); registers 16-237 (the most at BLOCK_T 64 x BLOCK_D 256 on 4 warps, 128
    values a thread: 168-237); shared memory 0-8 KiB (a layout conversion of the fp8 tile, fp8
    points only); 6 of the 216 keep an 8-byte stack with 2 spill stores (FLAT=1, TILES_PER_CTA 4,
    fp8: 16 x 128 and 64 x 64 on 4 warps, 32 x 128 on 8, at 32-40 registers), the rest none.)"""
    configs, points, axes = H.study_sweeps([KERNEL], "held-out-19")[KERNEL]
    mod = load_example(KERNEL)
    assert set(axes) == set(mod.TUNABLES)
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs and len(configs) == len(cfgs)
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            working = sum(1 for it in mod.cta_iterations(c, p) if it)
            assert working >= H200_SMS, (p, c)
            assert c["BLOCK_T"] * c["BLOCK_D"] * 4 <= H200_SMEM_PER_BLOCK   # a full fp32 tile, far inside
    # the points differ: FLAT=0's idle CTAs (measured 38 %, 23 %, 47 % at BASELINE) are most at the
    # short ragged point, fewest at the narrow-range GQA one
    idle = []
    for p in mod.POINTS:
        its = mod.cta_iterations(dict(mod.BASELINE, FLAT=0), p)
        idle.append(sum(1 for i in its if i == 0) / len(its))
    assert idle[2] > 0.4 and idle[1] < 0.25 and idle[2] == max(idle), idle


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90", "sm_120"])
def test_example_compiles(shared_cache, arch):
    """BASELINE and three more (both layouts, 16-64 tokens, 64-256 columns, 4 / 8 warps) compile
    inside the arch's shared memory, at every point (fp8 and bf16 caches), without spills on sm_90
    (on sm_120 ptxas may keep 2 spill stores, an 8-byte stack, in an fp8 compile; sm_90 with
    triton 3.6 shows the same in 6 flat multi-tile sweep configs)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    limit = H200_SMEM_PER_BLOCK if arch == "sm_90" else SM120_SMEM_PER_BLOCK
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, arch):
        assert res.status == "ok", f"{cfg} on {arch}: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= limit
        # ptxas may keep an 8-byte stack (2 spill stores) in an fp8 compile: on sm_120 at any of these
        # configs, on sm_90 only in flat multi-tile ones (none of these four)
        assert res.n_spills <= (2 if arch == "sm_120" else 0), (cfg, res.n_spills)
    for p in mod.POINTS[1:]:
        cfg = COMPILE_CFGS[1]
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0 and res.shared <= limit, f"{p} on {arch}: {res.message}"


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled out= view; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name), device="cpu")
            _prepare(name, point, inputs)
            total, D = int(inputs["cu_seq_lens"][-1]), point["D"]
            out = torch.full((total + 2, D + 8), float("nan"), dtype=torch.bfloat16)[1:total + 1, 3:D + 3]
            got = mod.gather_cache_dequant(inputs["cache"], inputs["block_table"], inputs["cu_seq_lens"],
                                           inputs["scale"], out=out, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == out.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
