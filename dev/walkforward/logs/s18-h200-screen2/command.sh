#!/usr/bin/env bash
# s18 device call 2: the new regularisers' GPU tests, then their fold-1 validation screen
source scripts/device-deps.sh
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
P=build/tests/cuda/test_gpu_parity
t() { local name=$1; shift; echo "== $name: $*"; timeout 150 "$@" > "$OUT/$name.log" 2>&1; echo "rc $? ($(tail -1 "$OUT/$name.log"))"; }
t parity_ref $P reference 64 64 3
t parity_fast $P fast 128 64 3 100 64 3
t parity_fvr_warp $P fast-vs-reference/warp 301 64 3
t parity_fvr_block $P fast-vs-reference/block 598 64 3
t parity_fvr_lane $P fast-vs-reference/lane 1000 64 3
t gpu_update build/tests/cuda/test_gpu_update
t gpu_q_update build/tests/dqn/test_gpu_q_update
bash dev/walkforward/screen.sh .deps/data build/foxhunt /tmp/screen 'ent=--anneal-ent 1' 'wd01=--weight-decay 0.1' 'wd1=--weight-decay 1' 'noise1=--obs-noise 0.1' 'noise3=--obs-noise 0.3' 2>&1 | tee $OUT/screen.txt
cd /tmp/screen && find . -name '*.log' -o -name validation.csv | tar czf $OUT/screen.tgz -T -
