"""Vision-transformer patchify of NCHW images (the patch embedding's unfold with stride = kernel
size, what Conv2d(kernel=stride=P) reads, done as a data-movement kernel), optionally fused with
the per-channel normalization of CLIP / SigLIP style image preprocessing and a cast, a bare
@triton.jit kernel + its launcher.

    x [B, C, H, W]  ->  out [B, N, K],  N = GH GW,  GH = H // P,  GW = W // P,  K = C P P
    out[b, gh * GW + gw, (c * P + i) * P + j] = f(x[b, c, gh * P + i, gw * P + j])
    f(v) = (v - mean[c]) * inv_std[c]  (fp32, normalize)  or  v  (plain), rounded once to out's dtype

i.e. torch's x.reshape(B, C, GH, P, GW, P).permute(0, 2, 4, 1, 3, 5).reshape(B, N, K) when P
divides H and W; otherwise the last H % P rows and W % P columns are dropped, as the patch
embedding's Conv2d(kernel_size=P, stride=P) drops them (SigLIP's 384 px at P = 14: 27 x 14 = 378).

x: fp16 / bf16 / fp32, read in place with any batch / channel / row strides and unit column
stride (an NCHW tensor, a channel slice, a crop of a wider image); out: a fresh contiguous
[B, N, K] tensor in the output dtype (fp16 / bf16 / fp32, x's by default). mean / inv_std: fp32
[C] (None: no normalization).

The patches of all images are numbered n = b * N + gh * GW + gw (the output's row order) and a
CTA owns TILES consecutive tiles of BLOCK_N consecutive patches; the main loop walks its tiles,
and within each tile the C channels: one step is the [BLOCK_N, P_PAD, P_PAD] tile of one channel
(P_PAD = next_pow2(P), rows i and columns j of each patch, j fastest), loaded from x -- for each
patch P rows of P contiguous elements, and neighbouring patches of one patch row adjacent, so a
tile of patches reads BLOCK_N x P contiguous elements of each of P image rows -- and stored to
out at (n * C + c) * P * P + i * P + j: one P * P contiguous run a patch, the K-long token row
completed over the channel loop. Load and store index the same tile in the same order (j the
unit stride of both), so the value goes from the load's registers to the store's with no layout
conversion, and at P = 16 each thread's columns are one 16-byte vector on both sides (P = 14:
the j < P mask's constancy and the patch offset gw * 14 bound the vectors to 2 elements).
The patch decode (b, gh, gw and the two int64 base offsets) is done once a tile, per patch; the
channel steps only add the channel's offset. Masks: the patch tail (n < B N), off when every
tile is full (EVEN_N: B N a multiple of BLOCK_N x TILES, a constexpr the launcher sets), and
the padding of a P that is not a power of two (i, j < P, static); a CTA's tiles past the end
are wholly masked (only the last CTA has them).

Tunables: BLOCK_N (patches a tile: the tile has BLOCK_N P_PAD^2 elements, 2-64 a thread over
the sweep), TILES (tiles a CTA: fewer, longer-running CTAs), num_warps, num_stages (no dot: the
loop's loads are not pipelined, held at 1).
Problem parameters (a workload point): B, C, H, W, P, x_dtype (x's), dtype (out's, which the
correctness gate's tolerance follows), normalize (bool).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, OUT, MEAN, INV_STD, C, n_patches, patches_per_image, GW,
            stride_xb, stride_xc, stride_xh,
            P: tl.constexpr, P_PAD: tl.constexpr, NORMALIZE: tl.constexpr, EVEN_N: tl.constexpr,
            BLOCK_N: tl.constexpr, TILES: tl.constexpr):
    PP: tl.constexpr = P * P
    pid = tl.program_id(0)
    rn = tl.arange(0, BLOCK_N)
    ri = tl.arange(0, P_PAD)
    rj = tl.arange(0, P_PAD)
    ii = ri[None, :, None]
    jj = rj[None, None, :]
    # in-patch offsets: x rows pitched stride_xh, out rows of P
    x_in = ii * stride_xh + jj                                          # [1, P_PAD, P_PAD]
    o_in = ii * P + jj
    if P != P_PAD:
        m_in = (ii < P) & (jj < P)
    for t in range(TILES):
        n = (pid * TILES + t) * BLOCK_N + rn                            # [BLOCK_N] patches, int32
        b = n // patches_per_image
        r = n - b * patches_per_image
        gh = r // GW
        gw = r - gh * GW
        x_base = b.to(tl.int64) * stride_xb + (gh * P).to(tl.int64) * stride_xh + gw * P
        o_base = n.to(tl.int64) * C * PP
        xp = X + (x_base[:, None, None] + x_in)                         # [BLOCK_N, P_PAD, P_PAD]
        op = OUT + (o_base[:, None, None] + o_in)
        if EVEN_N:
            if P != P_PAD:
                mask = m_in
        else:
            if P != P_PAD:
                mask = (n < n_patches)[:, None, None] & m_in
            else:
                mask = (n < n_patches)[:, None, None]
        for c in range(C):
            if EVEN_N and P == P_PAD:                                   # every tile full: no masks
                v = tl.load(xp + c * stride_xc)
            else:
                v = tl.load(xp + c * stride_xc, mask=mask, other=0.0)
            if NORMALIZE:
                mu = tl.load(MEAN + c)
                s = tl.load(INV_STD + c)
                v = (v.to(tl.float32) - mu) * s
            if EVEN_N and P == P_PAD:
                tl.store(op + c * PP, v.to(OUT.dtype.element_ty))
            else:
                tl.store(op + c * PP, v.to(OUT.dtype.element_ty), mask=mask)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_N", "TILES", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 4, "TILES": 2, "num_warps": 4, "num_stages": 1}

# CLIP's and SigLIP's preprocessing constants (mean, std per RGB channel)
CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)

# Patch embeddings of real vision encoders, each 300-550 MB of traffic (6-11x the H200's 50 MB
# L2, HBM-bound at ~65-165 us); they differ in patch size (14 padded to 16 / 16 exact), in the
# dtype conversion, in fused normalization or not, and in full vs a ragged last tile.
POINTS = [
    # CLIP ViT-L/14-336 (LLaVA-1.5's vision tower): 256 images of 336x336, the processor's fp32
    # pixels normalized with CLIP's mean / std in the kernel and cast to the tower's fp16;
    # 24x24 = 576 patches of K = 588: x 347 MB read, out 173 MB written
    {"B": 256, "C": 3, "H": 336, "W": 336, "P": 14, "x_dtype": "fp32", "dtype": "fp16", "normalize": True},
    # SigLIP so400m/14-384 (LLaVA-OneVision's encoder, anyres: 32 images x 10 crops): bf16
    # pixels already normalized, a plain patchify; 27x27 = 729 patches a crop (an odd patch row;
    # the conv's 27 x 14 = 378 of 384 rows and columns), 233280 patches in all (a ragged last
    # tile at 128 patches a CTA): 274 of x's 283 MB read, out 274 MB written
    {"B": 320, "C": 3, "H": 384, "W": 384, "P": 14, "x_dtype": "bf16", "dtype": "bf16", "normalize": False},
    # a CLIP ViT-B/16 frame encoder of a video-text model (X-CLIP / CLIP4Clip style: 64 clips x
    # 8 frames at 224x224): fp16 frames normalized in the kernel, fp16 out; 14x14 = 196 patches
    # of K = 768: x and out 154 MB each
    {"B": 512, "C": 3, "H": 224, "W": 224, "P": 16, "x_dtype": "fp16", "dtype": "fp16", "normalize": True},
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
    for k in ("B", "C", "H", "W", "P"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    if point["H"] < point["P"] or point["W"] < point["P"]:
        raise ValueError(f"H={point['H']} and W={point['W']} must be at least P={point['P']}")
    _elem_bytes(point["x_dtype"])
    _elem_bytes(point["dtype"])


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_N", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if not isinstance(cfg["TILES"], int) or cfg["TILES"] < 1:
        raise ValueError(f"TILES={cfg['TILES']!r} must be a positive int")


def _sizes(point) -> tuple[int, int, int]:
    """(patches an image, patches in all, K)."""
    _check_point(point)
    P = point["P"]
    npi = (point["H"] // P) * (point["W"] // P)
    return npi, point["B"] * npi, point["C"] * P * P


def _per_cta(cfg) -> int:
    _check_cfg(cfg)
    return cfg["BLOCK_N"] * cfg["TILES"]


def _kernel_args(x, out, mean, inv_std, P: int, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, C, H, W = x.shape
    npi = (H // P) * (W // P)
    n = B * npi
    norm = mean is not None
    return dict(X=x, OUT=out, MEAN=mean if norm else out, INV_STD=inv_std if norm else out, C=C,
                n_patches=n, patches_per_image=npi, GW=W // P,
                stride_xb=x.stride(0), stride_xc=x.stride(1), stride_xh=x.stride(2),
                P=P, P_PAD=triton.next_power_of_2(P), NORMALIZE=int(norm), EVEN_N=int(n % _per_cta(cfg) == 0),
                BLOCK_N=cfg["BLOCK_N"], TILES=cfg["TILES"])


def patchify(x, patch_size: int, mean=None, inv_std=None, out_dtype=None, *, BLOCK_N=4, TILES=2, num_warps=4,
             num_stages=1):
    """x [B, C, H, W] (fp16 / bf16 / fp32, unit column stride) -> tokens [B, (H // P) (W // P), C P P]
    (the rows and columns past the last whole patch dropped, as Conv2d(stride=P) does) in out_dtype (x's by default), normalized per channel as
    (x - mean[c]) * inv_std[c] in fp32 when mean and inv_std (each [C], any float) are given."""
    import torch
    floats = (torch.float16, torch.bfloat16, torch.float32)
    if x.dim() != 4:
        raise ValueError(f"expected x [B, C, H, W]; got {tuple(x.shape)}")
    if x.dtype not in floats:
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    out_dtype = x.dtype if out_dtype is None else out_dtype
    if out_dtype not in floats:
        raise ValueError(f"out_dtype must be fp16 / bf16 / fp32; got {out_dtype}")
    cfg = {"BLOCK_N": BLOCK_N, "TILES": TILES, "num_warps": num_warps}
    _check_cfg(cfg)
    B, C, H, W = x.shape
    P = patch_size
    if not isinstance(P, int) or P < 1 or P > min(H, W):
        raise ValueError(f"patch_size={P!r} must be a positive int, at most H={H} and W={W}")
    if (mean is None) != (inv_std is None):
        raise ValueError("give mean and inv_std together (or neither)")
    if mean is not None:
        mean = torch.as_tensor(mean, dtype=torch.float32, device=x.device).reshape(-1).contiguous()
        inv_std = torch.as_tensor(inv_std, dtype=torch.float32, device=x.device).reshape(-1).contiguous()
        if mean.numel() != C or inv_std.numel() != C:
            raise ValueError(f"mean and inv_std must have C={C} elements; got {mean.numel()} and {inv_std.numel()}")
    npi = (H // P) * (W // P)
    out = torch.empty((B, npi, C * P * P), dtype=out_dtype, device=x.device)
    if out.numel() == 0:
        return out
    if x.stride(3) != 1 or min(x.stride()) < 0:
        x = x.contiguous()
    if B * npi + _per_cta(cfg) >= 2**31:
        raise ValueError(f"{B * npi} patches exceed the kernel's int32 patch numbers")
    span = sum((d - 1) * s for d, s in zip(x.shape[1:], x.stride()[1:])) + 1
    if span >= 2**31:
        raise ValueError(f"one image of x spans {span} elements, past the kernel's int32 in-image offsets")
    _kernel[(triton.cdiv(B * npi, _per_cta(cfg)),)](**_kernel_args(x, out, mean, inv_std, P, cfg),
                                                    num_warps=num_warps, num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: image-like pixels (a smooth field per image and channel plus noise) -- in [0, 1] when
    the point normalizes (raw pixels scaled, as a processor's rescale gives), else already
    normalized (roughly zero mean, unit scale); CLIP's mean / inv_std (fp32 [C], cycled past 3
    channels) when normalizing, else None. Drawn on the CPU from a seeded torch.Generator."""
    import math
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    B, C, H, W = (point[k] for k in ("B", "C", "H", "W"))
    fy = torch.rand((B, C, 1, 1), generator=gen) * 4.0
    fx = torch.rand((B, C, 1, 1), generator=gen) * 4.0
    yy = torch.linspace(0, 1, H).view(1, 1, H, 1)
    xx = torch.linspace(0, 1, W).view(1, 1, 1, W)
    x = torch.cos(fy * yy * math.pi) * torch.cos(fx * xx * math.pi) + 0.3 * torch.randn((B, C, H, W), generator=gen)
    norm = bool(point.get("normalize", False))
    if norm:
        x = (0.5 + 0.4 * x).clamp(0.0, 1.0)
        mean = torch.tensor([CLIP_MEAN[c % 3] for c in range(C)], dtype=torch.float32)
        inv_std = 1.0 / torch.tensor([CLIP_STD[c % 3] for c in range(C)], dtype=torch.float32)
        mean, inv_std = mean.to(device), inv_std.to(device)
    else:
        mean = inv_std = None
    x = x.to(_torch_dtype(point["x_dtype"])).to(device)
    return {"x": x, "P": point["P"], "mean": mean, "inv_std": inv_std, "out_dtype": _torch_dtype(point["dtype"])}


def launch(inputs, cfg):
    return patchify(inputs["x"], inputs["P"], inputs["mean"], inputs["inv_std"], inputs["out_dtype"],
                    BLOCK_N=cfg["BLOCK_N"], TILES=cfg["TILES"], num_warps=cfg["num_warps"],
                    num_stages=cfg["num_stages"])


def _patchify_torch(y, P: int):
    B, C, H, W = y.shape
    GH, GW = H // P, W // P
    y = y[:, :, :GH * P, :GW * P]
    return y.reshape(B, C, GH, P, GW, P).permute(0, 2, 4, 1, 3, 5).reshape(B, GH * GW, C * P * P)


def reference(inputs):
    """fp32: the upcast x normalized ((x - mean) * inv_std per channel) when the point normalizes,
    then torch's crop to whole patches and reshape / permute / reshape patchify, [B, N, K]."""
    x = inputs["x"].float()
    if inputs["mean"] is not None:
        x = (x - inputs["mean"].float().view(1, -1, 1, 1)) * inputs["inv_std"].float().view(1, -1, 1, 1)
    return _patchify_torch(x, inputs["P"]).contiguous()


def torch_baseline(inputs):
    """What eager torch runs: the normalization in fp32 (when the point has it), the cast to the
    output dtype, then the permute made contiguous (one more pass over the tokens)."""
    x = inputs["x"]
    if inputs["mean"] is not None:
        x = (x.float() - inputs["mean"].view(1, -1, 1, 1)) * inputs["inv_std"].view(1, -1, 1, 1)
    return _patchify_torch(x.to(inputs["out_dtype"]), inputs["P"]).contiguous()


def bytes_moved(point) -> int:
    """x's whole patches read once (the rows / columns past the last patch are not), out written
    once (the same element count), mean / inv_std (fp32) when normalizing."""
    _, n, K = _sizes(point)
    norm = 8 * point["C"] if point.get("normalize", False) else 0
    return n * K * (_elem_bytes(point["x_dtype"]) + _elem_bytes(point["dtype"])) + norm


def flops(point) -> int:
    """A subtract and a multiply an element when normalizing, none for a plain patchify."""
    _, n, K = _sizes(point)
    return 2 * n * K if point.get("normalize", False) else 0


def grid(cfg, point) -> tuple[int]:
    """(CTAs,): all patches in tiles of BLOCK_N, TILES tiles a CTA."""
    _, n, _ = _sizes(point)
    return (triton.cdiv(n, _per_cta(cfg)),)


def loop_iterations(cfg, point) -> int:
    """Channel steps a CTA: TILES tiles x C channels (every CTA the same; the last one's steps
    past the end are masked, not skipped)."""
    _check_point(point)
    _check_cfg(cfg)
    return cfg["TILES"] * point["C"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    x contiguous NCHW, out [B, N, K] contiguous, mean / inv_std fp32 [C] when normalizing."""
    import torch
    npi, n, K = _sizes(point)
    B, C, H, W = (point[k] for k in ("B", "C", "H", "W"))
    x = torch.empty((B, C, H, W), dtype=_torch_dtype(point["x_dtype"]), device="meta")
    out = torch.empty((B, npi, K), dtype=_torch_dtype(point["dtype"]), device="meta")
    if point.get("normalize", False):
        mean = torch.empty((C,), dtype=torch.float32, device="meta")
        inv_std = torch.empty((C,), dtype=torch.float32, device="meta")
    else:
        mean = inv_std = None
    return _kernel_args(x, out, mean, inv_std, point["P"], cfg)
