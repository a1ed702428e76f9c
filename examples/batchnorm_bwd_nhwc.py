"""BatchNorm2d backward in training mode over a channels_last (NHWC) activation -- what cuDNN's
BatchNormalizationBackward (CUDNN_BATCHNORM_SPATIAL), PyTorch's batch_norm_backward (its channels_last CUDA
path, aten.native_batch_norm_backward with train=True) and the local part of Apex's / torch's SyncBatchNorm
backward compute -- three bare @triton.jit kernels + their launcher. With M = N H W rows (pixels) and C channels,
the forward's saved per-channel mean and invstd (fp32) and gamma [C]:

    xhat     = (x - mean[c]) * invstd[c]
    dbeta[c] = sum_rows dy,    dgamma[c] = sum_rows dy * xhat                           (fp32)
    dx       = gamma[c] * invstd[c] * (dy - dbeta[c] / M - xhat * dgamma[c] / M)        (x's dtype)

x, dy: [N, C, H, W] fp16 / bf16 (one dtype), channels_last in memory -- an [M, C] matrix of unit channel stride
and a uniform pixel (row) stride S >= C (S = C for a channels_last-contiguous tensor; S > C for a channel slice
of a wider NHWC buffer, a DenseNet / CSP concat's part); mean, invstd, gamma: [C] fp32 (AMP keeps BatchNorm's
parameters and statistics fp32). dx: a fresh channels_last-contiguous [N, C, H, W] in x's dtype; dgamma,
dbeta: [C] fp32. All math in fp32.

Two phases, three launches (graph-capturable: no host synchronisation, fixed shapes):
  1. `_stats_kernel`: a 2-D grid (cdiv(C, BLOCK_C), P), P = cdiv(M, ROWS_PER_CTA), channel blocks on axis 0
     (fastest: the CTAs running together read neighbouring column strips of the same rows -- whole 128-byte
     lines of a row between them). CTA (j, p) walks its ROWS_PER_CTA rows BLOCK_M at a time as [BLOCK_M,
     BLOCK_C] tiles of x and dy and accumulates dy and dy (x - mean) elementwise into two fp32 tile
     accumulators (one tree reduction over the rows after the loop), then writes its partial dbeta and
     dgamma (= invstd sum dy (x - mean)) to row p of an fp32 workspace [2, P, C] -- plain stores, no atomics:
     the result is bitwise reproducible run to run (torch.use_deterministic_algorithms; float atomics would
     make dgamma / dbeta depend on the CTAs' arrival order, and need a zero fill of the target first).
  2. `_finalize_kernel`: one CTA per FIN_BLOCK_C channels sums the P partials of each channel in a fixed
     order (FIN_BLOCK_P a step, then a tree) into dgamma and dbeta. In SyncBatchNorm this is where the
     all-reduce of (dgamma, dbeta) across the GPUs would go.
  3. `_kernel` (the elementwise pass, the one the launcher hooks describe): the same grid and tiling as
     phase 1; a CTA loads its BLOCK_C channels' mean, invstd, gamma, dgamma, dbeta once, folds them into
     k1 = gamma invstd, kb = dbeta / M, kg = invstd dgamma / M, and walks its rows: dx = k1 (dy - kb - (x -
     mean) kg), one rounding at the store. x and dy are read a second time here -- at these sizes (x and dy
     together 0.2-0.8 GB, the H200's L2 50 MB) from DRAM: 5 tensor passes in all (bytes_moved).
Masks give the tail of the rows (a CTA's last tile, the last row block) and of the channels. Loops have a
runtime trip count (the last row block is short); LOOP_STAGES >= 2 has Triton's software pipeliner issue the
next tiles' loads (cp.async into shared memory) while this tile is summed.

How it differs from the closest examples/ kernels: examples/channel_stats.py is the forward's statistics, one
reduction pass (shifted sums, Chan's merge of (mean, M2) partials); here the backward, a reduction of two
dot-products of dy (not of x alone) and then a second, elementwise pass that depends on the reduction's result
(3 kernels, x and dy read twice). examples/layernorm_bwd.py reduces each row (the normalised axis is the
contiguous one) inside the dx kernel and only the parameter gradients across rows; here the normalised axis is
the strided M one, so the reduction needed by dx itself is the cross-CTA column reduction and dx has to wait
for it. examples/group_norm.py normalises contiguous groups with one CTA a group (no cross-CTA reduction).

Tunables (shared by `_stats_kernel` and `_kernel`; `_finalize_kernel` is fixed): BLOCK_C (channels a CTA:
32 / 64 / 128 -- 64-256 bytes of a row), BLOCK_M (rows a step: 8 / 16 / 32), ROWS_PER_CTA (rows a CTA, a multiple
of BLOCK_M: 512 / 2048 -- the split of M across CTAs; it also sets P, the workspace's rows and the finalize's
work; at ResNet stage 4, 2048 leaves 13 row blocks: 208-832 CTAs for 132 SMs), LOOP_STAGES (the row walks'
tl.range num_stages: 1 plain loads / 3 the next two tiles of x and dy in flight through cp.async into shared
memory; Triton's pipeliner leaves a load-only loop alone unless tl.range asks), num_warps (4 / 8), num_stages
(the launch's: no tl.dot, nothing for it to pipeline -- same registers and shared memory for 1 and 3 -- held at
1). Compiled for sm_90 from example_args at every point, all 72 configs, both tunable kernels (the test file's
test_example_compiles_sm90), no spills under triton 3.6.0 and 3.9:
  _kernel:        registers 26-96 under both (the most for 128 channels x 32 rows on 4 warps); shared memory
                  0-512 B at LOOP_STAGES 1, up to 32 KiB at 3 (2 x the two [BLOCK_M, BLOCK_C] tiles; 0 where
                  a tile is under 4 bytes a thread: 8 rows x 32 channels on 8 warps stays plain loads)
  _stats_kernel:  registers 29-156 under 3.6.0, 30-128 under 3.9 (the most for 128 x 32 on 4 warps: two fp32
                  tile accumulators); shared memory 256 B - 4 KiB at LOOP_STAGES 1 (the column reduction's
                  scratch), 1-32 KiB at 3
Left out: BLOCK_M 64 (128 channels x 64 rows: _stats_kernel spills 2 registers on 8 warps under 3.9 and takes
231-245 registers on 4 warps).
Problem parameters (a workload point): N, C, H, W, dtype ("fp16" / "bf16").
"""

from __future__ import annotations

import triton
import triton.language as tl

FIN_BLOCK_C = 64          # _finalize_kernel: channels a CTA
FIN_BLOCK_P = 32          # _finalize_kernel: partial rows a step
EPS = 1e-5                # the forward's eps (make_inputs' saved invstd)
MAX_GRID_Y = 65535


@triton.jit
def _stats_kernel(X, DY, MEAN, INVSTD, WS, M, C, stride_xm, stride_dym, stride_ws,
                  ROWS_PER_CTA: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr,
                  LOOP_STAGES: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_m = tl.program_id(1)
    cs = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < C
    ms = tl.arange(0, BLOCK_M)
    row0 = pid_m * ROWS_PER_CTA
    row_end = tl.minimum(row0 + ROWS_PER_CTA, M)
    mean = tl.load(MEAN + cs, mask=c_ok, other=0.0)
    invstd = tl.load(INVSTD + cs, mask=c_ok, other=0.0)
    s_dy = tl.zeros([BLOCK_M, BLOCK_C], tl.float32)
    s_dyx = tl.zeros([BLOCK_M, BLOCK_C], tl.float32)
    for r in tl.range(row0, row_end, BLOCK_M, num_stages=LOOP_STAGES):
        rows = r + ms
        ok = (rows < row_end)[:, None] & c_ok[None, :]
        r64 = rows.to(tl.int64)[:, None]
        x = tl.load(X + r64 * stride_xm + cs[None, :], mask=ok, other=0.0).to(tl.float32)
        dy = tl.load(DY + r64 * stride_dym + cs[None, :], mask=ok, other=0.0).to(tl.float32)
        s_dy += dy                                         # masked: dy 0 -> no contribution
        s_dyx += dy * (x - mean[None, :])
    dbeta = tl.sum(s_dy, axis=0)
    dgamma = tl.sum(s_dyx, axis=0) * invstd
    ws = WS + pid_m.to(tl.int64) * C + cs
    tl.store(ws, dbeta, mask=c_ok)
    tl.store(ws + stride_ws, dgamma, mask=c_ok)                   # the workspace's second half


@triton.jit
def _finalize_kernel(WS, DBETA, DGAMMA, P, C, stride_ws, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    cs = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < C
    ps = tl.arange(0, BLOCK_P)
    acc_b = tl.zeros([BLOCK_P, BLOCK_C], tl.float32)
    acc_g = tl.zeros([BLOCK_P, BLOCK_C], tl.float32)
    for p0 in range(0, P, BLOCK_P):
        p = p0 + ps
        ok = (p < P)[:, None] & c_ok[None, :]
        offs = p.to(tl.int64)[:, None] * C + cs[None, :]
        acc_b += tl.load(WS + offs, mask=ok, other=0.0)
        acc_g += tl.load(WS + stride_ws + offs, mask=ok, other=0.0)
    tl.store(DBETA + cs, tl.sum(acc_b, axis=0), mask=c_ok)
    tl.store(DGAMMA + cs, tl.sum(acc_g, axis=0), mask=c_ok)


@triton.jit
def _kernel(X, DY, DX, MEAN, INVSTD, GAMMA, DGAMMA, DBETA, M, C, inv_m, stride_xm, stride_dym, stride_dxm,
            ROWS_PER_CTA: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_C: tl.constexpr, LOOP_STAGES: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_m = tl.program_id(1)
    cs = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < C
    ms = tl.arange(0, BLOCK_M)
    row0 = pid_m * ROWS_PER_CTA
    row_end = tl.minimum(row0 + ROWS_PER_CTA, M)
    mean = tl.load(MEAN + cs, mask=c_ok, other=0.0)
    invstd = tl.load(INVSTD + cs, mask=c_ok, other=0.0)
    gamma = tl.load(GAMMA + cs, mask=c_ok, other=0.0).to(tl.float32)
    k1 = (gamma * invstd)[None, :]
    kb = (tl.load(DBETA + cs, mask=c_ok, other=0.0) * inv_m)[None, :]
    kg = (tl.load(DGAMMA + cs, mask=c_ok, other=0.0) * invstd * inv_m)[None, :]
    mean2 = mean[None, :]
    for r in tl.range(row0, row_end, BLOCK_M, num_stages=LOOP_STAGES):
        rows = r + ms
        ok = (rows < row_end)[:, None] & c_ok[None, :]
        r64 = rows.to(tl.int64)[:, None]
        x = tl.load(X + r64 * stride_xm + cs[None, :], mask=ok, other=0.0).to(tl.float32)
        dy = tl.load(DY + r64 * stride_dym + cs[None, :], mask=ok, other=0.0).to(tl.float32)
        dx = k1 * (dy - kb - (x - mean2) * kg)
        tl.store(DX + r64 * stride_dxm + cs[None, :], dx.to(DX.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-35"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_C", "BLOCK_M", "ROWS_PER_CTA", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_C": 64, "BLOCK_M": 32, "ROWS_PER_CTA": 512, "LOOP_STAGES": 3, "num_warps": 4,
            "num_stages": 1}
# the study's sweep: 3 x 3 x 2 x 2 x 2 = 72 configs (32-128 channels x 8-32 rows a tile, 512 / 2048 rows a CTA,
# plain loads or 3 stages of cp.async, 4 / 8 warps; the launch's num_stages changes nothing: held at 1). Left
# out for spills on sm_90: BLOCK_M 64 (128 channels x 64 rows: _stats_kernel spills 2 on 8 warps under 3.9)
SWEEP_AXES = {"BLOCK_C": [32, 64, 128], "BLOCK_M": [8, 16, 32], "ROWS_PER_CTA": [512, 2048], "LOOP_STAGES": [1, 3],
              "num_warps": [4, 8], "num_stages": [1]}

POINTS = [
    # ResNet-50 stage 1 (layer1's bn3: 256 channels at 56 x 56), batch 256, fp16 AMP, channels_last.
    # M = 802816 rows; x, dy, dx 411 MB each: 2.06 GB over the 5 passes, ~0.43 ms at 4.8 TB/s
    {"N": 256, "C": 256, "H": 56, "W": 56, "dtype": "fp16"},
    # ResNet-50 stage 4 (layer4's bn3: 2048 channels at 7 x 7: short columns, wide rows), large-batch 512,
    # bf16. M = 25088; x, dy, dx 103 MB each (x + dy 2x the L2): 0.51 GB, ~0.11 ms
    {"N": 512, "C": 2048, "H": 7, "W": 7, "dtype": "bf16"},
    # a YOLO-style detector backbone at 640 x 640 (the stride-4 stage: 128 channels at 160 x 160), batch 16,
    # bf16. M = 409600 rows of only 256 bytes; x, dy, dx 105 MB each: 0.52 GB, ~0.11 ms
    {"N": 16, "C": 128, "H": 160, "W": 160, "dtype": "bf16"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _pow2(name: str, v, lo: int, hi: int) -> None:
    if not _is_int(v) or v < lo or v > hi or v & (v - 1):
        raise ValueError(f"{name}={v!r} must be a power of two from {lo} to {hi}")


def _check_cfg(cfg) -> None:
    _pow2("BLOCK_C", cfg["BLOCK_C"], 1, 1024)
    _pow2("BLOCK_M", cfg["BLOCK_M"], 1, 1024)
    r = cfg["ROWS_PER_CTA"]
    if not _is_int(r) or r < 1 or r % cfg["BLOCK_M"]:
        raise ValueError(f"ROWS_PER_CTA={r!r} must be a positive multiple of BLOCK_M={cfg['BLOCK_M']}")
    if cfg["BLOCK_C"] * cfg["BLOCK_M"] > 16384:
        raise ValueError(f"BLOCK_C x BLOCK_M = {cfg['BLOCK_C'] * cfg['BLOCK_M']} > 16384 (two fp32 tile "
                         f"accumulators live in registers)")
    ls = cfg["LOOP_STAGES"]
    if not _is_int(ls) or ls < 1 or ls > 8:
        raise ValueError(f"LOOP_STAGES={ls!r} must be an int from 1 to 8")
    w = cfg.get("num_warps", 4)
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 1)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    P = {"dtype": "fp16", **point}
    for k in ("N", "C", "H", "W"):
        v = P[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    if P["N"] * P["H"] * P["W"] * P["C"] >= 2**40:
        raise ValueError(f"N H W C = {P['N'] * P['H'] * P['W'] * P['C']} elements is too large")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    return P


def _torch_dtype(name: str):
    import torch
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {DTYPES}")
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _plan(M: int, C: int, cfg) -> tuple:
    """(channel blocks, P): the grid of `_stats_kernel` and `_kernel`; P the workspace's partial rows."""
    _check_cfg(cfg)
    P = triton.cdiv(M, cfg["ROWS_PER_CTA"])
    if P > MAX_GRID_Y:
        raise ValueError(f"M={M} rows at ROWS_PER_CTA={cfg['ROWS_PER_CTA']} need {P} row blocks; at most "
                         f"{MAX_GRID_Y}")
    return triton.cdiv(C, cfg["BLOCK_C"]), P


def _row_stride(t, name: str) -> int:
    """The uniform pixel stride S of a channels_last [N, C, H, W] tensor of unit channel stride (module doc);
    ValueError for any other layout."""
    import torch
    N, C, H, W = t.shape
    if t.is_contiguous(memory_format=torch.channels_last):
        return C
    S = t.stride(3)
    if t.stride() != (H * W * S, 1, W * S, S) or S < C:
        raise ValueError(f"{name} must be channels_last (NHWC in memory: unit channel stride, a uniform pixel "
                         f"stride >= C); got shape {tuple(t.shape)} strides {t.stride()}")
    return S


def _stats_args(x, dy, mean, invstd, ws, M, C, sx, sdy, P, cfg) -> dict:
    """Every argument of one `_stats_kernel` launch (ws: the [2, P, C] workspace; its halves P C apart)."""
    return dict(X=x, DY=dy, MEAN=mean, INVSTD=invstd, WS=ws, M=M, C=C, stride_xm=sx, stride_dym=sdy,
                stride_ws=P * C,
                ROWS_PER_CTA=cfg["ROWS_PER_CTA"], BLOCK_M=cfg["BLOCK_M"], BLOCK_C=cfg["BLOCK_C"],
                LOOP_STAGES=cfg["LOOP_STAGES"])


def _kernel_args(x, dy, dx, mean, invstd, gamma, dgamma, dbeta, M, C, sx, sdy, sdx, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, DY=dy, DX=dx, MEAN=mean, INVSTD=invstd, GAMMA=gamma, DGAMMA=dgamma, DBETA=dbeta, M=M,
                C=C, inv_m=1.0 / M, stride_xm=sx, stride_dym=sdy, stride_dxm=sdx, ROWS_PER_CTA=cfg["ROWS_PER_CTA"],
                BLOCK_M=cfg["BLOCK_M"], BLOCK_C=cfg["BLOCK_C"], LOOP_STAGES=cfg["LOOP_STAGES"])


def batch_norm_backward(dy, x, mean, invstd, gamma, *, BLOCK_C: int = 64, BLOCK_M: int = 32,
                        ROWS_PER_CTA: int = 512, LOOP_STAGES: int = 3, num_warps: int = 4, num_stages: int = 1):
    """(dx, dgamma, dbeta) of BatchNorm2d in training mode: dy, x [N, C, H, W] channels_last (one dtype, fp16 /
    bf16; a uniform pixel stride >= C allowed), the forward's saved mean and invstd [C] fp32, gamma [C] fp32
    (or x's dtype). dx: a fresh channels_last-contiguous tensor in x's dtype; dgamma, dbeta [C] fp32."""
    import torch
    cfg = {"BLOCK_C": BLOCK_C, "BLOCK_M": BLOCK_M, "ROWS_PER_CTA": ROWS_PER_CTA, "LOOP_STAGES": LOOP_STAGES,
           "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if x.dim() != 4 or dy.shape != x.shape:
        raise ValueError(f"x and dy must be [N, C, H, W] of one shape; got {tuple(x.shape)}, {tuple(dy.shape)}")
    if x.dtype != dy.dtype or x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x and dy must share one fp16 / bf16 dtype; got {x.dtype}, {dy.dtype}")
    N, C, H, W = x.shape
    M = N * H * W
    if M < 1 or C < 1:
        raise ValueError(f"x of shape {tuple(x.shape)} is empty")
    sx, sdy = _row_stride(x, "x"), _row_stride(dy, "dy")
    for name, t in (("mean", mean), ("invstd", invstd)):
        if t.shape != (C,) or t.dtype != torch.float32 or t.stride() != (1,):
            raise ValueError(f"{name} must be a contiguous fp32 [{C}]; got {t.dtype} {tuple(t.shape)} "
                             f"strides {t.stride()}")
    if gamma.shape != (C,) or gamma.dtype not in (torch.float32, x.dtype) or gamma.stride() != (1,):
        raise ValueError(f"gamma must be a contiguous fp32 (or x's dtype) [{C}]; got {gamma.dtype} "
                         f"{tuple(gamma.shape)}")
    for name, t in (("dy", dy), ("mean", mean), ("invstd", invstd), ("gamma", gamma)):
        if t.device != x.device:
            raise ValueError(f"{name} must be on x's device {x.device}; got {t.device}")
    n_cb, P = _plan(M, C, cfg)
    dx = torch.empty_like(x, memory_format=torch.channels_last)
    ws = torch.empty((2, P, C), dtype=torch.float32, device=x.device)
    grads = torch.empty((2, C), dtype=torch.float32, device=x.device)
    dgamma, dbeta = grads[0], grads[1]
    _stats_kernel[(n_cb, P)](**_stats_args(x, dy, mean, invstd, ws, M, C, sx, sdy, P, cfg),
                             num_warps=num_warps, num_stages=num_stages)
    _finalize_kernel[(triton.cdiv(C, FIN_BLOCK_C),)](ws, dbeta, dgamma, P, C, P * C, BLOCK_P=FIN_BLOCK_P,
                                                     BLOCK_C=FIN_BLOCK_C, num_warps=4)
    _kernel[(n_cb, P)](**_kernel_args(x, dy, dx, mean, invstd, gamma, dgamma, dbeta, M, C, sx, sdy, C, cfg),
                       num_warps=num_warps, num_stages=num_stages)
    return dx, dgamma, dbeta


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x = mu_c + sigma_c z (per-channel mu in [-2, 2], sigma in [0.3, 2]: the saved mean and invstd both
    matter), dy = a_c z' + b_c + 0.3 xhat (per-channel scale in [0.2, 1.2], offset in [-0.5, 0.5], a component
    along xhat: dbeta and dgamma far from 0), both drawn on the device from a seeded generator, cast to the
    dtype and stored channels_last; mean and invstd computed from the rounded x in fp32 as the forward saves
    them (biased variance, eps EPS); gamma [C] fp32 in [0.5, 1.5]."""
    import torch
    P = _check_point(point)
    dt = _torch_dtype(P["dtype"])
    N, C, H, W = P["N"], P["C"], P["H"], P["W"]
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(int(seed))
    mu = torch.rand((C,), generator=g, device=dev) * 4 - 2
    sigma = torch.rand((C,), generator=g, device=dev) * 1.7 + 0.3
    a = torch.rand((C,), generator=g, device=dev) + 0.2
    b = torch.rand((C,), generator=g, device=dev) - 0.5
    gamma = torch.rand((C,), generator=g, device=dev) + 0.5
    z = torch.randn((N, H, W, C), generator=g, device=dev)
    x = (z * sigma + mu).to(dt)
    z.normal_(generator=g)
    z.mul_(a).add_(b).add_(0.3 * (x.float() - mu) / sigma)
    dy = z.to(dt)
    del z
    var, mean = torch.var_mean(x.float(), dim=(0, 1, 2), unbiased=False)
    invstd = torch.rsqrt(var + EPS)
    to_cl = lambda t: t.permute(0, 3, 1, 2)                     # [N, H, W, C] memory as [N, C, H, W]
    return {"x": to_cl(x), "dy": to_cl(dy), "mean": mean.contiguous(), "invstd": invstd.contiguous(),
            "gamma": gamma}


def launch(inputs, cfg):
    """dx [N, C, H, W] channels_last in x's dtype (all three kernels run; dgamma and dbeta are computed too:
    reference_grads is their reference)."""
    dx, _, _ = batch_norm_backward(inputs["dy"], inputs["x"], inputs["mean"], inputs["invstd"], inputs["gamma"],
                                   BLOCK_C=cfg["BLOCK_C"], BLOCK_M=cfg["BLOCK_M"],
                                   ROWS_PER_CTA=cfg["ROWS_PER_CTA"], LOOP_STAGES=cfg["LOOP_STAGES"],
                                   num_warps=cfg["num_warps"],
                                   num_stages=cfg["num_stages"])
    return dx


def reference_grads(inputs):
    """(dx, dgamma, dbeta) in float64 from the saved mean and invstd (sums over N, H, W in float64)."""
    x, dy = inputs["x"].double(), inputs["dy"].double()
    mean = inputs["mean"].double()[None, :, None, None]
    invstd = inputs["invstd"].double()[None, :, None, None]
    gamma = inputs["gamma"].double()[None, :, None, None]
    M = x.shape[0] * x.shape[2] * x.shape[3]
    xhat = (x - mean) * invstd
    dbeta = dy.sum(dim=(0, 2, 3))
    dgamma = (dy * xhat).sum(dim=(0, 2, 3))
    dx = gamma * invstd * (dy - dbeta[None, :, None, None] / M - xhat * dgamma[None, :, None, None] / M)
    return dx, dgamma, dbeta


def reference(inputs):
    """dx [N, C, H, W] in float64 (reference_grads' first)."""
    return reference_grads(inputs)[0]


def torch_baseline(inputs):
    """PyTorch's own fused BatchNorm backward (aten.native_batch_norm_backward with train=True, what autograd
    runs for F.batch_norm in training; on CUDA its channels_last kernels), dx in x's dtype."""
    import torch
    x = inputs["x"]
    dx, _, _ = torch.ops.aten.native_batch_norm_backward(inputs["dy"], x, inputs["gamma"], None, None,
                                                         inputs["mean"], inputs["invstd"], True, EPS,
                                                         [True, True, True])
    return dx


def _shape(point) -> tuple:
    """(M, C, element bytes) of a point."""
    P = _check_point(point)
    return P["N"] * P["H"] * P["W"], P["C"], 2


def bytes_moved(point) -> int:
    """x and dy read twice (the statistics pass, then the dx pass: together 0.2-0.8 GB here, far past the L2),
    dx written once: 5 M C element bytes; mean, invstd, gamma read and dgamma, dbeta written (fp32 [C]). Not
    counted: the [2, P, C] fp32 workspace, written by `_stats_kernel` and read back by `_finalize_kernel`
    through the L2 (0.2-3.2 MB here), and the [C] vectors `_kernel`'s CTAs re-read from L2."""
    M, C, e = _shape(point)
    return 5 * M * C * e + 5 * 4 * C


def flops(point) -> int:
    """Per element: statistics x - mean (1), the two accumulations (1 + 2); dx: x - mean, times kg, two
    subtractions, times k1 (5). The finalize's P C adds not counted."""
    M, C, _ = _shape(point)
    return 9 * M * C


def grid(cfg, point) -> tuple:
    """`_kernel`'s grid (cdiv(C, BLOCK_C), cdiv(M, ROWS_PER_CTA)), channel blocks fastest (as launched)."""
    M, C, _ = _shape(point)
    return _plan(M, C, cfg)


def loop_iterations(cfg, point) -> int:
    """BLOCK_M steps of a full row block: ROWS_PER_CTA / BLOCK_M (or cdiv(M, BLOCK_M) when one block holds
    every row)."""
    M, C, _ = _shape(point)
    _plan(M, C, cfg)
    return triton.cdiv(min(cfg["ROWS_PER_CTA"], M), cfg["BLOCK_M"])


def cta_iterations(cfg, point) -> list:
    """Each `_kernel` CTA's BLOCK_M steps, program id x (the channel block) fastest: ROWS_PER_CTA / BLOCK_M,
    the last row block's cdiv(what is left of M, BLOCK_M)."""
    M, C, _ = _shape(point)
    n_cb, P = _plan(M, C, cfg)
    R = cfg["ROWS_PER_CTA"]
    per = [triton.cdiv(min(R, M - p * R), cfg["BLOCK_M"]) for p in range(P)]
    return [it for it in per for _ in range(n_cb)]


def secondary_kernels(cfg, point) -> list:
    """The two kernels `launch` runs before `_kernel`, in order:
    `_stats_kernel`: `_kernel`'s grid and steps, each step a [BLOCK_M, BLOCK_C] tile of x and of dy from DRAM
    (LOOP_STAGES - 1 tiles in flight ahead); `_finalize_kernel`: one CTA per FIN_BLOCK_C channels
    walking the P partial rows FIN_BLOCK_P at a time (dbeta and dgamma, fp32), what `_stats_kernel` just wrote
    (dram_bytes 0: in L2). The stats kernel's last row block is short like `_kernel`'s (cta_iterations); its
    iterations here are a full block's."""
    M, C, e = _shape(point)
    n_cb, P = _plan(M, C, cfg)
    tile = 2 * e * cfg["BLOCK_M"] * cfg["BLOCK_C"]
    return [{"name": "_stats_kernel", "grid": n_cb * P, "iterations": loop_iterations(cfg, point),
             "tile_bytes": tile, "dram_bytes": tile, "ahead": cfg["LOOP_STAGES"] - 1},
            {"name": "_finalize_kernel", "grid": triton.cdiv(C, FIN_BLOCK_C),
             "iterations": triton.cdiv(P, FIN_BLOCK_P), "tile_bytes": 2 * 4 * FIN_BLOCK_P * FIN_BLOCK_C,
             "dram_bytes": 0}]


def _meta_tensors(point) -> dict:
    import torch
    P = _check_point(point)
    dt = _torch_dtype(P["dtype"])
    N, C, H, W = P["N"], P["C"], P["H"], P["W"]
    act = lambda: torch.empty((N, C, H, W), dtype=dt, device="meta", memory_format=torch.channels_last)
    vec = lambda: torch.empty((C,), dtype=torch.float32, device="meta")
    return {"x": act(), "dy": act(), "dx": act(), "mean": vec(), "invstd": vec(), "gamma": vec(),
            "dgamma": vec(), "dbeta": vec()}


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x, dy, dx [N, C,
    H, W] channels_last-contiguous in the point's dtype (pixel stride C), mean, invstd, gamma, dgamma, dbeta [C]
    fp32."""
    M, C, _ = _shape(point)
    _plan(M, C, cfg)
    t = _meta_tensors(point)
    return _kernel_args(t["x"], t["dy"], t["dx"], t["mean"], t["invstd"], t["gamma"], t["dgamma"], t["dbeta"],
                        M, C, C, C, C, cfg)


def stats_example_args(cfg, point) -> dict:
    """The launch arguments of `_stats_kernel` (its compile is checked beside `_kernel`'s): the workspace
    [2, P, C] fp32 on meta."""
    import torch
    M, C, _ = _shape(point)
    _, P = _plan(M, C, cfg)
    t = _meta_tensors(point)
    ws = torch.empty((2, P, C), dtype=torch.float32, device="meta")
    return _stats_args(t["x"], t["dy"], t["mean"], t["invstd"], ws, M, C, C, C, P, cfg)
