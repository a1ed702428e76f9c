"""BatchNorm2d training-mode statistics (the "batch_norm_collect_statistics" of a training step),
a bare @triton.jit kernel + a small combine kernel + their launcher.

    mean[c] = (1 / R) sum_{n, h, w} x[n, c, h, w]
    rstd[c] = 1 / sqrt((1 / R) sum_{n, h, w} (x[n, c, h, w] - mean[c])^2 + eps)     (R = N H W)

x: [N, C, H, W] fp16 / bf16 / fp32, stored NCHW-contiguous or channels_last (NHWC in memory);
mean and rstd: [C] fp32 (the biased variance, as BatchNorm's forward normalises with). launch()
returns them stacked, [2, C].

Every channel reduces over the R = N H W elements of the "reduced index" r = n HW + hw. In NHWC
memory the element (r, c) sits at r C + c (channels contiguous: a column reduction of an [R, C]
matrix); in NCHW memory at n C HW + c HW + hw (each channel N segments of HW contiguous
elements: a segment reduction). `_kernel` works on [BLOCK_C, BLOCK_R] tiles (channels x reduced
elements) in all layouts and lets Triton's contiguity analysis pick the vectorised axis:
  * CHANNELS_LAST: offsets r C + c; vectorised along the channels.
  * NCHW with HW % BLOCK_R == 0 (ALIGNED_ROWS, the launcher's choice): a tile never crosses a
    sample boundary, so one scalar (n, hw0) per step: offsets n C HW + c HW + hw0 + j, vectorised
    along the row (long rows: a UNet / diffusion activation's 256 x 256).
  * NCHW otherwise (short or ragged rows, ResNet stage 4's 7 x 7 = 49): every lane (reduced
    position j of the tile) keeps its own offset n C HW + hw and hw, advanced by BLOCK_R per step
    with one compare-and-carry (no integer division in the loop); scalar loads, coalesced within
    a warp (2-byte ones for fp16 / bf16: too narrow for cp.async, so LOOP_STAGES changes nothing
    on this path at those dtypes).

Grid: (cdiv(C, BLOCK_C), SPLIT), channel blocks fastest, about CTAS_PER_SM x NUM_SMS CTAs: with
s0 = max(1, min(R tiles, cdiv(CTAS_PER_SM x NUM_SMS, channel blocks))) every CTA takes a contiguous
chunk of chunk = cdiv(R tiles, s0) x BLOCK_R reduced elements and SPLIT = cdiv(R, chunk) (only the
last chunk is short). The kernel derives chunk from its arguments with the same arithmetic as the
launcher's plan() (which sizes the grid and the workspace). Each CTA accumulates, per lane, the
*shifted* sums s1 = sum (x - k_c), s2 = sum (x - k_c)^2 in fp32, with k_c = x[0, c, 0, 0] (one
sample of the channel: near its mean, so s2 - s1^2 / n does not cancel catastrophically when
|mean| >> std, the usual failure of a plain (sum, sumsq)), reduces them over its tile once after
the loop and writes its partial (mean, M2) = (k + s1 / n, s2 - s1^2 / n) to an fp32 workspace
[2, SPLIT, C] (its count n is implied by chunk and R, not stored). The tile accumulators are
masked only where needed: EVEN_C (C % BLOCK_C == 0) and EVEN_R (R % BLOCK_R == 0) drop the masks.

`_combine_kernel` (one CTA per COMBINE_BLOCK_C channels) merges the SPLIT partials with Chan's
parallel Welford update: COMBINE_BLOCK_S partials at a time are merged exactly (n_t = sum n_i,
mean_t = sum n_i mean_i / n_t, M2_t = sum M2_i + sum n_i (mean_i - mean_t)^2), then folded into the
running (n, mean, M2) by Chan's pairwise formula. Chan rather than a (sum, sumsq) combine: the
partials already are (count, mean, M2), the counts differ (the short last chunk), and merging
centred moments keeps the fp32 result accurate for any |mean| / std and any R (a global sumsq
over 10^8 elements of |mean| >> std loses the variance to cancellation); a fixed merge order
makes the result deterministic (no atomics), and the few hundred partials a channel are tiny
next to x (they stay in L2).

Tunables: BLOCK_C (channels a CTA, power of two), BLOCK_R (reduced elements a step, power of two),
CTAS_PER_SM (the grid's target CTAs per SM: sets SPLIT), LOOP_STAGES (tl.range's num_stages on
the main loop: >= 2 copies the next LOOP_STAGES - 1 tiles ahead into shared memory through
cp.async; 1 = plain loads), num_warps, num_stages (the launch's; no tl.dot, so with triton 3.6
for sm_90 it changes nothing: the loop's pipelining is LOOP_STAGES').
Problem parameters (a workload point): N, C, H, W, dtype (fp16 / bf16 / fp32), layout ("nhwc":
channels_last, "nchw": contiguous), eps, sms (the SM count the grid targets; 132: an H200).
"""

from __future__ import annotations

import triton
import triton.language as tl

H200_SMS = 132
COMBINE_BLOCK_C = 64        # _combine_kernel: channels a CTA
COMBINE_BLOCK_S = 32        # _combine_kernel: partials merged a step


@triton.jit
def _kernel(X, WS, C, HW, R, NUM_SMS,
            CHANNELS_LAST: tl.constexpr, ALIGNED_ROWS: tl.constexpr, EVEN_C: tl.constexpr,
            EVEN_R: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr, CTAS_PER_SM: tl.constexpr,
            LOOP_STAGES: tl.constexpr):
    pid_c = tl.program_id(0)
    pid_s = tl.program_id(1)
    SPLIT = tl.num_programs(1)
    # the split (plan() in the launcher, which launches cdiv(R, chunk) = SPLIT CTA rows)
    r_tiles = tl.cdiv(R, BLOCK_R)
    split0 = tl.maximum(1, tl.minimum(r_tiles, tl.cdiv(CTAS_PER_SM * NUM_SMS, tl.cdiv(C, BLOCK_C))))
    chunk = tl.cdiv(r_tiles, split0) * BLOCK_R
    cs = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    js = tl.arange(0, BLOCK_R)
    c_ok = cs < C
    start = pid_s * chunk
    n_elem = tl.minimum(chunk, R - start)
    stride_n = C.to(tl.int64) * HW

    # the shift k_c: the channel's first element (r = 0)
    if CHANNELS_LAST:
        k_off = cs
    else:
        k_off = cs.to(tl.int64) * HW
    if EVEN_C:
        k = tl.load(X + k_off).to(tl.float32)
    else:
        k = tl.load(X + k_off, mask=c_ok, other=0.0).to(tl.float32)

    if CHANNELS_LAST:
        lane_off = cs[:, None] + js[None, :] * C                  # [BLOCK_C, BLOCK_R]
    elif ALIGNED_ROWS:
        lane_off = cs[:, None] * HW + js[None, :]
    else:
        # per lane j: the offset n C HW + hw of r = start + j and its hw, advanced by BLOCK_R a
        # step (d_n samples and d_hw elements) with one carry into the next sample
        r0 = start + js
        n_v = r0 // HW
        hw_v = r0 - n_v * HW
        o_v = n_v.to(tl.int64) * stride_n + hw_v
        d_n = BLOCK_R // HW
        d_hw = BLOCK_R - d_n * HW
        d_o = d_n * stride_n + d_hw
        rows = X + cs.to(tl.int64) * HW                           # [BLOCK_C] channel bases

    s1 = tl.zeros([BLOCK_C, BLOCK_R], tl.float32)
    s2 = tl.zeros([BLOCK_C, BLOCK_R], tl.float32)
    for i in tl.range(0, tl.cdiv(n_elem, BLOCK_R), num_stages=LOOP_STAGES):
        r = start + i * BLOCK_R
        if CHANNELS_LAST:
            ptrs = X + r.to(tl.int64) * C + lane_off
        elif ALIGNED_ROWS:
            n = r // HW
            ptrs = X + (n.to(tl.int64) * stride_n + (r - n * HW)) + lane_off
        else:
            ptrs = rows[:, None] + o_v[None, :]
            hw_v += d_hw
            wrap = hw_v >= HW
            hw_v = tl.where(wrap, hw_v - HW, hw_v)
            o_v += tl.where(wrap, d_o + stride_n - HW, d_o)
        if EVEN_R:
            if EVEN_C:
                x = tl.load(ptrs)
            else:
                x = tl.load(ptrs, mask=c_ok[:, None], other=0.0)
            d = x.to(tl.float32) - k[:, None]
        else:
            ok = c_ok[:, None] & ((r + js) < R)[None, :]
            x = tl.load(ptrs, mask=ok, other=0.0)
            d = tl.where(ok, x.to(tl.float32) - k[:, None], 0.0)
        s1 += d
        s2 += d * d

    t1 = tl.sum(s1, axis=1)
    t2 = tl.sum(s2, axis=1)
    cnt = n_elem.to(tl.float32)
    mean = k + t1 / cnt
    m2 = tl.maximum(t2 - t1 * (t1 / cnt), 0.0)
    ws = WS + pid_s * C + cs
    tl.store(ws, mean, mask=c_ok)
    tl.store(ws + SPLIT * C, m2, mask=c_ok)


@triton.jit
def _combine_kernel(WS, MEAN, RSTD, C, R, chunk, SPLIT, eps,
                    BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr):
    """Chan's parallel Welford over the SPLIT (mean, M2) partials of BLOCK_C channels."""
    cs = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    c_ok = cs < C
    ss = tl.arange(0, BLOCK_S)
    n_a = tl.zeros([BLOCK_C], tl.float32)
    mean_a = tl.zeros([BLOCK_C], tl.float32)
    m2_a = tl.zeros([BLOCK_C], tl.float32)
    for s0 in range(0, SPLIT, BLOCK_S):
        s = s0 + ss
        s_ok = s < SPLIT
        cnt = tl.where(s_ok, tl.minimum(chunk, R - s * chunk), 0).to(tl.float32)     # [BLOCK_S]
        ok = s_ok[:, None] & c_ok[None, :]
        offs = s[:, None] * C + cs[None, :]
        mean_i = tl.load(WS + offs, mask=ok, other=0.0)
        m2_i = tl.load(WS + SPLIT * C + offs, mask=ok, other=0.0)
        n_t = tl.sum(cnt, axis=0)                                                    # > 0: s0 < SPLIT
        mean_t = tl.sum(cnt[:, None] * mean_i, axis=0) / n_t
        dev = tl.where(ok, mean_i - mean_t[None, :], 0.0)
        m2_t = tl.sum(m2_i, axis=0) + tl.sum(cnt[:, None] * dev * dev, axis=0)
        n_ab = n_a + n_t
        delta = mean_t - mean_a
        mean_a += delta * (n_t / n_ab)
        m2_a += m2_t + delta * delta * (n_a * (n_t / n_ab))
        n_a = n_ab
    tl.store(MEAN + cs, mean_a, mask=c_ok)
    tl.store(RSTD + cs, 1.0 / tl.sqrt(m2_a / n_a + eps), mask=c_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
LAYOUTS = ("nhwc", "nchw")
TUNABLES = ("BLOCK_C", "BLOCK_R", "CTAS_PER_SM", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_C": 64, "BLOCK_R": 64, "CTAS_PER_SM": 4, "LOOP_STAGES": 3, "num_warps": 4, "num_stages": 1}

# BatchNorm2d statistics of a training step on one H200. The kernel reads x once (bytes_moved):
# 205 / 103 / 268 MB, ~43 / 21 / 56 us at 4.8 TB/s; the NCHW short-row point pays per-lane index
# arithmetic and scalar loads on top.
POINTS = [
    # ResNet-50 after the stem (bn1: 64 channels, 112 x 112), batch 128, fp16 AMP, channels_last
    {"N": 128, "C": 64, "H": 112, "W": 112, "dtype": "fp16", "layout": "nhwc", "eps": 1e-5},
    # ResNet-50 stage 4 (2048 channels, 7 x 7: rows of 49), batch 512 (large-batch training), bf16, NCHW
    {"N": 512, "C": 2048, "H": 7, "W": 7, "dtype": "bf16", "layout": "nchw", "eps": 1e-5},
    # a UNet / diffusion VAE decoder block (128 channels, 256 x 256), batch 8, fp32, NCHW: long rows
    {"N": 8, "C": 128, "H": 256, "W": 256, "dtype": "fp32", "layout": "nchw", "eps": 1e-5},
]


def _elem_bytes(dtype: str) -> int:
    try:
        return {"fp16": 2, "bf16": 2, "fp32": 4}[dtype]
    except KeyError:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}") from None


def _torch_dtype(name: str):
    import torch
    _elem_bytes(name)
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def _layout(point) -> str:
    lay = point.get("layout", "nchw")
    if lay not in LAYOUTS:
        raise ValueError(f"layout {lay!r} is not 'nhwc' (channels_last) or 'nchw' (contiguous)")
    return lay


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_C", "BLOCK_R"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")
    if cfg["BLOCK_C"] * cfg["BLOCK_R"] > 16384:
        raise ValueError(f"BLOCK_C x BLOCK_R = {cfg['BLOCK_C'] * cfg['BLOCK_R']} > 16384 (two fp32 tile "
                         f"accumulators live in registers)")
    if cfg["CTAS_PER_SM"] < 1:
        raise ValueError(f"CTAS_PER_SM={cfg['CTAS_PER_SM']} must be >= 1")
    if cfg.get("LOOP_STAGES", 1) < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1")


def plan(C: int, R: int, cfg, sms: int = H200_SMS) -> tuple[int, int, int]:
    """(channel blocks, SPLIT, chunk): the grid and each CTA's share of the reduced index."""
    c_blocks = triton.cdiv(C, cfg["BLOCK_C"])
    r_tiles = triton.cdiv(R, cfg["BLOCK_R"])
    split = max(1, min(r_tiles, triton.cdiv(cfg["CTAS_PER_SM"] * sms, c_blocks)))
    chunk = triton.cdiv(r_tiles, split) * cfg["BLOCK_R"]
    return c_blocks, triton.cdiv(R, chunk), chunk


def _kernel_args(x, ws, C, HW, R, num_sms, channels_last, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(X=x, WS=ws, C=C, HW=HW, R=R, NUM_SMS=num_sms, CHANNELS_LAST=channels_last,
                ALIGNED_ROWS=(not channels_last) and HW % cfg["BLOCK_R"] == 0, EVEN_C=C % cfg["BLOCK_C"] == 0,
                EVEN_R=R % cfg["BLOCK_R"] == 0, BLOCK_C=cfg["BLOCK_C"], BLOCK_R=cfg["BLOCK_R"],
                CTAS_PER_SM=cfg["CTAS_PER_SM"], LOOP_STAGES=cfg["LOOP_STAGES"])


def channel_stats(x, eps: float = 1e-5, *, num_sms: int | None = None, BLOCK_C=64, BLOCK_R=64, CTAS_PER_SM=4,
                  LOOP_STAGES=3, num_warps=4, num_stages=1):
    """(mean, rstd), each [C] fp32, of x [N, C, H, W] (fp16 / bf16 / fp32) over N, H, W: the biased
    variance. x NCHW-contiguous or channels_last is read in place; any other strides are copied
    to NCHW first. num_sms: the SM count the grid targets (default: the device's, 132 off a GPU)."""
    import torch
    if x.dim() != 4:
        raise ValueError(f"expected x [N, C, H, W]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x must be fp16 / bf16 / fp32; got {x.dtype}")
    N, C, H, W = x.shape
    HW, R = H * W, N * H * W
    if R == 0 or C == 0:
        raise ValueError(f"empty reduction or no channels: N={N}, C={C}, H={H}, W={W}")
    cfg = {"BLOCK_C": BLOCK_C, "BLOCK_R": BLOCK_R, "CTAS_PER_SM": CTAS_PER_SM, "LOOP_STAGES": LOOP_STAGES}
    _check_cfg(cfg)
    if num_sms is None:
        num_sms = (torch.cuda.get_device_properties(x.device).multi_processor_count
                   if x.device.type == "cuda" else H200_SMS)
    if num_sms < 1:
        raise ValueError(f"num_sms={num_sms} must be >= 1")
    if x.is_contiguous():
        channels_last = False
    elif x.is_contiguous(memory_format=torch.channels_last):
        channels_last = True
    else:
        x, channels_last = x.contiguous(), False
    c_blocks, split, chunk = plan(C, R, cfg, num_sms)
    ws = torch.empty((2, split, C), dtype=torch.float32, device=x.device)
    mean = torch.empty((C,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((C,), dtype=torch.float32, device=x.device)
    _kernel[(c_blocks, split)](**_kernel_args(x, ws, C, HW, R, num_sms, channels_last, cfg),
                               num_warps=num_warps, num_stages=num_stages)
    _combine_kernel[(triton.cdiv(C, COMBINE_BLOCK_C),)](ws, mean, rstd, C, R, chunk, split, float(eps),
                                                        BLOCK_C=COMBINE_BLOCK_C, BLOCK_S=COMBINE_BLOCK_S,
                                                        num_warps=4)
    return mean, rstd


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x = mu_c + sigma_c z (z standard normal), per-channel mu_c in [-3, 3] and sigma_c in [0.25, 2]
    (|mean| up to 12 std: the shifted sums are under test), drawn on the CPU with a seeded
    generator, cast to the dtype, then stored in the point's layout on `device`."""
    import torch
    dt = _torch_dtype(point.get("dtype", "fp16"))
    lay = _layout(point)
    N, C, H, W = point["N"], point["C"], point["H"], point["W"]
    gen = torch.Generator().manual_seed(seed)
    mu = torch.rand((C,), generator=gen) * 6 - 3
    sigma = torch.rand((C,), generator=gen) * 1.75 + 0.25
    x = (torch.randn((N, C, H, W), generator=gen) * sigma[:, None, None] + mu[:, None, None]).to(dt)
    x = x.to(device)
    if lay == "nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
    return {"x": x, "eps": float(point.get("eps", 1e-5)), "num_sms": int(point.get("sms", H200_SMS))}


def launch(inputs, cfg):
    """[2, C] fp32: row 0 the mean, row 1 rstd."""
    import torch
    mean, rstd = channel_stats(inputs["x"], inputs["eps"], num_sms=inputs["num_sms"], BLOCK_C=cfg["BLOCK_C"],
                               BLOCK_R=cfg["BLOCK_R"], CTAS_PER_SM=cfg["CTAS_PER_SM"],
                               LOOP_STAGES=cfg["LOOP_STAGES"], num_warps=cfg["num_warps"],
                               num_stages=cfg["num_stages"])
    return torch.stack([mean, rstd])


def reference(inputs):
    """fp64 two-pass statistics of the same (rounded) x: [2, C] fp32."""
    import torch
    x = inputs["x"].double()
    var, mean = torch.var_mean(x, dim=(0, 2, 3), unbiased=False)
    return torch.stack([mean, 1.0 / torch.sqrt(var + inputs["eps"])]).float()


def torch_baseline(inputs):
    """What a torch user writes: var_mean over (N, H, W) in fp32 (eager: an upcast copy, then torch's
    reduction), then rsqrt."""
    import torch
    var, mean = torch.var_mean(inputs["x"].float(), dim=(0, 2, 3), unbiased=False)
    return torch.stack([mean, torch.rsqrt(var + inputs["eps"])])


def bytes_moved(point) -> int:
    """x read once, mean and rstd written (fp32). The workspace (2 x SPLIT x C fp32, < 2 MB for any
    sweep config here) is written and read back through L2, not counted."""
    _layout(point)
    return point["N"] * point["C"] * point["H"] * point["W"] * _elem_bytes(point.get("dtype", "fp16")) + 8 * point["C"]


def flops(point) -> int:
    """Per element: the shift (1), the two accumulations (1 + 2)."""
    return 4 * point["N"] * point["C"] * point["H"] * point["W"]


def _plan_point(cfg, point):
    return plan(point["C"], point["N"] * point["H"] * point["W"], cfg, int(point.get("sms", H200_SMS)))


def grid(cfg, point) -> tuple[int, int]:
    """(channel blocks, SPLIT), as launch passes it."""
    c_blocks, split, _ = _plan_point(cfg, point)
    return (c_blocks, split)


def cta_iterations(cfg, point) -> list[int]:
    """Each CTA's BLOCK_R steps, program id x (the channel block) fastest: chunk / BLOCK_R for all but
    the last SPLIT row, which takes what is left of R."""
    c_blocks, split, chunk = _plan_point(cfg, point)
    R = point["N"] * point["H"] * point["W"]
    per = [triton.cdiv(min(chunk, R - s * chunk), cfg["BLOCK_R"]) for s in range(split)]
    return [it for it in per for _ in range(c_blocks)]


def loop_iterations(cfg, point) -> int:
    """BLOCK_R steps of a full chunk (all CTAs but the last SPLIT row's)."""
    return _plan_point(cfg, point)[2] // cfg["BLOCK_R"]


def secondary_kernels(cfg, point) -> list[dict]:
    """`_combine_kernel`: one CTA per COMBINE_BLOCK_C channels walking the SPLIT partials
    COMBINE_BLOCK_S at a time (mean and M2, fp32), each step a read of what `_kernel` just wrote
    (dram_bytes 0: still in L2)."""
    _, split, _ = _plan_point(cfg, point)
    return [{"name": "_combine_kernel", "grid": triton.cdiv(point["C"], COMBINE_BLOCK_C),
             "iterations": triton.cdiv(split, COMBINE_BLOCK_S), "tile_bytes": 2 * 4 * COMBINE_BLOCK_S * COMBINE_BLOCK_C,
             "dram_bytes": 0, "blocks_per_sm": 8}]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "fp16"))
    N, C, H, W = point["N"], point["C"], point["H"], point["W"]
    channels_last = _layout(point) == "nhwc"
    x = torch.empty((N, C, H, W), dtype=dt, device="meta")
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    _, split, _ = _plan_point(cfg, point)
    ws = torch.empty((2, split, C), dtype=torch.float32, device="meta")
    return _kernel_args(x, ws, C, H * W, N * H * W, int(point.get("sms", H200_SMS)), channels_last, cfg)
