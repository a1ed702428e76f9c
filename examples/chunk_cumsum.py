"""Inclusive cumulative sum along the last axis (the log-decay cumsum of linear-attention /
SSM kernels: GLA's and Mamba-2's cumsum of log gates), a bare @triton.jit kernel + its
launcher.

    y[r, t] = sum_{s <= t} x[r, s]

x: [R, L] fp16 / bf16 / fp32, L contiguous (rows may be strided: a view of a wider buffer);
y: [R, L] always fp32, contiguous (a log-cumsum grows like L and is exponentiated
downstream, so it is kept in fp32 as in the SSM kernels); fp32 accumulation. One CTA owns
BLOCK_R rows and walks L in BLOCK_L chunks. Per chunk: one masked [BLOCK_R, BLOCK_L] load,
`tl.cumsum` along the chunk, plus the per-row prefix carried from the earlier chunks (an
fp32 [BLOCK_R] register vector), one store; the new prefix is y's last column (picked out
with a where + row sum: an fp32 x fed straight to both tl.cumsum and tl.sum(x) failed to
compile with triton 3.6.0 for sm_90). Each element is read once and written once; masks
give the R and L tails (masked lanes load 0, so they add nothing to the prefix).

Tunables: BLOCK_R, BLOCK_L (powers of two), num_warps, num_stages (no dot: the loads are
not pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): R, L, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Y, R, L, stride_xr, stride_yr, BLOCK_R: tl.constexpr, BLOCK_L: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    r_ok = rows < R
    cols = tl.arange(0, BLOCK_L)
    x_row = X + rows.to(tl.int64)[:, None] * stride_xr
    y_row = Y + rows.to(tl.int64)[:, None] * stride_yr
    carry = tl.zeros([BLOCK_R], dtype=tl.float32)
    for l0 in range(0, L, BLOCK_L):
        t = l0 + cols
        ok = r_ok[:, None] & (t < L)[None, :]
        x = tl.load(x_row + t[None, :], mask=ok, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(y_row + t[None, :], y, mask=ok)
        carry = tl.sum(tl.where((cols == BLOCK_L - 1)[None, :], y, 0.0), axis=1)   # y's last column


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
TUNABLES = ("BLOCK_R", "BLOCK_L", "num_warps", "num_stages")
BASELINE = {"BLOCK_R": 4, "BLOCK_L": 512, "num_warps": 4, "num_stages": 1}

# x 128-512 MiB in, y 256-512 MiB out (fp32): pure streaming, 7.7-20x the H200's 50 MB L2.
POINTS = [
    {"R": 4096, "L": 16384, "dtype": "bf16"},     # x 128 MiB, y 256 MiB: long rows (32 heads x 128 seqs, 16k tokens)
    {"R": 262144, "L": 512, "dtype": "fp16"},     # x 256 MiB, y 512 MiB: many short rows (chunked scan, 512-chunks)
    {"R": 32768, "L": 4096, "dtype": "fp32"},     # x 512 MiB, y 512 MiB: fp32 gates, 4k tokens
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
    for name in ("BLOCK_R", "BLOCK_L"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _kernel_args(x, y, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, Y=y, R=x.shape[0], L=x.shape[1], stride_xr=x.stride(0), stride_yr=y.stride(0),
                BLOCK_R=cfg["BLOCK_R"], BLOCK_L=cfg["BLOCK_L"])


def chunk_cumsum(x, *, BLOCK_R=4, BLOCK_L=512, num_warps=4, num_stages=1):
    """Inclusive cumsum of x [R, L] (fp16 / bf16 / fp32) along L, fp32 accumulation.
    Returns [R, L] fp32."""
    import torch
    if x.dim() != 2:
        raise ValueError(f"expected x [R, L]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x dtype {x.dtype} is not fp16, bf16 or fp32")
    cfg = {"BLOCK_R": BLOCK_R, "BLOCK_L": BLOCK_L}
    _check_cfg(cfg)
    if x.stride(1) != 1:
        x = x.contiguous()
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(x.shape[0], BLOCK_R),)
    _kernel[grid](**_kernel_args(x, y, cfg), num_warps=num_warps, num_stages=num_stages)
    return y


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x = log of sigmoid gates (negative, as the log-decays of GLA / Mamba-2), in the point's dtype."""
    import torch
    import torch.nn.functional as F
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    x = F.logsigmoid(torch.randn((point["R"], point["L"]), generator=gen, device=device) + 2.0)
    return {"x": x.to(dt)}


def launch(inputs, cfg):
    return chunk_cumsum(inputs["x"], BLOCK_R=cfg["BLOCK_R"], BLOCK_L=cfg["BLOCK_L"],
                        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    import torch
    return torch.cumsum(inputs["x"].float(), dim=-1)


def torch_baseline(inputs):
    """Eager torch.cumsum with an fp32 result (one kernel; no separate cast of x)."""
    import torch
    return torch.cumsum(inputs["x"], dim=-1, dtype=torch.float32)


def bytes_moved(point) -> int:
    """x read once in its dtype, y written once in fp32."""
    return point["R"] * point["L"] * (_elem_bytes(point.get("dtype", "bf16")) + 4)


def flops(point) -> int:
    """Per element: the scan's add, the carried prefix's add, the last-column pick's add."""
    return 3 * point["R"] * point["L"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_R rows."""
    return triton.cdiv(point["R"], cfg["BLOCK_R"])


def loop_iterations(cfg, point) -> int:
    """L chunks per CTA."""
    return triton.cdiv(point["L"], cfg["BLOCK_L"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    R, L = point["R"], point["L"]
    x = torch.empty((R, L), dtype=dt, device="meta")
    y = torch.empty((R, L), dtype=torch.float32, device="meta")
    return _kernel_args(x, y, cfg)
