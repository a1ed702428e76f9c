"""Multi-tensor fused AdamW step (the fused optimizers of apex / torch.optim(fused=True) /
Megatron / FSDP training loops), a bare @triton.jit kernel + its launcher.

For every element of every parameter tensor of a model, in one launch (torch.optim.AdamW's
math, decoupled weight decay, bias corrections at step t, an optional AMP gradient unscale):

    g  = grad * inv_scale                                   (grad fp32 or bf16, math in fp32)
    m  = beta1 * m + (1 - beta1) * g
    v  = beta2 * v + (1 - beta2) * g * g
    p  = p * (1 - lr * wd[tensor])
    p  = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    p16 = bf16(p)                                           (only with WRITE_BF16)

Layout: flat buffers with offsets, not int64 address lists (offsets stay right when the
buffers are copied or moved; an address table would keep pointing at the old ones). The model's
tensors live in three flat fp32 buffers of `total` elements -- the master params P, exp_avg M,
exp_avg_sq V -- and one flat gradient buffer G (fp32 or bf16), the way Megatron's / DeepSpeed's contiguous param and
grad buffers hold them (each parameter a view; in make_inputs, P, M, V are the three rows of
one [3, total] fp32 `state` tensor). Tensor k starts at element offset[k] of every buffer,
each offset a multiple of ALIGN = 16 elements (64 B of fp32, 32 B of bf16), so every view
is 16-byte aligned; the padding between tensors is never read or written. With WRITE_BF16 a
fifth flat buffer P16 (bf16, same offsets) receives the bf16 copy of the new params (the
compute weights of the next forward / the next all-gather's input).

Chunk table (built by the launcher, FlatLayout.chunks, cached per CHUNK): one int64 record
[tensor id, flat offset, length] per chunk; tensor k of numel n_k gives ceil(n_k / CHUNK)
chunks, all CHUNK long but its last (n_k mod CHUNK). Chunks never straddle a tensor, so a
CTA's per-tensor hyperparameter (the weight decay of its tensor's param group: 0 for 1-D
norm weights / magnitude vectors, `weight_decay` for matrices, from the fp32 table WD) is a
scalar. Grid: one CTA per chunk (program id = chunk index), in table order (each tensor's
chunks in turn). A CTA walks its chunk BLOCK elements at a time: a full chunk (length ==
CHUNK) in CHUNK // BLOCK unmasked, 16-byte-vectorised steps (the offsets are declared
multiples of 16); a tensor's last chunk in length // BLOCK such steps, then at most one masked
(scalar) tail block. Every element is read once
(P, G, M, V) and written once (P, M, V, and P16): pure streaming, no reuse.

Tunables: CHUNK (elements per CTA: a power of two >= BLOCK; the grid size, and how much of a
tensor's last CTA is short), BLOCK (elements per loop step: a power of two >= 32; registers and
bytes in flight per CTA), LOOP_STAGES (the main loop is a tl.range with num_stages=LOOP_STAGES:
1 = plain vector loads; >= 2 = the loads of the next LOOP_STAGES - 1 blocks copied ahead into
shared memory with cp.async, (LOOP_STAGES - 1) x BLOCK x 12-14 B), num_warps, num_stages (the
launch's: the loop carries its own stage count and there is no dot, so it changes nothing in the
cubin -- identical PTX and SASS for sm_90 with triton 3.6.0).
With bf16 grads (or the bf16 copy) Triton computes in the 8-elements-a-thread layout of the bf16
accesses and converts to the fp32 stores' 4-a-thread layout through shared memory (up to 8 KiB).

Problem parameters (a workload point): model (a key of MODELS) and shard (each tensor split
along dim 0 over `shard` ranks, FSDP2-style: rank 0's piece), or sizes (an explicit list of
numels, decayed but the indices in no_decay: for tests); dtype (the gradient's: "bf16" /
"fp32"); write_bf16; loss_scale (optional, default 1: grads hold loss_scale x the gradient,
the kernel multiplies by inv_scale = 1 / loss_scale).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

ALIGN = 16          # every tensor's flat offset is a multiple of this many elements


@triton.jit
def _adam_block(P, G, M, V, P16, offs, mask, lr_wd, beta1, beta2, step_size, inv_sqrt_bc2, eps, inv_scale,
                MASKED: tl.constexpr, WRITE_BF16: tl.constexpr):
    """AdamW on one BLOCK of elements at `offs` of the chunk's buffers (masked only when MASKED)."""
    if MASKED:
        p = tl.load(P + offs, mask=mask, other=0.0)
        g = tl.load(G + offs, mask=mask, other=0.0).to(tl.float32)
        m = tl.load(M + offs, mask=mask, other=0.0)
        v = tl.load(V + offs, mask=mask, other=0.0)
    else:
        p = tl.load(P + offs)
        g = tl.load(G + offs).to(tl.float32)
        m = tl.load(M + offs)
        v = tl.load(V + offs)
    g = g * inv_scale
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * (g * g)
    denom = tl.sqrt(v) * inv_sqrt_bc2 + eps
    p = p * lr_wd - step_size * (m / denom)
    if MASKED:
        tl.store(P + offs, p, mask=mask)
        tl.store(M + offs, m, mask=mask)
        tl.store(V + offs, v, mask=mask)
        if WRITE_BF16:
            tl.store(P16 + offs, p.to(tl.bfloat16), mask=mask)
    else:
        tl.store(P + offs, p)
        tl.store(M + offs, m)
        tl.store(V + offs, v)
        if WRITE_BF16:
            tl.store(P16 + offs, p.to(tl.bfloat16))


@triton.jit
def _kernel(P, G, M, V, P16, CHUNKS, WD, lr, beta1, beta2, step_size, inv_sqrt_bc2, eps, inv_scale,
            WRITE_BF16: tl.constexpr, CHUNK: tl.constexpr, BLOCK: tl.constexpr, LOOP_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    rec = CHUNKS + pid.to(tl.int64) * 3                 # this chunk's [tensor id, flat offset, length] (int64)
    tid = tl.load(rec)
    start = tl.multiple_of(tl.load(rec + 1), 16)        # tensor offsets: multiples of ALIGN; chunk starts: + k CHUNK
    length = tl.load(rec + 2).to(tl.int32)              # 1 ..= CHUNK
    lr_wd = 1.0 - lr * tl.load(WD + tid)                # decoupled weight decay of this tensor's group
    # the chunk's views: 16-byte aligned base pointers, int32 offsets inside the chunk
    Pc = P + start
    Gc = G + start
    Mc = M + start
    Vc = V + start
    P16c = P16
    if WRITE_BF16:
        P16c = P16 + start
    cols = tl.arange(0, BLOCK)
    # unmasked blocks: 16-byte vector loads / stores; LOOP_STAGES >= 2 keeps LOOP_STAGES - 1 blocks'
    # loads in flight (cp.async into shared memory) while one computes
    if length == CHUNK:                                 # a full chunk (all but each tensor's last): constant trips
        for i in tl.range(0, CHUNK // BLOCK, num_stages=LOOP_STAGES):
            _adam_block(Pc, Gc, Mc, Vc, P16c, i * BLOCK + cols, None, lr_wd, beta1, beta2, step_size,
                        inv_sqrt_bc2, eps, inv_scale, False, WRITE_BF16)
    else:                                               # a tensor's last chunk: its full blocks, then the tail
        n_full = length // BLOCK
        for i in tl.range(0, n_full, num_stages=LOOP_STAGES):
            _adam_block(Pc, Gc, Mc, Vc, P16c, i * BLOCK + cols, None, lr_wd, beta1, beta2, step_size,
                        inv_sqrt_bc2, eps, inv_scale, False, WRITE_BF16)
        tail = n_full * BLOCK
        if tail < length:                               # masked (scalar) accesses for the last partial block
            _adam_block(Pc, Gc, Mc, Vc, P16c, tail + cols, cols < length - tail, lr_wd, beta1, beta2, step_size,
                        inv_sqrt_bc2, eps, inv_scale, True, WRITE_BF16)


# ---------------------------------------------------------------- launcher
DTYPES = ("bf16", "fp32")       # the gradient's; params and moments are always fp32
TUNABLES = ("CHUNK", "BLOCK", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"CHUNK": 16384, "BLOCK": 1024, "LOOP_STAGES": 1, "num_warps": 4, "num_stages": 1}
# the chunk sizes make_inputs builds chunk tables for ahead of time on a GPU (launch builds others when
# first asked, which a CUDA-graph capture would not allow)
PREBUILT_CHUNKS = tuple(2 ** k for k in range(11, 18))

# AdamW hyperparameters of every point (a pretraining recipe's; step 7: bias corrections far from 1)
HPARAMS = {"lr": 2e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "step": 7}

# The models: name -> its parameter tensors in named_parameters() order, (shape, decayed). Llama
# layers: q, k, v, o, gate, up, down, the two RMSNorm weights; 2-D weights decayed, 1-D not.
_LLAMA = {
    "llama2_7b": dict(vocab=32000, hidden=4096, inter=11008, layers=32, q=4096, kv=4096, tied=False),
    "llama3.2_1b": dict(vocab=128256, hidden=2048, inter=8192, layers=16, q=2048, kv=512, tied=True),
}
# DoRA (PEFT use_dora=True) adapters of rank 8 on all seven projections of Llama-3-8B: per module
# lora_A [r, in], lora_B [out, r] (decayed) and the magnitude vector [out] (not decayed)
_DORA = {"llama3_8b_dora_r8": dict(hidden=4096, inter=14336, layers=32, q=4096, kv=1024, rank=8)}
MODELS = tuple(_LLAMA) + tuple(_DORA)

# Three optimizer steps of real training jobs; every point's tensors far exceed the 50 MB L2 and
# every element is touched once: HBM streaming, 26-30 B an element.
POINTS = [
    # Llama-2-7B (291 tensors) under FSDP2 over 32 ranks (each tensor dim-0 sharded: rank 0's pieces,
    # 128-element norm shards to 4.1 M-element embedding shards): 210.6 M params, bf16 grads
    # (reduce-scattered in bf16), the bf16 param copy written. Inputs 3.4 GB, 5.9 GB moved (~1.3 ms)
    {"model": "llama2_7b", "shard": 32, "dtype": "bf16", "write_bf16": True},
    # Llama-3.2-1B (146 tensors, tied embedding) under FSDP2 over 8 ranks, fp32 grads (reduce_dtype fp32),
    # no bf16 copy (FSDP2 casts at the all-gather): 154.5 M params, a 32.8 M-element embedding shard.
    # Inputs 2.5 GB, 4.3 GB moved (~1 ms)
    {"model": "llama3.2_1b", "shard": 8, "dtype": "fp32", "write_bf16": False},
    # DoRA r=8 fine-tune of Llama-3-8B: 672 small tensors (1,024-element magnitude vectors to 114,688-
    # element lora_B of gate / up), 22.4 M params, fp32 grads, bf16 adapter copy for the bf16 forward.
    # Inputs 0.40 GB, 0.67 GB moved (~0.15 ms): per-tensor tails and the CTA count matter
    {"model": "llama3_8b_dora_r8", "shard": 1, "dtype": "fp32", "write_bf16": True},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)} (the gradient's)") from None


def _grad_bytes(name: str) -> int:
    _torch_dtype(name)
    return 2 if name == "bf16" else 4


def model_tensors(name: str) -> list[tuple[tuple[int, ...], bool]]:
    """The parameter tensors of MODELS[name] in named_parameters() order: (shape, weight-decayed)."""
    if name in _LLAMA:
        c = _LLAMA[name]
        h, f, q, kv = c["hidden"], c["inter"], c["q"], c["kv"]
        out = [((c["vocab"], h), True)]
        layer = [((q, h), True), ((kv, h), True), ((kv, h), True), ((h, q), True), ((f, h), True), ((f, h), True),
                 ((h, f), True), ((h,), False), ((h,), False)]
        out += layer * c["layers"] + [((h,), False)]
        if not c["tied"]:
            out.append(((c["vocab"], h), True))
        return out
    if name in _DORA:
        c = _DORA[name]
        h, f, q, kv, r = c["hidden"], c["inter"], c["q"], c["kv"], c["rank"]
        layer = []
        for d_in, d_out in ((h, q), (h, kv), (h, kv), (q, h), (h, f), (h, f), (f, h)):
            layer += [((r, d_in), True), ((d_out, r), True), ((d_out,), False)]
        return layer * c["layers"]
    raise ValueError(f"model {name!r} is not one of {', '.join(MODELS)}")


def tensor_list(point) -> tuple[list[int], list[bool]]:
    """(numels, decayed) of the point's tensors: a model's, each dim-0 sharded over `shard` ranks
    (rank 0's piece: ceil(dim0 / shard) rows), or the point's explicit `sizes` (decayed but the
    indices in `no_decay`)."""
    if "sizes" in point:
        sizes = [int(n) for n in point["sizes"]]
        skip = set(point.get("no_decay", ()))
        if not sizes or min(sizes) < 0:
            raise ValueError(f"sizes must be a non-empty list of numels >= 0; got {point['sizes']!r}")
        return sizes, [k not in skip for k in range(len(sizes))]
    shard = int(point.get("shard", 1))
    if shard < 1:
        raise ValueError(f"shard={shard} must be >= 1")
    numels, decay = [], []
    for shape, dec in model_tensors(point["model"]):
        rest = math.prod(shape[1:])
        numels.append(-(-shape[0] // shard) * rest)
        decay.append(dec)
    return numels, decay


def flat_offsets(numels) -> tuple[list[int], int]:
    """Each tensor's element offset in the flat buffers (a multiple of ALIGN) and the buffers' length."""
    offs, at = [], 0
    for n in numels:
        offs.append(at)
        at += -(-n // ALIGN) * ALIGN
    return offs, max(at, ALIGN)


def chunk_records(numels, offsets, chunk: int) -> list[tuple[int, int, int]]:
    """The chunk table as Python tuples (tensor id, flat offset, length), in launch order: each
    tensor's chunks in turn (what `chunk_table` builds, and what grid / cta_iterations count)."""
    return [(k, off + c, min(chunk, n - c)) for k, (n, off) in enumerate(zip(numels, offsets))
            for c in range(0, n, chunk)]


def _chunk_lengths(numels, chunk: int) -> list[int]:
    out = []
    for n in numels:
        full, rem = divmod(n, chunk)
        out += [chunk] * full + ([rem] if rem else [])
    return out


class FlatLayout:
    """Where each tensor lives in the flat buffers, its weight decay, and the chunk tables
    (int64 [n_chunks, 3] on the buffers' device, built once per CHUNK and cached)."""

    def __init__(self, numels, decayed, weight_decay: float, device):
        import torch
        self.numels = [int(n) for n in numels]
        if max(self.numels) >= 2**31:
            raise ValueError(f"a tensor of {max(self.numels)} elements: each must have < 2^31")
        self.offsets, self.total = flat_offsets(self.numels)
        self.wd = torch.tensor([weight_decay if d else 0.0 for d in decayed], dtype=torch.float32, device=device)
        self.device = device
        self._tables: dict[int, object] = {}

    def chunks(self, chunk: int):
        import torch
        t = self._tables.get(chunk)
        if t is None:
            n = torch.tensor(self.numels, dtype=torch.int64)
            off = torch.tensor(self.offsets, dtype=torch.int64)
            per = (n + chunk - 1) // chunk                              # chunks of each tensor
            tid = torch.repeat_interleave(torch.arange(len(n)), per)
            first = torch.cumsum(per, 0) - per                         # each tensor's first chunk index
            k = torch.arange(int(per.sum())) - first[tid]              # chunk index within its tensor
            start = k * chunk
            length = torch.minimum(n[tid] - start, torch.tensor(chunk))
            t = torch.stack([tid, off[tid] + start, length], dim=1).contiguous().to(self.device)
            self._tables[chunk] = t
        return t


def _check_cfg(cfg) -> None:
    chunk, block = cfg["CHUNK"], cfg["BLOCK"]
    if block < 32 or block & (block - 1):
        raise ValueError(f"BLOCK={block} must be a power of two >= 32")
    if chunk < block or chunk & (chunk - 1):
        raise ValueError(f"CHUNK={chunk} must be a power of two >= BLOCK={block}")
    if cfg.get("LOOP_STAGES", 1) < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1")


def _scalars(lr, beta1, beta2, eps, step, inv_scale) -> dict:
    """The step's fp32 scalars (bias corrections folded on the host, as torch's fused AdamW does)."""
    bc1 = 1.0 - beta1 ** step
    bc2 = 1.0 - beta2 ** step
    return dict(lr=float(lr), beta1=float(beta1), beta2=float(beta2), step_size=float(lr / bc1),
                inv_sqrt_bc2=float(1.0 / math.sqrt(bc2)), eps=float(eps), inv_scale=float(inv_scale))


def _kernel_args(params, grads, exp_avg, exp_avg_sq, param_bf16, chunks, wd, scalars, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(P=params, G=grads, M=exp_avg, V=exp_avg_sq, P16=param_bf16, CHUNKS=chunks, WD=wd, **scalars,
                WRITE_BF16=param_bf16 is not None, CHUNK=cfg["CHUNK"], BLOCK=cfg["BLOCK"],
                LOOP_STAGES=cfg.get("LOOP_STAGES", 1))


def fused_adamw(params, grads, exp_avg, exp_avg_sq, layout: FlatLayout, *, lr, betas=(0.9, 0.999), eps=1e-8,
                step, inv_scale=1.0, param_bf16=None, CHUNK=16384, BLOCK=1024, LOOP_STAGES=1, num_warps=4,
                num_stages=1):
    """One AdamW step, in place, on every tensor of `layout`: params, exp_avg, exp_avg_sq are flat
    fp32 buffers of layout.total elements, grads flat fp32 or bf16 (the same offsets), param_bf16
    (optional) a flat bf16 buffer that receives the new params. The weight decay of each tensor is
    layout.wd's; `step` is the step number after this update (>= 1). Returns params."""
    import torch
    cfg = {"CHUNK": CHUNK, "BLOCK": BLOCK, "LOOP_STAGES": LOOP_STAGES}
    _check_cfg(cfg)
    if step < 1:
        raise ValueError(f"step={step} must be >= 1 (the step number after this update)")
    bufs = {"params": params, "exp_avg": exp_avg, "exp_avg_sq": exp_avg_sq, "grads": grads}
    if param_bf16 is not None:
        bufs["param_bf16"] = param_bf16
    for name, t in bufs.items():
        want = {"grads": (torch.float32, torch.bfloat16), "param_bf16": (torch.bfloat16,)}.get(name, (torch.float32,))
        if t.dtype not in want or t.dim() != 1 or t.numel() != layout.total or t.stride(0) != 1:
            raise ValueError(f"{name} must be a contiguous 1-D {' or '.join(map(str, want))} buffer of "
                             f"layout.total={layout.total} elements; got {t.dtype} {tuple(t.shape)} "
                             f"strides {t.stride()}")
        if t.data_ptr() % 16:
            raise ValueError(f"{name} must be 16-byte aligned (the kernel's vector accesses)")
        if t.device != params.device:
            raise ValueError(f"{name} is on {t.device}, params on {params.device}")
    chunks = layout.chunks(CHUNK)
    if chunks.shape[0] == 0:
        return params
    scal = _scalars(lr, betas[0], betas[1], eps, step, inv_scale)
    _kernel[(chunks.shape[0],)](**_kernel_args(params, grads, exp_avg, exp_avg_sq, param_bf16, chunks, layout.wd,
                                               scal, cfg), num_warps=num_warps, num_stages=num_stages)
    return params


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """The point's tensors in flat buffers: params ~ N(0, 0.02^2), grads ~ N(0, 1e-3^2) (times the
    point's loss_scale, default 1; inv_scale = 1 / loss_scale) in the grad dtype, exp_avg ~ N(0, 1e-3^2),
    exp_avg_sq ~ (N(0, 1e-3^2))^2 (never zero). P, M, V are the rows of one [3, total] fp32 `state`
    (what launch returns); the padding between tensors holds random values too (never touched)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    gdt = _torch_dtype(point.get("dtype", "bf16"))
    numels, decayed = tensor_list(point)
    layout = FlatLayout(numels, decayed, HPARAMS["weight_decay"], device)
    T = layout.total
    state = torch.empty((3, T), dtype=torch.float32, device=device)
    state[0].normal_(0.0, 0.02, generator=gen)
    state[1].normal_(0.0, 1e-3, generator=gen)
    state[2].normal_(0.0, 1e-3, generator=gen)
    state[2].square_()
    loss_scale = float(point.get("loss_scale", 1.0))
    grads = (torch.randn(T, generator=gen, device=device) * (1e-3 * loss_scale)).to(gdt)
    p16 = torch.empty(T, dtype=torch.bfloat16, device=device) if point.get("write_bf16", False) else None
    if torch.device(device).type == "cuda":
        for c in PREBUILT_CHUNKS:
            layout.chunks(c)
    return {"state": state, "grads": grads, "param_bf16": p16, "layout": layout, "inv_scale": 1.0 / loss_scale,
            **{k: HPARAMS[k] for k in ("lr", "beta1", "beta2", "eps", "step")}}


def launch(inputs, cfg):
    """One fused AdamW step on the inputs (in place); returns the [3, total] state (params, exp_avg, exp_avg_sq)."""
    state = inputs["state"]
    fused_adamw(state[0], inputs["grads"], state[1], state[2], inputs["layout"], lr=inputs["lr"],
                betas=(inputs["beta1"], inputs["beta2"]), eps=inputs["eps"], step=inputs["step"],
                inv_scale=inputs["inv_scale"], param_bf16=inputs["param_bf16"], CHUNK=cfg["CHUNK"],
                BLOCK=cfg["BLOCK"], LOOP_STAGES=cfg.get("LOOP_STAGES", 1), num_warps=cfg["num_warps"],
                num_stages=cfg["num_stages"])
    return state


def _reference_state(inputs, dtype):
    """The updated [3, total] state in `dtype` (the padding copied through), by torch.optim.AdamW's formulas."""
    import torch
    lay = inputs["layout"]
    state = inputs["state"].to(dtype)
    out = state.clone()
    p, m, v = state[0], state[1], state[2]
    g = inputs["grads"].to(dtype) * inputs["inv_scale"]
    b1, b2, lr, eps, t = inputs["beta1"], inputs["beta2"], inputs["lr"], inputs["eps"], inputs["step"]
    wd = torch.zeros(lay.total, dtype=dtype, device=p.device)
    used = torch.zeros(lay.total, dtype=torch.bool, device=p.device)
    for w, off, n in zip(lay.wd.tolist(), lay.offsets, lay.numels):
        wd[off:off + n] = w
        used[off:off + n] = True
    m_new = b1 * m + (1 - b1) * g
    v_new = b2 * v + (1 - b2) * g * g
    denom = v_new.sqrt() / math.sqrt(1 - b2 ** t) + eps
    p_new = p * (1 - lr * wd) - (lr / (1 - b1 ** t)) * m_new / denom
    for row, new in ((0, p_new), (1, m_new), (2, v_new)):
        out[row] = torch.where(used, new, state[row])
    return out


def reference(inputs):
    """torch.optim.AdamW's update (decoupled weight decay, bias corrections) in fp64 on the flat
    buffers; the [3, total] state in fp32 (the padding unchanged). Reads the inputs, never writes them."""
    import torch
    return _reference_state(inputs, torch.float64).float()


def torch_baseline(inputs):
    """torch's multi-tensor fused AdamW kernel (torch._fused_adamw_, what AdamW(fused=True) runs) on
    views of cloned flat buffers, one call per weight-decay group; grads upcast to fp32 (the fused
    op wants them in the params' dtype) and unscaled first. Returns the new [3, total] state."""
    import torch
    lay = inputs["layout"]
    state = inputs["state"].clone()
    g = inputs["grads"].float() * inputs["inv_scale"]
    wd_list = lay.wd.tolist()
    for wd in sorted(set(wd_list)):
        pick = [(o, n) for o, n, w in zip(lay.offsets, lay.numels, wd_list) if w == wd and n]
        ps, gs, ms, vs = ([buf[o:o + n] for o, n in pick] for buf in (state[0], g, state[1], state[2]))
        steps = [torch.tensor(float(inputs["step"]), device=state.device) for _ in pick]
        torch._fused_adamw_(ps, gs, ms, vs, [], steps, lr=inputs["lr"], beta1=inputs["beta1"],
                            beta2=inputs["beta2"], weight_decay=wd, eps=inputs["eps"], amsgrad=False, maximize=False)
    return state


def bytes_moved(point) -> int:
    """Per real element (padding not counted): P, M, V read and written in fp32, G read in its dtype,
    the bf16 copy written when write_bf16. The chunk table (24 B a chunk: < 0.1 % at CHUNK >= 4096)
    and the weight-decay table are left out."""
    numels, _ = tensor_list(point)
    per = 24 + _grad_bytes(point.get("dtype", "bf16")) + (2 if point.get("write_bf16", False) else 0)
    return sum(numels) * per


def flops(point) -> int:
    """15 fp32 ops an element: the unscale 1, m 3, v 4, the denominator 3 (sqrt, scale, + eps), the
    division 1, the step 1, the decay 1, the subtraction 1."""
    return 15 * sum(tensor_list(point)[0])


def grid(cfg, point) -> int:
    """One CTA per chunk: ceil(numel / CHUNK) for each tensor."""
    return sum(-(-n // cfg["CHUNK"]) for n in tensor_list(point)[0])


def loop_iterations(cfg, point) -> int:
    """BLOCK steps of a full chunk (the typical CTA); see cta_iterations for the tensors' last chunks."""
    return cfg["CHUNK"] // cfg["BLOCK"]


def cta_iterations(cfg, point) -> list[int]:
    """Each chunk's BLOCK steps in launch order: ceil(length / BLOCK), the masked tail block included."""
    b = cfg["BLOCK"]
    return [-(-n // b) for n in _chunk_lengths(tensor_list(point)[0], cfg["CHUNK"])]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    numels, _ = tensor_list(point)
    _, total = flat_offsets(numels)
    state = torch.empty((3, total), dtype=torch.float32, device="meta")
    grads = torch.empty((total,), dtype=_torch_dtype(point.get("dtype", "bf16")), device="meta")
    p16 = torch.empty((total,), dtype=torch.bfloat16, device="meta") if point.get("write_bf16", False) else None
    chunks = torch.empty((grid(cfg, point), 3), dtype=torch.int64, device="meta")
    wd = torch.empty((len(numels),), dtype=torch.float32, device="meta")
    h = HPARAMS
    scal = _scalars(h["lr"], h["beta1"], h["beta2"], h["eps"], h["step"], 1.0)
    return _kernel_args(state[0], grads, state[1], state[2], p16, chunks, wd, scal, cfg)
