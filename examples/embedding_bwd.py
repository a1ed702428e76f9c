"""Backward of nn.Embedding into an existing fp32 weight gradient (gradient accumulation: the
next micro-batch adds to what the previous ones left), a bare @triton.jit kernel + its launcher.

    for every token t with ids[t] != padding_idx:
        grad_weight[ids[t], :] += grad_out[t, :]                    (fp32)

grad_out: [T, D] fp16 / bf16 / fp32 (T tokens, D the hidden size), D contiguous (rows may be
strided); ids: [T] int32 / int64 (trusted: 0 <= id < V); grad_weight: [V, D] fp32, D
contiguous, given by the caller and NOT zeroed: the kernel adds to it (in place), as autograd's
accumulation into .grad does. padding_idx (None, or an id; negative counts from V as in
nn.Embedding): tokens with that id add nothing, so its row keeps what it held.

Tokens repeat (a hot token may be several percent of a batch, and two of them may sit in one
CTA's tile), so the adds are fp32 atomics (tl.atomic_add, relaxed: only the sum matters, no
ordering; its result is unused, so it compiles to fire-and-forget reductions done in L2). The
order of the adds to one element is whatever the hardware makes it: the result is the exact
sum up to fp32 reassociation, not bit-reproducible from run to run.

One CTA per BLOCK_T consecutive tokens: it loads their BLOCK_T ids once (widened to int64 row
offsets: V D passes 2^31 elements at Llama-3-405B's 128256 x 16384), turns a padding token (and the
token tail) into a masked-off row, then walks D in BLOCK_D chunks: per chunk one masked
[BLOCK_T, BLOCK_D] load of grad_out (contiguous along D; streamed once, so loaded evict-first to
leave L2 to the grad_weight rows the atomics hit), converted to fp32 (exact), and one masked
[BLOCK_T, BLOCK_D] atomic add into the BLOCK_T grad_weight rows. A padding token's row is
neither loaded nor added. Masks give the T and D tails.

The tile's loads and its atomics want different layouts (16 B a thread each: 8 elements of a
16-bit grad_out, 4 fp32 for a vector atomic), so for fp16 / bf16 the compiler passes each tile
through shared memory between them (a layout conversion, num_warps KiB at a time, a CTA
barrier either side; none when a thread holds at most 4 elements of the tile). An fp32
grad_out loads straight into the atomics' layout.

make_inputs draws the ids from a Zipf(1.0) law over the vocabulary (ranks scattered over the
ids by a random permutation): the top token is 8-9 % of a batch and only 35-42 % of the tokens
at the POINTS are distinct rows, so the atomics collide (on the hot rows, across CTAs).

Tunables: BLOCK_T, BLOCK_D (powers of two), num_warps, num_stages (no dot: the loads are not
pipelined, so num_stages may change nothing in the cubin).
Problem parameters (a workload point): T (tokens), D (hidden), V (vocabulary), dtype (of
grad_out), ids ("int32" or "int64", default "int64"), padding_idx (default None) with pad (how
many of the T tokens are padding, default 0) and seq (the padded batch's sequence length,
default 2048; the pad tokens right-pad its sequences).
"""

from __future__ import annotations

import functools

import triton
import triton.language as tl

ZIPF_S = 1.0          # token-frequency exponent: p(rank r) ~ 1 / r^s, natural text's s ~ 1


@triton.jit
def _kernel(IDS, GRAD, GW, T, D, stride_gt, stride_wv, padding_idx,
            BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    ids = tl.load(IDS + ts, mask=t_ok, other=0)
    row_ok = t_ok & (ids != padding_idx)
    dst = GW + ids.to(tl.int64)[:, None] * stride_wv
    src = GRAD + ts.to(tl.int64)[:, None] * stride_gt
    ds = tl.arange(0, BLOCK_D)
    for d0 in range(0, D, BLOCK_D):
        d = d0 + ds
        ok = row_ok[:, None] & (d < D)[None, :]
        g = tl.load(src + d[None, :], mask=ok, other=0.0, eviction_policy="evict_first")
        tl.atomic_add(dst + d[None, :], g.to(tl.float32), mask=ok, sem="relaxed")


# ---------------------------------------------------------------- launcher
DTYPES = ("fp16", "bf16", "fp32")
ID_DTYPES = ("int32", "int64")
TUNABLES = ("BLOCK_T", "BLOCK_D", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 2, "BLOCK_D": 1024, "num_warps": 4, "num_stages": 1}
PAD_SEQ = 2048        # make_inputs: the padded batch's sequence length when a point gives no "seq"

# grad_out read 136-256 MiB, and one fp32 add per (non-padding) token element sent to the
# grad_weight rows: 224-512 MiB (bytes_moved 407-768 MiB); the [V, D] fp32 gradients are
# 1-2 GiB, the rows the tokens touch 94-179 MiB of them (2-3.7x the H200's 50 MB L2). DRAM
# moves ~350-650 MB a launch (grad_out, the touched rows filled and written back): >= 70 us.
POINTS = [
    # Llama-3-8B (vocab 128256, hidden 4096), bf16 training, a 4 x 8192-token micro-batch
    {"T": 32768, "D": 4096, "V": 128256, "dtype": "bf16", "ids": "int64"},
    # Qwen2-7B (vocab 152064, hidden 3584) under autocast: the embedding runs in fp32 (fp32
    # weight, fp32 output), so its grad_out is fp32; int32 ids; 4 x 4096 tokens
    {"T": 16384, "D": 3584, "V": 152064, "dtype": "fp32", "ids": "int32"},
    # OPT-13B (vocab 50272, hidden 5120, nn.Embedding(padding_idx=1)), fp16, a right-padded
    # batch of 8 x 2048 tokens of which 2500 are padding
    {"T": 16384, "D": 5120, "V": 50272, "dtype": "fp16", "ids": "int64", "padding_idx": 1, "pad": 2500,
     "seq": 2048},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _id_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except KeyError:
        raise ValueError(f"ids {name!r} is not one of {', '.join(ID_DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _id_bytes(name: str) -> int:
    if name not in ID_DTYPES:
        raise ValueError(f"ids {name!r} is not one of {', '.join(ID_DTYPES)}")
    return 4 if name == "int32" else 8


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_T", "BLOCK_D"):
        v = cfg[name]
        if v < 1 or v & (v - 1):
            raise ValueError(f"{name}={v} must be a power of two")


def _pad_count(point) -> int:
    """The point's padding tokens (0 without a padding_idx)."""
    pad = point.get("pad", 0) if point.get("padding_idx") is not None else 0
    if not 0 <= pad <= point["T"]:
        raise ValueError(f"pad={pad} must be in [0, T={point['T']}]")
    return pad


def _kernel_args(ids, grad_out, grad_weight, padding_idx, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    padding_idx: a row id in [0, V), or -1 for none (no id equals it)."""
    return dict(IDS=ids, GRAD=grad_out, GW=grad_weight, T=ids.shape[0], D=grad_out.shape[1],
                stride_gt=grad_out.stride(0), stride_wv=grad_weight.stride(0), padding_idx=int(padding_idx),
                BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"])


def embedding_backward(grad_out, ids, grad_weight, padding_idx=None, *, BLOCK_T=2, BLOCK_D=1024, num_warps=4,
                       num_stages=1):
    """grad_weight[ids[t]] += grad_out[t] (fp32 atomics, in place) for every token t whose id is
    not padding_idx; returns grad_weight. ids: any shape (*) int32 / int64; grad_out: (*, D)
    fp16 / bf16 / fp32; grad_weight: [V, D] fp32 with D contiguous (it is accumulated into,
    never zeroed). padding_idx: None, or an id in [-V, V) (negative: counted from V). Ids are
    not range-checked (as in nn.Embedding's CUDA backward)."""
    import torch
    if grad_weight.dim() != 2 or grad_weight.dtype != torch.float32:
        raise ValueError(f"grad_weight must be an fp32 [V, D] tensor; got {grad_weight.dtype} "
                         f"{tuple(grad_weight.shape)}")
    V, D = grad_weight.shape
    if grad_weight.stride(1) != 1:
        raise ValueError("grad_weight's D axis must be contiguous (it is accumulated in place)")
    if ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"ids must be int32 or int64; got {ids.dtype}")
    if tuple(grad_out.shape) != tuple(ids.shape) + (D,):
        raise ValueError(f"expected grad_out of shape ids.shape + (D,) = {tuple(ids.shape) + (D,)}; got "
                         f"{tuple(grad_out.shape)}")
    if grad_out.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"grad_out must be fp16/bf16/fp32; got {grad_out.dtype}")
    if padding_idx is None:
        pad = -1
    elif -V <= padding_idx < V:
        pad = padding_idx + V if padding_idx < 0 else padding_idx
    else:
        raise ValueError(f"padding_idx={padding_idx} must be within [-{V}, {V})")
    cfg = {"BLOCK_T": BLOCK_T, "BLOCK_D": BLOCK_D}
    _check_cfg(cfg)
    ids = ids.reshape(-1).contiguous()
    grad_out = grad_out.reshape(-1, D)
    if grad_out.stride(1) != 1:
        grad_out = grad_out.contiguous()
    if ids.numel() > 0 and D > 0:
        _kernel[(triton.cdiv(ids.shape[0], BLOCK_T),)](**_kernel_args(ids, grad_out, grad_weight, pad, cfg),
                                                        num_warps=num_warps, num_stages=num_stages)
    return grad_weight


def prior_grad(V: int, D: int, device: str = "cuda"):
    """The gradient a previous micro-batch left in grad_weight ([V, D] fp32): a fixed pattern,
    ((31 v + 7 d) mod 17 - 8) / 64, non-zero at 16 of 17 elements and different along a row and
    across rows; a function of the shape alone, so reference rebuilds it after launch has added
    to the buffer."""
    import torch
    v = torch.arange(V, device=device, dtype=torch.int32)[:, None] % 17     # reduced first: small int32s
    d = torch.arange(D, device=device, dtype=torch.int32)[None, :] % 17
    return ((v * 31 + d * 7) % 17 - 8).to(torch.float32) / 64


def zipf_ids(T: int, V: int, gen, device: str = "cuda"):
    """[T] int64 ids from a Zipf(ZIPF_S) law over the ranks (by the inverse CDF), the ranks
    scattered over the ids by a random permutation."""
    import torch
    p = 1.0 / torch.arange(1, V + 1, device=device, dtype=torch.float64) ** ZIPF_S
    cdf = torch.cumsum(p, 0)
    u = torch.rand((T,), generator=gen, device=device, dtype=torch.float64) * cdf[-1]
    rank = torch.searchsorted(cdf, u).clamp_(max=V - 1)
    perm = torch.randperm(V, generator=gen, device=device)
    return perm[rank]


def right_padding(T: int, pad: int, seq: int, gen, device: str = "cuda"):
    """[T] bool, True at the padding tokens of a right-padded batch: T tokens in sequences of
    `seq` (the last may be shorter); `pad` padding tokens split over them at random (a sequence's
    share capped at its length), each sequence's share at its end."""
    import torch
    n = triton.cdiv(T, seq)
    cap = [min(seq, T - i * seq) for i in range(n)]
    share = [0] * n
    left = pad
    while left > 0:                            # random shares, each capped at its sequence
        free = [i for i in range(n) if share[i] < cap[i]]
        pick = torch.randint(0, len(free), (left,), generator=gen, device=device).bincount(minlength=len(free))
        for j, i in enumerate(free):
            take = min(int(pick[j]), cap[i] - share[i])
            share[i] += take
            left -= take
    is_pad = torch.zeros((T,), dtype=torch.bool, device=device)
    for i in range(n):
        if share[i]:
            end = i * seq + cap[i]
            is_pad[end - share[i]:end] = True
    return is_pad


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """grad_out ~ N(0, 1) in the point's dtype; ids from zipf_ids (the real tokens never draw the
    padding id: it is moved to the next id), the padding tokens from right_padding set to
    padding_idx; grad_weight = prior_grad (a fresh [V, D] fp32 buffer, accumulated into)."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    dt, it = _torch_dtype(point.get("dtype", "bf16")), _id_dtype(point.get("ids", "int64"))
    T, D, V = point["T"], point["D"], point["V"]
    pidx = point.get("padding_idx")
    if pidx is not None and not 0 <= pidx < V:
        raise ValueError(f"padding_idx={pidx} must be in [0, V={V})")
    grad_out = torch.randn((T, D), generator=gen, device=device).to(dt)
    ids = _draw_ids(point, gen, device)
    return {"grad_out": grad_out, "ids": ids.to(it), "grad_weight": prior_grad(V, D, device),
            "padding_idx": pidx}


def launch(inputs, cfg):
    """Adds into inputs["grad_weight"] in place (what the backward does; each repeat adds the
    batch's gradient once more) and returns that [V, D] fp32 buffer."""
    return embedding_backward(inputs["grad_out"], inputs["ids"], inputs["grad_weight"], inputs["padding_idx"],
                              BLOCK_T=cfg["BLOCK_T"], BLOCK_D=cfg["BLOCK_D"], num_warps=cfg["num_warps"],
                              num_stages=cfg["num_stages"])


def reference(inputs):
    """[V, D] fp32: prior_grad plus, per row, the fp64 sum of its non-padding tokens' grad_out
    rows in a fixed order (the tokens sorted by id, stable; a running fp64 sum down the sorted
    rows, differenced at the row boundaries), rounded to fp32 once. Built from the shapes and
    grad_out, ids, not from grad_weight's contents (launch adds to them): it is the buffer after
    exactly one launch on fresh inputs."""
    import torch
    g, ids, gw = inputs["grad_out"], inputs["ids"].long(), inputs["grad_weight"]
    V, D = gw.shape
    ref = prior_grad(V, D, g.device).double()
    if inputs["padding_idx"] is not None:
        keep = ids != inputs["padding_idx"]
        ids, g = ids[keep], g[keep]
    if ids.numel():
        order = torch.sort(ids, stable=True).indices
        sid = ids[order]
        run = torch.cumsum(g[order].double(), 0)
        last = torch.ones_like(sid, dtype=torch.bool)
        last[:-1] = sid[1:] != sid[:-1]                   # the last token of each id's run
        ends = last.nonzero().flatten()
        sums = run[ends]
        sums[1:] -= run[ends[:-1]]
        ref[sid[ends]] += sums
    return ref.float()


def torch_baseline(inputs):
    """Eager torch, in place like the kernel: grad_out.float() (a copy; with a padding_idx the
    padding tokens' rows zeroed in it by masked_fill_), then grad_weight.index_add_(0, ids, that)
    (CUDA atomics). Returns grad_weight. (Not aten's embedding_dense_backward, which builds a
    fresh [V, D] gradient in grad_out's dtype that autograd then adds into .grad.)"""
    g, ids, gw = inputs["grad_out"], inputs["ids"], inputs["grad_weight"]
    src = g.float()
    if inputs["padding_idx"] is not None:
        src.masked_fill_((ids == inputs["padding_idx"])[:, None], 0.0)
    return gw.index_add_(0, ids, src)


def bytes_moved(point) -> int:
    """ids read once; the T - pad non-padding tokens' grad_out rows read once (padding tokens'
    rows are masked off, never read); and one fp32 add per non-padding token element sent to
    grad_weight (4 B each, the atomic's payload: the read-modify-write happens in L2). Not counted
    apart: DRAM's fill and write-back of the grad_weight rows the tokens touch (8 D bytes per
    distinct row; with the Zipf ids 35-42 % of the tokens are distinct rows at the POINTS, so
    that is 2.8-3.4 B per token element, a bit below the 4 counted), nor any row evicted and
    refetched between collisions. The hook sees only the point, not the drawn ids."""
    T, D = point["T"], point["D"]
    n = T - _pad_count(point)
    return T * _id_bytes(point.get("ids", "int64")) + n * D * (_elem_bytes(point.get("dtype", "bf16")) + 4)


def flops(point) -> int:
    """One add per non-padding token element (the atomic's)."""
    return (point["T"] - _pad_count(point)) * point["D"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """D chunks per CTA."""
    return triton.cdiv(point["D"], cfg["BLOCK_D"])


@functools.lru_cache(maxsize=4)
def _ids_data(key: str):
    """The point's token ids with data, on the CPU (rank reads the atomics' rows from them): drawn by
    make_inputs' law (zipf_ids, the padding tokens set) from a generator of their own, in the ids dtype."""
    import ast
    import torch
    point = dict(ast.literal_eval(key))
    return _draw_ids(point, torch.Generator().manual_seed(0), "cpu").to(_id_dtype(point.get("ids", "int64")))


def _draw_ids(point, gen, device):
    """The point's token ids from `gen` (int64): zipf_ids, a real token never drawing padding_idx (moved to
    the next id), then the padding tokens from right_padding set to it."""
    import torch
    T, V, pidx = point["T"], point["V"], point.get("padding_idx")
    ids = zipf_ids(T, V, gen, device)
    if pidx is not None:
        ids = torch.where(ids == pidx, (ids + 1) % V, ids)
        pad = _pad_count(point)
        if pad:
            ids[right_padding(T, pad, point.get("seq", PAD_SEQ), gen, device)] = pidx
    return ids


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`: the ids with data (_ids_data), the rest on the
    meta device (no memory).
    grad_out and grad_weight stand in as the [T - pad, D] rows that are read and added to
    (bytes_moved's count): the kernel sees them only through their pointers, dtypes and row
    strides (D, the real ones), and takes T from ids, so the stand-ins specialize and compile
    the same; V enters no argument."""
    import torch
    dt, it = _torch_dtype(point.get("dtype", "bf16")), _id_dtype(point.get("ids", "int64"))
    T, D = point["T"], point["D"]
    n = T - _pad_count(point)
    ids = _ids_data(repr(sorted(point.items())))
    grad_out = torch.empty((n, D), dtype=dt, device="meta")
    grad_weight = torch.empty((n, D), dtype=torch.float32, device="meta")
    pidx = point.get("padding_idx")
    return _kernel_args(ids, grad_out, grad_weight, -1 if pidx is None else pidx, cfg)
