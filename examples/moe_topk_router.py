"""MoE top-k routing, the gating step between the router GEMM and the expert dispatch (vLLM's
fused_topk / topk_softmax, SGLang's biased_grouped_topk without the group limit), a bare
@triton.jit kernel + its launcher.

    softmax scoring (Mixtral, Qwen-MoE, OLMoE, DeepSeek-V2):
        ids[t, :] = the TOPK largest logits[t, :]                 (softmax is monotone)
        w[t, j] = exp(l[t, ids[t, j]] - max_e l[t, e]) / sum_e exp(l[t, e] - max_e l[t, e])
        renormalize: w[t, j] = exp(l_j - l_0) / sum_{i < TOPK} exp(l_i - l_0) instead
    sigmoid scoring (DeepSeek-V3, Kimi-K2; Llama-4 without a bias):
        s[t, e] = sigmoid(l[t, e]);  ids[t, :] = the TOPK largest s[t, e] + bias[e]
        w[t, j] = s[t, ids[t, j]]   (the unbiased score)           renormalize: / sum_j w[t, j]
    then w *= scale (the routed scaling factor, 2.5 for DeepSeek-V3)

logits: [T, E] fp32 / bf16 / fp16 (E contiguous, rows may be strided, e.g. a column slice of a
fused projection); bias: [E] fp32 (the e_score_correction_bias, sigmoid scoring only, may be
absent). Outputs topk_weights [T, TOPK] fp32 and topk_ids [T, TOPK] int32, contiguous; each
row in descending order of the selection key, ties to the lowest expert index (so the ids are
deterministic even with the exact ties bf16 / fp16 logits have). All math in fp32. The group-
limited selection of DeepSeek-V3 (n_group 8, topk_group 4) is not done here: this is the
n_group = 1 case.

One CTA per BLOCK_T tokens: it loads the [BLOCK_T, BLOCK_E] tile of logits once (BLOCK_E =
next power of two >= E; experts past E and tokens past T are masked to -inf), forms the
selection key (the logit itself for softmax and for sigmoid without a bias: both are
monotone; sigmoid(l) + bias otherwise), then picks the TOPK experts in TOPK rounds, a loop
unrolled at compile time (TOPK is a constexpr): each round a max over the expert axis, the
winner's index, and the winner masked off the key tile. Two ways to do a round (PACKED):
  0: a fp32 max, then a min over the indices where key == max (the lowest index of a tie),
     then the winner's lane set to -inf: two reductions a round;
  1: the key made an order-preserving int32 (sign-magnitude flip) and packed with
     BLOCK_E - 1 - index into one int64 before the loop; a round is one int64 max (key first,
     then the lowest index), decoded, and the winner's lane set to INT64_MIN: one 64-bit
     reduction a round, twice the registers per lane.
The rounds fill a [BLOCK_T, BLOCK_K] tile of the winners' ids and keys (BLOCK_K = next power
of two >= TOPK); the weights come from that small tile after them: softmax exp(v - v_0) over
the selected ones' sum when renormalizing, else over the row's sum of exp (a tile-wide exp and
one more max, taken before the rounds so the logits need not outlive them); sigmoid of the
winners' logits (with a bias the key is not the logit: the TOPK logits are re-read, cache hits,
rather than keeping the [BLOCK_T, BLOCK_E] score tile alive through the rounds). Then one
[BLOCK_T, BLOCK_K] store of each output.

Tunables: BLOCK_T (tokens per CTA, a power of two), PACKED (0 / 1: the round's method),
num_warps, num_stages (no runtime loop: nothing is pipelined, num_stages changes nothing in
the cubin).
Problem parameters (a workload point): T (tokens), E (experts), topk, dtype (the logits'),
scoring ("softmax" / "sigmoid"), renorm (0 / 1), bias (0 / 1, sigmoid only), scale.
"""

from __future__ import annotations

import triton
import triton.language as tl

SCORINGS = ("softmax", "sigmoid")
_I64_MIN = tl.constexpr(-(2**63))     # a removed lane of the packed keys


@triton.jit
def _kernel(LOGITS, BIAS, W_OUT, ID_OUT, T, stride_lt, scale,
            E: tl.constexpr, TOPK: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_K: tl.constexpr,
            BLOCK_T: tl.constexpr, SIGMOID: tl.constexpr, HAS_BIAS: tl.constexpr, RENORM: tl.constexpr,
            PACKED: tl.constexpr):
    pid = tl.program_id(0)
    ts = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    t_ok = ts < T
    es = tl.arange(0, BLOCK_E)
    if BLOCK_E == E:
        ok = t_ok[:, None]
    else:
        ok = t_ok[:, None] & (es < E)[None, :]
    row = LOGITS + ts.to(tl.int64)[:, None] * stride_lt
    x = tl.load(row + es[None, :], mask=ok, other=float("-inf")).to(tl.float32)

    if not SIGMOID and not RENORM:                           # the whole row's softmax denominator
        m = tl.max(x, axis=1)
        den = tl.sum(tl.exp(x - m[:, None]), axis=1)
    # the selection key, monotone in the score
    if HAS_BIAS:
        b = tl.load(BIAS + es, mask=es < E, other=0.0)
        key = tl.sigmoid(x) + b[None, :]
        if BLOCK_E != E:
            key = tl.where((es < E)[None, :], key, float("-inf"))
    else:
        key = x
    if PACKED:
        key = tl.where(key == 0.0, 0.0, key)                 # -0.0 -> +0.0: one order for equal keys
        kb = key.to(tl.int32, bitcast=True)
        kb = tl.where(kb < 0, kb ^ 0x7FFFFFFF, kb)           # int32 order == float order
        pk = (kb.to(tl.int64) << 32) | (BLOCK_E - 1 - es).to(tl.int64)[None, :]

    kcol = tl.arange(0, BLOCK_K)[None, :]
    vals = tl.full([BLOCK_T, BLOCK_K], float("-inf"), tl.float32)   # the winners' keys
    ids = tl.zeros([BLOCK_T, BLOCK_K], tl.int32)
    for j in tl.static_range(TOPK):
        if PACKED:
            p = tl.max(pk, axis=1)
            idx = (BLOCK_E - 1) - p.to(tl.int32)             # the low word
            pk = tl.where(pk == p[:, None], _I64_MIN, pk)
            if not HAS_BIAS:
                hi = (p >> 32).to(tl.int32)
                v = tl.where(hi < 0, hi ^ 0x7FFFFFFF, hi).to(tl.float32, bitcast=True)
                vals = tl.where(kcol == j, v[:, None], vals)
        else:
            v = tl.max(key, axis=1)
            idx = tl.min(tl.where(key == v[:, None], es[None, :], BLOCK_E), axis=1)
            key = tl.where(es[None, :] == idx[:, None], float("-inf"), key)
            if not HAS_BIAS:
                vals = tl.where(kcol == j, v[:, None], vals)
        ids = tl.where(kcol == j, idx[:, None], ids)

    if BLOCK_K == TOPK:
        o_ok = t_ok[:, None]
    else:
        o_ok = t_ok[:, None] & (kcol < TOPK)
    if SIGMOID:
        if HAS_BIAS:                                         # the winners' logits, re-read (L1 hits)
            vals = tl.load(row + ids, mask=o_ok, other=float("-inf")).to(tl.float32)
        w = tl.sigmoid(vals)                                 # 0 in the padding columns
        if RENORM:
            w = w / tl.sum(w, axis=1)[:, None]
    else:
        if RENORM:
            m = tl.max(vals, axis=1)                         # = the row's max logit (round 0)
            w = tl.exp(vals - m[:, None])                    # 0 in the padding columns
            w = w / tl.sum(w, axis=1)[:, None]
        else:
            w = tl.exp(vals - m[:, None]) / den[:, None]
    w = w * scale

    out = ts.to(tl.int64)[:, None] * TOPK + kcol
    tl.store(W_OUT + out, w, mask=o_ok)
    tl.store(ID_OUT + out, ids, mask=o_ok)


# ---------------------------------------------------------------- launcher
DTYPES = ("fp32", "bf16", "fp16")
TUNABLES = ("BLOCK_T", "PACKED", "num_warps", "num_stages")
BASELINE = {"BLOCK_T": 16, "PACKED": 0, "num_warps": 4, "num_stages": 1}

# A row of E logits in, 8 B x topk out per token: 32-1088 B a token, so the token counts are
# large (a big prefill / a many-request batch) to reach 0.05 ms: 268-319 MB moved (5-6x the
# H200's 50 MB L2), 0.056-0.066 ms at 4.8 TB/s.
POINTS = [
    # Mixtral-8x7B / 8x22B (E 8, top-2, softmax then renormalized), fp16 logits, 8M tokens:
    # logits 128 MiB + outputs 128 MiB
    {"T": 8388608, "E": 8, "topk": 2, "scoring": "softmax", "renorm": 1, "bias": 0, "scale": 1.0,
     "dtype": "fp16"},
    # Qwen1.5-MoE-A2.7B (Qwen2-MoE: E 60 routed, top-4, softmax, norm_topk_prob False), bf16
    # logits, 2M tokens: logits 240 MiB + outputs 64 MiB
    {"T": 2097152, "E": 60, "topk": 4, "scoring": "softmax", "renorm": 0, "bias": 0, "scale": 1.0,
     "dtype": "bf16"},
    # DeepSeek-V3 / R1 (E 256, top-8, sigmoid + e_score_correction_bias, renormalized, x 2.5;
    # its gate GEMM is fp32), 256K tokens: logits 256 MiB + outputs 16 MiB
    {"T": 262144, "E": 256, "topk": 8, "scoring": "sigmoid", "renorm": 1, "bias": 1, "scale": 2.5,
     "dtype": "fp32"},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _elem_bytes(name: str) -> int:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}")
    return 4 if name == "fp32" else 2


def _check_cfg(cfg) -> None:
    v = cfg["BLOCK_T"]
    if v < 1 or v & (v - 1):
        raise ValueError(f"BLOCK_T={v} must be a power of two")
    if cfg["PACKED"] not in (0, 1):
        raise ValueError(f"PACKED={cfg['PACKED']!r} must be 0 or 1")


def _check_point(point) -> None:
    if point.get("scoring", "softmax") not in SCORINGS:
        raise ValueError(f"scoring {point.get('scoring')!r} is not one of {', '.join(SCORINGS)}")
    if not 1 <= point["topk"] <= point["E"]:
        raise ValueError(f"topk={point['topk']} must be in 1..E={point['E']}")
    if point.get("bias", 0) and point.get("scoring", "softmax") != "sigmoid":
        raise ValueError("a correction bias goes with sigmoid scoring only")


def _kernel_args(logits, bias, weights, ids, sigmoid, renorm, scale, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    T, E = logits.shape
    topk = weights.shape[1]
    return dict(LOGITS=logits, BIAS=bias, W_OUT=weights, ID_OUT=ids, T=T, stride_lt=logits.stride(0),
                scale=float(scale), E=E, TOPK=topk, BLOCK_E=triton.next_power_of_2(E),
                BLOCK_K=triton.next_power_of_2(topk), BLOCK_T=cfg["BLOCK_T"], SIGMOID=bool(sigmoid),
                HAS_BIAS=bias is not None, RENORM=bool(renorm), PACKED=int(cfg["PACKED"]))


def moe_topk_router(logits, topk, *, scoring="softmax", renormalize=True, correction_bias=None,
                    routed_scaling_factor=1.0, BLOCK_T=16, PACKED=0, num_warps=4, num_stages=1):
    """(topk_weights [T, topk] fp32, topk_ids [T, topk] int32) for router logits [T, E] (fp32 /
    bf16 / fp16, E contiguous). scoring "softmax": the top-k softmax probabilities (renormalized
    to sum 1 if `renormalize`); "sigmoid": the top-k sigmoid scores, chosen by score +
    correction_bias ([E] fp32) if given (renormalized if `renormalize`). Both x
    routed_scaling_factor. Each row in descending key order, ties to the lowest expert id."""
    import torch
    if logits.dim() != 2:
        raise ValueError(f"expected logits [T, E]; got {tuple(logits.shape)}")
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"logits dtype {logits.dtype} is not fp32, bf16 or fp16")
    T, E = logits.shape
    if not 1 <= topk <= E:
        raise ValueError(f"topk={topk} must be in 1..E={E}")
    if scoring not in SCORINGS:
        raise ValueError(f"scoring {scoring!r} is not one of {', '.join(SCORINGS)}")
    if correction_bias is not None:
        if scoring != "sigmoid":
            raise ValueError("correction_bias goes with sigmoid scoring only")
        if correction_bias.dtype != torch.float32 or tuple(correction_bias.shape) != (E,):
            raise ValueError(f"correction_bias must be fp32 [{E}]; got {correction_bias.dtype} "
                             f"{tuple(correction_bias.shape)}")
        correction_bias = correction_bias.contiguous()
    cfg = {"BLOCK_T": BLOCK_T, "PACKED": PACKED}
    _check_cfg(cfg)
    weights = torch.empty((T, topk), dtype=torch.float32, device=logits.device)
    ids = torch.empty((T, topk), dtype=torch.int32, device=logits.device)
    if T == 0:
        return weights, ids
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    args = _kernel_args(logits, correction_bias, weights, ids, scoring == "sigmoid", renormalize,
                        routed_scaling_factor, cfg)
    _kernel[(triton.cdiv(T, BLOCK_T),)](**args, num_warps=num_warps, num_stages=num_stages)
    return weights, ids


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """Router logits of a trained router's kind: per token N(0, 1.5^2) plus a per-expert offset
    N(0, 0.5^2) (some experts more popular), rounded to the point's dtype (bf16 / fp16 rows
    then hold exact ties); sigmoid points with bias: bias ~ N(0, 0.05^2) fp32 (DeepSeek-V3's
    load-balancing correction is of that order next to scores in (0, 1))."""
    import torch
    _check_point(point)
    gen = torch.Generator(device=device).manual_seed(seed)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, E = point["T"], point["E"]
    logits = 1.5 * torch.randn((T, E), generator=gen, device=device)
    logits += 0.5 * torch.randn((1, E), generator=gen, device=device)
    bias = None
    if point.get("bias", 0):
        bias = 0.05 * torch.randn((E,), generator=gen, device=device)
    return {"logits": logits.to(dt), "topk": point["topk"], "scoring": point.get("scoring", "softmax"),
            "renorm": bool(point.get("renorm", 1)), "bias": bias, "scale": float(point.get("scale", 1.0))}


def _run(inputs, cfg):
    return moe_topk_router(inputs["logits"], inputs["topk"], scoring=inputs["scoring"],
                           renormalize=inputs["renorm"], correction_bias=inputs["bias"],
                           routed_scaling_factor=inputs["scale"], BLOCK_T=cfg["BLOCK_T"], PACKED=cfg["PACKED"],
                           num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def launch(inputs, cfg):
    """topk_weights [T, topk] fp32; topk_ids, the other output, is checked by the tests
    (tests/test_examples_round10_c.py) against reference_ids."""
    return _run(inputs, cfg)[0]


def _keys(inputs):
    """The fp32 selection key [T, E] (as the kernel forms it) and the fp64 scores."""
    import torch
    x = inputs["logits"].float()
    if inputs["scoring"] == "sigmoid":
        score = torch.sigmoid(x.double())
        key = x if inputs["bias"] is None else torch.sigmoid(x) + inputs["bias"].float()[None, :]
    else:
        score = torch.softmax(x.double(), dim=1)
        key = x
    return key, score


def reference_ids(inputs):
    """topk_ids [T, topk] int64: a stable descending sort of the key (ties to the lowest id)."""
    key, _ = _keys(inputs)
    return key.sort(dim=1, descending=True, stable=True)[1][:, :inputs["topk"]]


def reference(inputs):
    """topk_weights [T, topk] fp32 from fp64 scores at reference_ids (renormalized, scaled)."""
    _, score = _keys(inputs)
    w = score.gather(1, reference_ids(inputs))
    if inputs["renorm"]:
        w = w / w.sum(dim=1, keepdim=True)
    return (w * inputs["scale"]).float()


def torch_baseline(inputs):
    """Eager torch, as vLLM's fused_topk native path / DeepSeek-V3's MoEGate (n_group 1):
    softmax (or sigmoid) in fp32, torch.topk (of score + bias for sigmoid with a bias), the
    gather of the unbiased scores, the renormalization and the scale. Returns the weights like
    launch."""
    import torch
    x, k = inputs["logits"], inputs["topk"]
    if inputs["scoring"] == "sigmoid":
        s = torch.sigmoid(x.float())
        if inputs["bias"] is None:
            w, _ = torch.topk(s, k, dim=1)
        else:
            _, ids = torch.topk(s + inputs["bias"][None, :], k, dim=1)
            w = s.gather(1, ids)
    else:
        w, _ = torch.topk(torch.softmax(x, dim=1, dtype=torch.float32), k, dim=1)
    if inputs["renorm"]:
        w = w / w.sum(dim=1, keepdim=True)
    return w * inputs["scale"]


def bytes_moved(point) -> int:
    """The logits read once, the bias (if any) read once, topk_weights (fp32) and topk_ids
    (int32) written once. The CTAs' re-reads of the bias and, with a bias, of the TOPK winners'
    logits (cache hits) are not counted."""
    _check_point(point)
    T, E, k = point["T"], point["E"], point["topk"]
    return T * E * _elem_bytes(point.get("dtype", "bf16")) + (4 * E if point.get("bias", 0) else 0) + T * k * (4 + 4)


def flops(point) -> int:
    """Per logit: a compare per selection round (TOPK), plus the scoring's elementwise work:
    softmax without renormalization the subtract, exp and add of the row's denominator (3);
    sigmoid with a bias the sigmoid (negate, exp, add, divide) and the bias add (5); else 0
    (the key is the logit). The per-token tails (TOPK exps or sigmoids, the renormalization)
    are not counted."""
    _check_point(point)
    T, E, k = point["T"], point["E"], point["topk"]
    if point.get("scoring", "softmax") == "sigmoid":
        per = 5 if point.get("bias", 0) else 0
    else:
        per = 0 if point.get("renorm", 1) else 3
    return T * E * (k + per)


def grid(cfg, point) -> int:
    """One CTA per BLOCK_T tokens."""
    return triton.cdiv(point["T"], cfg["BLOCK_T"])


def loop_iterations(cfg, point) -> int:
    """The TOPK selection rounds (unrolled at compile time)."""
    return point["topk"]


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory)."""
    import torch
    _check_point(point)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    T, E, k = point["T"], point["E"], point["topk"]
    logits = torch.empty((T, E), dtype=dt, device="meta")
    bias = torch.empty((E,), dtype=torch.float32, device="meta") if point.get("bias", 0) else None
    weights = torch.empty((T, k), dtype=torch.float32, device="meta")
    ids = torch.empty((T, k), dtype=torch.int32, device="meta")
    return _kernel_args(logits, bias, weights, ids, point.get("scoring", "softmax") == "sigmoid",
                        point.get("renorm", 1), point.get("scale", 1.0), cfg)
