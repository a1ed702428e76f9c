"""NVFP4 activation quantization (what TensorRT-LLM, vLLM and SGLang run on Blackwell before every
FP4 GEMM: the activation side of an NVFP4 checkpoint's W4A4 linear layers), a bare @triton.jit
kernel + its launcher.

    x [M, K] fp16 / bf16 (K contiguous, any row pitch; K a multiple of 16), g the per-tensor fp32
    global scale (a device scalar: 448 x 6 / the calibrated amax of x, the checkpoint's
    1 / input_scale). Per block of 16 consecutive elements of a row, x[m, 16 b : 16 b + 16]:
      amax   = max |x|                                            (fp32)
      s      = e4m3(min(g (amax (1/6)), 448))                     (the block scale: fp8 e4m3, RNE)
      r      = 1 / (f32(s) (1 / g))   (0 where s is 0)            (the inverse dequantization scale)
      q[m, 8 b + i] = e2m1(x[m, 16 b + 2 i] r) | e2m1(x[m, 16 b + 2 i + 1] r) << 4      [M, K / 2] uint8
    e2m1(v): v rounded to nearest, ties to even, onto {0, 0.5, 1, 1.5, 2, 3, 4, 6} and saturated at 6
    (what cvt.rn.satfinite.e2m1x2.f32 gives on sm_100 / sm_120), the sign in bit 3 (also for a value
    that rounds to zero: -0 is code 8, as the hardware's). A consumer dequantizes x ~= e2m1 f32(s) / g.

The arithmetic is the engines' recipe in their order (TensorRT-LLM's cvt_warp_fp16_to_fp4: SF =
g (amax recip(6)), the fp8 round trip, outputScale = recip(SF recip(g))), with 1/6 the fp32
constant 0.16666667 and both reciprocals correctly rounded (div_rn, where the CUDA kernels use
rcp.approx.ftz, within an ulp): every step an IEEE operation in a fixed order and no add to fuse, so
q and the scales are bit for bit the torch reference's.

The block scales s (uint8 bytes, read as float8_e4m3fn) in one of two layouts (SWIZZLE, a constexpr):
  SWIZZLE 1: the 128 x 4 swizzled layout of cuBLASLt's / CUTLASS's block-scaled GEMMs
    (CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3; TensorRT-LLM's SWIZZLED_128x4): rows padded to
    M128 = 128 cdiv(M, 128), blocks to NKB4 = 4 cdiv(K / 16, 4); scale (m, b) at byte
        (m // 128) (512 NKB4 / 4) + (b // 4) 512 + (m % 32) 16 + ((m % 128) // 32) 4 + b % 4
    of a [M128, NKB4] buffer: one 512-byte tile a 128 rows x 4 blocks, its 32-row quarters
    interleaved 4 bytes at a time. The padding (rows M .. M128, blocks K / 16 .. NKB4) is written
    with zero scales, so the GEMM reads defined bytes.
  SWIZZLE 0: the linear layout, [M, K / 16] row-major (FlashInfer's is_sf_swizzled_layout=False:
    the scales travel with their token rows, e.g. through an expert-parallel all-to-all dispatch
    that permutes rows before the GEMM, which swizzles them after).
Points 1 and 2 use the swizzled layout, point 3 the linear one.

Work split: the scale rows (M128 swizzled, M linear) in bands of BLOCK_M rows, each band's K columns
in chunks of K_STEPS x BLOCK_K; one program a (band, chunk), a 1-D grid of n_m x n_kc programs with
the chunk fastest (the programs that run together stream one band of rows left to right). A program
walks its chunk BLOCK_K columns a step (a runtime-bounded loop: a ragged last chunk runs only its
real steps). One step loads a [BLOCK_M, BLOCK_K] tile of x (8 elements a thread, 16-byte vectors, a
warp's 32 lanes 512 contiguous bytes of a row), views it as [BLOCK_M, BLOCK_K / 16, 16] (free: a
block is two neighbouring lanes' vectors), takes |x|'s max over each block on the 16-bit values
(exact; one shuffle joins the two lanes), computes the BLOCK_M x BLOCK_K / 16 scales in fp32 (two
multiplies, the clamp, the fp8 round trip -- cvt.rn.satfinite.e4m3x2.f32 and back -- and one div_rn
a block; 1 / g once a program), scales the tile to fp32 and rounds it (7 compares an element, the
sign bit or'ed in), views the 4-bit codes as [BLOCK_M, BLOCK_K / 16, 8, 2] and splits the pairs
(tl.split, in registers) to pack them into bytes: a [BLOCK_M, BLOCK_K / 2] store of q -- the pack
leaves 4 bytes a thread where the store's coalesced layout takes 8, a layout conversion through
shared memory (at most BLOCK_M x BLOCK_K / 2 bytes) -- and a [BLOCK_M, BLOCK_K / 16] store of scale
bytes (swizzled: 4 consecutive blocks of a row are 4 consecutive bytes, which the compiler stores
as one 32-bit word where the layout gives a thread 4; BLOCK_K a multiple of 64, so a step covers
whole 4-block groups and the last step of a row reaches its padding blocks). Traffic an element:
2 B read, 1/2 + 1/16 B written.

Masks: rows past M (EVEN_M 0: some program row is past M -- swizzled, M not a multiple of 128 (the
grid covers M128 rows: BLOCK_M divides 128); linear, BLOCK_M not dividing M), the loads filled with
0 (a padding row's scales come out 0) and the q stores masked, the scale stores to rows < M128 / M;
columns past K (EVEN_K 0: BLOCK_K does not divide K), the loads filled with 0 (whole blocks: K is a
multiple of 16, so the mask is uniform along each 16-byte vector), q's stores masked to K / 2, the
scale stores to blocks < NKB4 / K / 16 (a padding block's scale comes out 0). Both constexprs set by
the launcher; neither costs anything when set. Offsets: row offsets int64 (x's M x pitch passes
2^31 elements at long prefills), the swizzled tile offset int64, columns int32.

Tunables: BLOCK_M (rows a tile: 8 / 16), BLOCK_K (columns a step: 128 / 256 / 512; any power of two
>= 64 works), K_STEPS (steps a program: 1 / 4 / 16 / 64 -- the grid's K chunks: 1 splits K over
programs with no loop, 64 gives one program a row band's whole K at the points), num_warps (4 / 8);
num_stages held at 1 (no dot: the loop's loads are not pipelined). Tiles of 1024-8192 elements, 4-64
a thread. Every config of the sweep compiles for sm_90 at every point with triton 3.6 and 3.9
without spills: 31-168 registers under 3.6 and 3.9 alike, the most for 16 x 512 on 4 warps (64
elements a thread: 124-128 in fp16, 166-168 in bf16, whose 16-bit |x| max is not done in packed halves);
shared memory 512 B - 4 KiB under 3.6 (64 B - 4 KiB under 3.9: it keeps the small tiles' q in
registers), the q tile's conversion, BLOCK_M x BLOCK_K / 2 bytes at most. Two limits shaped the
sweep: 2 elements a thread (e.g. 8 x 64 on 8 warps) leaves the unused second lane of an e4m3x2
convert as a 1-byte local frame that ptxas reports as 8 bytes of stack (n_spills 2, no spill
instruction), and 128 a thread (32 x 512 on 4 warps) reaches 255 registers in bf16. On sm_120
(99 KiB a block) the configs tried compile alike (BASELINE 48 / 40 registers under 3.6 / 3.9, 16 x
512 on 4 warps 125-126, 1 KiB and 4 KiB of shared memory), no spills.
Problem parameters (a workload point): M, K, dtype, swizzle (1: the 128 x 4 layout, 0: linear);
optional x_pitch (x the first K columns of an [M, x_pitch] buffer).
"""

from __future__ import annotations

import triton
import triton.language as tl

E2M1_MAX = 6.0          # the largest fp4 e2m1 magnitude
E4M3_MAX = 448.0        # the largest finite fp8 e4m3fn
SIXTH = 0.1666666716337204      # 1/6 rounded to fp32 (exact as written)
SF_BLOCK = 16           # elements a block scale
SF_ROWS, SF_COLS = 128, 4       # the swizzled layout's tile: 128 rows x 4 block scales = 512 bytes


@triton.jit
def _kernel(X, Q, SF, GS, M, K, NKB, M_SF, NKB_SF, n_kc, stride_xm, stride_qm, stride_sf,
            SWIZZLE: tl.constexpr, EVEN_M: tl.constexpr, EVEN_K: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, K_STEPS: tl.constexpr):
    NB: tl.constexpr = BLOCK_K // 16                     # block scales a step
    pid = tl.program_id(0)
    pid_m = pid // n_kc
    pid_k = pid - pid_m * n_kc

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)         # int32: at most M128 rows
    r64 = rm.to(tl.int64)
    x_rows = X + (r64 * stride_xm)[:, None]              # [BLOCK_M, 1]
    q_rows = Q + (r64 * stride_qm)[:, None, None]
    if SWIZZLE:
        # the row's part of its swizzled byte offset: its 128-row tile, its lane in the 32-row quarter,
        # the quarter (stride_sf = 512 NKB4 / 4, one 128-row tile)
        sf_rows = SF + ((r64 // 128) * stride_sf + (rm % 32) * 16 + ((rm % 128) // 32) * 4)[:, None]
    else:
        sf_rows = SF + (r64 * stride_sf)[:, None]        # [BLOCK_M, 1]
    if not EVEN_M:
        m_ok = (rm < M)[:, None]
        sf_m_ok = (rm < M_SF)[:, None]

    jb = tl.arange(0, NB)
    ck = tl.arange(0, BLOCK_K)
    c8 = tl.arange(0, 8)
    g = tl.load(GS)
    inv_g = tl.math.div_rn(tl.full([], 1.0, tl.float32), g)     # once a program
    one = tl.full([BLOCK_M, NB], 1.0, tl.float32)

    kb_lo = pid_k * (K_STEPS * NB)
    kb_hi = tl.minimum(kb_lo + K_STEPS * NB, NKB)
    for kb0 in range(kb_lo, kb_hi, NB):
        kb = kb0 + jb                                    # [NB] the step's blocks
        col = kb0 * 16 + ck                              # [BLOCK_K] the step's columns
        xp = x_rows + col[None, :]                       # [BLOCK_M, BLOCK_K]
        if not EVEN_K:
            k_ok = (kb < NKB)[None, :, None]             # whole blocks (K a multiple of 16)
        if EVEN_M and EVEN_K:
            x = tl.load(xp)
        elif EVEN_K:
            x = tl.load(xp, mask=m_ok, other=0.0)
        elif EVEN_M:
            x = tl.load(xp, mask=(col < K)[None, :], other=0.0)
        else:
            x = tl.load(xp, mask=m_ok & (col < K)[None, :], other=0.0)
        x = tl.reshape(x, (BLOCK_M, NB, 16))             # the blocks (a view: no data moves)

        # the block scales: fp8 e4m3 of g amax / 6, and the inverse of their dequantized value (the
        # amax taken on the 16-bit values, exact: the tile stays 16-bit until the scaling)
        amax = tl.max(tl.abs(x), axis=2).to(tl.float32)  # [BLOCK_M, NB]
        s = tl.minimum(g * (amax * 0.1666666716337204), 448.0)
        s8 = s.to(tl.float8e4nv)
        sd = s8.to(tl.float32)
        r = tl.where(sd != 0.0, tl.math.div_rn(one, sd * inv_g), 0.0)

        # e2m1: round |v| to nearest-even on {0, .5, 1, 1.5, 2, 3, 4, 6} (saturating) -> codes 0..7,
        # the sign bit (of -0 too) -> bit 3
        v = x.to(tl.float32) * r[:, :, None]
        a = tl.abs(v)
        code = ((a > 0.25).to(tl.int32) + (a >= 0.75).to(tl.int32) + (a > 1.25).to(tl.int32)
                + (a >= 1.75).to(tl.int32) + (a > 2.5).to(tl.int32) + (a >= 3.5).to(tl.int32)
                + (a > 5.0).to(tl.int32))
        code = code | ((v.to(tl.int32, bitcast=True) >> 28) & 8)
        lo, hi = tl.split(tl.reshape(code, (BLOCK_M, NB, 8, 2)))
        byte = (lo | (hi << 4)).to(tl.uint8)             # [BLOCK_M, NB, 8]: element 2i low, 2i + 1 high

        qcol = (kb * 8)[:, None] + c8[None, :]           # [NB, 8]
        qp = q_rows + qcol[None, :, :]
        if EVEN_M and EVEN_K:
            tl.store(qp, byte)
        elif EVEN_K:
            tl.store(qp, byte, mask=m_ok[:, :, None])
        elif EVEN_M:
            tl.store(qp, byte, mask=k_ok)
        else:
            tl.store(qp, byte, mask=m_ok[:, :, None] & k_ok)

        if SWIZZLE:
            sp = sf_rows + ((kb // 4) * 512 + kb % 4)[None, :]
        else:
            sp = sf_rows + kb[None, :]
        sb = s8.to(tl.uint8, bitcast=True)
        if EVEN_M and EVEN_K:
            tl.store(sp, sb)
        elif EVEN_K:
            tl.store(sp, sb, mask=sf_m_ok)
        elif EVEN_M:
            tl.store(sp, sb, mask=(kb < NKB_SF)[None, :])
        else:
            tl.store(sp, sb, mask=sf_m_ok & (kb < NKB_SF)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-27"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_K", "K_STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 8, "BLOCK_K": 256, "K_STEPS": 4, "num_warps": 4, "num_stages": 1}
# the study's sweep: 2 x 3 x 4 x 2 = 48 configs (tiles of 1024-8192 elements, 4-64 a thread; K chunks
# of 128-32768 columns: one step, or a loop of 4 / 16 / 64)
SWEEP_AXES = {"BLOCK_M": [8, 16], "BLOCK_K": [128, 256, 512], "K_STEPS": [1, 4, 16, 64], "num_warps": [4, 8],
              "num_stages": [1]}

# The activations of one linear layer at prefill, quantized in one call each, 0.3-0.6 GB of traffic
# (6-12x the H100's / H200's 50 MB L2), HBM-bound at roughly 100-200 us on an H100. They differ in K
# (28672: 56-224 steps a row; 768: 1.5-6; 7168: 14-56), M (ragged against the 128-row tile or not), the
# dtype and the scales' layout.
POINTS = [
    # Llama-2-70B (hidden 8192, intermediate 28672; its config's torch_dtype float16, which vLLM's
    # dtype "auto" serves in fp16), NVFP4-quantized (ModelOpt): the down_proj input (SwiGLU's output
    # [M, 28672]) of an 8192-token chunked-prefill batch, swizzled scales for the FP4 GEMM: 470 MB
    # read, 117 MB of q + 14.7 MB of scales written
    {"M": 8192, "K": 28672, "dtype": "fp16", "swizzle": 1},
    # Qwen3-30B-A3B (128 experts, top-8, moe_intermediate 768), NVFP4, bf16: the routed experts'
    # down_proj input, the expert-sorted SwiGLU outputs of a 25000-token prefill batch (x 8 = 200000
    # rows: 64 past a multiple of 128, so 64 padding rows of zero scales; 768 columns, which BLOCK_K
    # 512 does not divide) quantized in one call with one global scale for the layer (the max of the
    # checkpoint's per-expert input scales), swizzled: 307 MB read, 77 + 9.6 MB written
    {"M": 200000, "K": 768, "dtype": "bf16", "swizzle": 1},
    # DeepSeek-R1 (nvidia/DeepSeek-R1-FP4: hidden 7168), bf16: the MoE layer's input of 16384 tokens
    # quantized before the expert-parallel all-to-all dispatch, linear scales [M, 448] (they travel
    # with their token rows; the experts' GEMM swizzles after the permutation): 235 MB read, 59 +
    # 7.3 MB written
    {"M": 16384, "K": 7168, "dtype": "bf16", "swizzle": 0},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int, str, bool, int]:
    """(M, K, dtype, swizzle, x_pitch), every field checked."""
    for k in ("M", "K"):
        v = point[k]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{k}={v!r} must be a positive int")
    M, K = point["M"], point["K"]
    if K % SF_BLOCK:
        raise ValueError(f"K={K} must be a multiple of {SF_BLOCK} (one block scale a {SF_BLOCK} elements)")
    dt = point.get("dtype", "bf16")
    _torch_dtype(dt)
    sw = point.get("swizzle", 1)
    if sw not in (0, 1) or not isinstance(sw, (int, bool)):
        raise ValueError(f"swizzle={sw!r} must be 0 or 1")
    pitch = point.get("x_pitch", K)
    if not _is_int(pitch) or pitch < K:
        raise ValueError(f"x_pitch={pitch!r} must be an int >= K={K}")
    return M, K, dt, bool(sw), pitch


def _check_cfg(cfg) -> None:
    bm, bk, ks, nw = cfg["BLOCK_M"], cfg["BLOCK_K"], cfg["K_STEPS"], cfg["num_warps"]
    if not _is_int(bm) or bm < 1 or bm > SF_ROWS or bm & (bm - 1):
        raise ValueError(f"BLOCK_M={bm!r} must be a power of two from 1 to {SF_ROWS} (it divides the "
                         f"swizzled layout's {SF_ROWS}-row tile)")
    if not _is_int(bk) or bk < 64 or bk & (bk - 1):
        raise ValueError(f"BLOCK_K={bk!r} must be a power of two >= 64 (a step covers whole groups of "
                         f"{SF_COLS} block scales)")
    if bm * bk > 32768:
        raise ValueError(f"BLOCK_M x BLOCK_K = {bm * bk} > 32768 (the tile lives in registers)")
    if not _is_int(ks) or ks < 1:
        raise ValueError(f"K_STEPS={ks!r} must be a positive int")
    if not _is_int(nw) or nw < 1 or nw > 16 or nw & (nw - 1):
        raise ValueError(f"num_warps={nw!r} must be a power of two from 1 to 16")
    st = cfg.get("num_stages", 1)
    if not _is_int(st) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def scale_shape(M: int, K: int, swizzle: bool = True) -> tuple[int, int]:
    """The scales' [rows, blocks]: swizzled [M128, NKB4] (M and K / 16 padded to 128 and 4), linear
    [M, K / 16]."""
    nkb = K // SF_BLOCK
    if swizzle:
        return triton.cdiv(M, SF_ROWS) * SF_ROWS, triton.cdiv(nkb, SF_COLS) * SF_COLS
    return M, nkb


def _grid_dims(M: int, K: int, swizzle: bool, cfg) -> tuple[int, int]:
    """(n_m, n_kc): row bands over the scale rows, K chunks of K_STEPS x BLOCK_K columns."""
    _check_cfg(cfg)
    m_sf, _ = scale_shape(M, K, swizzle)
    return triton.cdiv(m_sf, cfg["BLOCK_M"]), triton.cdiv(K, cfg["K_STEPS"] * cfg["BLOCK_K"])


def _kernel_args(x, q, sf, gs, swizzle: bool, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    M, K = x.shape
    m_sf, nkb_sf = scale_shape(M, K, swizzle)
    _, n_kc = _grid_dims(M, K, swizzle, cfg)
    even_m = (m_sf == M) and M % cfg["BLOCK_M"] == 0
    return dict(X=x, Q=q, SF=sf, GS=gs, M=M, K=K, NKB=K // SF_BLOCK, M_SF=m_sf, NKB_SF=nkb_sf, n_kc=n_kc,
                stride_xm=x.stride(0), stride_qm=q.stride(0),
                stride_sf=(SF_ROWS * nkb_sf) if swizzle else sf.stride(0),
                SWIZZLE=int(swizzle), EVEN_M=int(even_m), EVEN_K=int(K % cfg["BLOCK_K"] == 0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_K=cfg["BLOCK_K"], K_STEPS=cfg["K_STEPS"])


def nvfp4_quantize(x, global_scale, swizzle: bool = True, *, BLOCK_M: int = 8, BLOCK_K: int = 256,
                   K_STEPS: int = 1, num_warps: int = 4, num_stages: int = 1):
    """x [M, K] fp16 / bf16 (K contiguous, any row pitch, K a multiple of 16), global_scale a one-element
    fp32 tensor on x's device (448 x 6 / amax, the reciprocal of the checkpoint's input_scale) ->
    (q [M, K / 2] uint8, two e2m1 codes a byte, the even element in the low nibble; scales
    float8_e4m3fn, one per 16 elements: swizzled [M128, NKB4] (128 x 4 tiles, padding zero) or, with
    swizzle=False, linear [M, K / 16]). x ~= e2m1(q) x scale / global_scale."""
    import torch
    if x.dim() != 2:
        raise ValueError(f"expected x [M, K]; got {tuple(x.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"x must be fp16 / bf16; got {x.dtype}")
    if not torch.is_tensor(global_scale) or global_scale.numel() != 1 or global_scale.dtype != torch.float32:
        raise ValueError("global_scale must be a one-element fp32 tensor")
    if global_scale.device != x.device:
        raise ValueError(f"global_scale must be on {x.device}; got {global_scale.device}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_K": BLOCK_K, "K_STEPS": K_STEPS, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    M, K = x.shape
    if K % SF_BLOCK:
        raise ValueError(f"K={K} must be a multiple of {SF_BLOCK}")
    if K > 1 and x.stride(1) != 1:
        raise ValueError(f"x must have unit K stride; got strides {tuple(x.stride())}")
    q = torch.empty((M, K // 2), dtype=torch.uint8, device=x.device)
    m_sf, nkb_sf = scale_shape(M, K, swizzle)
    sf = torch.empty((m_sf, nkb_sf), dtype=torch.uint8, device=x.device)
    if M == 0 or K == 0:
        return q, sf.view(torch.float8_e4m3fn)
    if m_sf + BLOCK_M >= 2**31 or K + K_STEPS * BLOCK_K >= 2**31:
        raise ValueError(f"M={M}, K={K} exceed the kernel's int32 row / column indices")
    n_m, n_kc = _grid_dims(M, K, swizzle, cfg)
    if n_m * n_kc >= 2**31:
        raise ValueError(f"{n_m} x {n_kc} programs exceed the grid's 2^31 - 1: raise BLOCK_M or K_STEPS")
    gs = global_scale.reshape(1)
    _kernel[(n_m * n_kc,)](**_kernel_args(x, q, sf, gs, swizzle, cfg), num_warps=num_warps,
                           num_stages=num_stages)
    return q, sf.view(torch.float8_e4m3fn)


def global_scale_of(x):
    """The per-tensor global scale that puts x's largest block scale at e4m3's 448: 448 x 6 / amax(x),
    fp32 [1] (what a calibration stores as 1 / input_scale)."""
    import torch
    amax = x.abs().amax().float().clamp(min=1e-12)
    return (E4M3_MAX * E2M1_MAX / amax).reshape(1).to(torch.float32)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """x: activations as an LLM's look to a quantizer -- N(0, 1) times a per-token magnitude spread over
    two decades, with ~1 % outlier channels 8-24x larger (the same channels in every token), in the
    point's dtype; with x_pitch the first K columns of an [M, x_pitch] buffer (the rest zero). The
    global scale from x's amax (global_scale_of); the layout. Drawn on the device from a seeded
    generator."""
    import torch
    M, K, dt, sw, pitch = _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn((M, K), generator=gen, device=device)
    x *= torch.exp(torch.rand((M, 1), generator=gen, device=device) * 4.6 - 2.3)
    chan = torch.ones((K,), device=device)
    n_out = max(1, K // 100)
    idx = torch.randperm(K, generator=gen, device=device)[:n_out]
    chan[idx] = 8.0 + 16.0 * torch.rand((n_out,), generator=gen, device=device)
    x *= chan
    x = x.to(_torch_dtype(dt))
    if pitch != K:
        buf = torch.zeros((M, pitch), dtype=x.dtype, device=device)
        buf[:, :K] = x
        x = buf[:, :K]
    return {"x": x, "global_scale": global_scale_of(x), "swizzle": sw}


def launch(inputs, cfg):
    """q [M, K / 2] uint8, the packed e2m1 codes (the scales are the wrapper's second output)."""
    q, _ = nvfp4_quantize(inputs["x"], inputs["global_scale"], inputs["swizzle"], BLOCK_M=cfg["BLOCK_M"],
                          BLOCK_K=cfg["BLOCK_K"], K_STEPS=cfg["K_STEPS"], num_warps=cfg["num_warps"],
                          num_stages=cfg["num_stages"])
    return q


def _f32(t):
    """A float64 tensor rounded once to fp32."""
    import torch
    return t.to(torch.float32)


def _block_scales(xb, g):
    """(s8 float8_e4m3fn, r fp32) of blocks xb [..., 16] (fp32) under the global scale g (fp32 [1]):
    each product and quotient taken in fp64 (exact for a product of two fp32 values) and rounded once
    to fp32, so it is the correctly rounded fp32 result whatever device torch runs on."""
    import torch
    amax = xb.abs().amax(dim=-1)
    gd = g.double()
    s = _f32(gd * _f32(amax.double() * SIXTH).double())
    s8 = s.clamp(max=E4M3_MAX).to(torch.float8_e4m3fn)
    sd = s8.float()
    inv_g = _f32(1.0 / gd)
    den = _f32(sd.double() * inv_g.double())
    r = torch.where(sd != 0, _f32(1.0 / den.double()), torch.zeros_like(sd))
    return s8, r


def e2m1_codes(v):
    """fp32 v -> int32 e2m1 codes (round to nearest, ties to even, saturating at 6; bit 3 the sign,
    of -0 too)."""
    import torch
    a = v.abs()
    code = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int() + (a > 2.5).int()
            + (a >= 3.5).int() + (a > 5.0).int())
    return code | (torch.signbit(v).int() << 3)


E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def swizzle_scales(s, M: int, nkb: int):
    """[M, nkb] scale bytes -> the [M128, NKB4] swizzled buffer (padding zero): vLLM's / FlashInfer's
    reference permutation, (M128 / 128, 4, 32, NKB4 / 4, 4) -> (0, 3, 2, 1, 4)."""
    import torch
    mp, kp = scale_shape(M, nkb * SF_BLOCK, True)
    buf = torch.zeros((mp, kp), dtype=s.dtype, device=s.device)
    buf[:M, :nkb] = s
    t = buf.view(mp // SF_ROWS, 4, 32, kp // SF_COLS, SF_COLS).permute(0, 3, 2, 1, 4)
    return t.reshape(mp, kp)


def unswizzle_scales(sf, M: int, nkb: int):
    """The inverse of swizzle_scales: [M128, NKB4] -> [M, nkb]."""
    mp, kp = sf.shape
    t = sf.reshape(mp // SF_ROWS, kp // SF_COLS, 32, 4, SF_COLS).permute(0, 3, 2, 1, 4)
    return t.reshape(mp, kp)[:M, :nkb]


def reference_all(inputs):
    """(q [M, K / 2] uint8, scales uint8 in the layout) by torch ops on the fp32 values, the kernel's
    arithmetic step for step (see _block_scales)."""
    import torch
    x, g, sw = inputs["x"], inputs["global_scale"], inputs["swizzle"]
    M, K = x.shape
    xb = x.float().reshape(M, K // SF_BLOCK, SF_BLOCK)
    s8, r = _block_scales(xb, g)
    v = _f32(xb.double() * r.double()[..., None])
    code = e2m1_codes(v).view(M, K // 2, 2)
    q = (code[..., 0] | (code[..., 1] << 4)).to(torch.uint8)
    sb = s8.view(torch.uint8)
    return q, (swizzle_scales(sb, M, K // SF_BLOCK) if sw else sb)


def reference(inputs):
    """fp32 [M, K / 2]: the packed bytes (exact)."""
    return reference_all(inputs)[0].float()


def dequantize(q, sf, global_scale, K: int, swizzle: bool = True):
    """fp32 [M, K]: e2m1(q) x scale / global_scale (the consumer's view)."""
    import torch
    M = q.shape[0]
    nkb = K // SF_BLOCK
    sb = sf.view(torch.uint8)
    s = (unswizzle_scales(sb, M, nkb) if swizzle else sb).view(torch.float8_e4m3fn).float()
    qi = q.to(torch.int64)
    codes = torch.stack((qi & 0xF, qi >> 4), dim=-1).reshape(M, K)
    mag = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=q.device)[codes & 7]
    val = torch.where(codes >= 8, -mag, mag)
    return (val.view(M, nkb, SF_BLOCK) * s[..., None] / global_scale.float()).view(M, K)


def torch_baseline(inputs):
    """What eager torch runs (vLLM's / FlashInfer's reference NVFP4 quantizer, several passes over the
    tensor, in fp32): the blocks' amax, the scales and their fp8 round trip, x times the inverse, the
    rounding by compares, the nibble packing and the swizzle permutation; (q, scales). Every fp32
    operation is correctly rounded on either device, so it equals the reference."""
    import torch
    x, g, sw = inputs["x"], inputs["global_scale"], inputs["swizzle"]
    M, K = x.shape
    xb = x.float().reshape(M, K // SF_BLOCK, SF_BLOCK)
    s8 = (g * (xb.abs().amax(dim=-1) * SIXTH)).clamp(max=E4M3_MAX).to(torch.float8_e4m3fn)
    sd = s8.float()
    r = torch.where(sd != 0, 1.0 / (sd * (1.0 / g)), 0.0)
    code = e2m1_codes(xb * r[..., None]).view(M, K // 2, 2)
    q = (code[..., 0] | (code[..., 1] << 4)).to(torch.uint8)
    sb = s8.view(torch.uint8)
    return q, (swizzle_scales(sb, M, K // SF_BLOCK) if sw else sb).view(torch.float8_e4m3fn)


def bytes_moved(point) -> int:
    """x read once (its K columns), q and the scale bytes (with the swizzled layout's padding, which
    the kernel writes) written once, the global scale read."""
    M, K, _, sw, _ = _check_point(point)
    m_sf, nkb_sf = scale_shape(M, K, sw)
    return M * K * 2 + M * K // 2 + m_sf * nkb_sf + 4


def flops(point) -> int:
    """Per element: the abs-max, the multiply by r, 7 compares (10); per block two multiplies, the
    clamp and a divide (5)."""
    M, K, _, _, _ = _check_point(point)
    return 10 * M * K + 5 * M * (K // SF_BLOCK)


def grid(cfg, point) -> int:
    """n_m x n_kc programs: bands of BLOCK_M scale rows (M128 swizzled, M linear) x K chunks."""
    M, K, _, sw, _ = _check_point(point)
    n_m, n_kc = _grid_dims(M, K, sw, cfg)
    return n_m * n_kc


def loop_iterations(cfg, point) -> int:
    """BLOCK_K steps of a full chunk: K_STEPS, or all of K's steps when one chunk holds K."""
    _, K, _, _, _ = _check_point(point)
    _check_cfg(cfg)
    return min(cfg["K_STEPS"], triton.cdiv(K, cfg["BLOCK_K"]))


def cta_iterations(cfg, point) -> list[int]:
    """Each program's steps in launch order (the chunk fastest): a row band's last chunk takes what is
    left of K (the bands past M in the swizzled padding run their masked steps too)."""
    M, K, _, sw, _ = _check_point(point)
    n_m, n_kc = _grid_dims(M, K, sw, cfg)
    span = cfg["K_STEPS"] * cfg["BLOCK_K"]
    per = [triton.cdiv(min(span, K - c * span), cfg["BLOCK_K"]) for c in range(n_kc)]
    return per * n_m


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): x [M, K] in
    the point's dtype (the first K columns of an [M, x_pitch] buffer with x_pitch), q, the scale buffer
    in the point's layout, the global scale."""
    import torch
    M, K, dt, sw, pitch = _check_point(point)
    _check_cfg(cfg)
    x = torch.empty((M, pitch), dtype=_torch_dtype(dt), device="meta")[:, :K]
    q = torch.empty((M, K // 2), dtype=torch.uint8, device="meta")
    sf = torch.empty(scale_shape(M, K, sw), dtype=torch.uint8, device="meta")
    gs = torch.empty((1,), dtype=torch.float32, device="meta")
    return _kernel_args(x, q, sf, gs, sw, cfg)
