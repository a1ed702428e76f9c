"""Which pq_adc_scan configs compute wrong distances on the GPU, at a small shape, and is it a signed read of the
uint8 codes? Round 33's sweep (reports/GPU_NOTES.md section 44) found 18 STAGE 0 configs wrong at both fp32-LUT
points (relative error 0.06-0.13) while the fp16 point, the interpreter and every other config agreed with the
reference. This runs three of those configs and a passing twin on nq 4 x n 4,096 x M 32 codes with an fp32 and
an fp16 LUT, against a float64 reference and against the reference a sign-extended code (c - 256 for c >= 128,
read from the row before) would give, and prints which global loads and integer extensions the compiled kernels
hold.

    python3 scripts/pq_adc_scan_fp32_probe.py          (GPU; prints one line per (dtype, config))
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIGS = ({"BLOCK_N": 64, "BLOCK_Q": 4, "M_STEP": 2, "STAGE": 0, "num_warps": 4, "num_stages": 1},   # wrong
           {"BLOCK_N": 64, "BLOCK_Q": 2, "M_STEP": 2, "STAGE": 0, "num_warps": 4, "num_stages": 1},   # passed
           {"BLOCK_N": 256, "BLOCK_Q": 4, "M_STEP": 4, "STAGE": 0, "num_warps": 4, "num_stages": 1})  # wrong


def main() -> None:
    import torch
    from occmodel.card import import_file
    mod = import_file(str(ROOT / "examples" / "pq_adc_scan.py"))
    torch.manual_seed(0)
    nq, n, M = 4, 4096, 32
    for dt in (torch.float32, torch.float16):
        codes = torch.randint(0, 256, (n, M), dtype=torch.uint8, device="cuda")
        lut = (4 * torch.rand(nq, M, 256, device="cuda")).to(dt)
        ref = sum(lut[:, m, :].double()[:, codes[:, m].long()] for m in range(M))
        flat = lut.double().reshape(nq, M * 256)
        signed = torch.where(codes.long() >= 128, codes.long() - 256, codes.long())
        idx = torch.arange(M, device="cuda")[None, :] * 256 + signed
        valid = (idx >= 0).all(1)
        ref_signed = sum(flat[:, idx[:, m].clamp(min=0)] for m in range(M))
        for cfg in CONFIGS:
            out = mod.launch({"codes": codes, "lut": lut, "bias": None}, cfg).double()
            print(f"{str(dt):14s} BLOCK_N {cfg['BLOCK_N']:3d} BLOCK_Q {cfg['BLOCK_Q']} M_STEP {cfg['M_STEP']}: "
                  f"max|out - ref| {(out - ref).abs().max().item():.3g}, "
                  f"max|out - signed-code ref| {(out - ref_signed)[:, valid].abs().max().item():.3g}")
    for _, cache in mod._kernel.device_caches.items():
        for kern in cache[0].values():
            ptx, ttgir = kern.asm.get("ptx", ""), kern.asm.get("ttgir", "")
            print("compiled:", sorted(set(re.findall(r"ld\.global[\w.]*", ptx))),
                  sorted(set(re.findall(r"arith\.ext[su]i", ttgir))))


if __name__ == "__main__":
    main()
