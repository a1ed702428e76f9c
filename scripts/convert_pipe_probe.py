"""GPU experiment: which SM pipe runs a type conversion (issue 14: the rank model's issue term).

    python3 scripts/convert_pipe_probe.py [--out FILE.json] [--iters 4096]

The question: the rank model's term (f) counts every SASS instruction as one issue slot, MUFU ops as 8
(the special-function / conversion pipe "XU" has 16 lanes an SM on sm_80..sm_120, an eighth of the FP32
lanes). The conversions int <-> float (I2F, F2I, F2F) run on that same pipe by NVIDIA's account (the CUDA
C++ Programming Guide's throughput table: "all other type conversions" 16 results a clock an SM on compute
capability 9.0; the Nsight Compute forum: XU runs int-to-float and float-to-int conversions, all XU
instructions at one throughput). Dequantizing GEMMs run dozens of them a trip and are estimated ~1.7x
fast. Is a conversion 8 issue slots a warp, like a MUFU op -- and which conversions (I2F from 32, 16, 8-bit
integers; F2FP, the fp32 -> fp16 / bf16 pack; F2I)?

Each mode is one loop of ITERS steps over 8 independent chains a thread (enough warps and chains that
latency is hidden: the loop is throughput-bound), one op of the kind under test a chain a step, plus the
one FP32 / integer op that carries the chain. Times: triton.testing.do_bench (warm-up, median); grid =
SMs x 4 CTAs of 8 warps. Reported: scheduler cycles a warp a step a chain = time x clock x SMs x 4 /
(warps x ITERS x 8) with the clock the device reports (torch.cuda.clock_rate, MHz; the ratios between
modes do not depend on it). The SASS loop's opcodes are recorded where Triton gives the listing. Each
mode's result is checked against the same arithmetic in torch before timing (a mode that fails is
recorded with its error and not timed). GPU code; where it has run
is in reports/GPU_NOTES.md.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import triton
import triton.language as tl

CHAINS = 8          # independent chains a thread
WARPS = 8
MODES = ("ffma", "mufu_ex2", "i2f_s32", "i2f_s16", "i2f_s8", "f2fp_f16", "f2fp_bf16", "f2i_s32")


@triton.jit
def _probe(X, Y, ITERS, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(X + offs)                       # int32, small
    x = a.to(tl.float32) * 0.001
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acci = tl.zeros([BLOCK], dtype=tl.int32)
    for _ in range(ITERS):
        if MODE == "ffma":
            x = x * 0.999 + 1.0
        elif MODE == "mufu_ex2":
            x = tl.math.exp2(x * -0.5)
        elif MODE == "i2f_s32":
            a = a + 1
            acc += a.to(tl.float32)
        elif MODE == "i2f_s16":
            a = a + 1
            acc += a.to(tl.int16).to(tl.float32)
        elif MODE == "i2f_s8":
            a = a + 1
            acc += a.to(tl.int8).to(tl.float32)
        elif MODE == "f2fp_f16":
            x = x.to(tl.float16).to(tl.float32) * 0.999 + 1.0
        elif MODE == "f2fp_bf16":
            x = x.to(tl.bfloat16).to(tl.float32) * 0.999 + 1.0
        else:  # f2i_s32
            x = x + 1.0
            acci += x.to(tl.int32)
    tl.store(Y + offs, x + acc + acci.to(tl.float32))


def reference(x0: torch.Tensor, mode: str, iters: int) -> torch.Tensor:
    """The kernel's arithmetic in torch (float32 / int32, the same order)."""
    a = x0.clone()
    x = a.float() * 0.001
    acc = torch.zeros_like(x)
    acci = torch.zeros_like(a)
    for _ in range(iters):
        if mode == "ffma":
            x = x * 0.999 + 1.0
        elif mode == "mufu_ex2":
            x = torch.exp2(x * -0.5)
        elif mode == "i2f_s32":
            a = a + 1
            acc += a.float()
        elif mode == "i2f_s16":
            a = a + 1
            acc += a.to(torch.int16).float()
        elif mode == "i2f_s8":
            a = a + 1
            acc += a.to(torch.int8).float()
        elif mode == "f2fp_f16":
            x = x.half().float() * 0.999 + 1.0
        elif mode == "f2fp_bf16":
            x = x.bfloat16().float() * 0.999 + 1.0
        else:
            x = x + 1.0
            acci += x.to(torch.int32)
    return x + acc + acci.float()


def loop_opcodes(compiled) -> dict[str, int]:
    """Opcode counts of the compiled SASS's loop body (between the loop label and its backward branch), or {}."""
    try:
        sass = compiled.asm["sass"]
    except Exception:  # noqa: BLE001 -- no disassembler on this machine: recorded as unknown
        return {}
    sys.path.insert(0, __file__.rsplit("/scripts/", 1)[0])
    from occmodel import sass as S
    lp = S.main_loop(S.sass_loops(sass))
    if lp is None:
        return {}
    out: dict[str, int] = {}
    for pc, op, _ in S.instructions(sass):
        if lp.start <= pc <= lp.end:
            out[op] = out.get(op, 0) + 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    ap.add_argument("--iters", type=int, default=4096, help="loop steps (default 4096)")
    args = ap.parse_args()
    if args.iters < 1:
        print(f"convert_pipe_probe: error: --iters {args.iters}: must be a whole number >= 1", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("convert_pipe_probe: error: needs a CUDA GPU", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    clock_mhz = getattr(props, "clock_rate", 0) / 1e3 or None
    block = CHAINS * WARPS * 32
    grid = 4 * sms
    n = grid * block
    torch.manual_seed(0)
    x0 = torch.randint(-100, 100, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda", dtype=torch.float32)
    rows = []
    for mode in MODES:
        check_iters = 64
        compiled = _probe[(grid,)](x0, y, check_iters, MODE=mode, BLOCK=block, num_warps=WARPS)
        ref = reference(x0, mode, check_iters)
        err = ((y - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
        if not err < 1e-3:  # recorded, not timed: a wrong loop's time would answer nothing
            print(f"convert_pipe_probe: mode {mode} is wrong (max rel error {err:.2e}); not timed", file=sys.stderr)
            rows.append({"mode": mode, "check_rel_err": err, "median_us": None})
            continue
        fn = lambda: _probe[(grid,)](x0, y, args.iters, MODE=mode, BLOCK=block, num_warps=WARPS)  # noqa: E731
        ms = triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")
        warp_steps = grid * WARPS * args.iters * CHAINS
        row = {"mode": mode, "iters": args.iters, "median_us": round(ms * 1e3, 2), "check_rel_err": err,
               "ns_per_warp_step_per_scheduler": round(ms * 1e6 * sms * 4 / warp_steps, 4),
               "cycles_per_warp_step_per_scheduler": (round(ms * 1e-3 * clock_mhz * 1e6 * sms * 4 / warp_steps, 3)
                                                      if clock_mhz else None),
               "loop_opcodes": loop_opcodes(compiled), "regs": getattr(compiled, "n_regs", None)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    env = {"gpu": torch.cuda.get_device_name(0), "sms": sms, "clock_mhz": clock_mhz, "torch": torch.__version__,
           "triton": triton.__version__, "grid": grid, "warps": WARPS, "chains": CHAINS}
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"env": env, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
