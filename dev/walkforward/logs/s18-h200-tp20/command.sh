#!/usr/bin/env bash
# s18 device call 3: test_gpu_update (its regularised case judged against the control),
# the walk-forward of turnover_penalty 2e-3 on the four assets, then issue 35's
# side-by-side at SPEC defaults with what time is left.
source scripts/device-deps.sh
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
timeout 90 build/tests/cuda/test_gpu_update > "$OUT/gpu_update.log" 2>&1
echo "gpu_update rc $? ($(tail -1 "$OUT/gpu_update.log"))"
bash dev/walkforward/variants.sh build .deps/data "$OUT/wf" tp20 --turnover-penalty 2e-3
echo "walkforwards done at ${SECONDS} s"
left=$((565 - SECONDS))
if [ "$left" -gt 90 ]; then
  PEER_TIMEOUT=$((left - 40)) PEER_ARGS="--compile-mode default" REPEATS=5 \
    bash dev/peers/side_by_side.sh build/foxhunt "$OUT/peer" spec
else
  echo "no time left for the peer ($left s)"
fi
