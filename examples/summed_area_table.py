"""Summed-area table (integral image) of a batch of images -- the 2-D inclusive prefix sum that OpenCV's
cv::integral / cv::cuda::integral (and its sqsum variant, cv::cuda::sqrIntegral), NPP's nppiIntegral /
nppiSqrIntegral, box-filter and guided-filter pipelines (He et al.'s O(1) box means), Viola-Jones-style
detectors (Haar features from four table reads) and fast local-statistics layers (windowed mean / variance:
local contrast normalization, adaptive thresholding) compute -- three bare @triton.jit kernels + their
launcher:

    out[b, y, x] = sum_{y' <= y, x' <= x} img[b, y', x']
    sq[b, y, x]  = sum_{y' <= y, x' <= x} img[b, y', x']^2          (optional: the squared-sum table)

img: [B, H, W] uint8 / fp16 / fp32, unit stride along W, any row and image stride (an ROI crop of a larger
frame, a pitched video surface, is read in place). Accumulation and output: int32 for uint8 (exact; the
launcher refuses shapes whose table could overflow: 255 H W, and 255^2 H W for the squared table, must fit
int32), fp32 for fp16 / fp32 (fp32 adds in a fixed order: Triton's tree scans inside a tile, sequential
carries between tiles -- deterministic, within the reassociation bound of any order). The table is the
inclusive one, [B, H, W] (torch's img.cumsum(-1).cumsum(-2)); OpenCV's (H + 1) x (W + 1) layout is this one
with a zero first row and column. Outputs are fresh contiguous tensors: one buffer [T, B, H, W] with T = 1,
or 2 with the squared table (out = buffer[0], sq = buffer[1]).

Work split -- reduce, scan the strip totals, rescan (CUB's reduce-then-scan, in two dimensions): the image is
cut into vertical strips of BLOCK_W columns (NS = cdiv(W, BLOCK_W) strips an image) and each CTA owns one
strip of one image, walking it top to bottom in BLOCK_H-row chunks (grid (NS, B), strip fastest).
  1. `_strip_sum_kernel`: per chunk, one [BLOCK_H, BLOCK_W] tile loaded and summed along its rows; the
     per-row strip totals (and the totals of the squares) go to an int32 / fp32 workspace ws [T, B, NS, H]
     (H contiguous: each chunk's BLOCK_H totals are one contiguous store).
  2. `_carry_kernel`: an inclusive scan of ws along the strips, in place: a CTA owns CARRY_R rows of one
     (table, image) plane and walks its NS strips CARRY_S at a time ([CARRY_S, CARRY_R] tiles, tl.cumsum down
     the strips plus a running carry). ws[t, b, s, y] is then the sum of row y of image b over every column
     left of strip s + 1.
  3. `_kernel` (the main one): per chunk, the tile loaded again and scanned along its rows (tl.cumsum, axis
     1), ws[t, b, s - 1, rows] added to each row (the row's prefix from the strips on the left: every element
     now holds its full row prefix), the tile scanned down its columns (tl.cumsum, axis 0) plus the
     per-column carry of the chunks above (a [BLOCK_W] register vector), stored once; the carry grows by the
     row-scanned tile's column sums. With the squared table the same for x^2 from the same loaded tile. The
     tile's offsets are loop-invariant (computed once; a chunk adds its row start to the scalar base).
With a single strip (W <= BLOCK_W: the small feature maps at the widest tiles) passes 1 and 2 are skipped and
`_kernel` is compiled without the workspace read (SINGLE_STRIP, a constexpr the launcher derives from the
shapes): the image is read once. Otherwise it is read twice and the table written once -- against the
obvious two-pass design (a row-scan pass writing a 4-byte partial table, a column-scan pass reading it back
and rewriting it) that is 6 instead of 13 bytes a pixel at uint8, 12 instead of 16 at fp32, 10 instead of
25 with a uint8 squared table. A single pass with a decoupled look-back between the strips of a chunk row
(each strip waiting on its left neighbour's row totals) would read the image once but serializes the strips
of a chunk row on the look-back latency and needs spin-waits; the workspace here is 4 T / BLOCK_W bytes a
pixel (1/32 - 1/128 of the table), L2-resident between the passes. Rows past H and columns past W load 0 and
are not stored; every output element is written once, no atomics, no host synchronization (the launch is
CUDA-graph capturable).

How this differs from the closest examples/ kernels: examples/chunk_cumsum.py is the 1-D scan of each row
of a [R, L] tensor inside one CTA (a row carry along L); here each CTA scans a 2-D tile along both axes, the
carry runs down the columns, and the row prefixes cross CTAs through the workspace pass. examples/
lookback_scan.py is a device-wide 1-D scan with decoupled look-back in a single pass (atomic tile ids, spin
loops on status words); here the cross-CTA dependency is resolved by a separate reduce pass and a small scan
of the strip totals -- no inter-CTA waiting, three launches. examples/stencil2d.py also walks image tiles
down a column strip with register state carried between steps, but its outputs depend on a fixed 5 x 5
neighbourhood (a halo of 2, read from L2); here each output depends on everything above and to the left.

Tunables: BLOCK_H (4 / 8 / 16 / 32 rows a chunk: the steps down the strip, cdiv(H, BLOCK_H) of them, and the
depth of the column scan inside a tile), BLOCK_W (32 / 64 / 128 columns a strip: the CTAs an image, NS of them,
the width of each row's load -- 32 B to 512 B a row --, the workspace size, and whether W fits one strip),
PREFETCH (0 / 1: the chunk loop loads the next chunk's tile into registers before scanning this one -- one
tile of loads in flight behind the scans, a second tile of registers; the strip-sum pass likewise), num_warps
(4 / 8), num_stages (the launch's: held at 1. Triton's pipeliner leaves a loop without tl.dot alone; asked
through tl.range(num_stages=2 / 3) it did stage the tiles through shared memory, but 2-4 registers spilled in
a dozen scattered configs under triton 3.9 (and 3.6.0), so the hand prefetch is the lever instead). Shared by
both tile passes (the strips must match); the carry pass is fixed (CARRY_S 32 strips x CARRY_R 128 rows, 4
warps). Compiled for sm_90 from example_args, every config at every point, all three kernels: no spills under
triton 3.6.0 or 3.9. `_kernel`: registers 30-251 under 3.6.0, 32-250 under 3.9 (the most: 32 x 128 tiles on 4
warps, 32 elements a thread, with the prefetch or both tables; the fp32 point's at most 167 / 143), shared
memory 0.5-16 KiB (the column scan's cross-warp scratch: 4 bytes x BLOCK_H x BLOCK_W where rows span warps);
`_strip_sum_kernel`: registers 24-87 / 22-76, shared memory 16-128 B; `_carry_kernel`: 96-113 / 80-135
registers, 0-16 KiB. sm_120: the baseline, the largest and the smallest tile fit (the test file's).
Problem parameters (a workload point): B (images), H, W (rows, columns), dtype ("uint8" / "fp16" / "fp32"),
squared (bool: also the squared-sum table; default False).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl


@triton.jit
def _strip_sum_kernel(X, WS, B, H, W, NS, stride_xb, stride_xh, SQ: tl.constexpr, BLOCK_H: tl.constexpr,
                      BLOCK_W: tl.constexpr, PREFETCH: tl.constexpr):
    s = tl.program_id(0)
    b = tl.program_id(1)
    cols = s * BLOCK_W + tl.arange(0, BLOCK_W)
    col_ok = (cols < W)[None, :]
    x_plane = X + b.to(tl.int64) * stride_xb
    ws_strip = WS + (b.to(tl.int64) * NS + s) * H                 # ws[0, b, s, :]
    sq_off = B * NS * H                                            # ws[1] - ws[0] (< 2**31, checked)
    acc_ty = WS.dtype.element_ty
    x_offs = tl.arange(0, BLOCK_H)[:, None] * stride_xh + cols[None, :]     # loop-invariant tile offsets
    if PREFETCH:
        x_next = tl.load(x_plane + x_offs, mask=(tl.arange(0, BLOCK_H) < H)[:, None] & col_ok, other=0)
    for c in range(0, tl.cdiv(H, BLOCK_H)):
        y0 = c * BLOCK_H
        rows = y0 + tl.arange(0, BLOCK_H)
        row_ok = rows < H
        if PREFETCH:                                               # the next chunk's load issued before this one's sums
            x = x_next.to(acc_ty)
            x_next = tl.load(x_plane + (y0 + BLOCK_H) * stride_xh + x_offs,
                             mask=(rows + BLOCK_H < H)[:, None] & col_ok, other=0)
        else:
            x = tl.load(x_plane + y0 * stride_xh + x_offs, mask=row_ok[:, None] & col_ok, other=0).to(acc_ty)
        tl.store(ws_strip + rows, tl.sum(x, axis=1), mask=row_ok)
        if SQ:
            tl.store(ws_strip + sq_off + rows, tl.sum(x * x, axis=1), mask=row_ok)


@triton.jit
def _carry_kernel(WS, H, NS, BLOCK_S: tl.constexpr, BLOCK_R: tl.constexpr):
    rb = tl.program_id(0)
    p = tl.program_id(1)                                           # (table, image) plane of ws
    rows = rb * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = (rows < H)[None, :]
    base = WS + p.to(tl.int64) * NS * H
    strips = tl.arange(0, BLOCK_S)
    carry = tl.zeros([BLOCK_R], dtype=WS.dtype.element_ty)
    for s0 in range(0, NS, BLOCK_S):
        ss = s0 + strips
        ok = (ss < NS)[:, None] & row_ok
        ptr = base + ss[:, None] * H + rows[None, :]
        t = tl.load(ptr, mask=ok, other=0)
        tl.store(ptr, tl.cumsum(t, axis=0) + carry[None, :], mask=ok)
        carry += tl.sum(t, axis=0)


@triton.jit
def _kernel(X, OUT, WS, B, H, W, NS, stride_xb, stride_xh, SQ: tl.constexpr, SINGLE_STRIP: tl.constexpr,
            BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr, PREFETCH: tl.constexpr):
    s = tl.program_id(0)
    b = tl.program_id(1)
    cols = s * BLOCK_W + tl.arange(0, BLOCK_W)
    col_ok = (cols < W)[None, :]
    x_plane = X + b.to(tl.int64) * stride_xb
    o_plane = OUT + b.to(tl.int64) * H * W
    o_sq = B * H * W                                               # out[1] - out[0] (< 2**31, checked)
    ws_left = WS + (b.to(tl.int64) * NS + tl.maximum(s - 1, 0)) * H   # ws[0, b, s - 1, :] (read when s > 0)
    ws_sq = B * NS * H
    h_left = H * tl.minimum(s, 1)                                  # 0 for the first strip: nothing on its left
    acc_ty = OUT.dtype.element_ty
    carry = tl.zeros([BLOCK_W], dtype=acc_ty)
    carry2 = tl.zeros([BLOCK_W], dtype=acc_ty)
    x_offs = tl.arange(0, BLOCK_H)[:, None] * stride_xh + cols[None, :]     # loop-invariant tile offsets
    o_offs = tl.arange(0, BLOCK_H)[:, None] * W + cols[None, :]
    if PREFETCH:
        x_next = tl.load(x_plane + x_offs, mask=(tl.arange(0, BLOCK_H) < H)[:, None] & col_ok, other=0)
    for c in range(0, tl.cdiv(H, BLOCK_H)):
        y0 = c * BLOCK_H
        rows = y0 + tl.arange(0, BLOCK_H)
        row_ok = rows < H
        ok = row_ok[:, None] & col_ok
        if PREFETCH:                                               # the next chunk's load issued before this one's scans
            x = x_next.to(acc_ty)
            x_next = tl.load(x_plane + (y0 + BLOCK_H) * stride_xh + x_offs,
                             mask=(rows + BLOCK_H < H)[:, None] & col_ok, other=0)
        else:
            x = tl.load(x_plane + y0 * stride_xh + x_offs, mask=ok, other=0).to(acc_ty)
        o_ptr = o_plane + y0 * W + o_offs
        r = tl.cumsum(x, axis=1)                                   # the row prefix inside the strip
        if not SINGLE_STRIP:
            left = tl.load(ws_left + rows, mask=rows < h_left, other=0)
            r += left[:, None]                                     # + the strips on the left
        tl.store(o_ptr, tl.cumsum(r, axis=0) + carry[None, :], mask=ok)
        carry += tl.sum(r, axis=0)
        if SQ:
            x2 = x * x
            r2 = tl.cumsum(x2, axis=1)
            if not SINGLE_STRIP:
                left2 = tl.load(ws_left + ws_sq + rows, mask=rows < h_left, other=0)
                r2 += left2[:, None]
            tl.store(o_ptr + o_sq, tl.cumsum(r2, axis=0) + carry2[None, :], mask=ok)
            carry2 += tl.sum(r2, axis=0)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-36"
DTYPES = ("uint8", "fp16", "fp32")
TUNABLES = ("BLOCK_H", "BLOCK_W", "PREFETCH", "num_warps", "num_stages")
BASELINE = {"BLOCK_H": 16, "BLOCK_W": 64, "PREFETCH": 1, "num_warps": 4, "num_stages": 1}
# 3 x 3 x 2 x 3 = 54 configs: 8 x 32 to 32 x 128 tiles (2 - 32 elements a thread), 4 / 8 warps, 1 - 3 stages
SWEEP_AXES = {"BLOCK_H": [4, 8, 16, 32], "BLOCK_W": [32, 64, 128], "PREFETCH": [0, 1], "num_warps": [4, 8],
              "num_stages": [1]}
CARRY_S = 32                               # the carry pass's strips a step
CARRY_R = 128                              # and rows a CTA
CARRY_WARPS = 4
MAX_ELEMS = 2**31 - 1

POINTS = [
    # a batch of 64 1080p frames' luma (uint8 -> int32): a video analytics / detection batch (Viola-Jones-style
    # Haar cascades, box filters on decoded frames; cv::cuda::integral per frame). img 133 MB read twice,
    # table 531 MB: 796 MB
    {"B": 64, "H": 1080, "W": 1920, "dtype": "uint8", "squared": False},
    # two 8192 x 8192 fp32 satellite reflectance tiles / scanned document pages (adaptive thresholding, box
    # means over large windows): img 537 MB read twice, table 537 MB: 1.61 GB
    {"B": 2, "H": 8192, "W": 8192, "dtype": "fp32", "squared": False},
    # 2048 fp16 128 x 128 feature maps (16 images x 128 channels) with the squared table: local mean / variance
    # windows (local contrast normalization, a guided filter's statistics). img 67 MB read twice, 2 tables
    # 268 MB: 403 MB
    {"B": 2048, "H": 128, "W": 128, "dtype": "fp16", "squared": True},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    bh = cfg["BLOCK_H"]
    if not _is_int(bh) or bh < 1 or bh > 128 or bh & (bh - 1):
        raise ValueError(f"BLOCK_H={bh!r} must be a power of two from 1 to 128")
    bw = cfg["BLOCK_W"]
    if not _is_int(bw) or bw < 16 or bw > 512 or bw & (bw - 1):
        raise ValueError(f"BLOCK_W={bw!r} must be a power of two from 16 to 512")
    if bh * bw > 8192:
        raise ValueError(f"BLOCK_H x BLOCK_W = {bh * bw} elements a tile; at most 8192")
    pf = cfg["PREFETCH"]
    if not _is_int(pf) or pf not in (0, 1):
        raise ValueError(f"PREFETCH={pf!r} must be 0 or 1")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


_MAXVAL = {"uint8": 255, "fp16": None, "fp32": None}


def _check_shape(B, H, W, dtype: str, squared: bool) -> None:
    for name, v in (("B", B), ("H", H), ("W", W)):
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    T = 2 if squared else 1
    if T * B * H * W > MAX_ELEMS:
        raise ValueError(f"B x H x W = {B} x {H} x {W} ({T} table(s)): at most {MAX_ELEMS} table elements")
    if T * B > 65535:
        raise ValueError(f"B={B}: at most {65535 // T} images (grid axis 1)")
    if dtype == "uint8":
        if 255 * H * W > MAX_ELEMS:
            raise ValueError(f"H x W = {H} x {W}: a uint8 table of 255 H W overflows int32")
        if squared and 255 * 255 * H * W > MAX_ELEMS:
            raise ValueError(f"H x W = {H} x {W}: a uint8 squared table of 255^2 H W overflows int32")


def _check_point(point) -> dict:
    """The point's fields, checked (default dtype uint8, squared False)."""
    P = {"dtype": "uint8", "squared": False, **point}
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    if not isinstance(P["squared"], bool):
        raise ValueError(f"squared={P['squared']!r} must be a bool")
    _check_shape(P["B"], P["H"], P["W"], P["dtype"], P["squared"])
    return P


def _torch_dtype(name: str):
    import torch
    return {"uint8": torch.uint8, "fp16": torch.float16, "fp32": torch.float32}[name]


def _acc_dtype(name: str):
    import torch
    return torch.int32 if name == "uint8" else torch.float32


_ESIZE = {"uint8": 1, "fp16": 2, "fp32": 4}


# ---------------------------------------------------------------- the kernels' launches
def _strips(W: int, cfg) -> int:
    return triton.cdiv(W, cfg["BLOCK_W"])


def _grid(B: int, W: int, cfg) -> tuple:
    return (_strips(W, cfg), B)


def _carry_grid(T: int, B: int, H: int) -> tuple:
    return (triton.cdiv(H, CARRY_R), T * B)


def _kernel_args(img, out, ws, squared: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, H, W = img.shape
    NS = _strips(W, cfg)
    return dict(X=img, OUT=out, WS=ws, B=B, H=H, W=W, NS=NS, stride_xb=img.stride(0), stride_xh=img.stride(1),
                SQ=bool(squared), SINGLE_STRIP=NS == 1, BLOCK_H=cfg["BLOCK_H"], BLOCK_W=cfg["BLOCK_W"],
                PREFETCH=cfg["PREFETCH"])


def _strip_sum_args(img, ws, squared: bool, cfg) -> dict:
    B, H, W = img.shape
    return dict(X=img, WS=ws, B=B, H=H, W=W, NS=_strips(W, cfg), stride_xb=img.stride(0),
                stride_xh=img.stride(1), SQ=bool(squared), BLOCK_H=cfg["BLOCK_H"], BLOCK_W=cfg["BLOCK_W"],
                PREFETCH=cfg["PREFETCH"])


def _carry_args(ws, H: int, NS: int) -> dict:
    return dict(WS=ws, H=H, NS=NS, BLOCK_S=CARRY_S, BLOCK_R=CARRY_R)


def _workspace_shape(T: int, B: int, H: int, W: int, cfg) -> tuple:
    """ws [T, B, NS, H]; a single element when there is one strip (not read)."""
    NS = _strips(W, cfg)
    return (T, B, NS, H) if NS > 1 else (1,)


def summed_area_table(img, squared: bool = False, *, BLOCK_H: int = 16, BLOCK_W: int = 64, PREFETCH: int = 1,
                      num_warps: int = 4, num_stages: int = 1):
    """(out, sq): the summed-area table of img [B, H, W] (uint8 / fp16 / fp32, unit stride along W) and, with
    `squared`, the table of its squares (else None): [B, H, W] int32 (uint8) or fp32, views of one fresh
    contiguous [T, B, H, W] buffer. The tunables and the method: the module doc."""
    cfg = {"BLOCK_H": BLOCK_H, "BLOCK_W": BLOCK_W, "PREFETCH": PREFETCH, "num_warps": num_warps,
           "num_stages": num_stages}
    buf = _tables(img, squared, cfg)
    return buf[0], (buf[1] if squared else None)


def _tables(img, squared: bool, cfg):
    """The [T, B, H, W] buffer of the table(s): the checks, the allocations and the three launches."""
    import torch
    _check_cfg(cfg)
    num_warps, num_stages = cfg["num_warps"], cfg["num_stages"]
    if not isinstance(squared, bool):
        raise ValueError(f"squared={squared!r} must be a bool")
    names = {torch.uint8: "uint8", torch.float16: "fp16", torch.float32: "fp32"}
    if not isinstance(img, torch.Tensor) or img.dim() != 3 or img.dtype not in names:
        raise ValueError(f"img must be a 3-d uint8 / float16 / float32 tensor [B, H, W]; got "
                         f"{tuple(getattr(img, 'shape', ()))} {getattr(img, 'dtype', type(img).__name__)}")
    B, H, W = img.shape
    if B < 1 or H < 1 or W < 1:
        raise ValueError(f"img of shape {tuple(img.shape)} is empty")
    _check_shape(B, H, W, names[img.dtype], squared)
    sb, sh, sw = img.stride()
    if W > 1 and sw != 1:
        raise ValueError(f"img must have a unit stride along W; got strides {img.stride()}")
    if sb < 0 or sh < 0 or (H - 1) * sh + W > MAX_ELEMS:
        raise ValueError(f"img's strides {img.stride()} must be non-negative and a plane's span within "
                         f"{MAX_ELEMS} elements")
    T = 2 if squared else 1
    acc = _acc_dtype(names[img.dtype])
    out = torch.empty((T, B, H, W), dtype=acc, device=img.device)
    ws = torch.empty(_workspace_shape(T, B, H, W, cfg), dtype=acc, device=img.device)
    g = _grid(B, W, cfg)
    if g[0] > 1:
        _strip_sum_kernel[g](**_strip_sum_args(img, ws, squared, cfg), num_warps=num_warps, num_stages=num_stages)
        _carry_kernel[_carry_grid(T, B, H)](**_carry_args(ws, H, g[0]), num_warps=CARRY_WARPS, num_stages=1)
    _kernel[g](**_kernel_args(img, out, ws, squared, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """img [B, H, W] in the point's dtype, per image a smooth random pattern (a product of a sine along x and a
    cosine along y, random periods 16 - 512 pixels and phases) around 0.5 plus 0.08 Gaussian noise, clamped to
    [0, 1]: uint8 scaled by 255 and rounded (frames); fp32 as is (reflectance); fp16 shifted and scaled to a
    feature map's N(0, 1)-like range (x - 0.5) * 4. Drawn on the device from a seeded generator."""
    import torch
    P = _check_point(point)
    B, H, W = P["B"], P["H"], P["W"]
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(int(seed))
    per = lambda lo, hi: lo + (hi - lo) * torch.rand((B, 1, 1), generator=g, device=dev)
    fx = 2 * math.pi / per(16.0, 512.0)
    fy = 2 * math.pi / per(16.0, 512.0)
    ph = 2 * math.pi * torch.rand((B, 1, 1), generator=g, device=dev)
    xs = torch.arange(W, device=dev, dtype=torch.float32)[None, None, :]
    ys = torch.arange(H, device=dev, dtype=torch.float32)[None, :, None]
    img = 0.08 * torch.randn((B, H, W), generator=g, device=dev)
    img += 0.5 + 0.35 * torch.sin(fx * xs + ph) * torch.cos(fy * ys)
    img.clamp_(0.0, 1.0)
    if P["dtype"] == "uint8":
        x = (img * 255.0).round_().to(torch.uint8)
    elif P["dtype"] == "fp16":
        x = ((img - 0.5) * 4.0).to(torch.float16)
    else:
        x = img
    return {"img": x, "squared": P["squared"]}


def launch(inputs, cfg):
    """The table [B, H, W] (int32 / fp32), or with the squared table both, stacked [2, B, H, W] (the one buffer
    the launcher fills)."""
    buf = _tables(inputs["img"], inputs["squared"], {k: cfg[k] for k in TUNABLES})
    return buf if inputs["squared"] else buf[0]


def reference(inputs):
    """The table in float64 (img widened, cumsum along W then along H), stacked with the squared table's when
    `squared` ([2, B, H, W])."""
    import torch
    x = inputs["img"].double()
    out = x.cumsum(2).cumsum(1)
    if not inputs["squared"]:
        return out
    return torch.stack([out, (x * x).cumsum(2).cumsum(1)])


def torch_baseline(inputs):
    """What a PyTorch user writes (kornia's integral_image, torchvision-style box filters): two torch.cumsum
    passes in the accumulation dtype, x.to(acc).cumsum(-1).cumsum(-2) -- each a full read and write of the
    table -- and the same for x^2 with the squared table."""
    import torch
    x = inputs["img"]
    acc = torch.int32 if x.dtype == torch.uint8 else torch.float32
    xa = x.to(acc)
    out = xa.cumsum(-1, dtype=acc).cumsum(-2, dtype=acc)
    if not inputs["squared"]:
        return out
    x2 = xa * xa
    return torch.stack([out, x2.cumsum(-1, dtype=acc).cumsum(-2, dtype=acc)])


def bytes_moved(point) -> int:
    """img read twice (`_strip_sum_kernel` and `_kernel`) and the T tables written once (4 bytes an element).
    The workspace (4 T / BLOCK_W bytes a pixel, L2-resident between the passes) is not counted; a config with a
    single strip (W <= BLOCK_W) skips the first read."""
    P = _check_point(point)
    n = P["B"] * P["H"] * P["W"]
    T = 2 if P["squared"] else 1
    return 2 * _ESIZE[P["dtype"]] * n + 4 * T * n


def flops(point) -> int:
    """Adds: 3 an element a table (the strip's row sum in pass 1, the row and column scans in pass 3); with
    the squared table the squares too (2 an element: both passes square)."""
    P = _check_point(point)
    n = P["B"] * P["H"] * P["W"]
    return (6 * n + 2 * n) if P["squared"] else 3 * n


def grid(cfg, point) -> tuple:
    """`_kernel`'s launch grid (NS, B): the strips of an image fastest, then the image."""
    _check_cfg(cfg)
    P = _check_point(point)
    return _grid(P["B"], P["W"], cfg)


def loop_iterations(cfg, point) -> int:
    """cdiv(H, BLOCK_H) chunks a CTA, every CTA the same."""
    grid(cfg, point)
    return triton.cdiv(point["H"], cfg["BLOCK_H"])


def secondary_kernels(cfg, point) -> list:
    """The kernels `launch` runs before `_kernel`, in order, when there is more than one strip (none with a
    single strip): `_strip_sum_kernel` -- `_kernel`'s grid and chunk loop, each step a [BLOCK_H, BLOCK_W] tile of
    img from DRAM (num_stages - 1 tiles ahead); `_carry_kernel` -- (cdiv(H, CARRY_R), T B) CTAs walking the NS
    strips CARRY_S at a time over the workspace the first pass just wrote (dram_bytes 0: in L2)."""
    P = _check_point(point)
    g = grid(cfg, P)
    if g[0] == 1:
        return []
    T = 2 if P["squared"] else 1
    tile = cfg["BLOCK_H"] * cfg["BLOCK_W"] * _ESIZE[P["dtype"]]
    cg = _carry_grid(T, P["B"], P["H"])
    return [{"name": "_strip_sum_kernel", "grid": g[0] * g[1], "iterations": loop_iterations(cfg, P),
             "tile_bytes": tile, "dram_bytes": tile, "ahead": cfg["PREFETCH"]},
            {"name": "_carry_kernel", "grid": cg[0] * cg[1], "iterations": triton.cdiv(g[0], CARRY_S),
             "tile_bytes": 4 * CARRY_S * CARRY_R, "dram_bytes": 0}]


def _meta_tensors(cfg, point) -> dict:
    import torch
    P = _check_point(point)
    B, H, W = P["B"], P["H"], P["W"]
    T = 2 if P["squared"] else 1
    acc = _acc_dtype(P["dtype"])
    return {"img": torch.empty((B, H, W), dtype=_torch_dtype(P["dtype"]), device="meta"),
            "out": torch.empty((T, B, H, W), dtype=acc, device="meta"),
            "ws": torch.empty(_workspace_shape(T, B, H, W, cfg), dtype=acc, device="meta"),
            "squared": P["squared"]}


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device: img [B, H, W] contiguous in
    the point's dtype (as make_inputs draws it), out [T, B, H, W] and the workspace [T, B, NS, H] (one element
    with a single strip) in the accumulation dtype; nothing but the shapes decides the work."""
    grid(cfg, point)
    m = _meta_tensors(cfg, point)
    return _kernel_args(m["img"], m["out"], m["ws"], m["squared"], cfg)


def strip_sum_example_args(cfg, point) -> dict:
    """The launch arguments of `_strip_sum_kernel` (meta tensors, as example_args)."""
    grid(cfg, point)
    m = _meta_tensors(cfg, point)
    return _strip_sum_args(m["img"], m["ws"], m["squared"], cfg)


def carry_example_args(cfg, point) -> dict:
    """The launch arguments of `_carry_kernel` (meta workspace, as example_args)."""
    g = grid(cfg, point)
    m = _meta_tensors(cfg, point)
    return _carry_args(m["ws"], point["H"], g[0])
