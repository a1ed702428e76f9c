"""RoIAlign forward (Mask R-CNN's box / mask pooler: Detectron2's ROIAlignV2 and MMDetection's RoIAlign
with aligned=True, torchvision's MultiScaleRoIAlign with aligned=False) on a channels-last (NHWC) feature
map, a bare @triton.jit kernel + its launcher.

    out[r, ph, pw, c] = 1 / count  sum_{iy < gh, ix < gw}  bilinear(feat[n_r, :, :, c], y(ph, iy), x(pw, ix))
    y(ph, iy) = y1 s - o + ph bin_h + (iy + 0.5) bin_h / gh,   bin_h = roi_h / PH,   roi_h = (y2 s - o) - (y1 s - o)
    (x likewise from x1, x2, PW, gw),  o = 0.5 when aligned (else 0, and roi_h, roi_w clamped to >= 1),
    gh = sampling_ratio or, when it is 0 (adaptive), ceil(roi_h / PH)  (gw: ceil(roi_w / PW)),
    count = max(gh gw, 1);  bilinear: 0 for a sample with y < -1, y > H, x < -1 or x > W; else y, x
    clamped at 0, y0 = floor(y), y1 = y0 + 1 (both H - 1 and ly = 0 when y0 >= H - 1), ly = y - y0,
    hy = 1 - ly, and the four taps weighted hy hx, hy lx, ly hx, ly lx  --  torchvision.ops.roi_align's
    arithmetic (fp32 coordinates in the same order of operations; Triton's fp32 divide is the 2-ulp
    div.full and the bin's mean a multiply by 1 / count, so the results agree to a few ulps).

feat: [N, H, W, C] fp16 / bf16 / fp32 with unit channel stride (contiguous NHWC, a channels_last NCHW
tensor's permute(0, 2, 3, 1), a channel slice of a wider map: read in place; any other is made contiguous);
boxes: [R, 5] (batch index, x1, y1, x2, y2) in image coordinates, read as fp32 (the batch index truncated
to an int, as torchvision's kernel does; it must lie in [0, N)); spatial_scale: the level's 1 / stride.
out: [R, PH, PW, C] in feat's dtype, contiguous -- channels-last like the input, so the box head's flatten
/ the mask head's channels_last conv reads it as is (torchvision's [R, C, PH, PW] is out.permute(0, 3, 1, 2)).
The sums are fp32, rounded once. Sampling: fixed (sampling_ratio > 0: a constexpr, the sample loops have
constant bounds) or adaptive (0, Detectron2's and MMDetection's default: gh, gw are read from the box, so
the sample loops' trip count is data-dependent -- 1 to 16 samples a bin for the boxes FPN assigns a level).

One program owns one RoI x TILE_B consecutive output bins (flattened over (ph, pw)) x TILE_C channels; in
the last bin block the lanes past PH PW redo the last real bin (the same addresses: no extra sectors, no
mask in the loop) and are masked at the store only. The program ids run channel block fastest, then bin block, then
RoI (RoI-major: the programs of one RoI are adjacent, so its window of the map is read from L2 by all of
them). The program loads its box (5 scalars), decodes the bins' (ph, pw) once and runs the sample loops:
for each iy the y-part of its bins (the rows' in-image offsets, hy / ly, the y-validity; a [TILE_B]
vector), for each ix the x-part, then four [TILE_B, TILE_C] gathers -- each bin's tap is a TILE_C-wide
contiguous run of one pixel's channels (16-B vector loads: C a multiple of 8 / 4 elements makes every
pixel's row 16-B aligned) -- masked by the sample's validity (the taps' indices are clamped into the map,
so a masked lane never has a wild address), weighted and added into a [TILE_B, TILE_C] fp32 accumulator;
finally divided by count and stored (contiguous TILE_C runs again). Offsets in one image are int32 (H W C
< 2^31), the image base and the output row int64. A degenerate box (aligned: x2 < x1 gives gw <= 0) runs
no samples and writes zeros, as torchvision.

Tunables: BLOCK_B (bins a program, 1-8: the gathers in flight per sample, how often the box and its
coordinate arithmetic are redone, the padding of 49 / 196 bins to the block -- at 8, 7 of 56 lanes idle on
the 7x7 box head), BLOCK_C (channels a program, 32-256: the run length of each tap, 64-512 B of a
256-channel fp16 / bf16 row, 128 B-1 KB of an fp32 one; the kernel's TILE_C = min(BLOCK_C, next_pow2(C))
and TILE_B = min(BLOCK_B, next_pow2(PH PW))), num_warps (4-16: tiles of 32-2048 elements give a thread
1/16 to 16 outputs -- the small tiles on many warps leave most threads replicated, the bad corner; 2
warps would put 32 outputs on a thread, where ptxas spills on sm_120), num_stages (gathers and no dot:
nothing for the compiler to pipeline, held at 1).
bytes_moved counts the distinct bytes: every map pixel some sample's taps touch, read once (all C
channels), the boxes, and out written once; the gathers' re-reads of a pixel (neighbouring samples, bins,
overlapping boxes, the channel blocks' programs) are L1 / L2 hits, not counted.
Problem parameters (a workload point): N, H, W, C (the level's feature map), R (RoIs), PH, PW (pooled size),
stride (the level's; spatial_scale = 1 / stride), sampling_ratio (0: adaptive), aligned (bool), dtype,
box_min / box_max (the boxes' sqrt(area) range in image pixels: the band FPN's level rule sends to this
level, so adaptive sampling gives 1-4 samples a bin and axis).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(FEAT, BOXES, OUT, H, W, C, spatial_scale, n_bin_blocks, n_c_blocks,
            stride_fn, stride_fh, stride_fw,
            PH: tl.constexpr, PW: tl.constexpr, SAMPLING: tl.constexpr, ALIGNED: tl.constexpr,
            EVEN_C: tl.constexpr, TILE_B: tl.constexpr, TILE_C: tl.constexpr):
    pid = tl.program_id(0)
    cb = pid % n_c_blocks                                  # channel block fastest, then bins, then RoI
    t = pid // n_c_blocks
    bb = t % n_bin_blocks
    r = t // n_bin_blocks

    # the box, in the level's coordinates (torchvision's order of fp32 operations)
    box = BOXES + r.to(tl.int64) * 5
    n = tl.load(box).to(tl.int32)                          # batch index, truncated
    if ALIGNED:
        x_start = tl.load(box + 1) * spatial_scale - 0.5
        y_start = tl.load(box + 2) * spatial_scale - 0.5
        roi_w = (tl.load(box + 3) * spatial_scale - 0.5) - x_start
        roi_h = (tl.load(box + 4) * spatial_scale - 0.5) - y_start
    else:
        x_start = tl.load(box + 1) * spatial_scale
        y_start = tl.load(box + 2) * spatial_scale
        roi_w = tl.maximum(tl.load(box + 3) * spatial_scale - x_start, 1.0)
        roi_h = tl.maximum(tl.load(box + 4) * spatial_scale - y_start, 1.0)
    bin_w = roi_w / PW
    bin_h = roi_h / PH
    if SAMPLING > 0:
        gh = SAMPLING                                      # constant trip counts
        gw = SAMPLING
        gh_f = SAMPLING * 1.0
        gw_f = SAMPLING * 1.0
        count = SAMPLING * SAMPLING * 1.0
    else:
        gh = tl.ceil(bin_h).to(tl.int32)                   # adaptive: data-dependent trip counts
        gw = tl.ceil(bin_w).to(tl.int32)
        gh_f = gh.to(tl.float32)
        gw_f = gw.to(tl.float32)
        count = tl.maximum(gh * gw, 1).to(tl.float32)
    Hf = H.to(tl.float32)
    Wf = W.to(tl.float32)

    # the program's bins and channels
    b = bb * TILE_B + tl.arange(0, TILE_B)
    if (PH * PW) % TILE_B == 0:
        bq = b                                             # every bin of every block is real
    else:
        bq = tl.minimum(b, PH * PW - 1)                    # padding lanes redo the last bin: its addresses
    ph = bq // PW
    pw = bq - ph * PW
    y_bin = y_start + ph.to(tl.float32) * bin_h            # [TILE_B]
    x_bin = x_start + pw.to(tl.float32) * bin_w
    c = cb * TILE_C + tl.arange(0, TILE_C)
    fb = FEAT + n.to(tl.int64) * stride_fn                 # the image's base (scalar)
    cc = c[None, :]
    if EVEN_C:
        c_ok = tl.full([1, TILE_C], 1, tl.int1)
    else:
        c_ok = c[None, :] < C

    acc = tl.zeros([TILE_B, TILE_C], dtype=tl.float32)
    for iy in range(0, gh):
        y = y_bin + (iy + 0.5) * bin_h / gh_f
        y_ok = (y >= -1.0) & (y <= Hf)
        y = tl.minimum(tl.maximum(y, 0.0), Hf)
        yi = y.to(tl.int32)                                # y >= 0: truncation is floor
        top = yi >= H - 1
        y_lo = tl.where(top, H - 1, yi)
        y_hi = tl.where(top, H - 1, yi + 1)
        ly = tl.where(top, 0.0, y - yi.to(tl.float32))
        hy = 1.0 - ly
        r_lo = y_lo * stride_fh
        r_hi = y_hi * stride_fh
        for ix in range(0, gw):
            x = x_bin + (ix + 0.5) * bin_w / gw_f
            ok = y_ok & (x >= -1.0) & (x <= Wf)
            x = tl.minimum(tl.maximum(x, 0.0), Wf)
            xi = x.to(tl.int32)
            right = xi >= W - 1
            x_lo = tl.where(right, W - 1, xi)
            x_hi = tl.where(right, W - 1, xi + 1)
            lx = tl.where(right, 0.0, x - xi.to(tl.float32))
            hx = 1.0 - lx
            k_lo = x_lo * stride_fw
            k_hi = x_hi * stride_fw
            m = ok[:, None] & c_ok
            v1 = tl.load(fb + ((r_lo + k_lo)[:, None] + cc), mask=m, other=0.0).to(tl.float32)
            v2 = tl.load(fb + ((r_lo + k_hi)[:, None] + cc), mask=m, other=0.0).to(tl.float32)
            v3 = tl.load(fb + ((r_hi + k_lo)[:, None] + cc), mask=m, other=0.0).to(tl.float32)
            v4 = tl.load(fb + ((r_hi + k_hi)[:, None] + cc), mask=m, other=0.0).to(tl.float32)
            acc += ((hy * hx)[:, None] * v1 + (hy * lx)[:, None] * v2
                    + (ly * hx)[:, None] * v3 + (ly * lx)[:, None] * v4)
    res = (acc * (1.0 / count)).to(OUT.dtype.element_ty)
    ob = OUT + r.to(tl.int64) * (PH * PW) * C + b[:, None] * C + c[None, :]
    if (PH * PW) % TILE_B == 0:
        tl.store(ob, res, mask=c_ok)
    else:
        tl.store(ob, res, mask=(b < PH * PW)[:, None] & c_ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-24"
DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_B", "BLOCK_C", "num_warps", "num_stages")
BASELINE = {"BLOCK_B": 8, "BLOCK_C": 128, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 4 x 3 = 48 configs (1/16 to 16 output elements a thread; no dot: num_stages 1)
SWEEP_AXES = {"BLOCK_B": [1, 2, 4, 8], "BLOCK_C": [32, 64, 128, 256], "num_warps": [4, 8, 16], "num_stages": [1]}

# One FPN level's RoIAlign launch of real Mask R-CNN heads (C = 256, the FPN width), each 0.65-0.78 GB of
# distinct traffic (the map's pixels the samples touch, read once, + the pooled output; the seed-0 boxes);
# the gathers re-read each touched pixel several times (neighbouring samples and bins, overlapping boxes,
# the channel blocks), from L1 / L2. They differ in pooled size (7x7 / 14x14), sampling (adaptive, 1-16
# samples a bin, mean 6 / fixed 2x2 / adaptive 1-4, mean 3.5), aligned or not, dtype, reads against writes
# (the box head reads 2.2x what it writes, ViTDet's mask head 0.2x) and RoI density on the map.
POINTS = [
    # Detectron2 Mask R-CNN R50-FPN box head (ROIAlignV2 7x7, sampling 0, aligned) under AMP, 16 images of
    # 1344x800 (COCO's 1333x800 padded to 32), 512 sampled RoIs an image (ROI_HEADS.BATCH_SIZE_PER_IMAGE):
    # the P2 (stride 4) launch with the small boxes its level rule maps there (sqrt(area) 16-112 px: 4-28
    # map pixels, 1-4 samples a bin and axis). feat [16, 200, 336, 256] fp16 550 MB (82 % of its pixels
    # touched: 449 MB read), out [8192, 7, 7, 256] 206 MB
    {"N": 16, "H": 200, "W": 336, "C": 256, "R": 8192, "PH": 7, "PW": 7, "stride": 4, "sampling_ratio": 0,
     "aligned": True, "dtype": "fp16", "box_min": 16, "box_max": 112},
    # torchvision maskrcnn_resnet50_fpn(_v2) mask head (MultiScaleRoIAlign 14x14, sampling_ratio 2,
    # aligned=False), fp32 training at 16 images: 128 positive RoIs an image on P3 (stride 8, sqrt(area)
    # 112-224 px: 14-28 map pixels). feat [16, 100, 168, 256] fp32 275 MB (96 % touched: 265 MB read),
    # out [2048, 14, 14, 256] 411 MB
    {"N": 16, "H": 100, "W": 168, "C": 256, "R": 2048, "PH": 14, "PW": 14, "stride": 8, "sampling_ratio": 2,
     "aligned": False, "dtype": "fp32", "box_min": 112, "box_max": 224},
    # ViTDet-L Mask R-CNN (simple feature pyramid, 1024x1024 LSJ input) mask head (ROIAlignV2 14x14,
    # sampling 0, aligned) at bf16 inference, batch 64 x 100 detections: the P4 (stride 16, 64x64 map)
    # launch with the large boxes (sqrt(area) 224-448 px: 14-28 map pixels, 1-2 samples a bin and axis).
    # feat [64, 64, 64, 256] bf16 134 MB (all but 51 pixels touched; 2 MB an image, so one image's 100
    # boxes re-read their map from L2), out [6400, 14, 14, 256] 642 MB
    {"N": 64, "H": 64, "W": 64, "C": 256, "R": 6400, "PH": 14, "PW": 14, "stride": 16, "sampling_ratio": 0,
     "aligned": True, "dtype": "bf16", "box_min": 224, "box_max": 448},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _check_point(point) -> None:
    for k in ("N", "H", "W", "C", "R", "PH", "PW", "stride"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    sr = point.get("sampling_ratio", 0)
    if not isinstance(sr, int) or sr < 0:
        raise ValueError(f"sampling_ratio={sr!r} must be an int >= 0 (0: adaptive)")
    lo, hi = point.get("box_min", 16), point.get("box_max", 112)
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and 0 < lo <= hi):
        raise ValueError(f"box_min={lo!r}, box_max={hi!r} must satisfy 0 < box_min <= box_max")
    _elem_bytes(point.get("dtype", "fp32"))


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_B", "BLOCK_C", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")


def _tiles(PH: int, PW: int, C: int, cfg) -> tuple[int, int]:
    """(TILE_B, TILE_C): BLOCK_B and BLOCK_C clamped to next_pow2(PH PW) and next_pow2(C)."""
    _check_cfg(cfg)
    return min(cfg["BLOCK_B"], triton.next_power_of_2(PH * PW)), min(cfg["BLOCK_C"], triton.next_power_of_2(C))


def _blocks(PH: int, PW: int, C: int, cfg) -> tuple[int, int]:
    """(bin blocks, channel blocks) of one RoI."""
    tb, tc = _tiles(PH, PW, C, cfg)
    return triton.cdiv(PH * PW, tb), triton.cdiv(C, tc)


def _kernel_args(feat, boxes, out, spatial_scale: float, sampling_ratio: int, aligned: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    N, H, W, C = feat.shape
    _, PH, PW, _ = out.shape
    tb, tc = _tiles(PH, PW, C, cfg)
    nbb, ncb = _blocks(PH, PW, C, cfg)
    return dict(FEAT=feat, BOXES=boxes, OUT=out, H=H, W=W, C=C, spatial_scale=float(spatial_scale),
                n_bin_blocks=nbb, n_c_blocks=ncb, stride_fn=feat.stride(0), stride_fh=feat.stride(1),
                stride_fw=feat.stride(2), PH=PH, PW=PW, SAMPLING=int(sampling_ratio), ALIGNED=int(bool(aligned)),
                EVEN_C=int(C % tc == 0), TILE_B=tb, TILE_C=tc)


def _pooled(output_size) -> tuple[int, int]:
    t = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    if len(t) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in t):
        raise ValueError(f"output_size={output_size!r} must be a positive int or a pair of them")
    return t


def roi_align(feat, boxes, output_size, spatial_scale: float, sampling_ratio: int = 0, aligned: bool = True, *,
              BLOCK_B: int = 8, BLOCK_C: int = 128, num_warps: int = 4, num_stages: int = 1):
    """RoIAlign of feat [N, H, W, C] (fp16 / bf16 / fp32, channels-last) over boxes [R, 5] (batch index,
    x1, y1, x2, y2 in image coordinates; any float dtype, read as fp32): out [R, PH, PW, C] in feat's dtype
    (torchvision.ops.roi_align(feat.permute(0, 3, 1, 2), boxes, output_size, spatial_scale, sampling_ratio,
    aligned).permute(0, 2, 3, 1)). sampling_ratio 0 = adaptive (ceil(roi size / pooled size))."""
    import torch
    floats = (torch.float16, torch.bfloat16, torch.float32)
    if feat.dim() != 4:
        raise ValueError(f"expected feat [N, H, W, C]; got {tuple(feat.shape)}")
    if feat.dtype not in floats:
        raise ValueError(f"feat must be fp16 / bf16 / fp32; got {feat.dtype}")
    if boxes.dim() != 2 or boxes.shape[1] != 5 or not boxes.is_floating_point():
        raise ValueError(f"boxes must be a float tensor [R, 5] (batch index, x1, y1, x2, y2); got "
                         f"{boxes.dtype} {tuple(boxes.shape)}")
    if boxes.device != feat.device:
        raise ValueError(f"boxes are on {boxes.device}, feat on {feat.device}")
    PH, PW = _pooled(output_size)
    if not isinstance(spatial_scale, (int, float)) or isinstance(spatial_scale, bool) or not spatial_scale > 0:
        raise ValueError(f"spatial_scale={spatial_scale!r} must be a positive number")
    if not isinstance(sampling_ratio, int) or isinstance(sampling_ratio, bool) or sampling_ratio < 0:
        raise ValueError(f"sampling_ratio={sampling_ratio!r} must be an int >= 0 (0: adaptive)")
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ValueError(f"num_stages={num_stages!r} must be a positive int")
    cfg = {"BLOCK_B": BLOCK_B, "BLOCK_C": BLOCK_C, "num_warps": num_warps}
    _check_cfg(cfg)
    N, H, W, C = feat.shape
    R = boxes.shape[0]
    out = torch.empty((R, PH, PW, C), dtype=feat.dtype, device=feat.device)
    if out.numel() == 0:
        return out
    if N == 0 or H == 0 or W == 0:
        raise ValueError(f"feat {tuple(feat.shape)} is empty but there are {R} boxes")
    if feat.stride(3) != 1 or min(feat.stride()) < 0:
        feat = feat.contiguous()
    span = (H - 1) * feat.stride(1) + (W - 1) * feat.stride(2) + C
    if span >= 2**31:
        raise ValueError(f"one image of feat spans {span} elements, past the kernel's int32 in-image offsets")
    nbb, ncb = _blocks(PH, PW, C, cfg)
    if R * nbb * ncb >= 2**31:
        raise ValueError(f"R={R} boxes need {R * nbb * ncb} programs, past the grid's 2^31 - 1")
    boxes = boxes.to(torch.float32).contiguous()
    _kernel[(R * nbb * ncb,)](**_kernel_args(feat, boxes, out, spatial_scale, sampling_ratio, aligned, cfg),
                              num_warps=num_warps, num_stages=num_stages)
    return out


# ---------------------------------------------------------------- boxes, torch reference
def make_boxes(point, seed: int = 0):
    """[R, 5] fp32 (CPU): R // N boxes an image (the first R % N images one more), batch index sorted (as a
    pooler concatenates its images' boxes); centres uniform over the image (the map's extent x stride),
    sqrt(area) log-uniform in [box_min, box_max), aspect ratio log-uniform in [1/2, 2], clipped to the image."""
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    N, R, s = point["N"], point["R"], point["stride"]
    img_h, img_w = float(point["H"] * s), float(point["W"] * s)
    per = torch.full((N,), R // N, dtype=torch.int64)
    per[: R % N] += 1
    bidx = torch.repeat_interleave(torch.arange(N, dtype=torch.float32), per)
    u = torch.rand((R, 4), generator=gen, dtype=torch.float64)
    lo, hi = float(point.get("box_min", 16)), float(point.get("box_max", 112))
    size = torch.exp(torch.log(torch.tensor(lo, dtype=torch.float64)) + u[:, 2] * (torch.log(torch.tensor(hi / lo))))
    ar = torch.exp((u[:, 3] * 2.0 - 1.0) * torch.log(torch.tensor(2.0, dtype=torch.float64)))
    bw, bh = size * ar.sqrt(), size / ar.sqrt()
    cx, cy = u[:, 0] * img_w, u[:, 1] * img_h
    x1 = (cx - bw / 2).clamp(0.0, img_w)
    x2 = (cx + bw / 2).clamp(0.0, img_w)
    y1 = (cy - bh / 2).clamp(0.0, img_h)
    y2 = (cy + bh / 2).clamp(0.0, img_h)
    return torch.stack([bidx.double(), x1, y1, x2, y2], dim=1).to(torch.float32)


def _geometry(boxes, PH: int, PW: int, spatial_scale: float, sampling_ratio: int, aligned: bool):
    """Per box (fp32, torchvision's order of operations): batch index (int64), y_start, x_start, bin_h,
    bin_w, gh, gw (int64; the sampling grid)."""
    import torch
    b = boxes.to(torch.float32)
    s = torch.tensor(spatial_scale, dtype=torch.float32, device=b.device)
    off = 0.5 if aligned else 0.0
    x_start, y_start = b[:, 1] * s - off, b[:, 2] * s - off
    roi_w, roi_h = (b[:, 3] * s - off) - x_start, (b[:, 4] * s - off) - y_start
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    bin_h, bin_w = roi_h / PH, roi_w / PW
    if sampling_ratio > 0:
        gh = torch.full_like(bin_h, sampling_ratio, dtype=torch.int64)
        gw = gh.clone()
    else:
        gh, gw = torch.ceil(bin_h).to(torch.int64), torch.ceil(bin_w).to(torch.int64)
    return b[:, 0].to(torch.int64), y_start, x_start, bin_h, bin_w, gh, gw


def _axis(start, bin_sz, g: int, P: int, size: int):
    """Sample coordinates of one axis for boxes of grid g: ([r, P, g] low index, high index, low weight,
    high weight, valid), torchvision's bilinear_interpolate on that axis."""
    import torch
    dev = start.device
    p = torch.arange(P, dtype=torch.float32, device=dev)
    i = torch.arange(g, dtype=torch.float32, device=dev) + 0.5
    v = (start[:, None] + p[None, :] * bin_sz[:, None])[:, :, None] + i[None, None, :] * bin_sz[:, None, None] / g
    ok = (v >= -1.0) & (v <= float(size))
    v = v.clamp(min=0.0, max=float(size))
    vi = v.to(torch.int64)
    top = vi >= size - 1
    lo = torch.where(top, size - 1, vi)
    hi = torch.where(top, size - 1, vi + 1)
    lw = torch.where(top, torch.zeros_like(v), v - vi.to(torch.float32))
    return lo, hi, 1.0 - lw, lw, ok


def _groups(gh, gw, chunk_elems: int, per_box: int):
    """(gh, gw, box indices) for each sampling grid with at least one sample, in chunks of boxes whose
    gathered [r, PH, gh, PW, gw, C] tensors hold about chunk_elems elements."""
    import torch
    pairs = torch.stack([gh, gw], dim=1)
    for g in torch.unique(pairs, dim=0).tolist():
        if g[0] < 1 or g[1] < 1:
            continue
        idx = torch.nonzero((gh == g[0]) & (gw == g[1])).flatten()
        step = max(1, chunk_elems // max(1, per_box * g[0] * g[1]))
        for k in range(0, idx.numel(), step):
            yield g[0], g[1], idx[k:k + step]


def roi_align_torch(feat, boxes, output_size, spatial_scale: float, sampling_ratio: int = 0, aligned: bool = True):
    """torchvision.ops.roi_align's forward in plain torch, on the NHWC map: fp32 coordinates and weights,
    fp32 sums (feat upcast), the boxes grouped by their sampling grid and gathered in chunks; out
    [R, PH, PW, C] fp32."""
    import torch
    PH, PW = _pooled(output_size)
    x = feat.float()
    N, H, W, C = x.shape
    R = boxes.shape[0]
    out = torch.zeros((R, PH, PW, C), dtype=torch.float32, device=x.device)
    n, y0, x0, bh, bw, gh, gw = _geometry(boxes, PH, PW, spatial_scale, sampling_ratio, aligned)
    for g_h, g_w, idx in _groups(gh.cpu(), gw.cpu(), 1 << 24, PH * PW * C):
        idx = idx.to(x.device)
        ylo, yhi, hy, ly, vy = _axis(y0[idx], bh[idx], g_h, PH, H)      # [r, PH, gh]
        xlo, xhi, hx, lx, vx = _axis(x0[idx], bw[idx], g_w, PW, W)      # [r, PW, gw]
        img = n[idx][:, None, None, None, None]
        Y = lambda t: t[:, :, :, None, None]                            # noqa: E731  [r, PH, gh, 1, 1]
        X = lambda t: t[:, None, None, :, :]                            # noqa: E731  [r, 1, 1, PW, gw]
        ok = (Y(vy) & X(vx))[..., None]                                 # samples off the map add 0
        w = lambda a, b: (Y(a) * X(b))[..., None]                       # noqa: E731
        val = (w(hy, hx) * x[img, Y(ylo), X(xlo)] + w(hy, lx) * x[img, Y(ylo), X(xhi)]
               + w(ly, hx) * x[img, Y(yhi), X(xlo)] + w(ly, lx) * x[img, Y(yhi), X(xhi)])
        out[idx] = torch.where(ok, val, 0.0).sum(dim=(2, 4)) / float(g_h * g_w)
    return out


def _torchvision():
    try:
        import torchvision.ops
    except ImportError:
        return None
    return torchvision.ops


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """feat: N(0, 1) activations (an FPN level's output is not rectified) in the point's dtype, contiguous
    NHWC, drawn image by image on the CPU from a seeded torch.Generator, then moved; boxes: make_boxes
    (seed); the point's pooled size, spatial scale (1 / stride), sampling ratio and aligned flag."""
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1_000_003)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    N, H, W, C = (point[k] for k in ("N", "H", "W", "C"))
    feat = torch.empty((N, H, W, C), dtype=dt, device=device)
    for i in range(N):
        feat[i] = torch.randn((H, W, C), generator=gen).to(dt).to(device)
    return {"feat": feat, "boxes": make_boxes(point, seed).to(device), "output_size": (point["PH"], point["PW"]),
            "spatial_scale": 1.0 / point["stride"], "sampling_ratio": point.get("sampling_ratio", 0),
            "aligned": bool(point.get("aligned", True))}


def _args(inputs) -> tuple:
    return (inputs["output_size"], inputs["spatial_scale"], inputs["sampling_ratio"], inputs["aligned"])


def launch(inputs, cfg):
    return roi_align(inputs["feat"], inputs["boxes"], *_args(inputs), BLOCK_B=cfg["BLOCK_B"],
                     BLOCK_C=cfg["BLOCK_C"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """fp32 [R, PH, PW, C]: torchvision.ops.roi_align on the upcast map (as an NCHW view) when torchvision
    is importable, else roi_align_torch (the same arithmetic in plain torch)."""
    tv = _torchvision()
    feat = inputs["feat"].float()
    if tv is None:
        return roi_align_torch(feat, inputs["boxes"], *_args(inputs))
    out = tv.roi_align(feat.permute(0, 3, 1, 2), inputs["boxes"].float(), *_args(inputs))
    return out.permute(0, 2, 3, 1).contiguous()


def torch_baseline(inputs):
    """What eager torch runs: torchvision.ops.roi_align on the channels_last map in its own dtype (boxes
    in that dtype, as torchvision requires), made channels-last again; without torchvision,
    roi_align_torch's gathers, cast to the map's dtype."""
    tv = _torchvision()
    feat = inputs["feat"]
    if tv is None:
        return roi_align_torch(feat, inputs["boxes"], *_args(inputs)).to(feat.dtype)
    out = tv.roi_align(feat.permute(0, 3, 1, 2), inputs["boxes"].to(feat.dtype), *_args(inputs))
    return out.permute(0, 2, 3, 1).contiguous()


# ---------------------------------------------------------------- hooks for the model
def _key(point) -> tuple:
    _check_point(point)
    return tuple(sorted((k, point[k]) for k in point))


@functools.lru_cache(maxsize=16)
def _plan(key: tuple) -> tuple[int, int, int]:
    """For the seed-0 boxes of the point: (map pixels the samples' taps touch, sum over boxes of
    max(gh gw, 0) samples a bin, boxes with samples)."""
    import torch
    point = dict(key)
    PH, PW, N, H, W = point["PH"], point["PW"], point["N"], point["H"], point["W"]
    boxes = make_boxes(point, 0)
    n, y0, x0, bh, bw, gh, gw = _geometry(boxes, PH, PW, 1.0 / point["stride"], point.get("sampling_ratio", 0),
                                          point.get("aligned", True))
    rows = torch.zeros((boxes.shape[0], H), dtype=torch.float32)
    cols = torch.zeros((boxes.shape[0], W), dtype=torch.float32)
    for g_h, g_w, idx in _groups(gh, gw, 1 << 22, PH * PW):
        ylo, yhi, _, _, vy = _axis(y0[idx], bh[idx], g_h, PH, H)
        xlo, xhi, _, _, vx = _axis(x0[idx], bw[idx], g_w, PW, W)
        # a sample is valid when its y and x both are: the taps are (valid rows) x (valid columns) of the box
        ry = torch.zeros((idx.numel(), H), dtype=torch.float32)
        ry.scatter_add_(1, torch.cat([ylo, yhi], 1).flatten(1), torch.cat([vy, vy], 1).flatten(1).float())
        cx = torch.zeros((idx.numel(), W), dtype=torch.float32)
        cx.scatter_add_(1, torch.cat([xlo, xhi], 1).flatten(1), torch.cat([vx, vx], 1).flatten(1).float())
        live = ((ry > 0).any(1) & (cx > 0).any(1)).float()[:, None]
        rows[idx] = (ry > 0).float() * live
        cols[idx] = (cx > 0).float() * live
    touched = 0
    for i in range(N):
        sel = n == i
        touched += int(((rows[sel].T @ cols[sel]) > 0).sum())
    samples = int(torch.where((gh > 0) & (gw > 0), gh * gw, 0).sum())
    return touched, samples, int(((gh > 0) & (gw > 0)).sum())


def bytes_moved(point) -> int:
    """The distinct bytes (the seed-0 boxes of make_inputs): each map pixel that some sample's four taps
    touch read once (all C channels; the gathers' re-reads of a pixel by neighbouring samples, bins and
    overlapping boxes are not counted), the boxes read once (fp32), out [R, PH, PW, C] written once."""
    touched, _, _ = _plan(_key(point))
    e = _elem_bytes(point.get("dtype", "fp32"))
    return touched * point["C"] * e + 20 * point["R"] + point["R"] * point["PH"] * point["PW"] * point["C"] * e


def flops(point) -> int:
    """Per output element and sample: four multiplies and four adds of the weighted taps (8); the divide
    by count (1 an element); the per-bin coordinate and weight arithmetic (shared by C channels) not counted."""
    _, samples, _ = _plan(_key(point))
    per_bin = point["PH"] * point["PW"] * point["C"]
    return 8 * samples * per_bin + point["R"] * per_bin


def grid(cfg, point) -> tuple[int]:
    """(programs,): R x bin blocks x channel blocks, channel block fastest."""
    _check_point(point)
    nbb, ncb = _blocks(point["PH"], point["PW"], point["C"], cfg)
    return (point["R"] * nbb * ncb,)


def loop_iterations(cfg, point) -> int:
    """Inner sample-loop trips a program: gh x gw of its box -- sampling_ratio^2 when fixed; when adaptive,
    the seed-0 boxes' mean (rounded: 5.9 -> 6 on the box head's P2 boxes, which range 1-16; 3.5 -> 3 on
    ViTDet's P4, 1-4). The sizes fall at random over 57 thousand to 10 million programs (a box's programs
    adjacent), so the mean carries the launch's total work; there is no cta_iterations, a list that long a
    config for a spread the waves average out."""
    _check_point(point)
    _check_cfg(cfg)
    sr = point.get("sampling_ratio", 0)
    if sr > 0:
        return sr * sr
    _, samples, _ = _plan(_key(point))
    return max(1, round(samples / point["R"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): feat
    contiguous NHWC in the point's dtype, boxes fp32 [R, 5], out [R, PH, PW, C]."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    N, H, W, C, R = (point[k] for k in ("N", "H", "W", "C", "R"))
    feat = torch.empty((N, H, W, C), dtype=dt, device="meta")
    boxes = torch.empty((R, 5), dtype=torch.float32, device="meta")
    out = torch.empty((R, point["PH"], point["PW"], C), dtype=dt, device="meta")
    return _kernel_args(feat, boxes, out, 1.0 / point["stride"], point.get("sampling_ratio", 0),
                        point.get("aligned", True), cfg)
