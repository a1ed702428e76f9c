"""GPU diagnostic for examples/block_sparse_attn.py at BLOCK_N = 128 (wrong output in round 15's timing,
right in Triton's interpreter): where the error sits -- by query block, by its block_count (odd counts pad
the second half of a two-block step) and by config. Prints one line per case; run on a GPU:
    python3 scripts/check_block_sparse_bn128.py"""
import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bsa", ROOT / "examples" / "block_sparse_attn.py")
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)


def main() -> int:
    point = {"B": 1, "H": 2, "H_kv": 1, "S": 1024, "D": 64, "TOPK": 4, "dtype": "bf16"}
    inputs = m.make_inputs(point, seed=0)
    ref = m.reference(inputs).float()
    counts = inputs["block_count"][0, 0].tolist()
    for cfg in ({"BLOCK_M": 64, "BLOCK_N": 64, "HEADS_FASTEST": 0, "num_warps": 4, "num_stages": 2},
                {"BLOCK_M": 64, "BLOCK_N": 128, "HEADS_FASTEST": 0, "num_warps": 4, "num_stages": 1},
                {"BLOCK_M": 64, "BLOCK_N": 128, "HEADS_FASTEST": 0, "num_warps": 8, "num_stages": 2},
                {"BLOCK_M": 32, "BLOCK_N": 128, "HEADS_FASTEST": 1, "num_warps": 4, "num_stages": 3}):
        out = m.launch(inputs, cfg).float()
        torch.cuda.synchronize()
        err = (out - ref).abs().amax(dim=-1)[0, 0]                   # [S] max error per query row, head 0
        per_block = err.view(-1, 64).amax(dim=1).tolist()
        bad = [i for i, e in enumerate(per_block) if e > 0.05]
        print(cfg, "bad query blocks:", bad, "their counts:", [counts[i] for i in bad],
              "max err", round(max(per_block), 4), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
