"""examples/topk_block_attn.py (selected-block sparse attention forward, NSA's selection branch /
MoBA: per query token and K/V head a [G_PAD, DK] query-group tile attends to the S key blocks
block_idx lists, gathered BLOCK_N keys a step with an online softmax, QPP tokens a program)
against a torch reference on the CPU through Triton's interpreter, its launcher hooks against
the shapes, its study sweep against the points, and a compile for sm_90 and sm_120 from its own
``example_args``.

As in test_examples_round23_a.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round24_d.py topk_block_attn``) that prints one JSON line.
The interpreter's tl.dot multiplies bf16 bit patterns and its fp32 -> bf16 conversion truncates;
the subprocess widens bf16 dot operands to fp32 and rounds to nearest even (as the GPU does).

Shapes are small, odd and ragged: the query group exact (G 16) and padded (G 1, 4, 7, 8, 48 ->
16 / 64 dot rows); DK and DV powers of two and split in two dot parts (DK 96 = 64 + 32, 192 =
128 + 64, DV 80 = 64 + 16); T_kv not a multiple of BS (a partial last block); the queries at
the end of the cache (a prefill chunk) and the whole prompt (T = T_kv: early tokens with fewer
than S causal blocks, -1 padding); T not a multiple of QPP (a last program's token past T);
hand-made index entries past the token's own block and far past the cache (skipped), a row of
all -1 (out = 0), q / k / v as views of one packed QKV tensor and block_idx a strided view; BS
16 / 32 / 64 / 128 with BLOCK_N 16 / 32 / 64 / 128 (1 to 4 steps a block); int32 and int64 key
offsets; bf16 and fp16; QPP 1 / 2 / 4, 2-8 warps, num_stages 1-3.

Per case: launch's output against the fp32 reference as the GPU study's gate sees it (the
harness's tolerance x max|ref|), its shape, dtype and contiguity; torch_baseline (SDPA over the
gathered keys) against the same reference.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "topk_block_attn"
ROLE = "held-out-24"
H200_SMS = 132
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["topk_block_attn"] once the lead adds it)
SWEEP_AXES = {"BLOCK_N": [16, 32, 64], "QPP": [1, 2, 4], "num_warps": [4, 8], "num_stages": [1, 2, 3]}


def _cfg(bn, qpp=1, w=4, st=2):
    return {"BLOCK_N": bn, "QPP": qpp, "num_warps": w, "num_stages": st}


def _pt(B, T, T_kv, Hq, Hkv, DK, DV, BS, S, dtype="bf16"):
    return {"B": B, "T": T, "T_kv": T_kv, "Hq": Hq, "Hkv": Hkv, "DK": DK, "DV": DV, "BS": BS, "S": S,
            "dtype": dtype}


# case -> (point, cfg); comments: G (-> dot rows), head dims, blocks, steps a token
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # NSA's shape in small: G 16 exact, DK 192 = 128 + 64 (two q k^T dots), DV 128; a 6-token
        # chunk at the end of 200 keys (a partial last block of 8), BS 32, 4 blocks, 2 steps each
        "nsa_g16_dk192_bf16": (_pt(1, 6, 200, 32, 2, 192, 128, 32, 4, "bf16"), _cfg(16, 1, 4, 2)),
        # MQA G 48 (-> 64 rows), D 64, BS 16, 3 blocks; 5 tokens at QPP 4 (the last program's slots
        # 2-4 past T redo token 4), fp16, 8 warps, 3 stages
        "mqa_g48_qpp4_tail_fp16": (_pt(2, 5, 96, 48, 1, 64, 64, 16, 3, "fp16"), _cfg(16, 4, 8, 3)),
        # the whole prompt (T = T_kv = 40): the first tokens have 1-2 causal blocks of the 4 (-1
        # padding); G 7 (-> 16 rows), D 32, BS 16
        "prompt_g7_padding_bf16": (_pt(1, 40, 40, 14, 2, 32, 32, 16, 4, "bf16"), _cfg(16, 1, 2, 1)),
        # G 1 (MHA, -> 16 rows), DK 96 = 64 + 32, DV 80 = 64 + 16 (split accumulators), BS 64 in one
        # step, 2 blocks; 7 tokens at QPP 2
        "g1_split_dims_bn64_fp16": (_pt(1, 7, 300, 3, 3, 96, 80, 64, 2, "fp16"), _cfg(64, 2, 4, 1)),
        # MoBA-like coarse blocks: BS 128 in 4 steps of 32, 3 blocks, G 8 (-> 16), D 128; the int64
        # key offsets (OFF64 = 1, forced: the int32 ones are every other case's)
        "moba_bs128_bn32_off64_bf16": (_pt(2, 4, 1000, 16, 2, 128, 128, 128, 3, "bf16"), _cfg(32, 1, 8, 3)),
        # q, k, v views of one packed [B, T, Hq + 2 Hkv, D] tensor, block_idx a strided view, hand-made
        # entries past the token (skipped) and a row of -1 (out 0); G 4, D 64, BS 16, QPP 2
        "packed_views_edits_fp16": (_pt(2, 24, 24, 8, 2, 64, 64, 16, 3, "fp16"), _cfg(16, 2, 2, 2)),
        # BLOCK_N 128 (a whole 128-key block a step), 2 blocks, G 16, D 64, QPP 4 over 3 tokens
        "bn128_bs128_bf16": (_pt(1, 3, 520, 16, 1, 64, 64, 128, 2, "bf16"), _cfg(128, 4, 4, 2)),
    },
}
PACKED = "packed_views_edits_fp16"
OFF64_CASE = "moba_bs128_bn32_off64_bf16"
EMPTY_ROW = (1, 5, 1)                   # (b, t, K/V head) of the packed case's all -1 row

# configs compiled at the module's first POINT (sm_90: BASELINE first)
COMPILE_CFGS = [_cfg(32, 1, 4, 2), _cfg(64, 4, 8, 3), _cfg(16, 1, 4, 1), _cfg(64, 1, 4, 3), _cfg(16, 2, 8, 2)]
SM120_CFGS = [_cfg(32, 1, 4, 2), _cfg(64, 1, 4, 3), _cfg(64, 4, 8, 3)]


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """PACKED: q, k, v the three slices of one packed tensor (strides (T (Hq + 2 Hkv) D, (Hq + 2 Hkv) D,
    D, 1)); block_idx the middle S entries of a [B, T, Hkv, S + 2] tensor; entries edited: one
    block past the token's own, one far past the cache, and the row EMPTY_ROW all -1."""
    import torch

    if name == OFF64_CASE:
        inputs["int64_offsets"] = True
    if name != PACKED:
        return
    q, k, v, idx = inputs["q"], inputs["k"], inputs["v"], inputs["block_idx"]
    hq, hkv = q.shape[2], k.shape[2]
    packed = torch.cat([q, k, v], dim=2)
    inputs["q"], inputs["k"], inputs["v"] = packed[:, :, :hq], packed[:, :, hq:hq + hkv], packed[:, :, hq + hkv:]
    idx = idx.clone()
    bs = point["BS"]
    idx[0, 3, 0, 1] = 3 // bs + 1                        # the block after token 3's own: future keys
    idx[1, 20, 1, 2] = 1 << 27                           # far past the cache (x BS wraps int32)
    idx[EMPTY_ROW] = -1
    wide = torch.full(idx.shape[:3] + (idx.shape[3] + 2,), 7, dtype=torch.int32)
    wide[..., 1:-1] = idx
    inputs["block_idx"] = wide[..., 1:-1]


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    assert res["shape"] == [p["B"], p["T"], p["Hq"], p["DV"]]
    assert res["dtype"] == p["dtype"] and res["contiguous"] is True, res
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    assert res["scale"] > 0.3, res                      # a real output, not zeros
    if name == PACKED:
        hq, hkv, d = p["Hq"], p["Hkv"], p["DK"]
        assert res["q_strides"] == [p["T"] * (hq + 2 * hkv) * d, (hq + 2 * hkv) * d, d, 1], res
        assert res["idx_strides"] == [p["T"] * p["Hkv"] * (p["S"] + 2), p["Hkv"] * (p["S"] + 2), p["S"] + 2, 1]
        assert res["empty_row_absmax"] == 0.0 and res["empty_row_ref_absmax"] == 0.0, res


def test_cases_cover_every_code_path():
    """Every tunable at >= 2 values bracketing the sweep; both dtypes; G exact and padded; DK and
    DV split and not; a partial last block; -1 padding; a last program's token past T; BS larger
    than BLOCK_N (several steps a block) and equal to it."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    gs = {p["Hq"] // p["Hkv"] for p, _ in cases}
    assert 16 in gs and any(g != mod._group_pad(g) for g in gs) and any(mod._group_pad(g) > 16 for g in gs)
    assert {mod._split_dim("DK", p["DK"])[1] > 0 for p, _ in cases} == {True, False}
    assert {mod._split_dim("DV", p["DV"])[1] > 0 for p, _ in cases} == {True, False}
    assert any(p["T_kv"] % p["BS"] for p, _ in cases)
    assert any(p["T"] == p["T_kv"] and p["T"] < p["S"] * p["BS"] for p, _ in cases)
    assert any(p["T"] < p["T_kv"] for p, _ in cases)
    assert any(p["T"] % c["QPP"] for p, c in cases)
    assert {p["BS"] == c["BLOCK_N"] for p, c in cases} == {True, False}
    assert OFF64_CASE in CASES[KERNEL] and PACKED in CASES[KERNEL]
    for k in ("BLOCK_N", "QPP", "num_warps", "num_stages"):
        tested = {c[k] for _, c in cases}
        assert min(tested) <= min(SWEEP_AXES[k]) and max(tested) >= max(SWEEP_AXES[k]), (k, tested)


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides, the derived G / G_PAD / dim splits, the grid and the key steps; bytes_moved / flops;
    inputs < 4 GB; 100 MB - 2 GB of traffic."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "topk_block_attn", "make_block_idx"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.BASELINE["num_stages"] == 2 and mod.ROLE == ROLE
    assert mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, T, T_kv, hq, hkv, dk, dv, bs, S = (p[k] for k in ("B", "T", "T_kv", "Hq", "Hkv", "DK", "DV", "BS", "S"))
        g = hq // hkv
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            dt = dts[p["dtype"]]
            assert a["Q"].shape == (B, T, hq, dk) and a["Q"].dtype == dt and a["Q"].is_contiguous()
            assert a["K"].shape == (B, T_kv, hkv, dk) and a["K"].dtype == dt
            assert a["V"].shape == (B, T_kv, hkv, dv) and a["V"].dtype == dt
            assert a["O"].shape == (B, T, hq, dv) and a["O"].dtype == dt
            assert a["IDX"].shape == (B, T, hkv, S) and a["IDX"].dtype == torch.int32
            assert (a["T"], a["q_offset"], a["n_sel"]) == (T, T_kv - T, S)
            assert math.isclose(a["sm_scale"], dk ** -0.5)
            assert (a["stride_qb"], a["stride_qt"], a["stride_qh"]) == (T * hq * dk, hq * dk, dk)
            assert (a["stride_kb"], a["stride_kt"], a["stride_kh"]) == (T_kv * hkv * dk, hkv * dk, dk)
            assert (a["stride_vb"], a["stride_vt"], a["stride_vh"]) == (T_kv * hkv * dv, hkv * dv, dv)
            assert (a["stride_ob"], a["stride_ot"], a["stride_oh"]) == (T * hq * dv, hq * dv, dv)
            assert (a["stride_ib"], a["stride_it"], a["stride_ih"]) == (T * hkv * S, hkv * S, S)
            assert (a["G"], a["G_PAD"]) == (g, max(16, 1 << (g - 1).bit_length()))
            assert a["DK0"] + a["DK1"] == dk and a["DV0"] + a["DV1"] == dv and a["BS"] == bs
            assert a["OFF64"] == 0
            assert (a["BLOCK_N"], a["QPP"]) == (cfg["BLOCK_N"], cfg["QPP"])
            assert mod.grid(cfg, p) == (-(-T // cfg["QPP"]), hkv, B)
            assert mod.loop_iterations(cfg, p) == cfg["QPP"] * S * bs // cfg["BLOCK_N"]
        gathered = B * T * hkv * S * bs * (dk + dv) * 2
        assert mod.bytes_moved(p) == gathered + B * T * hq * (dk + dv) * 2 + B * T * hkv * S * 4
        assert mod.flops(p) == 2 * B * T * hq * S * bs * (dk + dv)
        inputs = 2 * (B * T * hq * dk + B * T_kv * hkv * (dk + dv)) + 4 * B * T * hkv * S
        assert inputs < 4 * 2**30
        assert 100e6 <= mod.bytes_moved(p) <= 2e9
        # the whole cache is far smaller than the gathers (L2 serves the repeats)
        assert B * T_kv * hkv * (dk + dv) * 2 < gathered / 5
    # a cache slice of 2^31 elements or more: int64 key offsets
    big = dict(mod.POINTS[2], T_kv=1 << 24, T=8)
    assert mod.example_args(mod.BASELINE, big)["OFF64"] == 1
    assert mod.example_args(mod.BASELINE, dict(big, T_kv=(1 << 24) - 1))["OFF64"] == 0
    # the points differ: group (exact / padded, 8-48), head dims (split / not), block size, count, dtype
    gs = [p["Hq"] // p["Hkv"] for p in mod.POINTS]
    assert gs == [16, 48, 8]
    assert [mod._split_dim("DK", p["DK"])[1] for p in mod.POINTS] == [64, 0, 0]
    assert {p["BS"] for p in mod.POINTS} == {64, 512} and {p["S"] for p in mod.POINTS} == {16, 3}
    assert {p["dtype"] for p in mod.POINTS} == {"bf16", "fp16"}


def test_block_idx_is_nsa_like():
    """make_block_idx at every point and on a whole small prompt: the first and the token's own
    block always, min(S, own + 1) distinct causal blocks, -1 only as trailing padding, seeded;
    the own block not always in one slot (a top-k's order)."""
    import torch

    mod = load_example(KERNEL)
    pts = [dict(p) for p in mod.POINTS] + [_pt(2, 50, 50, 4, 2, 64, 64, 8, 5)]
    for p in pts:
        idx = mod.make_block_idx(p["B"], p["T"], p["T_kv"], p["Hkv"], p["BS"], p["S"], seed=3)
        assert idx.shape == (p["B"], p["T"], p["Hkv"], p["S"]) and idx.dtype == torch.int32
        pos = torch.arange(p["T_kv"] - p["T"], p["T_kv"]).view(1, -1, 1, 1)
        own = pos // p["BS"]
        valid = idx >= 0
        n = valid.sum(-1, keepdim=True)
        assert torch.equal(n, torch.clamp(own + 1, max=p["S"]).expand_as(n))
        slot = torch.arange(p["S"]).view(1, 1, 1, -1)
        assert torch.equal(valid, slot < n)                                 # -1s trailing
        assert bool(((idx <= own) | ~valid).all())                           # causal
        assert bool((idx == 0).any(-1).all()) and bool((idx == own).any(-1).all())
        srt = idx.sort(-1).values
        assert bool(((srt[..., 1:] != srt[..., :-1]) | (srt[..., 1:] < 0)).all())   # distinct
        if p["S"] > 2 and p["T_kv"] - p["T"] > p["S"] * p["BS"]:
            assert len(set((idx == own).int().argmax(-1).flatten().tolist())) > 1
        assert torch.equal(idx, mod.make_block_idx(p["B"], p["T"], p["T_kv"], p["Hkv"], p["BS"], p["S"], seed=3))
        assert not torch.equal(idx, mod.make_block_idx(p["B"], p["T"], p["T_kv"], p["Hkv"], p["BS"], p["S"],
                                                       seed=4))


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, seed; reference against a per-token loop written out plainly
    (softmax over the visible keys of the listed blocks); torch_baseline's dtype and agreement."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 5, 37, 6, 2, 48, 32, 8, 3, "bf16")
    inp = mod.make_inputs(p, seed=1, device="cpu")
    assert inp["q"].shape == (2, 5, 6, 48) and inp["q"].dtype == torch.bfloat16
    assert inp["k"].shape == (2, 37, 2, 48) and inp["v"].shape == (2, 37, 2, 32)
    assert inp["block_idx"].shape == (2, 5, 2, 3) and inp["block_size"] == 8
    assert math.isclose(inp["sm_scale"], 48 ** -0.5)
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["k"], inp["k"])
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["k"], inp["k"])
    inp["block_idx"][1, 2, 0, 2] = 5                    # pos 34 -> own block 4: block 5 skipped
    ref = mod.reference(inp)
    assert ref.shape == (2, 5, 6, 32) and ref.dtype == torch.float32
    q, k, v, idx = (inp[n].float() if n != "block_idx" else inp[n] for n in ("q", "k", "v", "block_idx"))
    for b in range(2):
        for t in range(5):
            pos = 32 + t
            for h in range(6):
                kh = h // 3
                keys = [n * 8 + j for n in idx[b, t, kh].tolist() if 0 <= n <= pos // 8 for j in range(8)
                        if n * 8 + j <= pos]
                s = (k[b, keys, kh] @ q[b, t, h]) * inp["sm_scale"]
                want = torch.softmax(s, 0) @ v[b, keys, kh]
                assert torch.allclose(ref[b, t, h], want, atol=1e-5), (b, t, h)
    base = mod.torch_baseline(inp)
    assert base.dtype == torch.bfloat16 and base.shape == ref.shape
    assert float((base.float() - ref).abs().max()) < 2e-2 * float(ref.abs().max())
    # a row of -1: 0 in both
    inp["block_idx"][0, 0, 0] = -1
    assert float(mod.reference(inp)[0, 0, :3].abs().max()) == 0.0
    assert float(mod.torch_baseline(inp)[0, 0, :3].float().abs().max()) == 0.0
    assert mod.bytes_moved(_pt(1, 2, 64, 16, 1, 64, 64, 16, 2)) == 2 * 2 * 16 * 128 * 2 + 2 * 16 * 128 * 2 + 2 * 2 * 4


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    q = torch.ones(1, 4, 8, 64, dtype=torch.float16)
    k = torch.ones(1, 32, 2, 64, dtype=torch.float16)
    v = torch.ones(1, 32, 2, 64, dtype=torch.float16)
    idx = torch.zeros(1, 4, 2, 2, dtype=torch.int32)
    f = mod.topk_block_attn
    with pytest.raises(ValueError, match="BLOCK_N=48"):
        f(q, k, v, idx, 16, BLOCK_N=48)
    with pytest.raises(ValueError, match="BLOCK_N=32 must divide the block size BS=16"):
        f(q, k, v, idx, 16, BLOCK_N=32)
    with pytest.raises(ValueError, match="QPP=0"):
        f(q, k, v, idx, 16, BLOCK_N=16, QPP=0)
    with pytest.raises(ValueError, match="num_warps=3"):
        f(q, k, v, idx, 16, BLOCK_N=16, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        f(q, k, v, idx, 16, BLOCK_N=16, num_stages=0)
    with pytest.raises(ValueError, match="block_size=8"):
        f(q, k, v, idx, 8, BLOCK_N=16)
    with pytest.raises(ValueError, match="fp16 or bf16"):
        f(q.float(), k.float(), v.float(), idx, 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="share one dtype"):
        f(q, k.bfloat16(), v, idx, 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="expected q of 4 dims"):
        f(q[0], k, v, idx, 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="int32"):
        f(q, k, v, idx.long(), 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="block_idx"):
        f(q, k, v, idx[:, :3], 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="Hq=8 must be a multiple of Hkv=3"):
        f(q, torch.ones(1, 32, 3, 64, dtype=torch.float16), torch.ones(1, 32, 3, 64, dtype=torch.float16),
          torch.zeros(1, 4, 3, 2, dtype=torch.int32), 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="DK=112"):
        f(torch.ones(1, 4, 8, 112, dtype=torch.float16), torch.ones(1, 32, 2, 112, dtype=torch.float16), v, idx, 16,
          BLOCK_N=16)
    with pytest.raises(ValueError, match="T=4 query tokens"):
        f(q, k[:, :3], v[:, :3], idx, 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="v "):
        f(q, k, v[:, :16], idx, 16, BLOCK_N=16)
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 2, 4, 16, 1, 64, 64, 16, 2, "fp32"), device="cpu")
    with pytest.raises(ValueError, match="DV=40"):
        mod.bytes_moved(_pt(1, 2, 4, 16, 1, 64, 40, 16, 2))
    with pytest.raises(ValueError, match="BLOCK_N=64 must divide the block size BS=32"):
        mod.grid(_cfg(64), _pt(1, 2, 64, 16, 1, 64, 64, 32, 2))
    with pytest.raises(ValueError, match="S=0"):
        mod.loop_iterations(mod.BASELINE, _pt(1, 2, 64, 16, 1, 64, 64, 32, 0))


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_N 16 / 32 / 64 keys a step x QPP 1 / 2 / 4 tokens a
    program x 4 / 8 warps x num_stages 1-3: the K/V gather loop's tl.dots are pipelined) with
    BASELINE among them; at every point each config is valid and launches >= 4 x 132 CTAs
    (2304-2560 (token, K/V head) pairs a point: 576-640 CTAs at QPP 4). 2 warps are left out:
    at the first point (G 16, DK 192) BLOCK_N 64 needs 220-255 registers there and spills, at the
    second (G 48 -> a [64, 128] fp32 accumulator) every 2-warp config spills."""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES)
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 45 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_fit(c, p["BS"])
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 4 * H200_SMS, (p, c)


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
    """On sm_90: BASELINE and four more at the first point (G 16, DK 192 split, bf16) compile
    without spills; and BASELINE and the largest tile at the other two (G 48 -> 64 rows fp16; G 8 ->
    16 rows with 512-key blocks)."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0 and res.shared > 0, (cfg, res.n_regs, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], _cfg(64, 2, 8, 3)):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, res.message)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.shared <= SM120_SMEM_PER_BLOCK and res.n_spills == 0


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (as the GPU study's gate) and torch_baseline
    against the same; the output's dtype and contiguity, the packed case's strides and its empty
    row; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        res = {"dtype": names.get(out.dtype), "contiguous": bool(out.is_contiguous()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if name == PACKED:
            b, t, h = EMPTY_ROW
            g = point["Hq"] // point["Hkv"]
            res.update(q_strides=list(inputs["q"].stride()), idx_strides=list(inputs["block_idx"].stride()),
                       empty_row_absmax=float(out[b, t, h * g:(h + 1) * g].float().abs().max()),
                       empty_row_ref_absmax=float(ref[b, t, h * g:(h + 1) * g].abs().max()))
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
