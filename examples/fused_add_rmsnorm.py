"""Fused residual add + RMSNorm (vLLM's fused_add_rms_norm, the pre-norm of every decoder
layer after the first), a bare @triton.jit kernel + its launcher.

    r[m, :] = x[m, :] + residual[m, :]                          (the new residual, x's dtype)
    y[m, :] = r[m, :] * rsqrt(mean(r[m, :]^2) + eps) * weight   (x's dtype)

x, residual: [M, N] fp16 / bf16 (M tokens, N the hidden size), N contiguous (rows may be
strided); weight: [N] in x's dtype; eps 1e-6; fp32 math. The two outputs go to one
contiguous [2, M, N] buffer in x's dtype: out[0] = y, out[1] = r (vLLM writes r back over
residual in place; here it is a fresh tensor so the inputs survive repeated launches).

One CTA owns BLOCK_M rows and walks N twice in BLOCK_N chunks:
  pass 1 loads the [BLOCK_M, BLOCK_N] x and residual tiles, adds them in fp32, stores r
    (rounded to x's dtype) and accumulates r^2 of the unrounded fp32 sum elementwise in a
    [BLOCK_M, BLOCK_N] fp32 vector, reduced along N once after the loop (as vLLM's CUDA
    kernel: the statistics come from the fp32 sum);
  pass 2 re-reads the stored r (the rounded residual, as vLLM's second loop does) and the
    weight chunk, and stores y = r * rstd * weight. The re-read is of the CTA's own stores,
    at the same offsets with the same layout (the same thread), so program order makes them
    visible; it hits L2 while the CTA's rows (BLOCK_M x 8-24 KiB here) x the resident CTAs
    stay there.
Masks give the M and N tails.

Tunables: BLOCK_M (rows per CTA), BLOCK_N (powers of two), num_warps, num_stages (no dot:
the loads are not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): M, N, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def _kernel(X, Res, W, Y, RO, M, N, stride_xm, stride_rm, stride_ym, stride_om, eps,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rows < M
    rows64 = rows.to(tl.int64)[:, None]
    cols = tl.arange(0, BLOCK_N)
    x_row = X + rows64 * stride_xm
    r_row = Res + rows64 * stride_rm
    y_row = Y + rows64 * stride_ym
    o_row = RO + rows64 * stride_om

    # pass 1: r = x + residual, stored; sum of squares of the fp32 r
    sq = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for n0 in range(0, N, BLOCK_N):
        n = n0 + cols
        ok = m_ok[:, None] & (n < N)[None, :]
        x = tl.load(x_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
        res = tl.load(r_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
        r = x + res
        tl.store(o_row + n[None, :], r.to(RO.dtype.element_ty), mask=ok)
        sq += r * r
    rstd = tl.rsqrt(tl.sum(sq, axis=1) / N + eps)

    # pass 2: y = r * rstd * weight, from the stored (rounded) r
    for n0 in range(0, N, BLOCK_N):
        n = n0 + cols
        n_ok = n < N
        ok = m_ok[:, None] & n_ok[None, :]
        w = tl.load(W + n, mask=n_ok, other=0.0).to(tl.float32)
        r = tl.load(o_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
        y = r * rstd[:, None] * w[None, :]
        tl.store(y_row + n[None, :], y.to(Y.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 1, "BLOCK_N": 1024, "num_warps": 4, "num_stages": 1}

# x, residual read, y and r written: 4 x M x N x 2 bytes = 384-512 MiB (8-11x the H200's
# 50 MB L2); 16384, 8192 and 4096 rows (one CTA each at BLOCK_M = 1).
POINTS = [
    {"M": 16384, "N": 4096, "dtype": "bf16"},     # 512 MiB: Llama-3-8B / Mistral-7B hidden, a 16K-token prefill
    {"M": 8192, "N": 8192, "dtype": "fp16"},      # 512 MiB: Llama-3-70B hidden, 8K tokens
    {"M": 4096, "N": 12288, "dtype": "bf16"},     # 384 MiB: GPT-3-175B-class hidden (24 KiB rows), 4K tokens
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, residual, weight, out, eps, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    out: the [2, M, N] buffer; y is out[0], the new residual out[1]."""
    y, ro = out[0], out[1]
    return dict(X=x, Res=residual, W=weight, Y=y, RO=ro, M=x.shape[0], N=x.shape[1],
                stride_xm=x.stride(0), stride_rm=residual.stride(0), stride_ym=y.stride(0),
                stride_om=ro.stride(0), eps=eps, BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"])


def fused_add_rms_norm(x, residual, weight, eps=EPS, *, out=None, BLOCK_M=1, BLOCK_N=1024, num_warps=4,
                       num_stages=1):
    """(y, r) with r = x + residual and y = rms_norm(r) * weight, for x and residual [M, N], weight
    [N], one dtype (fp16 / bf16). Both are views of one [2, M, N] buffer (`out` if given,
    contiguous, x's dtype): y = out[0], r = out[1]."""
    import torch
    if x.dim() != 2 or residual.shape != x.shape or weight.shape != (x.shape[1],):
        raise ValueError(f"expected x [M, N], residual [M, N], weight [N]; got {tuple(x.shape)}, "
                         f"{tuple(residual.shape)}, {tuple(weight.shape)}")
    if not x.dtype == residual.dtype == weight.dtype:
        raise ValueError(f"x, residual, weight dtypes differ: {x.dtype}, {residual.dtype}, {weight.dtype}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x dtype {x.dtype} is not fp16 or bf16")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    M, N = x.shape
    if out is None:
        out = torch.empty((2, M, N), dtype=x.dtype, device=x.device)
    elif out.shape != (2, M, N) or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous [2, {M}, {N}] {x.dtype} tensor; got "
                         f"{list(out.shape)} {out.dtype}")
    if x.numel() == 0:
        return out[0], out[1]
    if x.stride(1) != 1:
        x = x.contiguous()
    if residual.stride(1) != 1:
        residual = residual.contiguous()
    weight = weight.contiguous()
    _kernel[(triton.cdiv(M, BLOCK_M),)](**_kernel_args(x, residual, weight, out, eps, cfg),
                                        num_warps=num_warps, num_stages=num_stages)
    return out[0], out[1]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    # hidden states of unit scale, a residual stream a few times larger (it grows with depth),
    # with a per-token scale so rows have different rms
    x = torch.randn((M, N), generator=gen, device=device)
    residual = torch.randn((M, N), generator=gen, device=device) * 3.0
    residual *= 0.5 + torch.rand((M, 1), generator=gen, device=device)
    weight = 1.0 + 0.2 * torch.randn((N,), generator=gen, device=device)
    return {"x": x.to(dt), "residual": residual.to(dt), "weight": weight.to(dt)}


def launch(inputs, cfg):
    """The [2, M, N] output: out[0] = y, out[1] = the new residual."""
    import torch
    x = inputs["x"]
    out = torch.empty((2,) + tuple(x.shape), dtype=x.dtype, device=x.device)
    fused_add_rms_norm(x, inputs["residual"], inputs["weight"], EPS, out=out, BLOCK_M=cfg["BLOCK_M"],
                       BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return out


def reference(inputs):
    """fp32: stack(y, r) with r = x + residual and y from that fp32 r."""
    import torch
    r = inputs["x"].float() + inputs["residual"].float()
    y = r * torch.rsqrt(r.pow(2).mean(dim=-1, keepdim=True) + EPS) * inputs["weight"].float()
    return torch.stack((y, r))


def torch_baseline(inputs):
    """Eager torch in x's dtype, as vLLM's RMSNorm.forward_native with a residual: r = x +
    residual in x's dtype, y = (r.float() * rsqrt(mean(r.float()^2) + eps)).to(dtype) * weight.
    Written into one [2, M, N] buffer like the kernel's."""
    import torch
    x, res, w = inputs["x"], inputs["residual"], inputs["weight"]
    out = torch.empty((2,) + tuple(x.shape), dtype=x.dtype, device=x.device)
    r = torch.add(x, res, out=out[1])
    rf = r.float()
    rf = rf * torch.rsqrt(rf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    torch.mul(rf.to(x.dtype), w, out=out[0])
    return out


def bytes_moved(point) -> int:
    """x and residual read once, y and the new residual written once, weight read once. Pass 2's
    re-read of the stored residual (and each CTA's re-read of weight) is NOT counted (the
    kernel's choice, and an L2 hit while the CTA's rows stay resident)."""
    M, N = point["M"], point["N"]
    return (4 * M * N + N) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Per element: pass 1's add and square's multiply-add (3), pass 2's two multiplies (2).
    The per-row reduction tail and rsqrt are not counted."""
    return 5 * point["M"] * point["N"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_M rows."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"])


def loop_iterations(cfg, point) -> int:
    """Both passes together: each walks N in BLOCK_N chunks."""
    return 2 * triton.cdiv(point["N"], cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    x = torch.empty((M, N), dtype=dt, device="meta")
    residual = torch.empty((M, N), dtype=dt, device="meta")
    weight = torch.empty((N,), dtype=dt, device="meta")
    out = torch.empty((2, M, N), dtype=dt, device="meta")
    return _kernel_args(x, residual, weight, out, EPS, cfg)
