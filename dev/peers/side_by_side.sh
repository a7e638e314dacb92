#!/usr/bin/env bash
# side_by_side.sh FOXHUNT OUTDIR [CONFIGS] — issue 35's side-by-side table in one run:
# foxhunt's PPO update (`FOXHUNT bench --train --device cuda --algos ppo`) and the PyTorch
# peer (torch_ppo_update.py) at the same configurations, then the markdown table
# (side_by_side_table.py) on stdout and in OUTDIR/table.md.
#
# CONFIGS: "spec throughput" (default), or one of them, or throughput-bf16 (foxhunt
# --precision bf16 against the peer's bf16 autocast rows), so that each half fits a 10-minute
# device command; the table is made from whatever OUTDIR holds, so a second call with the
# other half completes it. Environment: PYTHON (python3), REPEATS (5, both sides),
# PEER_ARGS (more peer flags, e.g. "--bf16" or "--compile-mode default"), PEER_TIMEOUT
# (seconds per peer configuration, 480: its JSON keeps every row finished by then).
# Files: OUTDIR/foxhunt_<config>.log, OUTDIR/peer_<config>.{log,json}, OUTDIR/table.md.
set -u
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 FOXHUNT OUTDIR [\"spec throughput\"|spec|throughput]" >&2
    exit 2
fi
foxhunt=$1 outdir=$2 configs=${3:-spec throughput}
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3} repeats=${REPEATS:-5} peer_timeout=${PEER_TIMEOUT:-480}
if [ ! -x "$foxhunt" ]; then
    echo "$0: $foxhunt is not an executable (build foxhunt first: cmake --build build)" >&2
    exit 2
fi
mkdir -p "$outdir" || exit 2

# name -> foxhunt bench flags; the peer's --configs takes the same names
bench_flags() {
    case $1 in
    spec) echo "--episodes 128 --steps 500 --epochs 10 --minibatch 512 --precision fp32" ;;
    throughput) echo "--episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision tf32" ;;
    throughput-bf16) echo "--episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision bf16" ;;
    *) return 1 ;;
    esac
}

status=0
for name in $configs; do
    flags=$(bench_flags "$name") || { echo "$0: unknown configuration '$name'" >&2; exit 2; }
    echo "== foxhunt $name: $foxhunt bench --train --device cuda --algos ppo $flags --repeats $repeats"
    # shellcheck disable=SC2086 # the flags are words
    if ! "$foxhunt" bench --train --device cuda --algos ppo $flags --repeats "$repeats" \
        > "$outdir/foxhunt_$name.log" 2>&1; then
        echo "foxhunt bench failed (exit $?): $outdir/foxhunt_$name.log" >&2
        status=1
    fi
    tail -n 2 "$outdir/foxhunt_$name.log"
    echo "== peer $name: $python $here/torch_ppo_update.py --configs $name --repeats $repeats ${PEER_ARGS:-}"
    # shellcheck disable=SC2086
    peer_config=$name peer_more=
    [ "$name" = throughput-bf16 ] && peer_config=throughput peer_more="--bf16 --formulations compiled+graphed"
    # shellcheck disable=SC2086
    timeout "$peer_timeout" "$python" "$here/torch_ppo_update.py" --configs "$peer_config" \
        --repeats "$repeats" --json "$outdir/peer_$name.json" ${PEER_ARGS:-} $peer_more \
        > "$outdir/peer_$name.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || { echo "peer exited $rc (124: timed out): $outdir/peer_$name.log" >&2; status=1; }
    grep -E "^(torch |peer |$peer_config )" "$outdir/peer_$name.log"
done
echo
"$python" "$here/side_by_side_table.py" "$outdir" | tee "$outdir/table.md"
table_rc=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && [ "$table_rc" -eq 0 ]
