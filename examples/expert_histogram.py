"""The counting stage of MoE "align block size" (vLLM / SGLang moe_align_block_size): how many
token-slots the router sent to each expert, a bare @triton.jit kernel + its launcher.

    counts[e] = #{(t, j) : topk_ids[t, j] == e}            for e in [0, E)           (int32)

topk_ids: [T, topk] int32 / int64 (the router's top-k expert ids per token; any strides: it
is flattened to its N = T * topk slots, copied first if not contiguous). An id outside [0, E)
is not counted: -1 is what vLLM's expert_map gives an expert another rank owns under expert
parallelism (and what a padded token may carry). counts: [E] int32, zeroed by the launcher
and then accumulated into by the kernel (the next stage, a prefix sum of the counts padded
to the GEMM's block size, turns them into each expert's segment of the sorted token list).

One CTA per STEPS x BLOCK consecutive slots (N = T * topk flattened): it walks them in STEPS
steps of BLOCK slots, per step one masked, contiguous load of BLOCK ids (16 B vectors, read
once), a range mask (0 <= id < E; the slot tail too), the ids narrowed to int32 and a local
histogram of them (tl.histogram over E_P = next power of two >= E bins, the out-of-range and
tail slots masked off: in the cubin a warp's ballot over each bit of the id, the bins' counts
by popcount, the warps' partial histograms added in shared memory), summed into an [E_P]
int32 register histogram over the steps. Then the CTA adds it to the global counters with
one relaxed tl.atomic_add per expert whose local count is non-zero (at most E atomics a CTA,
fired and forgotten: the result is unused; integer adds, so the counts are exact whatever
order the atomics land in). STEPS trades the atomics (grid x E on E addresses, contended in
L2) against the CTAs in flight.

make_inputs draws realistic routing: per token topk distinct experts, sampled without
replacement with probabilities from a skewed expert popularity (Gumbel-top-k over per-expert
logits of std 0.6: the hottest expert gets about 2-3x the mean load), so the counters the
atomics hit are not uniform.

Tunables: BLOCK (slots per step, a power of two), STEPS (steps per CTA), num_warps,
num_stages (no dot: the loads are not pipelined; with triton 3.6 for sm_90, num_stages 1-3
give the same cubin).
Problem parameters (a workload point): T (tokens), topk, E (experts), dtype (of topk_ids:
"int32" or "int64").
"""

from __future__ import annotations

import triton
import triton.language as tl

POP_STD = 0.6       # std of the per-expert routing logits make_inputs draws (load imbalance)


@triton.jit
def _kernel(IDS, COUNTS, N, E, E_P: tl.constexpr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * (BLOCK * STEPS)
    offs = tl.arange(0, BLOCK)
    hist = tl.zeros([E_P], tl.int32)
    for s in range(STEPS):
        idx = start + s * BLOCK + offs
        in_n = idx < N
        ids = tl.load(IDS + idx, mask=in_n, other=-1)
        ok = in_n & (ids >= 0) & (ids < E)
        hist += tl.histogram(ids.to(tl.int32), E_P, mask=ok)
    es = tl.arange(0, E_P)
    tl.atomic_add(COUNTS + es, hist, mask=(es < E) & (hist > 0), sem="relaxed")


# ---------------------------------------------------------------- launcher
DTYPES = ("int32", "int64")
TUNABLES = ("BLOCK", "STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK": 2048, "STEPS": 4, "num_warps": 4, "num_stages": 1}

# Large prefill batches (a whole chunked-prefill step's slots at once, or a batch of them): the
# ids are read once, 128-256 MiB (2.7-5.4x the H200's 50 MB L2); the counters are E x 4 B.
POINTS = [
    {"T": 4194304, "topk": 8, "E": 256, "dtype": "int32"},     # DeepSeek-V3 / R1: 256 routed experts, top-8; 128 MiB
    {"T": 16777216, "topk": 2, "E": 8, "dtype": "int64"},      # Mixtral-8x7B: 8 experts, top-2, torch.topk's int64 ids; 256 MiB
    {"T": 8388608, "topk": 8, "E": 128, "dtype": "int32"},     # Qwen3-235B-A22B / Qwen3-30B-A3B: 128 experts, top-8; 256 MiB
]


def _id_dtype(name: str):
    import torch
    try:
        return {"int32": torch.int32, "int64": torch.int64}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _id_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "int32" else 8


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK"]
    if v < 1 or v & (v - 1):
        raise ValueError(f"BLOCK={v} must be a power of two")
    if cfg["STEPS"] < 1:
        raise ValueError(f"STEPS={cfg['STEPS']} must be >= 1")


def _kernel_args(ids, counts, num_experts, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it).
    ids: the flattened, contiguous [N] topk ids; counts: [E] int32."""
    return dict(IDS=ids, COUNTS=counts, N=ids.numel(), E=num_experts, E_P=triton.next_power_of_2(num_experts),
                BLOCK=cfg["BLOCK"], STEPS=cfg["STEPS"])


def expert_histogram(topk_ids, num_experts, *, counts=None, BLOCK=2048, STEPS=4, num_warps=4, num_stages=1):
    """Per-expert token-slot counts [num_experts] int32 of topk_ids [T, topk] (int32 / int64);
    ids outside [0, num_experts) (e.g. -1 under expert parallelism) are not counted. `counts`
    (a contiguous [num_experts] int32 tensor on topk_ids' device), if given, is zeroed and
    filled in place; otherwise a new one is returned."""
    import torch
    if topk_ids.dim() != 2:
        raise ValueError(f"expected topk_ids [T, topk]; got {tuple(topk_ids.shape)}")
    if topk_ids.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"topk_ids must be int32 or int64; got {topk_ids.dtype}")
    if num_experts < 1:
        raise ValueError(f"num_experts={num_experts} must be >= 1")
    cfg = {"BLOCK": BLOCK, "STEPS": STEPS}
    _check_cfg(cfg)
    if counts is None:
        counts = torch.zeros((num_experts,), dtype=torch.int32, device=topk_ids.device)
    elif tuple(counts.shape) != (num_experts,) or counts.dtype != torch.int32 or not counts.is_contiguous() \
            or counts.device != topk_ids.device:
        raise ValueError(f"counts must be a contiguous [{num_experts}] int32 tensor on {topk_ids.device}; got "
                         f"{list(counts.shape)} {counts.dtype} on {counts.device}")
    else:
        counts.zero_()          # the kernel accumulates
    ids = topk_ids.reshape(-1)
    if not ids.is_contiguous():
        ids = ids.contiguous()
    N = ids.numel()
    if N > 0:
        _kernel[(triton.cdiv(N, BLOCK * STEPS),)](**_kernel_args(ids, counts, num_experts, cfg),
                                                  num_warps=num_warps, num_stages=num_stages)
    return counts


def make_topk_ids(T: int, topk: int, E: int, gen, device: str = "cuda", chunk: int = 1 << 18):
    """[T, topk] int64 router choices: per token topk distinct experts drawn without
    replacement with probabilities softmax(logits), logits ~ N(0, POP_STD^2) per expert (the
    same for every token: a skewed expert popularity), by the Gumbel-top-k trick, `chunk`
    tokens at a time (a [chunk, E] fp32 buffer)."""
    import torch
    if not 1 <= topk <= E:
        raise ValueError(f"topk={topk} must be in [1, E={E}]")
    logits = torch.randn((E,), generator=gen, device=device) * POP_STD
    out = torch.empty((T, topk), dtype=torch.int64, device=device)
    for t0 in range(0, T, chunk):
        n = min(chunk, T - t0)
        u = torch.rand((n, E), generator=gen, device=device).clamp_(min=1e-20)
        g = logits - torch.log(-torch.log(u))
        out[t0:t0 + n] = torch.topk(g, topk, dim=1).indices
    return out


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """topk_ids from make_topk_ids in the point's dtype, and E."""
    import torch
    gen = torch.Generator(device=device).manual_seed(seed)
    ids = make_topk_ids(point["T"], point["topk"], point["E"], gen, device).to(_id_dtype(point.get("dtype", "int32")))
    return {"topk_ids": ids, "num_experts": point["E"]}


def launch(inputs, cfg):
    """A fresh zeroed [E] int32 counts, filled by the kernel; returned."""
    return expert_histogram(inputs["topk_ids"], inputs["num_experts"], BLOCK=cfg["BLOCK"], STEPS=cfg["STEPS"],
                            num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reference(inputs):
    """torch.bincount of the ids in [0, E) (minlength E), as int32 (exact: compare for equality)."""
    import torch
    ids, E = inputs["topk_ids"].reshape(-1), inputs["num_experts"]
    ids = ids[(ids >= 0) & (ids < E)]
    return torch.bincount(ids, minlength=E).to(torch.int32)


def torch_baseline(inputs):
    """Eager torch, as a native moe_align_block_size counts: the valid ids' bincount (int64),
    cast to int32. (Where every id is valid, the mask is a no-op pass.)"""
    import torch
    ids, E = inputs["topk_ids"].reshape(-1), inputs["num_experts"]
    valid = (ids >= 0) & (ids < E)
    return torch.bincount(ids[valid], minlength=E).to(torch.int32)


def bytes_moved(point) -> int:
    """The ids read once (T x topk x 4 or 8 B) and the E int32 counters written (the atomics'
    read-modify-writes happen in L2; their grid x E payloads are not DRAM traffic)."""
    return point["T"] * point["topk"] * _id_bytes(point.get("dtype", "int32")) + 4 * point["E"]


def flops(point) -> int:
    """One count increment per slot (integer; the histogram's)."""
    return point["T"] * point["topk"]


def grid(cfg, point) -> int:
    """One CTA per BLOCK x STEPS slots."""
    return triton.cdiv(point["T"] * point["topk"], cfg["BLOCK"] * cfg["STEPS"])


def loop_iterations(cfg, point) -> int:
    """STEPS steps of BLOCK slots per CTA."""
    return cfg["STEPS"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory):
    the flattened [N] ids in the point's dtype and the [E] int32 counts."""
    import torch
    ids = torch.empty((point["T"] * point["topk"],), dtype=_id_dtype(point.get("dtype", "int32")), device="meta")
    counts = torch.empty((point["E"],), dtype=torch.int32, device="meta")
    return _kernel_args(ids, counts, point["E"], cfg)
