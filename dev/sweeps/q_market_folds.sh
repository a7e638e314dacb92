#!/usr/bin/env bash
# q_market_folds.sh POINTS_FILE [FAMILY...] — Q-learning settings scored on OTHER synthetic
# markets than the one the learning test reads: every point of POINTS_FILE runs on the
# validation split of each market in MARKETS (synthetic_seed), seeds SEEDS; its score is
# the mean greedy Sharpe over all of them. For each FAMILY (e.g. "pqn" for points named
# *_pqn*) the best-scoring point then runs the learning test (default market, TEST split,
# seeds 1-3), chosen by this script, not by hand.
#
# Why: on the default market's validation split PQN's chosen points scored 3.3-3.7 and
# then 0.6-1.4 on its test split (session 13): selecting among many noisy points on one
# 4,000-bar split rewards luck. Averaging over independent markets does not.
#
# usage: BIN=build-carry/tests/rl/test_learning OUT=dir MARKETS="7 8" SEEDS="1 2 3" \
#        JOBS=8 dev/sweeps/q_market_folds.sh dev/sweeps/q_points_10.txt pqn
set -uo pipefail
points=${1:?points file}
shift
BIN=${BIN:-build-u/tests/rl/test_learning}
OUT=${OUT:-/tmp/q_folds}
MARKETS=${MARKETS:-"7 8"}
SEEDS=${SEEDS:-"1 2 3"}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
expanded=$OUT/points_by_market.txt
: > "$expanded"
while read -r name rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    for m in $MARKETS; do echo "${name}__m$m $rest synthetic_seed=$m" >> "$expanded"; done
done < "$points"
BIN=$BIN OUT=$OUT/runs SEEDS=$SEEDS bash "$here/q_learning_sweep.sh" "$expanded" > "$OUT/by_market.txt"
cat "$OUT/by_market.txt"
# one score per point: the mean over markets x seeds of the finished runs
table=$OUT/table.txt
printf '%-28s %s\n' point "validation Sharpe, mean over markets ($MARKETS) x seeds ($SEEDS) (mean)" > "$table"
while read -r name rest; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    vals=$(for m in $MARKETS; do for s in $SEEDS; do
               grep -o 'greedy Sharpe [-0-9.nan]*' "$OUT/runs/${name}__m$m.seed$s.log" 2>/dev/null |
                   tail -1 | awk '{print $3}'
           done; done | grep -v nan | tr '\n' ' ')
    mean=$(echo "$vals" | awk '{s=0; for (i=1;i<=NF;i++) s+=$i; if (NF) printf "%.2f", s/NF; else print "-"}')
    printf '%-28s %s(%s)\n' "$name" "$vals" "$mean" >> "$table"
done < "$points"
cat "$table"
rc=0
[ $# -gt 0 ] && { BIN=$BIN bash "$here/q_select_and_test.sh" "$table" "$points" "$@" || rc=1; }
exit $rc
