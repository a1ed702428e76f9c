"""examples/nms_iou_mask.py (the parallel stage of NMS as torchvision's / Detectron2's / MMCV's CUDA NMS runs
it: score-sorted boxes [B, N, 4], for every box i and every word of 64 boxes j > i a 64-bit mask word whose
bit k says IoU(box i, box 64 w + k) > threshold; a CTA BLOCK_I rows x WORDS words, the triangle below the
diagonal zero-filled without a test, each word tested COLS columns a step as a [COLS, BLOCK_I] tile) against
its torch references on the CPU through Triton's interpreter, its launcher hooks against the shapes, its
study sweep against the points, and a compile for sm_90 and sm_120 from its own ``example_args``.

As in test_examples_round31_c.py the interpreter cases run in a subprocess (this file run as a script:
``python tests/test_examples_round32_c.py nms_iou_mask``) that prints one JSON line. The subprocess installs
the harness's interpreter fixes (under triton 3.6 with numpy >= 2.3 the runtime loop bounds read as ints).

Shapes are small, odd and ragged: N 1 (one box, one word, nothing to test), 40 (one partial word), 64 and
128 (whole words), 100, 150, 200, 300, 333 and 515 (a ragged last word; 515 = 8 words + 3 boxes), B 1-3;
rows in blocks of 16-128 (a ragged last block, a block larger than N), 1 / 4 / 16 words a CTA (a chunk
past W; CTAs wholly below the diagonal; CTAs whose first words are zero-filled and the rest tested), COLS
from 4 to 64 columns a step (16 to 1 steps a word), 1-16 warps; fp32 and fp16 boxes; boxes a [B, N, 4]
slice of a NaN-padded [B, N, 6] detections tensor and a coordinate-major [B, 4, N] buffer read through a
permuted view (stride 1 between boxes); thresholds 0 (any overlap), 0.5-0.7 and 1 (nothing); duplicated
boxes (IoU exactly 1), zero-area boxes (a zero union: never a hit), bit 63 of a word set.

Per case: launch's mask bit for bit equal to the module's fp32 reference (the kernel's own arithmetic:
inter > thr x union; the interpreter fuses no multiply-add), fresh, contiguous, [B, N, cdiv(N, 64)] int64;
against the float64 IoU reference (inter / union > thr) every differing bit a near-tie (|IoU - thr| <=
1e-6); no bit at or below the diagonal or past N; the boxes unchanged; each image's kept boxes from the
mask (the module's host pass) equal to an independent greedy NMS here (float64 IoU, one box at a time);
the wrapper on 2-d boxes [N, 4] equal to image 0's mask; torch_baseline equal to the fp32 reference.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

import example_harness as H
from example_harness import load_example

HERE = Path(__file__).resolve()
KERNEL = "nms_iou_mask"
ROLE = "held-out-32"
H100_SMS = 132
SM90_SMEM_PER_BLOCK = 227 * 1024
SM120_SMEM_PER_BLOCK = 99 * 1024
TIE = 1e-6

# the study's sweep (scripts/rank_study.py SWEEPS["nms_iou_mask"] once the lead adds it)
SWEEP_AXES = {"BLOCK_I": [16, 32, 64, 128], "WORDS": [1, 4, 16], "num_warps": [2, 4, 8, 16], "num_stages": [1]}


def _cfg(bi, wd, w, ns=1):
    return {"BLOCK_I": bi, "WORDS": wd, "num_warps": w, "num_stages": ns}


def _pt(B, N, dtype="fp32", iou=0.5, img=100, objects=4):
    return {"B": B, "N": N, "dtype": dtype, "iou": iou, "img": img, "objects": objects}


def _cols(c) -> int:
    return max(1, min(64, 8 * 32 * c["num_warps"] // c["BLOCK_I"]))


# case -> (point, cfg); comments: W words, grid, COLS (steps a word)
CASES: dict[str, dict[str, tuple[dict, dict]]] = {
    KERNEL: {
        # torchvision's launch (BASELINE): W 5, grid (5, 5, 2), COLS 8 (8 steps); a ragged last word
        "baseline_fp32": (_pt(2, 300, iou=0.5), _cfg(64, 1, 2)),
        # fp16 boxes, 16 rows x 4 words on 4 warps: W 5, grid (19, 2, 1), COLS 64 (1 step); a chunk past W
        "fp16_rows16": (_pt(1, 300, "fp16", iou=0.6, img=640), _cfg(16, 4, 4)),
        # 128 rows on 2 warps: COLS 4 (16 steps a word); W 9 over 16-word chunks: one chunk, zero-filled
        # words before the diagonal for the row blocks past the first; 515 = 8 words + 3 boxes
        "rows128_fp32": (_pt(1, 515, iou=0.7, img=300, objects=6), _cfg(128, 16, 2)),
        # 3 images of 150 (fp16), 32 rows x 16 words on 16 warps: COLS 64, the whole W = 3 in one chunk
        "batch3_fp16": (_pt(3, 150, "fp16", iou=0.5), _cfg(32, 16, 16)),
        # one partial word (N 40 < 64), 64 rows (a block larger than N) on 8 warps: COLS 32
        "one_word_fp32": (_pt(2, 40, iou=0.55), _cfg(64, 4, 8)),
        # whole words (N 128, W 2): 32 rows x 1 word on 1 warp (COLS 8), threshold 0: any overlap
        "even_thr0_fp32": (_pt(1, 128, iou=0.0), _cfg(32, 1, 1)),
        # threshold 1: no bit (IoU > 1 never); 128 rows on 4 warps: COLS 8; W 4 in 4-word chunks
        "thr1_fp16": (_pt(2, 200, "fp16", iou=1.0), _cfg(128, 4, 4)),
        # boxes a [B, N, 4] slice of a NaN-padded [B, N, 6] detections tensor; 16 rows x 16 words, 2 warps
        # (COLS 32, 2 steps); W 6 (333 = 5 words + 13)
        "strided6_fp32": (_pt(2, 333, iou=0.65, img=200), _cfg(16, 16, 2)),
        # coordinate-major [B, 4, N] read through a permuted view (stride_bn 1, stride_bc N), fp16; 32 rows x
        # 4 words on 2 warps: COLS 16 (4 steps)
        "soa_fp16": (_pt(1, 260, "fp16", iou=0.5, img=160), _cfg(32, 4, 2)),
        # duplicated and zero-area boxes (IoU exactly 1; a zero union), 64 rows x 4 words on 16 warps (COLS 64)
        "dupes_fp32": (_pt(1, 200, iou=0.5), _cfg(64, 4, 16)),
        # one box: one word of zeros; 16 rows x 1 word, 8 warps
        "one_box_fp32": (_pt(1, 1, iou=0.5), _cfg(16, 1, 8)),
        # N 64 (one whole word), 128 rows x 1 word on 8 warps (COLS 16), num_stages 2, 2 images
        "word64_stages2_fp32": (_pt(2, 64, iou=0.3, img=64, objects=2), _cfg(128, 1, 8, 2)),
        # dense clusters (2 objects, 100 boxes): bit 63 set; 32 rows x 16 words, 4 warps (COLS 32)
        "dense_fp16": (_pt(1, 100, "fp16", iou=0.5, img=64, objects=2), _cfg(32, 16, 4)),
    },
}
STRIDED = ("strided6_fp32", "soa_fp16")
DET_COLS = 6


def _W(n: int) -> int:
    return -(-n // 64)


def _grid(p, c):
    return (-(-p["N"] // c["BLOCK_I"]), -(-_W(p["N"]) // c["WORDS"]), p["B"])


def _steps(p, c) -> list[int]:
    """The words each CTA of one image tests, row block fastest (this file's count)."""
    gi, gw, _ = _grid(p, c)
    W = _W(p["N"])
    out = []
    for cw in range(gw):
        lo, hi = cw * c["WORDS"], min((cw + 1) * c["WORDS"], W)
        for ci in range(gi):
            first = max(lo, (ci * c["BLOCK_I"] + 1) // 64)
            out.append(max(0, hi - first))
    return out


def _smem_bound(c) -> int:
    """An upper bound of a config's shared memory: the cross-warp step of the column sum (an int64 partial word
    a row a warp) or the zero tile's layout conversion (8 BLOCK_I WORDS bytes), whichever is larger."""
    return 8 * c["BLOCK_I"] * max(c["num_warps"], c["WORDS"])


def _prepare(name: str, point: dict, inputs: dict) -> None:
    """STRIDED: the boxes into a [B, N, 6] NaN-padded detections tensor (sliced back) or a coordinate-major
    [B, 4, N] buffer (permuted back). dupes: every third box a copy of the one before, every seventh
    zero-area. Then a copy of the boxes, to check they are left alone."""
    import torch

    bx = inputs["boxes"]
    if name == "dupes_fp32":
        bx = bx.clone()
        bx[:, 1::3] = bx[:, 0:-1:3][:, :bx[:, 1::3].shape[1]]
        bx[:, ::7, 2] = bx[:, ::7, 0]                     # x2 = x1: zero width, zero area
        inputs["boxes"] = bx
    if name == "strided6_fp32":
        buf = torch.full((bx.shape[0], bx.shape[1], DET_COLS), float("nan"), dtype=bx.dtype)
        buf[..., :4] = bx
        inputs["boxes"] = buf[..., :4]
    if name == "soa_fp16":
        buf = bx.permute(0, 2, 1).contiguous()            # [B, 4, N]
        inputs["boxes"] = buf.permute(0, 2, 1)
    inputs["boxes0"] = inputs["boxes"].clone()


def greedy_nms(boxes, thr: float) -> list[int]:
    """An independent greedy NMS (boxes in score order, float64 IoU = inter / union): box i kept unless a kept
    box before it has IoU > thr with it."""
    import torch

    b = boxes.double()
    x1, y1, x2, y2 = b.unbind(-1)
    area = (x2 - x1) * (y2 - y1)
    alive = torch.ones(b.shape[0], dtype=torch.bool)
    keep = []
    for i in range(b.shape[0]):
        if not alive[i]:
            continue
        keep.append(i)
        iw = (torch.minimum(x2[i], x2) - torch.maximum(x1[i], x1)).clamp_min(0)
        ih = (torch.minimum(y2[i], y2) - torch.maximum(y1[i], y1)).clamp_min(0)
        inter = iw * ih
        iou = inter / (area[i] + area - inter)
        sup = iou > thr
        sup[: i + 1] = False
        alive &= ~sup
    return keep


# ----------------------------------------------------------------- the pytest side
def _results() -> dict:
    return H.interpreter_results(HERE, KERNEL)


@pytest.mark.parametrize("name", list(CASES[KERNEL]))
def test_example_matches_reference(name):
    res = _results()[name]
    assert "error" not in res, f"{name}: {res.get('error')}"
    p, c = CASES[KERNEL][name]
    B, N = p["B"], p["N"]
    assert res["shape"] == [B, N, _W(N)] and res["dtype"] == "int64" and res["contiguous"] is True, res
    assert res["exact32"] is True, res                  # bit for bit the kernel's fp32 arithmetic
    assert res["far_flips"] == 0 and res["flips"] <= 2, res     # vs fp64 IoU: near-ties only
    assert res["lower_bits"] == 0 and res["past_n_bits"] == 0, res
    assert res["inputs_unchanged"] is True, res
    assert res["keep"] == res["keep_ref"], (res["keep"], res["keep_ref"])
    assert res["flat_equal"] is True and res["baseline_equal"] is True, res
    if name == "thr1_fp16" or name == "one_box_fp32":
        assert res["n_bits"] == 0, res
    else:
        assert res["n_bits"] > 0 and len(res["keep"][0]) < N, res
    if name == "dense_fp16":
        assert res["bit63"] is True, res
    if name == "even_thr0_fp32":
        assert res["n_bits"] == res["n_overlapping"] > 0, res
    if name == "dupes_fp32":
        assert res["n_zero_area"] > 0 and res["dupes_hit"] is True, res
    if name in STRIDED:
        assert res["box_strides"] == {"strided6_fp32": [N * DET_COLS, DET_COLS, 1],
                                      "soa_fp16": [4 * N, 1, N]}[name], res


def test_cases_cover_every_code_path():
    """Every value of every swept tunable, and 1 warp and num_stages 2; fp32 and fp16; ragged and whole last
    words and row blocks; chunks past W; CTAs below the diagonal (no step), CTAs with zero-filled leading
    words and tested ones, CTAs all tested; COLS 64 (one step a word) down to 4 (16 steps, the sweep's fewest); strided
    boxes both ways; thresholds 0 and 1; a single box."""
    H.assert_tunables_covered(CASES)
    mod = load_example(KERNEL)
    cases = list(CASES[KERNEL].values())
    for k, vals in SWEEP_AXES.items():
        assert {c[k] for _, c in cases} >= set(vals), k
    assert 1 in {c["num_warps"] for _, c in cases} and 2 in {c["num_stages"] for _, c in cases}
    assert {p["dtype"] for p, _ in cases} == set(mod.DTYPES)
    assert {p["N"] % 64 == 0 for p, _ in cases} == {True, False}
    assert {p["N"] % c["BLOCK_I"] == 0 for p, c in cases} == {True, False}
    assert any(_W(p["N"]) % c["WORDS"] for p, c in cases)                       # a chunk past W
    assert any(c["BLOCK_I"] > p["N"] for p, c in cases)
    assert any(0 in _steps(p, c) for p, c in cases)                              # CTAs below the diagonal
    zero_led = False
    for p, c in cases:                                                           # zero-filled words, then tests
        gi, gw, _ = _grid(p, c)
        for cw in range(gw):
            for ci in range(gi):
                first = (ci * c["BLOCK_I"] + 1) // 64
                zero_led |= cw * c["WORDS"] < first < min((cw + 1) * c["WORDS"], _W(p["N"]))
    assert zero_led
    cols = {_cols(c) for _, c in cases}
    assert 64 in cols and min(cols) == 4 and {mod.cols_per_step(c) for _, c in cases} == cols
    assert {p["iou"] for p, _ in cases} >= {0.0, 1.0} and min(p["N"] for p, _ in cases) == 1
    assert set(STRIDED) <= set(CASES[KERNEL])


def _cfgs():
    return [dict(zip(SWEEP_AXES, v)) for v in itertools.product(*SWEEP_AXES.values())]


def test_launcher_hooks_agree_with_shapes():
    """At every point and sweep config: example_args on meta (boxes [B, N, 4] in the point's dtype, the mask
    [B, N, W] int64, contiguous), the constexprs (COLS derived), the threshold; the grid; the loop
    (the mean of cta_iterations, checked by hand at three configs a point); bytes_moved / flops; 50 us -
    20 ms a point at an H100's ~3 TB/s and ~50 TFLOP/s fp32."""
    import torch

    mod = load_example(KERNEL)
    for fn in ("make_inputs", "launch", "reference", "bytes_moved", "flops", "grid", "loop_iterations",
               "cta_iterations", "example_args", "torch_baseline", "nms_iou_mask", "keep_from_mask",
               "cols_per_step", "mask_words"):
        assert callable(getattr(mod, fn)), fn
    assert mod.ROLE == ROLE
    for p in mod.POINTS:
        B, N = p["B"], p["N"]
        W = _W(N)
        dt = {"fp32": torch.float32, "fp16": torch.float16}[p["dtype"]]
        for cfg in _cfgs():
            a = mod.example_args(cfg, p)
            assert all(getattr(v, "device", None) is None or v.device.type == "meta" for v in a.values())
            assert a["BOXES"].shape == (B, N, 4) and a["BOXES"].dtype == dt and a["BOXES"].is_contiguous()
            assert a["MASK"].shape == (B, N, W) and a["MASK"].dtype == torch.int64 and a["MASK"].is_contiguous()
            assert (a["N"], a["W"], a["thr"]) == (N, W, p["iou"])
            assert (a["stride_bn"], a["stride_bc"], a["stride_mn"], a["stride_mw"]) == (4, 1, W, 1)
            assert (a["BLOCK_I"], a["WORDS"], a["COLS"]) == (cfg["BLOCK_I"], cfg["WORDS"], _cols(cfg))
            assert mod.grid(cfg, p) == _grid(p, cfg)
        for cfg in (mod.BASELINE, _cfg(16, 1, 16), _cfg(128, 16, 2)):
            steps = _steps(p, cfg)
            its = mod.cta_iterations(cfg, p)
            assert len(its) == B * len(steps) and its[:len(steps)] == steps and its[-len(steps):] == steps
            assert mod.loop_iterations(cfg, p) == -(-sum(steps) // len(steps)) >= 1
        assert mod.bytes_moved(p) == B * N * (16 if p["dtype"] == "fp32" else 8) + 8 * B * N * W
        assert mod.flops(p) == 15 * B * N * (N - 1) // 2
        t = max(mod.bytes_moved(p) / 3.0e12, mod.flops(p) / 50e12)
        assert 50e-6 <= t <= 20e-3, (p, t)
        assert 1000 <= N <= 30000 and 1 <= B <= 32 and 0.5 <= p["iou"] <= 0.7
    # the points differ: dtypes, batches, boxes an image, thresholds; every one a ragged last word
    assert {p["dtype"] for p in mod.POINTS} == set(mod.DTYPES)
    assert len({p["B"] for p in mod.POINTS}) == 3 and len({p["N"] for p in mod.POINTS}) == 3
    assert all(p["N"] % 64 for p in mod.POINTS)


def test_hooks_on_small_points_and_inputs():
    """make_inputs: shape, dtype, the seed, boxes inside the image with x1 <= x2, clustered (overlaps); the
    references by hand on three boxes; the host pass; the wrapper on no boxes; the hooks by hand."""
    import torch

    mod = load_example(KERNEL)
    p = _pt(2, 500, "fp16", iou=0.6, img=320, objects=5)
    bx = mod.make_inputs(p, seed=1, device="cpu")
    b = bx["boxes"]
    assert b.shape == (2, 500, 4) and b.dtype == torch.float16 and b.is_contiguous() and bx["iou"] == 0.6
    assert float(b.min()) >= 0 and float(b.max()) <= 320
    assert bool((b[..., 2] >= b[..., 0]).all() and (b[..., 3] >= b[..., 1]).all())
    assert torch.equal(mod.make_inputs(p, seed=1, device="cpu")["boxes"], b)
    assert not torch.equal(mod.make_inputs(p, seed=2, device="cpu")["boxes"], b)
    f = mod.make_inputs(dict(p, dtype="fp32"), seed=1, device="cpu")["boxes"]
    assert f.dtype == torch.float32 and torch.equal(f.half(), b)
    ref = mod.reference({"boxes": f, "iou": 0.6})
    dens = sum(bin(v & (2**64 - 1)).count("1") for v in ref.view(-1).tolist()) / (2 * 500 * 499 / 2)
    assert 0.01 < dens < 0.5, dens                             # detector-like: clustered, many overlaps
    # three boxes by hand: IoU(0, 1) = 50 / 150 = 1/3; IoU(0, 2) = 100 / 100 = 1; IoU(1, 2) = 1/3
    three = torch.tensor([[[0.0, 0.0, 10.0, 10.0], [5.0, 0.0, 15.0, 10.0], [0.0, 0.0, 10.0, 10.0]]])
    for thr, want in ((0.3, [0b110, 0b100, 0]), (0.5, [0b100, 0, 0]), (1.0, [0, 0, 0]), (1 / 3, [0b100, 0, 0])):
        for fn in (mod.reference, mod.reference_fp32, mod.torch_baseline):
            got = fn({"boxes": three, "iou": thr})
            assert got.shape == (1, 3, 1) and got.view(-1).tolist() == want, (fn.__name__, thr, got)
    assert mod.keep_from_mask(mod.reference({"boxes": three, "iou": 0.3})[0]) == [0]
    assert mod.keep_from_mask(mod.reference({"boxes": three, "iou": 0.5})[0]) == [0, 1]
    # bit 63 and a second word: box 63 a copy of box 0, box 64 too
    many = torch.tensor([[100.0 * k, 0.0, 100.0 * k + 10, 10.0] for k in range(70)])
    many[63] = many[0]
    many[64] = many[0]
    m = mod.reference({"boxes": many[None], "iou": 0.5})[0]
    assert m.shape == (70, 2) and m[0, 0].item() == -2**63 and m[0, 1].item() == 1 and m[63, 1].item() == 1
    assert int((m != 0).sum()) == 3
    assert mod.keep_from_mask(m) == [k for k in range(70) if k not in (63, 64)]
    # the wrapper on no boxes / no images
    e = mod.nms_iou_mask(torch.zeros((0, 4)), 0.5)
    assert e.shape == (0, 0) and e.dtype == torch.int64
    assert mod.nms_iou_mask(torch.zeros((0, 5, 4)), 0.5).shape == (0, 5, 1)
    # hooks by hand: B 2, N 300 (W 5) at BASELINE (64 rows x 1 word): grid (5, 5, 2)
    q = _pt(2, 300)
    assert mod.grid(mod.BASELINE, q) == (5, 5, 2) and mod.mask_words(300) == 5 and mod.mask_words(64) == 1
    # row block r tests words r .. 4 (64-row blocks on 64-column words: the diagonal word onwards)
    assert mod.cta_iterations(mod.BASELINE, q) == [1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0,
                                                   1, 1, 1, 1, 1] * 2
    assert mod.loop_iterations(mod.BASELINE, q) == 1                   # 15 of 25, rounded up
    # 128 rows x 4 words: grid (3, 2, 2); block 1 (rows 128..255) starts at word 2, block 2 at word 4
    assert mod.cta_iterations(_cfg(128, 4, 4), q) == [4, 2, 0, 1, 1, 1] * 2
    assert mod.cols_per_step(mod.BASELINE) == 8 and mod.cols_per_step(_cfg(128, 1, 2)) == 4
    assert mod.cols_per_step(_cfg(16, 1, 16)) == 64
    assert mod.bytes_moved(q) == 2 * 300 * 16 + 8 * 2 * 300 * 5
    assert mod.bytes_moved(dict(q, dtype="fp16")) == 2 * 300 * 8 + 8 * 2 * 300 * 5
    assert mod.flops(q) == 15 * 2 * 300 * 299 // 2


def test_bad_inputs_are_value_errors():
    import torch

    mod = load_example(KERNEL)
    x = torch.rand(10, 4)
    with pytest.raises(ValueError, match="BLOCK_I=48"):
        mod.nms_iou_mask(x, 0.5, BLOCK_I=48)
    with pytest.raises(ValueError, match="WORDS=3"):
        mod.nms_iou_mask(x, 0.5, WORDS=3)
    with pytest.raises(ValueError, match="WORDS=128"):
        mod.nms_iou_mask(x, 0.5, WORDS=128)
    with pytest.raises(ValueError, match="num_warps=3"):
        mod.nms_iou_mask(x, 0.5, num_warps=3)
    with pytest.raises(ValueError, match="num_stages=0"):
        mod.nms_iou_mask(x, 0.5, num_stages=0)
    with pytest.raises(ValueError, match="iou threshold 1.5"):
        mod.nms_iou_mask(x, 1.5)
    with pytest.raises(ValueError, match="iou threshold 'a'"):
        mod.nms_iou_mask(x, "a")
    with pytest.raises(ValueError, match=r"expected boxes \[B, N, 4\] or \[N, 4\]; got shape \(10, 5\)"):
        mod.nms_iou_mask(torch.rand(10, 5), 0.5)
    with pytest.raises(ValueError, match="expected boxes"):
        mod.nms_iou_mask(torch.rand(40), 0.5)
    with pytest.raises(ValueError, match="fp32 or fp16"):
        mod.nms_iou_mask(x.double(), 0.5)
    with pytest.raises(ValueError, match="fp32 or fp16"):
        mod.nms_iou_mask(x.bfloat16(), 0.5)
    with pytest.raises(ValueError, match="N=131073 boxes an image exceed"):
        mod.nms_iou_mask(torch.empty((131073, 4), device="meta"), 0.5)
    with pytest.raises(ValueError, match="dtype 'bf16'"):
        mod.make_inputs(_pt(1, 8, "bf16"), device="cpu")
    with pytest.raises(ValueError, match="N=0"):
        mod.flops(_pt(1, 0))
    with pytest.raises(ValueError, match="B=0"):
        mod.bytes_moved(_pt(0, 8))
    with pytest.raises(ValueError, match="iou threshold -0.1"):
        mod.grid(mod.BASELINE, _pt(1, 8, iou=-0.1))
    with pytest.raises(ValueError, match="img=8"):
        mod.make_inputs(_pt(1, 8, img=8), device="cpu")
    with pytest.raises(ValueError, match="objects=0"):
        mod.example_args(mod.BASELINE, _pt(1, 8, objects=0))
    with pytest.raises(ValueError, match="BLOCK_I=8"):
        mod.grid(dict(mod.BASELINE, BLOCK_I=8), mod.POINTS[0])
    with pytest.raises(ValueError, match="WORDS=0"):
        mod.loop_iterations(dict(mod.BASELINE, WORDS=0), mod.POINTS[0])
    with pytest.raises(ValueError, match="num_warps=64"):
        mod.cta_iterations(dict(mod.BASELINE, num_warps=64), mod.POINTS[0])


def test_sweep_fits_the_points():
    """The study sweep: 48 configs (BLOCK_I 16 / 32 / 64 / 128 x WORDS 1 / 4 / 16 x 2 / 4 / 8 / 16 warps,
    num_stages 1) with BASELINE (torchvision's 64 rows x 1 word on 64 threads) among them; at every point each
    config is valid, launches >= 4 waves of programs on an H100 (7050 at the fewest: the YOLOv5 image in 128-row
    x 16-word CTAs) and its shared memory bound fits sm_90's 227 KiB. (Every config was compiled for sm_90 at
    every point with triton 3.6.0 and 3.9.0: all compile, none spills; registers 37-64 under 3.9.0 (the most
    for 128 rows: up to 2 rows' boxes a thread) and 32-77 under 3.6.0 (the most for 64 rows on 16 warps);
    shared memory 0 B - 4 KiB under both (the column sum's cross-warp step where warps split a step's columns:
    32-64 rows on 16 warps), within 8 x BLOCK_I x max(num_warps, WORDS) at every config. An earlier 16 pairs
    a thread a step spilled 2-4 under 3.6 at the fp16 point (32 rows on 2 warps, 64 on 4); a [BLOCK_I, 64]
    tile at once or unrolled column steps spilled up to 1440.)"""
    mod = load_example(KERNEL)
    axes = SWEEP_AXES
    assert set(axes) == set(mod.TUNABLES) and mod.SWEEP_AXES == axes
    assert all(len(v) >= 2 for k, v in axes.items() if k != "num_stages") and axes["num_stages"] == [1]
    cfgs = _cfgs()
    assert 48 <= len(cfgs) <= 72 and mod.BASELINE in cfgs
    sizes = [(lambda g: g[0] * g[1] * g[2])(mod.grid(c, p)) for p in mod.POINTS for c in cfgs]
    assert min(sizes) == 7050
    for p in mod.POINTS:
        for c in cfgs:
            mod._check_cfg(c)
            gi, gw, gb = mod.grid(c, p)
            assert gi * gw * gb >= 4 * H100_SMS and gw < 65536 and gb < 65536, (p, c)
            assert _smem_bound(c) <= 16 * 1024 <= SM90_SMEM_PER_BLOCK, (p, c)
            assert 1 <= _cols(c) <= 64 and c["BLOCK_I"] * _cols(c) // (32 * c["num_warps"]) <= 8


def test_sweep_matches_the_study():
    """scripts/rank_study.py's SWEEPS entry: the same axes, every config valid at the points."""
    configs, points, axes = H.study_sweeps([KERNEL], ROLE)[KERNEL]
    assert axes == SWEEP_AXES
    assert len(configs) == len(list(itertools.product(*SWEEP_AXES.values())))
    assert points == load_example(KERNEL).POINTS


def test_examples_import_without_torch():
    proc = H.imports_without_torch(CASES)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-2000:]


# sm_90 at the first point (Detectron2 RPN, fp32): BASELINE first, 128 rows on 2 warps (the most registers),
# 16 rows on 16 warps (the most shared memory), 64 rows x 16 words on 4 warps; then at the fp16 YOLOv8 batch
COMPILE_CFGS = [_cfg(64, 1, 2), _cfg(128, 16, 2), _cfg(16, 16, 16), _cfg(64, 16, 4)]
P1_CFGS = [_cfg(64, 1, 2), _cfg(128, 4, 2)]
SM120_CFGS = [_cfg(64, 1, 2), _cfg(128, 16, 2), _cfg(16, 4, 16)]


@pytest.mark.slow
def test_example_compiles_sm90(shared_cache):
    """On sm_90: BASELINE, 128 rows on 2 warps, 16 rows on 16 warps and 64 rows x 16 words on 4 warps at the
    first point (fp32); BASELINE and 128 rows on 2 warps at the fp16 point: all compile without spills within
    the shared memory bound."""
    from occmodel import compile_kernel

    mod = load_example(KERNEL)
    assert COMPILE_CFGS[0] == mod.BASELINE
    for cfg, res in H.compile_results(KERNEL, COMPILE_CFGS, "sm_90"):
        assert res.status == "ok", f"{cfg} on sm_90: {res.status}: {res.message}"
        assert 0 < res.n_regs <= 128 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert 0 <= res.shared <= _smem_bound(cfg), (cfg, res.shared)
    for cfg in P1_CFGS:
        res = compile_kernel(mod._kernel, args=mod.example_args(cfg, mod.POINTS[1]), arch="sm_90",
                             num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
        assert res.status == "ok" and res.n_spills == 0, (cfg, res.n_regs, res.n_spills, res.message)
        assert 0 < res.n_regs <= 128 and res.shared <= _smem_bound(cfg), (cfg, res.n_regs, res.shared)


@pytest.mark.slow
def test_example_compiles_sm120(shared_cache):
    """On sm_120 (99 KiB a block): BASELINE, 128 rows on 2 warps and 16 rows x 4 words on 16 warps compile at
    the first point without spills within their shared memory bound."""
    for cfg, res in H.compile_results(KERNEL, SM120_CFGS, "sm_120"):
        assert res.status == "ok", f"{cfg} on sm_120: {res.status}: {res.message}"
        assert res.n_regs > 0 and res.n_spills == 0, (cfg, res.n_regs, res.n_spills)
        assert res.shared <= min(_smem_bound(cfg), SM120_SMEM_PER_BLOCK), (cfg, res.shared)


# ----------------------------------------------------------------- the subprocess side
def _run() -> None:
    """Every case through launch against the fp32 reference (exact) and the fp64 one (near-ties only); the
    triangle and the tail; the host pass against a greedy NMS; the 2-d wrapper; torch_baseline; one JSON
    line."""
    import torch

    H.patch_interpreter_index()
    mod = load_example(KERNEL)

    def extra(name, point, inputs, out, ref):
        bx, thr = inputs["boxes"], inputs["iou"]
        B, N = bx.shape[0], bx.shape[1]
        W = _W(N)
        r32 = mod.reference_fp32(inputs)
        res = {"dtype": "int64" if out.dtype == torch.int64 else str(out.dtype), "contiguous": out.is_contiguous(),
               "exact32": bool(out.shape == r32.shape and torch.equal(out, r32))}
        # the bits: [B, N, W * 64] bool, column j of row i
        sh = torch.arange(64, dtype=torch.int64)

        def bits(m):
            return (((m.unsqueeze(-1) >> sh) & 1) != 0).reshape(B, N, W * 64)

        ob, rb = bits(out), bits(ref)
        j = torch.arange(W * 64)
        i = torch.arange(N)
        res["lower_bits"] = int((ob[:, :, :] & (j[None, None, :] <= i[None, :, None])).sum())
        res["past_n_bits"] = int(ob[:, :, N:].sum())
        res["n_bits"] = int(ob.sum())
        res["bit63"] = bool(ob[:, :, 63::64].any())
        diff = (ob != rb)[:, :, :N].nonzero().tolist()
        far = 0
        b64 = bx.double()
        for bb, ii, jj in diff:
            a, c = b64[bb, ii], b64[bb, jj]
            iw = max(0.0, float(min(a[2], c[2]) - max(a[0], c[0])))
            ih = max(0.0, float(min(a[3], c[3]) - max(a[1], c[1])))
            inter = iw * ih
            union = float((a[2] - a[0]) * (a[3] - a[1]) + (c[2] - c[0]) * (c[3] - c[1])) - inter
            far += int(union == 0 or abs(inter / union - thr) > TIE)
        res["flips"], res["far_flips"] = len(diff), far
        res["inputs_unchanged"] = bool(torch.equal(bx.isnan(), inputs["boxes0"].isnan())
                                       and torch.equal(bx.nan_to_num(7.0), inputs["boxes0"].nan_to_num(7.0)))
        res["box_strides"] = list(bx.stride())
        res["keep"] = [mod.keep_from_mask(out[bb]) for bb in range(B)]
        res["keep_ref"] = [greedy_nms(bx[bb], thr) for bb in range(B)]
        cfg = CASES[KERNEL][name][1]
        flat = mod.nms_iou_mask(bx[0], thr, **cfg)
        res["flat_equal"] = bool(flat.shape == (N, W) and torch.equal(flat, out[0]))
        res["baseline_equal"] = bool(torch.equal(mod.torch_baseline(inputs), r32))
        # threshold 0: a bit for every positive-overlap pair j > i
        x1, y1, x2, y2 = b64.unbind(-1)
        iw = (torch.minimum(x2[:, :, None], x2[:, None, :]) - torch.maximum(x1[:, :, None], x1[:, None, :])).clamp_min(0)
        ih = (torch.minimum(y2[:, :, None], y2[:, None, :]) - torch.maximum(y1[:, :, None], y1[:, None, :])).clamp_min(0)
        upper = torch.ones(N, N, dtype=torch.bool).triu(1)
        res["n_overlapping"] = int(((iw * ih > 0) & upper).sum())
        res["n_zero_area"] = int(((x2 - x1) * (y2 - y1) == 0).sum())
        if name == "dupes_fp32":
            pairs = [k for k in range(1, N, 3) if torch.equal(b64[0, k], b64[0, k - 1])
                     and float((b64[0, k, 2] - b64[0, k, 0]) * (b64[0, k, 3] - b64[0, k, 1])) > 0]
            res["dupes_hit"] = len(pairs) > 20 and all(bool(ob[0, k - 1, k]) for k in pairs)
        return res

    H.run_cases(KERNEL, CASES[KERNEL], tol_table=dict(H.TOL), prepare=_prepare, baseline=False, extra=extra)


if __name__ == "__main__":
    _run()
