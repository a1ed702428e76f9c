"""Block-diagonal (Monarch) linear layer forward, a bare @triton.jit kernel + its launcher.

    y[m, g*b_out:(g+1)*b_out] = x[m, g*b_in:(g+1)*b_in] @ W[g]  (+ bias[g*b_out:(g+1)*b_out])

x: [M, G*b_in] fp16 / bf16 activations (feature dim contiguous, any row stride: a column slice
of a wider buffer is read in place); W: [G, b_in, b_out] in x's dtype with any strides (the
Monarch-Mixer / "BlockdiagLinear" checkpoints store [G, b_out, b_in]: pass
``w_stored.transpose(1, 2)``, a view, and the kernel walks it K-contiguous); bias: optional
[G*b_out] in x's dtype. y: [M, G*b_out] contiguous in x's dtype, fp32 accumulation (tl.dot, one
rounding at the store). b_in != b_out is allowed (a Monarch MLP's up / down projection with
rectangular blocks).

Work split: CTA (pid, g) of a (cdiv(M, BLOCK_M) * cdiv(b_out, BLOCK_N), G) grid owns the
[BLOCK_M, BLOCK_N] output tile (pid_m, pid_n) = (pid // tiles_n, pid % tiles_n) of group g
(the output column tile fastest, so the CTAs that share one x row strip run side by side and
read it from L2; a group's W[g] -- at most a few MB -- stays in L2 over its group's CTAs) and
walks b_in in cdiv(b_in, BLOCK_K) steps of an x tile [BLOCK_M, BLOCK_K] (from column g*b_in)
and a W[g] tile [BLOCK_K, BLOCK_N] into tl.dot; num_stages pipelines these loads. Tiles never
cross a group boundary: the block-diagonal structure is the grid's second axis, no masking
or wasted work against the zero blocks.

Tails: rows past M are wrapped (row mod M) so the loads need no mask and only the store is
masked; output columns past b_out (EVEN_N False) are wrapped inside W[g] the same way; a b_in
not a multiple of BLOCK_K (EVEN_K False) masks the last step's K columns of both operands to
zero. Row offsets are 64-bit (M * row stride may pass 2^31 at long sequences).

Tunables: BLOCK_M, BLOCK_N, BLOCK_K (powers of two >= 16, the tl.dot minimum; BLOCK_N at most
next_pow2(b_out) and BLOCK_K at most next_pow2(b_in): a point's blocks bound the tile),
num_warps, num_stages. Problem parameters (a workload point): M, G, b_in, b_out, bias, dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(X, W, Bias, Y, M, B_IN, B_OUT, stride_xm, stride_wg, stride_wk, stride_wn, stride_ym,
            HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr, EVEN_N: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    g = tl.program_id(1)
    tiles_n = tl.cdiv(B_OUT, BLOCK_N)
    pid_m = pid // tiles_n
    pid_n = pid % tiles_n

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    rows_ld = (rows % M).to(tl.int64)                 # wrapped: no load mask, the store drops them
    if EVEN_N:
        cols_ld = cols
    else:
        cols_ld = cols % B_OUT                        # wrapped inside W[g]

    x_ptrs = X + rows_ld[:, None] * stride_xm + (g * B_IN + ks)[None, :]
    w_ptrs = W + g.to(tl.int64) * stride_wg + ks[:, None] * stride_wk + cols_ld[None, :] * stride_wn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, B_IN, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            k_ok = ks < B_IN - k0
            a = tl.load(x_ptrs, mask=k_ok[None, :], other=0.0)
            b = tl.load(w_ptrs, mask=k_ok[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk

    col_ok = cols < B_OUT
    if HAS_BIAS:
        bias = tl.load(Bias + g * B_OUT + cols, mask=col_ok, other=0.0).to(tl.float32)
        acc += bias[None, :]
    y_ptrs = Y + rows.to(tl.int64)[:, None] * stride_ym + (g * B_OUT + cols)[None, :]
    tl.store(y_ptrs, acc.to(Y.dtype.element_ty), mask=(rows < M)[:, None] & col_ok[None, :])


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}

# Monarch / block-diagonal MLP layers at training / prefill token counts. The points differ in
# block shape (rectangular 192 x 768, many small 128 x 128, few large 1024 x 1024), hence in
# arithmetic intensity (memory-bound at b 128-192, compute-bound at 1024), dtype and bias.
POINTS = [
    # M2-BERT-base (Monarch Mixer, hidden 768, MLP 3072, 4 blocks): the MLP's up projection,
    # 4 blocks of 192 -> 768, batch 32 x 512 tokens, fp16 with bias. x 24 MiB + y 96 MiB,
    # 19 GFLOP (~40-60 us)
    {"M": 16384, "G": 4, "b_in": 192, "b_out": 768, "bias": True, "dtype": "fp16"},
    # a structured-sparse (block-diagonal) MLP at hidden 4096 with 32 blocks of 128, 16K tokens,
    # bf16, no bias: x 128 MiB + y 128 MiB, 17 GFLOP (memory-bound, ~80 us)
    {"M": 16384, "G": 32, "b_in": 128, "b_out": 128, "bias": False, "dtype": "bf16"},
    # Monarch MLP at hidden 4096 with 4 blocks of 1024 (a 4x-sparse Llama-7B-width projection),
    # 16K tokens, bf16 with bias: 137 GFLOP (compute-bound, ~0.2-0.3 ms)
    {"M": 16384, "G": 4, "b_in": 1024, "b_out": 1024, "bias": True, "dtype": "bf16"},
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


def _pow2_at_least_16(name, v) -> None:
    if not isinstance(v, int) or isinstance(v, bool) or v < 16 or v & (v - 1):
        raise ValueError(f"{name}={v!r} must be a power of two >= 16 (a tl.dot operand side)")


def _next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        _pow2_at_least_16(name, cfg[name])


def _check_point(point) -> None:
    for k in ("M", "G", "b_in", "b_out"):
        v = point[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    _elem_bytes(point.get("dtype", "fp16"))


def plan(cfg, point) -> dict:
    """What the launcher derives from a config at a point; blocks larger than the point's
    blocks allow (BLOCK_N > next_pow2(b_out), BLOCK_K > next_pow2(b_in)) are refused."""
    _check_cfg(cfg)
    _check_point(point)
    b_in, b_out = point["b_in"], point["b_out"]
    if cfg["BLOCK_N"] > max(16, _next_pow2(b_out)):
        raise ValueError(f"BLOCK_N={cfg['BLOCK_N']} exceeds b_out={b_out} (at most {max(16, _next_pow2(b_out))})")
    if cfg["BLOCK_K"] > max(16, _next_pow2(b_in)):
        raise ValueError(f"BLOCK_K={cfg['BLOCK_K']} exceeds b_in={b_in} (at most {max(16, _next_pow2(b_in))})")
    tiles_m = -(-point["M"] // cfg["BLOCK_M"])
    tiles_n = -(-b_out // cfg["BLOCK_N"])
    return {"tiles_m": tiles_m, "tiles_n": tiles_n, "tiles_k": -(-b_in // cfg["BLOCK_K"]),
            "EVEN_K": b_in % cfg["BLOCK_K"] == 0, "EVEN_N": b_out % cfg["BLOCK_N"] == 0}


def _kernel_args(x, w, bias, y, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    Without a bias, Bias is x (never read: HAS_BIAS is False)."""
    M = x.shape[0]
    G, b_in, b_out = w.shape
    pl = plan(cfg, {"M": M, "G": G, "b_in": b_in, "b_out": b_out})
    return {"X": x, "W": w, "Bias": x if bias is None else bias, "Y": y, "M": M, "B_IN": b_in, "B_OUT": b_out,
            "stride_xm": x.stride(0), "stride_wg": w.stride(0), "stride_wk": w.stride(1), "stride_wn": w.stride(2),
            "stride_ym": y.stride(0), "HAS_BIAS": bias is not None, "EVEN_K": pl["EVEN_K"], "EVEN_N": pl["EVEN_N"],
            "BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"]}


def block_diag_matmul(x, w, bias=None, *, BLOCK_M=128, BLOCK_N=None, BLOCK_K=None, num_warps=8, num_stages=3):
    """x [M, G*b_in] @ blockdiag(W[0], ..., W[G-1]) (+ bias [G*b_out]) -> [M, G*b_out] contiguous
    in x's dtype. W is [G, b_in, b_out] with any strides. BLOCK_N / BLOCK_K default to 128 / 64,
    or the blocks' next_pow2(b_out) / next_pow2(b_in) (at least 16) where those are smaller."""
    import torch
    if x.dim() != 2 or w.dim() != 3:
        raise ValueError(f"x must be [M, G*b_in] and w [G, b_in, b_out]; got {tuple(x.shape)}, {tuple(w.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be fp16 / bf16; got {x.dtype}")
    if w.dtype != x.dtype:
        raise ValueError(f"w must be {x.dtype} like x; got {w.dtype}")
    M, K = x.shape
    G, b_in, b_out = w.shape
    if K != G * b_in:
        raise ValueError(f"x has {K} features, w's blocks take G*b_in = {G}*{b_in} = {G * b_in}")
    if bias is not None and (tuple(bias.shape) != (G * b_out,) or bias.dtype != x.dtype):
        raise ValueError(f"bias must be [{G * b_out}] {x.dtype}; got {tuple(bias.shape)} {bias.dtype}")
    if BLOCK_N is None:
        BLOCK_N = min(128, max(16, _next_pow2(b_out)))
    if BLOCK_K is None:
        BLOCK_K = min(64, max(16, _next_pow2(b_in)))
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}
    pl = plan(cfg, {"M": M, "G": G, "b_in": b_in, "b_out": b_out})
    if x.stride(1) != 1:
        x = x.contiguous()
    if bias is not None and bias.stride(0) != 1:
        bias = bias.contiguous()
    y = torch.empty((M, G * b_out), dtype=x.dtype, device=x.device)
    if M == 0:
        return y
    _kernel[(pl["tiles_m"] * pl["tiles_n"], G)](**_kernel_args(x, w, bias, y, cfg), num_warps=num_warps,
                                                 num_stages=num_stages)
    return y


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x ~ N(0, 1); W[g] ~ N(0, 1 / b_in) (unit-variance outputs); bias ~ N(0, 0.1^2)."""
    import torch
    _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    M, G, b_in, b_out = point["M"], point["G"], point["b_in"], point["b_out"]
    x = torch.randn((M, G * b_in), generator=gen, device=device).to(dt)
    w = (torch.randn((G, b_in, b_out), generator=gen, device=device) * b_in ** -0.5).to(dt)
    bias = None
    if point.get("bias", False):
        bias = (0.1 * torch.randn((G * b_out,), generator=gen, device=device)).to(dt)
    return {"x": x, "w": w, "bias": bias}


def launch(inputs, cfg):
    return block_diag_matmul(inputs["x"], inputs["w"], inputs["bias"], BLOCK_M=cfg["BLOCK_M"],
                             BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"],
                             num_stages=cfg["num_stages"])


def reference(inputs):
    """fp64 torch on the given (rounded) x, W, bias -> [M, G*b_out] fp32."""
    import torch
    x, w, bias = inputs["x"], inputs["w"], inputs["bias"]
    G, b_in, b_out = w.shape
    y = torch.einsum("mgk,gkn->mgn", x.to(torch.float64).reshape(x.shape[0], G, b_in), w.to(torch.float64))
    y = y.reshape(x.shape[0], G * b_out)
    if bias is not None:
        y = y + bias.to(torch.float64)
    return y.float()


def torch_baseline(inputs):
    """What Monarch-Mixer's BlockdiagLinear does: a batched matmul over the groups (x's blocks
    moved to the batch dim, the result moved back: two transposes), then the bias."""
    import torch
    x, w, bias = inputs["x"], inputs["w"], inputs["bias"]
    G, b_in, b_out = w.shape
    y = torch.bmm(x.reshape(x.shape[0], G, b_in).transpose(0, 1), w).transpose(0, 1).reshape(x.shape[0], G * b_out)
    return y if bias is None else y + bias


def bytes_moved(point) -> int:
    """x, W and the bias read once, y written once."""
    _check_point(point)
    e = _elem_bytes(point.get("dtype", "fp16"))
    M, G, b_in, b_out = point["M"], point["G"], point["b_in"], point["b_out"]
    return e * (M * G * b_in + G * b_in * b_out + M * G * b_out + (G * b_out if point.get("bias", False) else 0))


def flops(point) -> int:
    _check_point(point)
    M, G, b_in, b_out = point["M"], point["G"], point["b_in"], point["b_out"]
    return 2 * M * G * b_in * b_out + (M * G * b_out if point.get("bias", False) else 0)


def grid(cfg, point) -> tuple:
    """(row tiles x column tiles, G): the column tile fastest, then the row tile, then the group."""
    pl = plan(cfg, point)
    return (pl["tiles_m"] * pl["tiles_n"], point["G"])


def loop_iterations(cfg, point) -> int:
    """K steps per CTA: cdiv(b_in, BLOCK_K) (every CTA the same)."""
    return plan(cfg, point)["tiles_k"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory),
    contiguous x and W as make_inputs gives them."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "fp16"))
    M, G, b_in, b_out = point["M"], point["G"], point["b_in"], point["b_out"]
    x = torch.empty((M, G * b_in), dtype=dt, device="meta")
    w = torch.empty((G, b_in, b_out), dtype=dt, device="meta")
    bias = torch.empty((G * b_out,), dtype=dt, device="meta") if point.get("bias", False) else None
    y = torch.empty((M, G * b_out), dtype=dt, device="meta")
    return _kernel_args(x, w, bias, y, cfg)
