"""FP8 cast + transpose of FP8 training (Transformer Engine's fused cast_transpose under delayed
per-tensor scaling), a bare @triton.jit kernel + its launcher.

    y[m, n]  = e4m3(clamp(fp32(x[m, n]) * scale, -448, 448))      [M, N] row-major
    yt[n, m] = y[m, n]                                              [N, M] row-major
    amax     = max(amax, max_{m, n} |x[m, n]|)                      fp32, one element
    scale_inv = 1 / scale                                           fp32, one element

An FP8 linear layer needs its input twice: y (row-major) for the forward GEMM and yt, the same fp8
values transposed, for the weight-gradient GEMM of the backward pass (the fp8 tensor-core GEMM takes
K-major operands only), so the cast writes both at once; the amax of the unscaled x feeds the next
step's scale (the amax history of delayed scaling), and scale_inv the GEMMs' dequantization. The
rounding is fp32 multiply, clamp to e4m3's largest finite 448 (a stale amax lets values overflow:
saturate, as cvt.rn.satfinite does), then round to nearest even -- torch's
(x.float() * scale).clamp(-448, 448).to(torch.float8_e4m3fn), bit for bit. NaN inputs are not
handled (clamp's min / max may drop them).

x: [M, N] bf16 / fp16 / fp32 with unit column stride (a row pitch wider than N read in place, e.g. a
column slice of a fused QKV buffer; any other layout is made contiguous first); scale: fp32 [1] on
x's device (the per-tensor scale, read by every CTA); y: fp8 e4m3fn [M, N] and yt: [N, M], both
contiguous (fresh, or given: views of one buffer, as the launcher's are); amax: fp32 [1], reduced
into with an atomic max (a fresh zero, or the caller's running buffer); scale_inv: fp32 [1], written
by CTA 0 (an IEEE division, div_rn, as torch's 1 / scale).

One CTA owns a strip of BLOCK_M rows by TILES x BLOCK_N columns and walks its TILES tiles of
[BLOCK_M, BLOCK_N] along N (program id -> (row block, column strip), the strip fastest, so
neighbouring CTAs read neighbouring column strips of the same rows). Each step loads the tile with n
fastest (coalesced reads of x's rows: BLOCK_N x 2 contiguous bytes a row for bf16), upcasts, folds
the tile's max |x| (a reduction over the whole tile) into the CTA's running max, scales, clamps and
rounds to e4m3, stores the tile to y (BLOCK_N fp8 bytes a row) and `tl.trans` of the same fp8 tile to yt
(BLOCK_M contiguous bytes in each of BLOCK_N rows: the register -> shared -> register layout change
the compiler inserts: BLOCK_M x BLOCK_N bytes of shared memory when it converts the fp8 tile, as
triton 3.9 does; triton 3.6 converts the loaded x tile instead, twice the bytes, and recomputes the
cast in the transposed layout). After its tiles a CTA issues one fp32 atomic max on amax: max is exact and
order-independent, so the result equals torch's x.abs().amax() exactly whatever the CTAs' order.
Masks: the M tail (rows past M: EVEN_M = 0) and the N tail (a last strip's partial tile or tiles
wholly past N: EVEN_N = 0); both constexprs the launcher sets, so the points' shapes (all multiples
of the tiles) compile without a mask. Offsets inside a tile are int32, the tile bases int64.

Tunables: BLOCK_M, BLOCK_N (the tile: its shape sets the run lengths of the three streams -- x rows
of BLOCK_N elements, y rows of BLOCK_N bytes, yt rows of BLOCK_M bytes -- and with num_warps the
elements a thread holds and the shared-memory transpose), TILES (tiles a CTA: fewer, longer-running
CTAs, one atomic per CTA), num_warps, num_stages (no dot: the loop's loads are not pipelined, held
at 1).
Problem parameters (a workload point): M (tokens), N (features), dtype (x's: bf16 / fp16 / fp32).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, Y, YT, SCALE, AMAX, SCALE_INV, M, N, stride_xm,
            EVEN_M: tl.constexpr, EVEN_N: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TILES: tl.constexpr):
    FP8_MAX: tl.constexpr = 448.0                       # largest finite float8_e4m3fn
    pid = tl.program_id(0)
    strips_n = tl.cdiv(N, BLOCK_N * TILES)
    pid_m = pid // strips_n
    pid_n = pid - pid_m * strips_n
    m0 = pid_m * BLOCK_M
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    s = tl.load(SCALE)
    if pid == 0:
        tl.store(SCALE_INV, tl.math.div_rn(1.0, s))
    x_rows = X + m0.to(tl.int64) * stride_xm            # the row block's bases (int64)
    y_rows = Y + m0.to(tl.int64) * N
    x_in = rm[:, None] * stride_xm + rn[None, :]        # [BLOCK_M, BLOCK_N] in-tile offsets (int32)
    y_in = rm[:, None] * N + rn[None, :]
    yt_in = rn[:, None] * M + rm[None, :]               # [BLOCK_N, BLOCK_M]: yt rows n, columns m
    m_ok = (m0 + rm) < M
    cta_max = 0.0                                       # max |x| over the CTA's tiles (fp32)
    for t in range(TILES):
        n0 = (pid_n * TILES + t) * BLOCK_N
        yt_tile = YT + n0.to(tl.int64) * M + m0
        if EVEN_M and EVEN_N:                          # every tile whole: no masks
            x = tl.load(x_rows + n0 + x_in)
        else:
            n_ok = (n0 + rn) < N
            mask = m_ok[:, None] & n_ok[None, :]
            mask_t = n_ok[:, None] & m_ok[None, :]
            x = tl.load(x_rows + n0 + x_in, mask=mask, other=0.0)
        xf = x.to(tl.float32)
        cta_max = tl.maximum(cta_max, tl.max(tl.max(tl.abs(xf), axis=1), axis=0))
        q = tl.minimum(tl.maximum(xf * s, -FP8_MAX), FP8_MAX).to(Y.dtype.element_ty)
        if EVEN_M and EVEN_N:
            tl.store(y_rows + n0 + y_in, q)
            tl.store(yt_tile + yt_in, tl.trans(q))
        else:
            tl.store(y_rows + n0 + y_in, q, mask=mask)
            tl.store(yt_tile + yt_in, tl.trans(q), mask=mask_t)
    tl.atomic_max(AMAX, cta_max)        # |x| >= 0: one exact float max a CTA


# ---------------------------------------------------------------- launcher
ROLE = "held-out-24"
DTYPES = ("bf16", "fp16", "fp32")                     # x's; y and yt are float8_e4m3fn
TUNABLES = ("BLOCK_M", "BLOCK_N", "TILES", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 64, "BLOCK_N": 64, "TILES": 2, "num_warps": 4, "num_stages": 1}
FP8_MAX = 448.0
# the study's sweep: 3 x 3 x 3 x 2 = 54 configs, 4-128 elements a thread a step (num_stages: no dot)
SWEEP_AXES = {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "TILES": [1, 2, 4], "num_warps": [4, 8],
              "num_stages": [1]}

# FP8 (delayed per-tensor scaling) training of Llama-class models: the cast + transpose of a linear
# layer's input, 268 MB - 1.07 GB of traffic each (5-21x the H200's 50 MB L2: HBM-bound at roughly
# 65-270 us); they differ in the row length N (4096 / 8192 / 14336: the number of column strips and
# yt's row pitch), the token count M (yt's row length), the aspect (tall 4:1 vs wide 4:7) and dtype.
POINTS = [
    # Llama-3-8B: the hidden states entering the QKV / gate-up projections, a micro-batch of 2 x 8192
    # tokens, bf16: x [16384, 4096] 134 MB read, y and yt 67 MB each written
    {"M": 16384, "N": 4096, "dtype": "bf16"},
    # Llama-3-70B: the hidden states of a 4 x 8192-token micro-batch (hidden 8192), bf16: x [32768,
    # 8192] 537 MB read, y and yt 268 MB each written
    {"M": 32768, "N": 8192, "dtype": "bf16"},
    # Mistral-7B / Llama-3-8B MLP down-projection input (the SwiGLU output, intermediate 14336) of a
    # fp16-AMP fine-tune with FP8 GEMMs, 8192 tokens: x [8192, 14336] fp16 235 MB read, y and yt
    # 117 MB each written
    {"M": 8192, "N": 14336, "dtype": "fp16"},
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


def _check_point(point) -> None:
    for k in ("M", "N"):
        if not isinstance(point[k], int) or point[k] < 1:
            raise ValueError(f"{k}={point[k]!r} must be a positive int")
    _elem_bytes(point.get("dtype", "bf16"))


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_M", "BLOCK_N"):
        v = cfg[k]
        if not isinstance(v, int) or v < 16 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two >= 16")
    v = cfg["num_warps"]
    if not isinstance(v, int) or v < 1 or v > 32 or v & (v - 1):
        raise ValueError(f"num_warps={v!r} must be a power of two, 1-32")
    if not isinstance(cfg["TILES"], int) or cfg["TILES"] < 1:
        raise ValueError(f"TILES={cfg['TILES']!r} must be a positive int")


def _grid(M: int, N: int, cfg) -> tuple[int]:
    _check_cfg(cfg)
    return (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"] * cfg["TILES"]),)


def _kernel_args(x, y, yt, scale, amax, scale_inv, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    M, N = x.shape
    return dict(X=x, Y=y, YT=yt, SCALE=scale, AMAX=amax, SCALE_INV=scale_inv, M=M, N=N, stride_xm=x.stride(0),
                EVEN_M=int(M % cfg["BLOCK_M"] == 0), EVEN_N=int(N % (cfg["BLOCK_N"] * cfg["TILES"]) == 0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], TILES=cfg["TILES"])


def _check_scalar(name: str, t, x) -> None:
    import torch
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.numel() != 1:
        raise ValueError(f"{name} must be a one-element fp32 tensor; got "
                         f"{getattr(t, 'dtype', type(t).__name__)} {tuple(getattr(t, 'shape', ()))}")
    if t.device != x.device:
        raise ValueError(f"{name} is on {t.device}, x on {x.device}")


def _check_out(name: str, t, shape, x) -> None:
    import torch
    if t.dtype != torch.float8_e4m3fn or tuple(t.shape) != shape or not t.is_contiguous():
        raise ValueError(f"{name} must be a contiguous float8_e4m3fn tensor {list(shape)}; got {t.dtype} "
                         f"{list(t.shape)}{'' if t.is_contiguous() else ' (not contiguous)'}")
    if t.device != x.device:
        raise ValueError(f"{name} is on {t.device}, x on {x.device}")


def cast_transpose_fp8(x, scale, *, amax=None, scale_inv=None, out=None, out_t=None, BLOCK_M: int = 64,
                       BLOCK_N: int = 64, TILES: int = 2, num_warps: int = 4, num_stages: int = 1):
    """x [M, N] (bf16 / fp16 / fp32), scale (fp32 [1], per tensor) -> (y, yt, amax, scale_inv): y [M, N]
    and yt [N, M] float8_e4m3fn holding e4m3(clamp(x * scale, -448, 448)) (yt = y transposed, both
    contiguous: `out` / `out_t` when given), amax (fp32 [1]: `amax` when given, a running buffer the
    kernel max-reduces max|x| into, else a fresh zero) and scale_inv = 1 / scale (fp32 [1])."""
    import torch
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"expected x [M, N]; got {tuple(getattr(x, 'shape', ()))}")
    if x.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise ValueError(f"x must be bf16 / fp16 / fp32; got {x.dtype}")
    _check_scalar("scale", scale, x)
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "TILES": TILES, "num_warps": num_warps}
    _check_cfg(cfg)
    M, N = x.shape
    if amax is None:
        amax = torch.zeros((1,), dtype=torch.float32, device=x.device)
    _check_scalar("amax", amax, x)
    if scale_inv is None:
        scale_inv = torch.empty((1,), dtype=torch.float32, device=x.device)
    _check_scalar("scale_inv", scale_inv, x)
    if out is None:
        out = torch.empty((M, N), dtype=torch.float8_e4m3fn, device=x.device)
    _check_out("out", out, (M, N), x)
    if out_t is None:
        out_t = torch.empty((N, M), dtype=torch.float8_e4m3fn, device=x.device)
    _check_out("out_t", out_t, (N, M), x)
    if M == 0 or N == 0:
        scale_inv.copy_(1.0 / scale.reshape(1))
        return out, out_t, amax, scale_inv
    if x.stride(1) != 1 or x.stride(0) < N:
        x = x.contiguous()
    if BLOCK_M * x.stride(0) >= 2**31 or BLOCK_N * M >= 2**31 or N + BLOCK_N * TILES >= 2**31:
        raise ValueError(f"x [{M}, {N}] (row stride {x.stride(0)}) is too large for the kernel's int32 in-tile "
                         f"offsets at BLOCK_M={BLOCK_M}, BLOCK_N={BLOCK_N}")
    _kernel[_grid(M, N, cfg)](**_kernel_args(x, out, out_t, scale.reshape(1), amax.reshape(1),
                                             scale_inv.reshape(1), cfg),
                              num_warps=num_warps, num_stages=num_stages)
    return out, out_t, amax, scale_inv


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: N(0, 1) activations with a few outlier feature columns (every 512th, x 16: the massive
    activations of LLM hidden states) in the point's dtype, contiguous; scale = 448 / (0.8 max|x|), a
    delayed-scaling scale from a stale (smaller) amax, so the largest values saturate at +-448 and
    the scale is no power of two; amax a zeroed fp32 [1] buffer (the running amax the kernel reduces
    into), scale_inv a zeroed fp32 [1]. Drawn on the CPU from a seeded torch.Generator, then moved."""
    import torch
    _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    M, N = point["M"], point["N"]
    x = torch.randn((M, N), generator=gen)
    x[:, 7::512] *= 16.0
    x = x.to(_torch_dtype(point.get("dtype", "bf16"))).to(device)
    scale = torch.tensor([FP8_MAX / (0.8 * float(x.abs().max()))], dtype=torch.float32, device=device)
    return {"x": x, "scale": scale, "amax": torch.zeros((1,), dtype=torch.float32, device=device),
            "scale_inv": torch.zeros((1,), dtype=torch.float32, device=device)}


def _flat_outputs(M: int, N: int, device):
    """One fp8 buffer of 2 M N bytes: y [M, N] its first half, yt [N, M] its second (the gate sees both)."""
    import torch
    buf = torch.empty((2 * M * N,), dtype=torch.float8_e4m3fn, device=device)
    return buf, buf[:M * N].view(M, N), buf[M * N:].view(N, M)


def launch(inputs, cfg):
    """y and yt written into the two halves of one fp8 buffer, returned flat ([2 M N]: y's M N values
    row-major, then yt's); amax and scale_inv go to the inputs' buffers."""
    x = inputs["x"]
    M, N = x.shape
    buf, y, yt = _flat_outputs(M, N, x.device)
    cast_transpose_fp8(x, inputs["scale"], amax=inputs["amax"], scale_inv=inputs["scale_inv"], out=y, out_t=yt,
                       BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"], TILES=cfg["TILES"],
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return buf


def reference_fp8(inputs):
    """torch's cast: (x.float() * scale).clamp(-448, 448).to(float8_e4m3fn), [M, N]."""
    import torch
    return (inputs["x"].float() * inputs["scale"].float()).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def reference(inputs):
    """fp32 [2 M N]: the e4m3 values of torch's cast row-major, then the same values transposed
    ([N, M] row-major) -- launch's buffer, upcast."""
    import torch
    q = reference_fp8(inputs).float()
    return torch.cat([q.reshape(-1), q.t().reshape(-1)])


def reference_amax(inputs):
    """fp32 [1]: max(the amax buffer as it was, max|x|)."""
    import torch
    return torch.maximum(inputs["amax"], inputs["x"].float().abs().amax().reshape(1))


def torch_baseline(inputs):
    """What eager torch runs: the amax (abs, then a max reduction), the scale in fp32 and the clamp,
    the cast to e4m3 (copied into y), then y transposed into yt (one more pass over the fp8
    values); y and yt in one buffer, as launch's."""
    import torch
    x = inputs["x"]
    M, N = x.shape
    buf, y, yt = _flat_outputs(M, N, x.device)
    amax = inputs["amax"]
    torch.maximum(amax, x.abs().amax().float().reshape(1), out=amax)
    y.copy_((x.float() * inputs["scale"]).clamp_(-FP8_MAX, FP8_MAX))
    yt.copy_(y.t())
    torch.reciprocal(inputs["scale"], out=inputs["scale_inv"])
    return buf


def bytes_moved(point) -> int:
    """x read once, y and yt (1 byte an element) written once each, scale read, amax and scale_inv
    written (4 bytes each)."""
    _check_point(point)
    n = point["M"] * point["N"]
    return n * (_elem_bytes(point.get("dtype", "bf16")) + 2) + 12


def flops(point) -> int:
    """Per element: the scale multiply and the amax compare (the clamp and the e4m3 rounding not counted)."""
    _check_point(point)
    return 2 * point["M"] * point["N"]


def grid(cfg, point) -> tuple[int]:
    """(CTAs,): row blocks of BLOCK_M x column strips of TILES x BLOCK_N, the strip fastest."""
    _check_point(point)
    return _grid(point["M"], point["N"], cfg)


def loop_iterations(cfg, point) -> int:
    """Tiles a CTA: TILES (every CTA the same; a last strip's tiles past N are masked, not skipped)."""
    _check_point(point)
    _check_cfg(cfg)
    return cfg["TILES"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x
    contiguous [M, N] in the point's dtype, y [M, N] and yt [N, M] float8_e4m3fn, scale / amax /
    scale_inv fp32 [1]."""
    import torch
    _check_point(point)
    _check_cfg(cfg)
    M, N = point["M"], point["N"]
    x = torch.empty((M, N), dtype=_torch_dtype(point.get("dtype", "bf16")), device="meta")
    y = torch.empty((M, N), dtype=torch.float8_e4m3fn, device="meta")
    yt = torch.empty((N, M), dtype=torch.float8_e4m3fn, device="meta")
    one = lambda: torch.empty((1,), dtype=torch.float32, device="meta")   # noqa: E731
    return _kernel_args(x, y, yt, one(), one(), one(), cfg)
