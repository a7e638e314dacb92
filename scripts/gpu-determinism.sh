#!/usr/bin/env bash
# gpu-determinism.sh FOXHUNT — training on the GPU is reproducible (issue 17): the same
# seed twice gives the same final checkpoint tensors, bit for bit; a run resumed from
# its iteration-2 checkpoint ends where the uninterrupted one does; checkpoints move
# between devices (CPU -> GPU -> CPU resumes run). Each comparison once with the
# collection's matmul tuning on (its default) and once off (FOXHUNT_GEMM_TUNE=0): the
# tuning times candidate algorithms, and a different pick changes the critic's last bits,
# so the timed choices are kept on disk (src/cuda/gemm_cache.c). Each setting starts from
# an empty cache folder: the first run times and writes the algorithm file, the second
# and the resume read it, and all three must agree.
# DETERMINISM_ARGS: more train flags for every GPU run (e.g. "--precision bf16").
# Called by scripts/gpu-check.sh (step determinism); exit 1 when a comparison fails.
set -u
FH=$1
d=/tmp/fh-det
rm -rf "$d"
mkdir -p "$d"
rc=0
for tune in 1 0; do
  T="env FOXHUNT_GEMM_TUNE=$tune FOXHUNT_CACHE_DIR=$d/cache$tune $FH train --device cuda --iterations 4 --checkpoint-every 2 --eval-at-end 0 --seed 5 ${DETERMINISM_ARGS:-}"
  $T --out "$d/a$tune" >"$d/a$tune.log" 2>&1 && $T --out "$d/b$tune" >"$d/b$tune.log" 2>&1 &&
    $T --resume "$d/a$tune/checkpoint_000002.safetensors" --out "$d/c$tune" >"$d/c$tune.log" 2>&1 ||
    { echo "gemm_tune=$tune: a run failed"; tail -5 "$d"/*"$tune".log; rc=1; continue; }
  if [ "$tune" = 1 ]; then
    ls "$d/cache1"/gemm-*.bin >/dev/null 2>&1 && echo "the algorithm file: $(ls "$d/cache1"/gemm-*.bin | xargs -n1 basename), $(stat -c %s "$d/cache1"/gemm-*.bin) bytes" ||
      { echo "gemm_tune=1: no algorithm file written in $d/cache1"; rc=1; }
  fi
  echo "gemm_tune=$tune, the same seed twice:"
  python3 scripts/compare_checkpoints.py "$d/a$tune/final.safetensors" "$d/b$tune/final.safetensors" || rc=1
  echo "gemm_tune=$tune, resumed at iteration 2 against the uninterrupted run:"
  python3 scripts/compare_checkpoints.py "$d/a$tune/final.safetensors" "$d/c$tune/final.safetensors" || rc=1
done
S="--eval-at-end 0 --seed 5 --episodes 16 --steps 64"
$FH train --device cpu --iterations 2 $S --out "$d/cpu" >"$d/cpu.log" 2>&1 &&
  $FH train --device cuda --iterations 3 $S --resume "$d/cpu/final.safetensors" --out "$d/cpu2gpu" &&
  $FH train --device cpu --iterations 4 $S --resume "$d/cpu2gpu/final.safetensors" --out "$d/gpu2cpu" &&
  echo "CPU -> GPU -> CPU resumes: ran" || { echo "a cross-device resume failed"; rc=1; }
exit $rc
