#!/usr/bin/env bash
# One device-machine call that runs every GPU experiment of the project and leaves results in $OUT.
# Usage (on the GPU machine, from the repo root):  OUT=/some/dir bash scripts/gpu_session.sh [parts...]
# parts: tests validate_decode validate_matmul aa autotune validate_warps rank bare verdicts repeat5 aa20
#        (default: the first five).
# Notes: reports/GPU_NOTES.md.
set -uo pipefail
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
OUT=${OUT:?set OUT}
parts=${*:-"tests validate_decode validate_matmul aa autotune"}
occ="python3 -m occmodel"
for part in $parts; do
  start=$(date +%s)
  case $part in
    tests)
      python3 -m pytest -q -m requires_gpu tests/ 2>&1 | tail -15 ;;
    validate_decode)
      $occ validate --kernel decode_attention --spec sm_90 --baseline BLOCK_T=16,num_warps=4,num_stages=2 \
        --candidate num_warps=8 --candidate num_stages=3 --points C=1,8,48,64,96 -D ctx=8192 \
        --out "$OUT/validate_decode_h200" --format table 2>&1 | tail -60 ;;
    validate_matmul)
      $occ validate --kernel matmul --spec sm_90 --candidate num_warps=8 \
        --points M=4096,8192 -D N=4096 -D K=4096 --out "$OUT/validate_matmul_h200" --format table 2>&1 | tail -40 ;;
    aa)
      python3 scripts/aa_study.py --kernel decode_attention --points C=1,8,64 -D ctx=8192 --repeats 20 \
        --out "$OUT/aa_study_decode_h200" 2>&1 | tail -5 ;;
    autotune)
      python3 scripts/autotune_demo.py --out "$OUT/autotune_demo_h200.json" 2>&1 | tail -25 ;;
    validate_warps)
      $occ validate --kernel decode_attention --spec sm_90 --baseline BLOCK_T=16,num_warps=4,num_stages=2 \
        --candidate num_warps=2 --candidate num_warps=8 --candidate num_stages=3 --points C=1,8,48,64,96 \
        -D ctx=8192 --out "$OUT/validate_warps" --format table 2>&1 | tail -70 ;;
    rank)
      python3 scripts/rank_study.py measure --out "$OUT/rank_study.json" --samples 7 2>&1 | tail -40 ;;
    bare)
      # your kernel, no card: a bare @triton.jit flash-attention forward + its launcher file.
      # rank (static, compiled for sm_90, the calibration measured here) picks 3 configs; validate times them
      # and the two single levers against the launcher's baseline at its three points.
      K=examples/flash_attention.py
      $occ calibrate --spec sm_90 --quick --out "$OUT/flash_attention_h200.calibration.yaml" --format table 2>&1 | tail -12
      $occ rank --kernel $K:_kernel --launcher $K --spec sm_90 --compiled -D BLOCK_M=64,128 -D BLOCK_N=32,64,128 \
        --warps 4,8 --stages 2,3,4 --top 3 --calibration "$OUT/flash_attention_h200.calibration.yaml" \
        --format json > "$OUT/rank_flash_attention_h200.json"
      $occ rank --kernel $K:_kernel --launcher $K --spec sm_90 --compiled -D BLOCK_M=64,128 -D BLOCK_N=32,64,128 \
        --warps 4,8 --stages 2,3,4 --top 3 --calibration "$OUT/flash_attention_h200.calibration.yaml" \
        --format markdown > "$OUT/rank_flash_attention_h200.md"
      top=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); base={'BLOCK_M':128,'BLOCK_N':64,'num_warps':8,'num_stages':2}
ch=[{k: v for k, v in c.items() if base.get(k) != v} for c in d['top']]
ch=[c for c in ch if c and c not in ({'num_stages': 3}, {'num_warps': 4})]
print(' '.join('--candidate ' + ','.join(f'{k}={v}' for k, v in c.items()) for c in ch))" "$OUT/rank_flash_attention_h200.json")
      echo "rank's top 3 as candidates: $top"
      $occ validate --kernel $K:_kernel --launcher $K --spec sm_90 --candidate num_stages=3 --candidate num_warps=4 \
        $top --out "$OUT/validate_flash_attention_h200" --format table 2>&1 | tail -80 ;;
    verdicts)
      # one premise per lever: the two levers of the decode story as ONE candidate (two premises + the
      # combination, each timed); a GEMM whose num_warps change also removes spills (the cause named)
      $occ validate --kernel decode_attention --spec sm_90 --baseline BLOCK_T=16,num_warps=4,num_stages=2 \
        --candidate num_warps=8,num_stages=3 --points C=1,8,48,64,96 -D ctx=8192 \
        --out "$OUT/verdicts_decode_two_levers_h200" --format table 2>&1 | tail -45
      $occ validate --kernel matmul --spec sm_90 --baseline BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,num_warps=4,num_stages=3 \
        --candidate num_warps=8 --points M=4096,8192 -D N=4096 -D K=4096 \
        --out "$OUT/verdicts_matmul_spills_h200" --format table 2>&1 | tail -30 ;;
    repeat5)
      # the same validate five times, separate processes: do the intervals overlap, do verdicts agree?
      for r in 1 2 3 4 5; do
        $occ validate --kernel matmul --spec sm_90 --baseline BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=2 \
          --candidate num_stages=3 --points M=4096,8192 -D N=4096 -D K=4096 --seed $r \
          --out "$OUT/repeat5/run$r" --format table 2>&1 | grep -E "overall|^M=" | head -6
      done ;;
    aa20)
      # A/A across 20 separate runs (processes): the baseline against itself, 2 points each
      mkdir -p "$OUT/aa20"
      for r in $(seq 1 20); do
        python3 scripts/aa_study.py --kernel decode_attention --points C=8,64 -D ctx=8192 --repeats 1 \
          --out "$OUT/aa20/run$r" 2>&1 | tail -1
      done ;;
    *) echo "unknown part $part" ;;
  esac
  echo "== $part took $(( $(date +%s) - start )) s"
done
