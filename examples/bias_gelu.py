"""Bias + GELU (tanh approximation), the epilogue of an MLP's first GEMM (GPT-2 / GPT-NeoX /
Falcon style) run as its own kernel, a bare @triton.jit kernel + its launcher.

    h = x[m, n] + bias[n]
    y[m, n] = gelu_tanh(h) = 0.5 * h * (1 + tanh(sqrt(2/pi) * (h + 0.044715 * h^3)))

x: [M, N] fp16 / bf16 / fp32, N contiguous (rows may be strided: a view of a wider buffer);
bias: [N] in x's dtype; y: [M, N] in x's dtype, contiguous; fp32 math. One CTA owns BLOCK_M
rows and walks N in BLOCK_N chunks; per chunk it loads the bias chunk ([BLOCK_N], an L1 /
L2 hit after the first CTAs), the [BLOCK_M, BLOCK_N] x tile, and stores y. tanh is taken
through exp2: 0.5 * (1 + tanh(u)) = 1 / (1 + exp(-2u)), so y = h / (1 + exp2(-2u * log2 e))
(finite for every finite h: exp2 overflowing to inf gives y = -0). Masks give the M and N
tails.

Tunables: BLOCK_M, BLOCK_N (powers of two), num_warps, num_stages (no dot: the loads are
not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): M, N, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl

@triton.jit
def _kernel(X, Bias, Y, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    m_ok = rows < M
    cols = tl.arange(0, BLOCK_N)
    x_row = X + rows.to(tl.int64)[:, None] * stride_xm
    y_row = Y + rows.to(tl.int64)[:, None] * stride_ym
    for n0 in range(0, N, BLOCK_N):
        n = n0 + cols
        n_ok = n < N
        b = tl.load(Bias + n, mask=n_ok, other=0.0).to(tl.float32)
        ok = m_ok[:, None] & n_ok[None, :]
        h = tl.load(x_row + n[None, :], mask=ok, other=0.0).to(tl.float32) + b[None, :]
        z = h * (1.0 + 0.044715 * h * h) * 2.302208198  # 2u * log2(e): sqrt(2/pi) * 2 * log2(e) = 2.302208198
        y = h / (1.0 + tl.exp2(-z))
        tl.store(y_row + n[None, :], y.to(Y.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 4, "BLOCK_N": 1024, "num_warps": 4, "num_stages": 1}

# x and y 200-284 MiB each (4-6x the H200's 50 MB L2): pure streaming.
POINTS = [
    {"M": 8192, "N": 16384, "dtype": "bf16"},     # x 256 MiB: GPT-NeoX-style d=4096, 4d up-projection, 8k tokens
    {"M": 8192, "N": 18176, "dtype": "fp16"},     # x 284 MiB: Falcon-7B (4 x 4544; N not a power of two)
    {"M": 8192, "N": 6400, "dtype": "fp32"},      # x 200 MiB: GPT-2 XL (4 x 1600) in fp32
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, bias, y, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, Bias=bias, Y=y, M=x.shape[0], N=x.shape[1], stride_xm=x.stride(0), stride_ym=y.stride(0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"])


def bias_gelu(x, bias, *, BLOCK_M=4, BLOCK_N=1024, num_warps=4, num_stages=1):
    """gelu_tanh(x + bias) for x [M, N], bias [N], one dtype (fp16 / bf16 / fp32).
    Returns [M, N] in x's dtype."""
    import torch
    if x.dim() != 2 or bias.shape != (x.shape[1],):
        raise ValueError(f"expected x [M, N], bias [N]; got {tuple(x.shape)}, {tuple(bias.shape)}")
    if x.dtype != bias.dtype:
        raise ValueError(f"x, bias dtypes differ: {x.dtype}, {bias.dtype}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x dtype {x.dtype} is not fp16, bf16 or fp32")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    if x.stride(1) != 1:
        x = x.contiguous()
    bias = bias.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    grid = (triton.cdiv(x.shape[0], BLOCK_M),)
    _kernel[grid](**_kernel_args(x, bias, y, cfg), num_warps=num_warps, num_stages=num_stages)
    return y


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    x = (torch.randn((M, N), generator=gen, device=device) * 2.0).to(dt)
    bias = (torch.randn((N,), generator=gen, device=device) * 0.5).to(dt)
    return {"x": x, "bias": bias}


def launch(inputs, cfg):
    return bias_gelu(inputs["x"], inputs["bias"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                     num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch.nn.functional as F
    return F.gelu(inputs["x"].float() + inputs["bias"].float(), approximate="tanh")


def torch_baseline(inputs):
    """Eager add then F.gelu(approximate='tanh'), in x's dtype (two kernels)."""
    import torch.nn.functional as F
    return F.gelu(inputs["x"] + inputs["bias"], approximate="tanh")


def bytes_moved(point) -> int:
    """x read once, y written once, bias read once."""
    M, N = point["M"], point["N"]
    return (2 * M * N + N) * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Per element: the bias add; h*h, *0.044715, +1, *h, *const (the cubic); negate, exp2,
    +1, divide (the sigmoid form of 0.5 * (1 + tanh)): 10."""
    return 10 * point["M"] * point["N"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_M rows."""
    return triton.cdiv(point["M"], cfg["BLOCK_M"])


def loop_iterations(cfg, point) -> int:
    """N chunks per CTA."""
    return triton.cdiv(point["N"], cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    x = torch.empty((M, N), dtype=dt, device="meta")
    bias = torch.empty((N,), dtype=dt, device="meta")
    y = torch.empty((M, N), dtype=dt, device="meta")
    return _kernel_args(x, bias, y, cfg)
