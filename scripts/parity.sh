#!/usr/bin/env bash
# parity.sh OLD_FOXHUNT NEW_FOXHUNT DEVICE [ALGOS] — two builds train the same runs bit for
# bit (issue 33: the training wing rebuilt without changing a number). For each algorithm
# (default "ppo dqn pqn") both binaries train 3 iterations from seed 7 on the synthetic
# market on DEVICE (cpu or cuda), writing a checkpoint at iteration 2; then every tensor
# of checkpoint_000002 and final must be identical (scripts/compare_checkpoints.py) and
# every metrics.csv row equal in its non-timing columns, matched by name
# (scripts/compare_metrics.py: a Q learner's columns were renamed, it maps them).
# Exit 1 on the first difference of any run. Build OLD from a commit with
#   git worktree add /tmp/old COMMIT && cmake -S /tmp/old -B /tmp/old/build && cmake --build /tmp/old/build
set -u
OLD=$1 NEW=$2 DEVICE=$3
ALGOS=${4:-ppo dqn pqn}
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d /tmp/fh-parity.XXXXXX)
rc=0
for algo in $ALGOS; do
  args=(train --algo "$algo" --device "$DEVICE" --seed 7 --synthetic-bars 20000 --episodes 64
        --steps 64 --iterations 3 --checkpoint-every 2 --eval-at-end 0 --threads 2)
  case $algo in
    dqn) args+=(--minibatch 256 --learning-starts 2048 --replay-ratio 0.25 --target-update-every 50) ;;
    pqn) args+=(--minibatch 1024 --epochs 2) ;;
    ppo) args+=(--minibatch 1024 --epochs 2) ;;
  esac
  for side in old new; do
    bin=$OLD; [ $side = new ] && bin=$NEW
    if ! "$bin" "${args[@]}" --out "$d/$algo-$side" >"$d/$algo-$side.log" 2>&1; then
      echo "$algo: the $side build failed:"; tail -5 "$d/$algo-$side.log"; rc=1; continue 2
    fi
  done
  for ck in checkpoint_000002 final; do
    printf '%s %s: ' "$algo" "$ck"
    python3 "$here/compare_checkpoints.py" "$d/$algo-old/$ck.safetensors" "$d/$algo-new/$ck.safetensors" || rc=1
  done
  printf '%s metrics: ' "$algo"
  python3 "$here/compare_metrics.py" "$d/$algo-old/metrics.csv" "$d/$algo-new/metrics.csv" || rc=1
done
[ $rc = 0 ] && echo "parity: every run identical ($ALGOS on $DEVICE)" && rm -rf "$d"
exit $rc
