"""LayerNorm backward over the last dim (what a training framework runs for every LayerNorm of
a transformer), a bare @triton.jit kernel + a partial-sum reduction kernel + the launcher.

    xhat = (x - mean) * rstd,   g = w * dy                          (per row, fp32)
    dx   = rstd * (g - (xhat * mean(g * xhat) + mean(g)))           (x's dtype)
    dw   = sum over rows of dy * xhat,   db = sum over rows of dy    (fp32)

x, dy: [M, N] fp16 / bf16 (M tokens, N the hidden size), N contiguous (rows may be strided);
w: [N] (fp16 / bf16 / fp32); mean, rstd: [M] fp32, as the forward saved them. dx: [M, N] in
x's dtype; dw, db: [N] fp32.

``_kernel``: CTA p owns ROWS_PER_CTA consecutive rows (grid cdiv(M, ROWS_PER_CTA)) and walks
them BLOCK_M rows at a time, as [BLOCK_M, BLOCK_N] tiles. Its dw / db partial sums over its
rows go to row p of an fp32 workspace [2, P, N] (P = the grid; plain stores, no atomics);
``_reduce_kernel`` then sums the P partials of each column in a fixed order (deterministic).
Two paths, picked by the launcher (the constexpr ONE_CHUNK = BLOCK_N >= N):
  one chunk: the whole row is one tile. w is loaded once; per row tile x and dy are loaded
    once, the two row means reduced, dx stored, and dy * xhat, dy summed over the tile's rows
    into [BLOCK_N] fp32 accumulators held in registers across the CTA's rows; one store of
    the partial at the end.
  chunked (BLOCK_N < N): per row tile two column passes: pass 1 loads x, dy, w chunk by
    chunk and accumulates g * xhat and g elementwise ([BLOCK_M, BLOCK_N] fp32), reduced
    along N once after the loop; pass 2 re-loads the chunks (L2 / L1 hits while the tile's
    BLOCK_M rows are resident), stores dx, and adds the chunk's dy * xhat, dy (summed over the
    BLOCK_M rows) into the CTA's own workspace row: the first row tile stores, later ones
    load-add-store. A CTA barrier before each pass 2 orders the previous tile's partial
    stores (by whichever thread owns the column) before this tile's loads.
Masks give the M tail (a CTA's last tile) and the N tail.

Tunables: ROWS_PER_CTA (a multiple of BLOCK_M; the workspace has cdiv(M, ROWS_PER_CTA) rows),
BLOCK_M, BLOCK_N (powers of two), num_warps, num_stages (no dot: the loads are not
pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): M, N, dtype.
Timing covers both kernels; grid / loop_iterations describe ``_kernel``.
"""

from __future__ import annotations

import triton
import triton.language as tl

EPS = 1e-5                 # the forward's eps (make_inputs uses it for the saved rstd)
REDUCE_BLOCK_P = 64        # _reduce_kernel: partial rows per step
REDUCE_BLOCK_N = 32        # _reduce_kernel: columns per CTA (128 B of fp32 per partial row)


@triton.jit
def _kernel(X, DY, W, MEAN, RSTD, DX, DWP, DBP, M, N, stride_xm, stride_dym, stride_dxm, stride_p,
            ROWS_PER_CTA: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ONE_CHUNK: tl.constexpr):
    pid = tl.program_id(0)
    row_first = pid * ROWS_PER_CTA
    row_end = tl.minimum(row_first + ROWS_PER_CTA, M)
    ms = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    dw_part = DWP + pid.to(tl.int64) * stride_p
    db_part = DBP + pid.to(tl.int64) * stride_p

    if ONE_CHUNK:
        n_ok = cols < N
        w = tl.load(W + cols, mask=n_ok, other=0.0).to(tl.float32)
        dw = tl.zeros([BLOCK_N], tl.float32)
        db = tl.zeros([BLOCK_N], tl.float32)
        for r0 in range(row_first, row_end, BLOCK_M):
            rows = r0 + ms
            m_ok = rows < row_end
            r64 = rows.to(tl.int64)[:, None]
            ok = m_ok[:, None] & n_ok[None, :]
            mean = tl.load(MEAN + rows, mask=m_ok, other=0.0)
            rstd = tl.load(RSTD + rows, mask=m_ok, other=0.0)
            x = tl.load(X + r64 * stride_xm + cols[None, :], mask=ok, other=0.0).to(tl.float32)
            dy = tl.load(DY + r64 * stride_dym + cols[None, :], mask=ok, other=0.0).to(tl.float32)
            xhat = tl.where(ok, (x - mean[:, None]) * rstd[:, None], 0.0)
            g = dy * w[None, :]
            c1 = tl.sum(g * xhat, axis=1) / N
            c2 = tl.sum(g, axis=1) / N
            dx = (g - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
            tl.store(DX + r64 * stride_dxm + cols[None, :], dx.to(DX.dtype.element_ty), mask=ok)
            dw += tl.sum(dy * xhat, axis=0)
            db += tl.sum(dy, axis=0)
        tl.store(dw_part + cols, dw, mask=n_ok)
        tl.store(db_part + cols, db, mask=n_ok)
    else:
        for r0 in range(row_first, row_end, BLOCK_M):
            rows = r0 + ms
            m_ok = rows < row_end
            r64 = rows.to(tl.int64)[:, None]
            x_row = X + r64 * stride_xm
            dy_row = DY + r64 * stride_dym
            dx_row = DX + r64 * stride_dxm
            mean = tl.load(MEAN + rows, mask=m_ok, other=0.0)
            rstd = tl.load(RSTD + rows, mask=m_ok, other=0.0)

            # pass 1: the two row sums, g * xhat and g
            a1 = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
            a2 = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
            for n0 in range(0, N, BLOCK_N):
                n = n0 + cols
                n_ok = n < N
                ok = m_ok[:, None] & n_ok[None, :]
                w = tl.load(W + n, mask=n_ok, other=0.0).to(tl.float32)
                x = tl.load(x_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
                dy = tl.load(dy_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
                xhat = tl.where(ok, (x - mean[:, None]) * rstd[:, None], 0.0)
                g = dy * w[None, :]
                a1 += g * xhat
                a2 += g
            c1 = tl.sum(a1, axis=1) / N
            c2 = tl.sum(a2, axis=1) / N

            # pass 2: dx, and this tile's dw / db into the CTA's workspace row
            tl.debug_barrier()
            p_end = tl.where(r0 > row_first, N, 0)      # 0: the first tile stores, loads nothing
            for n0 in range(0, N, BLOCK_N):
                n = n0 + cols
                n_ok = n < N
                ok = m_ok[:, None] & n_ok[None, :]
                w = tl.load(W + n, mask=n_ok, other=0.0).to(tl.float32)
                x = tl.load(x_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
                dy = tl.load(dy_row + n[None, :], mask=ok, other=0.0).to(tl.float32)
                xhat = tl.where(ok, (x - mean[:, None]) * rstd[:, None], 0.0)
                g = dy * w[None, :]
                dx = (g - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
                tl.store(dx_row + n[None, :], dx.to(DX.dtype.element_ty), mask=ok)
                p_ok = n < p_end
                dw = tl.load(dw_part + n, mask=p_ok, other=0.0) + tl.sum(dy * xhat, axis=0)
                db = tl.load(db_part + n, mask=p_ok, other=0.0) + tl.sum(dy, axis=0)
                tl.store(dw_part + n, dw, mask=n_ok)
                tl.store(db_part + n, db, mask=n_ok)


@triton.jit
def _reduce_kernel(DWP, DBP, DW, DB, P, N, stride_p, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = cols < N
    ps = tl.arange(0, BLOCK_P)
    acc_w = tl.zeros([BLOCK_P, BLOCK_N], tl.float32)
    acc_b = tl.zeros([BLOCK_P, BLOCK_N], tl.float32)
    for p0 in range(0, P, BLOCK_P):
        p = p0 + ps
        ok = (p < P)[:, None] & n_ok[None, :]
        offs = p.to(tl.int64)[:, None] * stride_p + cols[None, :]
        acc_w += tl.load(DWP + offs, mask=ok, other=0.0)
        acc_b += tl.load(DBP + offs, mask=ok, other=0.0)
    tl.store(DW + cols, tl.sum(acc_w, axis=0), mask=n_ok)
    tl.store(DB + cols, tl.sum(acc_b, axis=0), mask=n_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("ROWS_PER_CTA", "BLOCK_M", "BLOCK_N", "num_warps", "num_stages")
BASELINE = {"ROWS_PER_CTA": 32, "BLOCK_M": 1, "BLOCK_N": 4096, "num_warps": 8, "num_stages": 1}

# x and dy read, dx written: 3 x M x N x 2 bytes = 384-960 MiB (8-20x the H200's 50 MB L2);
# LayerNorm (not RMSNorm) models' hidden sizes, M = batch x sequence tokens of a training step.
POINTS = [
    {"M": 16384, "N": 4096, "dtype": "bf16"},     # 384 MiB: GPT-J-6B / OPT-6.7B hidden, 8 x 2048 tokens
    {"M": 32768, "N": 5120, "dtype": "fp16"},     # 960 MiB: OPT-13B hidden (not a power of two), 16 x 2048 tokens
    {"M": 8192, "N": 8192, "dtype": "bf16"},      # 384 MiB: Falcon-40B hidden (16 KiB rows), 4 x 2048 tokens
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
    r = cfg["ROWS_PER_CTA"]
    if r < 1 or r % cfg["BLOCK_M"]:
        raise ValueError(f"ROWS_PER_CTA={r} must be a positive multiple of BLOCK_M={cfg['BLOCK_M']}")


def _kernel_args(x, dy, w, mean, rstd, dx, dw_part, db_part, stride_p, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    dw_part, db_part: the two halves of the [2, P, N] fp32 workspace (row stride stride_p, given
    apart so example_args can pass stand-ins sized to dw and db)."""
    M, N = x.shape
    return dict(X=x, DY=dy, W=w, MEAN=mean, RSTD=rstd, DX=dx, DWP=dw_part, DBP=db_part, M=M, N=N,
                stride_xm=x.stride(0), stride_dym=dy.stride(0), stride_dxm=dx.stride(0), stride_p=stride_p,
                ROWS_PER_CTA=cfg["ROWS_PER_CTA"], BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"],
                ONE_CHUNK=cfg["BLOCK_N"] >= N)


def layer_norm_backward(dy, x, weight, mean, rstd, *, ROWS_PER_CTA=32, BLOCK_M=1, BLOCK_N=4096, num_warps=8,
                        num_stages=1):
    """(dx, dw, db) of y = layer_norm(x) * weight + bias over the last dim, for the upstream
    gradient dy [M, N] and x [M, N] (one dtype, fp16 / bf16; rows may be strided), weight [N],
    and the forward's saved mean, rstd [M] fp32. dx: [M, N] in x's dtype; dw, db: [N] fp32."""
    import torch
    if x.dim() != 2 or dy.shape != x.shape or weight.shape != (x.shape[1],):
        raise ValueError(f"expected dy [M, N], x [M, N], weight [N]; got {tuple(dy.shape)}, "
                         f"{tuple(x.shape)}, {tuple(weight.shape)}")
    M, N = x.shape
    if mean.shape != (M,) or rstd.shape != (M,) or mean.dtype != torch.float32 or rstd.dtype != torch.float32:
        raise ValueError(f"mean and rstd must be fp32 [{M}]; got {mean.dtype} {tuple(mean.shape)}, "
                         f"{rstd.dtype} {tuple(rstd.shape)}")
    if x.dtype != dy.dtype or x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x and dy must share one fp16 / bf16 dtype; got {x.dtype}, {dy.dtype}")
    if weight.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"weight dtype {weight.dtype} is not fp16, bf16 or fp32")
    cfg = {"ROWS_PER_CTA": ROWS_PER_CTA, "BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    dx = torch.empty((M, N), dtype=x.dtype, device=x.device)
    dwb = torch.zeros((2, N), dtype=torch.float32, device=x.device)
    if M == 0 or N == 0:
        return dx, dwb[0], dwb[1]
    if x.stride(1) != 1:
        x = x.contiguous()
    if dy.stride(1) != 1:
        dy = dy.contiguous()
    weight, mean, rstd = weight.contiguous(), mean.contiguous(), rstd.contiguous()
    P = triton.cdiv(M, ROWS_PER_CTA)
    ws = torch.empty((2, P, N), dtype=torch.float32, device=x.device)
    _kernel[(P,)](**_kernel_args(x, dy, weight, mean, rstd, dx, ws[0], ws[1], ws.stride(1), cfg),
                  num_warps=num_warps, num_stages=num_stages)
    _reduce_kernel[(triton.cdiv(N, REDUCE_BLOCK_N),)](ws[0], ws[1], dwb[0], dwb[1], P, N, ws.stride(1),
                                                      BLOCK_P=REDUCE_BLOCK_P, BLOCK_N=REDUCE_BLOCK_N, num_warps=4)
    return dx, dwb[0], dwb[1]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x with a per-row offset and spread (so the saved mean and rstd both matter), mean and
    rstd computed from it in fp32 as the forward saves them (eps EPS), weight 1 + 0.2 N(0, 1)
    in x's dtype, dy N(0, 1) with a per-row scale."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    shift = torch.randn((M, 1), generator=gen, device=device)
    spread = 0.5 + torch.rand((M, 1), generator=gen, device=device)
    x = (shift + spread * torch.randn((M, N), generator=gen, device=device)).to(dt)
    dy = ((0.5 + torch.rand((M, 1), generator=gen, device=device))
          * torch.randn((M, N), generator=gen, device=device)).to(dt)
    weight = (1.0 + 0.2 * torch.randn((N,), generator=gen, device=device)).to(dt)
    xf = x.float()
    mean = xf.mean(dim=1)
    rstd = torch.rsqrt(xf.var(dim=1, unbiased=False) + EPS)
    return {"x": x, "dy": dy, "weight": weight, "mean": mean, "rstd": rstd}


def launch(inputs, cfg):
    """dx [M, N] in x's dtype (dw and db, the wrapper's second and third outputs, are computed
    too: both kernels run; reference_grads is their reference)."""
    dx, _, _ = layer_norm_backward(inputs["dy"], inputs["x"], inputs["weight"], inputs["mean"], inputs["rstd"],
                                   ROWS_PER_CTA=cfg["ROWS_PER_CTA"], BLOCK_M=cfg["BLOCK_M"],
                                   BLOCK_N=cfg["BLOCK_N"], num_warps=cfg["num_warps"],
                                   num_stages=cfg["num_stages"])
    return dx


def _xhat_dyf(inputs):
    x, dy = inputs["x"].float(), inputs["dy"].float()
    xhat = (x - inputs["mean"][:, None]) * inputs["rstd"][:, None]
    return xhat, dy


def reference(inputs):
    """dx in fp32, from the saved mean and rstd."""
    xhat, dy = _xhat_dyf(inputs)
    g = dy * inputs["weight"].float()
    c1 = (g * xhat).mean(dim=1, keepdim=True)
    c2 = g.mean(dim=1, keepdim=True)
    return (g - (xhat * c1 + c2)) * inputs["rstd"][:, None]


def reference_grads(inputs):
    """(dw, db) [N] in fp32 (fp64 sums over the rows)."""
    xhat, dy = _xhat_dyf(inputs)
    return (dy.double() * xhat.double()).sum(dim=0).float(), dy.double().sum(dim=0).float()


def torch_baseline(inputs):
    """torch's own fused LayerNorm backward (aten.native_layer_norm_backward, what autograd
    runs), in the inputs' dtype; dx (it computes dw and db too, in weight's dtype)."""
    import torch
    x, w = inputs["x"], inputs["weight"]
    M, N = x.shape
    mean, rstd = inputs["mean"].view(M, 1), inputs["rstd"].view(M, 1)
    if x.device.type == "cpu" and w.dtype == x.dtype:   # the CPU kernel wants x's dtype then (CUDA: fp32)
        mean, rstd = mean.to(x.dtype), rstd.to(x.dtype)
    dx, _, _ = torch.ops.aten.native_layer_norm_backward(inputs["dy"], x, [N], mean, rstd, w, torch.zeros_like(w),
                                                         [True, True, True])
    return dx


def bytes_moved(point) -> int:
    """x and dy read once, dx written once, weight read once, mean and rstd read (fp32), dw and
    db written (fp32). Not counted: the fp32 partial workspace round trip (2 x 4 x P x N bytes
    each way, the kernel's choice) and pass 2's re-reads of the chunked path."""
    M, N = point["M"], point["N"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    return (3 * M * N + N) * e + 2 * 4 * M + 2 * 4 * N


def flops(point) -> int:
    """Per element: xhat (2), g (1), the two row sums (3), dx (4), dw and db (3). The chunked
    path's recomputation of xhat and g in pass 2 and the partial reduction are not counted."""
    return 13 * point["M"] * point["N"]


def grid(cfg, point) -> int:
    """One CTA per ROWS_PER_CTA rows (also the workspace's partial count)."""
    return triton.cdiv(point["M"], cfg["ROWS_PER_CTA"])


def loop_iterations(cfg, point) -> int:
    """Per CTA: ROWS_PER_CTA / BLOCK_M row tiles, each one step when the row is one chunk
    (BLOCK_N >= N), else two passes of ceil(N / BLOCK_N) chunks."""
    tiles = triton.cdiv(cfg["ROWS_PER_CTA"], cfg["BLOCK_M"])
    if cfg["BLOCK_N"] >= point["N"]:
        return tiles
    return tiles * 2 * triton.cdiv(point["N"], cfg["BLOCK_N"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory).
    The workspace halves are stand-ins sized to dw and db ([N] fp32 each, so the tensors' bytes
    are bytes_moved); stride_p is the real [2, P, N] workspace's row stride."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    M, N = point["M"], point["N"]
    x = torch.empty((M, N), dtype=dt, device="meta")
    dy = torch.empty((M, N), dtype=dt, device="meta")
    dx = torch.empty((M, N), dtype=dt, device="meta")
    w = torch.empty((N,), dtype=dt, device="meta")
    mean = torch.empty((M,), dtype=torch.float32, device="meta")
    rstd = torch.empty((M,), dtype=torch.float32, device="meta")
    dw = torch.empty((N,), dtype=torch.float32, device="meta")
    db = torch.empty((N,), dtype=torch.float32, device="meta")
    return _kernel_args(x, dy, w, mean, rstd, dx, dw, db, N, cfg)



def secondary_kernels(cfg, point) -> list[dict]:
    """`_reduce_kernel`, for rank: one CTA per REDUCE_BLOCK_N columns walking the P partial rows
    REDUCE_BLOCK_P at a time (dw and db: 2 x 4 B a value), each step a read of what `_kernel` just
    wrote (dram_bytes 0: rank waits the L2 latency per step). Like bytes_moved, it leaves out the
    workspace's DRAM round trip when the workspace outgrows the L2."""
    P, N = triton.cdiv(point["M"], cfg["ROWS_PER_CTA"]), point["N"]
    return [{"name": "_reduce_kernel", "grid": triton.cdiv(N, REDUCE_BLOCK_N), "iterations": triton.cdiv(P, REDUCE_BLOCK_P),
             "tile_bytes": 2 * 4 * REDUCE_BLOCK_P * REDUCE_BLOCK_N, "dram_bytes": 0, "blocks_per_sm": 8}]
