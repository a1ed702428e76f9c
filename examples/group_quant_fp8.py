"""Per-token-group FP8 quantization (the activation side of DeepSeek-V3's block-scaled FP8
recipe: what runs before every w8a8 block-FP8 GEMM), a bare @triton.jit kernel + its launcher.

    amax[t, g] = max(max_{c < GROUP} |x[t, g * GROUP + c]|, eps)
    s[t, g] = amax[t, g] / 448                       (fp32, correctly rounded)
    y[t, g * GROUP + c] = fp8(clamp(x[t, g * GROUP + c] * (1 / s[t, g]), -448, 448))

x: [T, H] fp16 / bf16 / fp32 (T tokens, H the hidden size, a multiple of GROUP; H
contiguous, any row stride, so x may be a column slice of a wider buffer); y: [T, H]
float8_e4m3fn, contiguous; s: [T, H / GROUP] fp32, the dequantisation multipliers (x ~= y *
s), row-major, or column-major (token-contiguous: a [H / GROUP, T'] buffer transposed, T'
= T rounded up to 4 so each column starts 16-byte aligned, the layout DeepGEMM's and
cuBLASLt's TMA loads of the scales want). The layout is only the scales' strides, so the
same kernel writes both. GROUP: 128 (DeepSeek-V3's) or any power of two >= 16 (64 too).
eps 1e-10 keeps an all-zero group (a padding row) finite: y = 0, s = eps / 448. fp32 math.
448 is the largest finite e4m3fn.

One CTA owns BLOCK_T tokens and walks their H / GROUP groups BLOCK_G at a time: per step
one masked [BLOCK_T, BLOCK_G, GROUP] tile of x (GROUP contiguous elements per group, vector
loads), |x| reduced over the group axis in registers, the BLOCK_T x BLOCK_G scales and their
reciprocals computed with correctly rounded divides (div_rn: two per group, not one per
element), y = x * (1 / s) clamped and converted with round-to-nearest-even (cvt.rn.satfinite
on sm_89+), then the fp8 tile and the scales stored. The token tail (T % BLOCK_T) and the
group tail (H / GROUP % BLOCK_G) are masked. Every step is exact IEEE arithmetic in a fixed
order, so the result is bit-for-bit the torch reference's (same rounded inputs, the same
three roundings).

Tunables: BLOCK_T (tokens per CTA), BLOCK_G (groups per step; powers of two), num_warps,
num_stages (no dot: the loop's loads are not pipelined, so num_stages may change nothing in
the cubin).
Problem parameters (a workload point): T, H, GROUP, col_major (the scales' layout), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl

FP8_MAX = 448.0     # largest finite float8_e4m3fn
EPS = 1e-10         # the least group amax (vLLM's / SGLang's default)
SCALE_ALIGN = 4     # column-major scales: T padded to a multiple of 4 fp32 (16-byte aligned columns)


@triton.jit
def _kernel(X, Y, S, T, NG, stride_xt, stride_yt, stride_st, stride_sg, eps,
            GROUP: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_G: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    t64 = ts.to(tl.int64)
    gr = tl.arange(0, BLOCK_G)
    cs = tl.arange(0, GROUP)

    x_row = X + t64[:, None, None] * stride_xt + cs[None, None, :]      # [BLOCK_T, 1, GROUP]
    y_row = Y + t64[:, None, None] * stride_yt + cs[None, None, :]
    s_row = S + t64[:, None] * stride_st                                  # [BLOCK_T, 1]
    for g0 in range(0, NG, BLOCK_G):
        gs = g0 + gr
        ok = t_ok[:, None] & (gs < NG)[None, :]                           # [BLOCK_T, BLOCK_G]
        m = ok[:, :, None]
        col = (gs * GROUP)[None, :, None]
        x = tl.load(x_row + col, mask=m, other=0.0).to(tl.float32)
        amax = tl.maximum(tl.max(tl.abs(x), axis=2), eps)
        scale = tl.math.div_rn(amax, 448.0)
        inv = tl.math.div_rn(tl.full([BLOCK_T, BLOCK_G], 1.0, tl.float32), scale)
        y = x * inv[:, :, None]
        y = tl.minimum(tl.maximum(y, -448.0), 448.0)
        tl.store(y_row + col, y.to(Y.dtype.element_ty), mask=m)
        tl.store(s_row + gs[None, :] * stride_sg, scale, mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16", "fp32")      # x's; y is always float8_e4m3fn, the scales fp32
TUNABLES = ("BLOCK_T", "BLOCK_G", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 4, "BLOCK_G": 2, "num_warps": 4, "num_stages": 1}

# DeepSeek-V3 activations before its block-FP8 GEMMs, GROUP 128: x 256-448 MiB read (5-9x the
# H200's 50 MB L2), y a half (bf16 / fp16) or a quarter (fp32) of that written, the scales
# 4-7 MiB.
POINTS = [
    {"T": 32768, "H": 7168, "GROUP": 128, "col_major": False, "dtype": "bf16"},   # hidden states into q_a / kv_a / gate_up, 32k-token prefill: x 448 MiB
    {"T": 65536, "H": 2048, "GROUP": 128, "col_major": True, "dtype": "fp16"},    # MoE down_proj input (moe_intermediate 2048), 8k tokens x top-8: x 256 MiB, DeepGEMM's M-major scales
    {"T": 16384, "H": 7168, "GROUP": 128, "col_major": False, "dtype": "fp32"},   # fp32 hidden states (an fp32 residual / norm output), 16k tokens: x 448 MiB
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


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "BLOCK_G"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _check_group(group: int, H: int) -> None:
    if group < 16 or group > 1024 or group & (group - 1):
        raise ValueError(f"group_size={group} must be a power of two in 16..1024")
    if H % group:
        raise ValueError(f"the hidden size {H} is not a multiple of group_size={group}")


def _kernel_args(x, y, s, group, eps, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, Y=y, S=s, T=x.shape[0], NG=x.shape[1] // group, stride_xt=x.stride(0), stride_yt=y.stride(0),
                stride_st=s.stride(0), stride_sg=s.stride(1), eps=eps, GROUP=group, BLOCK_T=cfg["BLOCK_T"],
                BLOCK_G=cfg["BLOCK_G"])


def scales_buffer(T: int, NG: int, column_major: bool, device="cuda", meta: bool = False):
    """An fp32 [T, NG] scales tensor: row-major, or the transpose of an [NG, T'] buffer (T' = T
    rounded up to SCALE_ALIGN), T contiguous."""
    import torch
    dev = "meta" if meta else device
    if not column_major:
        return torch.empty((T, NG), dtype=torch.float32, device=dev)
    Tp = triton.cdiv(T, SCALE_ALIGN) * SCALE_ALIGN
    return torch.empty((NG, Tp), dtype=torch.float32, device=dev).t()[:T]


def per_token_group_quant_fp8(x, group_size: int = 128, eps: float = EPS, column_major_scales: bool = False, *,
                              BLOCK_T=4, BLOCK_G=2, num_warps=4, num_stages=1):
    """Quantize x [T, H] (fp16 / bf16 / fp32, H a multiple of group_size) per token and
    group_size-wide group to float8_e4m3fn. Returns (y [T, H] float8_e4m3fn, s [T, H /
    group_size] fp32) with x ~= y * s (s repeated over each group); s row-major, or
    token-contiguous (column-major, 16-byte aligned columns) with column_major_scales."""
    import torch
    if x.dim() != 2:
        raise ValueError(f"expected x [T, H]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16, bf16 or fp32; got {x.dtype}")
    T, H = x.shape
    _check_group(group_size, H)
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_G": BLOCK_G}
    _check_cfg(cfg)
    if not eps > 0:
        raise ValueError(f"eps={eps} must be > 0")
    if x.stride(1) != 1:
        x = x.contiguous()
    NG = H // group_size
    y = torch.empty((T, H), dtype=torch.float8_e4m3fn, device=x.device)
    s = scales_buffer(T, NG, column_major_scales, device=x.device)
    if T > 0 and NG > 0:
        _kernel[(triton.cdiv(T, BLOCK_T),)](**_kernel_args(x, y, s, group_size, eps, cfg), num_warps=num_warps,
                                            num_stages=num_stages)
    return y, s


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Activations as an LLM's look to a quantizer: N(0, 1) times a per-token magnitude (spread
    over two decades), with ~1 % outlier channels 8-24x larger (the same channels in every
    token: most groups' amax is an outlier, the rest of the group small against it), and ~1 %
    all-zero rows (padding tokens, the eps path)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, H = point["T"], point["H"]
    _check_group(point.get("GROUP", 128), H)
    x = torch.randn((T, H), generator=gen, device=device)
    x *= torch.exp(torch.rand((T, 1), generator=gen, device=device) * 4.6 - 2.3)
    chan = torch.ones((H,), device=device)
    n_out = max(1, H // 100)
    idx = torch.randperm(H, generator=gen, device=device)[:n_out]
    chan[idx] = 8.0 + 16.0 * torch.rand((n_out,), generator=gen, device=device)
    x *= chan
    zero = torch.rand((T,), generator=gen, device=device) < 0.01
    x[zero] = 0.0
    return {"x": x.to(dt), "group": point.get("GROUP", 128), "col_major": bool(point.get("col_major", False))}


def launch(inputs, cfg):
    """y, the float8_e4m3fn values (the scales are the wrapper's second output)."""
    y, _ = per_token_group_quant_fp8(inputs["x"], inputs["group"], EPS, inputs["col_major"], BLOCK_T=cfg["BLOCK_T"],
                                     BLOCK_G=cfg["BLOCK_G"], num_warps=cfg["num_warps"],
                                     num_stages=cfg["num_stages"])
    return y


def reference_scales(inputs):
    """s [T, H / GROUP] in fp32: max(amax, eps) / 448, correctly rounded (the kernel's). The
    quotient is taken in fp64 and rounded to fp32 (the correctly rounded fp32 quotient: a
    double rounding through 53 >= 2 x 24 + 2 bits is innocuous for a divide), so it does not
    depend on how torch divides by a scalar (its CUDA kernel multiplies by the reciprocal)."""
    x, group = inputs["x"], inputs["group"]
    T, H = x.shape
    amax = x.float().view(T, H // group, group).abs().amax(dim=-1).clamp(min=EPS)    # eps rounded to fp32, as the kernel's
    return (amax.double() / FP8_MAX).float()


def reference(inputs):
    """y as fp32 [T, H]: x * (1 / s) clamped to +-448 and rounded to e4m3fn (nearest even), the
    same fp32 operations in the same order as the kernel: equal bit for bit (only the fp8
    conversion's rounding can differ, by one fp8 ulp at an exact tie, if a converter did)."""
    import torch
    x, group = inputs["x"], inputs["group"]
    T, H = x.shape
    s = reference_scales(inputs)
    inv = (1.0 / s.double()).float()                 # the correctly rounded fp32 reciprocal
    y = (x.float().view(T, H // group, group) * inv[..., None]).clamp(-FP8_MAX, FP8_MAX)
    return y.to(torch.float8_e4m3fn).float().view(T, H)


def dequantize(y, s, group: int):
    """y [T, H] fp8 times its group's scale (s [T, H / group], any layout), in fp32."""
    return y.float() * s.float().repeat_interleave(group, dim=1)


def torch_baseline(inputs):
    """Eager torch, as vLLM's native per-token-group quant: amax over each group, clamp(eps),
    / 448, x / s (a divide per element), clamp, cast to float8_e4m3fn (y only; the scales
    are computed as the kernel's)."""
    import torch
    x, group = inputs["x"], inputs["group"]
    T, H = x.shape
    xg = x.float().view(T, H // group, group)
    s = xg.abs().amax(dim=-1, keepdim=True).clamp(min=EPS) / FP8_MAX
    return (xg / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(T, H)


def bytes_moved(point) -> int:
    """x read once, y (1 byte an element) and the fp32 scales written once (a column-major
    buffer's alignment padding is not written)."""
    T, H, group = point["T"], point["H"], point.get("GROUP", 128)
    return T * H * (_elem_bytes(point.get("dtype", "bf16")) + 1) + 4 * T * (H // group)


def flops(point) -> int:
    """Per element: abs, max, multiply, the two-sided clamp (5); per group two divides."""
    T, H, group = point["T"], point["H"], point.get("GROUP", 128)
    return 5 * T * H + 2 * T * (H // group)


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """Group steps per CTA: H / GROUP groups, BLOCK_G a step."""
    return triton.cdiv(point["H"] // point.get("GROUP", 128), cfg["BLOCK_G"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory);
    the scales in the point's layout."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, H, group = point["T"], point["H"], point.get("GROUP", 128)
    _check_group(group, H)
    x = torch.empty((T, H), dtype=dt, device="meta")
    y = torch.empty((T, H), dtype=torch.float8_e4m3fn, device="meta")
    s = scales_buffer(T, H // group, bool(point.get("col_major", False)), meta=True)
    return _kernel_args(x, y, s, group, EPS, cfg)
