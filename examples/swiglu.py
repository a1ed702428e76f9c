"""Fused SwiGLU activation, a bare @triton.jit kernel + its launcher.

    out[r, :] = silu(gate[r, :]) * up[r, :],   silu(g) = g / (1 + exp(-g))

x: [M, 2N] fp16 / bf16 / fp32, the output of a fused gate/up projection: gate is
x[:, :N], up is x[:, N:] (the layout of an LLM's MLP). out: [M, N] like x. One CTA per
row walks it in BLOCK_N chunks: per chunk it loads the gate and the up halves, computes
the sigmoid in fp32 (one exp2 and one division per element) and stores. A single
pass, no reduction, nothing carried between chunks: a pure streaming kernel whose
only non-memory work is the elementwise exp; 1.5 bytes read per byte written.

Tunables: BLOCK_N (a power of two), num_warps, num_stages (no dot in the loop:
num_stages is the compiler's to ignore, as for rmsnorm).
Problem parameters (a workload point): M, N (the width of out, half of x's), dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, OUT, stride_x, stride_out, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    gate_row = X + row * stride_x
    up_row = gate_row + n_cols
    out_row = OUT + row * stride_out
    offs = tl.arange(0, BLOCK_N)
    LOG2E: tl.constexpr = 1.4426950408889634

    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + offs
        ok = cols < n_cols
        g = tl.load(gate_row + cols, mask=ok, other=0.0).to(tl.float32)
        u = tl.load(up_row + cols, mask=ok, other=0.0).to(tl.float32)
        silu = g / (1.0 + tl.exp2(-g * LOG2E))
        tl.store(out_row + cols, (silu * u).to(OUT.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_N", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 1024, "num_warps": 4, "num_stages": 2}

# One launch reads x (2N per row) and writes out (N per row): 528-768 MiB (10-16x the
# H200's 50 MB L2), 0.11-0.17 ms at 4.8 TB/s.
POINTS = [
    {"M": 8192, "N": 14336, "dtype": "bf16"},     # 672 MiB (a Llama-3-8B MLP over 8k tokens)
    {"M": 32768, "N": 4096, "dtype": "fp16"},     # 768 MiB (short rows: many CTAs, 1-16 chunks)
    {"M": 8192, "N": 5632, "dtype": "fp32"},      # 528 MiB (N no power of two: a masked tail chunk)
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    return 4 if name == "fp32" else 2


def _kernel_args(x, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, OUT=out, stride_x=x.stride(0), stride_out=out.stride(0), n_cols=out.shape[1],
                BLOCK_N=cfg["BLOCK_N"])


def swiglu(x, *, BLOCK_N: int = 1024, num_warps: int = 4, num_stages: int = 2):
    """silu(x[:, :N]) * x[:, N:] for x [M, 2N] (rows may be strided, columns contiguous).
    Returns [M, N] in x's dtype."""
    import torch
    if x.dim() != 2 or x.shape[1] % 2:
        raise ValueError(f"expected x [M, 2N]; got {tuple(x.shape)}")
    if BLOCK_N < 1 or BLOCK_N & (BLOCK_N - 1):
        raise ValueError(f"BLOCK_N={BLOCK_N} must be a power of two")
    if x.stride(1) != 1:
        x = x.contiguous()
    out = torch.empty((x.shape[0], x.shape[1] // 2), dtype=x.dtype, device=x.device)
    _kernel[(x.shape[0],)](**_kernel_args(x, out, {"BLOCK_N": BLOCK_N}), num_warps=num_warps,
                           num_stages=num_stages)
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    # pre-activations with a spread of 2: both tails of the sigmoid are exercised
    x = (2.0 * torch.randn((point["M"], 2 * point["N"]), generator=gen, device=device)).to(dt)
    return {"x": x}


def launch(inputs, cfg):
    return swiglu(inputs["x"], BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch
    gate, up = inputs["x"].float().chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def torch_baseline(inputs):
    """Eager torch in the inputs' dtype (two kernels: silu, then the product)."""
    import torch
    gate, up = inputs["x"].chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def bytes_moved(point) -> int:
    """x (gate and up) read once, out written once."""
    return 3 * point["M"] * point["N"] * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """Per output element: negate-scale, exp2, add, divide, multiply."""
    return 5 * point["M"] * point["N"]


def grid(cfg, point) -> int:
    return point["M"]


def loop_iterations(cfg, point) -> int:
    """The one column loop: ceil(N / BLOCK_N)."""
    return triton.cdiv(point["N"], cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    x = torch.empty((point["M"], 2 * point["N"]), dtype=dt, device="meta")
    out = torch.empty((point["M"], point["N"]), dtype=dt, device="meta")
    return _kernel_args(x, out, cfg)
