"""2:4 semi-structured sparsity: magnitude prune + compress of a weight matrix (what runs before a
cuSPARSELt / CUTLASS sparse GEMM: torch's to_sparse_semi_structured after PyTorch AO's 2:4
magnitude pruning), a bare @triton.jit kernel + its launcher.

    W [M, K] fp16 / bf16 (row-major, unit column stride, any row pitch; K a multiple of 4)
    for every group of 4 consecutive elements of a row, W[m, 4g : 4g + 4], keep the 2 of largest
    magnitude:
      values[m, 2g : 2g + 2] = the kept pair, in index order                  [M, K / 2], W's dtype
      meta[m, g // 4] bits 4 (g % 4) .. 4 (g % 4) + 3 = lo | hi << 2          [M, ceil(K / 16)], int16
          (lo < hi: the kept pair's 2-bit indices within the group; 4 groups an int16, group 4q in
          the low nibble; the nibbles of groups past K of a last, partial int16 are 0)
      dense[m, k] = W[m, k] if kept else +0   (optional: WRITE_DENSE)           [M, K], W's dtype

meta is the plain row-major packing (CUTLASS's nibble per group, 16 columns an int16, without its
interleaved reordering for the sparse GEMM's tensor-core layout).

Selection rule (a total order, so every group keeps exactly two): the magnitude is the element's
bit pattern with the sign cleared (|x| as an unsigned 15-bit integer: for finite values and
infinities the same order as |x|; +0 and -0 tie; NaN ranks above infinity), larger first, and
on a tie the lower index wins. Element i is kept iff it beats at least two of the group's three
others: 6 integer comparisons c_ij = (mag_i >= mag_j), i < j, per group.

Work split: the M x K matrix in strips of BLOCK_M rows x K_STEPS x BLOCK_K columns, one program a
strip, a 1-D grid of (M / BLOCK_M) x (K chunks) programs with the chunk fastest (the programs that
run together stream one band of rows left to right). A program walks its chunk BLOCK_K columns a
step (a runtime-bounded loop: a ragged last chunk runs only its real steps). One step loads a
[BLOCK_M, BLOCK_K] tile (each thread a run of whole groups: 16-byte vectors), views it as [BLOCK_M,
BLOCK_K / 4, 2, 2] and splits the two size-2 axes (tl.split, in registers) into the groups'
elements 0, 1, 2, 3; selects; joins the kept pair back (tl.join + reshape) into a [BLOCK_M,
BLOCK_K / 2] store of values, packs the nibbles of 4 groups into one int16 (the [BLOCK_M,
BLOCK_K / 4] nibbles viewed as [BLOCK_M, BLOCK_K / 16, 4], shifted by 0 / 4 / 8 / 12 and summed)
for a [BLOCK_M, BLOCK_K / 16] store of meta, and with WRITE_DENSE joins the four masked elements
back into the [BLOCK_M, BLOCK_K] pruned tile. Traffic per element: 2 B read, 1 B of values + 1/8 B
of meta written (+ 2 B of dense). The compiler's layouts: the load takes 8 elements a thread (two
groups, a 16-byte vector) and the splits stay in registers; the joined values come out 4 a thread
where the store's coalesced layout takes 8, a convert_layout through shared memory (at most a
values tile, BLOCK_M x BLOCK_K bytes), and the packed meta is converted to its store's layout too.

Masks: rows past M (EVEN_M: BLOCK_M divides M) and columns past K (EVEN_K: BLOCK_K divides K), the
loads filled with 0 and the stores masked; without EVEN_K the nibbles of groups past K are zeroed
(a K not a multiple of 16 leaves a partial last int16). Both constexprs set by the launcher.
Offsets: row offsets int64, column offsets int32.

Tunables: BLOCK_M (rows a tile), BLOCK_K (columns a step, a multiple of 16: one int16 of meta a 16
columns), K_STEPS (steps a program: the grid's K chunks; fewer, longer programs), num_warps;
num_stages held at 1 (no dot: the loop's loads are not pipelined). Every config of the sweep
compiles for sm_90 at every point with triton 3.6 and 3.9 without spills: 25-198 registers under
3.6 (25-180 under 3.9), the most for 16 x 512 on 4 warps (64 elements a thread) with the dense
output; shared memory 64 B - 8 KiB (the layout conversions above).
Problem parameters (a workload point): M, K, dtype, write_dense.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _kernel(W, VAL, META, DENSE, M, K, n_kc, stride_wm, stride_vm, stride_mm, stride_dm,
            WRITE_DENSE: tl.constexpr, EVEN_M: tl.constexpr, EVEN_K: tl.constexpr,
            BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, K_STEPS: tl.constexpr):
    BG: tl.constexpr = BLOCK_K // 4                      # groups a step
    BQ: tl.constexpr = BLOCK_K // 16                     # meta int16s a step
    pid = tl.program_id(0)
    pid_m = pid // n_kc
    pid_k = pid - pid_m * n_kc

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = rm.to(tl.int64)[:, None]
    w_rows = W + rows * stride_wm                        # [BLOCK_M, 1]
    v_rows = VAL + rows * stride_vm
    m_rows = META + rows * stride_mm
    if WRITE_DENSE:
        d_rows = DENSE + rows * stride_dm
    if not EVEN_M:
        m_ok = (rm < M)[:, None]
    if not EVEN_K:
        n_groups = K // 4
        n_meta = (K + 15) // 16

    k_lo = pid_k * (K_STEPS * BLOCK_K)
    k_hi = tl.minimum(k_lo + K_STEPS * BLOCK_K, K)
    rk = tl.arange(0, BLOCK_K)
    rv = tl.arange(0, BLOCK_K // 2)
    rg = tl.arange(0, BG)
    rq = tl.arange(0, BQ)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        k = k0 + rk
        if EVEN_M and EVEN_K:
            x = tl.load(w_rows + k[None, :])
        elif EVEN_K:
            x = tl.load(w_rows + k[None, :], mask=m_ok, other=0.0)
        elif EVEN_M:
            x = tl.load(w_rows + k[None, :], mask=(k < K)[None, :], other=0.0)
        else:
            x = tl.load(w_rows + k[None, :], mask=m_ok & (k < K)[None, :], other=0.0)

        # column 4g + 2i + j -> [.., g, i, j]; split j, then i: the groups' elements 0, 2 and 1, 3
        a, b = tl.split(tl.reshape(x, (BLOCK_M, BG, 2, 2)))
        x0, x2 = tl.split(a)
        x1, x3 = tl.split(b)
        m0 = x0.to(tl.int16, bitcast=True) & 0x7FFF      # magnitudes: the sign bit cleared
        m1 = x1.to(tl.int16, bitcast=True) & 0x7FFF
        m2 = x2.to(tl.int16, bitcast=True) & 0x7FFF
        m3 = x3.to(tl.int16, bitcast=True) & 0x7FFF
        c01 = (m0 >= m1).to(tl.int32)                    # c_ij: i beats j (a tie: the lower index)
        c02 = (m0 >= m2).to(tl.int32)
        c03 = (m0 >= m3).to(tl.int32)
        c12 = (m1 >= m2).to(tl.int32)
        c13 = (m1 >= m3).to(tl.int32)
        c23 = (m2 >= m3).to(tl.int32)
        keep0 = (c01 + c02 + c03) >= 2                   # kept: beats two of the three others
        keep1 = (c12 + c13 - c01) >= 1
        keep2 = (c23 - c02 - c12) >= 0
        keep3 = (c03 + c13 + c23) <= 1
        lo = tl.where(keep0, 0, tl.where(keep1, 1, 2))
        hi = tl.where(keep3, 3, tl.where(keep2, 2, 1))
        v_lo = tl.where(keep0, x0, tl.where(keep1, x1, x2))
        v_hi = tl.where(keep3, x3, tl.where(keep2, x2, x1))

        # values: the kept pairs, in index order
        v = tl.reshape(tl.join(v_lo, v_hi), (BLOCK_M, BLOCK_K // 2))
        vcol = k0 // 2 + rv
        if EVEN_M and EVEN_K:
            tl.store(v_rows + vcol[None, :], v)
        elif EVEN_K:
            tl.store(v_rows + vcol[None, :], v, mask=m_ok)
        elif EVEN_M:
            tl.store(v_rows + vcol[None, :], v, mask=(vcol < K // 2)[None, :])
        else:
            tl.store(v_rows + vcol[None, :], v, mask=m_ok & (vcol < K // 2)[None, :])

        # meta: a nibble a group, 4 groups an int16 (group 4q + 2i + j in bits 4 (2i + j))
        nib = lo | (hi << 2)                             # [BLOCK_M, BG] int32
        if not EVEN_K:
            nib = tl.where(((k0 // 4 + rg) < n_groups)[None, :], nib, 0)
        shift = 4 * tl.arange(0, 4)
        meta = tl.sum(tl.reshape(nib, (BLOCK_M, BQ, 4)) << shift[None, None, :], axis=2).to(tl.int16)
        qcol = k0 // 16 + rq
        if EVEN_M and EVEN_K:
            tl.store(m_rows + qcol[None, :], meta)
        elif EVEN_K:
            tl.store(m_rows + qcol[None, :], meta, mask=m_ok)
        elif EVEN_M:
            tl.store(m_rows + qcol[None, :], meta, mask=(qcol < n_meta)[None, :])
        else:
            tl.store(m_rows + qcol[None, :], meta, mask=m_ok & (qcol < n_meta)[None, :])

        # the pruned dense tile: the dropped elements +0
        if WRITE_DENSE:
            zero = tl.zeros_like(x0)
            d = tl.join(tl.join(tl.where(keep0, x0, zero), tl.where(keep2, x2, zero)),
                        tl.join(tl.where(keep1, x1, zero), tl.where(keep3, x3, zero)))
            d = tl.reshape(d, (BLOCK_M, BLOCK_K))
            if EVEN_M and EVEN_K:
                tl.store(d_rows + k[None, :], d)
            elif EVEN_K:
                tl.store(d_rows + k[None, :], d, mask=m_ok)
            elif EVEN_M:
                tl.store(d_rows + k[None, :], d, mask=(k < K)[None, :])
            else:
                tl.store(d_rows + k[None, :], d, mask=m_ok & (k < K)[None, :])


# ---------------------------------------------------------------- launcher
ROLE = "held-out-25"
DTYPES = ("bf16", "fp16")
TUNABLES = ("BLOCK_M", "BLOCK_K", "K_STEPS", "num_warps", "num_stages")
BASELINE = {"BLOCK_M": 8, "BLOCK_K": 256, "K_STEPS": 4, "num_warps": 4, "num_stages": 1}
# the study's sweep: 3 x 3 x 3 x 2 = 54 configs (tiles of 512-8192 elements, 2-64 a thread; K chunks
# of 128-8192 columns)
SWEEP_AXES = {"BLOCK_M": [4, 8, 16], "BLOCK_K": [128, 256, 512], "K_STEPS": [1, 4, 16], "num_warps": [4, 8],
              "num_stages": [1]}

# Weights of real models pruned to 2:4 in one call each, 0.5-1.2 GB of traffic (10-24x the H200's
# 50 MB L2), HBM-bound at roughly 100-250 us on an H200. They differ in K (4096; 28672; 4544, which
# no BLOCK_K of the sweep divides), M, the dtype and the pruned-dense output.
POINTS = [
    # Llama-3-8B, one decoder layer's seven K = 4096 projections stacked (q 4096 + k 1024 + v 1024 +
    # o 4096 + gate 14336 + up 14336 rows), bf16: [38912, 4096], 319 MB read, 159 + 20 MB written
    {"M": 38912, "K": 4096, "dtype": "bf16", "write_dense": 0},
    # Llama-3-70B's down_proj [8192, 28672], fp16, the pruned dense weight written too (for the
    # dense fallback / fake-sparsity fine-tuning): 470 MB read, 235 + 29 + 470 MB written
    {"M": 8192, "K": 28672, "dtype": "fp16", "write_dense": 1},
    # Falcon-7B's MLP up-projections (dense_h_to_4h [18176, 4544]) of 4 of its 32 layers stacked,
    # bf16: [72704, 4544], 661 MB read, 330 + 41 MB written
    {"M": 72704, "K": 4544, "dtype": "bf16", "write_dense": 0},
]


def _torch_dtype(name: str):
    import torch
    try:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}[name]
    except KeyError:
        raise ValueError(f"dtype {name!r} is not one of {', '.join(DTYPES)}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_point(point) -> tuple[int, int]:
    """(M, K), every field checked."""
    M, K = point["M"], point["K"]
    if not _is_int(M) or M < 1:
        raise ValueError(f"M={M!r} must be a positive int")
    if not _is_int(K) or K < 4 or K % 4:
        raise ValueError(f"K={K!r} must be a positive multiple of 4")
    if point.get("dtype", "bf16") not in DTYPES:
        raise ValueError(f"dtype {point.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    if point.get("write_dense", 0) not in (0, 1):
        raise ValueError(f"write_dense={point.get('write_dense')!r} must be 0 or 1")
    return M, K


def _check_cfg(cfg) -> None:
    for k in ("BLOCK_M", "BLOCK_K", "num_warps"):
        v = cfg[k]
        if not _is_int(v) or v < 1 or v & (v - 1):
            raise ValueError(f"{k}={v!r} must be a power of two")
    if cfg["BLOCK_K"] < 16:
        raise ValueError(f"BLOCK_K={cfg['BLOCK_K']} must be at least 16 (one int16 of meta a 16 columns)")
    if not _is_int(cfg["K_STEPS"]) or cfg["K_STEPS"] < 1:
        raise ValueError(f"K_STEPS={cfg['K_STEPS']!r} must be a positive int")


def _n_chunks(K: int, cfg) -> int:
    return triton.cdiv(K, cfg["K_STEPS"] * cfg["BLOCK_K"])


def _grid(M: int, K: int, cfg) -> tuple[int]:
    _check_cfg(cfg)
    return (triton.cdiv(M, cfg["BLOCK_M"]) * _n_chunks(K, cfg),)


def _kernel_args(w, val, meta, dense, cfg) -> dict:
    """Every argument of one `_kernel` launch, by name (launch and example_args share it). dense
    None: no pruned dense output (values stands in for its pointer, never written)."""
    M, K = w.shape
    return dict(W=w, VAL=val, META=meta, DENSE=val if dense is None else dense, M=M, K=K,
                n_kc=_n_chunks(K, cfg), stride_wm=w.stride(0), stride_vm=val.stride(0), stride_mm=meta.stride(0),
                stride_dm=K if dense is None else dense.stride(0), WRITE_DENSE=int(dense is not None),
                EVEN_M=int(M % cfg["BLOCK_M"] == 0), EVEN_K=int(K % cfg["BLOCK_K"] == 0),
                BLOCK_M=cfg["BLOCK_M"], BLOCK_K=cfg["BLOCK_K"], K_STEPS=cfg["K_STEPS"])


def prune_compress_24(w, *, write_dense: bool = False, BLOCK_M: int = 8, BLOCK_K: int = 256, K_STEPS: int = 4,
                      num_warps: int = 4, num_stages: int = 1):
    """w [M, K] (fp16 / bf16, unit column stride, any row pitch, K a multiple of 4) -> (values
    [M, K / 2] in w's dtype, meta [M, ceil(K / 16)] int16, dense [M, K] in w's dtype or None): the
    2 largest-magnitude elements of every 4 along K (a tie: the lower index), packed as the module
    docstring says; dense (with write_dense) is w with the dropped elements zeroed. All contiguous."""
    import torch
    if w.dim() != 2:
        raise ValueError(f"expected w [M, K]; got {tuple(w.shape)}")
    if w.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"w must be fp16 / bf16; got {w.dtype}")
    cfg = {"BLOCK_M": BLOCK_M, "BLOCK_K": BLOCK_K, "K_STEPS": K_STEPS, "num_warps": num_warps}
    _check_cfg(cfg)
    M, K = w.shape
    if K % 4:
        raise ValueError(f"K={K} must be a multiple of 4 (whole groups of 4)")
    if M > 1 and K > 0 and w.stride(1) != 1:
        raise ValueError(f"w must have unit column stride; got strides {w.stride()}")
    values = torch.empty((M, K // 2), dtype=w.dtype, device=w.device)
    meta = torch.empty((M, -(-K // 16)), dtype=torch.int16, device=w.device)
    dense = torch.empty((M, K), dtype=w.dtype, device=w.device) if write_dense else None
    if M == 0 or K == 0:
        return values, meta, dense
    if K + K_STEPS * BLOCK_K >= 2**31:
        raise ValueError(f"K={K} exceeds the kernel's int32 column offsets")
    (n,) = _grid(M, K, cfg)
    if n >= 2**31:
        raise ValueError(f"w [{M}, {K}] needs {n} programs, past a 1-D grid")
    _kernel[(n,)](**_kernel_args(w, values, meta, dense, cfg), num_warps=num_warps, num_stages=num_stages)
    return values, meta, dense


def make_inputs(point, seed: int = 0, device: str = "cuda") -> dict:
    """w: weight-like values (N(0, 0.02^2), a per-row scale in [0.5, 1.5)) in the point's dtype,
    contiguous, drawn on the CPU from a seeded torch.Generator and moved; write_dense."""
    import torch
    M, K = _check_point(point)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    w = 0.02 * torch.randn((M, K), generator=gen) * (0.5 + torch.rand((M, 1), generator=gen))
    return {"w": w.to(_torch_dtype(point.get("dtype", "bf16"))).to(device),
            "write_dense": bool(point.get("write_dense", 0))}


def launch(inputs, cfg):
    """values [M, K / 2], the kept elements (meta and dense are the wrapper's further outputs)."""
    values, _, _ = prune_compress_24(inputs["w"], write_dense=inputs.get("write_dense", False),
                                     BLOCK_M=cfg["BLOCK_M"], BLOCK_K=cfg["BLOCK_K"], K_STEPS=cfg["K_STEPS"],
                                     num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return values


def _select(w):
    """(groups [M, K/4, 4] of w, the kept indices [M, K/4, 2] ascending): the selection rule by a
    sort key, magnitude bits x 4 + (3 - index), whose top 2 are unique."""
    import torch
    M, K = w.shape
    g = w.reshape(M, K // 4, 4)
    mag = (g.view(torch.int16).to(torch.int32) & 0x7FFF)
    key = mag * 4 + (3 - torch.arange(4, device=w.device, dtype=torch.int32))
    top = key.topk(2, dim=-1).indices.sort(dim=-1).values
    return g, top


def reference_all(inputs):
    """(values [M, K/2], meta [M, ceil(K/16)] int16, dense [M, K]) in w's dtype, by torch ops."""
    import torch
    w = inputs["w"]
    M, K = w.shape
    g, top = _select(w)
    values = g.gather(-1, top).reshape(M, K // 2)
    nib = (top[..., 0] | (top[..., 1] << 2)).to(torch.int32)                 # [M, K/4]
    Q = -(-K // 16)
    nib = torch.nn.functional.pad(nib, (0, 4 * Q - K // 4)).view(M, Q, 4)
    word = (nib << torch.tensor([0, 4, 8, 12], dtype=torch.int32, device=w.device)).sum(-1)
    meta = torch.where(word >= 2**15, word - 2**16, word).to(torch.int16)
    dense = torch.zeros_like(g).scatter(-1, top, g.gather(-1, top)).reshape(M, K)
    return values, meta, dense


def reference(inputs):
    """fp32 values [M, K / 2]: the kept pair of every group, in index order (a copy: exact)."""
    return reference_all(inputs)[0].float()


def torch_baseline(inputs):
    """What eager torch runs to prune + compress (the selection by a topk over a sort key, the
    gathers, the meta packing: several passes): (values, meta, dense or None) in w's dtype."""
    values, meta, dense = reference_all(inputs)
    return values, meta, (dense if inputs.get("write_dense") else None)


def bytes_moved(point) -> int:
    """w read once; values, meta (and dense) written once."""
    M, K = _check_point(point)
    e = 2
    return M * K * e + M * (K // 2) * e + M * (-(-K // 16)) * 2 + (M * K * e if point.get("write_dense") else 0)


def flops(point) -> int:
    """Integer compares and selects: no floating-point arithmetic."""
    _check_point(point)
    return 0


def grid(cfg, point) -> tuple[int]:
    """(row blocks x K chunks,): the 1-D launch grid, the K chunk fastest."""
    M, K = _check_point(point)
    return _grid(M, K, cfg)


def loop_iterations(cfg, point) -> int:
    """BLOCK_K steps a program: K_STEPS, or all of K's steps when one chunk holds K (a ragged last
    chunk runs fewer)."""
    _, K = _check_point(point)
    _check_cfg(cfg)
    return min(cfg["K_STEPS"], triton.cdiv(K, cfg["BLOCK_K"]))


def example_args(cfg, point) -> dict:
    """The launch arguments of `_kernel` for `cfg` at `point`, on the meta device (no memory): w
    contiguous in the point's dtype, values / meta (/ dense) contiguous as the wrapper makes them."""
    import torch
    M, K = _check_point(point)
    _check_cfg(cfg)
    dt = _torch_dtype(point.get("dtype", "bf16"))
    w = torch.empty((M, K), dtype=dt, device="meta")
    val = torch.empty((M, K // 2), dtype=dt, device="meta")
    meta = torch.empty((M, -(-K // 16)), dtype=torch.int16, device="meta")
    dense = torch.empty((M, K), dtype=dt, device="meta") if point.get("write_dense") else None
    return _kernel_args(w, val, meta, dense, cfg)
