"""8-bit AdamW step with blockwise dynamic quantization of the optimizer states (bitsandbytes'
Adam8bit / AdamW8bit with block_wise=True, the kOptimizerStatic8bit2StateBlockwise step), a bare
@triton.jit kernel + its launcher.

One flat parameter buffer of n elements (a model's parameters, or a ZeRO / FSDP rank's shard of
them, as one contiguous buffer): params p and grads g in fp32 or bf16 (the same dtype), the two
Adam moments stored as uint8 codes -- state1 (m, exp_avg) into CODE1, the signed dynamic code
table, state2 (v, exp_avg_sq) into CODE2, the unsigned one -- and one fp32 absmax per quant block
of QBLOCK = 256 consecutive elements for each state (absmax1, absmax2: ceil(n / 256) each; the
last block is ragged when 256 does not divide n). One step, per element (fp32 math):

    m  = CODE1[c1] * absmax1[blk]                 v = CODE2[c2] * absmax2[blk]     (dequantize)
    m  = beta1 * m + (1 - beta1) * g              v = beta2 * v + (1 - beta2) * (g * g)
    p  = p * (1 - lr wd) - lr / (1 - beta1^t) * (m / (sqrt(v) / sqrt(1 - beta2^t) + eps))
    then per quant block (re-quantize):
    absmax1' = max |m|,  absmax2' = max v  (v >= 0)
    c1' = the i whose CODE1[i] * absmax1' is nearest m,  c2' = the i whose CODE2[i] * absmax2' is nearest v

The code tables (`create_dynamic_map`, below, built like bitsandbytes.functional.create_dynamic_map
with max_exponent_bits = 7, total_bits = 8): a dynamic-exponent format -- for each decade 1e-6 ..
1e0, the midpoints of a linear split of [0.1, 1] scaled by that decade, 2^i (signed, and their
negatives) or 2^(i+1) (unsigned) values at exponent i, plus 0 and 1.0; sorted ascending, 256
distinct fp32 values. The signed table spans [-0.99297, 1.0] (no -1: a block whose absmax element
is negative gets the code nearest -1, the lowest), the unsigned [0, 1.0].

Re-quantization, the normalisation folded into the table: instead of dividing each moment by the
block's new absmax and searching the table, the kernel searches the table scaled by the absmax --
CODE[i] * absmax', the fp32 value the next step's dequantization will produce -- for the one nearest
the moment (the same code as nearest(CODE, m / absmax') except where the rounding of a product
moves a midpoint by an ulp; the element that set the absmax gets code 255 = 1.0 exactly, or code 0
= -0.99297 when it is negative). An exact method: 8 probes of a binary search over the sorted table
(in global memory: 1 KiB each, every probe a gather that hits L1, times the row's absmax) find the
largest i with CODE[i] * absmax' <= m (0 when none); then CODE[i] and CODE[i + 1] are gathered again
(lo, hi: +inf past the end) and the code is i + 1 if hi - m < m - lo else i (fp32 differences).
Carrying lo and hi through the probes instead saves the two gathers but keeps two more registers an
element live across the search: ptxas then spilled 8-48 B in a dozen of the sweep's configs.
Tie rule: when the two fp32 distances are equal the LOWER code (index i) wins. A block of zeros
(absmax 0) searches the unscaled table: the 0.0 code. No division: a correctly rounded m / absmax
(tl.div_rn: Triton's `/` is div.full.f32 on NVIDIA, up to 2 ulp off) compiles to PTX div.rn.f32,
whose slow-path subroutine call made ptxas keep 8-48 B of stack (STL / LDL around the call) in
about half the configs; a reciprocal per block instead is not exact either and overflows for a
subnormal absmax (moments of long-unused embedding rows decay there). The codes equal the torch
reference's (`quantize_blockwise`: searchsorted over the scaled table, the same comparisons) bit
for bit as long as the moments are: under the interpreter they are, element for element; a GPU
build with Triton's default FMA contraction rounds beta1 * m + (1 - beta1) * g once instead of
twice, so a moment within an ulp of a midpoint may take the neighbouring code there, and it may
contract m - CODE[i] * absmax' (the lower distance) into one fma likewise, moving exact ties too
(the probes' products feed comparisons only, never contracted); launch with enable_fp_fusion=False
for GPU codes equal to the reference's bit for bit, ties included. The parameter update uses
tl.sqrt and `/` (approximate on the GPU): params are compared within the dtype's tolerance.

Work split: a CTA owns BLOCKS x STEPS consecutive quant blocks (program id = its chunk of the flat
buffer, chunks in order). It walks them in STEPS loop steps of one [BLOCKS, QBLOCK] tile -- BLOCKS
quant blocks, one a row, so each row's absmax is one row reduction (a max over 256 elements: within
a warp when a row fits in a warp's elements, across warps through shared memory otherwise) --
BLOCKS x 256 / (32 num_warps) elements a thread a step. Every element is read once (p, g, c1, c2)
and written once (p, c1, c2), every absmax read once and written once: pure streaming, 10 B an
element for bf16, 16 B for fp32 (+ 16 B per 256 elements of absmax), and 2 x (1 + 8 + 2) table
gathers an element from L1 (the dequantization's and the search's). A full chunk runs STEPS unmasked steps
(16-byte vector accesses of p / g, 4- to 16-byte vectors of the codes, by Triton's coalescing); the
CTA whose chunk holds the buffer's end runs ceil(rest / tile) masked steps (elements past n neither
read nor written, rows past the last quant block neither absmax read nor written, and the masked
lanes left out of the row maxima).

Outputs: the step writes p_out, state1_out, state2_out, absmax1_out, absmax2_out, which an optimizer
makes the inputs themselves (in place: every element and absmax is read by the CTA that writes it,
the reads of a row before its writes, since the row's new absmax depends on all of them); `launch`
passes separate output buffers so the inputs survive for the reference and every timed launch does
the same work.

Tunables: BLOCKS (quant blocks a tile: the row count of the tile, registers and bytes in flight per
step), STEPS (tiles a CTA: the grid is ceil(n_blocks / (BLOCKS STEPS)); fewer, longer CTAs), num_warps
(threads a tile: elements a thread, and whether a row's max crosses warps); num_stages (no dot, the
loop's loads are not pipelined: held at 1).
Problem parameters (a workload point): model (a key of MODELS, or "n" for an explicit element count),
shard (ranks the flat buffer is split over: rank 0's ceil(n / shard) elements), dtype (params and
grads: "fp32" / "bf16").
"""

from __future__ import annotations

import functools
import math

import triton
import triton.language as tl

QBLOCK = 256        # elements per quant block (one absmax per state)


@triton.jit
def _nearest_code(CODE, y, scale):
    """Index (int32) of the entry of the sorted 256-entry table CODE whose scaled value CODE[i] * scale
    (fp32 product; scale [R, 1] > 0) is nearest to y: 8 binary-search probes find the largest i with
    CODE[i] * scale <= y (0 when none), then lo = CODE[i] * scale and hi = CODE[i + 1] * scale (+inf
    for i = 255) are gathered again; an exact tie goes to the lower index."""
    idx = tl.zeros(y.shape, dtype=tl.int32)
    for s in tl.static_range(8):
        probe = idx + (128 >> s)
        idx = tl.where(tl.load(CODE + probe) * scale <= y, probe, idx)
    lo = tl.load(CODE + idx) * scale
    hi = tl.where(idx < 255, tl.load(CODE + tl.minimum(idx + 1, 255)) * scale, float("inf"))
    return tl.where(hi - y < y - lo, idx + 1, idx)


@triton.jit
def _step(P, G, S1, S2, A1, A2, P_OUT, S1_OUT, S2_OUT, A1_OUT, A2_OUT, CODE1, CODE2, base, N,
          beta1, omb1, beta2, omb2, decay, step_size, inv_sqrt_bc2, eps,
          BLOCKS: tl.constexpr, QB: tl.constexpr, MASKED: tl.constexpr):
    """One [BLOCKS, QB] tile at flat element `base` (int64, a multiple of QB): masked past N when MASKED."""
    rows = tl.arange(0, BLOCKS)
    offs = rows[:, None] * QB + tl.arange(0, QB)[None, :]          # int32 inside the tile
    blk = base // QB + rows                                         # the rows' quant blocks (int64)
    if MASKED:
        rest = N - base
        mask = offs < rest
        row_ok = rows * QB < rest
        p = tl.load(P + base + offs, mask=mask, other=0.0).to(tl.float32)
        g = tl.load(G + base + offs, mask=mask, other=0.0).to(tl.float32)
        c1 = tl.load(S1 + base + offs, mask=mask, other=0)
        c2 = tl.load(S2 + base + offs, mask=mask, other=0)
        a1 = tl.load(A1 + blk, mask=row_ok, other=0.0)
        a2 = tl.load(A2 + blk, mask=row_ok, other=0.0)
    else:
        p = tl.load(P + base + offs).to(tl.float32)
        g = tl.load(G + base + offs).to(tl.float32)
        c1 = tl.load(S1 + base + offs)
        c2 = tl.load(S2 + base + offs)
        a1 = tl.load(A1 + blk)
        a2 = tl.load(A2 + blk)
    # dequantize, Adam moments (fp32)
    m = tl.load(CODE1 + c1.to(tl.int32)) * a1[:, None]
    v = tl.load(CODE2 + c2.to(tl.int32)) * a2[:, None]
    m = beta1 * m + omb1 * g
    v = beta2 * v + omb2 * (g * g)
    # AdamW: decoupled weight decay, bias corrections folded into step_size and inv_sqrt_bc2
    p = p * decay - step_size * (m / (tl.sqrt(v) * inv_sqrt_bc2 + eps))
    if MASKED:
        tl.store(P_OUT + base + offs, p.to(P_OUT.dtype.element_ty), mask=mask)
        m = tl.where(mask, m, 0.0)
        v = tl.where(mask, v, 0.0)
    else:
        tl.store(P_OUT + base + offs, p.to(P_OUT.dtype.element_ty))
    # re-quantize: per-row absmax; the nearest code by its scaled value CODE[i] * absmax (a block of
    # zeros, absmax 0, searches the unscaled table: the 0.0 code)
    am1 = tl.max(tl.abs(m), axis=1)
    am2 = tl.max(v, axis=1)
    q1 = _nearest_code(CODE1, m, tl.where(am1 > 0, am1, 1.0)[:, None]).to(tl.uint8)
    q2 = _nearest_code(CODE2, v, tl.where(am2 > 0, am2, 1.0)[:, None]).to(tl.uint8)
    if MASKED:
        tl.store(S1_OUT + base + offs, q1, mask=mask)
        tl.store(S2_OUT + base + offs, q2, mask=mask)
        tl.store(A1_OUT + blk, am1, mask=row_ok)
        tl.store(A2_OUT + blk, am2, mask=row_ok)
    else:
        tl.store(S1_OUT + base + offs, q1)
        tl.store(S2_OUT + base + offs, q2)
        tl.store(A1_OUT + blk, am1)
        tl.store(A2_OUT + blk, am2)


@triton.jit
def _kernel(P, G, S1, S2, A1, A2, P_OUT, S1_OUT, S2_OUT, A1_OUT, A2_OUT, CODE1, CODE2, N,
            beta1, omb1, beta2, omb2, decay, step_size, inv_sqrt_bc2, eps,
            QB: tl.constexpr, BLOCKS: tl.constexpr, STEPS: tl.constexpr):
    TILE: tl.constexpr = BLOCKS * QB
    CHUNK: tl.constexpr = STEPS * TILE
    start = tl.program_id(0).to(tl.int64) * CHUNK
    if start + CHUNK <= N:                       # a full chunk: STEPS unmasked tiles
        for i in range(STEPS):
            _step(P, G, S1, S2, A1, A2, P_OUT, S1_OUT, S2_OUT, A1_OUT, A2_OUT, CODE1, CODE2, start + i * TILE, N,
                  beta1, omb1, beta2, omb2, decay, step_size, inv_sqrt_bc2, eps, BLOCKS, QB, False)
    else:                                        # the chunk holding the buffer's end: masked tiles up to N
        n_tiles = ((N - start + TILE - 1) // TILE).to(tl.int32)
        for i in range(n_tiles):
            _step(P, G, S1, S2, A1, A2, P_OUT, S1_OUT, S2_OUT, A1_OUT, A2_OUT, CODE1, CODE2, start + i * TILE, N,
                  beta1, omb1, beta2, omb2, decay, step_size, inv_sqrt_bc2, eps, BLOCKS, QB, True)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-25"
DTYPES = ("fp32", "bf16")       # params and grads (the same); states uint8 codes, absmax fp32
TUNABLES = ("BLOCKS", "STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCKS": 2, "STEPS": 4, "num_warps": 4, "num_stages": 1}
# the study's sweep: 4 x 5 x 2 = 40 configs (tiles of 256-2048 elements, 1-16 a thread; chunks of
# 1-128 quant blocks a CTA). 32 elements a thread (8 x 256 on 2 warps) takes 255 registers and
# spills (16 B under triton 3.6, 64 B under 3.9): the sweep stops at 16.
SWEEP_AXES = {"BLOCKS": [1, 2, 4, 8], "STEPS": [1, 2, 4, 8, 16], "num_warps": [4, 8], "num_stages": [1]}

# the step's hyperparameters at every point (a fine-tuning recipe's; step 10: bias corrections far from 1)
HPARAMS = {"lr": 1e-4, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 0.01, "step": 10}

# parameter counts of the models (named_parameters(), tied weights once)
MODELS = {
    "bert_base_seqcls": 109_483_778,    # bert-base-uncased (109,482,240) + a 2-label classifier head (1,538)
    "llama2_7b": 6_738_415_616,
    "llama3_70b": 70_553_706_496,
}

# Three optimizer steps of real training jobs, 0.55-1.75 GB moved each (11-35x the H200's 50 MB L2),
# HBM-bound at roughly 130-400 us on an H200; every n is ragged (its last quant block short).
POINTS = [
    # BERT-base sequence-classification full fine-tune (the 8-bit Adam use case: one GPU), fp32 params
    # and grads: n = 109,483,778 (427,672 quant blocks, the last 2 elements), 1.75 GB moved
    {"model": "bert_base_seqcls", "shard": 1, "dtype": "fp32"},
    # Llama-2-7B, pure-bf16 FSDP over 64 ranks (rank 0's shard of the flat parameter): n = 105,287,744
    # (411,281 blocks, the last 64 elements), bf16 params and grads, 1.05 GB moved
    {"model": "llama2_7b", "shard": 64, "dtype": "bf16"},
    # Llama-3-70B, ZeRO-3 over 2048 ranks with fp32 master weights and fp32 grad partitions: n =
    # 34,450,052 (134,571 blocks, the last 132 elements), 0.55 GB moved
    {"model": "llama3_70b", "shard": 2048, "dtype": "fp32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def numel(point) -> int:
    """The point's flat buffer length: point["n"], or MODELS[model] split over `shard` ranks (rank 0's
    ceil(count / shard) elements)."""
    if "n" in point:
        n = point["n"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n={n!r} must be a positive int")
        return n
    model = point.get("model")
    if model not in MODELS:
        raise ValueError(f"model {model!r} is not one of {', '.join(MODELS)}")
    shard = point.get("shard", 1)
    if not isinstance(shard, int) or isinstance(shard, bool) or shard < 1:
        raise ValueError(f"shard={shard!r} must be a positive int")
    return -(-MODELS[model] // shard)


def _check_point(point) -> int:
    _elem_bytes(point.get("dtype", "fp32"))
    return numel(point)


def _check_cfg(cfg) -> None:
    for k in ("BLOCKS", "num_warps"):
        v = cfg[k]
        if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if cfg["num_warps"] > 32:
        raise ValueError(f"num_warps={cfg['num_warps']} must be <= 32")
    s = cfg["STEPS"]
    if not isinstance(s, int) or isinstance(s, bool) or s < 1:
        raise ValueError(f"STEPS={s!r} must be a positive int")
    st = cfg.get("num_stages", 1)
    if not isinstance(st, int) or isinstance(st, bool) or st < 1:
        raise ValueError(f"num_stages={st!r} must be a positive int")


def n_blocks(n: int) -> int:
    """Quant blocks of an n-element buffer (absmax entries per state)."""
    return -(-n // QBLOCK)


def _grid(n: int, cfg) -> int:
    _check_cfg(cfg)
    return triton.cdiv(n_blocks(n), cfg["BLOCKS"] * cfg["STEPS"])


@functools.lru_cache(maxsize=None)
def _dynamic_map_values(signed: bool, max_exponent_bits: int = 7, total_bits: int = 8) -> tuple:
    import torch
    data = []
    non_sign_bits = total_bits - 1
    for i in range(max_exponent_bits):
        items = 2 ** (i + non_sign_bits - max_exponent_bits) + 1 if signed else \
            2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1
        bounds = torch.linspace(0.1, 1, items, dtype=torch.float32)
        means = (bounds[:-1] + bounds[1:]) / 2.0
        scale = 10 ** (-(max_exponent_bits - 1) + i)
        data += (scale * means).tolist()
        if signed:
            data += (-scale * means).tolist()
    data += [0.0, 1.0]
    if len(data) != 2 ** total_bits:
        raise ValueError(f"a dynamic map of {len(data)} values for {total_bits} bits")
    return tuple(sorted(data))


def create_dynamic_map(signed: bool = True, device="cpu"):
    """The 256-entry fp32 dynamic quantization table (bitsandbytes' create_dynamic_map with
    max_exponent_bits = 7, total_bits = 8): sorted ascending, signed ([-0.99297, 1]) or unsigned ([0, 1])."""
    import torch
    return torch.tensor(_dynamic_map_values(bool(signed)), dtype=torch.float32, device=device)


def quantize_blockwise(x, code):
    """(codes uint8, absmax fp32 [ceil(n / 256)]) of a flat fp32 tensor by the kernel's rule: per block
    of 256 elements absmax = max |x| (0 for an all-zero block), then for each element the code i whose
    scaled value code[i] * absmax (fp32) is nearest: searchsorted over the block's scaled table, then
    i + 1 if t[i + 1] - x < x - t[i] (fp32; an exact tie keeps i, the lower code). An all-zero block
    searches the unscaled table (scale 1): the 0.0 code."""
    import torch
    x = x.float().reshape(-1)
    n = x.numel()
    nb = n_blocks(n)
    pad = torch.zeros(nb * QBLOCK, dtype=torch.float32, device=x.device)
    pad[:n] = x
    rows = pad.view(nb, QBLOCK)
    absmax = rows.abs().amax(dim=1)
    scale = torch.where(absmax > 0, absmax, torch.ones_like(absmax))
    return nearest_code(rows, code, scale).reshape(-1)[:n].to(torch.uint8), absmax


def nearest_code(rows, code, scale):
    """The kernel's nearest-code rule: rows [B, k] fp32, code the sorted [256] table, scale [B] > 0 ->
    int64 indices: the largest i with code[i] * scale <= x (0 when none), moved to i + 1 when
    code[i + 1] * scale - x < x - code[i] * scale (ties to the lower code)."""
    import torch
    t = code[None, :] * scale[:, None]                                          # [B, 256], fp32 products
    i = (torch.searchsorted(t, rows.contiguous(), right=True) - 1).clamp(min=0)
    lo = t.gather(1, i)
    hi = torch.cat([t, torch.full_like(t[:, :1], float("inf"))], dim=1).gather(1, i + 1)
    return torch.where(hi - rows < rows - lo, i + 1, i)


def _scalars(lr, beta1, beta2, eps, weight_decay, step) -> dict:
    """The step's fp32 scalars (bias corrections folded on the host)."""
    bc1 = 1.0 - beta1 ** step
    bc2 = 1.0 - beta2 ** step
    return dict(beta1=float(beta1), omb1=float(1.0 - beta1), beta2=float(beta2), omb2=float(1.0 - beta2),
                decay=float(1.0 - lr * weight_decay), step_size=float(lr / bc1),
                inv_sqrt_bc2=float(1.0 / math.sqrt(bc2)), eps=float(eps))


def _kernel_args(params, grads, state1, state2, absmax1, absmax2, outs, code1, code2, scalars, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    p_out, s1_out, s2_out, a1_out, a2_out = outs
    return dict(P=params, G=grads, S1=state1, S2=state2, A1=absmax1, A2=absmax2, P_OUT=p_out, S1_OUT=s1_out,
                S2_OUT=s2_out, A1_OUT=a1_out, A2_OUT=a2_out, CODE1=code1, CODE2=code2, N=params.numel(),
                **scalars, QB=QBLOCK, BLOCKS=cfg["BLOCKS"], STEPS=cfg["STEPS"])


def adam8bit_step(params, grads, state1, state2, absmax1, absmax2, code1, code2, *, lr, betas=(0.9, 0.999),
                  eps=1e-8, weight_decay=0.0, step, out=None, BLOCKS: int = 2, STEPS: int = 4, num_warps: int = 4,
                  num_stages: int = 1):
    """One blockwise 8-bit AdamW step on a flat buffer. params, grads: contiguous 1-D fp32 or bf16 (the
    same dtype and length n); state1, state2: uint8 codes [n] (m into the signed table code1, v into
    the unsigned code2, both fp32 [256] sorted); absmax1, absmax2: fp32 [ceil(n / 256)]. `step` is
    the step number after this update (>= 1). out: None (in place: the inputs are updated) or a
    tuple (params, state1, state2, absmax1, absmax2) of buffers shaped like the inputs to write
    instead. Returns the new params."""
    import torch
    cfg = {"BLOCKS": BLOCKS, "STEPS": STEPS, "num_warps": num_warps, "num_stages": num_stages}
    _check_cfg(cfg)
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        raise ValueError(f"step={step!r} must be an int >= 1 (the step number after this update)")
    b1, b2 = betas
    if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
        raise ValueError(f"betas={betas!r} must lie in [0, 1)")
    if not eps > 0:
        raise ValueError(f"eps={eps!r} must be > 0")
    if params.dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"params must be fp32 / bf16; got {params.dtype}")
    n = params.numel()
    nb = n_blocks(n) if n else 0
    want = {"params": (params.dtype, n), "grads": (params.dtype, n), "state1": (torch.uint8, n),
            "state2": (torch.uint8, n), "absmax1": (torch.float32, nb), "absmax2": (torch.float32, nb),
            "code1": (torch.float32, 256), "code2": (torch.float32, 256)}
    bufs = {"params": params, "grads": grads, "state1": state1, "state2": state2, "absmax1": absmax1,
            "absmax2": absmax2, "code1": code1, "code2": code2}
    if out is None:
        outs = (params, state1, state2, absmax1, absmax2)
    else:
        if len(out) != 5:
            raise ValueError(f"out must be (params, state1, state2, absmax1, absmax2); got {len(out)} buffers")
        outs = tuple(out)
        for k, t in zip(("params", "state1", "state2", "absmax1", "absmax2"), outs):
            bufs[f"out {k}"] = t
            want[f"out {k}"] = want[k]
    for name, t in bufs.items():
        dt, size = want[name]
        if t.dtype != dt or t.dim() != 1 or t.numel() != size or (size > 1 and t.stride(0) != 1):
            raise ValueError(f"{name} must be a contiguous 1-D {dt} tensor of {size} elements; got {t.dtype} "
                             f"{tuple(t.shape)} strides {t.stride()}")
        if t.device != params.device:
            raise ValueError(f"{name} is on {t.device}, params on {params.device}")
    if n == 0:
        return outs[0]
    if n + BLOCKS * STEPS * QBLOCK >= 2**62:
        raise ValueError(f"n={n} is too large")
    scal = _scalars(lr, b1, b2, eps, weight_decay, step)
    _kernel[(_grid(n, cfg),)](**_kernel_args(params, grads, state1, state2, absmax1, absmax2, outs, code1, code2,
                                             scal, cfg), num_warps=num_warps, num_stages=num_stages)
    return outs[0]


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """The point's flat buffers: params ~ N(0, 0.02^2), grads ~ N(0, 1e-3^2) in the point's dtype; the
    states of an earlier step, m ~ N(0, 1e-3^2) and v ~ N(0, 1e-3^2)^2 (per-block scales spread by a
    log-normal factor), quantized blockwise with the tables; separate output buffers (launch writes
    them, the inputs stay as they are). Drawn on the CPU from a seeded generator and moved."""
    import torch
    n = _check_point(point)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    nb = n_blocks(n)
    code1, code2 = create_dynamic_map(True, device), create_dynamic_map(False, device)
    params = (torch.randn(n, generator=gen) * 0.02).to(dt).to(device)
    scale = torch.exp(0.5 * torch.randn(nb, generator=gen)).repeat_interleave(QBLOCK)[:n]
    grads = (torch.randn(n, generator=gen) * 1e-3 * scale).to(dt).to(device)
    m0 = (torch.randn(n, generator=gen) * 1e-3 * scale).to(device)
    v0 = ((torch.randn(n, generator=gen) * 1e-3 * scale) ** 2).to(device)
    s1, a1 = quantize_blockwise(m0, code1)
    s2, a2 = quantize_blockwise(v0, code2)
    del m0, v0
    outs = {"params_out": torch.empty_like(params), "state1_out": torch.empty_like(s1),
            "state2_out": torch.empty_like(s2), "absmax1_out": torch.empty_like(a1),
            "absmax2_out": torch.empty_like(a2)}
    return {"params": params, "grads": grads, "state1": s1, "state2": s2, "absmax1": a1, "absmax2": a2,
            "code1": code1, "code2": code2, **outs,
            **{k: HPARAMS[k] for k in ("lr", "beta1", "beta2", "eps", "weight_decay", "step")}}


def _outs(inputs):
    return tuple(inputs[k] for k in ("params_out", "state1_out", "state2_out", "absmax1_out", "absmax2_out"))


def launch(inputs, cfg):
    """One step from the inputs into their output buffers; returns the new params (params_out)."""
    return adam8bit_step(inputs["params"], inputs["grads"], inputs["state1"], inputs["state2"], inputs["absmax1"],
                         inputs["absmax2"], inputs["code1"], inputs["code2"], lr=inputs["lr"],
                         betas=(inputs["beta1"], inputs["beta2"]), eps=inputs["eps"],
                         weight_decay=inputs["weight_decay"], step=inputs["step"], out=_outs(inputs),
                         BLOCKS=cfg["BLOCKS"], STEPS=cfg["STEPS"], num_warps=cfg["num_warps"],
                         num_stages=cfg["num_stages"])


def reference_step(inputs) -> dict:
    """The step in torch, fp32, with the kernel's operations in the kernel's order (the scalars rounded
    to fp32 as the launch passes them): params (fp32, before the cast to the params' dtype), state1,
    state2 (uint8 codes), absmax1, absmax2. Reads the inputs, never writes them."""
    import torch
    s = _scalars(inputs["lr"], inputs["beta1"], inputs["beta2"], inputs["eps"], inputs["weight_decay"],
                 inputs["step"])
    f = {k: torch.tensor(v, dtype=torch.float32, device=inputs["params"].device) for k, v in s.items()}
    code1, code2 = inputs["code1"], inputs["code2"]
    n = inputs["params"].numel()
    blk = torch.arange(n, device=code1.device) // QBLOCK
    p = inputs["params"].float()
    g = inputs["grads"].float()
    m = code1[inputs["state1"].long()] * inputs["absmax1"][blk]
    v = code2[inputs["state2"].long()] * inputs["absmax2"][blk]
    m = f["beta1"] * m + f["omb1"] * g
    v = f["beta2"] * v + f["omb2"] * (g * g)
    p = p * f["decay"] - f["step_size"] * (m / (v.sqrt() * f["inv_sqrt_bc2"] + f["eps"]))
    s1, a1 = quantize_blockwise(m, code1)
    s2, a2 = quantize_blockwise(v, code2)
    return {"params": p, "state1": s1, "state2": s2, "absmax1": a1, "absmax2": a2}


def reference(inputs):
    """The new params in fp32 (see reference_step)."""
    return reference_step(inputs)["params"]


def torch_baseline(inputs):
    """What eager torch runs for it (no fused op exists): the table lookups, the moment and parameter
    updates and the blockwise re-quantization (amax, division, searchsorted) as separate kernels, on
    fresh tensors; returns the new params in the params' dtype."""
    return reference_step(inputs)["params"].to(inputs["params"].dtype)


def bytes_moved(point) -> int:
    """p read and written and g read in the dtype, both code arrays read and written (1 B each), both
    absmax arrays read and written (4 B a quant block each); the 2 KiB of tables left out."""
    n = _check_point(point)
    e = _elem_bytes(point.get("dtype", "fp32"))
    return n * (3 * e + 4) + 16 * n_blocks(n)


def flops(point) -> int:
    """25 fp32 ops an element: dequantize 2, m 3, v 4, the parameter update 7 (sqrt, scale, + eps,
    division, step, decay, subtraction), |m| and the two row maxima 3, the two normalising divisions
    2, the two final distance pairs 4; the binary searches' compares are not counted."""
    return 25 * _check_point(point)


def grid(cfg, point) -> int:
    """One CTA per BLOCKS x STEPS quant blocks."""
    return _grid(_check_point(point), cfg)


def loop_iterations(cfg, point) -> int:
    """Tiles a CTA: STEPS (the last CTA may run fewer; all of them when one chunk holds the buffer)."""
    n = _check_point(point)
    _check_cfg(cfg)
    return min(cfg["STEPS"], triton.cdiv(n_blocks(n), cfg["BLOCKS"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    separate output buffers, as launch passes them."""
    import torch
    n = _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(point.get("dtype", "fp32"))
    nb = n_blocks(n)

    def t(size, dtype):
        return torch.empty((size,), dtype=dtype, device="meta")

    h = HPARAMS
    scal = _scalars(h["lr"], h["beta1"], h["beta2"], h["eps"], h["weight_decay"], h["step"])
    outs = (t(n, dt), t(n, torch.uint8), t(n, torch.uint8), t(nb, torch.float32), t(nb, torch.float32))
    return _kernel_args(t(n, dt), t(n, dt), t(n, torch.uint8), t(n, torch.uint8), t(nb, torch.float32),
                        t(nb, torch.float32), outs, t(256, torch.float32), t(256, torch.float32), scal, cfg)
