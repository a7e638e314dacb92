#!/usr/bin/env bash
# multiasset.sh DATA_DIR [FOXHUNT] [OUT] — issue 34 item 3: does training on several
# assets at once help each asset? For each of the four real assets, with
# configs/walkforward_recommended.ini's settings and seeds 1-3: (a) trained on that asset
# alone, (b) trained on all four at once (--data a.csv,b.csv,...: episodes drawn across the
# assets' training splits, each asset normalised on its own). Prints, per asset, the
# VALIDATION greedy Sharpe (mean +- standard error over the seeds) of
#   final:  the last model (iteration 80; no selection, so (a) and (b) compare fairly)
#   chosen: the model validation chose (best.safetensors: (a) by that asset's Sharpe,
#           (b) by the four assets' mean Sharpe, so (a)'s is biased up by the choice)
# Only validation: --eval-at-end 0, the test split is never read.
# Build first (kept out of this script): cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release
# && cmake --build build-gpu -j. On one H200: 15 runs of ~4-5 s training (the walk-forward
# logs' train_seconds for this config) plus start-up and validation, about 3 minutes.
set -euo pipefail
DATA=${1:?usage: multiasset.sh DATA_DIR [FOXHUNT] [OUT]}
FOXHUNT=${2:-build-gpu/foxhunt}
OUT=${3:-runs/multiasset}
CONFIG=${CONFIG:-configs/walkforward_recommended.ini}
DEVICE=${DEVICE:-cuda}
SEEDS=${SEEDS:-1 2 3}
ASSETS=${ASSETS:-spy_daily btcusdt_1h adausdt_1h avaxusdt_1h}
EXTRA=${EXTRA:-}   # more train flags for every run (e.g. --turnover-penalty 5e-4)
ALL=${ALL:-1}      # 0: only (a), each asset alone (a variant judged against a logged (a))
[ -x "$FOXHUNT" ] || { echo "multiasset.sh: $FOXHUNT is not an executable; build first" >&2; exit 2; }
for a in $ASSETS; do
  [ -r "$DATA/$a.csv" ] || { echo "multiasset.sh: $DATA/$a.csv is missing" >&2; exit 2; }
done
mkdir -p "$OUT"
all=$(for a in $ASSETS; do printf '%s,' "$DATA/$a.csv"; done)
all=${all%,}
start=$SECONDS

train() { # OUT_DIR DATA SEED
  local t0=$SECONDS
  # shellcheck disable=SC2086 # EXTRA is a list of flags
  if ! "$FOXHUNT" train --config "$CONFIG" --device "$DEVICE" --data "$2" --seed "$3" \
      --eval-at-end 0 --force --out "$1" $EXTRA >"$1.log" 2>&1; then
    echo "multiasset.sh: the run $1 failed:" >&2; tail -5 "$1.log" >&2; exit 1
  fi
  echo "  $1: $((SECONDS - t0)) s"
}

for s in $SEEDS; do
  for a in $ASSETS; do train "$OUT/alone-$a-s$s" "$DATA/$a.csv" "$s"; done
  [ "$ALL" = 0 ] || train "$OUT/all-s$s" "$all" "$s"
done

# column COLUMN of validation.csv's last row (final) or its last row with best = 1 (chosen)
val() { # FILE COLUMN final|chosen
  awk -F, -v col="$2" -v which="$3" '
    NR == 1 { for (i = 1; i <= NF; i++) { if ($i == col) c = i; if ($i == "best") b = i }; next }
    { last = $c; if ($b == 1) chosen = $c }
    END { if (!c) { print "nan"; exit } print (which == "final" ? last : chosen) }' "$1"
}
stats() { # values... -> "mean +- se"
  echo "$@" | awk '{ n = NF; m = 0; for (i = 1; i <= n; i++) { if ($i !~ /^-?[0-9]/) $i = 0; m += $i }
    m /= n; v = 0;
    for (i = 1; i <= n; i++) v += ($i - m) ^ 2; se = n > 1 ? sqrt(v / (n - 1) / n) : 0;
    printf "%6.2f +- %4.2f", m, se }'
}

echo
echo "validation greedy Sharpe, mean +- se over seeds ($SEEDS); (a) alone, (b) all $(echo $ASSETS | wc -w) assets"
printf '%-12s  %-16s  %-16s  %-16s  %-16s\n' asset "(a) final" "(b) final" "(a) chosen" "(b) chosen"
for a in $ASSETS; do
  row=()
  for which in final chosen; do
    av=() bv=()
    for s in $SEEDS; do
      av+=("$(val "$OUT/alone-$a-s$s/validation.csv" sharpe "$which")")
      if [ "$ALL" = 0 ]; then bv+=(nan); else
        bv+=("$(val "$OUT/all-s$s/validation.csv" "sharpe_$a" "$which")"); fi
    done
    row+=("$(stats "${av[@]}")" "$(stats "${bv[@]}")")
  done
  printf '%-12s  %-16s  %-16s  %-16s  %-16s\n' "$a" "${row[0]}" "${row[1]}" "${row[2]}" "${row[3]}"
done
echo "(a flat model, Sharpe nan in validation.csv, counts as 0; total $((SECONDS - start)) s)"
