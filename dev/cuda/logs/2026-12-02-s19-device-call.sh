#!/usr/bin/env bash
# session 19 device call: steps given as args
source scripts/device-deps.sh
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export FOXHUNT_CACHE_DIR=/tmp/fh-cache FOXHUNT_SOURCE_DIR=$PWD
R=$OUT/r; mkdir -p $R
save() { tar czf $OUT/results.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
git log --oneline -1 > $R/commit.txt 2>&1
for step in "$@"; do
  t0=$(date +%s)
  case $step in
  tests) timeout 150 build/tests/cuda/test_gpu_update > $R/test_gpu_update.log 2>&1; echo "rc $?" >> $R/test_gpu_update.log
         timeout 100 build/tests/dqn/test_gpu_q_update > $R/test_gpu_q_update.log 2>&1; echo "rc $?" >> $R/test_gpu_q_update.log
         for t in ${MORE_TESTS:-test_gpu_dqn_update test_gpu_curiosity}; do timeout 100 build/tests/dqn/$t > $R/$t.log 2>&1; echo "rc $?" >> $R/$t.log; done ;;
  critic) (cd dev/cuda && make critic_step_fused && ./critic_step_fused && ./critic_step_fused 3 512 1 && ./critic_step_fused 3 512 2; ./critic_step_fused 4 512 1) > $R/critic_step_fused.log 2>&1; echo "rc $?" >> $R/critic_step_fused.log ;;
  ncu_tp) timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip ${SKIP:-1000} --launch-count ${COUNT:-160} build/foxhunt bench --train --device cuda --algos ppo --episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision tf32 --repeats 1 > $R/ncu_tp.csv 2> $R/ncu_tp.err; echo "rc $?" >> $R/ncu_tp.err ;;
  ncu_spec) timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 3000 --launch-count 120 build/foxhunt bench --train --device cuda --algos ppo --episodes 128 --steps 500 --repeats 1 > $R/ncu_spec.csv 2> $R/ncu_spec.err; echo "rc $?" >> $R/ncu_spec.err ;;
  sbs) PEER_TIMEOUT=200 PEER_ARGS="--compile-mode default" timeout 330 bash dev/peers/side_by_side.sh build/foxhunt $R/peer "spec throughput" > $R/side_by_side.log 2>&1; echo "rc $?" >> $R/side_by_side.log ;;
  peer_tp) PEER_TIMEOUT=${PEER_TIMEOUT:-240} PEER_ARGS="--compile-mode default" timeout 290 bash dev/peers/side_by_side.sh build/foxhunt $R/peer throughput > $R/peer_tp.log 2>&1 ;;
  bench) for p in fp32 tf32; do timeout 100 build/foxhunt bench --train --device cuda --algos ppo --episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision $p --repeats 5; done > $R/bench_tp.log 2>&1
         timeout 100 build/foxhunt bench --train --device cuda --algos ppo --episodes 128 --steps 500 --repeats 5 > $R/bench_spec.log 2>&1 ;;
  epi) (cd dev/cuda && make update_epilogues && timeout 200 ./update_epilogues) > $R/update_epilogues.log 2>&1; echo "rc $?" >> $R/update_epilogues.log ;;
  ncu_spec) timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip 3000 --launch-count 120 build/foxhunt bench --train --device cuda --algos ppo --episodes 128 --steps 500 --repeats 1 > $R/ncu_spec.csv 2> $R/ncu_spec.err ;;
  memcheck) timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 build/foxhunt train --device cuda --episodes 64 --steps 128 --iterations 2 --epochs 2 --minibatch 5000 --eval-at-end 0 --out /tmp/fh-um --force > $R/memcheck.log 2>&1; echo "rc $?" >> $R/memcheck.log ;;
  racecheck) timeout 150 env FOXHUNT_BLOCK_SHARED_BARRIERS=1 compute-sanitizer --tool racecheck --error-exitcode 9 build/foxhunt train --device cuda --episodes 64 --steps 128 --iterations 1 --epochs 1 --minibatch 5000 --eval-at-end 0 --out /tmp/fh-ur --force > $R/racecheck.log 2>&1; echo "rc $?" >> $R/racecheck.log ;;
  learn_tp) timeout 200 build/tests/rl/test_learning device=cuda episodes=4096 steps=128 epochs=2 minibatch=16384 precision=tf32 iterations=20 > $R/learn_tp.log 2>&1; echo "rc $?" >> $R/learn_tp.log ;;
  determinism) timeout 150 bash scripts/gpu-determinism.sh build/foxhunt > $R/determinism.log 2>&1; echo "rc $?" >> $R/determinism.log ;;
  bench_q) timeout 100 build/foxhunt bench --train --device cuda --algos pqn --episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision bf16 --repeats 3 > $R/bench_q.log 2>&1 ;;
  ncu_tp_bf16) timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip ${SKIP:-1000} --launch-count ${COUNT:-160} build/foxhunt bench --train --device cuda --algos ppo --episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision bf16 --repeats 1 > $R/ncu_tp_bf16.csv 2> $R/ncu_tp_bf16.err ;;
  ncu_tp_tf32) timeout 150 ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip ${SKIP:-1000} --launch-count ${COUNT:-160} build/foxhunt bench --train --device cuda --algos ppo --episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision tf32 --repeats 1 > $R/ncu_tp_tf32.csv 2> $R/ncu_tp_tf32.err ;;
  *) [ -x "$step" ] && timeout 200 $step > $R/$(basename $step).log 2>&1 ;;
  esac
  echo "$step $(( $(date +%s) - t0 )) s" >> $R/times.txt
  save
done
