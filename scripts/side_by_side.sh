#!/usr/bin/env bash
# side_by_side.sh — PPO, PQN and DQN trained with their shipped configs (CONFIGS, default
# configs/quickstart.ini, ppo_recommended.ini, pqn.ini, dqn.ini) on the synthetic market and on SPY daily,
# SEEDS seeds each, and each run's end-of-training evaluation on the test split (greedy
# Sharpe +- its standard error against buy-and-hold's), in one table (issue 18's docs
# table; docs/DQN.md). usage: FH=build/foxhunt OUT=dir DEVICE=cuda SEEDS="1 2 3" \
#   SPY=path/spy_daily.csv scripts/side_by_side.sh
set -euo pipefail
FH=${FH:-build/foxhunt}
OUT=${OUT:-/tmp/foxhunt-side-by-side}
DEVICE=${DEVICE:-auto}
SEEDS=${SEEDS:-"1 2 3"}
SPY=${SPY:-../shared/data/spy_daily.csv}
mkdir -p "$OUT"
rows=$OUT/rows.tsv
: > "$rows"
for data in synthetic spy; do
  for cfg in ${CONFIGS:-quickstart ppo_recommended pqn dqn}; do
    for seed in $SEEDS; do
      dir=$OUT/$data-$cfg-$seed
      extra=()
      [ "$data" = spy ] && extra=(--data "$SPY")
      t0=$(date +%s.%N)
      "$FH" train --config "configs/$cfg.ini" --seed "$seed" --device "$DEVICE" "${extra[@]}" \
        --checkpoint-every 0 --out "$dir" --force > "$dir.log" 2>&1 || { echo "FAILED: $dir (log $dir.log)"; tail -5 "$dir.log"; continue; }
      t1=$(date +%s.%N)
      python3 - "$dir/eval.json" "$data" "$cfg" "$seed" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')" >> "$rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["policies"]
g, b = p["greedy"], p["buy_and_hold"]
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], f"{g['sharpe']:.2f}", f"{g['sharpe_se']:.2f}",
                 f"{b['sharpe']:.2f}", f"{float(sys.argv[5]):.1f}", d["first_time"], d["last_time"]]))
PY
    done
  done
done
printf '%-9s %-10s %4s %14s %13s %7s  %s\n' data config seed "greedy Sharpe" "buy-and-hold" "wall s" "test split"
while IFS=$'\t' read -r data cfg seed g se b w first last; do
  printf '%-9s %-10s %4s %8s +- %s %13s %7s  %s .. %s\n' "$data" "$cfg" "$seed" "$g" "$se" "$b" "$w" "$first" "$last"
done < "$rows"
