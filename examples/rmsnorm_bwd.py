"""RMSNorm backward over the last dim (what a training framework runs for every RMSNorm of a
Llama-style decoder, as Liger's fused rms_norm backward), a bare @triton.jit kernel + a
partial-sum reduction kernel + the launcher.

    y  = x * rstd * (w + offset),   rstd = 1 / sqrt(mean(x^2) + eps)      (the forward)
    g  = dy * (w + offset)                                                 (per row, fp32)
    dx = rstd * (g - x * rstd^2 * mean(g * x))                             (x's dtype)
    dw = sum over rows of dy * x * rstd                                    (w's dtype)

x, dy: [M, N] fp16 / bf16 / fp32 (M tokens, N the hidden size), one dtype, N contiguous (rows
may be strided); w: [N] (any float dtype); rstd: [M] fp32, as the forward saved it; offset: 0
for Llama / Qwen / Mistral, 1 for Gemma (whose checkpoints store w - 1). dx: [M, N] in x's
dtype (fresh, contiguous); dw: [N] in w's dtype. All math in fp32.

``_kernel`` is persistent: P = min(PROGRAMS_PER_SM x NUM_SMS, cdiv(M, BLOCK_M)) programs
(NUM_SMS = 132, an H200's, unless the inputs say otherwise), program p walking the row tiles
p, p + S, p + 2S, ... with S = PROGRAMS_PER_SM x NUM_SMS (a grid-stride loop over [BLOCK_M,
BLOCK_N] tiles of BLOCK_M consecutive rows, as Triton's persistent-matmul tutorial strides by
its NUM_SMS constexpr; programs differ by at most one tile, and where the tiles are fewer than
S each program takes one). The row is loaded whole (BLOCK_N = next_power_of_2(N) >= N; the
lanes past N are masked), so each element of x and dy is read once and dx written once: per
tile x, dy, rstd and w are loaded (w from L1 / L2 after the first tile: reloading it costs
fewer registers than holding it), the row sums of g * x reduced (one cross-warp reduction per
row), dx stored, and dy * x * rstd summed over the tile's rows into a [BLOCK_N] fp32
accumulator that lives in registers across the program's tiles. At the end each program
stores its accumulator as row p of an fp32 workspace [P, N] (plain stores, no atomics);
``_reduce_kernel`` then sums the P partial rows of each column in a fixed order
(deterministic) and writes dw. Masks give the M tail (the last tile) and the N tail.
The row loop is a ``tl.range`` with num_stages=LOOP_STAGES, as Triton's fused-softmax tutorial
does: a loop without a dot is software-pipelined only when it names its own stage count (the
launch's num_stages leaves it alone), so LOOP_STAGES is this kernel's pipelining lever. From 2
on, the compiler copies the next tiles' x, dy and w into shared memory (cp.async, up to
LOOP_STAGES - 1 tiles ahead) while this one computes: the latency hiding a program needs when
only one or two fit on an SM.

Tunables: BLOCK_M (rows per tile, a power of two: more bytes in flight per step, and
BLOCK_M x BLOCK_N / (32 num_warps) fp32 elements of x and of dy per thread), PROGRAMS_PER_SM
(programs per SM: more tiles in flight, shorter loops, more partial rows to reduce),
LOOP_STAGES (1: plain loads; >= 2: the pipelined loop), num_warps, num_stages (no loop that
it governs: it changes nothing in the cubin). BLOCK_N is not swept: at a point its only
sensible value is next_power_of_2(N) (a wider block adds masked lanes and registers, never
bytes); a cfg may still name one (a power of two >= N).
Problem parameters (a workload point): M, N, dtype (x's and dy's; w has x's dtype unless
w_dtype says otherwise), offset (0 or 1); sms (the SM count the grid is sized for, default
NUM_SMS) is for tests.
Timing covers both kernels; grid / loop_iterations / cta_iterations describe ``_kernel``.
"""

from __future__ import annotations

import triton
import triton.language as tl

NUM_SMS = 132              # the launcher's SM count for the study (an H200; H100 SXM has 132 too)
EPS = 1e-6                 # the forward's eps (make_inputs uses it for the saved rstd)
MAX_BLOCK_N = 16384        # the whole row lives in registers: longer rows are refused
REDUCE_BLOCK_P = 64        # _reduce_kernel: partial rows per step
REDUCE_BLOCK_N = 64        # _reduce_kernel: columns per CTA (256 B of fp32 per partial row)
REDUCE_WARPS = 4


@triton.jit
def _kernel(X, DY, W, RSTD, DX, DWP, M, N, stride_xm, stride_dym, stride_dxm, stride_p, offset,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PROGRAMS_PER_SM: tl.constexpr, NUM_SMS: tl.constexpr,
            LOOP_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    n_ok = cols < N
    ms = tl.arange(0, BLOCK_M)
    dw = tl.zeros([BLOCK_N], tl.float32)
    inv_n = 1.0 / N
    # grid-stride over row tiles; the launcher's grid is min(PROGRAMS_PER_SM x NUM_SMS, tiles)
    for r0 in tl.range(pid * BLOCK_M, M, PROGRAMS_PER_SM * NUM_SMS * BLOCK_M, num_stages=LOOP_STAGES):
        rows = r0 + ms
        m_ok = rows < M
        ok = m_ok[:, None] & n_ok[None, :]
        r64 = rows.to(tl.int64)[:, None]
        # w (+ Gemma's offset) per tile: L1 / L2 hits after the first (past N: dy is 0, so g is 0)
        w = tl.load(W + cols, mask=n_ok, other=0.0).to(tl.float32) + offset
        x = tl.load(X + r64 * stride_xm + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        dy = tl.load(DY + r64 * stride_dym + cols[None, :], mask=ok, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + rows, mask=m_ok, other=0.0)
        g = dy * w[None, :]
        # c = rstd^3 * mean(g * x): dx = rstd * g - c * x
        c = tl.sum(g * x, axis=1) * (rstd * rstd * rstd * inv_n)
        dx = g * rstd[:, None] - x * c[:, None]
        tl.store(DX + r64 * stride_dxm + cols[None, :], dx.to(DX.dtype.element_ty), mask=ok)
        dw += tl.sum(dy * (x * rstd[:, None]), axis=0)
    tl.store(DWP + pid.to(tl.int64) * stride_p + cols, dw, mask=n_ok)


@triton.jit
def _reduce_kernel(DWP, DW, P, N, stride_p, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = cols < N
    ps = tl.arange(0, BLOCK_P)
    acc = tl.zeros([BLOCK_P, BLOCK_N], tl.float32)
    for p0 in range(0, P, BLOCK_P):
        p = p0 + ps
        ok = (p < P)[:, None] & n_ok[None, :]
        acc += tl.load(DWP + p.to(tl.int64)[:, None] * stride_p + cols[None, :], mask=ok, other=0.0)
    tl.store(DW + cols, tl.sum(acc, axis=0).to(DW.dtype.element_ty), mask=n_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp16", "fp32")
TUNABLES = ("BLOCK_M", "PROGRAMS_PER_SM", "LOOP_STAGES", "num_warps", "num_stages")
# Liger's choice for a 4096-wide row: one program per SM, one row a step, plain loads, 8 warps
BASELINE = {"BLOCK_M": 1, "PROGRAMS_PER_SM": 1, "LOOP_STAGES": 1, "num_warps": 8, "num_stages": 1}

# One backward of one RMSNorm in a training step: x and dy read, dx written (3 x M x N x e
# bytes: 168-768 MiB, 3.5-16x the H200's 50 MB L2; 37-168 us at 4.8 TB/s; the sweep's best
# measured ~58, ~65 and ~213 us on an H200 with triton 3.6.0, its worst 2-2.7x that). Rows of 7,
# 16 and 4 KiB: registers per thread (BLOCK_M x BLOCK_N / 32 num_warps elements of x and dy,
# plus w and the dw accumulator: 40-254 here) decide how many programs fit on an SM.
POINTS = [
    # Gemma-2-9B hidden (3584: BLOCK_N 4096, 1/8 of the lanes masked), (1 + w) weight, 4 x 2048
    # tokens, bf16: x, dy, dx 56 MiB each
    {"M": 8192, "N": 3584, "dtype": "bf16", "offset": 1.0},
    # Llama-3-70B hidden (8192), 2 x 2048 tokens, bf16: 64 MiB each, rows of 16 KiB
    {"M": 4096, "N": 8192, "dtype": "bf16", "offset": 0.0},
    # Qwen3-0.6B hidden (1024), 64k tokens, fp32 (full-precision training): 256 MiB each, rows of 4 KiB
    {"M": 65536, "N": 1024, "dtype": "fp32", "offset": 0.0},
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


def _w_dtype_name(point) -> str:
    return point.get("w_dtype", point.get("dtype", "bf16"))


def _block_n(cfg, N: int) -> int:
    """cfg's BLOCK_N when it names one (a power of two >= N), else next_power_of_2(N)."""
    b = cfg.get("BLOCK_N") or triton.next_power_of_2(max(N, 1))
    if b & (b - 1) or b < N:
        raise ValueError(f"BLOCK_N={b} must be a power of two >= N={N} (the row is loaded whole)")
    if b > MAX_BLOCK_N:
        raise ValueError(f"BLOCK_N={b}: rows wider than {MAX_BLOCK_N} are not supported (the row lives in registers)")
    return b


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_M"]
    if v < 1 or v & (v - 1):
        raise ValueError(f"BLOCK_M={v} must be a power of two")
    for name in ("PROGRAMS_PER_SM", "LOOP_STAGES"):
        if cfg[name] < 1:
            raise ValueError(f"{name}={cfg[name]} must be >= 1")


def _programs(M: int, cfg, num_sms: int = NUM_SMS) -> int:
    """The persistent grid: PROGRAMS_PER_SM per SM, no more than there are row tiles."""
    return max(1, min(cfg["PROGRAMS_PER_SM"] * num_sms, triton.cdiv(M, cfg["BLOCK_M"])))


def _kernel_args(x, dy, w, rstd, dx, dw_part, stride_p, offset, num_sms, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    dw_part: the fp32 [P, N] workspace (row stride stride_p, given apart so example_args can
    pass a stand-in sized to dw)."""
    M, N = x.shape
    return dict(X=x, DY=dy, W=w, RSTD=rstd, DX=dx, DWP=dw_part, M=M, N=N, stride_xm=x.stride(0),
                stride_dym=dy.stride(0), stride_dxm=dx.stride(0), stride_p=stride_p, offset=float(offset),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=_block_n(cfg, N), PROGRAMS_PER_SM=cfg["PROGRAMS_PER_SM"],
                NUM_SMS=num_sms, LOOP_STAGES=cfg["LOOP_STAGES"])


def rms_norm_backward(dy, x, weight, rstd, offset=0.0, *, BLOCK_M=1, PROGRAMS_PER_SM=1, LOOP_STAGES=1, BLOCK_N=None,
                      num_warps=8, num_stages=1, num_sms=None):
    """(dx, dw) of y = x * rstd * (weight + offset) over the last dim, for the upstream gradient
    dy [M, N] and x [M, N] (one dtype: fp16, bf16 or fp32; rows may be strided, other layouts
    are copied), weight [N] (any float dtype) and the forward's saved rstd [M] fp32. dx: [M, N]
    in x's dtype; dw: [N] in weight's dtype. num_sms: the persistent grid's SM count (default:
    the device's; NUM_SMS on a CPU)."""
    import torch
    if x.dim() != 2 or dy.shape != x.shape or weight.shape != (x.shape[1],):
        raise ValueError(f"expected dy [M, N], x [M, N], weight [N]; got {tuple(dy.shape)}, "
                         f"{tuple(x.shape)}, {tuple(weight.shape)}")
    M, N = x.shape
    if rstd.shape != (M,) or rstd.dtype != torch.float32:
        raise ValueError(f"rstd must be fp32 [{M}]; got {rstd.dtype} {tuple(rstd.shape)}")
    if x.dtype != dy.dtype or x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"x and dy must share one fp16 / bf16 / fp32 dtype; got {x.dtype}, {dy.dtype}")
    if weight.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"weight dtype {weight.dtype} is not fp16, bf16 or fp32")
    cfg = {"BLOCK_M": BLOCK_M, "PROGRAMS_PER_SM": PROGRAMS_PER_SM, "LOOP_STAGES": LOOP_STAGES, "BLOCK_N": BLOCK_N}
    _check_cfg(cfg)
    dx = torch.empty((M, N), dtype=x.dtype, device=x.device)
    dw = torch.zeros((N,), dtype=weight.dtype, device=x.device)
    if M == 0 or N == 0:
        return dx, dw
    cfg["BLOCK_N"] = _block_n(cfg, N)
    if x.stride(1) != 1:
        x = x.contiguous()
    if dy.stride(1) != 1:
        dy = dy.contiguous()
    weight, rstd = weight.contiguous(), rstd.contiguous()
    if num_sms is None:
        num_sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else NUM_SMS
    if num_sms < 1:
        raise ValueError(f"num_sms={num_sms} must be >= 1")
    P = _programs(M, cfg, num_sms)
    ws = torch.empty((P, N), dtype=torch.float32, device=x.device)
    _kernel[(P,)](**_kernel_args(x, dy, weight, rstd, dx, ws, ws.stride(0), offset, num_sms, cfg),
                  num_warps=num_warps, num_stages=num_stages)
    _reduce_kernel[(triton.cdiv(N, REDUCE_BLOCK_N),)](ws, dw, P, N, ws.stride(0), BLOCK_P=REDUCE_BLOCK_P,
                                                      BLOCK_N=REDUCE_BLOCK_N, num_warps=REDUCE_WARPS)
    return dx, dw


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x N(0, 1) with a per-row spread (so rstd differs per row), rstd computed from it in fp32
    as the forward saves it (eps EPS), dy N(0, 1) with a per-row scale, weight 1 + 0.1 N(0, 1)
    (offset 0) or 0.1 N(0, 1) (offset 1: Gemma stores w - 1). Drawn on the CPU (one seed, one
    set of inputs on every device), then moved. num_sms: the point's "sms" (default NUM_SMS), so
    the persistent grid is the one `grid` describes on any GPU."""
    import torch
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    wdt = _torch_dtype(_w_dtype_name(point))
    M, N = point["M"], point["N"]
    offset = float(point.get("offset", 0.0))
    spread = 0.5 + 1.5 * torch.rand((M, 1), generator=gen)
    x = (spread * torch.randn((M, N), generator=gen)).to(dt)
    dy = ((0.5 + torch.rand((M, 1), generator=gen)) * torch.randn((M, N), generator=gen)).to(dt)
    weight = ((1.0 - offset) + 0.1 * torch.randn((N,), generator=gen)).to(wdt)
    x, dy, weight = x.to(device), dy.to(device), weight.to(device)
    rstd = torch.rsqrt(x.float().square().mean(dim=1) + EPS)
    return {"x": x, "dy": dy, "weight": weight, "rstd": rstd, "offset": offset, "num_sms": point.get("sms", NUM_SMS)}


def launch(inputs, cfg):
    """dx [M, N] in x's dtype (dw, the wrapper's second output, is computed too: both kernels
    run; reference_grads is its reference)."""
    dx, _ = rms_norm_backward(inputs["dy"], inputs["x"], inputs["weight"], inputs["rstd"], inputs["offset"],
                              BLOCK_M=cfg["BLOCK_M"], PROGRAMS_PER_SM=cfg["PROGRAMS_PER_SM"],
                              LOOP_STAGES=cfg["LOOP_STAGES"], BLOCK_N=cfg.get("BLOCK_N"), num_warps=cfg["num_warps"],
                              num_stages=cfg["num_stages"], num_sms=inputs.get("num_sms", NUM_SMS))
    return dx


def _f64(inputs):
    x, dy = inputs["x"].double(), inputs["dy"].double()
    rstd = inputs["rstd"].double()[:, None]
    w = inputs["weight"].double() + inputs["offset"]
    return x, dy, rstd, w


def reference(inputs):
    """dx from the saved rstd, in fp64; fp32 out."""
    x, dy, rstd, w = _f64(inputs)
    g = dy * w
    return (rstd * (g - x * rstd.square() * (g * x).mean(dim=1, keepdim=True))).float()


def reference_grads(inputs):
    """dw [N] in fp64 sums over the rows; fp32 out."""
    x, dy, rstd, _ = _f64(inputs)
    return (dy * x * rstd).sum(dim=0).float()


def torch_baseline(inputs):
    """The eager torch backward a user writes (as HF's RMSNorm's autograd graph amounts to): fp32
    math, dx in x's dtype (dw, a column sum, computed too)."""
    x, dy = inputs["x"].float(), inputs["dy"].float()
    rstd = inputs["rstd"][:, None]
    g = dy * (inputs["weight"].float() + inputs["offset"])
    xhat = x * rstd
    dx = rstd * (g - xhat * (g * xhat).mean(dim=1, keepdim=True))
    dw = (dy * xhat).sum(dim=0).to(inputs["weight"].dtype)       # noqa: F841 - computed, as autograd does
    return dx.to(inputs["x"].dtype)


def bytes_moved(point) -> int:
    """x and dy read once, dx written once, weight read once (per program, from L2 but the
    first), rstd read (fp32), dw written (w's dtype). Not counted: the fp32 partial workspace
    (P x N x 4 bytes written by _kernel, read back by _reduce_kernel: in L2, the kernel's
    choice)."""
    M, N = point["M"], point["N"]
    e = _elem_bytes(point.get("dtype", "bf16"))
    ew = _elem_bytes(_w_dtype_name(point))
    return 3 * M * N * e + 2 * N * ew + 4 * M


def flops(point) -> int:
    """Per element: g (1), the row sum of g * x (2), dx (3), dw's dy * x * rstd and its sum (3)."""
    return 9 * point["M"] * point["N"]


def grid(cfg, point) -> int:
    """P = min(PROGRAMS_PER_SM x NUM_SMS, cdiv(M, BLOCK_M)) persistent programs (also the
    workspace's partial rows)."""
    return _programs(point["M"], cfg, point.get("sms", NUM_SMS))


def cta_iterations(cfg, point) -> list[int]:
    """Program p's row tiles: p, p + S, ... < T = cdiv(M, BLOCK_M), S = PROGRAMS_PER_SM x NUM_SMS
    (S = P, the first T mod P programs taking one more; or P = T < S, one each)."""
    tiles = triton.cdiv(point["M"], cfg["BLOCK_M"])
    P = grid(cfg, point)
    return [triton.cdiv(tiles - p, P) for p in range(P)]


def loop_iterations(cfg, point) -> int:
    """Row tiles of the busiest program: ceil(cdiv(M, BLOCK_M) / P)."""
    return triton.cdiv(triton.cdiv(point["M"], cfg["BLOCK_M"]), grid(cfg, point))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory).
    The workspace is a stand-in sized to dw ([N] fp32); stride_p is the real [P, N]
    workspace's row stride (N)."""
    import torch
    dt = _torch_dtype(point.get("dtype", "bf16"))
    wdt = _torch_dtype(_w_dtype_name(point))
    M, N = point["M"], point["N"]
    x = torch.empty((M, N), dtype=dt, device="meta")
    dy = torch.empty((M, N), dtype=dt, device="meta")
    dx = torch.empty((M, N), dtype=dt, device="meta")
    w = torch.empty((N,), dtype=wdt, device="meta")
    rstd = torch.empty((M,), dtype=torch.float32, device="meta")
    dwp = torch.empty((N,), dtype=torch.float32, device="meta")
    return _kernel_args(x, dy, w, rstd, dx, dwp, N, point.get("offset", 0.0), point.get("sms", NUM_SMS), cfg)


def secondary_kernels(cfg, point) -> list[dict]:
    """`_reduce_kernel`, for rank: one CTA per REDUCE_BLOCK_N columns walking the P partial rows
    REDUCE_BLOCK_P at a time (fp32, 4 B a value), each step a read of what `_kernel` just wrote
    (dram_bytes 0: in L2; the workspace is P x N x 4 B <= 35 MB)."""
    P, N = grid(cfg, point), point["N"]
    return [{"name": "_reduce_kernel", "grid": triton.cdiv(N, REDUCE_BLOCK_N),
             "iterations": triton.cdiv(P, REDUCE_BLOCK_P), "tile_bytes": 4 * REDUCE_BLOCK_P * REDUCE_BLOCK_N,
             "dram_bytes": 0, "blocks_per_sm": 8}]
