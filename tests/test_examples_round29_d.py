"""examples/swin_window_attn.py (Swin Transformer v1 / v2 window multi-head self-attention forward: per
window and head softmax(q k^T scale + relative position bias (+ the shifted-window mask)) v, SwinV2's
cosine attention with a clamped per-head logit scale; q / k / v read in place from the packed
[B_, N, 3, H, D] projection, out [B_, N, H D]; one [BLOCK_M, keys] score tile a window, the keys a
power-of-two block or a power-of-two head + tail, the bias (+ mask) tile gathered or read pre-expanded
once a program and held over a loop of WINDOWS windows) against its torch reference on the CPU through
Triton's interpreter, its launcher hooks against the shapes, its study sweep against the points, and
a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round27_c.py the interpreter cases run in a subprocess (this file run as a
script: ``python tests/test_examples_round29_d.py swin_window_attn``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 dot operands widened to fp32; bf16
rounding; under triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged: windows of 1 (N 1: one real key in a 16-key block), 4 (16), 6 (36 =
32 + a 16-key tail, 12 of its keys padding), 7 (49 -> 64 keys), 8 (64), 9 (81 = 64 + a 32-key tail,
15 padding) and 12 (144 = 128 + 16 exactly); the query blocks ragged (49, 36, 81, 1 past BLOCK_M) and
even; every (HAS_MASK, EXPANDED, COSINE) combination, every (KEYS_B > 0, EVEN_K) pair, both EVEN_M;
image counts WINDOWS does not divide (a short last group) and one group shorter than WINDOWS; shifted
blocks (Swin's -100 mask, 4 windows an image) and regular ones; head dims 16 and 32; fp16 and bf16;
qkv head-interleaved ([B_, N, H, 3, D] storage seen as [B_, N, 3, H, D]) with NaN padding after every
head's D elements, the table a column slice of a NaN-filled wider table, the index int64 stored
transposed, the mask a slice of a NaN-padded buffer (a stray read poisons the result); the expanded
term a strided view; an int16 index; timm's qk_scale override; a SwinV2 logit scale past the ln 100
clamp; BLOCK_M 16 / 32 / 64, WINDOWS 2 / 4 / 8, 4 / 8 warps, num_stages 1 / 2.

Per case: launch's output within the dtype's tolerance of the fp64 reference (the harness's
per-element check) and each element within half an ulp of its own value plus one unit roundoff of
softmax(s) @ |v| (P rounded to the input dtype for P @ V) plus 1e-4 of it; the output fresh,
contiguous, in qkv's dtype; the inputs unchanged; the bias, the mask and the clamp each changing the
result where present; one-token windows giving v exactly; torch_baseline (timm's SDPA path; SwinV2's
eager path, its cosines rounded to the input dtype, within 2e-2 (fp16) / 0.15 (bf16) of the largest
output) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "swin_window_attn"
ROLE = "held-out-29"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["swin_window_attn"] once the lead adds it)
SWEEP_AXES = {"BLOCK_M": [16, 64], "WINDOWS": [2, 4, 8], "EXPANDED": [0, 1], "num_warps": [4, 8],
              "num_stages": [1, 2]}


def _cfg(bm, win, ex, w=4, st=1):
    return {"BLOCK_M": bm, "WINDOWS": win, "EXPANDED": ex, "num_warps": w, "num_stages": st}


def _pt(B, res, M, heads, D=16, shift=0, cosine=0, dtype="fp16"):
    return {"B": B, "res": res, "window": M, "heads": heads, "head_dim": D, "shift": shift, "cosine": cosine,
            "dtype": dtype}


# case -> (point, cfg); comments: N (KEYS_A + KEYS_B), EVEN_K, EVEN_M, (HAS_MASK, EXPANDED, COSINE)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # Swin's 7 x 7 window: N 49 (64 + 0), EVEN_K 0, EVEN_M 0; (1, 0, 0); 4 windows an image, 3 images
        # in groups of 2 (a short last group), head dim 32
        "window7_shift_fp16": (_pt(3, 14, 7, 2, 32, shift=1), _cfg(64, 2, 0, 4, 2)),
        # N 144 (128 + 16), EVEN_K 1, EVEN_M 1 (9 query blocks of 16); (0, 1, 0); a regular block: B_ 2
        # one-window images, one group of 4 holding 2
        "window12_tail_bf16": (_pt(2, 12, 12, 2, 16, dtype="bf16"), _cfg(16, 4, 1, 8, 1)),
        # SwinV2 window 8: N 64 (64 + 0), EVEN_K 1, EVEN_M 1; (1, 0, 1); 3 images, one group of 8
        "v2_window8_shift_fp16": (_pt(3, 16, 8, 2, 32, shift=1, cosine=1), _cfg(16, 8, 0, 4, 2)),
        # N 36 (32 + 16: 12 tail keys past N), EVEN_K 0, EVEN_M 0; (1, 1, 1); head 0's logit scale
        # past the ln 100 clamp
        "v2_tail_ragged_bf16": (_pt(2, 12, 6, 3, 16, shift=1, cosine=1, dtype="bf16"), _cfg(64, 4, 1, 8, 2)),
        # N 81 (64 + 32: 15 tail keys past N), EVEN_K 0, EVEN_M 0 (3 query blocks of 32); (0, 0, 0);
        # the index int16
        "window9_tail_int16_fp16": (_pt(2, 9, 9, 2, 16), _cfg(32, 2, 0, 4, 1)),
        # N 1 (one key in a block of 16), EVEN_K 0, EVEN_M 0; (0, 0, 0); 8 one-token windows in one
        # group of 8: out = v exactly
        "one_token_fp16": (_pt(2, 2, 1, 2, 16), _cfg(16, 8, 0, 8, 2)),
        # N 64, EVEN_K 1, EVEN_M 1 (one query block); (1, 1, 0); 2 images, one group of 4
        "window8_shift_expanded_bf16": (_pt(2, 16, 8, 2, 32, shift=1, dtype="bf16"), _cfg(64, 4, 1, 4, 1)),
        # N 16 (16 + 0), EVEN_K 1, EVEN_M 1; (0, 0, 1); 8 one-window images in 4 groups of 2
        "v2_window4_regular_bf16": (_pt(2, 8, 4, 2, 16, cosine=1, dtype="bf16"), _cfg(16, 2, 0, 8, 2)),
        # N 49, EVEN_K 0, EVEN_M 0; (1, 0, 0): qkv head-interleaved with NaN padding, the table a column
        # slice of a NaN table, the index int64 stored transposed, the mask a slice of a NaN buffer
        "strided_nan_fp16": (_pt(2, 14, 7, 2, 16, shift=1), _cfg(64, 4, 0, 4, 1)),
        # N 36 (32 + 16), EVEN_K 0, EVEN_M 0 (36 = 2 x 16 + 4); (0, 1, 1): the expanded term a strided
        # view of a NaN-padded buffer
        "strided_expanded_v2_fp16": (_pt(2, 12, 6, 2, 16, cosine=1), _cfg(16, 4, 1, 4, 2)),
        # N 16, EVEN_K 1, EVEN_M 1; (1, 1, 0); timm's qk_scale 0.3 instead of D^-0.5
        "custom_scale_bf16": (_pt(2, 8, 4, 3, 32, shift=1, dtype="bf16"), _cfg(16, 2, 1, 4, 1)),
    },
}
STRIDED, STRIDED_EX, INT16, SCALE, CLAMP, ONE = ("strided_nan_fp16", "strided_expanded_v2_fp16",
                                                 "window9_tail_int16_fp16", "custom_scale_bf16",
                                                 "v2_tail_ragged_bf16", "one_token_fp16")
PAD_D, PAD_T, PAD_M = 8, 3, 5

# configs compiled at the module's first POINT (Swin-T stage 1, N 49) on sm_90 (BASELINE first) and at
# the Swin-B/384 point (N 144, the most registers: 64 x 144 scores held with the bias tile on 4 warps)
COMPILE_CFGS = [_cfg(64, 4, 0, 4, 2), _cfg(64, 8, 1, 8, 1), _cfg(16, 2, 0, 8, 2)]
P1_CFGS = [_cfg(64, 4, 0, 4, 2), _cfg(64, 2, 1, 4, 1), _cfg(16, 8, 0, 4, 1)]
SM120_CFGS = [_cfg(64, 4, 0, 4, 2), _cfg(64, 4, 1, 8, 1), _cfg(16, 2, 0, 4, 2)]


def _n_keys(p):
    """(N, KEYS_A, KEYS_B) of a point."""
    mod = load_example(KERNEL)
    N = p["window"] ** 2
    return (N,) + mod._keys(N)


def _flags(p, c):
    """(KEYS_B > 0, EVEN_K, EVEN_M, HAS_MASK, EXPANDED, COSINE) of a case."""
    N, ka, kb = _n_keys(p)
    return (int(kb > 0), int(ka + kb == N), int(N % c["BLOCK_M"] == 0), p["shift"], c["EXPANDED"], p["cosine"])


def _smem_bound(cfg, p) -> int:
    """An upper bound of a config's shared memory: the q / k / v tiles of max(num_stages, 1) windows
    ((BLOCK_M + 2 keys) D 2 bytes each) plus twice the fp32 [BLOCK_M, KEYS_A] bias tile (its layout
    conversion to the score layout)."""
    N, ka, kb = _n_keys(p)
    return (max(cfg["num_stages"], 1) * (cfg["BLOCK_M"] + 2 * (ka + kb)) * p["head_dim"] * 2
            + 2 * cfg["BLOCK_M"] * ka * 4)


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: qkv head-interleaved with NaN padding, table / mask NaN-padded slices, the index int64
    stored transposed; STRIDED_EX: the expanded term a strided view of a NaN buffer; INT16: the index
    int16; SCALE: qk_scale 0.3; CLAMP: head 0's logit scale ln 200. Then copies."""
    import torch

    mod = load_example(KERNEL)
    qkv, table, index, mask = inputs["qkv"], inputs["table"], inputs["index"], inputs["mask"]
    Bw, N, _, Hh, D = qkv.shape
    nan = float("nan")
    if name == STRIDED:
        buf = torch.full((Bw, N, Hh, 3, D + PAD_D), nan, dtype=qkv.dtype)
        buf[..., :D] = qkv.permute(0, 1, 3, 2, 4)
        inputs["qkv"] = buf[..., :D].permute(0, 1, 3, 2, 4)
        tb = torch.full((table.shape[0], Hh + PAD_T), nan)
        tb[:, 1:1 + Hh] = table
        inputs["table"] = tb[:, 1:1 + Hh]
        inputs["index"] = index.long().t().contiguous().t()
        mb = torch.full((mask.shape[0], N, N + PAD_M), nan)
        mb[..., :N] = mask
        inputs["mask"] = mb[..., :N]
    if name == STRIDED_EX:
        eb = mod.expand_bias(table, index, mask)                        # [1, H, N, N]
        buf = torch.full((1, N, Hh, N + PAD_M), nan)
        buf[..., :N] = eb.permute(0, 2, 1, 3)
        inputs["expanded_bias"] = buf[..., :N].permute(0, 2, 1, 3)
    if name == INT16:
        inputs["index"] = index.to(torch.int16)
    if name == SCALE:
        inputs["scale"] = 0.3
    if name == CLAMP:
        inputs["logit_scale"][0] = math.log(200.0)
    for k in ("qkv", "table", "index", "mask", "logit_scale", "expanded_bias"):
        inputs[k + "0"] = None if inputs[k] is None else inputs[k].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    N, nW = p["window"] ** 2, (p["res"] // p["window"]) ** 2
    Bw, C = p["B"] * nW, p["heads"] * p["head_dim"]
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["shape"] == [Bw, N, C] and res["dtype"] == p["dtype"], res
    assert res["out_strides"] == [N * C, C, 1], res
    assert res["n_loose"] == 0, res            # half an ulp + u softmax @ |v| + 1e-4 of it
    assert res["inputs_unchanged"] is True and res["nonzero"] is True, res
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if N > 1:
        assert res["bias_matters"] is True, res
    if p["shift"]:
        assert res["mask_matters"] is True, res
    if name == CLAMP:
        assert res["clamp_matters"] is True, res
    if name == ONE:
        assert res["exact_v"] is True, res
    if name == STRIDED:
        D, Hh = p["head_dim"], p["heads"]
        row = Hh * 3 * (D + PAD_D)
        assert res["qkv_strides"] == [N * row, row, D + PAD_D, 3 * (D + PAD_D), 1], res
        assert res["index_strides"] == [1, N] and res["index_dtype"] == "torch.int64", res
        assert res["mask_strides"] == [N * (N + PAD_M), N + PAD_M, 1], res
    if name == INT16:
        assert res["index_dtype"] == "torch.int16", res
    if name == STRIDED_EX:
        assert res["expanded_strides"] == [N * p["heads"] * (N + PAD_M), N + PAD_M, p["heads"] * (N + PAD_M), 1]


def test_cases_cover_every_code_path():
    """Every (HAS_MASK, EXPANDED, COSINE) combination, every (tail, EVEN_K) pair, both EVEN_M, both
    dtypes, head dims 16 and 32, N 1, short last image groups; every sweep value of every tunable and
    BLOCK_M 32."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    fl = [_flags(p, c) for p, c in cases]
    assert {f[3:] for f in fl} == set(itertools.product((0, 1), repeat=3))
    assert {f[:2] for f in fl} == set(itertools.product((0, 1), repeat=2))
    assert {f[2] for f in fl} == {0, 1}
    assert {p["head_dim"] for p, _ in cases} == {16, 32} and any(p["window"] == 1 for p, _ in cases)
    n_img = [p["B"] if p["shift"] else p["B"] * (p["res"] // p["window"]) ** 2 for p, _ in cases]
    assert any(n % c["WINDOWS"] for n, (_, c) in zip(n_img, cases))
    assert any(n < c["WINDOWS"] for n, (_, c) in zip(n_img, cases))
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert 32 in {c["BLOCK_M"] for _, c in cases}


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and
    strides (qkv the contiguous projection viewed [B_, N, 3, H, D]), the flags and key blocks, the grid
    (H query blocks, nW or 1, image groups) and the loop length; bytes_moved / flops; 0.25-0.35 GB
    moved and 4-25 GFLOP a point; inputs under 1 GB."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "swin_window_attn", "expand_bias"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    for p in mod.POINTS:
        B, M, Hh, D, shift, cos = p["B"], p["window"], p["heads"], p["head_dim"], p["shift"], p["cosine"]
        N, nW = M * M, (p["res"] // M) ** 2
        Bw = B * nW
        ka, kb = mod._keys(N)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            q = a["QKV"]
            assert q.shape == (Bw, N, 3, Hh, D) and q.dtype == dts[p["dtype"]]
            assert q.stride() == (N * 3 * Hh * D, 3 * Hh * D, Hh * D, D, 1)
            assert a["O"].shape == (Bw, N, Hh * D) and a["O"].dtype == q.dtype and a["O"].is_contiguous()
            assert (a["stride_qb"], a["stride_qn"], a["stride_qs"], a["stride_qh"]) == q.stride()[:4]
            assert (a["stride_ob"], a["stride_on"], a["stride_oh"]) == (N * Hh * D, Hh * D, D)
            if cfg["EXPANDED"]:
                assert a["BIAS"].shape == (nW if shift else 1, Hh, N, N) and a["BIAS"].dtype == torch.float32
                assert a["TABLE"] is q and a["INDEX"] is q and a["MASK"] is q
                assert a["stride_bw"] == (Hh * N * N if shift else 0) and a["stride_bj"] == 1
            else:
                assert a["TABLE"].shape == ((2 * M - 1) ** 2, Hh) and a["INDEX"].shape == (N, N)
                assert a["INDEX"].dtype == torch.int32 and a["BIAS"] is q
                if shift:
                    assert a["MASK"].shape == (nW, N, N) and a["MASK"].dtype == torch.float32
                else:
                    assert a["MASK"] is q
            if cos:
                assert a["LSCALE"].shape == (Hh,) and a["LSCALE"].dtype == torch.float32
            else:
                assert a["LSCALE"] is q
            assert (a["N"], a["n_win"], a["n_img"]) == ((N, nW, B) if shift else (N, 1, Bw))
            assert a["qk_scale"] == pytest.approx(D ** -0.5)
            assert (a["COSINE"], a["HAS_MASK"], a["EXPANDED"]) == (cos, shift, cfg["EXPANDED"])
            assert (a["KEYS_A"], a["KEYS_B"], a["HEAD_DIM"]) == (ka, kb, D)
            assert a["EVEN_K"] == int(ka + kb == N) and a["EVEN_M"] == int(N % cfg["BLOCK_M"] == 0)
            assert (a["BLOCK_M"], a["WINDOWS"]) == (cfg["BLOCK_M"], cfg["WINDOWS"])
            imgs = B if shift else Bw
            assert mod.grid(cfg, p) == (Hh * -(-N // cfg["BLOCK_M"]), nW if shift else 1,
                                        -(-imgs // cfg["WINDOWS"]))
            assert mod.loop_iterations(cfg, p) == cfg["WINDOWS"]
            distinct = {id(v): v for v in a.values() if hasattr(v, "element_size")}   # stand-ins are qkv
            assert H.meta_nbytes(distinct) < 2**30
        assert mod.bytes_moved(p) == 4 * Bw * N * Hh * D * 2
        assert mod.flops(p) == 4 * Bw * Hh * N * N * D
        assert 0.25e9 <= mod.bytes_moved(p) <= 0.35e9 and 4e9 <= mod.flops(p) <= 25e9, p
    # the points differ: N 49 (padded), 144 (head + tail), 64 (exact); v1 / v2; masked or not; dtypes
    assert sorted(p["window"] for p in mod.POINTS) == [7, 8, 12]
    assert [mod._keys(p["window"] ** 2) for p in mod.POINTS] == [(64, 0), (128, 16), (64, 0)]
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES) and {p["cosine"] for p in mod.POINTS} == {0, 1}
    assert {p["shift"] for p in mod.POINTS} == {0, 1} and all(p["head_dim"] == 32 for p in mod.POINTS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, the seed, the index and the shifted mask by hand on small windows;
    expand_bias; reference by hand (one token, two tokens); torch_baseline; grid / loop; bytes / flops;
    the key blocks."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 4, 2, 3, 16, shift=1)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    qkv = inp["qkv"]
    assert qkv.shape == (8, 4, 3, 3, 16) and qkv.dtype == torch.float16 and qkv.is_contiguous()
    assert inp["table"].shape == (9, 3) and inp["table"].dtype == torch.float32
    assert inp["index"].dtype == torch.int32 and inp["logit_scale"] is None
    assert inp["index"].tolist() == [[4, 3, 1, 0], [5, 4, 2, 1], [7, 6, 4, 3], [8, 7, 5, 4]]
    assert inp["index"].tolist() == mod.relative_position_index(2).tolist()
    m = inp["mask"]
    assert m.shape == (4, 4, 4) and m.dtype == torch.float32
    assert m[0].abs().sum() == 0                                        # window (0, 0): one region
    assert m[1].tolist() == [[0, -100, 0, -100], [-100, 0, -100, 0], [0, -100, 0, -100], [-100, 0, -100, 0]]
    assert m[3].tolist() == [[0 if i == j else -100 for j in range(4)] for i in range(4)]
    eb = inp["expanded_bias"]
    assert eb.shape == (4, 3, 4, 4) and eb.is_contiguous()
    assert torch.equal(eb[2, 1], inp["table"][:, 1][inp["index"].long()] + m[2])
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["qkv"], qkv)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["qkv"], qkv)
    assert 0.8 < float(qkv.float().std()) < 1.2
    v2 = mod.make_inputs(_pt(1, 8, 4, 2, 16, cosine=1, dtype="bf16"), device="cpu")
    assert v2["mask"] is None and v2["logit_scale"].shape == (2, 1, 1) and v2["expanded_bias"].shape == (1, 2, 16, 16)
    assert 0 < float(v2["table"].min()) and float(v2["table"].max()) < 16
    assert v2["qkv"].dtype == torch.bfloat16
    # by hand: one token -> v; two tokens, one head of 16: q = k = e0 x 4 (dot 16), scale 1/4,
    # bias table [0, b1, b2] with index [[0, 1], [2, 0]], v rows 1 and 3
    one = mod.make_inputs(_pt(2, 1, 1, 2, 16), device="cpu")
    out = mod.reference(one)
    assert out.dtype == torch.float32 and torch.equal(out.view(2, 2, 16), one["qkv"][:, 0, 2].float())
    q = torch.zeros(1, 2, 3, 1, 16)
    q[0, :, 0, 0, 0] = 4.0
    q[0, :, 1, 0, 0] = 4.0
    q[0, 0, 2, 0, :] = 1.0
    q[0, 1, 2, 0, :] = 3.0
    table = torch.tensor([[0.0], [math.log(3.0)], [-math.log(3.0)]])
    index = torch.tensor([[0, 1], [2, 0]])
    ref = mod.reference({"qkv": q.half(), "table": table, "index": index, "mask": None, "logit_scale": None,
                         "scale": 0.25})
    # row 0: scores 4, 4 + ln 3 -> weights 1/4, 3/4 -> 2.5; row 1: 4 - ln 3, 4 -> 1/4, 3/4 of (1, 3)
    assert torch.allclose(ref[0, :, 0], torch.tensor([2.5, 2.5]), atol=1e-6)
    mask = torch.tensor([[[0.0, -100.0], [0.0, 0.0]]])
    ref = mod.reference({"qkv": q.half(), "table": table, "index": index, "mask": mask, "logit_scale": None,
                         "scale": 0.25})
    assert abs(float(ref[0, 0, 0]) - 1.0) < 1e-6 and abs(float(ref[0, 1, 0]) - 2.5) < 1e-6
    base = mod.torch_baseline({"qkv": q.half(), "table": table, "index": index, "mask": mask,
                               "logit_scale": None, "scale": 0.25})
    assert base.dtype == torch.float16 and torch.allclose(base.float(), ref, atol=1e-2)
    # the key blocks: one padded block, or a power-of-two head + tail where that is smaller
    assert [mod._keys(n) for n in (1, 9, 16, 25, 36, 49, 64, 81, 100, 144, 169, 196, 256)] == [
        (16, 0), (16, 0), (16, 0), (32, 0), (32, 16), (64, 0), (64, 0), (64, 32), (128, 0), (128, 16),
        (128, 64), (256, 0), (256, 0)]
    cfg = _cfg(16, 4, 0, 4)
    assert mod.grid(cfg, _pt(6, 14, 7, 3, shift=1)) == (3 * 4, 4, 2)
    assert mod.grid(cfg, _pt(6, 14, 7, 3)) == (3 * 4, 1, 6)             # regular: B_ 24 one-window images
    assert mod.loop_iterations(_cfg(64, 8, 1), _pt(6, 14, 7, 3)) == 8
    assert mod.bytes_moved(p) == 4 * 8 * 4 * 3 * 16 * 2
    assert mod.flops(p) == 4 * 8 * 3 * 16 * 16


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    qkv = torch.ones(4, 16, 3, 2, 16, dtype=torch.float16)
    t, i = torch.zeros(49, 2), torch.zeros(16, 16, dtype=torch.int32)
    with pytest.raises(ValueError, match="BLOCK_M=48"):
        mod.swin_window_attn(qkv, t, i, BLOCK_M=48)
    with pytest.raises(ValueError, match="WINDOWS=0"):
        mod.swin_window_attn(qkv, t, i, WINDOWS=0)
    with pytest.raises(ValueError, match="EXPANDED=2"):
        mod.swin_window_attn(qkv, t, i, EXPANDED=2)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.swin_window_attn(qkv, t, i, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.swin_window_attn(qkv, t, i, num_stages=0)
    with pytest.raises(ValueError, match=r"expected qkv \[B_, N, 3, H, D\]"):
        mod.swin_window_attn(qkv[:, :, :2], t, i)
    with pytest.raises(ValueError, match="fp16 / bf16"):
        mod.swin_window_attn(qkv.float(), t, i)
    with pytest.raises(ValueError, match="D=8"):
        mod.swin_window_attn(qkv[..., :8], t, i)
    with pytest.raises(ValueError, match="N=289"):
        mod.swin_window_attn(torch.ones(1, 289, 3, 1, 16, dtype=torch.float16), t[:, :1],
                             torch.zeros(289, 289, dtype=torch.int32))
    with pytest.raises(ValueError, match="unit head-dim stride"):
        mod.swin_window_attn(torch.ones(4, 16, 3, 2, 32, dtype=torch.float16)[..., ::2], t, i)
    with pytest.raises(ValueError, match=r"bias_table must be a float \[T, H=2\]"):
        mod.swin_window_attn(qkv, t[:, :1], i)
    with pytest.raises(ValueError, match=r"bias_index must be an integer \[N, N\]"):
        mod.swin_window_attn(qkv, t, i.float())
    with pytest.raises(ValueError, match=r"bias_index must be an integer \[N, N\]"):
        mod.swin_window_attn(qkv, t, i[:8])
    with pytest.raises(ValueError, match=r"mask must be a float \[nW, N, N\]"):
        mod.swin_window_attn(qkv, t, i, torch.zeros(2, 16, 8))
    with pytest.raises(ValueError, match="multiple of the mask's nW=3"):
        mod.swin_window_attn(qkv, t, i, torch.zeros(3, 16, 16))
    with pytest.raises(ValueError, match="logit_scale must hold H=2"):
        mod.swin_window_attn(qkv, t, i, logit_scale=torch.zeros(3, 1, 1))
    with pytest.raises(ValueError, match=r"expanded_bias must be a float \[nW, H, N, N\]"):
        mod.swin_window_attn(qkv, t, i, torch.zeros(2, 16, 16), EXPANDED=1, expanded_bias=torch.zeros(1, 2, 16, 16))
    with pytest.raises(ValueError, match="bias_table must be on"):
        mod.swin_window_attn(qkv, t.to("meta"), i)
    many = torch.empty((70000 * 2, 1, 3, 1, 16), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="65535"):                        # meta: never launched
        mod.swin_window_attn(many, t[:1, :1].to("meta"), torch.zeros(1, 1, dtype=torch.int32, device="meta"),
                             WINDOWS=1)
    big = torch.empty_strided((2, 64, 3, 1, 16), (2**33, 2**26, 16, 16, 1), dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="int32 in-window offsets"):
        mod.swin_window_attn(big, t[:, :1].to("meta"), torch.zeros(64, 64, dtype=torch.int32, device="meta"))
    with pytest.raises(ValueError, match="dtype 'fp32'"):
        mod.make_inputs(_pt(1, 8, 4, 2, dtype="fp32"), device="cpu")
    with pytest.raises(ValueError, match="res=10 must be a multiple of window=4"):
        mod.bytes_moved(_pt(1, 10, 4, 2))
    with pytest.raises(ValueError, match="head_dim=24"):
        mod.flops(_pt(1, 8, 4, 2, D=24))
    with pytest.raises(ValueError, match="window=17"):
        mod.grid(mod.BASELINE, _pt(1, 17, 17, 2))
    with pytest.raises(ValueError, match="shift=1 needs res > window"):
        mod.grid(mod.BASELINE, _pt(1, 8, 8, 2, shift=1))
    with pytest.raises(ValueError, match="cosine=2"):
        mod.grid(mod.BASELINE, _pt(1, 8, 4, 2, cosine=2))
    with pytest.raises(ValueError, match="B=0"):
        mod.grid(mod.BASELINE, _pt(0, 8, 4, 2))
    with pytest.raises(ValueError, match="BLOCK_M=24"):
        mod.grid(dict(mod.BASELINE, BLOCK_M=24), mod.POINTS[0])
    # no windows: nothing launched, an empty output
    e = mod.swin_window_attn(torch.ones(0, 16, 3, 2, 16, dtype=torch.bfloat16), t, i)
    assert e.shape == (0, 16, 32) and e.dtype == torch.bfloat16


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_M 16 / 64, WINDOWS 2 / 4 / 8, EXPANDED 0 / 1, 4 / 8 warps,
    num_stages 1 / 2) with BASELINE among them; at every point each config is valid, launches >= 4
    waves of programs on an H200 (2048 at the fewest: SwinV2-B, BLOCK_M 64 over N 64, 4 heads x 64
    windows x 8 groups of 8 images), and its shared memory bound fits sm_90's (at most 108 KiB; the
    bound: max(num_stages, 1) (BLOCK_M + 2 keys) D 2 bytes + 2 BLOCK_M KEYS_A 4). (Every config was
    compiled for sm_90 at every point with triton 3.6.0 and 3.9.0: all compile, none spills; registers
    48-247 under 3.6 and 45-243 under 3.9, the most for BLOCK_M 64 at Swin-B/384's N 144 (220-247: the
    64 x 144 fp32 score tile and bias tile held together), 45-71 for BLOCK_M 16 at N 49 / 64; shared
    memory 6-64 KiB under 3.6, 6-48 KiB under 3.9. BLOCK_M 32 spilled at N 144 on 2-8 warps (the mma
    layout puts every warp on the rows, 16 rows a warp: half the warps duplicate 32 rows, each holding
    the whole k tile), 2 warps spilled at BLOCK_M 64 there, and SwinV2's window 16 (N 256) spilled at
    every BLOCK_M but 16 -- hence the axes and the points.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for v in axes.values())
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(math.prod(mod.grid(c, p)) for p in mod.POINTS for c in cfgs)
    assert fewest == 2048
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gx, gy, gz = mod.grid(c, p)
            assert gx * gy * gz >= 4 * H200_SMS and gy <= 65535 and gz <= 65535, (p, c)
            assert _smem_bound(c, p) <= 108 * 1024 <= SM90_SMEM_PER_BLOCK, (p, c)


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
    """On sm_90: BASELINE, BLOCK_M 64 on 8 warps (pre-expanded bias, the longest loop) and BLOCK_M 16 on
    8 warps at the first point (Swin-T stage 1, N 49, the mask), and BASELINE, BLOCK_M 64 on 4 warps
    with one stage (the most registers) and BLOCK_M 16 at Swin-B/384 (N 144 = 128 + 16 keys) compile
    without spills, their shared memory within the bound."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= _smem_bound(cfg, mod.POINTS[0]), (cfg, res.shared)
    p = mod.POINTS[1]
    for cfg in P1_CFGS:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
        assert 0 < res.shared <= _smem_bound(cfg, p), (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block, no wgmma: mma.sync): BASELINE, BLOCK_M 64 on 8 warps pre-expanded and
    BLOCK_M 16 double-buffered compile at the first point without spills within its shared memory.
    (At Swin-B/384's N 144 BLOCK_M 64 on 4 warps spills 8-12 registers there: mma.sync holds the whole
    128 x 32 k tile in every warp's registers.)"""
    mod = load_example(KERNEL)
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= min(_smem_bound(cfg, mod.POINTS[0]), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _v2_unclamped(inputs):
    """SwinV2's scores with the logit scale NOT clamped at 100 (fp64): what the clamp changes."""
    import torch
    import torch.nn.functional as F

    qkv = inputs["qkv"].double()
    Bw, N, _, Hh, D = qkv.shape
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    s = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
    s = s * inputs["logit_scale"].double().reshape(1, Hh, 1, 1).exp()
    s = s + inputs["table"].double()[inputs["index"].reshape(-1).long()].view(N, N, Hh).permute(2, 0, 1)[None]
    m = inputs["mask"]
    if m is not None:
        s = (s.view(Bw // m.shape[0], m.shape[0], Hh, N, N) + m.double()[None, :, None]).view(Bw, Hh, N, N)
    return (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(Bw, N, Hh * D).float()


def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and against half an ulp
    of each element plus (u + 1e-4) softmax @ |v|; torch_baseline against reference; the output's
    strides, the inputs unchanged, the bias's / mask's / clamp's effect; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def ref_with(inputs, **kw):
        return mod.reference(dict(inputs, **kw))

    def same(a, b):
        if a is None:
            return True
        if not a.is_floating_point():
            return torch.equal(a, b)
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(7.0), b.nan_to_num(7.0))

    def extra(name, point, inputs, out, ref):
        qkv = inputs["qkv"]
        u = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11}[out.dtype]
        absv = qkv.clone()
        absv[:, :, 2] = absv[:, :, 2].abs()
        mag = ref_with(inputs, qkv=absv)                               # softmax(s) @ |v|
        loose = (out.float() - ref).abs() > u * ref.abs() + (u + 1e-4) * mag + 1e-30
        unchanged = all(same(inputs[k], inputs[k + "0"])
                        for k in ("qkv", "table", "index", "mask", "logit_scale", "expanded_bias"))
        # SwinV2's eager path rounds the cosines to the input dtype before the logit scale: at the clamp
        # (x 100) a bf16 cosine's rounding moves a score by up to 0.4
        tol = dict(H.TOL, fp16=2e-2, bf16=0.15) if point["cosine"] else H.TOL
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "inputs_unchanged": bool(unchanged), "nonzero": bool((ref != 0).any()),
               "qkv_strides": list(qkv.stride()), "index_strides": list(inputs["index"].stride()),
               "index_dtype": str(inputs["index"].dtype),
               "mask_strides": None if inputs["mask"] is None else list(inputs["mask"].stride()),
               "expanded_strides": list(inputs["expanded_bias"].stride()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"], tol)}
        res["bias_matters"] = bool((ref_with(inputs, table=torch.zeros_like(inputs["table"])) - ref).abs().max() > 0.05)
        if inputs["mask"] is not None:
            res["mask_matters"] = bool((ref_with(inputs, mask=None) - ref).abs().max() > 0.05)
        if name == CLAMP:
            res["clamp_matters"] = bool((_v2_unclamped(inputs) - ref).abs().max() > 0.01)
        if name == ONE:
            Bw, N, _, Hh, D = qkv.shape
            res["exact_v"] = bool(torch.equal(out.view(Bw, Hh, D), qkv[:, 0, 2]))
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
