#!/usr/bin/env bash
# screen.sh — issue 34 item 3, the cheap first look at regularisers: for each variant
# NAME='flags', multiasset.sh with ALL=0 (each of the four real assets trained alone,
# configs/walkforward_recommended.ini, seeds 1-3, fold 1's split) and its validation table
# (final and chosen model's greedy Sharpe, mean +- se over seeds). Validation only: the
# test split is never read. A variant that looks better here is then walked forward
# (variants.sh: 5 folds x 3 seeds, validation PSR) before it is kept.
#
#   bash dev/walkforward/screen.sh DATA_DIR FOXHUNT OUT 'base=' 'tp5=--turnover-penalty 5e-4' ...
# ~70 s a variant on one H200.
set -euo pipefail
DATA=$1 FOXHUNT=$2 OUT=$3
shift 3
mkdir -p "$OUT"
for v in "$@"; do
  name=${v%%=*} flags=${v#*=}
  echo "== $name: ${flags:-(the config as it is)}"
  EXTRA="$flags" ALL=0 bash dev/walkforward/multiasset.sh "$DATA" "$FOXHUNT" "$OUT/$name" \
    | tee "$OUT/$name.log" | sed -n '/^validation/,$p'
done
