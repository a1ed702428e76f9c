"""examples/triangle_mult.py (the N^3 contraction of AlphaFold's / OpenFold's / Protenix's / Boltz's
triangle multiplicative update, channel-last: out[b, i, j, c] = sum_k keep[b, k] a[b, i, k, c]
b[b, j, k, c] outgoing, sum_k keep[b, k] a[b, k, i, c] b[b, k, j, c] incoming; a, b [B, N, N, C] fp16 /
bf16 with unit channel stride, an optional residue mask over k; a batched tl.dot over BLOCK_C =
num_warps channels a program, one channel a warp) against its torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points, and a
compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round26_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round27_c.py triangle_mult``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 dot operands widened to fp32; bf16
rounding; under triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged: every (EVEN_K, HAS_MASK, EVEN_C) branch of the k loop (8), both
stores (EVEN_IJ and EVEN_C, or masked), outgoing and incoming; N 1 (one residue: one tile, one k
step, one valid k), N 33-48 (a short last k step, clamped rows), N 32-64 (even); C 3-32, channels that
BLOCK_C does not divide (C 5, 6, 10: masked channel loads) and C 3 below its channel group of 4; a
batch of 1-3; a residue mask of padded sequences (bool), one with gaps and one given as fp32 0 / 1
(nonzero = keep); a and b the two halves of one fused [B, N, N, 2C] projection; a a column slice of
a wider buffer seen with its pair dims transposed and b a column slice of another (the other columns
NaN: a stray read poisons the result); BLOCK_C 16 given explicitly (4 channels a warp); bf16 and
fp16; BLOCK_I 32 / 64, BLOCK_J 16 / 32, BLOCK_K 16 / 32, 2-8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's
per-element check) and each element within half an ulp of the output dtype of its own value plus
1e-5 of the sum of its terms' magnitudes (fp32 accumulation, one rounding); the output fresh,
contiguous, in the inputs' dtype; the inputs unchanged; with a mask, the mask changing the result;
torch_baseline (the models' einsum) within tolerance.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "triangle_mult"
ROLE = "held-out-27"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["triangle_mult"] once the lead adds it)
SWEEP_AXES = {"BLOCK_I": [32, 64], "BLOCK_J": [16, 32], "BLOCK_K": [16, 32], "num_warps": [2, 4, 8],
              "num_stages": [1, 2]}


def _cfg(bi, bj, bk, w=4, st=1, bc=None):
    c = {"BLOCK_I": bi, "BLOCK_J": bj, "BLOCK_K": bk, "num_warps": w, "num_stages": st}
    if bc is not None:
        c["BLOCK_C"] = bc
    return c


def _pt(B, N, C, dtype="bf16", incoming=0, mask=0, fused=0):
    return {"B": B, "N": N, "C": C, "dtype": dtype, "incoming": incoming, "mask": mask, "fused": fused}


# case -> (point, cfg); comments: EVEN_K / HAS_MASK / EVEN_C (the k loop's branch), EVEN_IJ
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 1 / 0 / 1, EVEN_IJ 1: no mask at all (the store unmasked); 4 k steps; 2 channel groups of 8
        "even_out_bf16": (_pt(1, 64, 16, "bf16"), _cfg(32, 16, 16, 8, 2)),
        # 0 / 0 / 1 (37 = 2 x 16 + 5: the last k step 5 of 16), EVEN_IJ 0 (clamped rows); incoming;
        # 3 channel groups of 4; two sequences
        "ragged_in_fp16": (_pt(2, 37, 12, "fp16", incoming=1), _cfg(32, 32, 16, 4, 1)),
        # 1 / 1 / 1, EVEN_IJ 0 (48 = 64 - 16); three padded sequences (48 and two shorter)
        "mask_out_bf16": (_pt(3, 48, 16, "bf16", mask=1), _cfg(64, 16, 16, 8, 1)),
        # 0 / 1 / 0 (45 = 32 + 13; C 10 = 2 x 4 + 2): the mask and the k bound together, masked
        # channels; incoming
        "mask_ragged_in_fp16": (_pt(2, 45, 10, "fp16", incoming=1, mask=1), _cfg(32, 16, 32, 4, 2)),
        # 1 / 0 / 0 (C 5 = 2 x 2 + 1), EVEN_IJ 1: one tile, one k step; 2 warps (2 channels a program)
        "odd_channels_out_bf16": (_pt(1, 32, 5, "bf16"), _cfg(32, 32, 32, 2, 1)),
        # 0 / 0 / 0: one residue (N 1: one tile of 32 x 16 holding one row, one k step holding one k),
        # C 3 below the channel group of 4
        "one_residue_fp16": (_pt(2, 1, 3, "fp16"), _cfg(32, 16, 16, 4, 1)),
        # 1 / 1 / 0 (C 6 = 4 + 2), EVEN_IJ 1: a and b the halves of one fused [1, 64, 64, 12]
        # projection; a mask with gaps (about a quarter of the residues dropped); incoming
        "fused_mask_in_bf16": (_pt(1, 64, 6, "bf16", incoming=1, mask=1, fused=1), _cfg(64, 32, 32, 4, 2)),
        # 0 / 1 / 1 (33 = 2 x 16 + 1): the mask given as fp32 0 / 1; C 8 in 4 groups of 2 (2 warps)
        "float_mask_out_fp16": (_pt(2, 33, 8, "fp16", mask=1), _cfg(32, 16, 16, 2, 2)),
        # 0 / 0 / 1 (40 = 2 x 16 + 8): a the columns 4 .. 12 of a [1, 40, 40, 20] buffer seen with
        # its pair dims transposed, b the columns 0 .. 8 of a [1, 40, 40, 12] one, the other columns NaN
        "strided_nan_out_bf16": (_pt(1, 40, 8, "bf16"), _cfg(32, 32, 16, 8, 1)),
        # 1 / 0 / 1, EVEN_IJ 1: BLOCK_C 16 given (4 channels a warp on 4 warps); C 32 in 2 groups;
        # incoming
        "block_c16_in_bf16": (_pt(1, 32, 32, "bf16", incoming=1), _cfg(32, 16, 16, 4, 1, bc=16)),
    },
}
FUSED, FLOATMASK, STRIDED = "fused_mask_in_bf16", "float_mask_out_fp16", "strided_nan_out_bf16"
A_BUF, A_COL0, B_BUF = 20, 4, 12

# configs compiled at the module's first POINT on sm_90 (BASELINE first): the most registers (64 x 32
# x 32 double-buffered on 2 and 8 warps), the most shared memory (64 x 32 x 32 on 8 warps, one stage),
# the smallest tile. (64 x 32 x 32 double-buffered on 2 warps spills 8 registers at the ESMFold point
# under triton 3.9, so the other points compile BASELINE and the 8-warp one.)
COMPILE_CFGS = [_cfg(64, 32, 16, 8, 2), _cfg(64, 32, 32, 2, 2), _cfg(64, 32, 32, 8, 2), _cfg(64, 32, 32, 8, 1),
                _cfg(32, 16, 16, 4, 1)]
SM120_CFGS = [_cfg(64, 32, 16, 8, 2), _cfg(64, 32, 32, 8, 1), _cfg(32, 16, 16, 2, 2)]


def _flags(p, c):
    """(EVEN_K, HAS_MASK, EVEN_C, EVEN_IJ) of a case."""
    N, C = p["N"], p["C"]
    bc = c.get("BLOCK_C") or c["num_warps"]
    return (int(N % c["BLOCK_K"] == 0), p["mask"], int(C % bc == 0),
            int(N % c["BLOCK_I"] == 0 and N % c["BLOCK_J"] == 0))


def _smem_blocks(cfg) -> int:
    """The transposed operand blocks in shared memory: BLOCK_C (BLOCK_I + BLOCK_J) BLOCK_K 16-bit
    elements (one buffer: the pipeline double-buffers in registers)."""
    return (cfg.get("BLOCK_C") or cfg["num_warps"]) * (cfg["BLOCK_I"] + cfg["BLOCK_J"]) * cfg["BLOCK_K"] * 2


def _smem_bound(cfg) -> int:
    """An upper bound of a config's shared memory: the operand blocks or the epilogue's staging of the
    [BLOCK_C, BLOCK_I, BLOCK_J] output block (in the 16-bit output dtype), whichever is larger."""
    bc = cfg.get("BLOCK_C") or cfg["num_warps"]
    return max(_smem_blocks(cfg), bc * cfg["BLOCK_I"] * cfg["BLOCK_J"] * 2)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """FUSED: a mask with gaps; FLOATMASK: the mask as fp32 0 / 1; STRIDED: a and b column slices of
    NaN-filled wider buffers, a seen with its pair dims transposed. Then the inputs' copies."""
    import torch

    a, b = inputs["a"], inputs["b"]
    B, N, _, C = a.shape
    gen = torch.Generator().manual_seed(7)
    if name == FUSED:
        keep = torch.rand((B, N), generator=gen) > 0.25
        keep[:, 0] = False
        inputs["mask"] = keep
    if name == FLOATMASK:
        inputs["mask"] = inputs["mask"].float()
    if name == STRIDED:
        ba = torch.full((B, N, N, A_BUF), float("nan"), dtype=a.dtype)
        ba[..., A_COL0:A_COL0 + C] = a.transpose(1, 2)
        inputs["a"] = ba[..., A_COL0:A_COL0 + C].transpose(1, 2)
        bb = torch.full((B, N, N, B_BUF), float("nan"), dtype=b.dtype)
        bb[..., :C] = b
        inputs["b"] = bb[..., :C]
    inputs["a0"] = inputs["a"].clone()
    inputs["b0"] = inputs["b"].clone()
    inputs["mask0"] = None if inputs["mask"] is None else inputs["mask"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    B, N, C = p["B"], p["N"], p["C"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [B, N, N, C] and res["dtype"] == p["dtype"], res
    assert res["out_strides"] == [N * N * C, N * C, C, 1], res
    assert res["n_loose"] == 0, res                # within half an ulp + 1e-5 of the terms' magnitude
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if p["mask"]:
        assert res["mask_matters"] is True, res
    if name == STRIDED:
        assert res["a_strides"] == [N * N * A_BUF, A_BUF, N * A_BUF, 1], res
        assert res["b_strides"] == [N * N * B_BUF, N * B_BUF, B_BUF, 1], res
    if name == FUSED:
        assert res["a_strides"] == res["b_strides"] == [N * N * 2 * C, N * 2 * C, 2 * C, 1], res
    if name == FLOATMASK:
        assert res["mask_dtype"] == "fp32", res


def test_cases_cover_every_code_path():
    """Every (EVEN_K, HAS_MASK, EVEN_C) branch of the k loop, both stores, both directions, both
    dtypes, fused and strided inputs, a bool and a float mask; N 1 and a C below one group; every
    sweep value of every tunable, BLOCK_C given once."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [_flags(p, c) for p, c in cases]
    assert {f[:3] for f in fl} == set(itertools.product((0, 1), repeat=3))
    assert {(f[3], f[2]) for f in fl} >= {(1, 1), (1, 0), (0, 1), (0, 0)}
    assert {p["incoming"] for p, _ in cases} == {0, 1} and {p["fused"] for p, _ in cases} == {0, 1}
    assert {(p["incoming"], p["mask"]) for p, _ in cases} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert any(p["N"] == 1 for p, _ in cases) and any(p["C"] < c["num_warps"] for p, c in cases)
    assert any("BLOCK_C" in c for _, c in cases) and max(p["B"] for p, _ in cases) >= 3
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (a and b the halves of one fused tensor at the Uni-Fold point), the flags, the grid (tiles,
    channel groups, B) and the k steps; bytes_moved / flops; 0.3-0.6 GB moved and 50-120 GFLOP a
    point; inputs under 1 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "triangle_mult"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, N, C, inc, masked, fused = p["B"], p["N"], p["C"], p["incoming"], p["mask"], p["fused"]
        pitch = 2 * C if fused else C
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            for t in ("A", "Bm"):
                assert a[t].shape == (B, N, N, C) and a[t].dtype == dts[p["dtype"]], t
                assert a[t].stride() == (N * N * pitch, N * pitch, pitch, 1), t
            assert a["A"].data_ptr() == 0 and a["Bm"].data_ptr() == (2 * C if fused else 0)
            assert a["O"].shape == (B, N, N, C) and a["O"].dtype == a["A"].dtype and a["O"].is_contiguous()
            if masked:
                assert a["MASK"].shape == (B, N) and a["MASK"].dtype == torch.uint8 and a["stride_mb"] == N
            else:
                assert a["MASK"] is a["A"] and a["stride_mb"] == 0
            assert (a["N"], a["C"]) == (N, C)
            assert (a["stride_ab"], a["stride_a1"], a["stride_a2"]) == (N * N * pitch, N * pitch, pitch)
            assert (a["stride_bb"], a["stride_b1"], a["stride_b2"]) == (N * N * pitch, N * pitch, pitch)
            assert (a["stride_ob"], a["stride_oi"], a["stride_oj"]) == (N * N * C, N * C, C)
            bc = cfg["num_warps"]
            assert (a["INCOMING"], a["HAS_MASK"], a["BLOCK_C"]) == (inc, masked, bc)
            assert (a["EVEN_K"], a["EVEN_C"]) == (int(N % cfg["BLOCK_K"] == 0), int(C % bc == 0))
            assert a["EVEN_IJ"] == int(N % cfg["BLOCK_I"] == 0 and N % cfg["BLOCK_J"] == 0)
            assert (a["BLOCK_I"], a["BLOCK_J"], a["BLOCK_K"]) == (cfg["BLOCK_I"], cfg["BLOCK_J"], cfg["BLOCK_K"])
            tiles = -(-N // cfg["BLOCK_I"]) * -(-N // cfg["BLOCK_J"])
            assert mod.grid(cfg, p) == (tiles, -(-C // bc), B)
            assert mod.loop_iterations(cfg, p) == -(-N // cfg["BLOCK_K"])
            assert H.meta_nbytes(a) < 2**30
        assert mod.bytes_moved(p) == 3 * B * N * N * C * 2 + masked * B * N
        assert mod.flops(p) == 2 * B * N ** 3 * C
        assert 0.3e9 <= mod.bytes_moved(p) <= 0.6e9 and 50e9 <= mod.flops(p) <= 120e9, p
    # the points differ: the direction, the dtype, fused / contiguous inputs, a mask, N ragged or not, B
    assert sorted((p["N"], p["B"]) for p in mod.POINTS) == [(300, 8), (640, 1), (768, 1)]
    assert {p["incoming"] for p in mod.POINTS} == {0, 1} and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert sum(p["fused"] for p in mod.POINTS) == 1 and sum(p["mask"] for p in mod.POINTS) == 1
    assert all(p["C"] == 128 for p in mod.POINTS)
    flags = {(mod.example_args(c, p)["EVEN_K"], mod.example_args(c, p)["EVEN_IJ"]) for p in mod.POINTS for c in cfgs}
    assert flags == {(1, 1), (0, 0)}                                  # 640 and 768 even; 300 ragged


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtype, the seed, the fused halves, the mask's padding; reference by hand on
    a 2 x 2 case both ways, with a mask; torch_baseline; the grid and the k steps; bytes / flops."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(3, 6, 4, "fp16", mask=1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    a, b, m = inp["a"], inp["b"], inp["mask"]
    assert a.shape == b.shape == (3, 6, 6, 4) and a.dtype == b.dtype == torch.float16 and inp["incoming"] is False
    assert a.is_contiguous() and b.is_contiguous() and m.dtype == torch.bool and m.shape == (3, 6)
    assert bool(m[0].all()) and all(bool(m[s, :4].all()) for s in range(3))        # lengths in [N / 2 + 1, N]
    assert all(not bool(m[s, int(m[s].sum()):].any()) for s in range(3))            # padding at the end
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["a"], a)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["a"], a)
    assert 0.2 < float(a.float().std()) < 0.8
    f = mod.make_inputs(_pt(1, 3, 2, "bf16", incoming=1, fused=1), device="cpu")
    assert f["a"].stride() == f["b"].stride() == (36, 12, 4, 1) and f["incoming"] is True
    assert f["b"].data_ptr() - f["a"].data_ptr() == 2 * 2 and f["mask"] is None
    # by hand: a[i, k] = [[1, 2], [3, 4]], b[j, k] = [[5, 6], [7, 8]] (one channel)
    ta = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).view(1, 2, 2, 1)
    tb = torch.tensor([[5.0, 6.0], [7.0, 8.0]]).view(1, 2, 2, 1)
    out = mod.reference({"a": ta, "b": tb, "mask": None, "incoming": False})
    assert out.dtype == torch.float32 and out.view(2, 2).tolist() == [[17.0, 23.0], [39.0, 53.0]]
    inc = mod.reference({"a": ta, "b": tb, "mask": None, "incoming": True})
    assert inc.view(2, 2).tolist() == [[26.0, 30.0], [38.0, 44.0]]
    keep = torch.tensor([[True, False]])
    assert mod.reference({"a": ta, "b": tb, "mask": keep, "incoming": False}).view(2, 2).tolist() == [
        [5.0, 7.0], [15.0, 21.0]]
    assert mod.reference({"a": ta, "b": tb, "mask": keep, "incoming": True}).view(2, 2).tolist() == [
        [5.0, 6.0], [10.0, 12.0]]
    base = mod.torch_baseline({"a": ta.half(), "b": tb.half(), "mask": keep.float(), "incoming": False})
    assert base.dtype == torch.float16 and base.view(2, 2).tolist() == [[5.0, 7.0], [15.0, 21.0]]
    assert mod.grid(_cfg(32, 16, 16, 4), _pt(2, 40, 10)) == (2 * 3, 3, 2)
    assert mod.grid(_cfg(32, 16, 16, 4, bc=16), _pt(2, 40, 40)) == (6, 3, 2)
    assert mod.loop_iterations(_cfg(32, 16, 32, 8), _pt(1, 40, 8)) == 2
    assert mod.bytes_moved(p) == 3 * 3 * 36 * 4 * 2 + 3 * 6
    assert mod.flops(p) == 2 * 3 * 216 * 4


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.ones(1, 8, 8, 16, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_I=48"):
        mod.triangle_mult(x, x, BLOCK_I=48)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        mod.triangle_mult(x, x, BLOCK_K=8)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.triangle_mult(x, x, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.triangle_mult(x, x, num_stages=0)
    with pytest.raises(ValueError, match="BLOCK_C=12"):
        mod.triangle_mult(x, x, BLOCK_C=12)
    with pytest.raises(ValueError, match="128 a thread"):
        mod.triangle_mult(x, x, BLOCK_I=64, BLOCK_J=64, BLOCK_C=16, num_warps=4)
    with pytest.raises(ValueError, match="expected a and b"):
        mod.triangle_mult(x[0], x[0])
    with pytest.raises(ValueError, match="one shape"):
        mod.triangle_mult(x, x[..., :8])
    with pytest.raises(ValueError, match="square"):
        mod.triangle_mult(x[:, :4], x[:, :4])
    with pytest.raises(ValueError, match="fp16 / bf16 of one dtype"):
        mod.triangle_mult(x, x.half())
    with pytest.raises(ValueError, match="fp16 / bf16 of one dtype"):
        mod.triangle_mult(x.float(), x.float())
    with pytest.raises(ValueError, match="unit channel stride"):
        y = torch.ones(1, 8, 16, 8, dtype=torch.bfloat16).transpose(2, 3)
        mod.triangle_mult(y, y)
    with pytest.raises(ValueError, match=r"mask must be \[B, N\]"):
        mod.triangle_mult(x, x, torch.ones(1, 7, dtype=torch.bool))
    big = torch.empty_strided((1, 64, 64, 8), (2**33, 2**26, 8, 1), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="int32 in-block offsets"):                  # meta: never launched
        mod.triangle_mult(big, big, BLOCK_I=64, BLOCK_K=32)
    many = torch.empty((70000, 1, 1, 8), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="65535"):
        mod.triangle_mult(many, many)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 4, 4, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="incoming=2"):
        mod.bytes_moved(_pt(1, 4, 4, incoming=2))
    with pytest.raises(ValueError, match="N=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 4))
    with pytest.raises(ValueError, match="BLOCK_J=24"):
        mod.grid(dict(mod.BASELINE, BLOCK_J=24), mod.POINTS[0])
    # an empty batch or no channels: nothing launched, an empty output
    e = mod.triangle_mult(torch.ones(0, 8, 8, 16, dtype=torch.bfloat16), torch.ones(0, 8, 8, 16, dtype=torch.bfloat16))
    assert e.shape == (0, 8, 8, 16) and e.dtype == torch.bfloat16
    e = mod.triangle_mult(torch.ones(2, 8, 8, 0, dtype=torch.float16), torch.ones(2, 8, 8, 0, dtype=torch.float16))
    assert e.shape == (2, 8, 8, 0)


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (each channel's tile 32 x 16 .. 64 x 32, k steps of 16 / 32, 2 / 4
    / 8 warps = channels a program, num_stages 1 / 2) with BASELINE among them; at every point each
    config is valid, launches >= 4 waves of programs on an H200 (3200 at the fewest: Uni-Fold's N 640
    in 200 tiles of 64 x 32 x 16 groups of 8 channels), at most 64 fp32 accumulators a thread, and its
    operand blocks fit sm_90's shared memory (at most 48 KiB). (Every config was compiled for sm_90 at
    every point with triton 3.6.0 and 3.9: all compile; 48-248 registers under 3.6, none spilled;
    48-255 under 3.9, one spill: 64 x 32 x 32 double-buffered on 2 warps, 8 registers at the ESMFold
    point; shared memory 2-48 KiB. BLOCK_I 16 tiles made ptxas spill 4-12 loop-invariant registers at
    num_stages 2 and 64 x 64 x 32 spilled outright, hence the axes.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 4 * H200_SMS and gy <= 65535 and gz <= 65535, (p, c)
            assert c["BLOCK_I"] * c["BLOCK_J"] <= 64 * 32, c            # <= 64 accumulators a thread
            assert _smem_bound(c) <= 48 * 1024 <= SM90_SMEM_PER_BLOCK, c


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
    """On sm_90: BASELINE and four more at the first point (Protenix crop 768, bf16, outgoing) -- the
    most registers (64 x 32 x 32 double-buffered on 2 and on 8 warps), the most shared memory, the
    smallest tile -- compile without spills, their shared memory within the operand blocks' or the
    output staging's bound; and BASELINE and the 8-warp 64 x 32 x 32 double-buffered at the other two
    (Uni-Fold's fused fp16 incoming; ESMFold's masked ragged batch)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= _smem_bound(cfg), (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], COMPILE_CFGS[2]):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert 0 < res.shared <= _smem_bound(cfg), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the 64 x 32 x 32 tile on 8 warps and the smallest tile on
    2 warps compile without spills within its shared memory."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp
    of each element plus 1e-5 of the sum of its terms' magnitudes; torch_baseline against reference;
    the output's strides, the inputs unchanged, the mask's effect; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        a, b, m, inc = inputs["a"], inputs["b"], inputs["mask"], inputs["incoming"]
        # the terms' magnitudes (NaN columns of the strided buffers are outside a and b)
        mag = mod.reference({"a": a.abs(), "b": b.abs(), "mask": m, "incoming": inc})
        half_ulp = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[out.dtype]
        loose = (out.float() - ref).abs() > half_ulp * ref.abs() + 1e-5 * mag + 1e-30
        same = (torch.equal(a, inputs["a0"]) and torch.equal(b, inputs["b0"])
                and (m is None or torch.equal(m, inputs["mask0"])))
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "inputs_unchanged": bool(same), "nonzero": bool((ref != 0).any()),
               "a_strides": list(a.stride()), "b_strides": list(b.stride()),
               "mask_dtype": None if m is None else names.get(m.dtype, str(m.dtype)),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if m is not None:
            unmasked = mod.reference({"a": a, "b": b, "mask": None, "incoming": inc})
            res["mask_matters"] = bool((unmasked - ref).abs().max() > 0.1)
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
