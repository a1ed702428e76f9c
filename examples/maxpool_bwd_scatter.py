"""Backward of a 2-D max pool from its saved argmax indices (torch's max_pool2d_with_indices_backward;
kernel 3 x 3 stride 2 by default, so neighbouring windows overlap by one row / column), NCHW or
NHWC (channels_last), a bare @triton.jit kernel + its launcher.

    grad_in[n, c, :, :] = 0;  for every output pixel q:  grad_in[n, c].flat[idx[n, c, q]] += grad_out[n, c, q]

grad_out, indices: [N, C, OH, OW] (OH = floor((H + 2 pad - K) / S) + 1, no ceil_mode, no dilation),
in one memory format (NCHW contiguous, or channels_last), grad_out fp16 / bf16 / fp32, indices
int64 (torch's) or int32, each the flat position h * W + w of the window's max inside its plane
(trusted: in [0, H W) and inside the window, as max_pool2d returns it); grad_in: [N, C, H, W] in
grad_out's dtype and memory format. With stride < window an input pixel can be the max of up to
ceil(K / S)^2 = 4 windows (2 x 2 at 3 x 3 stride 2), so the adds collide.

Two formulations, chosen by the constexpr GATHER (a tunable: which is faster depends on the point):

  GATHER = 0 (scatter): one CTA owns BLOCK_P output pixels of one image and walks the C channels
  in BLOCK_C chunks; per chunk one masked [BLOCK_P, BLOCK_C] load of grad_out and of indices
  (streamed once: evict-first) and one fp32 atomic add per element into grad_in at its argmax
  (tl.atomic_add, relaxed, result unused: fire-and-forget reductions in L2). The atomics need a
  zeroed fp32 target: the launcher zero-fills grad_in first (fp32 points) or an fp32 workspace that
  it casts to the 16-bit dtype afterwards (fp16 / bf16: 16-bit atomics would round at every
  collision); both are torch kernels, declared in secondary_kernels. Summation order across the
  colliding windows is the hardware's (fp32 reassociation, not bit-reproducible).

  GATHER = 1 (gather, no atomics, no zero-fill, deterministic): one CTA owns BLOCK_P input pixels
  of one image and walks C in BLOCK_C chunks; each pixel (h, w) decodes once the range of windows
  that can hold it (oh in [ceil((h + pad - K + 1) / S), floor((h + pad) / S)], clipped to [0, OH),
  likewise ow), and per chunk the ceil(K / S)^2 candidate windows are unrolled: the window's index is
  loaded (masked to the window range), compared with h * W + w, and only where it matches is the
  gradient loaded (a predicated load) and added in fp32, in a fixed window order; one plain store
  of the chunk in grad_in's dtype (one rounding). Each index is read by up to 4 input pixels of
  neighbouring tiles: once from DRAM, the rest from L1 / L2.

Addressing: a plane's pixels are dense in both formats (pixel q at q * stride_p: 1 for NCHW, C for
NHWC; channel c at c * stride_c: the plane size for NCHW, 1 for NHWC), so the scatter adds
idx * stride_p + c * stride_c to its image's base (64-bit) without decoding h and w. The
contiguous axis (pixels for NCHW, channels for NHWC) is found by Triton from the specialised unit
stride; the same tile serves both layouts. Masks: the pixel tail (BLOCK_P), the channel tail
(BLOCK_C).

Grid (1-D): pid -> pixel tile fastest, then the image; every CTA walks all of C.

Tunables: GATHER (0 / 1), BLOCK_P (pixels a tile, a power of two), BLOCK_C (channels a chunk, a
power of two), num_warps, num_stages (no dot: the channel walk's loads are not pipelined; held at 1).
Problem parameters (a workload point): N, C, H, W (the input), kernel (window, default 3), stride
(default 2), pad (default 0), layout ("nchw" / "nhwc"), dtype (fp16 / bf16 / fp32), idx ("int64" /
"int32", default "int64").
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl


@triton.jit
def _kernel(GO, IDX, GI, C, H, W, OH, OW,
            stride_on, stride_oc, stride_op, stride_in, stride_ic, stride_ip,
            KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
            PH: tl.constexpr, PW: tl.constexpr, GATHER: tl.constexpr,
            BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    pid = tl.program_id(0)
    if GATHER:
        npix = H * W
    else:
        npix = OH * OW
    tiles_p = tl.cdiv(npix, BLOCK_P)
    tp = pid % tiles_p
    img = pid // tiles_p

    ps = tp * BLOCK_P + tl.arange(0, BLOCK_P)
    p_ok = ps < npix
    cs0 = tl.arange(0, BLOCK_C)
    go_img = GO + img.to(tl.int64) * stride_on
    ix_img = IDX + img.to(tl.int64) * stride_on
    gi_img = GI + img.to(tl.int64) * stride_in

    if GATHER == 0:
        src = ps.to(tl.int64)[:, None] * stride_op
        for c0 in range(0, C, BLOCK_C):
            cs = c0 + cs0
            m = p_ok[:, None] & (cs < C)[None, :]
            off = src + (cs * stride_oc)[None, :]
            g = tl.load(go_img + off, mask=m, other=0.0, eviction_policy="evict_first")
            ix = tl.load(ix_img + off, mask=m, other=0, eviction_policy="evict_first")
            dst = gi_img + ix.to(tl.int64) * stride_ip + (cs * stride_ic)[None, :]
            tl.atomic_add(dst, g.to(tl.float32), mask=m, sem="relaxed")
    else:
        NWH: tl.constexpr = (KH + SH - 1) // SH          # windows a pixel can fall in, per axis
        NWW: tl.constexpr = (KW + SW - 1) // SW
        h = ps // W
        w = ps % W
        th = h + (PH - KH + 1)
        tw = w + (PW - KW + 1)
        oh_lo = tl.where(th > 0, (th + SH - 1) // SH, 0)
        ow_lo = tl.where(tw > 0, (tw + SW - 1) // SW, 0)
        oh_hi = tl.minimum((h + PH) // SH + 1, OH)       # exclusive
        ow_hi = tl.minimum((w + PW) // SW + 1, OW)
        dst = gi_img + ps.to(tl.int64)[:, None] * stride_ip
        for c0 in range(0, C, BLOCK_C):
            cs = c0 + cs0
            c_ok = (cs < C)[None, :]
            coff = (cs * stride_oc)[None, :]
            acc = tl.zeros([BLOCK_P, BLOCK_C], tl.float32)
            for i in tl.static_range(NWH):
                oh = oh_lo + i
                for j in tl.static_range(NWW):
                    ow = ow_lo + j
                    ok = p_ok & (oh < oh_hi) & (ow < ow_hi)
                    off = ((oh * OW + ow).to(tl.int64) * stride_op)[:, None] + coff
                    ix = tl.load(ix_img + off, mask=ok[:, None] & c_ok, other=-1)
                    hit = ix == ps[:, None]
                    g = tl.load(go_img + off, mask=hit, other=0.0)
                    acc += g.to(tl.float32)
            tl.store(dst + (cs * stride_ic)[None, :], acc.to(GI.dtype.element_ty), mask=p_ok[:, None] & c_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
IDX_DTYPES = ("int64", "int32")
LAYOUTS = ("nchw", "nhwc")
TUNABLES = ("GATHER", "BLOCK_P", "BLOCK_C", "num_warps", "num_stages")
BASELINE = {"GATHER": 0, "BLOCK_P": 64, "BLOCK_C": 16, "num_warps": 4, "num_stages": 1}
FILL_BLOCK = 512            # elements a CTA of torch's vectorised fill / cast kernels (128 threads x 4)

# Real 3 x 3 stride-2 max pools at training batch sizes. Unavoidable traffic (bytes_moved: grad_out and
# indices read once, grad_in written once) 250 MiB - 1.04 GiB, 5-20x the H200's 50 MB L2; the
# scatter adds a zero-fill of an fp32 target (and, at 16 bits, its cast): 1.5-2.5x that.
POINTS = [
    # ResNet-50 stem max pool backward (112 x 112 -> 56 x 56, pad 1, 64 channels), batch 256, AMP bf16
    # channels_last, torch's int64 indices: grad_out 98 MiB + indices 392 MiB + grad_in 392 MiB
    {"N": 256, "C": 64, "H": 112, "W": 112, "kernel": 3, "stride": 2, "pad": 1, "layout": "nhwc",
     "dtype": "bf16", "idx": "int64"},
    # Inception-v3 MaxPool_3a (147 x 147 -> 73 x 73, no pad: odd planes, ragged tiles), batch 64, fp32
    # NCHW: grad_out 83 MiB + indices 167 MiB + grad_in 338 MiB
    {"N": 64, "C": 64, "H": 147, "W": 147, "kernel": 3, "stride": 2, "pad": 0, "layout": "nchw",
     "dtype": "fp32", "idx": "int64"},
    # Inception-v3 MaxPool_5a (71 x 71 -> 35 x 35, 192 channels), batch 64, fp16 channels_last with
    # int32 indices (a memory-saving framework's): grad_out 29 MiB + indices 57 MiB + grad_in 118 MiB
    {"N": 64, "C": 192, "H": 71, "W": 71, "kernel": 3, "stride": 2, "pad": 0, "layout": "nhwc",
     "dtype": "fp16", "idx": "int32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _idx_dtype(name: str):
    import torch
    try:
        return {"int64": torch.int64, "int32": torch.int32}[name]
    except KeyError:
        raise ValueError(f"idx {name!r} is not one of {', '.join(IDX_DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _idx_bytes(name: str) -> int:
    if name not in IDX_DTYPES:
        raise ValueError(f"idx {name!r} is not one of {', '.join(IDX_DTYPES)}")
    return 8 if name == "int64" else 4


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_P", "BLOCK_C"):
        v = cfg[name]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")
    if cfg["GATHER"] not in (0, 1):
        raise ValueError(f"GATHER={cfg['GATHER']!r} must be 0 or 1")


def out_size(size: int, kernel: int, stride: int, pad: int) -> int:
    """floor((size + 2 pad - kernel) / stride) + 1 (ceil_mode False, dilation 1)."""
    return (size + 2 * pad - kernel) // stride + 1


def _geometry(point) -> tuple[int, int, int]:
    """(kernel, stride, pad) of a point, checked; and the point's sizes."""
    for k in ("N", "C", "H", "W"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    k, s, p = point.get("kernel", 3), point.get("stride", 2), point.get("pad", 0)
    if not (isinstance(k, int) and isinstance(s, int) and isinstance(p, int)) or k < 1 or s < 1 or p < 0:
        raise ValueError(f"kernel={k!r}, stride={s!r}, pad={p!r}: kernel, stride >= 1 and pad >= 0 ints")
    if 2 * p > k:
        raise ValueError(f"pad={p} must be at most half the kernel {k} (as torch's max_pool2d requires)")
    if min(out_size(point["H"], k, s, p), out_size(point["W"], k, s, p)) < 1:
        raise ValueError(f"{point['H']} x {point['W']} is smaller than the {k} x {k} window")
    if point.get("layout", "nchw") not in LAYOUTS:
        raise ValueError(f"layout {point.get('layout')!r} is not one of {', '.join(LAYOUTS)}")
    _elem_bytes(point.get("dtype", "fp32"))
    _idx_bytes(point.get("idx", "int64"))
    return k, s, p


def _pair(v, name: str) -> tuple[int, int]:
    t = (v, v) if isinstance(v, int) else tuple(v)
    if len(t) != 2 or not all(isinstance(x, int) for x in t):
        raise ValueError(f"{name}={v!r} must be an int or a pair of ints")
    return t


def _grid(N: int, npix: int, cfg) -> int:
    return N * triton.cdiv(npix, cfg["BLOCK_P"])


def _kernel_args(grad_out, indices, grad_in, kernel, stride, pad, channels_last: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). grad_out,
    indices [N, C, OH, OW] and grad_in [N, C, H, W] dense in the format `channels_last` names (the
    strides are the format's: torch's contiguity ignores a size-1 dim's stride, so they are derived
    from the sizes, not read)."""
    _, C, OH, OW = grad_out.shape
    H, W = grad_in.shape[2], grad_in.shape[3]
    (KH, KW), (SH, SW), (PH, PW) = kernel, stride, pad
    if channels_last:
        so = (OH * OW * C, 1, C)
        si = (H * W * C, 1, C)
    else:
        so = (C * OH * OW, OH * OW, 1)
        si = (C * H * W, H * W, 1)
    return dict(GO=grad_out, IDX=indices, GI=grad_in, C=C, H=H, W=W, OH=OH, OW=OW,
                stride_on=so[0], stride_oc=so[1], stride_op=so[2],
                stride_in=si[0], stride_ic=si[1], stride_ip=si[2],
                KH=KH, KW=KW, SH=SH, SW=SW, PH=PH, PW=PW, GATHER=int(cfg["GATHER"]),
                BLOCK_P=cfg["BLOCK_P"], BLOCK_C=cfg["BLOCK_C"])


def maxpool2d_backward(grad_out, indices, input_size, kernel_size=3, stride=2, padding=0, *, GATHER=0,
                       BLOCK_P=64, BLOCK_C=16, num_warps=4, num_stages=1):
    """grad_in [N, C, H, W] of a max pool from grad_out and its argmax `indices` ([N, C, OH, OW]; int64
    or int32 flat h * W + w positions), `input_size` (H, W), the pool's kernel_size / stride /
    padding (ints or pairs). grad_in has grad_out's dtype and memory format (channels_last when
    grad_out is channels_last and not NCHW-contiguous; any other strides are copied to NCHW);
    indices are brought to grad_out's format. GATHER=1: the atomic-free gather formulation."""
    import torch
    if grad_out.dim() != 4 or tuple(indices.shape) != tuple(grad_out.shape):
        raise ValueError(f"grad_out and indices must be the same [N, C, OH, OW]; got {tuple(grad_out.shape)} "
                         f"and {tuple(indices.shape)}")
    if grad_out.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"grad_out must be fp16 / bf16 / fp32; got {grad_out.dtype}")
    if indices.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"indices must be int64 / int32; got {indices.dtype}")
    if indices.device != grad_out.device:
        raise ValueError(f"indices are on {indices.device}, grad_out on {grad_out.device}")
    kernel, stride, pad = _pair(kernel_size, "kernel_size"), _pair(stride, "stride"), _pair(padding, "padding")
    H, W = _pair(tuple(input_size), "input_size")
    if min(kernel + stride) < 1 or min(pad) < 0 or 2 * pad[0] > kernel[0] or 2 * pad[1] > kernel[1]:
        raise ValueError(f"kernel_size={kernel}, stride={stride}, padding={pad}: need kernel, stride >= 1 "
                         "and 0 <= padding <= kernel / 2")
    N, C, OH, OW = grad_out.shape
    if (OH, OW) != (out_size(H, kernel[0], stride[0], pad[0]), out_size(W, kernel[1], stride[1], pad[1])):
        raise ValueError(f"grad_out's {OH} x {OW} is not the pooled size of {H} x {W} with kernel {kernel}, "
                         f"stride {stride}, padding {pad}")
    if grad_out.numel() == 0:
        raise ValueError(f"empty grad_out: shape {tuple(grad_out.shape)}")
    if C * max(H * W, OH * OW) >= 2**31:
        raise ValueError(f"an image of {C} x {H} x {W} elements exceeds the kernel's 32-bit in-image offsets")
    cfg = {"GATHER": GATHER, "BLOCK_P": BLOCK_P, "BLOCK_C": BLOCK_C}
    _check_cfg(cfg)
    cl = grad_out.is_contiguous(memory_format=torch.channels_last) and not grad_out.is_contiguous()
    fmt = torch.channels_last if cl else torch.contiguous_format
    go = grad_out.contiguous(memory_format=fmt)
    ix = indices.contiguous(memory_format=fmt)
    if GATHER:
        gi = torch.empty((N, C, H, W), dtype=grad_out.dtype, device=grad_out.device, memory_format=fmt)
        target = gi
    else:
        target = torch.empty((N, C, H, W), dtype=torch.float32, device=grad_out.device, memory_format=fmt)
        target.zero_()
    _kernel[(_grid(N, (H * W) if GATHER else (OH * OW), cfg),)](
        **_kernel_args(go, ix, target, kernel, stride, pad, cl, cfg), num_warps=num_warps, num_stages=num_stages)
    if not GATHER and grad_out.dtype != torch.float32:
        return target.to(grad_out.dtype)          # keeps the memory format
    return target


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1) [N, C, H, W] in the point's dtype and layout, its max pool's argmax indices (torch's
    max_pool2d on x in fp32: exact, ties go where torch puts them) in the point's idx dtype, and
    grad_out ~ N(0, 1) [N, C, OH, OW] in x's dtype and layout. x stays (torch_baseline's `self`)."""
    import torch
    import torch.nn.functional as F
    k, s, p = _geometry(point)
    dt, it = _torch_dtype(point.get("dtype", "fp32")), _idx_dtype(point.get("idx", "int64"))
    fmt = torch.channels_last if point.get("layout", "nchw") == "nhwc" else torch.contiguous_format
    gen = torch.Generator(device=device).manual_seed(seed)
    N, C, H, W = point["N"], point["C"], point["H"], point["W"]
    x = torch.randn((N, C, H, W), generator=gen, device=device).to(dt).contiguous(memory_format=fmt)
    _, idx = F.max_pool2d(x.float(), k, s, p, return_indices=True)
    grad_out = torch.randn(tuple(idx.shape), generator=gen, device=device).to(dt).contiguous(memory_format=fmt)
    return {"x": x, "grad_out": grad_out, "indices": idx.to(it).contiguous(memory_format=fmt),
            "kernel": k, "stride": s, "pad": p}


def launch(inputs, cfg):
    """grad_in [N, C, H, W] in grad_out's dtype and layout (a fresh tensor each call)."""
    x = inputs["x"]
    return maxpool2d_backward(inputs["grad_out"], inputs["indices"], (x.shape[2], x.shape[3]), inputs["kernel"],
                              inputs["stride"], inputs["pad"], GATHER=cfg["GATHER"], BLOCK_P=cfg["BLOCK_P"],
                              BLOCK_C=cfg["BLOCK_C"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """[N, C, H, W] fp32: the fp64 scatter-add of grad_out at the indices (torch's scatter_add_ per
    plane), rounded once."""
    import torch
    x, g, idx = inputs["x"], inputs["grad_out"], inputs["indices"]
    N, C, H, W = x.shape
    ref = torch.zeros((N, C, H * W), dtype=torch.float64, device=g.device)
    ref.scatter_add_(2, idx.long().reshape(N, C, -1), g.double().reshape(N, C, -1))
    return ref.reshape(N, C, H, W).float()


def torch_baseline(inputs):
    """aten's max_pool2d_with_indices_backward (CUDA: a gather per input element, no atomics), with the
    indices widened to int64 when they are int32 (aten takes int64 only)."""
    import torch
    k, s, p = inputs["kernel"], inputs["stride"], inputs["pad"]
    return torch.ops.aten.max_pool2d_with_indices_backward(
        inputs["grad_out"], inputs["x"], [k, k], [s, s], [p, p], [1, 1], False, inputs["indices"].long())


def _sizes(point) -> tuple[int, int, int, int, int, int]:
    k, s, p = _geometry(point)
    return (point["N"], point["C"], point["H"], point["W"], out_size(point["H"], k, s, p),
            out_size(point["W"], k, s, p))


def bytes_moved(point) -> int:
    """The op's unavoidable traffic: grad_out and indices read once, grad_in written once (what the
    gather formulation moves). The scatter's zero-fill of its fp32 target, the atomics' read-modify-
    writes (in L2) and, at 16 bits, the cast of the fp32 workspace are not counted here (the hook sees
    no config): secondary_kernels declares the fill's and the cast's DRAM bytes."""
    N, C, H, W, OH, OW = _sizes(point)
    e, ie = _elem_bytes(point.get("dtype", "fp32")), _idx_bytes(point.get("idx", "int64"))
    return N * C * OH * OW * (e + ie) + N * C * H * W * e


def flops(point) -> int:
    """One add per grad_out element (the scatter's atomic, the gather's matched add)."""
    N, C, _, _, OH, OW = _sizes(point)
    return N * C * OH * OW


def grid(cfg, point) -> int:
    """N x pixel tiles: BLOCK_P output pixels a CTA (scatter), BLOCK_P input pixels (gather)."""
    _check_cfg(cfg)
    N, _, H, W, OH, OW = _sizes(point)
    return _grid(N, H * W if cfg["GATHER"] else OH * OW, cfg)


def loop_iterations(cfg, point) -> int:
    """Channel chunks a CTA walks."""
    return triton.cdiv(point["C"], cfg["BLOCK_C"])


def secondary_kernels(cfg, point) -> list[dict]:
    """The scatter's torch kernels around `_kernel`: the zero-fill of the fp32 target (stores only:
    tile_bytes / dram_bytes give the bytes a CTA writes), and at 16 bits the cast of that workspace
    to grad_in's dtype (reads 4 B, writes 2 B an element). FILL_BLOCK elements a CTA; tile_bytes and
    dram_bytes are one CTA's bytes, as docs/launcher.md asks. None for GATHER."""
    if cfg["GATHER"]:
        return []
    N, C, H, W, _, _ = _sizes(point)
    n = N * C * H * W
    ctas = triton.cdiv(n, FILL_BLOCK)
    out = [{"name": "zero_fill", "grid": ctas, "iterations": 1, "tile_bytes": 4 * FILL_BLOCK,
            "dram_bytes": 4 * FILL_BLOCK}]
    if point.get("dtype", "fp32") != "fp32":
        out.append({"name": "cast_to_" + point["dtype"], "grid": ctas, "iterations": 1,
                    "tile_bytes": 6 * FILL_BLOCK, "dram_bytes": 6 * FILL_BLOCK})
    return out


@functools.lru_cache(maxsize=4)
def _indices_data(key: str):
    """The point's argmax indices with data, on the CPU, in its idx dtype and layout (rank reads the scatter's
    and the gather's addresses from them): make_inputs' seed-0 draw."""
    import ast
    return make_inputs(dict(ast.literal_eval(key)), seed=0, device="cpu")["indices"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: the indices with data (_indices_data), the
    rest on the meta device (no memory):
    grad_out / indices in the point's dtypes and layout, grad_in fp32 for the scatter (its
    target), the point's dtype for the gather."""
    import torch
    _check_cfg(cfg)
    N, C, H, W, OH, OW = _sizes(point)
    k, s, p = _geometry(point)
    cl = point.get("layout", "nchw") == "nhwc"
    fmt = torch.channels_last if cl else torch.contiguous_format
    dt = _torch_dtype(point.get("dtype", "fp32"))
    go = torch.empty((N, C, OH, OW), dtype=dt, device="meta", memory_format=fmt)
    ix = _indices_data(repr(sorted(point.items())))
    gi = torch.empty((N, C, H, W), dtype=dt if cfg["GATHER"] else torch.float32, device="meta",
                     memory_format=fmt)
    return _kernel_args(go, ix, gi, (k, k), (s, s), (p, p), cl, cfg)
