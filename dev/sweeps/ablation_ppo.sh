#!/usr/bin/env bash
# ablation_ppo.sh — issue 23's ablation of configs/ppo_sweep.ini: every setting the sweep
# changed, put back to quickstart.ini's value one at a time (and a few additions), each
# trained for SEEDS seeds on the GPU with a greedy validation backtest every 5 iterations
# (the learning curves), then the final model evaluated on the validation and the test
# split, and the model the validation chose (best.safetensors) on the test split.
#
#   bash dev/sweeps/ablation_ppo.sh FOXHUNT OUT [SEEDS] [JOBS]
#
# OUT/<variant>/seed<s>/ holds each run's validation.csv, metrics.csv, val.json,
# test.json, best_test.json and train.log (checkpoints deleted); OUT/ablation.md is the
# table (dev/sweeps/ablation_summary.py). Runs JOBS (default 8) at once: the GPU is shared.
set -uo pipefail
FH=${1:?foxhunt binary}
OUT=${2:?output folder}
SEEDS=${3:-5}
JOBS=${4:-8}
BASE=configs/ppo_sweep.ini
DEVICE=${DEVICE:-cuda}   # cpu, with EXTRA, for a smoke test of the script
EXTRA=${EXTRA:-}         # flags after each variant's (a smaller budget)

# name|flags over ppo_sweep.ini (quickstart's value of one setting, or an addition);
# "@FILE": FILE instead of ppo_sweep.ini
VARIANTS=(
  "sweep|"
  "quickstart|@configs/quickstart.ini"
  "lr=1e-3|--lr 0.001"
  "ent_coef=0.01|--ent-coef 0.01"
  "gamma=0.9|--gamma 0.9"
  "gae_lambda=0.95|--gae-lambda 0.95"
  "clip=0.2|--clip 0.2"
  "reward_scale=100|--reward-scale 100"
  "minibatch=512|--minibatch 512"
  "episodes=256|--episodes 256"
  "iterations=40|--iterations 40"
  "+anneal_lr=0|--anneal-lr 0"
  "+episodes=2048|--episodes 2048 --minibatch 8192"
  "+iterations=160|--iterations 160"
)

# VARIANTS_FILE: other variants, one "name|flags" a line
if [ -n "${VARIANTS_FILE:-}" ]; then mapfile -t VARIANTS < "$VARIANTS_FILE"; fi

mkdir -p "$OUT"
one_run() { # variant-name flags seed
  local name=$1 flags=$2 seed=$3
  local dir="$OUT/$name/seed$seed" base=$BASE
  [[ $flags == @* ]] && { base=${flags#@}; flags=; }
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # flags are words
  if ! "$FH" train --config "$base" $flags $EXTRA --seed "$seed" --device "$DEVICE" --eval-every 5 \
       --eval-at-end 0 --checkpoint-every 0 --threads 2 --out "$dir/run" --force \
       >"$dir/train.log" 2>&1; then
    echo "FAILED $name seed $seed (see $dir/train.log)"; return 1
  fi
  "$FH" eval --checkpoint "$dir/run/final.safetensors" --split validation --json "$dir/val.json" >/dev/null &&
  "$FH" eval --checkpoint "$dir/run/final.safetensors" --split test --json "$dir/test.json" >/dev/null &&
  "$FH" eval --checkpoint "$dir/run/best.safetensors" --split test --json "$dir/best_test.json" >/dev/null ||
    { echo "FAILED eval $name seed $seed"; return 1; }
  cp "$dir/run/validation.csv" "$dir/run/metrics.csv" "$dir/"
  rm -rf "$dir/run"
  echo "done $name seed $seed"
}
start=$(date +%s)
rc=0
for v in "${VARIANTS[@]}"; do
  for s in $(seq 1 "$SEEDS"); do
    while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n || rc=1; done
    one_run "${v%%|*}" "${v#*|}" "$s" &
  done
done
while (( $(jobs -rp | wc -l) > 0 )); do wait -n || rc=1; done
echo "ablation: $(( $(date +%s) - start )) s"
python3 "$(dirname "$0")/ablation_summary.py" "$OUT" | tee "$OUT/ablation.md"
exit $rc
