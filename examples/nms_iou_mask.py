"""The parallel stage of non-maximum suppression as torchvision's `nms_kernel` (torchvision/csrc/ops/cuda/
nms_kernel.cu), Detectron2's batched_nms (through torchvision), MMCV's `nms_cuda` and TensorRT's batched NMS
plugins run it: the IoU bitmask of score-sorted boxes, a bare @triton.jit kernel + its launcher.

    mask[b, i, w] bit k = 1  <=>  j = 64 w + k > i,  j < N  and  IoU(box[b, i], box[b, j]) > iou_threshold

boxes: [B, N, 4] (x1, y1, x2, y2), fp32 or fp16, already sorted by score (descending) per image, any strides
(a [B, N, 4] slice of a wider [B, N, 6] detections tensor with scores and classes beside the boxes is read in
place); mask: [B, N, W] int64, W = cdiv(N, 64), fresh and contiguous, every word written (the words at or
below the diagonal are 0: unlike torchvision's at::empty mask, whose skipped lower blocks hold garbage, any
word of this one may be read). IoU as torchvision's devIoU computes it, in fp32 (fp16 boxes widened on
load): inter = max(min(x2) - max(x1), 0) * max(min(y2) - max(y1), 0), union = area_i + area_j - inter, but
compared without the division: inter > thr * union (the same decision up to the rounding of one multiply
against one divide: bits may differ only where IoU is within a few fp32 ulps of the threshold; a zero union
tests false both ways). No legacy "+1" pixel offset (torchvision's and Detectron2's convention; MMCV's
offset=1 is not supported).

The sequential suppression pass that reads the mask (walk the boxes in score order, OR each kept box's row
into a `removed` bitmap of W words) is left to the host, as torchvision does it: `keep_from_mask` here
(Python, for the tests; it is not part of the timed launch).

One launch of `_kernel`, grid (cdiv(N, BLOCK_I), cdiv(W, WORDS), B), the row block fastest: a CTA owns
BLOCK_I boxes i (its rows, loaded once, widened to fp32, their areas computed once) and WORDS consecutive
mask words (64 WORDS columns j):
  1. the triangle: the first of its words that holds any column j > i0 (its first row) is w_first =
     max(w0, (i0 + 1) // 64); the words before it are all 0 and cost nothing; a CTA entirely below the
     diagonal (about half of them) runs no iteration and only stores its zero tile.
  2. the loop, one word a step (runtime bounds w_first .. min(w0 + WORDS, W)), and inside it 64 / COLS steps
     of COLS columns: the columns' boxes (4 loads of COLS, masked past N: warp-broadcast L1 / L2 hits, one
     image's boxes are <= 480 KB), the IoU test as a [COLS, BLOCK_I] tile (rows the fast axis, so a thread
     keeps only a few rows' boxes live), the bits packed by a sum over the columns of (hit ? 1 << k : 0)
     (distinct powers of two: the sum is the OR, bit 63 the sign bit) into the row's word; then the word
     stored (BLOCK_I words, one a row, the rows W words apart). COLS (derived, not swept) =
     PAIRS_PER_THREAD x 32 x num_warps / BLOCK_I within 1..64: 8 pairs a thread a step (4-64 columns, 1-16
     steps a word over the sweep). (A [BLOCK_I, 64] tile tested at once, or the column steps unrolled
     (tl.static_range), spilled: 64-128 rows on 2 warps took 168-255 registers and spilled 2-1440; a
     [BLOCK_I, WORDS] register tile stored once spilled at 128 rows x 16 words; 16 pairs a thread a step
     spilled 2-4 under triton 3.6 at fp16 boxes, ptxas stopping at 72 registers.)
  3. the words before w_first: zeros, one masked [BLOCK_I, WORDS] store.
How this differs from the other examples: knn_topk / farthest_point_sample compute pairwise distances and
keep a running selection (top-k / argmax); roi_align gathers features through box coordinates. Here every
pair (i, j > i) of one image's boxes is tested and the result packed to bits, the upper triangle only.

Tunables: BLOCK_I (16 / 32 / 64 / 128: rows a CTA; torchvision's 64), WORDS (1 / 4 / 16: mask words a CTA,
64 columns each; torchvision's 1), num_warps (2 / 4 / 8 / 16). num_stages held at 1 (the loop's loads are
1 KB of L2-resident column boxes whose results feed nothing across steps: the IoU math hides them).
BASELINE is torchvision's launch: 64 rows x 1 word a CTA (64 threads: 2 warps).
On sm_90 every config of the sweep (48) compiles at every point without spills: 37-64 registers under triton
3.9.0 and 32-77 under 3.6.0, shared memory 0 B - 4 KiB under both (the column sum's cross-warp step where
warps split a step's columns).
Problem parameters (a workload point): B, N, dtype ("fp32" / "fp16"), iou (the threshold), img (the image
size in pixels, boxes drawn inside it), objects (ground-truth objects an image: candidates cluster around
them, as a detector's do; make_inputs).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(BOXES, MASK, N, W, thr,
            stride_bb, stride_bn, stride_bc, stride_mb, stride_mn, stride_mw,
            BLOCK_I: tl.constexpr, WORDS: tl.constexpr, COLS: tl.constexpr):
    pid_i = tl.program_id(0)
    pid_w = tl.program_id(1)
    b = tl.program_id(2).to(tl.int64)
    i0 = pid_i * BLOCK_I
    rows = i0 + tl.arange(0, BLOCK_I)
    row_ok = rows < N
    w0 = pid_w * WORDS
    wl = tl.arange(0, WORDS)
    # the CTA's rows: loaded once, widened to fp32, their areas
    bx = BOXES + b * stride_bb
    rp = bx + rows * stride_bn
    x1i = tl.load(rp, mask=row_ok, other=0.0).to(tl.float32)
    y1i = tl.load(rp + stride_bc, mask=row_ok, other=0.0).to(tl.float32)
    x2i = tl.load(rp + 2 * stride_bc, mask=row_ok, other=0.0).to(tl.float32)
    y2i = tl.load(rp + 3 * stride_bc, mask=row_ok, other=0.0).to(tl.float32)
    area_i = (x2i - x1i) * (y2i - y1i)
    kk = tl.arange(0, COLS)
    mrow = MASK + b * stride_mb + rows * stride_mn
    # the triangle: words before w_first hold no column j > i0: zeros, one store
    w_first = tl.maximum(w0, (i0 + 1) // 64)
    w_end = tl.minimum(w0 + WORDS, W)
    if w_first > w0:
        wo = w0 + wl
        zmask = row_ok[:, None] & (wo[None, :] < tl.minimum(w_first, w_end))
        tl.store(mrow[:, None] + wo[None, :] * stride_mw, tl.zeros([BLOCK_I, WORDS], dtype=tl.int64), mask=zmask)
    for w in range(w_first, w_end):
        word = tl.zeros([BLOCK_I], dtype=tl.int64)
        for s in range(0, 64 // COLS):
            # COLS columns of the word a step, as a [COLS, BLOCK_I] tile (rows the fast axis: a thread keeps
            # few rows' boxes live, the column boxes are warp-broadcast loads)
            cols = w * 64 + s * COLS + kk
            col_ok = cols < N
            cp = bx + cols * stride_bn
            x1j = tl.load(cp, mask=col_ok, other=0.0).to(tl.float32)
            y1j = tl.load(cp + stride_bc, mask=col_ok, other=0.0).to(tl.float32)
            x2j = tl.load(cp + 2 * stride_bc, mask=col_ok, other=0.0).to(tl.float32)
            y2j = tl.load(cp + 3 * stride_bc, mask=col_ok, other=0.0).to(tl.float32)
            area_j = (x2j - x1j) * (y2j - y1j)
            iw = tl.maximum(tl.minimum(x2j[:, None], x2i[None, :]) - tl.maximum(x1j[:, None], x1i[None, :]), 0.0)
            ih = tl.maximum(tl.minimum(y2j[:, None], y2i[None, :]) - tl.maximum(y1j[:, None], y1i[None, :]), 0.0)
            inter = iw * ih
            union = (area_i[None, :] + area_j[:, None]) - inter
            hit = (inter > thr * union) & (cols[:, None] > rows[None, :]) & col_ok[:, None]
            bit = tl.full([COLS], 1, tl.int64) << (s * COLS + kk).to(tl.int64)     # bit 63: the sign bit
            word += tl.sum(tl.where(hit, bit[:, None], 0), axis=0)
        tl.store(mrow + w * stride_mw, word, mask=row_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-32"
DTYPES = ("fp32", "fp16")
TUNABLES = ("BLOCK_I", "WORDS", "num_warps", "num_stages")
BASELINE = {"BLOCK_I": 64, "WORDS": 1, "num_warps": 2, "num_stages": 1}
# the study's sweep: 4 x 3 x 4 x 1 = 48 configs: 16-128 rows x 64-1024 columns a CTA on 64-512 threads
SWEEP_AXES = {"BLOCK_I": [16, 32, 64, 128], "WORDS": [1, 4, 16], "num_warps": [2, 4, 8, 16], "num_stages": [1]}
MAX_N = 131072              # in-image offsets (N x W words, N x 4 coordinates) stay int32
MAX_B = 65535               # grid axis 2
PAIRS_PER_THREAD = 8       # box pairs a thread tests a step (COLS derived from it: no spills anywhere)

# Compute-bound on the pair tests (~15 fp32 ops a pair, upper triangle: B N^2 / 2 pairs, ~0.2-0.5 ms at
# ~50 TFLOP/s), plus the mask written once (B N W 8 bytes, 0.1-0.3 GB: 30-100 us at ~3 TB/s).
POINTS = [
    # Detectron2's Faster R-CNN R50-C4 RPN in training: RPN.PRE_NMS_TOPK_TRAIN = 12000 proposals an image,
    # RPN.NMS_THRESH 0.7, a per-GPU batch of 8 images at ~800 x 1333, fp32 (the proposals' deltas decoded
    # in fp32). 8 x 12000 boxes, W = 188 words (12000 % 64 = 32: a ragged last word); mask 144 MB
    {"B": 8, "N": 12000, "dtype": "fp32", "iou": 0.7, "img": 1333, "objects": 20},
    # Ultralytics YOLOv8 validation (half=True, batch 32, imgsz 640, iou=0.7): 80^2 + 40^2 + 20^2 = 8400
    # anchor-free candidates an image (conf 0.001 keeps nearly all), fp16 boxes. W = 132 (8400 % 64 = 16);
    # mask 284 MB
    {"B": 32, "N": 8400, "dtype": "fp16", "iou": 0.7, "img": 640, "objects": 8},
    # YOLOv5 P6 (imgsz 1280) validation: 3 x (160^2 + 80^2 + 40^2 + 20^2) = 102000 candidates, capped at
    # max_nms = 30000 by score, iou_thres 0.6, one image, fp32. W = 469 (30000 % 64 = 48); mask 113 MB
    {"B": 1, "N": 30000, "dtype": "fp32", "iou": 0.6, "img": 1280, "objects": 30},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_thr(t) -> float:
    if not _is_num(t) or not 0.0 <= t <= 1.0:
        raise ValueError(f"iou threshold {t!r} must be a number from 0 to 1")
    return float(t)


def _check_point(point) -> dict:
    """The point's fields, checked (defaults: B 1, iou 0.5, img 640, objects 10)."""
    B, n = point.get("B", 1), point.get("N")
    if not _is_int(B) or not 1 <= B <= MAX_B:
        raise ValueError(f"B={B!r} must be an int from 1 to {MAX_B}")
    if not _is_int(n) or not 1 <= n <= MAX_N:
        raise ValueError(f"N={n!r} must be an int from 1 to {MAX_N}")
    dt = point.get("dtype")
    if dt not in DTYPES:
        raise ValueError(f"dtype {dt!r} is not one of {', '.join(DTYPES)}")
    thr = _check_thr(point.get("iou", 0.5))
    img = point.get("img", 640)
    if not _is_int(img) or not 16 <= img <= 8192:
        raise ValueError(f"img={img!r} must be an int from 16 to 8192 (pixels)")
    obj = point.get("objects", 10)
    if not _is_int(obj) or obj < 1:
        raise ValueError(f"objects={obj!r} must be a positive int")
    return {"B": B, "N": n, "dtype": dt, "iou": thr, "img": img, "objects": obj}


def _check_cfg(cfg) -> None:
    bi = cfg["BLOCK_I"]
    if not _is_int(bi) or bi not in (16, 32, 64, 128, 256):
        raise ValueError(f"BLOCK_I={bi!r} must be one of 16, 32, 64, 128, 256")
    wd = cfg["WORDS"]
    if not _is_int(wd) or wd < 1 or wd > 64 or wd & (wd - 1):
        raise ValueError(f"WORDS={wd!r} must be a power of two from 1 to 64")
    nw = cfg["num_warps"]
    if not _is_int(nw) or nw not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"num_warps={nw!r} must be a power of two from 1 to 32")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def mask_words(n: int) -> int:
    """W: 64-bit words a row of the mask, cdiv(n, 64)."""
    return triton.cdiv(n, 64)


def cols_per_step(cfg) -> int:
    """COLS: columns of a word tested a step, PAIRS_PER_THREAD x 32 x num_warps / BLOCK_I within 1..64 (a power
    of two): the [BLOCK_I, COLS] pair tile is PAIRS_PER_THREAD a thread, 64 / COLS steps a word."""
    _check_cfg(cfg)
    return max(1, min(64, PAIRS_PER_THREAD * 32 * cfg["num_warps"] // cfg["BLOCK_I"]))


def _grid(B: int, n: int, cfg) -> tuple[int, int, int]:
    _check_cfg(cfg)
    return (triton.cdiv(n, cfg["BLOCK_I"]), triton.cdiv(mask_words(n), cfg["WORDS"]), B)


def _kernel_args(boxes, mask, thr: float, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(BOXES=boxes, MASK=mask, N=boxes.shape[1], W=mask.shape[2], thr=float(thr),
                stride_bb=boxes.stride(0), stride_bn=boxes.stride(1), stride_bc=boxes.stride(2),
                stride_mb=mask.stride(0), stride_mn=mask.stride(1), stride_mw=mask.stride(2),
                BLOCK_I=cfg["BLOCK_I"], WORDS=cfg["WORDS"], COLS=cols_per_step(cfg))


def nms_iou_mask(boxes, iou_threshold: float, *, BLOCK_I: int = 64, WORDS: int = 1, num_warps: int = 2,
                 num_stages: int = 1):
    """The NMS IoU bitmask of score-sorted boxes (module doc): boxes [B, N, 4] or [N, 4] (x1, y1, x2, y2), fp32
    or fp16, any strides, at most 131072 boxes an image; iou_threshold in [0, 1]. Returns a fresh contiguous
    int64 mask [B, N, cdiv(N, 64)] ([N, cdiv(N, 64)] for 2-d boxes): bit k of word w of row i set when box
    64 w + k comes after box i and their IoU exceeds the threshold. BLOCK_I, WORDS, num_warps, num_stages:
    the tunables (module doc)."""
    import torch
    cfg = {"BLOCK_I": BLOCK_I, "WORDS": WORDS, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    thr = _check_thr(iou_threshold)
    if boxes.dim() not in (2, 3) or boxes.shape[-1] != 4:
        raise ValueError(f"expected boxes [B, N, 4] or [N, 4]; got shape {tuple(boxes.shape)}")
    if boxes.dtype not in (torch.float32, torch.float16):
        raise ValueError(f"boxes must be fp32 or fp16; got {boxes.dtype}")
    flat = boxes.dim() == 2
    bx = boxes.unsqueeze(0) if flat else boxes
    B, n = bx.shape[0], bx.shape[1]
    if n > MAX_N:
        raise ValueError(f"N={n} boxes an image exceed {MAX_N}")
    if B > MAX_B:
        raise ValueError(f"B={B} images exceed {MAX_B} (grid axis 2)")
    W = mask_words(n)
    mask = torch.empty((B, n, W), dtype=torch.int64, device=bx.device)
    if B == 0 or n == 0:
        return mask[0] if flat else mask
    # int32 in-image offsets: an image whose strided extent would overflow them is copied out first
    if n * bx.stride(1) + 4 * bx.stride(2) >= 2**31 or bx.stride(1) < 0 or bx.stride(2) < 0:
        bx = bx.contiguous()
    _kernel[_grid(B, n, cfg)](**_kernel_args(bx, mask, thr, cfg), num_warps=num_warps, num_stages=num_stages)
    return mask[0] if flat else mask


def keep_from_mask(mask, n: int | None = None) -> list[int]:
    """The sequential pass (torchvision's host loop) over one image's mask [N, W]: box i is kept unless a kept
    box before it suppresses it; suppression ORs the kept box's row into the removed bitmap. Returns the
    kept indices in score order. CPU / Python: for tests and small N."""
    rows = mask.cpu().tolist()
    n = len(rows) if n is None else n
    removed = [0] * (len(rows[0]) if rows else 0)
    keep = []
    for i in range(n):
        if not (removed[i // 64] >> (i % 64)) & 1:
            keep.append(i)
            removed = [r | (v & (2**64 - 1)) for r, v in zip(removed, rows[i])]
    return keep


def _torch_dtype(dt: str):
    import torch
    return {"fp32": torch.float32, "fp16": torch.float16}[dt]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """boxes [B, N, 4] as a detector's candidates: `objects` ground-truth boxes an image (centres uniform, sides
    5-40 % of img), each candidate a jittered copy of a random object (centre +-15 %, sides x 0.7-1.4 of the
    object's) or, one in five, a random background box; clipped to the image; sorted by a random score,
    descending; in the point's dtype, contiguous. iou: the threshold."""
    import torch
    P = _check_point(point)
    B, n, img, obj = P["B"], P["N"], float(P["img"]), P["objects"]
    gen = torch.Generator(device=device).manual_seed(seed)

    def u(*shape):
        return torch.rand(shape, generator=gen, device=device)

    oc = u(B, obj, 2) * img
    osz = (0.05 + 0.35 * u(B, obj, 2)) * img
    pick = torch.randint(0, obj, (B, n), generator=gen, device=device)
    idx = pick.unsqueeze(-1).expand(B, n, 2)
    c = torch.gather(oc, 1, idx)
    s = torch.gather(osz, 1, idx)
    c = c + (u(B, n, 2) - 0.5) * 0.3 * s
    s = s * (0.7 + 0.7 * u(B, n, 2))
    bg = u(B, n, 1) < 0.2
    c = torch.where(bg, u(B, n, 2) * img, c)
    s = torch.where(bg, (0.02 + 0.3 * u(B, n, 2)) * img, s)
    x1y1 = (c - s / 2).clamp(0, img)
    x2y2 = (c + s / 2).clamp(0, img)
    boxes = torch.cat([x1y1, x2y2], dim=-1)
    score = u(B, n)
    order = score.argsort(dim=1, descending=True)
    boxes = torch.gather(boxes, 1, order.unsqueeze(-1).expand(B, n, 4))
    return {"boxes": boxes.to(_torch_dtype(P["dtype"])).contiguous(), "iou": P["iou"]}


def launch(inputs, cfg):
    """The int64 mask [B, N, cdiv(N, 64)] of inputs["boxes"] at inputs["iou"]."""
    return nms_iou_mask(inputs["boxes"], inputs["iou"], BLOCK_I=cfg["BLOCK_I"], WORDS=cfg["WORDS"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def _pack_bits(hit):
    """[..., n_cols] bool -> [..., cdiv(n_cols, 64)] int64: bit k of word w from column 64 w + k."""
    import torch
    n = hit.shape[-1]
    W = mask_words(n)
    pad = W * 64 - n
    if pad:
        hit = torch.nn.functional.pad(hit, (0, pad))
    h = hit.reshape(*hit.shape[:-1], W, 64).long()
    sh = torch.arange(64, device=hit.device, dtype=torch.int64)
    return (h << sh).sum(-1)                    # distinct powers of two: the sum is the OR (bit 63 the sign)


def _mask_torch(boxes, thr: float, acc, chunk: int = 2048):
    """The mask by torch: IoU in `acc` (float64 or float32) with the kernel's operation order, compared as
    inter > thr * union (float32) or as the IoU itself (float64: inter / union > thr), j > i only; rows in
    chunks of `chunk` to bound the [chunk, N] temporaries."""
    import torch
    B, n = boxes.shape[0], boxes.shape[1]
    out = torch.empty((B, n, mask_words(n)), dtype=torch.int64, device=boxes.device)
    bx = boxes.to(acc)
    j = torch.arange(n, device=boxes.device)
    for b in range(B):
        x1, y1, x2, y2 = bx[b].unbind(-1)
        area = (x2 - x1) * (y2 - y1)
        for r0 in range(0, n, chunk):
            r = slice(r0, min(r0 + chunk, n))
            iw = (torch.minimum(x2[r, None], x2[None, :]) - torch.maximum(x1[r, None], x1[None, :])).clamp_min(0)
            ih = (torch.minimum(y2[r, None], y2[None, :]) - torch.maximum(y1[r, None], y1[None, :])).clamp_min(0)
            inter = iw * ih
            union = (area[r, None] + area[None, :]) - inter
            if acc == torch.float64:
                hit = inter / union > thr
            else:
                hit = inter > torch.tensor(thr, dtype=acc) * union
            hit &= j[None, :] > j[r, None]
            out[b, r] = _pack_bits(hit)
    return out


def reference(inputs):
    """The mask from the IoU in float64 (the boxes' values widened): inter / union > thr, j > i."""
    import torch
    return _mask_torch(inputs["boxes"], inputs["iou"], torch.float64)


def reference_fp32(inputs):
    """The mask with the kernel's own arithmetic in float32 (inter > thr * union, thr rounded to fp32): bit for
    bit what the kernel computes where no multiply-add is fused."""
    import torch
    return _mask_torch(inputs["boxes"], inputs["iou"], torch.float32)


def torch_baseline(inputs):
    """The same mask by plain torch ops in float32 (row chunks of 2048 x N IoU matrices, bits packed by a
    shift-and-sum): what a torch-only NMS would build."""
    return reference_fp32(inputs)


def bytes_moved(point) -> int:
    """The boxes read once (16 B fp32 / 8 B fp16 a box) and the mask written once (8 B a word, B N W words)."""
    P = _check_point(point)
    B, n = P["B"], P["N"]
    return B * n * (16 if P["dtype"] == "fp32" else 8) + 8 * B * n * mask_words(n)


def flops(point) -> int:
    """15 fp32 operations a tested pair (2 min, 2 max, 2 sub, 2 clamp, 1 mul for inter; 2 add/sub for union;
    1 mul and 1 compare; 2 for the bit's select and sum), over the B N (N - 1) / 2 pairs j > i."""
    P = _check_point(point)
    n = P["N"]
    return 15 * P["B"] * n * (n - 1) // 2


def grid(cfg, point) -> tuple[int, int, int]:
    """(row blocks of BLOCK_I, column chunks of WORDS words, B): the row block fastest."""
    P = _check_point(point)
    return _grid(P["B"], P["N"], cfg)


def _chunk_steps(cfg, n: int) -> list[int]:
    """Words computed by the CTA of each (row block, column chunk), row block fastest: the words of its chunk
    from max(w0, (i0 + 1) // 64) on (0 below the diagonal)."""
    gi, gw, _ = _grid(1, n, cfg)
    W, bi, wd = mask_words(n), cfg["BLOCK_I"], cfg["WORDS"]
    out = []
    for cw in range(gw):
        w0, w_end = cw * wd, min(cw * wd + wd, W)
        for ci in range(gi):
            out.append(max(0, w_end - max(w0, (ci * bi + 1) // 64)))
    return out


@functools.lru_cache(maxsize=64)
def _steps_cached(bi: int, wd: int, n: int) -> tuple[int, ...]:
    return tuple(_chunk_steps({"BLOCK_I": bi, "WORDS": wd, "num_warps": 4, "num_stages": 1}, n))


def cta_iterations(cfg, point) -> list[int]:
    """Loop steps of each CTA in launch order (program_id(0), the row block, fastest): the mask words it
    computes, 0 for a CTA below the diagonal (it stores zeros only); the same for every image."""
    P = _check_point(point)
    _check_cfg(cfg)
    return list(_steps_cached(cfg["BLOCK_I"], cfg["WORDS"], P["N"])) * P["B"]


def loop_iterations(cfg, point) -> int:
    """Loop steps a CTA: the mean over the CTAs, rounded up (about WORDS / 2: half the CTAs lie below the
    diagonal)."""
    P = _check_point(point)
    _check_cfg(cfg)
    steps = _steps_cached(cfg["BLOCK_I"], cfg["WORDS"], P["N"])
    return -(-sum(steps) // len(steps))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, all on the meta device (no tensor carries data:
    the boxes are read by position, no index is loaded): boxes [B, N, 4] contiguous in the point's dtype, the
    mask [B, N, W] int64 contiguous, the threshold."""
    import torch
    P = _check_point(point)
    _check_cfg(cfg)
    B, n = P["B"], P["N"]
    boxes = torch.empty((B, n, 4), dtype=_torch_dtype(P["dtype"]), device="meta")
    mask = torch.empty((B, n, mask_words(n)), dtype=torch.int64, device="meta")
    return _kernel_args(boxes, mask, P["iou"], cfg)
