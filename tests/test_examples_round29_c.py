"""examples/istft_overlap_add.py (the overlap-add stage of an inverse STFT: frames [B, n_frames, n_fft]
fp32 / bf16 / fp16, any strides, windowed, overlap-added at the hop, divided by the window-square
envelope where it exceeds eps, the center padding trimmed to [pad, pad + length); a gather over
[BLOCK_F slots, BLOCK_R samples] tiles, the K = cdiv(n_fft, hop) overlaps in a rolled, fully unrolled
or pairwise loop, an inner block's envelope per column and an edge block's per element) against its
torch reference on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round27_d.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round29_c.py istft_overlap_add``) that prints one JSON line. The
subprocess installs the harness's interpreter fixes (bf16 rounding; triton 3.6's runtime loop bounds
under numpy >= 2.3).

Shapes are small, odd and ragged: K 1 (n_fft = hop, a rectangular window: y is x, bit for bit), 2, 3
and 4 overlaps; hop 12 / 16 / 32 / 48 / 64 / 128 against BLOCK_R 32-128: columns past the hop (EVEN_R
0, one chunk or a ragged second one) and not (EVEN_R 1); n_fft 40 / 80 with hops that do not divide
it (J_TAIL 1: the last overlap past the frame's end); frames-major with rows aligned to 16 bytes
(X_VEC 4 / 8), a column slice one element into a wider buffer whose other columns are NaN (X_VEC 1:
a stray read poisons the result), bins-major (Vocos's irfft(dim=1) layout: X_VEC 0); y's rows aligned
(Y_VEC 2-8) or not (an odd length, an odd pad: Y_VEC 1); Vocos's "same" pad, center pads, pad 0
(center=False: the envelope 0 at the first sample) and pads that are no multiple of the hop; a length
shorter than the frames' span (ending mid-row) and one past it (a zero tail, rows with no frame at
all); an eps of 0.6 (the guard: samples undivided at the edges and in the columns of an inner block
where the two-frame Hann envelope dips to 0.5); a Hann window shorter than n_fft (zero tails), one in
bf16 with stride 2 (NaN between its elements), none (rectangular); every case with inner and / or
edge row blocks, both together in most; a batch of 1-3; fp32, bf16, fp16; BLOCK_F 8-32, BLOCK_R
32-128, LOOP 0 / 1 / 2, 4 and 8 warps, num_stages 1 / 2.

Per case: launch's y against the float64 reference within the dtype's tolerance (the harness's
per-element check) and each element within an ulp of its dtype of its own value plus 2^-18 of the
sum of its terms' magnitudes over the envelope (fp32 accumulation, one rounding); exact zeros where
the reference's are (the zero tail, the guarded zero-envelope samples); no NaN (the poisoned
buffers); y fresh, contiguous, in the frames' dtype; a second launch and the other two LOOPs equal
bit for bit (the same additions in the same order); the inputs unchanged; torch_baseline (Vocos's
fold-based eager path) within tolerance.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "istft_overlap_add"
ROLE = "held-out-29"
H200_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024

# the study's sweep (scripts/rank_study.py SWEEPS["istft_overlap_add"] once the lead adds it)
SWEEP_AXES = {"BLOCK_F": [8, 16, 32], "BLOCK_R": [32, 64, 128], "LOOP": [0, 1, 2], "num_warps": [4, 8],
              "num_stages": [1]}


def _cfg(bf, br, loop=1, w=4, st=1):
    return {"BLOCK_F": bf, "BLOCK_R": br, "LOOP": loop, "num_warps": w, "num_stages": st}


def _pt(B, nf, n_fft, hop, dtype="fp32", **kw):
    return {"B": B, "n_frames": nf, "n_fft": n_fft, "hop": hop, "dtype": dtype, **kw}


# case -> (point, cfg); comments: K, EVEN_R, J_TAIL, X_VEC, Y_VEC, the row blocks (inner / edge), programs
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # Vocos's shape scaled down: bins-major fp32, "same" pad (64 - 16) / 2 = 24, length 37 x 16; K 4,
        # hop 16 < BLOCK_R 32 (EVEN_R 0), X_VEC 0, Y_VEC 4; 38 slots in 5 blocks of 8 (3 inner), 10 programs
        "vocos_bins_fp32": (_pt(2, 37, 64, 16, "fp32", layout="bins", pad=24), _cfg(8, 32, 1, 4)),
        # K 3 with a ragged last overlap (80 = 2.5 x 32: J_TAIL 1), EVEN_R 1, frames-major bf16 (X_VEC 8,
        # Y_VEC 8), center pad 40; 40 slots in 3 blocks of 16 (1 inner), the rolled loop on 8 warps
        "whisper_frames_bf16": (_pt(3, 40, 80, 32, "bf16", pad=40), _cfg(16, 32, 0, 8)),
        # Demucs-like: fp16, K 4, pad 128, length 1423 (odd: Y_VEC 1, ends mid-row, shorter than the span),
        # hop 64 < BLOCK_R 128; 23 slots in 3 blocks of 8 (1 inner); pairs of overlaps on 8 warps
        "demucs_len_fp16": (_pt(2, 24, 256, 64, "fp16", pad=128, length=1423), _cfg(8, 128, 2, 8)),
        # center=False (pad 0): the envelope 0 at sample 0; eps 0.6 (set in _prepare) leaves the edges
        # and the inner block's columns 6-10 (two-frame Hann envelope 0.5-0.57) undivided; K 2, B 1;
        # 21 slots in 3 blocks of 8 (1 inner); num_stages 2
        "center_false_guard_fp32": (_pt(1, 20, 32, 16, "fp32", pad=0), _cfg(8, 32, 1, 4, 2)),
        # K 1 (n_fft = hop): no overlap, no window (None: rectangular, the envelope 1), y = x bit for
        # bit; LOOP 2's pair loop runs 0 times, its remainder once; 20 slots in 2 blocks of 16 (1 inner)
        "no_overlap_rect_bf16": (_pt(2, 20, 32, 32, "bf16", pad=0), _cfg(16, 32, 2, 4)),
        # bins-major fp16, a Hann 40 zero-padded to 48 (win_length), the window bf16 with stride 2 (NaN
        # between, set in _prepare); K 4, hop 12 < 64, pad 18 (Y_VEC 2); 41 slots, 3 blocks of 16 (1 inner)
        "bins_strided_window_fp16": (_pt(2, 40, 48, 12, "fp16", layout="bins", pad=18, win_length=40),
                                     _cfg(16, 64, 0, 4)),
        # the frames a column slice one element into a [2, 25, 99] fp32 buffer, NaN elsewhere (X_VEC 1);
        # K 2, hop 48 in two column chunks of 32 (EVEN_R 0, the second half idle); 24 slots in 3 inner
        # blocks of 8; pairs on 8 warps
        "misaligned_slice_fp32": (_pt(2, 25, 96, 48, "fp32", pad=48), _cfg(8, 32, 2, 8)),
        # length 260 past the span's 219 samples after pad 5 (odd: Y_VEC 1): a zero tail, slots 14-16
        # with no frame at all; K 4, hop 16 < 64; one edge block of 32 rows (17 used), rolled, 8 warps
        "long_tail_fp16": (_pt(3, 11, 64, 16, "fp16", pad=5, length=260), _cfg(32, 64, 0, 8)),
        # the sweep's largest tile: 32 x 128 on 4 warps (32 a thread), fp32, K 4, hop 128 (EVEN_R 1),
        # X_VEC 4 / Y_VEC 4; 69 slots in 3 blocks (1 inner), fully unrolled
        "max_tile_fp32": (_pt(1, 70, 512, 128, "fp32", pad=256), _cfg(32, 128, 1, 4)),
        # bins-major bf16 with J_TAIL (40 = 3.33 x 12: K 4), B 1, pad 14; 51 slots in 7 blocks of 8
        # (5 inner); pairs on 4 warps
        "batch1_bins_tail_bf16": (_pt(1, 50, 40, 12, "bf16", layout="bins", pad=14), _cfg(8, 64, 2, 4)),
    },
}
GUARD, RECT, STRIDED_W, SLICE, TAIL = ("center_false_guard_fp32", "no_overlap_rect_bf16", "bins_strided_window_fp16",
                                       "misaligned_slice_fp32", "long_tail_fp16")
GUARD_EPS = 0.6
# configs compiled at the module's first POINT on sm_90 (BASELINE first): the largest tile under each
# loop arrangement, the smallest on 8 warps; at the other two points BASELINE and OTHER_CFG
COMPILE_CFGS = [_cfg(16, 64, 1, 4), _cfg(32, 128, 2, 4), _cfg(32, 128, 1, 4), _cfg(32, 128, 0, 4), _cfg(8, 32, 0, 8)]
OTHER_CFG = _cfg(32, 128, 2, 4)
# (on sm_120 ptxas holds the kernel to 168 registers: under triton 3.9 the largest tile in pairs spills 4
# there, so the largest tile is tried fully unrolled)
SM120_CFGS = [_cfg(16, 64, 1, 4), _cfg(32, 128, 1, 4), _cfg(8, 64, 0, 8)]


def _q(p):
    """(K, q0, q_hi, L, pad) of a point."""
    n_fft, hop, nf = p["n_fft"], p["hop"], p["n_frames"]
    pad = p.get("pad", n_fft // 2)
    L = p.get("length", max(0, n_fft + (nf - 1) * hop - 2 * pad))
    return -(-n_fft // hop), pad // hop, (pad + L - 1) // hop + 1, L, pad


def _blocks(p, c):
    """(inner, edge) row blocks of one batch row."""
    K, q0, q_hi, _, _ = _q(p)
    n_rb = -(-(q_hi - q0) // c["BLOCK_F"])
    inner = sum(1 for rb in range(n_rb) if q0 + rb * c["BLOCK_F"] >= K - 1
                and q0 + (rb + 1) * c["BLOCK_F"] <= p["n_frames"])
    return inner, n_rb - inner


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """GUARD: eps 0.6; RECT: no window; STRIDED_W: the window bf16 at stride 2 of a NaN buffer; SLICE: the
    frames a column slice of a NaN buffer. Then the inputs' copies, to check they are left alone."""
    import torch

    if name == GUARD:
        inputs["eps"] = GUARD_EPS
    if name == RECT:
        inputs["window"] = None
    if name == STRIDED_W:
        w = inputs["window"]
        buf = torch.full((2 * w.shape[0],), float("nan"), dtype=torch.bfloat16)
        buf[::2] = w.to(torch.bfloat16)
        inputs["window"] = buf[::2]
    if name == SLICE:
        fr = inputs["frames"]
        B, nf, n_fft = fr.shape
        buf = torch.full((B, nf, n_fft + 3), float("nan"), dtype=fr.dtype)
        buf[:, :, 1:1 + n_fft] = fr
        inputs["frames"] = buf[:, :, 1:1 + n_fft]
    inputs["frames0"] = inputs["frames"].clone()
    inputs["window0"] = None if inputs["window"] is None else inputs["window"].clone()


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p = CASES[KERNEL][name][0]
    _, _, _, L, _ = _q(p)
    assert res["n_bad"] == 0, H.mismatch(res, f"{name} launch")
    assert res["dtype"] == p["dtype"] and res["shape"] == [p["B"], L] and res["out_strides"] == [L, 1], res
    assert res["n_loose"] == 0, res                        # each element within an ulp of its own value
    assert res["n_zero_mismatch"] == 0 and res["n_nonfinite"] == 0, res
    assert res["deterministic"] is True and res["inputs_unchanged"] is True, res
    assert res["loops_equal"] is True, res                 # LOOP 0 / 1 / 2: the same sums, bit for bit
    assert res["baseline"]["n_bad"] == 0, H.mismatch(res["baseline"], f"{name} torch_baseline")
    if name == RECT:
        assert res["exact_copy"] is True, res              # K 1, envelope 1: y is the frames, flattened
    if name == GUARD:
        # undivided samples: the first (envelope 0), the edges, and the inner block's dip (columns 6-10
        # of the 16-sample rows 8-15)
        assert res["n_guard"] >= 5 * 8 + 2 and res["n_guard_inner"] == 5 * 8, res
        assert res["first_sample_zero"] is True, res
    if name == TAIL:
        assert res["n_ref_zero"] >= p["B"] * (260 - 219), res
    if name == SLICE:
        assert res["frames_offset"] == 1 and res["frames_strides"] == [25 * 99, 99, 1], res
    if name == STRIDED_W:
        assert res["window_stride"] == 2 and res["window_dtype"] == "bf16", res


def test_cases_cover_every_code_path():
    """Every tunable at each of its sweep values; the three dtypes; EVEN_R x J_TAIL all four ways; X_VEC 0,
    1 and > 1; Y_VEC 1 and > 1; both layouts; LOOP 0 / 1 / 2 each with inner and edge blocks; K 1-4; a
    batch of 1; pad 0, a pad no multiple of the hop, a length past the span and one short of it; the
    window short, strided, absent."""
    import torch

    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = CASES[KERNEL]
    assert {p["dtype"] for p, _ in cases.values()} == set(mod.DTYPES)
    assert {p.get("layout", "frames") for p, _ in cases.values()} == {"frames", "bins"}
    seen = set()
    loop_blocks = set()
    for name, (p, c) in cases.items():
        inp = mod.make_inputs(p, seed=0, device="cpu")
        _prepare(name, p, inp)
        fr, w = inp["frames"], inp["window"]
        fm = torch.empty_strided(fr.shape, fr.stride(), dtype=fr.dtype, device="meta")
        if name == SLICE:                                  # the same storage offset on meta
            fm = torch.empty((fr.shape[0], fr.shape[1], fr.shape[2] + 3), dtype=fr.dtype,
                             device="meta")[:, :, 1:1 + fr.shape[2]]
        wm = torch.empty((p["n_fft"],), device="meta") if w is None else w
        y = torch.empty((p["B"], inp["length"]), dtype=fr.dtype, device="meta")
        k = mod._kernel_args(fm, wm, y, p["hop"], inp["pad"], 1e-11, c)
        seen.add((k["EVEN_R"], k["J_TAIL"], min(k["X_VEC"], 2), min(k["Y_VEC"], 2), k["n_ovl"]))
        inner, edge = _blocks(p, c)
        loop_blocks |= {(c["LOOP"], "inner")} if inner else set()
        loop_blocks |= {(c["LOOP"], "edge")} if edge else set()
        assert k["n_ovl"] == -(-p["n_fft"] // p["hop"]) and k["K_OVL"] == (k["n_ovl"] if c["LOOP"] == 1 else 0)
        if name == SLICE:
            assert k["X_VEC"] == 1, k
    assert {(s[0], s[1]) for s in seen} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert {s[2] for s in seen} == {0, 1, 2} and {s[3] for s in seen} == {1, 2}
    assert {s[4] for s in seen} == {1, 2, 3, 4}
    assert loop_blocks == {(lp, kind) for lp in (0, 1, 2) for kind in ("inner", "edge")}
    assert any(p["B"] == 1 for p, _ in cases.values())
    assert any(p.get("pad") == 0 for p, _ in cases.values())
    assert any(p.get("pad", 0) % p["hop"] for p, _ in cases.values())
    # (samples after the trim, the length): one past them (a zero tail), one short of the default
    avail = [(p["n_fft"] + (p["n_frames"] - 1) * p["hop"] - _q(p)[4], _q(p)[3], _q(p)[4]) for p, _ in cases.values()]
    assert any(L > a for a, L, _ in avail) and any(L < a - pad for a, L, pad in avail)
    assert any(p.get("win_length", p["n_fft"]) < p["n_fft"] for p, _ in cases.values())
    assert {c["num_stages"] for _, c in cases.values()} == {1, 2}
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases.values()} >= set(vals), k


def _frames_read(p):
    """Frame elements a batch row's programs load (by the kernel's slot and column masks)."""
    K, q0, q_hi, _, _ = _q(p)
    n = 0
    for k in range(K):
        for q in range(q0, q_hi):
            if 0 <= q - k < p["n_frames"]:
                n += min(p["hop"], p["n_fft"] - k * p["hop"])
    return n


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta with the launch's shapes, dtypes and strides
    (Vocos's frames the transposed [B, n_fft, T] irfft output), the trim, the slots, the constexprs
    (EVEN_R, J_TAIL, X_VEC, Y_VEC, K_OVL), the grid and the overlaps; bytes_moved / flops; 0.2-0.35 GB of
    DRAM traffic a point (roughly 70-110 us at an H100's ~3 TB/s)."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "example_args", "torch_baseline", "istft_overlap_add", "ola_reference", "hann_window"):
        assert callable(getattr(mod, fn, None)), f"lacks {fn}"
    assert not hasattr(mod, "secondary_kernels") and not hasattr(mod, "cta_iterations")
    assert len(mod.POINTS) == 3 and mod.ROLE == ROLE and mod.SWEEP_AXES == SWEEP_AXES
    dts = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    size = {"fp16": 2, "bf16": 2, "fp32": 4}
    cfgs = [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]
    vecs = {(1875, "x"): 0, (1875, "y"): 4, (3001, "x"): 8, (3001, "y"): 8, (340, "x"): 8, (340, "y"): 4}
    for p in mod.POINTS:
        B, nf, n_fft, hop = p["B"], p["n_frames"], p["n_fft"], p["hop"]
        K, q0, q_hi, L, pad = _q(p)
        for cfg in cfgs:
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["FR"].shape == (B, nf, n_fft) and a["FR"].dtype == dts[p["dtype"]]
            if p["layout"] == "bins":
                assert a["FR"].stride() == (n_fft * nf, 1, nf)
            else:
                assert a["FR"].is_contiguous()
            assert (a["stride_fb"], a["stride_ff"], a["stride_fj"]) == a["FR"].stride()
            assert a["WIN"].shape == (n_fft,) and a["WIN"].dtype == torch.float32 and a["stride_w"] == 1
            assert a["Y"].shape == (B, L) and a["Y"].dtype == dts[p["dtype"]] and a["Y"].is_contiguous()
            assert (a["n_frames"], a["n_fft"], a["hop"], a["pad"], a["L"]) == (nf, n_fft, hop, pad, L)
            n_rb, n_rc = -(-(q_hi - q0) // cfg["BLOCK_F"]), -(-hop // cfg["BLOCK_R"])
            assert (a["q0"], a["q_hi"], a["n_rb"], a["n_rc"], a["n_ovl"]) == (q0, q_hi, n_rb, n_rc, K)
            assert a["EVEN_R"] == int(hop % cfg["BLOCK_R"] == 0) and a["J_TAIL"] == int(n_fft % hop != 0)
            assert (a["X_VEC"], a["Y_VEC"]) == (vecs[(nf, "x")], vecs[(nf, "y")])
            assert a["K_OVL"] == (K if cfg["LOOP"] == 1 else 0) and a["LOOP"] == cfg["LOOP"]
            assert (a["BLOCK_F"], a["BLOCK_R"]) == (cfg["BLOCK_F"], cfg["BLOCK_R"])
            assert mod.grid(cfg, p) == (B * n_rb * n_rc,)
            assert mod.loop_iterations(cfg, p) == K
        e = size[p["dtype"]]
        rd = _frames_read(p)
        assert rd <= nf * n_fft and rd >= (nf - 2 * K) * n_fft * min(1.0, L / (nf * hop))
        assert mod.bytes_moved(p) == B * (rd + L) * e + 4 * n_fft
        assert mod.flops(p) == B * (3 * rd + L)
        assert 0.2e9 <= mod.bytes_moved(p) <= 0.35e9, p
    # the points differ: the overlap (K 4 / 3 ragged / 4), the hop, the dtype, the layout, the trim
    assert [(p["n_fft"], p["hop"]) for p in mod.POINTS] == [(1024, 256), (400, 160), (4096, 1024)]
    assert [p["dtype"] for p in mod.POINTS] == ["fp32", "bf16", "fp16"]
    assert [p["layout"] for p in mod.POINTS] == ["bins", "frames", "frames"]
    assert [_q(p)[3] for p in mod.POINTS] == [480000, 480000, 343980]
    assert mod.POINTS[0]["pad"] == (1024 - 256) // 2 and mod.POINTS[2]["pad"] == 4096 // 2


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shapes, dtypes, layouts, the seed, the window; ola_reference against torch.istft
    (center, float64) and a consistent analysis reconstructed exactly; Vocos's "same" trim; the guard;
    torch_baseline's dtype; bytes / flops / grid by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 9, 32, 8, "bf16", layout="bins", pad=12)
    inp = mod.make_inputs(p, seed=1, device="cpu")
    fr = inp["frames"]
    assert fr.shape == (2, 9, 32) and fr.dtype == torch.bfloat16 and fr.stride() == (32 * 9, 1, 9)
    assert inp["hop"] == 8 and inp["pad"] == 12 and inp["length"] == 32 + 8 * 8 - 24
    assert torch.equal(inp["window"], torch.hann_window(32))
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["frames"], fr)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["frames"], fr)
    q = mod.make_inputs(_pt(1, 5, 16, 4, "fp16", win_length=10), device="cpu")
    w = q["window"]
    assert q["frames"].is_contiguous() and q["frames"].dtype == torch.float16 and q["pad"] == 8
    assert torch.equal(w[3:13], torch.hann_window(10)) and float(w[:3].abs().sum() + w[13:].abs().sum()) == 0.0

    # against torch.istft itself (center=True, float64): frames = irfft of the spectrogram
    gen = torch.Generator().manual_seed(3)
    n_fft, hop = 64, 16
    win = torch.hann_window(n_fft, dtype=torch.float64)
    sig = torch.randn((3, 500), generator=gen, dtype=torch.float64)
    spec = torch.stft(sig, n_fft, hop, window=win, center=True, return_complex=True)
    spec = spec + 0.1 * torch.randn(spec.shape, generator=gen, dtype=torch.complex128)   # inconsistent
    want = torch.istft(spec, n_fft, hop, window=win, center=True, length=500)
    frames = torch.fft.irfft(spec, n_fft, dim=1).transpose(1, 2)       # Vocos's layout: [B, n_fft, T]
    got, env = mod.ola_reference(frames, win, hop, n_fft // 2, 500)
    assert torch.allclose(got, want, atol=1e-12) and float(env.min()) > 0.5
    # a consistent analysis (no noise) comes back exactly; a longer length ends in zeros
    an = sig.unfold(1, n_fft, hop) * win                               # 28 frames of the raw signal
    y, env = mod.ola_reference(an, win, hop, 0, 28 * hop + 48 + 10)
    span = n_fft + 27 * hop
    assert torch.allclose(y[:, 1:span], sig[:, 1:span], atol=1e-12)   # t 0: the envelope is 0
    assert float(y[:, 0].abs().max()) == 0.0 and float(env[0]) == 0.0 and float(y[:, span:].abs().max()) == 0.0
    # Vocos's "same" trim: pad (win - hop) / 2, length T hop
    y2, _ = mod.ola_reference(an, win, hop, (n_fft - hop) // 2, 28 * hop)
    assert torch.allclose(y2, sig[:, 24:24 + 28 * hop], atol=1e-12)
    # the guard: undivided where the envelope is <= eps
    y3, env3 = mod.ola_reference(an, win, hop, 0, span, eps=1.0)
    s3, _ = mod.ola_reference(an, win, hop, 0, span, eps=float("inf"))
    assert torch.equal(y3[:, env3 <= 1.0], s3[:, env3 <= 1.0]) and bool((env3 > 1.0).any())
    inp = mod.make_inputs(_pt(2, 7, 24, 8, "fp16"), device="cpu")
    assert mod.torch_baseline(inp).dtype == torch.float16 and mod.reference(inp).shape == (2, 48)
    assert mod.reference(dict(inp, window=None)).shape == (2, 48)
    # by hand: n_fft 24, hop 8 (K 3), 7 frames, pad 12, length 48 -> slots 1 .. 7 (q_hi 8)
    small = _pt(2, 7, 24, 8, "fp16")
    assert _frames_read(small) == 6 * 8 + 7 * 8 + 6 * 8
    assert mod.bytes_moved(small) == 2 * (_frames_read(small) + 48) * 2 + 4 * 24
    assert mod.flops(small) == 2 * (3 * _frames_read(small) + 48)
    assert mod.grid(_cfg(4, 8, 0, 4), small) == (2 * 2 * 1,)
    assert mod.grid(_cfg(4, 32, 1, 4), _pt(1, 40, 400, 160, pad=200)) == (1 * 10 * 5,)
    assert mod.loop_iterations(_cfg(4, 32, 0, 4), _pt(1, 40, 400, 160)) == 3


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    fr = torch.zeros(2, 9, 32)
    w = torch.hann_window(32)
    with pytest.raises(ValueError, match="expected frames"):
        mod.istft_overlap_add(fr[0], w, 8)
    with pytest.raises(ValueError, match="fp32 / bf16 / fp16"):
        mod.istft_overlap_add(fr.double(), w, 8)
    with pytest.raises(ValueError, match=r"window must be \[32\]"):
        mod.istft_overlap_add(fr, w[:16], 8)
    with pytest.raises(ValueError, match="window must be fp32 / bf16 / fp16"):
        mod.istft_overlap_add(fr, w.double(), 8)
    with pytest.raises(ValueError, match="hop_length=0"):
        mod.istft_overlap_add(fr, w, 0)
    with pytest.raises(ValueError, match="hop=33 must be <= n_fft=32"):
        mod.istft_overlap_add(fr, w, 33)
    with pytest.raises(ValueError, match="pad=-1"):
        mod.istft_overlap_add(fr, w, 8, pad=-1)
    with pytest.raises(ValueError, match="length=-3"):
        mod.istft_overlap_add(fr, w, 8, length=-3)
    with pytest.raises(ValueError, match="eps=nan"):
        mod.istft_overlap_add(fr, w, 8, eps=float("nan"))
    with pytest.raises(ValueError, match="BLOCK_F=12"):
        mod.istft_overlap_add(fr, w, 8, BLOCK_F=12)
    with pytest.raises(ValueError, match="BLOCK_R=0"):
        mod.istft_overlap_add(fr, w, 8, BLOCK_R=0)
    with pytest.raises(ValueError, match="LOOP=3"):
        mod.istft_overlap_add(fr, w, 8, LOOP=3)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.istft_overlap_add(fr, w, 8, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.istft_overlap_add(fr, w, 8, num_stages=0)
    with pytest.raises(ValueError, match="raise num_warps"):
        mod.istft_overlap_add(fr, w, 8, BLOCK_F=64, BLOCK_R=128, num_warps=4)
    with pytest.raises(ValueError, match="take LOOP=0"):
        mod.istft_overlap_add(torch.zeros(1, 4, 64), torch.ones(64), 2, LOOP=1)
    # meta: checked, never launched
    far = torch.empty((1, 3 * 2**30), device="meta").as_strided((1, 3, 4), (3 * 2**30, 2**30, 1))
    with pytest.raises(ValueError, match="int32 offsets"):
        mod.istft_overlap_add(far, torch.ones(4, device="meta"), 2)
    with pytest.raises(ValueError, match="int32 sample indices"):
        mod.istft_overlap_add(fr, w, 8, pad=2**31)
    with pytest.raises(ValueError, match="dtype 'fp64'"):
        mod.make_inputs(_pt(1, 4, 16, 4, "fp64"), device="cpu")
    with pytest.raises(ValueError, match="layout='nft'"):
        mod.bytes_moved(_pt(1, 4, 16, 4, layout="nft"))
    with pytest.raises(ValueError, match="win_length=20"):
        mod.example_args(mod.BASELINE, _pt(1, 4, 16, 4, win_length=20))
    with pytest.raises(ValueError, match="n_frames=0"):
        mod.grid(mod.BASELINE, _pt(1, 0, 16, 4))
    with pytest.raises(ValueError, match="hop=32 must be <= n_fft=16"):
        mod.flops(_pt(1, 4, 16, 32))
    with pytest.raises(ValueError, match="LOOP=5"):
        mod.grid(dict(mod.BASELINE, LOOP=5), mod.POINTS[0])
    # nothing to do: empty outputs, nothing launched
    assert mod.istft_overlap_add(torch.zeros(0, 9, 32), w, 8).shape == (0, 64)
    e = mod.istft_overlap_add(torch.zeros(3, 0, 32, dtype=torch.float16), w, 8, length=10)
    assert e.shape == (3, 10) and e.dtype == torch.float16 and float(e.abs().sum()) == 0.0
    assert mod.istft_overlap_add(fr, w, 8, length=0).shape == (2, 0)


def test_sweep_fits_the_points():
    """The study sweep: 54 configs (BLOCK_F 8 / 16 / 32 x BLOCK_R 32 / 64 / 128 x LOOP 0 / 1 / 2 x 4 / 8
    warps, num_stages 1: the loop's loads feed only adds) with BASELINE among them; at every point each
    config is valid, holds 1-32 tile elements a thread and launches >= 4 waves of programs on an H200
    (32 x 59 x 2 = 3776 at the fewest: Vocos's 32 rows of 1875 slots in 32 x 128 tiles). Every config was
    compiled for sm_90 at every point with triton 3.6.0 and 3.9 (162 compiles each), none spilling:
    24-237 registers under 3.6 (Vocos 27-237, Whisper 27-168, Demucs 24-165; the most for 32 x 128 on 4
    warps with LOOP 2), 24-208 under 3.9 (Vocos 28-208, Whisper 26-168, Demucs 24-166); shared memory
    1-16 KiB at the bins-major Vocos point (the accumulators' transposition to the store), 0-8 KiB at
    the frames-major ones (the edge blocks' envelope, Demucs's 8-byte store)."""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = [dict(zip(axes, v)) for v in itertools.product(*axes.values())]
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    fewest = min(mod.grid(c, p)[0] for p in mod.POINTS for c in cfgs)
    assert fewest == 32 * 59 * 2
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c, -(-p["n_fft"] // p["hop"]))
            (g,) = mod.grid(c, p)
            assert g >= 4 * H200_SMS, (p, c)
            assert 1 <= c["BLOCK_F"] * c["BLOCK_R"] // (32 * c["num_warps"]) <= 32
            assert c["BLOCK_F"] * c["BLOCK_R"] * 4 <= SM90_SMEM_PER_BLOCK


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
    """On sm_90: BASELINE and four more at the first point (Vocos, bins-major fp32: the largest tile
    fully unrolled, in pairs and rolled; the smallest on 8 warps) compile without spills, their shared
    memory the accumulators' transposition (<= 16 KiB); BASELINE and OTHER_CFG (the largest tile in
    pairs) at the other two (Whisper's bf16 K 3, Demucs's fp16), spill-free, <= 8 KiB."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 255 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 < res.shared <= 16 * 1024, (cfg, res.shared)
    for p in mod.POINTS[1:]:
        for cfg in (COMPILE_CFGS[0], OTHER_CFG):
            res = compile_kernel(mod._kernel, args=mod.example_args(cfg, p), arch="sm_90",
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
            assert res.status == "ok" and res.n_spills == 0, (cfg, p, res.n_regs, res.n_spills, res.message)
            assert res.shared <= 8 * 1024, (cfg, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, the largest tile fully unrolled and a small one rolled on 8
    warps compile at the first point without spills, their shared memory within the block's (every
    config of the sweep compiles there, 25-168 registers and 0-16 KiB; under triton 3.9 the largest
    tile in pairs at the Vocos point spills 4 registers against ptxas's 168-register cap)."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= SM120_SMEM_PER_BLOCK, (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against reference (the harness's tolerance) and element by element
    (an ulp of the dtype plus the fp32 accumulation's share); exact zeros; no NaN; a second launch and
    the other LOOPs bit for bit; the inputs unchanged; torch_baseline; one JSON line."""
    import torch

    H.patch_interpreter_bf16_rounding()
    H.patch_interpreter_index()
    mod = load_example(KERNEL)
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}

    def extra(name, point, inputs, out, ref):
        cfg = CASES[KERNEL][name][1]
        fr, w = inputs["frames"], inputs["window"]
        hop, pad, L, eps = inputs["hop"], inputs["pad"], inputs["length"], inputs.get("eps", mod.EPS)
        o = out.float()
        # the sum of the terms' magnitudes over the envelope (undivided where guarded)
        mag, env = mod.ola_reference(fr.abs(), None if w is None else w.abs(), hop, pad, L, eps)
        rt = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -10, torch.float32: 2.0 ** -22}[out.dtype]
        loose = (o.double() - ref.double()).abs() > rt * ref.double().abs() + 2.0 ** -18 * mag
        same = torch.equal(fr, inputs["frames0"]) and (
            (w is None and inputs["window0"] is None) or torch.equal(w, inputs["window0"]))
        again = mod.launch(inputs, cfg)
        loops_equal = all(torch.equal(mod.launch(inputs, dict(cfg, LOOP=lp)), out) for lp in (0, 1, 2)
                          if lp != cfg["LOOP"])
        res = {"dtype": names.get(out.dtype), "out_strides": list(out.stride()), "n_loose": int(loose.sum()),
               "n_zero_mismatch": int(((ref == 0) & (o != 0)).sum()), "n_nonfinite": int((~torch.isfinite(o)).sum()),
               "n_ref_zero": int((ref == 0).sum()), "deterministic": bool(torch.equal(again, out)),
               "loops_equal": bool(loops_equal), "inputs_unchanged": bool(same),
               "frames_strides": list(fr.stride()), "frames_offset": fr.storage_offset(),
               "n_guard": int((env <= eps).sum()),
               "baseline": H.compare(mod.torch_baseline(inputs), ref, point["dtype"])}
        if w is not None:
            res["window_stride"] = w.stride(0)
            res["window_dtype"] = names.get(w.dtype)
        if name == RECT:
            res["exact_copy"] = bool(torch.equal(out, fr.reshape(fr.shape[0], -1)[:, pad:pad + L]))
        if name == GUARD:
            # the inner block: slots 8-15 (samples 128-255 of the untrimmed signal, pad 0)
            res["n_guard_inner"] = int((env[8 * hop:16 * hop] <= eps).sum())
            res["first_sample_zero"] = bool(float(env[0]) == 0.0 and float(o[:, 0].abs().max()) == 0.0)
        return res

    H.run_cases(KERNEL, CASES[KERNEL], prepare=_prepare, extra=extra)


if __name__ == "__main__":
    _run()
