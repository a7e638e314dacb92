#!/usr/bin/env bash
# variants.sh — issue 34 item 3: walk-forwards of configs/walkforward_recommended.ini on
# the four real assets with one variant of settings, one asset after the other (four at
# once on one H200 took as long in all: 17 s a run instead of 4.4 s);
# each asset's walkforward.json and log into RES/NAME/, then summarize.py's table
# (validation first: a variant is kept or dropped by it; then test, reported once).
#
#   bash dev/walkforward/variants.sh BUILD DATA_DIR RES NAME [foxhunt flags...]
# (BUILD: the directory holding the foxhunt binary)
set -u
BUILD=$1 DATA=$2 RES=$3 NAME=$4
shift 4
mkdir -p "$RES/$NAME"
ASSETS="spy_daily btcusdt_1h adausdt_1h avaxusdt_1h"
for a in $ASSETS; do
  "$BUILD/foxhunt" walkforward --config configs/walkforward_recommended.ini \
    --data "$DATA/$a.csv" --out "/tmp/wf-$NAME-$a" --force "$@" >"$RES/$NAME/$a.log" 2>&1
done
files=""
for a in $ASSETS; do
  if [ -f "/tmp/wf-$NAME-$a/walkforward.json" ]; then
    cp "/tmp/wf-$NAME-$a/walkforward.json" "$RES/$NAME/$a.json"
    cp "/tmp/wf-$NAME-$a/walkforward.md" "$RES/$NAME/$a.md"
    files="$files $RES/$NAME/$a.json"
  else
    echo "$NAME $a: no walkforward.json; its log's tail:"; tail -5 "$RES/$NAME/$a.log"
  fi
done
[ -n "$files" ] && python3 dev/walkforward/summarize.py "$NAME $*" $files | tee "$RES/$NAME/summary.md"
