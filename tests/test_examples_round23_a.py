"""examples/patchify_nchw.py (vision-transformer patchify of NCHW images into [B, N, C P P] tokens,
optionally fused with the per-channel (x - mean) * inv_std normalization and a cast: a
[BLOCK_N patches, P_PAD, P_PAD] tile per channel step, TILES tiles a CTA) against torch's
reshape / permute patchify on the CPU through Triton's interpreter, its launcher hooks against
the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round22_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round23_a.py patchify_nchw``) that prints one JSON line.
The interpreter's fp32 -> bf16 conversion truncates; the subprocess replaces it with torch's
round-to-nearest-even (the GPU's cvt.rn), and under triton 3.6 with numpy >= 2.3 it lets the
channel loop's runtime bound be read as an int (see example_harness.patch_interpreter_index).

Shapes are small, odd and ragged: P = 14 (padded to 16: the i, j < P masks), P = 16 / 8 / 4
(exact: no in-patch mask) and P = 3 and 1; the patch tail (B N not a multiple of BLOCK_N x
TILES: a last CTA with a partial tile and tiles wholly past the end) and EVEN_N (no mask at
all when P is a power of two); H and W not multiples of P (the rows and columns past the last
whole patch dropped, as the patch embedding's strided conv drops them); C = 1, 2, 3, 4; x a
channel slice of a wider tensor with rows pitched wider than W (read in place) and x with a
non-unit column stride (made contiguous); every input and output dtype, normalized and plain;
BLOCK_N 2-16, TILES 1-8, 1-8 warps, num_stages 1 / 2.

Per case: launch's output against the fp32 reference as the GPU study's gate sees it (the
harness's tolerance x max|ref|), its shape, dtype and contiguity, and bit-equal to
torch_baseline (the same fp32 subtract and multiply, rounded once to the output dtype; a plain
patchify is a copy or a single cast).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "patchify_nchw"
ROLE = "held-out-23"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["patchify_nchw"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [2, 4, 8, 16], "TILES": [1, 2, 4, 8], "num_warps": [2, 4, 8], "num_stages": [1]}


def _cfg(bn, tiles, w=4, st=1):
    return {"BLOCK_N": bn, "TILES": tiles, "num_warps": w, "num_stages": st}


def _pt(B, C, H, W, P, x_dtype="fp32", dtype="fp32", normalize=False):
    return {"B": B, "C": C, "H": H, "W": W, "P": P, "x_dtype": x_dtype, "dtype": dtype, "normalize": normalize}


# case -> (point, cfg); comments: patches (B x GH x GW), patches a CTA (BLOCK_N x TILES), CTAs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # P 14 (padded), W 44 = 3 x 14 + 2 dropped columns; 2 x 2 x 3 = 12 patches, 8 a CTA: 2 CTAs,
        # the second's first tile full, its second wholly past the end; fp32 -> bf16 normalized
        "p14_ragged_norm_fp32_bf16": (_pt(2, 3, 28, 44, 14, "fp32", "bf16", True), _cfg(4, 2, 4)),
        # P 16 exact, 3 x 2 x 3 = 18 patches, 2 a CTA: 9 CTAs, EVEN_N -> the mask-free path; fp16 copy
        "p16_even_plain_fp16": (_pt(3, 2, 32, 48, 16, "fp16", "fp16"), _cfg(2, 1, 2)),
        # P 3 (padded to 4), C 1, H 10 = 3 x 3 + 1 dropped row; 3 x 3 x 2 = 18 patches, 16 a CTA:
        # 2 CTAs, the second with 2; bf16 -> fp32 normalized
        "p3_c1_norm_bf16_fp32": (_pt(3, 1, 10, 6, 3, "bf16", "fp32", True), _cfg(16, 1, 8)),
        # P 8 exact, C 4; 2 x 3 x 2 = 12 patches, 4 x 3 a CTA: 1 CTA (EVEN_N), TILES 3, one warp
        "p8_c4_even_plain_bf16": (_pt(2, 4, 24, 16, 8, "bf16", "bf16"), _cfg(4, 3, 1, 2)),
        # P 14 with EVEN_N (8 patches, 2 x 4 a CTA): only the in-patch mask; fp16 normalized, 8 warps
        "p14_even_norm_fp16": (_pt(2, 3, 28, 28, 14, "fp16", "fp16", True), _cfg(2, 4, 8)),
        # x the channels 1:4 of a 5-channel tensor with rows 27 wide (read in place: strides
        # (5 * 12 * 27, 12 * 27, 27, 1)), P 4: 2 x 3 x 5 = 30 patches, 8 x 8 a CTA: one CTA, tiles
        # 4-7 wholly past the end; fp32 -> fp16 plain (a cast)
        "p4_sliced_cast_fp32_fp16": (_pt(2, 3, 12, 20, 4, "fp32", "fp16"), _cfg(8, 8, 2)),
        # x [B, C, H, W] a transposed view (column stride H: the launcher makes it contiguous),
        # H 48 x W 34 (2 columns dropped), P 16: 2 x 3 x 2 = 12 patches, 16 x 2 a CTA: 1 CTA, its
        # first tile 12 of 16 and its second past the end; bf16 -> fp16 normalized
        "p16_transposed_norm_bf16_fp16": (_pt(2, 3, 48, 34, 16, "bf16", "fp16", True), _cfg(16, 2, 4)),
        # P 1 (P_PAD 1: a tile of 16 single pixels), 3 x 5 x 3 = 45 patches, 16 x 4 a CTA: 1 CTA;
        # fp16 -> fp32 plain, 2 warps (replicated lanes in a 16-element tile), num_stages 2
        "p1_plain_fp16_fp32": (_pt(3, 3, 5, 3, 1, "fp16", "fp32"), _cfg(16, 4, 2, 2)),
    },
}
SLICED, TRANSPOSED = "p4_sliced_cast_fp32_fp16", "p16_transposed_norm_bf16_fp16"

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(4, 2, 4), _cfg(16, 8, 2), _cfg(2, 1, 8), _cfg(8, 4, 4)]
SM120_CFGS = [_cfg(4, 2, 4), _cfg(16, 1, 8)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """SLICED: x the channels 1:1+C of a 5-channel tensor whose rows are 27 wide (x's first W
    columns); TRANSPOSED: x the transpose of a contiguous [B, C, W, H] tensor (column stride H)."""
    import torch

    x = inputs["x"]
    B, C, Hh, Ww = x.shape
    if name == SLICED:
        wide = torch.full((B, C + 2, Hh, 27), 9.0, dtype=x.dtype)
        wide[:, 1:1 + C, :, :Ww] = x
        inputs["x"] = wide[:, 1:1 + C, :, :Ww]
    if name == TRANSPOSED:
        inputs["x"] = x.transpose(2, 3).contiguous().transpose(2, 3)


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


def _n_patches(p) -> int:
    return p["B"] * (p["H"] // p["P"]) * (p["W"] // p["P"])


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["B"], _n_patches(p) // p["B"], p["C"] * p["P"] ** 2]
    assert res["dtype"] == p["dtype"] and res["contiguous"] is True, res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["n_differ_baseline"] == 0, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == SLICED:
        assert res["x_strides"] == [5 * 12 * 27, 12 * 27, 27, 1], res
    if name == TRANSPOSED:
        assert res["x_strides"][3] == p["H"], res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values (the swept ranges bracketed); every input and output dtype;
    normalized and plain; P padded and exact; the patch tail (a partial tile and tiles past the
    end) and EVEN_N (the mask-free path too); dropped rows and columns; C = 1 and 3."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["x_dtype"] for p, _ in cases} == set(mod.DTYPES) == {p["dtype"] for p, _ in cases}
    assert {p["normalize"] for p, _ in cases} == {True, False}
    assert {p["x_dtype"] == p["dtype"] for p, _ in cases} == {True, False}
    pow2 = lambda v: v & (v - 1) == 0          # noqa: E731
    ev = [(p, c, _n_patches(p) % (c["BLOCK_N"] * c["TILES"]) == 0) for p, c in cases]
    assert {(pow2(p["P"]), even) for p, _, even in ev} == {(True, True), (True, False), (False, True), (False, False)}
    # a last CTA with a partial tile, and one with tiles wholly past the end
    per = [(p, c, _n_patches(p) % (c["BLOCK_N"] * c["TILES"])) for p, c in cases]
    assert any(rem % c["BLOCK_N"] for _, c, rem in per)
    assert any(rem and c["BLOCK_N"] * c["TILES"] - rem >= c["BLOCK_N"] for _, c, rem in per)
    assert any(p["H"] % p["P"] for p, _ in cases) and any(p["W"] % p["P"] for p, _ in cases)
    assert {14, 16} <= {p["P"] for p, _ in cases}
    assert any(p["C"] == 1 for p, _ in cases) and any(p["C"] == 3 for p, _ in cases)
    assert any(mod.grid(c, p)[0] > 1 for p, c in cases)
    for k in ("BLOCK_N", "TILES", "num_warps"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the derived P_PAD / NORMALIZE / EVEN_N, the grid and the channel steps; bytes_moved /
    flops; inputs < 4 GB; 100 MB - 2 GB of traffic (roughly 20 us - 1 ms)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "patchify"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 1
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, C, Hh, Ww, P = p["B"], p["C"], p["H"], p["W"], p["P"]
        GH, GW = Hh // P, Ww // P
        n, K = B * GH * GW, C * P * P
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["X"].shape == (B, C, Hh, Ww) and a["X"].dtype == dts[p["x_dtype"]] and a["X"].is_contiguous()
            assert a["OUT"].shape == (B, GH * GW, K) and a["OUT"].dtype == dts[p["dtype"]] and a["OUT"].is_contiguous()
            if p["normalize"]:
                assert a["MEAN"].shape == (C,) and a["MEAN"].dtype == torch.float32
                assert a["INV_STD"].shape == (C,) and a["INV_STD"].dtype == torch.float32
            else:
                assert a["MEAN"] is a["OUT"] and a["INV_STD"] is a["OUT"]
            assert (a["C"], a["n_patches"], a["patches_per_image"], a["GW"]) == (C, n, GH * GW, GW)
            assert (a["stride_xb"], a["stride_xc"], a["stride_xh"]) == (C * Hh * Ww, Hh * Ww, Ww)
            per = cfg["BLOCK_N"] * cfg["TILES"]
            assert (a["P"], a["P_PAD"], a["NORMALIZE"], a["EVEN_N"]) == (P, 1 << (P - 1).bit_length(),
                                                                         int(p["normalize"]), int(n % per == 0))
            assert (a["BLOCK_N"], a["TILES"]) == (cfg["BLOCK_N"], cfg["TILES"])
            assert mod.grid(cfg, p) == (-(-n // per),)
            assert mod.loop_iterations(cfg, p) == cfg["TILES"] * C
        e_in, e_out = size[p["x_dtype"]], size[p["dtype"]]
        assert mod.bytes_moved(p) == n * K * (e_in + e_out) + (8 * C if p["normalize"] else 0)
        assert mod.flops(p) == (2 * n * K if p["normalize"] else 0)
        assert e_in * B * C * Hh * Ww + e_out * n * K < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
    # the points differ: patch size, conversion, normalization, an odd patch row and a ragged tile
    assert {p["P"] for p in mod.POINTS} == {14, 16}
    assert {(p["x_dtype"], p["dtype"]) for p in mod.POINTS} == {("fp32", "fp16"), ("bf16", "bf16"), ("fp16", "fp16")}
    assert {p["normalize"] for p in mod.POINTS} == {True, False}
    assert any(p["W"] % p["P"] for p in mod.POINTS) and any((p["W"] // p["P"]) % 2 for p in mod.POINTS)
    assert any(mod.example_args(c, p)["EVEN_N"] == 0 for p in mod.POINTS for c in cfgs)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, pixels in [0, 1] when normalizing, CLIP's constants;
    reference equals torch's unfold (Conv2d's patches) and a hand-checked element; torch_baseline's dtype."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 3, 30, 16, 7, "bf16", "fp16", True)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    x = inp["x"]
    assert x.shape == (2, 3, 30, 16) and x.dtype == torch.bfloat16 and x.is_contiguous()
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0 and inp["P"] == 7 and inp["out_dtype"] == torch.float16
    assert torch.allclose(inp["mean"], torch.tensor(mod.CLIP_MEAN)) and inp["mean"].dtype == torch.float32
    assert torch.allclose(inp["inv_std"], 1 / torch.tensor(mod.CLIP_STD))
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["x"], x)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    ref = mod.reference(inp)
    assert ref.shape == (2, 4 * 2, 3 * 49) and ref.dtype == torch.float32
    # F.unfold with kernel = stride = P gives [B, C P P, N] in the same (c, i, j) order
    y = (x.float() - inp["mean"].view(1, -1, 1, 1)) * inp["inv_std"].view(1, -1, 1, 1)
    unf = torch.nn.functional.unfold(y, kernel_size=7, stride=7)
    assert torch.equal(ref, unf.transpose(1, 2).contiguous())
    # token of patch (gh 2, gw 1) of image 1, channel 2, row 3, column 5
    assert float(ref[1, 2 * 2 + 1, 2 * 49 + 3 * 7 + 5]) == float(y[1, 2, 2 * 7 + 3, 1 * 7 + 5])
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.float16 and base.shape == ref.shape
    plain = mod.make_inputs(_pt(1, 2, 8, 8, 4, "fp16", "fp16"), device="cpu")
    assert plain["mean"] is None and plain["inv_std"] is None and float(plain["x"].min()) < 0.0
    assert mod.bytes_moved(_pt(1, 3, 384, 384, 14, "bf16", "bf16")) == 2 * 2 * 3 * 378 * 378


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(1, 3, 8, 8)
    with pytest.raises(ValueError, match="BLOCK_N=3"):
        mod.patchify(x, 4, BLOCK_N=3)
    with pytest.raises(ValueError, match="num_warps=6"):
        mod.patchify(x, 4, num_warps=6)
    with pytest.raises(ValueError, match="TILES=0"):
        mod.patchify(x, 4, TILES=0)
    with pytest.raises(ValueError, match="patch_size=9"):
        mod.patchify(x, 9)
    with pytest.raises(ValueError, match="together"):
        mod.patchify(x, 4, mean=[0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="C=3 elements"):
        mod.patchify(x, 4, mean=[0.5, 0.5], inv_std=[2.0, 2.0])
    with pytest.raises(ValueError, match="expected x"):
        mod.patchify(torch.ones(3, 8, 8), 4)
    with pytest.raises(ValueError, match="fp16 / bf16 / fp32"):
        mod.patchify(x.double(), 4)
    with pytest.raises(ValueError, match="out_dtype"):
        mod.patchify(x, 4, out_dtype=torch.int8)
    with pytest.raises(ValueError, match="dtype 'fp8'"):
        mod.make_inputs(_pt(1, 1, 4, 4, 2, "fp8"), device="cpu")
    with pytest.raises(ValueError, match="C=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4, 4, 2))
    with pytest.raises(ValueError, match="at least P"):
        mod.bytes_moved(_pt(1, 3, 4, 40, 8))


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_N 2-16 patches x TILES 1-8 x 2 / 4 / 8 warps, num_stages
    1: 2-64 elements a thread a step) with BASELINE among them; at every point each config is
    valid and launches >= 4 waves of CTAs on an H200. (Every config was compiled for sm_90 with
    triton 3.6.0 at every point, 144 compiles: all compile, none spills, no shared memory; 26-128
    registers, the most at BLOCK_N 16 on 2 warps. num_stages: no dot, and the channel loop's
    loads are not pipelined, hence the one value.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert mod.grid(c, p)[0] >= 4 * H200_SMS, (p, c)


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
    """On sm_90: BASELINE and three more at the first point (P 14, fp32 -> fp16, normalized)
    compile without spills or shared memory; and BASELINE and the widest tile at the other two
    (the plain bf16 patchify with the ragged EVEN_N = 0 specialization, the exact P 16 one)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared == 0 and res.n_spills == 0, (cfg, res.n_regs, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[1]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0 and res.shared == 0, res.message


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and bit for bit
    against torch_baseline; the output's dtype and contiguity, x's strides; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        base = mod.torch_baseline(inputs)
        same = base.dtype == out.dtype and base.shape == out.shape and bool(torch.equal(base, out))
        return {"dtype": names.get(out.dtype), "contiguous": bool(out.is_contiguous()),
                "x_strides": list(inputs["x"].stride()),
                "baseline": H.compare(base, ref, point["dtype"]),
                "n_differ_baseline": 0 if same else int((base.float() != out.float()).sum()) or -1}

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
