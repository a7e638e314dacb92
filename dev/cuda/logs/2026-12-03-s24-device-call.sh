#!/usr/bin/env bash
# session 24 device call (issue 35: the padded bf16 first layers): steps given as args; results in
# $OUT/results-$RUN_TAG.tgz
source scripts/device-deps.sh
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
export FOXHUNT_CACHE_DIR=/tmp/fh-cache FOXHUNT_SOURCE_DIR=$PWD
R=$OUT/${RUN_TAG:-r}; mkdir -p $R
save() { tar czf $OUT/results-${RUN_TAG:-r}.tgz -C $OUT ${RUN_TAG:-r}; }
TP="--episodes 4096 --steps 128 --epochs 2 --minibatch 16384"
NCU_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
git log --oneline -1 > $R/commit.txt 2>&1
for step in "$@"; do
  t0=$(date +%s)
  PDL=; case $step in *@0) PDL=0; step=${step%@0} ;; esac  # racecheck@0: FOXHUNT_UPDATE_PDL=0
  case $step in
  build) (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16 2>&1 | grep -E "rror|warning" ; echo "build rc ${PIPESTATUS[0]}") > $R/build.log 2>&1 ;;
  parity_bf16) P=build/tests/cuda/test_gpu_parity
     (timeout 300 $P bf16 128 500 1 1024 500 1 4096 128 1 16384 100 1; echo "rc $?"; timeout 60 $P bf16 critic_pipeline=1 pipeline_first_rows=4096 301 64 1; echo "rc $?"; timeout 100 $P tf32 128 500 1 1024 500 1; echo "rc $?"; timeout 60 $P fast 128 64 1; echo "rc $?") > $R/parity_bf16.log 2>&1 ;;
  gemm_reuse) timeout 100 build/tests/cuda/test_gemm_cache gpu_reuse > $R/gemm_reuse.log 2>&1; echo "rc $?" >> $R/gemm_reuse.log ;;
  bench_collect) for n in "4096 --steps 128" "16384 --steps 500"; do for p in fp32 tf32 bf16; do timeout 150 build/foxhunt bench --device cuda --kernel fast --episodes $n --precision $p --repeats 5 | grep -v "^$"; done; done > $R/bench_collect.log 2>&1 ;;
  plan) for p in fp32 tf32 bf16; do build/foxhunt info --device cuda --precision $p; done > $R/plan.log 2>&1 ;;
  update) timeout 200 build/tests/cuda/test_gpu_update > $R/test_gpu_update.log 2>&1; echo "rc $?" >> $R/test_gpu_update.log ;;
  qtests) for t in test_gpu_q_update test_gpu_dqn_update test_gpu_curiosity; do timeout 100 build/tests/dqn/$t > $R/$t.log 2>&1; echo "rc $?" >> $R/$t.log; done ;;
  bench) for p in bf16 tf32 fp32; do timeout 100 build/foxhunt bench --train --device cuda --algos ppo $TP --precision $p --repeats 5; done > $R/bench_tp.log 2>&1
         timeout 100 build/foxhunt bench --train --device cuda --algos ppo --episodes 128 --steps 500 --repeats 5 > $R/bench_spec.log 2>&1
         timeout 100 build/foxhunt bench --train --device cuda --algos ppo --episodes 128 --steps 500 --precision bf16 --repeats 5 > $R/bench_spec_bf16.log 2>&1 ;;
  learn_bf16) timeout 240 build/tests/rl/test_learning device=cuda episodes=4096 steps=128 epochs=2 minibatch=16384 precision=bf16 iterations=20 > $R/learn_tp_bf16.log 2>&1; echo "rc $?" >> $R/learn_tp_bf16.log ;;
  memcheck) timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/foxhunt train --device cuda --precision bf16 --episodes 64 --steps 128 --iterations 2 --epochs 2 --minibatch 5000 --eval-at-end 0 --out /tmp/fh-um --force > $R/memcheck_bf16.log 2>&1; echo "rc $?" >> $R/memcheck_bf16.log ;;
  racecheck) { env FOXHUNT_GEMM_TUNE=0 FOXHUNT_BLOCK_SHARED_BARRIERS=1 timeout ${RC_TIMEOUT:-240} compute-sanitizer --tool racecheck --print-limit 1000000 build/foxhunt train --device cuda --precision bf16 --episodes 80 --steps 128 --iterations 1 --epochs 1 --minibatch 8192 --eval-at-end 0 --out /tmp/fh-ur --force > $R/racecheck_bf16_8192.log 2>&1; echo "rc $?"; python3 scripts/racecheck_ours.py $R/racecheck_bf16_8192.log; echo "verdict rc $?"; } > $R/racecheck_verdict.log 2>&1; gzip $R/racecheck_bf16_8192.log ;;
  memcheck16) timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/foxhunt train --device cuda --precision bf16 --episodes 80 --steps 128 --iterations 2 --epochs 2 --minibatch 8192 --eval-at-end 0 --out /tmp/fh-um16 --force > $R/memcheck_bf16_8192.log 2>&1; echo "rc $?" >> $R/memcheck_bf16_8192.log ;;
  determinism) DETERMINISM_ARGS="--precision bf16" timeout 200 bash scripts/gpu-determinism.sh build/foxhunt > $R/determinism_bf16.log 2>&1; echo "rc $?" >> $R/determinism_bf16.log ;;
  memcheck32) timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/foxhunt train --device cuda --episodes 64 --steps 128 --iterations 2 --epochs 2 --minibatch 1000 --eval-at-end 0 --out /tmp/fh-um32 --force > $R/memcheck_fp32.log 2>&1; echo "rc $?" >> $R/memcheck_fp32.log ;;
  racecheck32) timeout ${RC_TIMEOUT:-240} env FOXHUNT_UPDATE_PDL=${PDL:-} FOXHUNT_GEMM_TUNE=0 FOXHUNT_BLOCK_SHARED_BARRIERS=1 compute-sanitizer --tool racecheck --error-exitcode 9 build/foxhunt train --device cuda --episodes 32 --steps 64 --iterations 1 --epochs 1 --minibatch 1000 --eval-at-end 0 --out /tmp/fh-ur32 --force > $R/racecheck_fp32_pdl${PDL:-auto}.log 2>&1; echo "rc $?" >> $R/racecheck_fp32_pdl${PDL:-auto}.log ;;
  racecheck_q) timeout ${RC_TIMEOUT:-240} env FOXHUNT_UPDATE_PDL=${PDL:-} FOXHUNT_GEMM_TUNE=0 compute-sanitizer --tool racecheck --error-exitcode 9 build/foxhunt train --device cuda --algo pqn --episodes 32 --steps 64 --iterations 1 --epochs 1 --minibatch 1000 --eval-at-end 0 --out /tmp/fh-urq --force > $R/racecheck_pqn_pdl${PDL:-auto}.log 2>&1; echo "rc $?" >> $R/racecheck_pqn_pdl${PDL:-auto}.log ;;
  qbench) for pdl in 0 ""; do echo "== FOXHUNT_UPDATE_PDL=${pdl:-auto}"; FOXHUNT_UPDATE_PDL=$pdl timeout 150 build/foxhunt bench --train --device cuda --algos pqn,dqn --kernel fast --episodes 128 --steps 500 --repeats 5; done > $R/bench_q_pdl.log 2>&1 ;;
  kernel_sources) build/tests/cuda/test_kernel_sources > $R/test_kernel_sources.log 2>&1; echo "rc $?" >> $R/test_kernel_sources.log ;;
  determinism32) timeout 200 bash scripts/gpu-determinism.sh build/foxhunt > $R/determinism_fp32.log 2>&1; echo "rc $?" >> $R/determinism_fp32.log ;;
  ncu_bf16) timeout 200 ncu --clock-control none --metrics $NCU_METRICS --csv --launch-skip ${SKIP:-1000} --launch-count ${COUNT:-160} build/foxhunt bench --train --device cuda --algos ppo $TP --precision bf16 --repeats 1 > $R/ncu_tp_bf16.csv 2> $R/ncu_tp_bf16.err; echo "rc $?" >> $R/ncu_tp_bf16.err ;;
  ncu_warm) timeout 200 ncu --clock-control none --cache-control none --metrics $NCU_METRICS --csv --launch-skip ${SKIP:-1000} --launch-count ${COUNT:-160} build/foxhunt bench --train --device cuda --algos ppo $TP --precision ${NCU_PRECISION:-bf16} --repeats 1 > $R/ncu_tp_warm_${NCU_PRECISION:-bf16}.csv 2> $R/ncu_tp_warm.err; echo "rc $?" >> $R/ncu_tp_warm.err ;;
  lab) (cd dev/cuda && make ${LAB:-bias_grad_bf16} > /dev/null && ./${LAB:-bias_grad_bf16}) > $R/${LAB:-bias_grad_bf16}.log 2>&1; echo "rc $?" >> $R/${LAB:-bias_grad_bf16}.log ;;
  lab_ncu) (cd dev/cuda && make ${LAB:-bias_grad_bf16} > /dev/null && timeout 300 ncu --clock-control none --cache-control none --metrics $NCU_METRICS --csv ./${LAB:-bias_grad_bf16} -1 --quick) > $R/${LAB:-bias_grad_bf16}_ncu.csv 2> $R/${LAB:-bias_grad_bf16}_ncu.err; echo "rc $?" >> $R/${LAB:-bias_grad_bf16}_ncu.err ;;
  ab) # .deps/old-tree.tar (the commit before the change, `git archive`) built into build-old,
      # then the throughput configuration's training bench, old and new alternating
      mkdir -p /tmp/old && tar xf .deps/old-tree.tar -C /tmp/old && (cmake -S /tmp/old -B build-old -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build-old -j16 --target foxhunt 2>&1 | grep -E "rror" ; echo "build-old rc ${PIPESTATUS[0]}") > $R/build_old.log 2>&1
      for r in 1 2 3; do for cp in ${AB_SET:-tp:bf16 spec:bf16 spec:fp32 tp:tf32}; do cfg="--episodes 128 --steps 500"; [ ${cp%%:*} = tp ] && cfg="$TP"; for side in old new; do fh=build/foxhunt; [ $side = old ] && fh=build-old/foxhunt; FOXHUNT_CACHE_DIR=/tmp/fh-cache-$side timeout 100 $fh bench --train --device cuda --algos ppo $cfg --precision ${cp#*:} --repeats 5 | grep "^ppo" | sed "s/^/$side r$r /"; done; done; done > $R/ab.log 2>&1 ;;
  identical) # the same seeded training by build-old and build: checkpoints bit for bit (needs ab's build-old;
      # no algorithm timing: two processes' timed choices of the collection's matmuls may differ)
      for pr in fp32 bf16; do for mb in 512 8192; do for side in old new; do fh=build/foxhunt; [ $side = old ] && fh=build-old/foxhunt; FOXHUNT_GEMM_TUNE=0 FOXHUNT_CACHE_DIR=/tmp/fh-cache-id timeout 100 $fh train --device cuda --precision $pr --episodes 64 --steps 256 --iterations 2 --epochs 2 --minibatch $mb --eval-at-end 0 --out /tmp/fh-id-$side-$pr-$mb --force > /dev/null 2>&1 || echo "$side $pr $mb train failed"; done; echo "$pr minibatch $mb: $(python3 scripts/compare_checkpoints.py /tmp/fh-id-old-$pr-$mb/final.safetensors /tmp/fh-id-new-$pr-$mb/final.safetensors)"; done; done > $R/identical.log 2>&1 ;;
  ncu_tf32) timeout 200 ncu --clock-control none --metrics $NCU_METRICS --csv --launch-skip ${SKIP:-1000} --launch-count ${COUNT:-160} build/foxhunt bench --train --device cuda --algos ppo $TP --precision tf32 --repeats 1 > $R/ncu_tp_tf32.csv 2> $R/ncu_tp_tf32.err; echo "rc $?" >> $R/ncu_tp_tf32.err ;;
  sbs) PEER_TIMEOUT=${PEER_TIMEOUT:-200} PEER_ARGS="--compile-mode default --formulations compiled+graphed" timeout 500 bash dev/peers/side_by_side.sh build/foxhunt $R/peer "${SBS:-spec throughput throughput-bf16}" > $R/side_by_side.log 2>&1; echo "rc $?" >> $R/side_by_side.log ;;
  gc) OUT=$R/gc BUILD=build bash scripts/gpu-check.sh ${GC_STEPS:-update_racecheck learn} > $R/gpu-check.log 2>&1; echo "rc $?" >> $R/gpu-check.log ;;
  *) [ -x "$step" ] && timeout 200 $step > $R/$(basename $step).log 2>&1 ;;
  esac
  echo "$step $(( $(date +%s) - t0 )) s" >> $R/times.txt
  save
done
