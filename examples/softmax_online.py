"""Row softmax with a column loop (online max / sum), a bare @triton.jit kernel + its launcher.

    y[r, :] = exp(x[r, :] - max(x[r, :])) / sum(exp(x[r, :] - max(x[r, :])))

x: [M, N] fp16 / bf16 / fp32, y like x. One CTA per row; rows longer than one block
(a 32k-128k vocabulary). Pass 1 walks the row in BLOCK_N chunks keeping a running max m
and a running sum s of exp(x - m), rescaled by exp2(m_old - m_new) when the max grows
(two cross-warp reductions per chunk: the max and the sum). Pass 2 re-reads the chunks
(from L2, mostly) and stores exp(x - m) / s. Unlike rmsnorm, every chunk pays
exponentials and two block reductions: non-tensor work inside a memory-bound loop.

Tunables: BLOCK_N (a power of two), num_warps, num_stages.
Problem parameters (a workload point): M, N, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Y, stride_x, stride_y, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = X + row * stride_x
    y_row = Y + row * stride_y
    offs = tl.arange(0, BLOCK_N)
    LOG2E: tl.constexpr = 1.4426950408889634

    # pass 1: running max and sum of exp, in log2 units
    m = -float("inf")
    s = 0.0
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32) * LOG2E
        m_new = tl.maximum(m, tl.max(x, 0))          # finite: every chunk holds a column
        s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new), 0)
        m = m_new
    inv_s = 1.0 / s

    # pass 2: normalize
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + offs
        ok = cols < n_cols
        x = tl.load(x_row + cols, mask=ok, other=-float("inf")).to(tl.float32) * LOG2E
        tl.store(y_row + cols, (tl.exp2(x - m) * inv_s).to(Y.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 2048, "num_warps": 8, "num_stages": 2}

# One launch reads x and writes y: 512 MiB - 1 GiB (10-20x the H200's 50 MB L2).
POINTS = [
    {"M": 16384, "N": 8192, "dtype": "bf16"},      # 512 MiB
    {"M": 4096, "N": 32768, "dtype": "fp16"},      # 512 MiB
    {"M": 1024, "N": 131072, "dtype": "fp32"},     # 1 GiB (a 128k vocabulary: 1,024 long rows)
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _kernel_args(x, y, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, Y=y, stride_x=x.stride(0), stride_y=y.stride(0), n_cols=x.shape[1], BLOCK_N=cfg["BLOCK_N"])


def softmax(x, *, BLOCK_N: int = 2048, num_warps: int = 8, num_stages: int = 2):
    """Softmax over the last dim of x [M, N] (N >= 1; rows may be strided). Returns x's dtype."""
    import torch
    if x.dim() != 2 or x.shape[1] < 1:
        raise ValueError(f"expected x [M, N] with N >= 1; got {tuple(x.shape)}")
    if BLOCK_N < 1 or BLOCK_N & (BLOCK_N - 1):
        raise ValueError(f"BLOCK_N={BLOCK_N} must be a power of two")
    if x.stride(1) != 1:
        x = x.contiguous()
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _kernel[(x.shape[0],)](**_kernel_args(x, y, {"BLOCK_N": BLOCK_N}), num_warps=num_warps, num_stages=num_stages)
    return y


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    # logits with a spread like a language model's (std 3): the max matters
    x = (3.0 * torch.randn((point["M"], point["N"]), generator=gen, device=device)).to(dt)
    return {"x": x}


def launch(inputs, cfg):
    return softmax(inputs["x"], BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch
    return torch.softmax(inputs["x"].float(), dim=-1)


def torch_baseline(inputs):
    import torch
    return torch.softmax(inputs["x"], dim=-1)


def bytes_moved(point) -> int:
    """x read once, y written once (pass 2's re-read of x is L2's to serve)."""
    return 2 * point["M"] * point["N"] * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Per element: scale, max, subtract, exp2, add (pass 1); scale, subtract, exp2, multiply (pass 2)."""
    return 9 * point["M"] * point["N"]


def grid(cfg, point) -> int:
    return point["M"]


def loop_iterations(cfg, point) -> int:
    """Both column loops together: 2 x ceil(N / BLOCK_N)."""
    return 2 * triton.cdiv(point["N"], cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    x = torch.empty((point["M"], point["N"]), dtype=dt, device="meta")
    return _kernel_args(x, torch.empty_like(x), cfg)
