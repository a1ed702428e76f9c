"""One fused LSTM time step -- the recurrent GEMM and the gate nonlinearities of cuDNN's LSTM
(CUDNN_LSTM, cudnnRNNForward's per-step kernel), PyTorch's fused LSTM cell (torch._thnn_fused_lstm_cell,
nn.LSTMCell on CUDA) and the persistent-RNN kernels of speech (RNN-T / LAS / DeepSpeech-style encoders),
time-series (DeepAR-style forecasters) and LSTM language models -- a bare @triton.jit kernel + its launcher:

    gates = h_prev @ W_hh^T + xg                         ([B, 4H]: i, f, g, o = gates[:, 0:H], ..., [:, 3H:4H])
    c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g)
    h = sigmoid(o) * tanh(c)

h_prev: [B, H] fp16 / bf16 (unit H stride, any row stride: a time step of an output sequence [T, B, H]);
W_hh: [4H, H] in h_prev's dtype, PyTorch's weight_hh_l0 as stored (gate blocks i, f, g, o of H rows each,
unit K stride, any row stride; nothing repacked); xg: [B, 4H] in h_prev's dtype, the precomputed input
projection x_t @ W_ih^T + b_ih + b_hh (cuDNN and PyTorch's LSTM run it for all T steps as one big GEMM
before the recurrence; unit stride, any row stride); c_prev: [B, H] fp32 (any row stride). Outputs: h [B, H]
in h_prev's dtype (the next step's GEMM operand and the layer's output) and c [B, H] fp32, fresh contiguous
tensors (or the caller's, written in place). fp32 accumulation, fp32 gate math, h rounded once.

Work split: a 2-D grid (cdiv(H, BLOCK_H), cdiv(B, BLOCK_B)), hidden tiles on axis 0 (fastest: the programs
running together share their h_prev rows in L2 and sweep W_hh, which the point's sizes leave L2-resident or,
at the decode point, read once). A program owns a BLOCK_B x BLOCK_H tile of (batch, hidden unit) and computes
the four gate pre-activations of those units: four fp32 [BLOCK_B, BLOCK_H] tl.dot accumulators, one per gate,
over K = H in BLOCK_K steps; a step loads one [BLOCK_B, BLOCK_K] tile of h_prev and the four [BLOCK_K,
BLOCK_H] tiles of W_hh^T at rows j, H + j, 2H + j, 3H + j of the tile's units (K-contiguous rows of the
stored weight: tl.dot's B operand read transposed), software-pipelined num_stages deep. Four accumulators
over PyTorch's own layout rather than one [BLOCK_B, 4 BLOCK_H] accumulator over an interleaved
(unit-major, gate-minor) weight: the same registers and dots, but the interleaved form needs the weight
repacked at load time and its epilogue has to split gates out of one tile with reshapes / layout
conversions, where here each gate is already its own tile in the accumulators' layout, ready for the
elementwise epilogue. Epilogue: the four [BLOCK_B, BLOCK_H] tiles of xg and the c_prev tile loaded once,
sigmoid / tanh in fp32 (tanh x = 2 sigmoid(2x) - 1; saturating at both ends, no NaN), c and h stored. Rows
past B and units past H read a wrapped (in-bounds) row / weight row and are never stored; H not a multiple
of BLOCK_K masks the last K step (EVEN_K, a constexpr the launcher derives). No atomics, each output once.

How this differs from the closest examples/ kernels: examples/gated_mlp.py shares one A tile between two
weight tiles (gate and up, two dots, two accumulators) and multiplies them in the epilogue; here four weight
tiles a step from the four gate blocks of one weight (4H rows apart by H), four accumulators (twice the
registers of gated_mlp at the same tile) and an epilogue that reads two more operands (xg, c_prev) and writes
two outputs (h, c) -- a recurrence's state update, not an activation. examples/swiglu.py is the epilogue
alone as a streaming kernel over a materialized [M, 2N]; here the [B, 4H] gates never reach memory.
examples/gemv.py streams a weight once with CUDA-core FMAs for one vector; the decode point here is that
weight-streaming regime (B 16, W_hh 512 MiB read once) but on the tensor cores with a BLOCK_B of at least 16
rows (the small batch padded by wrapped rows), and the same kernel serves the compute-bound batches.

Tunables: BLOCK_B (16 / 64 batch rows a program: 16 fits the decode batch, 64 re-reads W_hh from L2 a
quarter as often at the large batches), BLOCK_H (32 / 64 hidden units a program: x 4 gates = 128 / 256 weight
rows a step), BLOCK_K (32 / 64, the K step), num_warps (8 / 16), num_stages (2 / 3 / 4: the K loop's loads in
flight; (BLOCK_B + 4 BLOCK_H) x BLOCK_K x 2 bytes a stage, 160 KiB at most). Four [BLOCK_B, BLOCK_H] fp32
accumulators plus the epilogue's four xg tiles and c_prev set the registers: on 4 warps a 64 x 64 tile spills
(4 spills under triton 3.9) and so does 128 x 32 (14), so 4 warps are out of the sweep; BLOCK_B 128 is out too
(128 x 64 needs 255 registers on 8 warps and spills 2 on 16, capped at 128, under 3.9), and BLOCK_B 32 (32 x 32
tiles on 16 warps, capped at 128 registers, spill 14-24 under triton 3.6.0). On sm_90, triton 3.9, at the fp16
points (the 48 configs compiled in full): no spills, registers 50-158 (the most: 64 x 64 x 32 on 8 warps;
64 x 64 x 64 on 8 warps 138), shared memory 9-160 KiB (the pipeline's buffers: 160 KiB for 64 x 64 x 64 at 4
stages). Triton 3.6.0 (every config at every point): no spills, registers 50-165, the same shared memory. sm_120 (mma.sync, 99 KiB): 64 x 64 tiles
spill there (26 on 8 warps); smaller tiles fit.
Problem parameters (a workload point): B (batch rows: sequences, or several steps' worth of them), H (hidden
size; K = H), dtype ("fp16" / "bf16": h_prev, W_hh, xg and h).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x):
    return 2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0


@triton.jit
def _kernel(HP, W, XG, CP, HO, CO, B, H, stride_hb, stride_wr, stride_xb, stride_cpb, stride_hob, stride_cob,
            EVEN_K: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_h = tl.program_id(0)
    pid_b = tl.program_id(1)
    rb = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    rh = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rk = tl.arange(0, BLOCK_K)
    rb_c = (rb % B).to(tl.int64)                        # rows / units past B / H wrap (never stored)
    rh_c = (rh % H).to(tl.int64)
    a_ptr = HP + rb_c[:, None] * stride_hb + rk[None, :]                  # [BLOCK_B, BLOCK_K] of h_prev
    w_ptr = W + rh_c[None, :] * stride_wr + rk[:, None]                   # [BLOCK_K, BLOCK_H] of W_i^T
    gate = H * stride_wr                                                   # one gate block of rows (< 2**31)
    acc_i = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    acc_f = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    acc_g = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    acc_o = tl.zeros([BLOCK_B, BLOCK_H], dtype=tl.float32)
    for k in range(0, tl.cdiv(H, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptr)
            wi = tl.load(w_ptr)
            wf = tl.load(w_ptr + gate)
            wg = tl.load(w_ptr + 2 * gate)
            wo = tl.load(w_ptr + 3 * gate)
        else:
            k_ok = rk < H - k * BLOCK_K
            a = tl.load(a_ptr, mask=k_ok[None, :], other=0.0)
            wi = tl.load(w_ptr, mask=k_ok[:, None], other=0.0)
            wf = tl.load(w_ptr + gate, mask=k_ok[:, None], other=0.0)
            wg = tl.load(w_ptr + 2 * gate, mask=k_ok[:, None], other=0.0)
            wo = tl.load(w_ptr + 3 * gate, mask=k_ok[:, None], other=0.0)
        acc_i = tl.dot(a, wi, acc_i)
        acc_f = tl.dot(a, wf, acc_f)
        acc_g = tl.dot(a, wg, acc_g)
        acc_o = tl.dot(a, wo, acc_o)
        a_ptr += BLOCK_K
        w_ptr += BLOCK_K

    ok = (rb < B)[:, None] & (rh < H)[None, :]
    rb64 = rb.to(tl.int64)[:, None]
    x_ptr = XG + rb64 * stride_xb + rh[None, :]
    xi = tl.load(x_ptr, mask=ok, other=0.0).to(tl.float32)
    xf = tl.load(x_ptr + H, mask=ok, other=0.0).to(tl.float32)
    xc = tl.load(x_ptr + 2 * H, mask=ok, other=0.0).to(tl.float32)
    xo = tl.load(x_ptr + 3 * H, mask=ok, other=0.0).to(tl.float32)
    c_prev = tl.load(CP + rb64 * stride_cpb + rh[None, :], mask=ok, other=0.0)
    c = _sigmoid(acc_f + xf) * c_prev + _sigmoid(acc_i + xi) * _tanh(acc_g + xc)
    h = _sigmoid(acc_o + xo) * _tanh(c)
    tl.store(CO + rb64 * stride_cob + rh[None, :], c, mask=ok)
    tl.store(HO + rb64 * stride_hob + rh[None, :], h.to(HO.dtype.element_ty), mask=ok)


# ---------------------------------------------------------------- launcher
ROLE = "held-out-35"
DTYPES = ("fp16", "bf16")
TUNABLES = ("BLOCK_B", "BLOCK_H", "BLOCK_K", "num_warps", "num_stages")
BASELINE = {"BLOCK_B": 64, "BLOCK_H": 64, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
SWEEP_AXES = {"BLOCK_B": [16, 64], "BLOCK_H": [32, 64], "BLOCK_K": [32, 64], "num_warps": [8, 16],
              "num_stages": [2, 3, 4]}
MAX_ELEMS = 2**31 - 1

POINTS = [
    # a speech encoder's LSTM step (RNN-T / LAS / DeepSpeech-style, H 2048, fp16): a 256-utterance batch runs
    # ~15 us a step, so B 2048 stands for 8 steps' worth of it (the brief's larger-B stand-in) -- W_hh 32 MiB
    # (L2-resident), 117 MB moved, 68.7 GFLOP: ~0.1-0.15 ms, tensor-core bound
    {"B": 2048, "H": 2048, "dtype": "fp16"},
    # a large-batch time-series model (DeepAR-style forecaster, H 512, bf16) over a panel of 32768 series: W_hh
    # 2 MiB, xg 128 MiB and the fp32 cell state dominate -- 338 MB moved, 68.7 GFLOP (K only 512): ~0.1 ms
    {"B": 32768, "H": 512, "dtype": "bf16"},
    # inference decode of a large LSTM language model (Jozefowicz et al. 2016's 8192-cell LSTM, no projection),
    # 16 streams, fp16: W_hh 512 MiB streamed once, GEMV-like (16 rows a dot) -- 537 MB moved: ~0.12-0.2 ms
    {"B": 16, "H": 8192, "dtype": "fp16"},
]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_cfg(cfg) -> None:
    for name in ("BLOCK_B", "BLOCK_H", "BLOCK_K"):
        v = cfg[name]
        if not _is_int(v) or v < 16 or v > 256 or v & (v - 1):
            raise ValueError(f"{name}={v!r} must be a power of two from 16 to 256 (a tl.dot operand side)")
    w = cfg["num_warps"]
    if not _is_int(w) or w not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={w!r} must be a power of two from 1 to 16")
    ns = cfg.get("num_stages", 2)
    if not _is_int(ns) or ns < 1:
        raise ValueError(f"num_stages={ns!r} must be a positive int")


def _check_point(point) -> dict:
    """The point's fields, checked (default dtype fp16)."""
    P = {"dtype": "fp16", **point}
    for name in ("B", "H"):
        v = P[name]
        if not _is_int(v) or v < 1:
            raise ValueError(f"{name}={v!r} must be a positive int")
    if P["dtype"] not in DTYPES:
        raise ValueError(f"dtype {P['dtype']!r} is not one of {DTYPES}")
    B, H = P["B"], P["H"]
    if 4 * H * H > MAX_ELEMS or 4 * B * H > MAX_ELEMS:
        raise ValueError(f"B={B}, H={H}: W_hh [4H, H] and xg [B, 4H] must hold at most {MAX_ELEMS} elements")
    if triton.cdiv(B, 16) > 65535:
        raise ValueError(f"B={B} needs more than 65535 batch tiles of 16 rows (grid axis 1)")
    return P


def _torch_dtype(name: str):
    import torch
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


# ---------------------------------------------------------------- the kernel's launch
def _grid(B: int, H: int, cfg) -> tuple:
    return (triton.cdiv(H, cfg["BLOCK_H"]), triton.cdiv(B, cfg["BLOCK_B"]))


def _kernel_args(h_prev, w_hh, xg, c_prev, h_out, c_out, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it)."""
    B, H = h_prev.shape
    return dict(HP=h_prev, W=w_hh, XG=xg, CP=c_prev, HO=h_out, CO=c_out, B=B, H=H,
                stride_hb=h_prev.stride(0), stride_wr=w_hh.stride(0), stride_xb=xg.stride(0),
                stride_cpb=c_prev.stride(0), stride_hob=h_out.stride(0), stride_cob=c_out.stride(0),
                EVEN_K=int(H % cfg["BLOCK_K"] == 0), BLOCK_B=cfg["BLOCK_B"], BLOCK_H=cfg["BLOCK_H"],
                BLOCK_K=cfg["BLOCK_K"])


def _check_tensor(name, t, shape, dtype, device, unit_inner=True):
    import torch
    if (not isinstance(t, torch.Tensor) or t.dim() != 2 or tuple(t.shape) != tuple(shape) or t.dtype != dtype
            or t.device != device):
        raise ValueError(f"{name} must be a 2-d {dtype} tensor {list(shape)} on {device}; got "
                         f"{getattr(t, 'shape', type(t).__name__)} {getattr(t, 'dtype', '')} "
                         f"{getattr(t, 'device', '')}")
    if unit_inner and shape[1] > 1 and t.stride(1) != 1:
        raise ValueError(f"{name} must have a unit stride along its last axis; got strides {t.stride()}")
    if t.stride(0) < 0 or (shape[0] - 1) * t.stride(0) + shape[1] > MAX_ELEMS:
        raise ValueError(f"{name}'s row stride {t.stride(0)} must be non-negative and its span within "
                         f"{MAX_ELEMS} elements")


def lstm_cell(h_prev, c_prev, w_hh, xg, *, BLOCK_B: int = 64, BLOCK_H: int = 64, BLOCK_K: int = 64,
              num_warps: int = 8, num_stages: int = 3, h_out=None, c_out=None):
    """(h, c): one LSTM step (module doc). h_prev [B, H] fp16 / bf16; c_prev [B, H] fp32; w_hh [4H, H]
    (gate rows i, f, g, o) and xg [B, 4H] (x_t @ W_ih^T + biases) in h_prev's dtype; every tensor with a unit
    last-axis stride, any row stride, on one device. Returns h [B, H] in h_prev's dtype and c [B, H] fp32:
    h_out / c_out (written in place) or fresh contiguous tensors. The tunables: the module doc."""
    import torch
    cfg = {"BLOCK_B": BLOCK_B, "BLOCK_H": BLOCK_H, "BLOCK_K": BLOCK_K, "num_warps": num_warps,
           "num_stages": num_stages}
    _check_cfg(cfg)
    if (not isinstance(h_prev, torch.Tensor) or h_prev.dim() != 2
            or h_prev.dtype not in (torch.float16, torch.bfloat16)):
        raise ValueError(f"h_prev must be a 2-d fp16 / bf16 tensor [B, H]; got "
                         f"{getattr(h_prev, 'shape', type(h_prev).__name__)} {getattr(h_prev, 'dtype', '')}")
    B, H = h_prev.shape
    if B < 1 or H < 1:
        raise ValueError(f"h_prev must be [B >= 1, H >= 1]; got {tuple(h_prev.shape)}")
    if 4 * H * H > MAX_ELEMS or 4 * B * H > MAX_ELEMS:
        raise ValueError(f"B={B}, H={H}: W_hh [4H, H] and xg [B, 4H] must hold at most {MAX_ELEMS} elements")
    if triton.cdiv(B, BLOCK_B) > 65535:
        raise ValueError(f"B={B} needs {triton.cdiv(B, BLOCK_B)} batch tiles of BLOCK_B={BLOCK_B}; at most 65535")
    dev, dt = h_prev.device, h_prev.dtype
    _check_tensor("h_prev", h_prev, (B, H), dt, dev)
    _check_tensor("c_prev", c_prev, (B, H), torch.float32, dev)
    _check_tensor("w_hh", w_hh, (4 * H, H), dt, dev)
    _check_tensor("xg", xg, (B, 4 * H), dt, dev)
    if h_out is None:
        h_out = torch.empty((B, H), dtype=dt, device=dev)
    if c_out is None:
        c_out = torch.empty((B, H), dtype=torch.float32, device=dev)
    _check_tensor("h_out", h_out, (B, H), dt, dev)
    _check_tensor("c_out", c_out, (B, H), torch.float32, dev)
    _kernel[_grid(B, H, cfg)](**_kernel_args(h_prev, w_hh, xg, c_prev, h_out, c_out, cfg),
                              num_warps=num_warps, num_stages=num_stages)
    return h_out, c_out


# ---------------------------------------------------------------- the launcher contract
def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """h_prev = tanh-range activations (uniform in (-0.95, 0.95)), c_prev ~ N(0, 1) fp32, W_hh ~ U(-1, 1) / sqrt(H)
    (PyTorch's LSTM init, 1/sqrt(H) bound, times sqrt(3) for gates of O(1)), xg ~ N(0, 1) with the forget
    gate's block shifted by +1 (the usual forget-gate bias); drawn on `device` from a seeded generator."""
    import torch
    P = _check_point(point)
    dt = _torch_dtype(P["dtype"])
    B, H = P["B"], P["H"]
    g = torch.Generator(device=device).manual_seed(int(seed))
    h_prev = (0.95 * (2 * torch.rand((B, H), generator=g, device=device) - 1)).to(dt)
    c_prev = torch.randn((B, H), generator=g, device=device)
    w_hh = ((2 * torch.rand((4 * H, H), generator=g, device=device) - 1) * (3.0 / H) ** 0.5).to(dt)
    xg = torch.randn((B, 4 * H), generator=g, device=device)
    xg[:, H:2 * H] += 1.0
    return {"h_prev": h_prev, "c_prev": c_prev, "w_hh": w_hh, "xg": xg.to(dt)}


def launch(inputs, cfg):
    """h [B, H] in h_prev's dtype (the step's output; c [B, H] fp32 is written beside it)."""
    h, _ = lstm_cell(inputs["h_prev"], inputs["c_prev"], inputs["w_hh"], inputs["xg"], BLOCK_B=cfg["BLOCK_B"],
                     BLOCK_H=cfg["BLOCK_H"], BLOCK_K=cfg["BLOCK_K"], num_warps=cfg["num_warps"],
                     num_stages=cfg["num_stages"])
    return h


def reference_hc(inputs):
    """(h, c) [B, H] each in float64: the gates from the widened operands, PyTorch's LSTM cell equations."""
    import torch
    gates = inputs["h_prev"].double() @ inputs["w_hh"].double().t() + inputs["xg"].double()
    i, f, g, o = gates.chunk(4, dim=1)
    c = torch.sigmoid(f) * inputs["c_prev"].double() + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def reference(inputs):
    """h [B, H] in float64 (reference_hc's; c feeds it through tanh)."""
    return reference_hc(inputs)[0]


def torch_baseline(inputs):
    """What PyTorch runs for nn.LSTMCell on CUDA given the input projection: one cuBLAS GEMM (addmm of xg and
    h_prev @ W_hh^T, the [B, 4H] gates through memory in the inputs' dtype), then the fused pointwise cell
    (torch._thnn_fused_lstm_cell's math in eager ops); h in the inputs' dtype."""
    import torch
    gates = torch.addmm(inputs["xg"], inputs["h_prev"], inputs["w_hh"].t()).float()
    i, f, g, o = gates.chunk(4, dim=1)
    c = torch.sigmoid(f) * inputs["c_prev"] + torch.sigmoid(i) * torch.tanh(g)
    return (torch.sigmoid(o) * torch.tanh(c)).to(inputs["h_prev"].dtype)


def bytes_moved(point) -> int:
    """W_hh read once (4 H^2), h_prev (B H) and xg (4 B H) read once, h written once (B H), all 2-byte; c_prev
    read and c written once (fp32)."""
    P = _check_point(point)
    B, H = P["B"], P["H"]
    return 2 * (4 * H * H + B * H + 4 * B * H + B * H) + 4 * 2 * B * H


def flops(point) -> int:
    """The recurrent GEMM's multiply-adds, 2 B (4H) H (the pointwise epilogue, ~30 ops an element, is not
    counted)."""
    P = _check_point(point)
    B, H = P["B"], P["H"]
    return 2 * B * 4 * H * H


def grid(cfg, point) -> tuple:
    """The launch grid (cdiv(H, BLOCK_H), cdiv(B, BLOCK_B)): hidden tiles fastest."""
    P = _check_point(point)
    _check_cfg(cfg)
    if triton.cdiv(P["B"], cfg["BLOCK_B"]) > 65535:
        raise ValueError(f"B={P['B']} needs {triton.cdiv(P['B'], cfg['BLOCK_B'])} batch tiles; at most 65535")
    return _grid(P["B"], P["H"], cfg)


def loop_iterations(cfg, point) -> int:
    """cdiv(H, BLOCK_K) K steps a program (four dots a step)."""
    grid(cfg, point)
    return triton.cdiv(point["H"], cfg["BLOCK_K"])


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, every tensor on the meta device, contiguous (as
    make_inputs and launch lay them out; nothing but the shapes decides the work)."""
    import torch
    P = _check_point(point)
    grid(cfg, P)
    dt = _torch_dtype(P["dtype"])
    B, H = P["B"], P["H"]
    hp = torch.empty((B, H), dtype=dt, device="meta")
    w = torch.empty((4 * H, H), dtype=dt, device="meta")
    xg = torch.empty((B, 4 * H), dtype=dt, device="meta")
    cp = torch.empty((B, H), dtype=torch.float32, device="meta")
    ho = torch.empty((B, H), dtype=dt, device="meta")
    co = torch.empty((B, H), dtype=torch.float32, device="meta")
    return _kernel_args(hp, w, xg, cp, ho, co, cfg)
