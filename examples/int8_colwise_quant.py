"""Per-output-channel symmetric int8 weight quantization (what a W8A16 / W8A8 serving stack does to
a bf16 / fp16 checkpoint at load time), a bare @triton.jit kernel + its launcher.

The weight W [K, N] (or a stack of E experts' weights [E, K, N]) is stored with N contiguous: each
column n is one output channel (the [in, out] layout of a JAX / Flax kernel, of transformers'
fused-experts modules, of a weight pre-transposed for a K-major GEMM). Per column:

    scale[n] = max_k |W[k, n]| / 127             (fp32, correctly rounded; 1.0 for an all-zero column)
    Q[k, n]  = round(W[k, n] / scale[n])         (fp32 IEEE division, round half to even,
                                                   clamped to [-127, 127]) -> int8

A zero column gets scale 1.0 (its Q is 0 whatever the scale; 1.0 keeps Q * scale finite and is what
the reference here uses). Inf / NaN weights are not handled (a checkpoint has none).

The reduction runs down the strided dimension, so each CTA owns a band of TILE_N columns of one
expert and walks all K rows twice, TILE_K rows a step:
  pass 1: load the [TILE_K, TILE_N] tile (16-byte vectors along N, 8 columns a thread), keep an
          elementwise running max of |W| as 16-bit patterns (the sign bit cleared, compared as
          int16: for non-negative fp16 / bf16 the integer order is the value order, so the max is
          exact with no upcast; no cross-thread traffic in the loop), and reduce it over K once
          after the loop;
  pass 2: the same tiles again, last block first (the rows pass 1 read last are the likeliest
          still in L2), divided by the column's scale with IEEE division (tl.div_rn: the same
          quotient torch's W.float() / scale gives), clamped, rounded to nearest even (the fp32
          1.5 x 2^23 add / subtract, exact for |y| <= 127), stored as int8 (8 bytes a thread a row).
Nothing of the band stays on chip between the passes (K reaches ~30000: a 16-column band of a
28672-row weight is 900 KB), so W is read twice from DRAM but for what L2 still holds.
EVEN_K / EVEN_N (constexprs the launcher sets) drop the row / column masks where the tiles divide
the weight. The row offsets advance by pointer increments, so a weight of >= 2^31 elements needs no
int64 index math.

Tunables: BLOCK_N (columns a CTA owns: TILE_N = min(BLOCK_N, next_pow2(N)); the grid is
cdiv(N, TILE_N) x E, so it sets the parallelism as well as the row segment, 2 x TILE_N bytes),
ELEMS_PER_THREAD (weight elements each thread loads a step: the step is ELEMS_PER_THREAD x 32 x
num_warps elements, so TILE_K = that / TILE_N rows, capped at next_pow2(K) -- the knob that sets the
bytes in flight per CTA and the registers), num_warps, num_stages (no dot: the loops' loads are not
pipelined, held at 1).
Problem parameters (a workload point): E (experts stacked, 1 for a plain weight), K, N, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl

QMAX = 127.0


@triton.jit
def _kernel(W, Q, S, K, N, stride_we, stride_wk, stride_qe, stride_qk, stride_se,
            EVEN_K: tl.constexpr, EVEN_N: tl.constexpr, TILE_K: tl.constexpr, TILE_N: tl.constexpr):
    pid_n = tl.program_id(0)
    e = tl.program_id(1).to(tl.int64)
    ns = pid_n * TILE_N + tl.arange(0, TILE_N)
    n_ok = ns < N
    ks = tl.arange(0, TILE_K)
    n_kb = tl.cdiv(K, TILE_K)

    # pass 1: running elementwise max of |W| over the band's rows (on the 16-bit patterns: exact)
    w_ptrs = W + e * stride_we + ks[:, None] * stride_wk + ns[None, :]
    acc = tl.zeros([TILE_K, TILE_N], dtype=tl.int16)
    for kb in range(0, n_kb):
        if EVEN_K and EVEN_N:
            x = tl.load(w_ptrs)
        else:
            m = ((kb * TILE_K + ks) < K)[:, None] & n_ok[None, :]
            x = tl.load(w_ptrs, mask=m, other=0.0)
        # |x| as its 16-bit pattern with the sign cleared: for non-negative fp16 / bf16 the
        # integer order is the value order, so the max is taken on int16 (exact, no upcast)
        acc = tl.maximum(acc, x.to(tl.int16, bitcast=True) & 0x7FFF)
        w_ptrs += TILE_K * stride_wk
    amax = tl.max(acc, axis=0).to(tl.int16).to(W.dtype.element_ty, bitcast=True).to(tl.float32)
    scale = tl.where(amax > 0.0, tl.div_rn(amax, tl.full([TILE_N], 127.0, tl.float32)), 1.0)
    tl.store(S + e * stride_se + ns, scale, mask=n_ok)

    # pass 2: quantize, last row block first (what pass 1 read last may still be in L2)
    sc = tl.broadcast_to(scale[None, :], (TILE_K, TILE_N))
    last = ((n_kb - 1) * TILE_K).to(tl.int64)
    w_ptrs = W + e * stride_we + last * stride_wk + ks[:, None] * stride_wk + ns[None, :]
    # the int8 store in the load's layout (8 columns a thread: an 8-byte store), not a 16-byte one
    # that would send every tile through a shared-memory layout conversion
    q_ptrs = Q + e * stride_qe + last * stride_qk + ks[:, None] * stride_qk + tl.max_contiguous(ns, 8)[None, :]
    for i in range(0, n_kb):
        if EVEN_K and EVEN_N:
            x = tl.load(w_ptrs).to(tl.float32)
        else:
            m = (((n_kb - 1 - i) * TILE_K + ks) < K)[:, None] & n_ok[None, :]
            x = tl.load(w_ptrs, mask=m, other=0.0).to(tl.float32)
        y = tl.div_rn(x, sc)
        y = tl.minimum(tl.maximum(y, -127.0), 127.0)
        y = (y + 12582912.0) - 12582912.0                                        # round half to even
        if EVEN_K and EVEN_N:
            tl.store(q_ptrs, y.to(tl.int8))
        else:
            tl.store(q_ptrs, y.to(tl.int8), mask=m)
        w_ptrs -= TILE_K * stride_wk
        q_ptrs -= TILE_K * stride_qk


# ---------------------------------------------------------------- launcher
ROLE = "held-out-23"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_N", "ELEMS_PER_THREAD", "num_warps", "num_stages")
BASELINE = {"BLOCK_N": 32, "ELEMS_PER_THREAD": 16, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 4 x 3 = 48 configs (a step of 1-32 KiB of a 16-bit weight per CTA)
SWEEP_AXES = {"BLOCK_N": [16, 32, 64, 128], "ELEMS_PER_THREAD": [8, 16, 32, 64], "num_warps": [2, 4, 8],
              "num_stages": [1]}

# Real checkpoints quantized at load, 0.25-1.4 GB of unavoidable traffic (W read once, Q written
# once; the kernel's second read of W comes on top): 5-28x the H200's 50 MB L2, memory-bound at
# ~75 us - 0.6 ms. The points differ in K (8192-28672), N (4096-10240), experts and dtype.
POINTS = [
    # Llama-3-70B down_proj (in 28672 -> out 8192) as [K, N], bf16: the longest column reduction a
    # dense model has (K near the ~30000 a production kernel must take): W 448 MiB, Q 224 MiB
    {"E": 1, "K": 28672, "N": 8192, "dtype": "bf16"},
    # Qwen2.5-72B fused qkv_proj (in 8192 -> q 8192 + k 1024 + v 1024 = 10240, GQA 64 / 8 heads of
    # 128) as [K, N], served in fp16 (--dtype half): W 160 MiB, Q 80 MiB
    {"E": 1, "K": 8192, "N": 10240, "dtype": "fp16"},
    # Mixtral-8x7B's 8 experts' w2 (in 14336 -> out 4096) stacked [E, K, N] (transformers'
    # fused-experts layout), bf16, one scale per expert and channel: W 896 MiB, Q 448 MiB
    {"E": 8, "K": 14336, "N": 4096, "dtype": "bf16"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 2


def _check_point(point) -> None:
    for k in ("E", "K", "N"):
        v = point.get(k, 1) if k == "E" else point[k]
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    _elem_bytes(point.get("dtype", "bf16"))


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_N", "ELEMS_PER_THREAD", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")


def _tile(K: int, N: int, cfg) -> tuple[int, int]:
    """(TILE_K, TILE_N): TILE_N = min(BLOCK_N, next_pow2(N)); TILE_K = the rows that make a step
    ELEMS_PER_THREAD x 32 x num_warps elements (at least 1), at most next_pow2(K)."""
    _check_cfg(cfg)
    tile_n = min(cfg["BLOCK_N"], triton.next_power_of_2(N))
    tile_k = max(1, cfg["ELEMS_PER_THREAD"] * 32 * cfg["num_warps"] // tile_n)
    return min(tile_k, triton.next_power_of_2(K)), tile_n


def _kernel_args(w, q, s, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it); w, q
    [E, K, N] (N contiguous), s [E, N]."""
    E, K, N = w.shape
    tile_k, tile_n = _tile(K, N, cfg)
    return dict(W=w, Q=q, S=s, K=K, N=N, stride_we=w.stride(0), stride_wk=w.stride(1), stride_qe=q.stride(0),
                stride_qk=q.stride(1), stride_se=s.stride(0), EVEN_K=int(K % tile_k == 0),
                EVEN_N=int(N % tile_n == 0), TILE_K=tile_k, TILE_N=tile_n)


def _grid(E: int, N: int, tile_n: int) -> tuple[int, int]:
    return (triton.cdiv(N, tile_n), E)


def quantize_int8_colwise(w, *, BLOCK_N=32, ELEMS_PER_THREAD=16, num_warps=4, num_stages=1):
    """Per-column symmetric int8 quantization of w [K, N] or [E, K, N] (fp16 / bf16; N is made
    contiguous if it is not). Returns (q int8 of w's shape, contiguous; scale fp32 [N] / [E, N])
    with w ~= q * scale[..., None, :]."""
    import torch
    if w.dim() not in (2, 3):
        raise ValueError(f"expected w [K, N] or [E, K, N]; got {tuple(w.shape)}")
    if w.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"w must be fp16 or bf16; got {w.dtype}")
    cfg = {"BLOCK_N": BLOCK_N, "ELEMS_PER_THREAD": ELEMS_PER_THREAD, "num_warps": num_warps}
    _check_cfg(cfg)
    w3 = w if w.dim() == 3 else w.unsqueeze(0)
    if w3.stride(2) != 1 or min(w3.stride()) < 0:
        w3 = w3.contiguous()
    E, K, N = w3.shape
    q = torch.empty((E, K, N), dtype=torch.int8, device=w.device)
    s = torch.empty((E, N), dtype=torch.float32, device=w.device)
    if E > 65535:
        raise ValueError(f"E={E} exceeds the grid's 65535 experts")
    if q.numel() > 0:
        _kernel[_grid(E, N, _tile(K, N, cfg)[1])](**_kernel_args(w3, q, s, cfg), num_warps=num_warps,
                                                   num_stages=num_stages)
    if w.dim() == 2:
        return q[0], s[0]
    return q, s


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """w: N(0, 1) times a per-(expert, column) std spread over a decade around 0.02 (a trained
    projection's channels differ), with one weight in 256 a 5-20x outlier (what sets a column's
    absmax in a real checkpoint), in the point's dtype, [K, N] (E = 1) or [E, K, N]."""
    import torch
    _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    E, K, N = point.get("E", 1), point["K"], point["N"]
    std = 0.02 * torch.exp((torch.rand((E, 1, N), generator=gen, device=device) - 0.5) * 2.3)
    w = torch.randn((E, K, N), generator=gen, device=device)
    out = torch.rand((E, K, N), generator=gen, device=device)
    w = torch.where(out < 1.0 / 256, w * (5.0 + 15.0 * out * 256), w)
    w = (w * std).to(dt)
    return {"w": w[0] if E == 1 else w}


def launch(inputs, cfg):
    """q, the int8 values (the scales are the wrapper's second output)."""
    q, _ = quantize_int8_colwise(inputs["w"], BLOCK_N=cfg["BLOCK_N"], ELEMS_PER_THREAD=cfg["ELEMS_PER_THREAD"],
                                 num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return q


def reference_scales(inputs):
    """scale fp32 [N] / [E, N]: max_k |w| / 127 correctly rounded (the quotient in fp64, rounded
    once to fp32: the kernel's div_rn; torch's CUDA amax / 127 multiplies by an fp32 reciprocal,
    which can be an ulp off), 1.0 for an all-zero column."""
    import torch
    amax = inputs["w"].float().abs().amax(dim=-2)
    return torch.where(amax > 0, (amax.double() / QMAX).float(), torch.ones_like(amax))


def reference(inputs):
    """q as fp32, w's shape: round(w / scale), the fp32 IEEE quotient (fp64 rounded to fp32: a
    double rounding through 53 >= 2 x 24 + 2 bits is innocuous for a divide), half to even,
    clamped to +-127 -- equal to the kernel's bit for bit."""
    import torch
    w = inputs["w"]
    s = reference_scales(inputs)
    y = (w.double() / s.double().unsqueeze(-2)).float()
    return torch.round(y).clamp(-QMAX, QMAX)


def torch_baseline(inputs):
    """Eager torch (what a loader without the kernel runs): amax over K, scale, divide, round,
    clamp, cast (q only)."""
    import torch
    w = inputs["w"]
    amax = w.abs().amax(dim=-2, keepdim=True).float()
    s = torch.where(amax > 0, amax / QMAX, torch.ones_like(amax))
    return torch.round(w.float() / s).clamp_(-QMAX, QMAX).to(torch.int8)


def dequantize(q, s):
    """q [.., K, N] int8 times its column's scale s [.., N], fp32."""
    return q.float() * s.float().unsqueeze(-2)


def bytes_moved(point) -> int:
    """W read once, Q (int8) and the fp32 scales written once (the kernel's second read of W, what
    L2 does not hold of it, is not counted: it is the price of K too long to keep on chip)."""
    _check_point(point)
    E, K, N = point.get("E", 1), point["K"], point["N"]
    return E * K * N * (_elem_bytes(point.get("dtype", "bf16")) + 1) + 4 * E * N


def flops(point) -> int:
    """Per element: abs and max (pass 1), divide, min, max and two adds (pass 2); a divide per column."""
    _check_point(point)
    E, K, N = point.get("E", 1), point["K"], point["N"]
    return 7 * E * K * N + E * N


def grid(cfg, point) -> tuple[int, int]:
    """(column bands of TILE_N, experts): the launch grid."""
    _check_point(point)
    return _grid(point.get("E", 1), point["N"], _tile(point["K"], point["N"], cfg)[1])


def loop_iterations(cfg, point) -> int:
    """Both row loops together: 2 x ceil(K / TILE_K)."""
    _check_point(point)
    return 2 * triton.cdiv(point["K"], _tile(point["K"], point["N"], cfg)[0])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    w, q [E, K, N] contiguous (a plain weight is launched as its [1, K, N] view), s [E, N]."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    E, K, N = point.get("E", 1), point["K"], point["N"]
    w = torch.empty((E, K, N), dtype=dt, device="meta")
    q = torch.empty((E, K, N), dtype=torch.int8, device="meta")
    s = torch.empty((E, N), dtype=torch.float32, device="meta")
    return _kernel_args(w, q, s, cfg)
