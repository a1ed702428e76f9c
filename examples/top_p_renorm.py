"""Top-p (nucleus) renormalization of sampling probabilities without a sort (the
"top_p_renorm_probs" of LLM samplers, FlashInfer-style: a search on the probability value by
repeated passes over the row), a bare @triton.jit kernel + its launcher.

For one row r of probabilities p = probs[r, :] (V entries, >= 0, summing to ~1) and its
top_p[r] in (0, 1]:

    mass(t)  = sum_{j: p_j >= t} p_j                       (non-increasing in t)
    t*       = the largest t with mass(t) >= top_p[r] * sum_j p_j      (always an element of p)
    out[r,j] = p_j / mass(t*)  if p_j >= t*  else 0        (ties at t* all kept)

i.e. the smallest set of most-probable tokens whose mass reaches top_p, renormalized to sum 1
(the target is taken relative to the row's own sum, so a row summing to 1 - 1e-7 is handled).

Layouts: probs [B, V] fp32, unit stride along V, any row stride; top_p [B] fp32; out [B, V]
fp32 (unit stride along V, any row stride); rounds [B] int32 (the search passes each row took,
written for the launcher's cost hooks and the tests).

One CTA per row (grid (B,)), walking the row in BLOCK_V chunks, several times:
  pass 0   : the row's sum and max (one sum and one max reduction per chunk, per lane);
  search   : an interval [lo, hi] of candidate values, both element values of the row (lo = 0 at
             first, hi = the max), with mass(lo) >= target known. Each round is one walk of
             the row evaluating PIVOTS pivots evenly spaced inside (lo, hi): per pivot x the
             mass of {p >= x}, the smallest element >= x and the largest element < x (a sum, a
             min and a max reduction per chunk per pivot: [PIVOTS, BLOCK_V] tiles). Then lo
             moves up to the smallest kept element of the largest pivot whose mass still
             reaches the target, hi down to the largest dropped element of the smallest pivot
             whose mass does not: both snap onto elements, so the interval shrinks by >=
             PIVOTS + 1 a round and the search ends exactly when lo == hi (no element strictly
             inside: lo is t*). Early exits: lo == hi (exact), hi - lo <= tol * hi (the
             tolerance: keep {p >= lo}, a superset of the nucleus whose extra elements are
             within tol of t*; 0 = exact), or max_rounds passes (lo is still a valid threshold:
             mass(lo) >= target). The round count is data-dependent: peaked rows with a few
             tokens in the nucleus finish in a few rounds, diffuse rows need ~log_(PIVOTS+1) of
             (max / the gap between neighbouring values at t*): at the points a median 14-22 bisection
             rounds (up to 27), 10-14 with two pivots, 7-10 with four.
  final    : out = p / mass(lo) where p >= lo, else 0 (a second stream: the only write).
So a row is read 2 + rounds times; from L2 while the resident rows (132 SMs x CTAs a SM x 4V
bytes) fit in its 50 MB, else again from DRAM.

Every walk is a tl.range(num_stages=LOOP_STAGES) loop: 1 = plain loads, >= 2 = the next
LOOP_STAGES - 1 chunks copied ahead into shared memory with cp.async (a loop without a dot is
pipelined only on an explicit stage count).

Tunables: BLOCK_V (power of two >= 16, the chunk), PIVOTS (1, 2 or 4: 1 = bisection; more
pivots = fewer passes over the row but PIVOTS x the compares and reductions a pass),
LOOP_STAGES (>= 1), num_warps, num_stages (the launch's: no dot, the loops carry their own
stage count, so it changes nothing in the cubin).
Problem parameters (a workload point): B (rows), V (vocabulary), top_p_min / top_p_max (each
row's top_p uniform in that range; equal for one value), scale_min / scale_max (each row's
logits are N(0, 1) x a scale uniform in that range, then softmax: a larger scale is a lower
temperature, a more peaked row), tol (optional, default 0: the search's relative tolerance).
"""

from __future__ import annotations

import triton
import triton.language as tl

MAX_ROUNDS = 64          # a cap the exact search never reaches on fp32 rows of these sizes


@triton.jit
def _kernel(P, TOP_P, OUT, ROUNDS, V, stride_p, stride_o, tol, max_rounds,
            BLOCK_V: tl.constexpr, PIVOTS: tl.constexpr, LOOP_STAGES: tl.constexpr):
    row = tl.program_id(0)
    p_row = P + row.to(tl.int64) * stride_p
    o_row = OUT + row.to(tl.int64) * stride_o
    offs = tl.arange(0, BLOCK_V)

    # pass 0: the row's sum and max, accumulated per lane, reduced once
    acc_sum = tl.zeros([BLOCK_V], tl.float32)
    acc_max = tl.zeros([BLOCK_V], tl.float32)
    for c0 in tl.range(0, V, BLOCK_V, num_stages=LOOP_STAGES):
        cols = c0 + offs
        x = tl.load(p_row + cols, mask=cols < V, other=0.0)
        acc_sum += x
        acc_max = tl.maximum(acc_max, x)
    total = tl.sum(acc_sum, axis=0)
    target = tl.load(TOP_P + row) * total

    lo = total * 0.0                     # mass(lo) = total >= target
    hi = tl.max(acc_max, axis=0)         # the largest candidate
    mass_lo = total
    rounds = row * 0
    frac = (tl.arange(0, PIVOTS) + 1).to(tl.float32) / (PIVOTS + 1)
    while (lo < hi) & (hi - lo > tol * hi) & (rounds < max_rounds):
        piv = lo + (hi - lo) * frac
        piv = tl.where(piv > lo, piv, hi)       # adjacent floats: test hi itself
        mass = tl.zeros([PIVOTS], tl.float32)
        min_kept = tl.full([PIVOTS], float("inf"), tl.float32)
        max_drop = tl.full([PIVOTS], -1.0, tl.float32)
        for c0 in tl.range(0, V, BLOCK_V, num_stages=LOOP_STAGES):
            cols = c0 + offs
            x = tl.load(p_row + cols, mask=cols < V, other=-1.0)    # pad: below every pivot
            keep = x[None, :] >= piv[:, None]                        # [PIVOTS, BLOCK_V]
            mass += tl.sum(tl.where(keep, x[None, :], 0.0), axis=1)
            min_kept = tl.minimum(min_kept, tl.min(tl.where(keep, x[None, :], float("inf")), axis=1))
            max_drop = tl.maximum(max_drop, tl.max(tl.where(keep, -1.0, x[None, :]), axis=1))
        ok = mass >= target                      # true for the lower pivots, false above
        lo_new = tl.max(tl.where(ok, min_kept, lo), axis=0)
        mass_lo = tl.min(tl.where(ok, mass, mass_lo), axis=0)
        hi = tl.min(tl.where(ok, hi, max_drop), axis=0)
        lo = lo_new
        rounds += 1
    tl.store(ROUNDS + row, rounds)

    # final pass: renormalize the kept set
    inv = 1.0 / mass_lo
    for c0 in tl.range(0, V, BLOCK_V, num_stages=LOOP_STAGES):
        cols = c0 + offs
        m = cols < V
        x = tl.load(p_row + cols, mask=m, other=0.0)
        tl.store(o_row + cols, tl.where(x >= lo, x * inv, 0.0), mask=m)


# ---------------------------------------------------------------- launcher
TUNABLES = ("BLOCK_V", "PIVOTS", "LOOP_STAGES", "num_warps", "num_stages")
BASELINE = {"BLOCK_V": 2048, "PIVOTS": 2, "LOOP_STAGES": 2, "num_warps": 8, "num_stages": 1}

# Sampling steps of real models. A row is read 2 + rounds times (rounds ~5-25, data-dependent):
# whether the re-reads come from L2 depends on how many rows are resident at once.
POINTS = [
    # Llama-3 decode batch of 64 (vocab 128256), top_p 0.9, peaked rows (logit scale 3-6):
    # 33 MB in, 33 MB out; only 64 CTAs on 132 SMs, every row resident and in L2: per-SM L2
    # streaming of ~10-25 passes of a 0.5 MB row, latency-bound
    {"B": 64, "V": 128256, "top_p_min": 0.9, "top_p_max": 0.9, "scale_min": 3.0, "scale_max": 6.0},
    # Qwen2.5 (vocab 151936), a batch of 256 with mixed top_p 0.5-0.95 and temperatures: 156 MB in,
    # 156 MB out; the resident rows outgrow L2 (re-reads partly DRAM), rows of ragged round counts
    {"B": 256, "V": 151936, "top_p_min": 0.5, "top_p_max": 0.95, "scale_min": 2.0, "scale_max": 6.0},
    # a 32000-vocabulary model (Llama-2 / Mistral), a batch of 1024, top_p 0.95, diffuser rows
    # (scale 2-4: more rounds): 131 MB in and out; 0.13 MB rows, ~8 waves of CTAs
    {"B": 1024, "V": 32000, "top_p_min": 0.95, "top_p_max": 0.95, "scale_min": 2.0, "scale_max": 4.0},
]


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_V"]
    if v < 16 or v & (v - 1):
        raise ValueError(f"BLOCK_V={v} must be a power of two >= 16")
    if cfg["PIVOTS"] not in (1, 2, 4):
        raise ValueError(f"PIVOTS={cfg['PIVOTS']} must be 1, 2 or 4 (pivots a pass)")
    if cfg.get("LOOP_STAGES", 1) < 1:
        raise ValueError(f"LOOP_STAGES={cfg['LOOP_STAGES']} must be >= 1")


def _kernel_args(probs, top_p, out, rounds, tol, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    return dict(P=probs, TOP_P=top_p, OUT=out, ROUNDS=rounds, V=probs.shape[1], stride_p=probs.stride(0),
                stride_o=out.stride(0), tol=float(tol), max_rounds=MAX_ROUNDS, BLOCK_V=cfg["BLOCK_V"],
                PIVOTS=cfg["PIVOTS"], LOOP_STAGES=cfg["LOOP_STAGES"])


def top_p_renorm(probs, top_p, *, tol: float = 0.0, out=None, rounds=None, BLOCK_V: int = 2048, PIVOTS: int = 2,
                 LOOP_STAGES: int = 2, num_warps: int = 8, num_stages: int = 1):
    """probs [B, V] fp32 (unit stride along V), top_p: a float or [B] fp32 -> out [B, V] fp32, the
    nucleus of each row renormalized (into `out` if given: [B, V] fp32, unit column stride);
    `rounds` ([B] int32) receives each row's search passes when given."""
    import torch
    if probs.dim() != 2 or probs.dtype != torch.float32:
        raise ValueError(f"probs must be a 2-D fp32 tensor; got {probs.dtype} {tuple(probs.shape)}")
    B, V = probs.shape
    if probs.stride(1) != 1:
        probs = probs.contiguous()
    if not isinstance(top_p, torch.Tensor):
        top_p = torch.full((B,), float(top_p), dtype=torch.float32, device=probs.device)
    top_p = top_p.reshape(-1).to(torch.float32).contiguous()
    if top_p.numel() != B:
        raise ValueError(f"top_p must be a float or {B} values; got {top_p.numel()}")
    if not 0.0 <= tol < 1.0:
        raise ValueError(f"tol={tol} must be in [0, 1)")
    if out is None:
        out = torch.empty((B, V), dtype=torch.float32, device=probs.device)
    elif tuple(out.shape) != (B, V) or out.dtype != torch.float32 or out.stride(1) != 1:
        raise ValueError(f"out must be fp32 [{B}, {V}] with unit column stride; got {out.dtype} "
                         f"{tuple(out.shape)} strides {out.stride()}")
    if rounds is None:
        rounds = torch.empty((B,), dtype=torch.int32, device=probs.device)
    cfg = {"BLOCK_V": BLOCK_V, "PIVOTS": PIVOTS, "LOOP_STAGES": LOOP_STAGES}
    _check_cfg(cfg)
    if B == 0 or V == 0:
        return out
    _kernel[(B,)](**_kernel_args(probs, top_p, out, rounds, tol, cfg), num_warps=num_warps, num_stages=num_stages)
    return out


def _top_ps(point, gen):
    import torch
    lo, hi = point["top_p_min"], point["top_p_max"]
    if not 0.0 < lo <= hi <= 1.0:
        raise ValueError(f"top_p range [{lo}, {hi}] must lie in (0, 1]")
    return lo + (hi - lo) * torch.rand((point["B"],), generator=gen)


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Softmax of N(0, 1) logits x a per-row scale (a per-row temperature), per-row top_p; drawn on
    the CPU from the seed (the same rows on any device), then moved."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    B, V = point["B"], point["V"]
    scale = point["scale_min"] + (point["scale_max"] - point["scale_min"]) * torch.rand((B, 1), generator=gen)
    logits = torch.randn((B, V), generator=gen) * scale
    probs = torch.softmax(logits, dim=1)
    top_p = _top_ps(point, gen).to(torch.float32)
    return {"probs": probs.to(device), "top_p": top_p.to(device), "tol": float(point.get("tol", 0.0))}


def launch(inputs, cfg):
    return top_p_renorm(inputs["probs"], inputs["top_p"], tol=inputs["tol"], BLOCK_V=cfg["BLOCK_V"],
                        PIVOTS=cfg["PIVOTS"], LOOP_STAGES=cfg["LOOP_STAGES"], num_warps=cfg["num_warps"],
                        num_stages=cfg["num_stages"])


def reference(inputs):
    """By sorting, in fp64: the descending row's prefix sums, t* = the first value whose prefix
    reaches top_p x the row sum, every p >= t* kept (ties included) over their fp64 sum. (Exact
    semantics; with tol > 0 the kernel may keep a few more elements within tol of t*.)"""
    import torch
    p = inputs["probs"].double()
    desc, _ = p.sort(dim=1, descending=True)
    csum = desc.cumsum(dim=1)
    target = inputs["top_p"].double().reshape(-1, 1) * p.sum(dim=1, keepdim=True)
    k = (csum < target).sum(dim=1, keepdim=True).clamp(max=p.shape[1] - 1)
    t = desc.gather(1, k)
    kept = torch.where(p >= t, p, torch.zeros_like(p))
    return (kept / kept.sum(dim=1, keepdim=True)).float()


def torch_baseline(inputs):
    """The sort-based top-p of eager samplers (fp32): sort ascending, cumsum, drop the prefix whose
    mass is <= 1 - top_p, renormalize."""
    import torch
    p = inputs["probs"]
    asc, idx = p.sort(dim=1)
    csum = asc.cumsum(dim=1)
    drop = csum <= (1 - inputs["top_p"]).reshape(-1, 1) * csum[:, -1:]
    drop[:, -1] = False
    kept = asc.masked_fill(drop, 0.0)
    kept = kept / kept.sum(dim=1, keepdim=True)
    return torch.empty_like(p).scatter_(1, idx, kept)


def search_rounds(probs, top_p, pivots: int, tol: float = 0.0, max_rounds: int = MAX_ROUNDS):
    """The kernel's search replayed on the sorted rows (pivots in fp32 as the kernel forms them,
    masses in fp64): the rounds each row takes, a [B] int64 tensor. The kernel's fp32 masses may
    settle a pivot on the other side of the target when they tie it within rounding: a round off."""
    import torch
    asc, _ = probs.float().cpu().sort(dim=1)
    B, V = asc.shape
    ad = asc.double()
    suffix = torch.cat([ad.flip(1).cumsum(1).flip(1), torch.zeros((B, 1), dtype=torch.float64)], dim=1)
    target = top_p.double().cpu().reshape(-1) * suffix[:, 0]
    lo = torch.zeros(B, dtype=torch.float32)
    hi = asc[:, -1].clone()
    mass_lo = suffix[:, 0].clone()
    frac = (torch.arange(pivots, dtype=torch.float32) + 1) / (pivots + 1)
    rounds = torch.zeros(B, dtype=torch.int64)
    inf = torch.full((B, 1), float("inf"))
    padded = torch.cat([torch.full((B, 1), -1.0), asc, inf], dim=1)    # index i + 1 is asc[i]
    for _ in range(max_rounds):
        active = (lo < hi) & (hi - lo > tol * hi)
        if not bool(active.any()):
            break
        piv = lo[:, None] + (hi - lo)[:, None] * frac[None, :]
        piv = torch.where(piv > lo[:, None], piv, hi[:, None].expand_as(piv))
        idx = torch.searchsorted(asc, piv.contiguous(), side="left")      # first element >= pivot
        mass = suffix.gather(1, idx)
        min_kept = padded.gather(1, idx + 1)
        max_drop = padded.gather(1, idx)
        ok = mass >= target[:, None]
        lo_new = torch.where(ok, min_kept, lo[:, None]).amax(dim=1)
        mass_new = torch.where(ok, mass, mass_lo[:, None]).amin(dim=1)
        hi_new = torch.where(ok, hi[:, None], max_drop).amin(dim=1)
        lo = torch.where(active, lo_new, lo)
        mass_lo = torch.where(active, mass_new, mass_lo)
        hi = torch.where(active, hi_new, hi)
        rounds += active.long()
    return rounds


_ROUNDS_CACHE: dict = {}


def _point_rounds(point, pivots: int) -> list[int]:
    """search_rounds of the point's seed-0 inputs (cached per point, all three PIVOTS at once)."""
    key = tuple(sorted(point.items()))
    if (key, pivots) not in _ROUNDS_CACHE:
        inp = make_inputs(point, seed=0, device="cpu")
        for piv in (1, 2, 4):        # one draw of the point's rows for every PIVOTS
            _ROUNDS_CACHE[(key, piv)] = search_rounds(inp["probs"], inp["top_p"], piv, inp["tol"]).tolist()
    return _ROUNDS_CACHE[(key, pivots)]


def bytes_moved(point) -> int:
    """probs read once, out written once, top_p read and rounds written (the search's re-reads of
    the row are not counted: avoidable in principle, by a sort or a radix select in shared memory)."""
    B, V = point["B"], point["V"]
    return 2 * 4 * B * V + 8 * B


def flops(point) -> int:
    """Per element: pass 0 two ops, the final pass a compare and a multiply, each search round ~6
    ops a pivot (compare, two selects, sum, min, max): at ~12 rounds of two pivots, ~150."""
    return 150 * point["B"] * point["V"]


def grid(cfg, point) -> int:
    """One CTA per row."""
    return point["B"]


def cta_iterations(cfg, point) -> list[int]:
    """Per row (program id order): (2 + its search rounds, as search_rounds replays them on the
    seed-0 rows) walks of ceil(V / BLOCK_V) chunks."""
    chunks = triton.cdiv(point["V"], cfg["BLOCK_V"])
    return [(2 + r) * chunks for r in _point_rounds(point, cfg["PIVOTS"])]


def loop_iterations(cfg, point) -> int:
    """A typical row's chunks: (2 + its median search rounds) walks of ceil(V / BLOCK_V)."""
    its = sorted(cta_iterations(cfg, point))
    return its[len(its) // 2]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_cfg(cfg)
    B, V = point["B"], point["V"]
    probs = torch.empty((B, V), dtype=torch.float32, device="meta")
    top_p = torch.empty((B,), dtype=torch.float32, device="meta")
    out = torch.empty((B, V), dtype=torch.float32, device="meta")
    rounds = torch.empty((B,), dtype=torch.int32, device="meta")
    return _kernel_args(probs, top_p, out, rounds, point.get("tol", 0.0), cfg)
