"""examples/ssd_chunk_state.py (Mamba-2's SSD chunk-state kernel) against its fp64 torch
reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round14_a.py, the interpreter must be chosen before triton is imported, so
the cases run in a subprocess (this file run as a script: ``python
tests/test_examples_round15_c.py ssd_chunk_state``) that prints one JSON line; the tests
assert per case. A second subprocess (``... prefilled``) runs cases into a ``states=`` buffer
filled with NaN, so a (p, n) element, head or chunk no CTA writes is a mismatch rather than
whatever torch.empty held.

Shapes are small, odd and ragged and together take every path: a ragged last chunk (L not a
multiple of CHUNK: 22, 8, 4, 1 and 26 tokens, and L below CHUNK: one short chunk), whole chunks
only, CHUNK not a multiple of BLOCK_K (a masked step in every chunk) and BLOCK_K dividing it,
P and N not multiples of BLOCK_M / BLOCK_N and below them (masked rows / columns), Mamba-2's
real P = 64, N = 128, CHUNK = 256, one group, several groups of several heads and one head a
group, seq_idx off and on (packed sequences drawn from the seed; one case with boundaries
placed by hand: on a chunk edge, a one-token sequence ending a chunk, a sequence spanning a
chunk edge), x and B as views of one xBC buffer (the "xbc" layout), x / B / dt / dA_cumsum as
views of wider buffers with dA_cumsum NaN past L (never read), SCALE_X 0 and 1 in both dtypes.

Tolerance (x max|ref|, absolute, per element): the reference is fp64 on the same bf16 / fp16
x and B and the same fp32 dt / dA_cumsum. The kernel's weights exp(dA_last - dA_t) * dt_t are
fp32 (~1e-7 relative); it then rounds each scaled operand element (x * w or B * w) once to the
input dtype -- up to 2^-8 relative in bf16 on the GPU (round to nearest; 8 significant bits),
up to 2^-7 with the interpreter's truncating cast, 2^-11 / 2^-10 in fp16 -- and accumulates
in fp32. Truncation shrinks every term, so under the interpreter the error has a bias of ~2^-8
of the result (~4e-3 of max|ref| at the largest element, in bf16) on top of a random part
~ulp / sqrt(12) of the terms' rms; round to nearest (the GPU) has no bias. The torch_baseline
(mamba_ssm's chunk_state_ref: the fp32 decay and dt rounded to x's dtype, a 4-operand einsum
in x's dtype, so one more rounding of each product and of the result) errs about as much.
bf16 1e-2 and fp16 2e-3 cover that (measured under the interpreter: the kernel <= 5.4e-3 /
3.1e-4 of max|ref|, the baseline <= 6.4e-3 / 5.7e-4).
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
KERNEL = "ssd_chunk_state"
TOL = {"bf16": 1e-2, "fp16": 2e-3}
H200_SMS = 132
H200_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024


def _cfg(bm, bn, bk, sx, w, s):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SCALE_X": sx, "num_warps": w, "num_stages": s}


def _pt(B, L, Hh, G, P, N, chunk, dtype, n_seqs=0, layout="contiguous"):
    return {"B": B, "L": L, "H": Hh, "G": G, "P": P, "N": N, "CHUNK": chunk, "dtype": dtype, "n_seqs": n_seqs,
            "layout": layout}


# hand-placed sequences of "seq_edges_bf16" (L = 192, CHUNK = 64): a boundary on the first chunk
# edge, a one-token sequence ending chunk 1 (its state is that token alone), a boundary inside
# chunk 2 (only the 34-token tail counts)
SEQ_EDGES = [64, 63, 1, 30, 34]

# kernel module -> case name -> (point, cfg)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # 2 groups of 2 heads; P 48 / N 40 in 32-wide tiles (masked rows and columns); last chunk 22 tokens
        "ragged_groups_bf16": (_pt(2, 150, 4, 2, 48, 40, 64, "bf16"), _cfg(32, 32, 16, 0, 4, 2)),
        # vLLM's packed varlen prefill: 5 sequences in one row, x and B views of xBC, 3 groups
        "packed_xbc_fp16": (_pt(1, 200, 6, 3, 32, 64, 64, "fp16", 5, "xbc"), _cfg(32, 64, 32, 1, 4, 2)),
        # Mamba-2's own dims (P 64, N 128, CHUNK 256), whole chunks, one (p, n) tile a chunk-head
        "exact_chunks_real_dims_bf16": (_pt(2, 512, 2, 1, 64, 128, 256, "bf16"), _cfg(64, 128, 64, 1, 8, 3)),
        # CHUNK 48 in 32-token steps (a masked step in every chunk), P 16 < BLOCK_M 32, last chunk 4 tokens
        "chunk_not_multiple_of_block_k_fp16": (_pt(2, 100, 3, 1, 16, 16, 48, "fp16"), _cfg(32, 16, 32, 0, 8, 4)),
        # a last chunk of one token, one head a group, packed sequences, BLOCK_M 16
        "one_token_last_chunk_packed_bf16": (_pt(3, 129, 4, 4, 32, 32, 64, "bf16", 3), _cfg(16, 32, 64, 1, 4, 4)),
        # SEQ_EDGES, placed by _prepare
        "seq_edges_bf16": (_pt(1, 192, 2, 1, 32, 64, 64, "bf16", len(SEQ_EDGES)), _cfg(32, 64, 16, 0, 8, 2)),
        # every input a view of a wider buffer, dA_cumsum NaN past L; P 32 < BLOCK_M 64, N 24 < BLOCK_N 32
        "strided_nan_tail_fp16": (_pt(2, 90, 4, 2, 32, 24, 64, "fp16"), _cfg(64, 32, 32, 1, 4, 3)),
        # L 30 < CHUNK 256: a single short chunk, one masked step
        "short_single_chunk_bf16": (_pt(4, 30, 2, 1, 64, 64, 256, "bf16"), _cfg(64, 64, 32, 0, 4, 2)),
        # the B tile scaled (SCALE_X 0) at N 128 in fp16, 128-token steps, 2 groups of one head
        "scale_b_wide_n_fp16": (_pt(1, 256, 2, 2, 64, 128, 128, "fp16"), _cfg(64, 128, 128, 0, 8, 2)),
    },
}

# prefilled: cases run into a NaN-filled states= buffer
PREFILLED = ("ragged_groups_bf16", "chunk_not_multiple_of_block_k_fp16", "strided_nan_tail_fp16",
             "short_single_chunk_bf16", "seq_edges_bf16")

# configs compiled for sm_90 at the module's first POINT (BASELINE first): wgmma with the B tile
# scaled, the x tile scaled (A from registers), 8 warps, 128-token steps, and BLOCK_M 32 (mma.sync)
COMPILE_CFGS: dict[str, list[dict]] = {
    KERNEL: [_cfg(64, 128, 64, 0, 4, 3), _cfg(64, 128, 64, 1, 4, 3), _cfg(64, 64, 32, 1, 8, 2),
             _cfg(64, 128, 128, 1, 8, 4), _cfg(32, 64, 64, 0, 4, 3)],
}
# sm_120 (99 KiB a block, no wgmma): configs that fit it
SM120_CFGS = [_cfg(64, 128, 64, 0, 4, 3), _cfg(64, 64, 32, 1, 8, 2), _cfg(32, 64, 64, 1, 4, 3)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """Edit a case's inputs: hand-placed sequences; every input a view of a wider buffer."""
    import torch

    if name == "seq_edges_bf16":
        ids = torch.repeat_interleave(torch.arange(len(SEQ_EDGES), dtype=torch.int32), torch.tensor(SEQ_EDGES))
        inputs["seq_idx"] = ids[None, :].contiguous()
    if name == "strided_nan_tail_fp16":
        x, bm, dt, dA = inputs["x"], inputs["B"], inputs["dt"], inputs["dA_cumsum"]
        Bsz, L, Hh, P = x.shape
        G, N = bm.shape[2:]
        nc, chunk = dA.shape[2:]
        wx = torch.zeros((Bsz, L, Hh + 1, P + 16), dtype=x.dtype)
        wx[:, :, :Hh, :P] = x
        wb = torch.zeros((Bsz, L, G, N + 8), dtype=bm.dtype)
        wb[..., :N] = bm
        wdt = torch.zeros((Bsz, Hh + 1, L + 8))
        wdt[:, :Hh, :L] = dt
        wda = torch.zeros((Bsz, Hh + 2, nc, chunk))
        wda[:, :Hh] = dA
        wda[:, :Hh, -1, L - (nc - 1) * chunk:] = float("nan")      # past L: never read
        inputs.update(x=wx[:, :, :Hh, :P], B=wb[..., :N], dt=wdt[:, :Hh, :L], dA_cumsum=wda[:, :Hh])
        assert inputs["x"].stride() == (L * (Hh + 1) * (P + 16), (Hh + 1) * (P + 16), P + 16, 1)
        assert inputs["dA_cumsum"].stride(1) == nc * chunk and not inputs["dt"].is_contiguous()


# ----------------------------------------------------------------- the pytest side
def _results(kernel: str) -> dict:
    return H.interpreter_results(HERE, kernel)


def _states_shape(p) -> list:
    return [p["B"], -(-p["L"] // p["CHUNK"]), p["H"], p["P"], p["N"]]


@pytest.mark.parametrize("kernel,name", [(k, n) for k, cases in CASES.items() for n in cases])
def test_example_matches_reference(kernel, name):
    res = _results(kernel)[name]
    assert "error" not in res, f"{kernel}/{name}: {res.get('error')}"
    assert res["shape"] == _states_shape(CASES[kernel][name][0])
    assert res["scale"] > 0.05          # the states are not (near) zero
    for what, r in (("kernel", res), ("torch_baseline", res["baseline"])):
        assert r["n_bad"] == 0, H.mismatch(r, f"{kernel}/{name} {what}")


@pytest.mark.parametrize("name", PREFILLED)
def test_every_state_written(name):
    """Into a NaN-filled states= buffer: every element written (no NaN left), right, and into
    the caller's buffer."""
    res = _results("prefilled")[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    assert res["same_buffer"] and res["n_bad"] == 0, H.mismatch(res, f"{name} prefilled")


def test_seq_edges_mask_other_sequences():
    """The hand-placed sequences: chunk 1's state is its last token's alone, chunk 2's its
    34-token tail's (what the reference, and so the kernel, must give)."""
    import torch

    mod = load_example(KERNEL)
    point, _ = CASES[KERNEL]["seq_edges_bf16"]
    inputs = mod.make_inputs(point, seed=3, device="cpu")
    _prepare("seq_edges_bf16", point, inputs)
    ref = mod.reference(inputs)
    x, bm, dt = inputs["x"].double(), inputs["B"].double(), inputs["dt"].double()
    one = torch.einsum("hp,n->hpn", x[0, 127] * dt[0, :, 127, None], bm[0, 127, 0])
    assert torch.allclose(ref[0, 1], one.float(), rtol=1e-5, atol=1e-6)
    dA = inputs["dA_cumsum"].double()[0, :, 2]
    w = torch.exp(dA[:, 63:64] - dA[:, 30:]) * dt[0, :, 158:]
    tail = torch.einsum("th,thp,tn->hpn", w.t(), x[0, 158:], bm[0, 158:, 0])
    assert torch.allclose(ref[0, 2], tail.float(), rtol=1e-5, atol=1e-6)


def test_cases_cover_every_code_path():
    """Each tunable takes at least two values; ragged and whole last chunks, L < CHUNK, CHUNK
    % BLOCK_K != 0, P / N below and not multiples of their tiles, seq_idx off / on, both
    layouts, both dtypes x both SCALE_X, G 1 / > 1 with one and several heads a group, the real
    P 64 / N 128 / CHUNK 256 are hit."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {(p["dtype"], c["SCALE_X"]) for p, c in cases} == {(d, s) for d in mod.DTYPES for s in (0, 1)}
    assert {p["layout"] for p, _ in cases} == set(mod.LAYOUTS)
    assert {p["n_seqs"] > 0 for p, _ in cases} == {True, False}
    assert {p["L"] % p["CHUNK"] == 0 for p, _ in cases} == {True, False}
    assert any(p["L"] < p["CHUNK"] for p, _ in cases) and any(p["L"] % p["CHUNK"] == 1 for p, _ in cases)
    assert any(p["CHUNK"] % c["BLOCK_K"] for p, c in cases)
    for d, b in (("P", "BLOCK_M"), ("N", "BLOCK_N")):
        assert any(p[d] < c[b] for p, c in cases) and any(p[d] > c[b] and p[d] % c[b] for p, c in cases)
    assert {p["G"] == 1 for p, _ in cases} == {True, False}
    assert any(p["G"] > 1 and p["H"] == p["G"] for p, _ in cases) and any(p["G"] > 1 < p["H"] // p["G"]
                                                                            for p, _ in cases)
    assert any((p["P"], p["N"], p["CHUNK"]) == (64, 128, 256) for p, _ in cases)


def test_seq_lengths():
    """n_seqs lengths >= 1 adding up to L, drawn from the seed; none without seq_idx."""
    mod = load_example(KERNEL)
    for L in (1, 2, 7, 100, 1000, 16384):
        for n in (1, 2, 3, 11, 64):
            if n > L:
                continue
            for seed in (0, 1):
                lens = mod.seq_lengths({"L": L, "n_seqs": n}, seed)
                assert len(lens) == n and sum(lens) == L and min(lens) >= 1
    assert mod.seq_lengths({"L": 100, "n_seqs": 0}) == []
    assert mod.seq_lengths({"L": 1000, "n_seqs": 5}, 0) != mod.seq_lengths({"L": 1000, "n_seqs": 5}, 1)


def _ctas(mod, cfg, point) -> int:
    gx, gy, gz = mod.grid(cfg, point)
    return gx * gy * gz


def _smem_bound(cfg, point) -> int:
    """Shared memory of a config, from what the sm_90 compiles showed (an upper bound of every
    one): num_stages buffers of the x^T and B tiles and the fp32 dt / dA (and int32 seq_idx)
    steps, or the epilogue's fp32 [BLOCK_M, BLOCK_N] layout conversion when that is larger."""
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    vectors = 12 * bk if point.get("n_seqs", 0) else 8 * bk
    return max(cfg["num_stages"] * (2 * bk * (bm + bn) + vectors), 4 * bm * bn)


def test_sweep_fits_the_points():
    """The study sweep: 72 configs over the TUNABLES with BASELINE among them; at every POINT
    each config is valid, has >= 4 CTAs an SM (thousands, in fact), and its buffers fit an
    H200's 227 KiB per block. BLOCK_M is held at 64 (= P: one wgmma M; 32 halves the dot to
    mma.sync and reads B twice). (Every config was compiled for sm_90 with triton 3.6.0 at
    every point: all 216 compile, in ~0.2-2.7 s each; 47-255 registers, 16.3-196.5 KiB of
    shared memory (point 2's seq_idx buffers add 0.1-1.5 KiB); 215 of the 216 do not spill:
    64x128x128, SCALE_X 0, 4 warps, 4 stages keeps 2 words in local memory at 255 registers at
    the first point (none at the other two). BLOCK_K 128 at 4 warps and BLOCK_N 128 sits at
    246-255 registers.)"""
    sweeps = H.study_sweeps([KERNEL], "held-out-15")[KERNEL]     # scripts/rank_study.py SWEEPS
    valid, points, SWEEP_AXES = sweeps
    mod = load_example(KERNEL)
    assert set(SWEEP_AXES) == set(mod.TUNABLES)
    assert sum(len(v) >= 2 for v in SWEEP_AXES.values()) >= len(SWEEP_AXES) - 1
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    assert 40 <= len(cfgs) <= 72 and mod.BASELINE in cfgs and len(valid) == len(cfgs)
    assert points == [dict(p) for p in mod.POINTS]
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            assert _ctas(mod, c, p) >= 4 * H200_SMS, (p, c)
            assert _smem_bound(c, p) <= H200_SMEM_PER_BLOCK, (p, c)


def test_launcher_hooks_agree_with_shapes():
    """At every default point: example_args has the shapes, strides and types of a launch (meta
    tensors), bytes_moved counts x, B, dt, dA_cumsum (L tokens), seq_idx and the states once
    each, grid / cta_iterations / loop_iterations are the chunk tiling; inputs < 4 GB."""
    import torch
    import triton

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "ssd_chunk_state", "seq_lengths"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert len(mod.POINTS) == 3
    assert {p["layout"] for p in mod.POINTS} == set(mod.LAYOUTS) and {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert {p["n_seqs"] > 0 for p in mod.POINTS} == {True, False}
    assert {p["L"] % p["CHUNK"] == 0 for p in mod.POINTS} == {True, False}
    for cfg in [mod.BASELINE] + COMPILE_CFGS[KERNEL]:
        for p in mod.POINTS:
            args = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in args.values())
            Bsz, L, Hh, G, P, N, chunk = (p[k] for k in ("B", "L", "H", "G", "P", "N", "CHUNK"))
            assert (P, N, chunk) == (64, 128, 256)
            nc = -(-L // chunk)
            dt = torch.bfloat16 if p["dtype"] == "bf16" else torch.float16
            assert args["X"].shape == (Bsz, L, Hh, P) and args["BMAT"].shape == (Bsz, L, G, N)
            assert args["X"].dtype == args["BMAT"].dtype == dt
            assert args["DT"].shape == (Bsz, Hh, L) and args["DA"].shape == (Bsz, Hh, nc, chunk)
            assert args["S"].shape == (Bsz, nc, Hh, P, N) and args["S"].dtype == torch.float32
            row = Hh * P + 2 * G * N if p["layout"] == "xbc" else Hh * P
            assert (args["stride_xl"], args["stride_xh"]) == (row, P)
            assert args["stride_bl"] == (row if p["layout"] == "xbc" else G * N)
            assert args["HAS_SEQ_IDX"] == (p["n_seqs"] > 0) and args["CHUNK"] == chunk
            if p["n_seqs"]:
                assert args["SEQ"].shape == (Bsz, L) and args["SEQ"].dtype == torch.int32
            assert (args["L"], args["P"], args["N"], args["heads_per_group"]) == (L, P, N, Hh // G)
            assert args["SCALE_X"] == cfg["SCALE_X"] and args["BLOCK_K"] == cfg["BLOCK_K"]
            seq = 4 * Bsz * L if p["n_seqs"] else 0
            assert mod.bytes_moved(p) == (2 * Bsz * L * (Hh * P + G * N) + 8 * Bsz * Hh * L + seq
                                          + 4 * Bsz * nc * Hh * P * N)
            assert 0.3e9 < mod.bytes_moved(p) < 1e9 and H.meta_nbytes(args) < 4 * 2**30
            assert mod.flops(p) == 2 * Bsz * L * Hh * P * N
            g = mod.grid(cfg, p)
            assert g == (triton.cdiv(P, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]), Bsz * nc, Hh)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == g[0] * g[1] * g[2]
            assert sum(its) == g[0] * Hh * Bsz * sum(-(-min(chunk, L - c * chunk) // cfg["BLOCK_K"])
                                                     for c in range(nc))
            assert mod.loop_iterations(cfg, p) == chunk // cfg["BLOCK_K"] == max(its)


def test_hooks_on_small_points_and_inputs():
    """make_inputs' tensors (xbc views, a real within-chunk cumsum flat past L, seq_idx from
    seq_lengths), cta_iterations' order (tiles fastest, then chunks, then heads), the seed."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 100, 4, 2, 32, 48, 32, "bf16", 3, "xbc")
    inputs = mod.make_inputs(p, seed=1, device="cpu")
    x, bm, dt, dA, seq = (inputs[k] for k in ("x", "B", "dt", "dA_cumsum", "seq_idx"))
    assert x.shape == (2, 100, 4, 32) and bm.shape == (2, 100, 2, 48) and x.dtype == bm.dtype == torch.bfloat16
    assert x.stride() == (100 * (128 + 192), 128 + 192, 32, 1) and bm.stride()[:2] == x.stride()[:2]
    assert bm.data_ptr() == x.data_ptr() + 2 * 128                  # B follows x in each xBC row
    assert dt.shape == (2, 4, 100) and dA.shape == (2, 4, 4, 32) and dt.dtype == dA.dtype == torch.float32
    assert 1e-3 <= float(dt.min()) and float(dt.max()) <= 1e-1
    steps = torch.diff(dA, dim=-1, prepend=torch.zeros((2, 4, 4, 1)))
    assert bool((steps[:, :, :3] < 0).all())                                 # A < 0, dt > 0
    assert torch.equal(steps[:, :, 3, 4:], torch.zeros((2, 4, 28)))          # flat past L = 100
    ratio = steps[:, :, :3].reshape(2, 4, 96) / dt[:, :, :96]
    assert torch.allclose(ratio, ratio[..., :1].expand_as(ratio), rtol=1e-4)  # dt * A, one A a head
    assert seq.dtype == torch.int32 and seq.shape == (2, 100)
    lens = mod.seq_lengths(p, 1)
    assert torch.equal(seq[1], torch.repeat_interleave(torch.arange(3, dtype=torch.int32), torch.tensor(lens)))
    assert float(x.float().std()) > 0.5 and float(bm.float().std()) > 0.5
    again = mod.make_inputs(p, seed=1, device="cpu")
    assert torch.equal(again["x"], x) and torch.equal(again["dA_cumsum"], dA)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["x"], x)
    c = _cfg(16, 32, 16, 0, 4, 2)                    # 2 x 2 tiles, chunks of 2 / 2 / 2 / 1 steps
    assert mod.grid(c, p) == (4, 8, 4)
    assert mod.cta_iterations(c, p) == ([2] * 12 + [1] * 4) * 2 * 4
    ref = mod.reference(inputs)
    assert ref.shape == (2, 4, 4, 32, 48) and ref.dtype == torch.float32 and 0.05 < float(ref.abs().max()) < 5
    base = mod.torch_baseline(inputs)
    assert base.shape == ref.shape and base.dtype == torch.float32


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    inputs = mod.make_inputs(_pt(1, 40, 4, 2, 16, 16, 16, "fp16", 2), device="cpu")
    x, bm, dt, dA, seq = (inputs[k] for k in ("x", "B", "dt", "dA_cumsum", "seq_idx"))
    f = mod.ssd_chunk_state
    with pytest.raises(ValueError, match="BLOCK_M=24"):
        f(x, bm, dt, dA, seq, BLOCK_M=24)
    with pytest.raises(ValueError, match="BLOCK_K=8"):
        f(x, bm, dt, dA, seq, BLOCK_K=8)
    with pytest.raises(ValueError, match="SCALE_X=2"):
        f(x, bm, dt, dA, seq, SCALE_X=2)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        f(x, bm.bfloat16(), dt, dA, seq)
    with pytest.raises(ValueError, match="bf16 / fp16"):
        f(x.float(), bm.float(), dt, dA, seq)
    with pytest.raises(ValueError, match="must be fp32"):
        f(x, bm, dt.half(), dA, seq)
    with pytest.raises(ValueError, match="G dividing H"):
        f(x, bm[:, :, :1].expand(1, 40, 3, 16), dt, dA, seq)
    with pytest.raises(ValueError, match="dA_cumsum"):
        f(x, bm, dt, dA[:, :, :2], seq)
    with pytest.raises(ValueError, match="unit stride"):
        f(x.transpose(2, 3).contiguous().transpose(2, 3), bm, dt, dA, seq)
    with pytest.raises(ValueError, match="seq_idx must be int32"):
        f(x, bm, dt, dA, seq.long())
    with pytest.raises(ValueError, match="states must be"):
        f(x, bm, dt, dA, seq, states=torch.empty((1, 3, 4, 16, 16), dtype=torch.float16))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 40, 4, 2, 16, 16, 16, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="layout 'nhwc'"):
        mod.make_inputs(_pt(1, 40, 4, 2, 16, 16, 16, "bf16", 0, "nhwc"), device="cpu")
    with pytest.raises(ValueError, match="H=4 is not a multiple of G=3"):
        mod.bytes_moved(_pt(1, 40, 4, 3, 16, 16, 16, "bf16"))
    with pytest.raises(ValueError, match="n_seqs=41"):
        mod.make_inputs(_pt(1, 40, 4, 2, 16, 16, 16, "bf16", 41), device="cpu")


def test_examples_import_without_torch():
    """The launcher contract: a module imports with no torch (it is imported inside the functions)."""
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(COMPILE_CFGS))
def test_example_compiles_sm90(shared_cache, kernel):
    """On sm_90: BASELINE and four more compile without spills inside 227 KiB; BLOCK_M 64 runs a
    bf16 wgmma (with SCALE_X 1 its A operand, the scaled x tile, from registers: no shared-memory
    store of a scaled tile in the loop), BLOCK_M 32 at 4 warps an mma.sync."""
    from occmodel import compile_kernel

    mod = load_example(kernel)
    assert COMPILE_CFGS[kernel][0] == mod.BASELINE
    for cfg, res in H.compile_results(kernel, COMPILE_CFGS[kernel], "sm_90"):
        assert res.status == "ok", f"{kernel} {cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and 0 < res.shared <= H200_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res)
        assert res.shared <= _smem_bound(cfg, mod.POINTS[0]), (cfg, res.shared)
    for cfg, op in ((mod.BASELINE, "wgmma.mma_async"), (_cfg(64, 128, 64, 1, 4, 3), "wgmma.mma_async"),
                    (_cfg(32, 64, 64, 0, 4, 3), "mma.sync")):
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[0]), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], keep_ir=True)
        assert res.status == "ok", res.message
        assert op in res.ptx and ".bf16" in res.ptx, cfg
        if op.startswith("wgmma"):
            from_regs = "ttg.dot_op<{opIdx = 0" in res.ttgir
            assert from_regs == bool(cfg["SCALE_X"]), cfg


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block, mma.sync) configs of both SCALE_X compile and fit."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0, (cfg, res)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_120", "sm_90"])
def test_other_points_compile(shared_cache, arch):
    """The second point (seq_idx, xBC strides, 8 groups) and the third (fp16, ragged) compile
    at both SCALE_X, as they are launched there."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    for p in mod.POINTS[1:]:
        for cfg in (_cfg(64, 64, 32, 1, 8, 2), _cfg(64, 128, 64, 0, 4, 2)):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch=arch, num_warps=cfg["num_warps"],
                                 num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, f"{p} {cfg} on {arch}: {res.status}: {res.message}"


# ----------------------------------------------------------------- the subprocess side
def _run_prefilled() -> None:
    """Under TRITON_INTERPRET=1: the PREFILLED cases into a NaN-filled states= buffer; one JSON line."""
    import torch

    assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"
    sys.path.insert(0, str(H.TESTS))
    from test_kernels_interpret import _patch_interpreter_bf16_dot
    _patch_interpreter_bf16_dot()
    mod = load_example(KERNEL)
    results = {}
    for name in PREFILLED:
        point, cfg = CASES[KERNEL][name]
        try:
            inputs = mod.make_inputs(point, seed=len(name) + 1, device="cpu")
            _prepare(name, point, inputs)
            buf = torch.full(_states_shape(point), float("nan"), dtype=torch.float32)
            got = mod.ssd_chunk_state(inputs["x"], inputs["B"], inputs["dt"], inputs["dA_cumsum"], inputs["seq_idx"],
                                      states=buf, **cfg)
            results[name] = H.compare(got, mod.reference(inputs), point["dtype"], TOL)
            results[name]["same_buffer"] = got.data_ptr() == buf.data_ptr()
        except Exception as exc:          # reported per case by the test
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1] == "prefilled":
        _run_prefilled()
    else:
        H.run_cases(sys.argv[1], CASES[sys.argv[1]], TOL, prepare=_prepare, baseline=True)
