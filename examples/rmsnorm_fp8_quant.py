"""Fused (residual add +) RMSNorm + per-token dynamic FP8 (e4m3) quantization (vLLM's
rms_norm_dynamic_per_token_quant, the norm in front of every w8a8 FP8 GEMM of a
per-token-quantized model), a bare @triton.jit kernel + its launcher.

    r[m, :] = x[m, :] (+ residual[m, :], rounded to x's dtype: the new residual, stored)
    v[m, :] = (r[m, :] * weight) * rstd[m],    rstd[m] = rsqrt(mean(r[m, :]^2) + eps)
    s[m]    = max(max_n |v[m, n]| / 448, 1 / (448 * 512))          (fp32, correctly rounded)
    y[m, :] = fp8(clamp(v[m, :] * (1 / s[m]), -448, 448))

x, residual: [M, N] fp16 / bf16 / fp32 (M tokens, N the hidden size), N contiguous (rows may
be strided: x a column slice of a wider buffer is read in place); weight: [N] in x's dtype;
eps 1e-6; y: [M, N] float8_e4m3fn, contiguous; s: [M, 1] fp32, the dequantisation multiplier
(v ~= y * s); the new residual (with a residual only): [M, N] in x's dtype, contiguous (a
fresh tensor, vLLM writes it over residual in place, here the inputs survive repeated
launches). 1 / (448 * 512) is vLLM's least scale (an all-zero padding row stays finite:
y = 0). fp32 math; 448 is the largest finite e4m3fn.

The row's absmax comes before its rstd is known, so the kernel takes it of r * weight and
scales it once: for rstd > 0 an fp32 multiply is monotone, so max_n |fl(fl(r w) rstd)| =
fl(max_n |fl(r w)| rstd) exactly -- the scale is that of the stored values, bit for bit,
with the same fp32 operations in the same order in either path.

One CTA owns ROWS consecutive rows and walks them one at a time. Two paths, chosen by the
launcher (SINGLE = N <= BLOCK_N, a constexpr):
  SINGLE (register-resident): the [BLOCK_N] weight is loaded once per CTA and kept in
    registers over its ROWS rows; per row one masked [BLOCK_N] load of x (and residual),
    the sum of squares and the absmax reduced in registers, the fp8 row, its scale (and r)
    stored. x is read from DRAM once.
  two-pass (N > BLOCK_N): pass 1 walks the row in BLOCK_N chunks, accumulating r^2 and
    |r w| elementwise in two [BLOCK_N] fp32 vectors (reduced once after the loop) and
    storing r; pass 2 walks it again, re-reading x (or the stored r: the CTA's own stores
    at the same offsets in the same layout, so program order makes them visible) and the
    weight chunk -- L2 hits, the row being 8-28 KiB -- and stores the fp8 chunks.
Masks give the N tail (N not a multiple of BLOCK_N, e.g. 7168) and the M tail (M % ROWS).

Tunables: BLOCK_N (the chunk / the widest row kept in registers, a power of two), ROWS
(rows a CTA walks: more amortise the weight in the register path, fewer CTAs), num_warps,
num_stages (no dot: the loops' loads are not pipelined, so num_stages changes nothing in
the cubin; held at 1).
Problem parameters (a workload point): M, N, dtype (x's), residual (bool), stride (optional:
x's row stride in elements, >= N; default N).
"""

from __future__ import annotations

import triton
import triton.language as tl

FP8_MAX = 448.0                      # largest finite float8_e4m3fn
MIN_SCALE = 1.0 / (448.0 * 512.0)    # vLLM's least per-token scale
EPS = 1e-6
_MIN_S = tl.constexpr(MIN_SCALE)


@triton.jit
def _quant_scale(amax, MIN_S: tl.constexpr):
    """s = max(amax / 448, MIN_S) (correctly rounded) and its correctly rounded reciprocal."""
    scale = tl.maximum(tl.math.div_rn(amax, 448.0), MIN_S)
    inv = tl.math.div_rn(tl.full([], 1.0, tl.float32), scale)
    return scale, inv


@triton.jit
def _kernel(X, Res, W, Y, S, RO, M, N, stride_xm, stride_rm, stride_ym, stride_om, eps,
            HAS_RESIDUAL: tl.constexpr, SINGLE: tl.constexpr, ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)

    if SINGLE:
        n_ok = cols < N
        w = tl.load(W + cols, mask=n_ok, other=0.0).to(tl.float32)      # kept over the CTA's rows
        for i in range(ROWS):
            row = pid * ROWS + i
            ok = cols < tl.where(row < M, N, 0)                          # a row past M: all masked
            row64 = row.to(tl.int64)
            r = tl.load(X + row64 * stride_xm + cols, mask=ok, other=0.0).to(tl.float32)
            if HAS_RESIDUAL:
                res = tl.load(Res + row64 * stride_rm + cols, mask=ok, other=0.0).to(tl.float32)
                rd = (r + res).to(RO.dtype.element_ty)
                tl.store(RO + row64 * stride_om + cols, rd, mask=ok)
                r = rd.to(tl.float32)
            rstd = tl.rsqrt(tl.sum(r * r, axis=0) / N + eps)
            rw = r * w
            amax = tl.max(tl.abs(rw), axis=0) * rstd
            scale, inv = _quant_scale(amax, _MIN_S)
            q = tl.minimum(tl.maximum((rw * rstd) * inv, -448.0), 448.0)
            tl.store(Y + row64 * stride_ym + cols, q.to(Y.dtype.element_ty), mask=ok)
            tl.store(S + row64, scale, mask=row < M)
    else:
        for i in range(ROWS):
            row = pid * ROWS + i
            row_ok = row < M
            n_lim = tl.where(row_ok, N, 0)                                  # a row past M: all masked
            row64 = row.to(tl.int64)
            x_row = X + row64 * stride_xm
            o_row = RO + row64 * stride_om
            # pass 1: r (stored with a residual), sum of r^2, max |r w|
            sq = tl.zeros([BLOCK_N], tl.float32)
            am = tl.zeros([BLOCK_N], tl.float32)
            for n0 in range(0, N, BLOCK_N):
                n = n0 + cols
                n_ok = n < N
                ok = n < n_lim
                r = tl.load(x_row + n, mask=ok, other=0.0).to(tl.float32)
                if HAS_RESIDUAL:
                    res = tl.load(Res + row64 * stride_rm + n, mask=ok, other=0.0).to(tl.float32)
                    rd = (r + res).to(RO.dtype.element_ty)
                    tl.store(o_row + n, rd, mask=ok)
                    r = rd.to(tl.float32)
                w = tl.load(W + n, mask=n_ok, other=0.0).to(tl.float32)
                sq += r * r
                am = tl.maximum(am, tl.abs(r * w))
            rstd = tl.rsqrt(tl.sum(sq, axis=0) / N + eps)
            scale, inv = _quant_scale(tl.max(am, axis=0) * rstd, _MIN_S)
            tl.store(S + row64, scale, mask=row_ok)
            # pass 2: y = fp8((r w) rstd / s), from x again (or the stored r)
            for n0 in range(0, N, BLOCK_N):
                n = n0 + cols
                n_ok = n < N
                ok = n < n_lim
                if HAS_RESIDUAL:
                    r = tl.load(o_row + n, mask=ok, other=0.0).to(tl.float32)
                else:
                    r = tl.load(x_row + n, mask=ok, other=0.0).to(tl.float32)
                w = tl.load(W + n, mask=n_ok, other=0.0).to(tl.float32)
                q = tl.minimum(tl.maximum(((r * w) * rstd) * inv, -448.0), 448.0)
                tl.store(Y + row64 * stride_ym + n, q.to(Y.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16", "fp32")      # x's (and residual's, weight's); y is float8_e4m3fn, s fp32
TUNABLES = ("BLOCK_N", "ROWS", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 4096, "ROWS": 2, "num_warps": 8, "num_stages": 1}

# Prefill-sized activations, 2.3-8x the H200's 50 MB L2 per operand: the points differ in
# hidden size (a power of two, 8192, and DeepSeek's 7168 with a masked tail), dtype and in
# whether the residual add is fused (3 of 4 streams 16-bit vs 1 of 2).
POINTS = [
    # Llama-3-8B / Mistral-7B, a 16K-token prefill, the post-attention norm with the residual add:
    # x, residual 128 MiB each read, r 128 MiB + y 64 MiB written (448 MiB, ~0.1 ms)
    {"M": 16384, "N": 4096, "dtype": "bf16", "residual": True},
    # Llama-3-70B hidden 8192, 8K tokens, fp16, the first layer's input norm (no residual yet):
    # x 128 MiB read, y 64 MiB written (~45 us)
    {"M": 8192, "N": 8192, "dtype": "fp16", "residual": False},
    # DeepSeek-V3 hidden 7168 (not a power of two: a masked chunk), 16K tokens, with the residual:
    # 3 x 224 MiB + 112 MiB (784 MiB, ~0.17 ms)
    {"M": 16384, "N": 7168, "dtype": "bf16", "residual": True},
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
    v = cfg["BLOCK_N"]
    if not isinstance(v, int) or v < 16 or v & (v - 1):
        raise ValueError(f"BLOCK_N={v} must be a power of two >= 16")
    if not isinstance(cfg["ROWS"], int) or cfg["ROWS"] < 1:
        raise ValueError(f"ROWS={cfg['ROWS']} must be a positive int")


def _check_point(point) -> None:
    for k in ("M", "N"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    if point.get("stride", point["N"]) < point["N"]:
        raise ValueError(f"stride={point['stride']} is below N={point['N']}")
    _elem_bytes(point.get("dtype", "bf16"))


def _single(N: int, cfg) -> bool:
    """The register-resident path: the whole row fits one BLOCK_N chunk."""
    return N <= cfg["BLOCK_N"]


def _kernel_args(x, residual, weight, y, s, ro, eps, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    Without a residual, Res and RO are x (never read / written: HAS_RESIDUAL is 0)."""
    M, N = x.shape
    has_res = residual is not None
    res = residual if has_res else x
    ro = ro if has_res else x
    return dict(X=x, Res=res, W=weight, Y=y, S=s, RO=ro, M=M, N=N, stride_xm=x.stride(0),
                stride_rm=res.stride(0), stride_ym=y.stride(0), stride_om=ro.stride(0), eps=eps,
                HAS_RESIDUAL=int(has_res), SINGLE=int(_single(N, cfg)), ROWS=cfg["ROWS"], BLOCK_N=cfg["BLOCK_N"])


def rms_norm_dynamic_per_token_quant(x, weight, eps=EPS, residual=None, *, BLOCK_N=4096, ROWS=2, num_warps=8,
                                     num_stages=1):
    """(y, s, r): RMSNorm of x [M, N] (+ residual [M, N] first) times weight [N], quantized per
    token to float8_e4m3fn: y [M, N] float8_e4m3fn, s [M, 1] fp32 (v ~= y * s), r the new
    residual [M, N] in x's dtype (None without a residual). x, residual, weight: one dtype,
    fp16 / bf16 / fp32; rows may be strided (N contiguous)."""
    import torch
    if x.dim() != 2 or weight.shape != (x.shape[1],) or (residual is not None and residual.shape != x.shape):
        raise ValueError(f"expected x [M, N], weight [N], residual [M, N] or None; got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}, {None if residual is None else tuple(residual.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    if weight.dtype != x.dtype or (residual is not None and residual.dtype != x.dtype):
        raise ValueError(f"x, weight, residual dtypes differ: {x.dtype}, {weight.dtype}, "
                         f"{None if residual is None else residual.dtype}")
    if not eps > 0:
        raise ValueError(f"eps={eps} must be > 0")
    cfg = {"BLOCK_N": BLOCK_N, "ROWS": ROWS}
    _check_cfg(cfg)
    M, N = x.shape
    if x.stride(1) != 1:
        x = x.contiguous()
    if residual is not None and residual.stride(1) != 1:
        residual = residual.contiguous()
    weight = weight.contiguous()
    y = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device)
    s = torch.empty((M, 1), dtype=torch.float32, device=x.device)
    ro = None if residual is None else torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M > 0 and N > 0:
        _kernel[(triton.cdiv(M, ROWS),)](**_kernel_args(x, residual, weight, y, s, ro, eps, cfg),
                                         num_warps=num_warps, num_stages=num_stages)
    return y, s, ro


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Hidden states as a decoder layer's look: N(0, 1) times a per-token magnitude (two
    decades), ~1 % outlier channels 8-24x larger (the same in every token), the residual
    N(0, 1) a larger stream, the weight around 1 (0.5-1.5, a trained norm's); ~1 % of the
    rows all-zero in x and residual (padding tokens: the least-scale path). x is a [:, :N]
    view of an [M, stride] buffer when the point has a stride."""
    import torch
    _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    buf = torch.randn((M, point.get("stride", N)), generator=gen, device=device)
    x = buf[:, :N]
    x *= torch.exp(torch.rand((M, 1), generator=gen, device=device) * 4.6 - 2.3)
    chan = torch.ones((N,), device=device)
    n_out = max(1, N // 100)
    idx = torch.randperm(N, generator=gen, device=device)[:n_out]
    chan[idx] = 8.0 + 16.0 * torch.rand((n_out,), generator=gen, device=device)
    x *= chan
    zero = torch.rand((M,), generator=gen, device=device) < 0.01
    x[zero] = 0.0
    w = 0.5 + torch.rand((N,), generator=gen, device=device)
    out = {"x": buf.to(dt)[:, :N], "weight": w.to(dt), "residual": None}
    if point.get("residual", False):
        res = 4.0 * torch.randn((M, N), generator=gen, device=device)
        res[zero] = 0.0
        out["residual"] = res.to(dt)
    return out


def launch(inputs, cfg):
    """y, the float8_e4m3fn values (the scales and the new residual are the wrapper's other outputs)."""
    y, _, _ = rms_norm_dynamic_per_token_quant(inputs["x"], inputs["weight"], EPS, inputs["residual"],
                                               BLOCK_N=cfg["BLOCK_N"], ROWS=cfg["ROWS"],
                                               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return y


def reference_norm(inputs):
    """(v, r): the normalised rows (r w) rstd in fp64 [M, N], from r = x (+ residual rounded to
    x's dtype, as the kernel stores and reads it) in fp64, and r in x's dtype."""
    import torch
    x = inputs["x"]
    r = x if inputs["residual"] is None else (x.float() + inputs["residual"].float()).to(x.dtype)
    rd = r.double()
    rstd = torch.rsqrt((rd * rd).mean(dim=1, keepdim=True) + EPS)
    return rd * inputs["weight"].double() * rstd, r


def reference_scales(inputs):
    """s [M, 1] fp32: max(max |v| / 448, 1 / (448 * 512)) in fp64, rounded once."""
    v, _ = reference_norm(inputs)
    return (v.abs().amax(dim=1, keepdim=True) / FP8_MAX).clamp(min=MIN_SCALE).float()


def reference(inputs):
    """y as fp32 [M, N]: fp64 torch on the same rounded inputs, v / s clamped to +-448 and rounded
    to e4m3fn (nearest even). It differs from the kernel's fp32 arithmetic by ~1e-6 relative, so
    a value within that of an fp8 rounding tie may land one fp8 step away."""
    import torch
    v, _ = reference_norm(inputs)
    s = reference_scales(inputs).double()
    return (v / s).clamp(-FP8_MAX, FP8_MAX).float().to(torch.float8_e4m3fn).float()


def dequantize(y, s):
    """y [M, N] fp8 times its row's scale (s [M, 1]), in fp32."""
    return y.float() * s.float()


def torch_baseline(inputs):
    """Eager torch, as vLLM's native fallback: the residual add in x's dtype, RMSNorm in fp32,
    (normed * weight), the row's absmax, clamp(min scale), x / s (a divide per element), clamp,
    cast to float8_e4m3fn (y only)."""
    import torch
    x = inputs["x"]
    r = x if inputs["residual"] is None else x + inputs["residual"]
    rf = r.float()
    v = rf * torch.rsqrt(rf.pow(2).mean(dim=1, keepdim=True) + EPS) * inputs["weight"].float()
    s = (v.abs().amax(dim=1, keepdim=True) / FP8_MAX).clamp(min=MIN_SCALE)
    return (v / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def bytes_moved(point) -> int:
    """x (and residual) read once, y (1 byte an element), the scales and (with a residual) the
    new residual written once, the weight read once. The second pass's re-read (an L2 hit)
    is not counted."""
    _check_point(point)
    M, N = point["M"], point["N"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    streams = 3 if point.get("residual", False) else 1
    return M * N * (streams * e + 1) + 4 * M + e * N


def flops(point) -> int:
    """Per element: the square-add, the weight multiply, abs-max, the rstd and 1/s multiplies,
    the two-sided clamp (7; +1 with the residual add); per row the rsqrt and two divides."""
    _check_point(point)
    M, N = point["M"], point["N"]
    return (8 if point.get("residual", False) else 7) * M * N + 3 * M


def grid(cfg, point) -> int:
    """One CTA per ROWS rows."""
    _check_point(point)
    return triton.cdiv(point["M"], cfg["ROWS"])


def loop_iterations(cfg, point) -> int:
    """Chunk steps per CTA: ROWS rows of one [BLOCK_N] step (the register path) or two walks of
    ceil(N / BLOCK_N) chunks (the two-pass path)."""
    _check_point(point)
    N = point["N"]
    if _single(N, cfg):
        return cfg["ROWS"]
    return cfg["ROWS"] * 2 * triton.cdiv(N, cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    with a real launch's strides (x an [M, stride] buffer's [:, :N] view)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    x = torch.empty((M, point.get("stride", N)), dtype=dt, device="meta")[:, :N]
    w = torch.empty((N,), dtype=dt, device="meta")
    y = torch.empty((M, N), dtype=torch.float8_e4m3fn, device="meta")
    s = torch.empty((M, 1), dtype=torch.float32, device="meta")
    res = ro = None
    if point.get("residual", False):
        res = torch.empty((M, N), dtype=dt, device="meta")
        ro = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, res, w, y, s, ro, EPS, cfg)
