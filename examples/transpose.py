"""Batched 2-D out-of-place transpose, a bare @triton.jit kernel + its launcher.

    out[b, n, m] = x[b, m, n]

x: [B, M, N] fp16 / bf16 / fp32, N contiguous (batch and row strides free); out: [B, N, M]
in x's dtype, contiguous. One CTA owns one BLOCK_N-wide column strip of TILES_PER_CTA
consecutive [BLOCK_M, BLOCK_N] tiles along M of one batch and walks them in order: each
step loads a tile with n fastest (coalesced reads of x's rows), turns it with `tl.trans`
(a register -> shared -> register layout change the compiler inserts) and stores the
[BLOCK_N, BLOCK_M] tile with m fastest (coalesced writes of out's rows). Masks give the M
and N tails; the last strip's loop stops at M. Row offsets are int64.

Tunables: BLOCK_M, BLOCK_N (powers of two), TILES_PER_CTA (M tiles per CTA, >= 1),
num_warps, num_stages (no dot: the loads are not pipelined, so num_stages may change
nothing in the cubin).
Problem parameters (a workload point): B, M, N, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, OUT, M, N, stride_xb, stride_xm, stride_ob, stride_on,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TILES_PER_CTA: tl.constexpr):
    pid = tl.program_id(0)
    strips_n = tl.cdiv(N, BLOCK_N)
    strips_m = tl.cdiv(M, BLOCK_M * TILES_PER_CTA)
    pid_n = pid % strips_n
    rest = pid // strips_n
    pid_m = rest % strips_m
    b = (rest // strips_m).to(tl.int64)

    ns = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = ns < N
    x_cols = X + b * stride_xb + ns[None, :]                       # [1, BLOCK_N]
    o_rows = OUT + b * stride_ob + ns.to(tl.int64)[:, None] * stride_on   # [BLOCK_N, 1]
    mr = tl.arange(0, BLOCK_M)
    m_begin = pid_m * (BLOCK_M * TILES_PER_CTA)
    m_end = tl.minimum(m_begin + BLOCK_M * TILES_PER_CTA, M)
    for m0 in range(m_begin, m_end, BLOCK_M):
        ms = m0 + mr
        m_ok = ms < M
        tile = tl.load(x_cols + ms.to(tl.int64)[:, None] * stride_xm, mask=m_ok[:, None] & n_ok[None, :])
        tl.store(o_rows + ms[None, :], tl.trans(tile), mask=n_ok[:, None] & m_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_M", "BLOCK_N", "TILES_PER_CTA", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 64, "TILES_PER_CTA": 1, "num_warps": 4, "num_stages": 1}

# x 112-256 MiB read and the same written (2.3-5.4x the H200's 50 MB L2): pure streaming.
POINTS = [
    {"B": 1, "M": 8192, "N": 8192, "dtype": "fp32"},      # a square fp32 matrix: 256 MiB each way
    {"B": 1, "M": 4096, "N": 14336, "dtype": "bf16"},     # a Llama-3-8B MLP weight [4096, 14336]: 112 MiB each way
    {"B": 256, "M": 2048, "N": 128, "dtype": "fp16"},     # K -> K^T per (batch 8 x 32 heads), 2k tokens, D 128: 128 MiB
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")
    if cfg["TILES_PER_CTA"] < 1:
        raise ValueError(f"TILES_PER_CTA={cfg['TILES_PER_CTA']} must be >= 1")


def _kernel_args(x, out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, OUT=out, M=x.shape[1], N=x.shape[2], stride_xb=x.stride(0), stride_xm=x.stride(1),
                stride_ob=out.stride(0), stride_on=out.stride(1), BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                TILES_PER_CTA=cfg["TILES_PER_CTA"])


def _grid(B: int, M: int, N: int, cfg) -> int:
    return B * triton.cdiv(M, cfg["BLOCK_M"] * cfg["TILES_PER_CTA"]) * triton.cdiv(N, cfg["BLOCK_N"])


def transpose(x, *, BLOCK_M=64, BLOCK_N=64, TILES_PER_CTA=1, num_warps=4, num_stages=1):
    """x [M, N] or [B, M, N] (fp16 / bf16 / fp32) -> a new contiguous [N, M] or [B, N, M]."""
    import torch
    if x.dim() not in (2, 3):
        raise ValueError(f"expected x [M, N] or [B, M, N]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16, bf16 or fp32; got {x.dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "TILES_PER_CTA": TILES_PER_CTA}
    _check_cfg(cfg)
    x3 = x if x.dim() == 3 else x[None]
    if x3.stride(2) != 1:
        x3 = x3.contiguous()
    B, M, N = x3.shape
    out = torch.empty((B, N, M), dtype=x.dtype, device=x.device)
    if B * M * N > 0:
        _kernel[(_grid(B, M, N, cfg),)](**_kernel_args(x3, out, cfg), num_warps=num_warps, num_stages=num_stages)
    return out if x.dim() == 3 else out[0]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    x = torch.randn((point["B"], point["M"], point["N"]), generator=gen, device=device).to(dt)
    return {"x": x}


def launch(inputs, cfg):
    return transpose(inputs["x"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                     TILES_PER_CTA=cfg["TILES_PER_CTA"], num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    return inputs["x"].float().transpose(1, 2).contiguous()


def torch_baseline(inputs):
    """Eager torch: a transposed view made contiguous (one copy kernel)."""
    return inputs["x"].transpose(1, 2).contiguous()


def bytes_moved(point) -> int:
    """x read once, out written once."""
    return 2 * point["B"] * point["M"] * point["N"] * _elem_bytes(point.get("dtype", "bf16"))


def flops(point) -> int:
    """A copy: no arithmetic."""
    return 0


def grid(cfg, point) -> int:
    """One CTA per (batch, strip of TILES_PER_CTA M tiles, N tile)."""
    return _grid(point["B"], point["M"], point["N"], cfg)


def loop_iterations(cfg, point) -> int:
    """Tiles per CTA: TILES_PER_CTA, fewer when M has fewer tiles (the most any CTA walks)."""
    return min(cfg["TILES_PER_CTA"], triton.cdiv(point["M"], cfg["BLOCK_M"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    B, M, N = point["B"], point["M"], point["N"]
    x = torch.empty((B, M, N), dtype=dt, device="meta")
    out = torch.empty((B, N, M), dtype=dt, device="meta")
    return _kernel_args(x, out, cfg)
