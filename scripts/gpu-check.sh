#!/usr/bin/env bash
# gpu-check.sh — the whole GPU check as one command on a machine with an NVIDIA GPU:
# GPU facts, the kernel module cache, CPU<->GPU parity (poisoned outputs included),
# the device-code test, compute-sanitizer memcheck and racecheck on a small launch,
# the collection benchmark, and a short training run on the GPU; a table last.
#
#   bash scripts/gpu-check.sh [STEP...]     (default: every step; `part1` and `part2`
#                                            stand for the default steps in two halves
#                                            that each fit a 10-minute limit on an H200)
#   steps: info cache actor_table parity parity_fast parity_map parity_fvr tf32 bf16 device_env memcheck racecheck synccheck
#          bench bench_tf32 train learn (bf16: the collection's bf16 critic against fp32,
#          test_gpu_parity's bf16 mode); not in the default set: profile (ncu on the rollout
#          kernel), clocks (the rollout's cycle counters per part of a step), factor (the
#          first critic layer as a matmul and factored through the market), layers (ncu:
#          every kernel's time in one collection), compare (OLD_TREE's build against this
#          one, side by side: bench N 128/1024/16384 fp32 and 16384 TF32, alternating) and
#          dev (dev/cuda's programs); the update on the GPU (issue 17): update (its
#          parity test), update_memcheck, update_racecheck (a small training run under
#          compute-sanitizer), update_profile (ncu: each kernel's time in a stretch of
#          update steps), bench_train (whole iterations, GPU and CPU side by side, and
#          the throughput configuration), train_gpu (a default training run), determinism
#          (the same seed twice, a resume, CPU <-> GPU resumes; checkpoints compared by
#          scripts/compare_checkpoints.py) and learn_cpu (the learning test's seed 1 on the
#          CPU, beside learn's on the GPU), learn_throughput (the learning test under the
#          throughput configuration: N 4096 x L 128, 2 epochs of minibatch 16384, bf16 or
#          LEARN_TP_PRECISION) and
#          update_cli (`foxhunt update --device cuda` through tests/rl/test_update);
#          walk-forward (issue 20): walkforward_spy, walkforward_btc, walkforward_synth
#          (configs/walkforward.ini on ../shared/data's SPY daily and BTC hourly bars and
#          on the synthetic market; every run directory lands under OUT); DQN/PQN
#          (issue 18): dqn_parity (the DQN kernel against the CPU collection), train_pqn
#          and train_dqn (quickstart budgets with the collection on the GPU), q_update
#          and q_curiosity (the device update and curiosity fit against the CPU's),
#          q_resume (test_dqn_resume's GPU part), bench_q (bench --train of ppo, pqn and
#          dqn in one run), learn_pqn and learn_dqn (the learning test on the GPU),
#          dqn_stepped (the collection's stepped mapping against the plain kernel) and
#          bench_q_map (PQN training iterations with the collection's fast and reference
#          kernels side by side at N 64, 512, 4096); issue 23: learn_sweep (the
#          learning test with configs/ppo_sweep.ini, the sweep's winner, on the GPU, 5 seeds), ablation
#          (dev/sweeps/ablation_ppo.sh: each of ppo_sweep.ini's settings put back, 5 seeds,
#          validation and test), confirm_fresh (ppo_sweep.ini against its N 2048 variant on
#          synthetic markets 7 and 8, which no run had touched), walkforward_sweep_spy and walkforward_sweep_btc
#          (configs/walkforward_recommended.ini), learn_recommended (the learning test
#          with configs/ppo_recommended.ini, 5 seeds; LEARN_REC_ARGS e.g. first_seed=6),
#          q_sweep (dev/sweeps/q_learning_sweep.sh over Q_POINTS on the GPU), q_select (the
#          best PQN and DQN points of sweeps 5 on (tables in dev/sweeps/logs/s13-sweep*, and this run's) by validation, then the learning test); issue 21: python_gpu (scripts/python_gpu.sh:
#          the Python tests with the GPU and PyTorch, the DLPack timing, the examples);
#          q_folds (dev/sweeps/q_market_folds.sh over Q_FOLD_POINTS, default sweep 11:
#          points scored on synthetic markets 7 and 8, the best PQN point then the
#          learning test on the default market's test split)
#
# Uses BUILD (default build-gpu: a Release build, made here if missing) and writes
# logs under OUT (default /tmp/foxhunt-gpu-check), archived after every step into
# OUT/0-logs.tar.gz. The default steps take about 15 minutes on an H200 (parity 2.5,
# racecheck 4, the learning test 3.5 of them): under a 10-minute limit per command, run
# `part1` and `part2` in two. Debian packages in .deps/ (cJSON,
# inih, OpenBLAS; `apt-get download` them beside a prebuilt tree) are unpacked into
# /opt/deps and put on the library path when the machine lacks them.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/foxhunt-gpu-check}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
export FOXHUNT_CACHE_DIR=${FOXHUNT_CACHE_DIR:-/tmp/foxhunt-cache}
export FOXHUNT_SOURCE_DIR=$(pwd)

. scripts/device-deps.sh # cJSON, inih, OpenBLAS from .deps/*.deb where the machine lacks them
if [ ! -x "$BUILD/foxhunt" ]; then
  echo "== building $BUILD =="
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
FH="$BUILD/foxhunt"
# the sanitizers' launches, SETTINGS/MAPPING: the fast path's mapping MAPPING with
# overrides SETTINGS (the table's environment names, joined by ','; `foxhunt info` lists
# them) — every mapping the plan can choose: the pair kernel is the warp mapping's
# choice at these N, FOXHUNT_WARP_BOOK=0 its plain kernel; one entry forces the pipeline
# and the factored first layer, which these small launches would not use. The actor
# table (off by default at these N) is forced on for all (SANITIZE_SETTINGS) but the one
# entry that turns it off.
SANITIZE_KERNELS=${KERNELS:-FOXHUNT_WARP_EPISODES=1/block FOXHUNT_WARP_EPISODES=1/warp FOXHUNT_WARP_EPISODES=1/lane FOXHUNT_WARP_EPISODES=2/warp FOXHUNT_WARP_EPISODES=2,FOXHUNT_WARP_BOOK=0/warp FOXHUNT_CRITIC_PIPELINE=1,FOXHUNT_CRITIC_FACTOR=1,FOXHUNT_CRITIC_PIPELINE_FIRST=4096/warp FOXHUNT_ACTOR_FACTOR=0,FOXHUNT_WARP_EPISODES=2,FOXHUNT_WARP_BOOK=0/warp}
SANITIZE_SETTINGS=${SANITIZE_SETTINGS:-FOXHUNT_ACTOR_FACTOR=1}
PART1="info cache actor_table parity_fast parity_map parity_fvr tf32 bf16 device_env memcheck synccheck bench bench_tf32 train"
PART2="info parity racecheck learn"
STEPS=${*:-$PART1 parity racecheck learn}
STEPS=${STEPS//part1/$PART1}
STEPS=${STEPS//part2/$PART2}
ROWS=()

run_step() { # name, command...
  local name=$1; shift
  local t0=$(date +%s.%N)
  echo "== $name: $* =="
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  local t1=$(date +%s.%N)
  tail -n 25 "$OUT/$name.log"
  ROWS+=("$(printf '%-12s rc=%-3s %7.1fs' "$name" "$rc" "$(awk "BEGIN{print $t1 - $t0}")")")
  # every log so far in one archive, first by name: a device tool that brings back only a
  # few files, or a run cut off by a time limit, still returns all finished steps' logs
  printf '%s\n' "${ROWS[@]}" >"$OUT/summary.txt"
  tar czf "$OUT/0-logs.tar.gz.tmp" -C "$OUT" --exclude '0-logs.tar.gz*' . 2>/dev/null &&
    mv "$OUT/0-logs.tar.gz.tmp" "$OUT/0-logs.tar.gz"
}

sanitize() { # TOOL EPISODES [VAR=VALUE...]: compute-sanitizer on each of SANITIZE_KERNELS
  local tool=$1 episodes=$2 k settings
  shift 2
  for k in $SANITIZE_KERNELS; do
    echo "== $k"
    settings=${k%%/*}
    env "$@" ${settings//,/ } compute-sanitizer --tool "$tool" --error-exitcode 9 "$FH" collect \
      --device cuda --kernel "fast/${k#*/}" --episodes "$episodes" --steps 12 \
      --out "/tmp/fh-$tool.safetensors" || return 9
  done
}

# the real bars: ../shared/data beside the project, else a copy in .deps/data (carried)
DATA_DIR=${DATA_DIR:-../shared/data}
[ -f "$DATA_DIR/spy_daily.csv" ] || DATA_DIR=.deps/data
walkforward() { # NAME FLAGS...: configs/walkforward.ini; run directories (checkpoints of
  # megabytes each) stay in /tmp, the tables, JSON and reports come back under OUT
  local name=$1 dir=/tmp/fh-walkforward-$1
  shift
  "$FH" walkforward --config "${WF_CONFIG:-configs/walkforward.ini}" "$@" --out "$dir" --force || return $?
  mkdir -p "$OUT/walkforward-$name"
  cp "$dir"/walkforward.md "$dir"/walkforward.json "$dir"/eval_seed*.json "$dir"/report_seed*.html \
    "$OUT/walkforward-$name/" 2>/dev/null
  gzip -c "$dir"/returns_seed1.csv >"$OUT/walkforward-$name/returns_seed1.csv.gz"
  cat "$dir/walkforward.md"
}

for step in $STEPS; do
  case $step in
    info) run_step info bash -c "nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv; $FH info --device cuda" ;;
    cache) rm -rf "$FOXHUNT_CACHE_DIR"
           run_step cache bash -c "$FH collect --device cuda --episodes 64 --steps 8 --out /tmp/fh-c1.safetensors && $FH collect --device cuda --episodes 64 --steps 8 --out /tmp/fh-c2.safetensors && ls -la $FOXHUNT_CACHE_DIR" ;;
    parity) run_step parity "$BUILD/tests/cuda/test_gpu_parity" reference ;;
    parity_fast) run_step parity_fast "$BUILD/tests/cuda/test_gpu_parity" fast ${PARITY_FAST_CASES:-128 64 2 100 64 2 128 500 2 100 500 2} ;;
    # every mapping and critic variant the plan can choose, overrides passed as values
    parity_map) P="$BUILD/tests/cuda/test_gpu_parity"
                run_step parity_map bash -c "$P fast/warp 128 64 1 && $P fast-vs-reference/warp 301 64 1 && $P fast/warp warp_book=0 128 64 1 && $P fast-vs-reference/warp warp_book=0 1000 64 1 && $P fast/block 200 64 1 && $P fast-vs-reference/block 598 64 1 && $P fast/lane 200 64 1 && $P fast-vs-reference/lane 1000 64 1 && $P fast-vs-reference/warp 1024 100 1 && $P fast-vs-reference/warp warp_episodes=2 1024 100 1 && $P fast-vs-reference/warp warp_episodes=2 301 64 1 && $P fast-vs-reference/warp warp_episodes=2 warp_book=0 1001 64 1 && $P fast/warp warp_episodes=2 129 64 1 && $P fast-vs-reference critic_factor=1 100 64 1 && $P fast-vs-reference critic_factor=0 128 500 1 && $P fast-vs-reference critic_pipeline=1 1024 100 1 && $P fast-vs-reference critic_pipeline=1 pipeline_first_rows=4096 301 64 1 && $P fast-vs-reference critic_pipeline=1 pipeline_first_rows=4096 critic_factor=0 301 64 1 && $P fast-vs-reference critic_pipeline=0 1024 100 1 && $P fast-vs-reference 64 1000 1" ;;
    # the actor table off against on, every mapping: all outputs bit-identical
    actor_table) P="$BUILD/tests/cuda/test_gpu_parity"
                 run_step actor_table bash -c "$P actor-table/block 200 64 1 && $P actor-table/warp 128 64 1 && $P actor-table/warp warp_episodes=2 129 64 1 && $P actor-table/warp warp_book=0 301 64 1 && $P actor-table/warp warp_episodes=2 warp_book=0 1001 100 1 && $P actor-table/lane 200 64 1 && $P actor-table 128 500 1 && $P actor-table 1024 500 1 && $P actor-table 16384 64 1" ;;
    parity_fvr) run_step parity_fvr "$BUILD/tests/cuda/test_gpu_parity" fast-vs-reference 128 500 1 100 500 1 16384 64 1 ;;
    tf32) run_step tf32 "$BUILD/tests/cuda/test_gpu_parity" tf32 128 500 1 1024 500 1 16384 100 1 ;;
    # the bf16 batched critic against fp32 (session 23), and through the pipeline without the factor
    bf16) P="$BUILD/tests/cuda/test_gpu_parity"
          run_step bf16 bash -c "$P bf16 128 500 1 1024 500 1 4096 128 1 16384 100 1 && $P bf16 critic_pipeline=1 pipeline_first_rows=4096 301 64 1" ;;
    bench_tf32) run_step bench_tf32 "$FH" bench --device cuda --episodes ${BENCH_EPISODES:-128,1024,16384} --steps 500 --kernel fast --precision tf32 --repeats ${BENCH_REPEATS:-5} --json "$OUT/bench_tf32.json" ;;
    device_env) run_step device_env "$BUILD/tests/env/test_nvrtc_common" ;;
    memcheck) run_step memcheck sanitize memcheck 41 $SANITIZE_SETTINGS ;;
    synccheck) run_step synccheck sanitize synccheck 301 $SANITIZE_SETTINGS ;;
    # racecheck: the block mapping in its racecheck build (FOXHUNT_BLOCK_SHARED_BARRIERS=1;
    # kernels/fast_layout.h and dev/cuda/README.md say why)
    # and FOXHUNT_GEMM_TUNE=0: under racecheck a process that times cublasLt's candidates
    # (a fresh algorithm file) exits with an error and no message (session 22: timing
    # off, or a warm file, and it runs; memcheck times them unharmed)
    racecheck) run_step racecheck sanitize racecheck 41 FOXHUNT_BLOCK_SHARED_BARRIERS=1 FOXHUNT_GEMM_TUNE=0 $SANITIZE_SETTINGS ;;
    bench) run_step bench "$FH" bench --device cuda --episodes ${BENCH_EPISODES:-128,1024,16384} --steps 500 --kernel ${BENCH_KERNEL:-both} --repeats ${BENCH_REPEATS:-5} --json "$OUT/bench.json" ;;
    train) run_step train "$FH" train --device cuda --kernel ${KERNEL:-fast} ${TRAIN_FLAGS:---iterations 2} --out /tmp/fh-gpu-train --force ;;
    learn) run_step learn "$BUILD/tests/rl/test_learning" device=cuda ${LEARN_ARGS:-} ;;
    clocks) run_step clocks env FOXHUNT_ROLLOUT_CLOCKS=1 "$FH" bench --device cuda --episodes ${CLOCK_EPISODES:-128,1024} --steps 500 --kernel ${CLOCK_KERNEL:-fast/warp,fast/block} --repeats 3 --json "$OUT/clocks.json" ;;
    compare) # OLD_TREE (a `git archive` of the commit before, built into build-old) against
             # this tree, alternating, ROUNDS rounds; the medians are in the logs
             [ -n "${OLD_TREE:-}" ] || { echo "compare: set OLD_TREE"; exit 2; }
             if [ ! -x build-old/foxhunt ]; then
               cmake -S "$OLD_TREE" -B build-old -DCMAKE_BUILD_TYPE=Release >"$OUT/build-old.log" 2>&1 &&
                 cmake --build build-old -j "$(nproc)" --target foxhunt >>"$OUT/build-old.log" 2>&1 || { tail -30 "$OUT/build-old.log"; exit 1; }
             fi
             run_step compare bash -c 'for r in $(seq ${ROUNDS:-3}); do for side in old new; do fh=build-old/foxhunt; [ $side = new ] && fh='"$FH"'; FOXHUNT_CACHE_DIR=/tmp/fh-cache-$side $fh bench --device cuda --episodes ${COMPARE_EPISODES:-128,1024,16384} --steps 500 --kernel fast --repeats ${BENCH_REPEATS:-5} | sed "s/^/$side r$r fp32 /" | grep " cuda "; FOXHUNT_CACHE_DIR=/tmp/fh-cache-$side $fh bench --device cuda --episodes 16384 --steps 500 --kernel fast --precision tf32 --repeats ${BENCH_REPEATS:-5} | sed "s/^/$side r$r tf32 /" | grep " cuda "; done; done' ;;
    dev) run_step dev bash -c 'make -C dev/cuda >/dev/null && for p in dev/cuda/*.cu; do b=dev/cuda/$(basename $p .cu); [ -x $b ] && echo "== $b" && $b; done' ;;
    factor) # the first critic layer as a matmul (0) and factored through the market (1), side by side
            # (or any FACTOR_VARIANTS: environment settings, one variant per word, settings
            # within a variant joined by ':')
            run_step factor bash -c 'for p in ${FACTOR_PRECISIONS:-fp32 tf32}; do for n in ${FACTOR_EPISODES:-128 1024 16384}; do for v in ${FACTOR_VARIANTS:-FOXHUNT_CRITIC_FACTOR=0 FOXHUNT_CRITIC_FACTOR=1}; do echo "$p $v N=$n: $(env ${v//:/ } '"$FH"' bench --device cuda --episodes $n --steps 500 --kernel fast --precision $p --repeats ${BENCH_REPEATS:-5} | grep "^cuda")"; done; done; done' ;;
    layers) # each kernel's device time in one collection (ncu), the critic's layers among them
            run_step layers bash -c 'for v in ${LAYERS_FACTOR:-0 1}; do echo "== FOXHUNT_CRITIC_FACTOR=$v"; FOXHUNT_CRITIC_FACTOR=$v ncu --clock-control none --metrics gpu__time_duration.sum --csv '"$FH"' collect --device cuda --kernel fast --episodes ${LAYERS_EPISODES:-1024} --steps 500 --out /tmp/fh-l.safetensors || exit 1; done' ;;
    profile) run_step profile ncu --clock-control none -k ${PROFILE_KERNEL:-ppo_rollout_fast_kernel} -c 1 \
               --section WarpStateStats --section SchedulerStats --section SourceCounters \
               --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis \
               --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
               "$FH" collect --device cuda --kernel fast --episodes ${PROFILE_EPISODES:-128} --steps 500 --out /tmp/fh-p.safetensors ;;
    update) run_step update "$BUILD/tests/cuda/test_gpu_update" ;;
    # the update under the sanitizers: fp32 at a small minibatch with a tail, then bf16 at
    # 8,192 rows (the bf16 collection, and bias_grad_bf16_wide_kernel: update_plan.h)
    update_memcheck) run_step update_memcheck bash -c "compute-sanitizer --tool memcheck --error-exitcode 9 $FH train --device cuda --episodes 16 --steps 64 --iterations 2 --epochs 2 --minibatch 200 --out /tmp/fh-um --force && compute-sanitizer --tool memcheck --error-exitcode 9 $FH train --device cuda --precision bf16 --episodes 80 --steps 128 --iterations 1 --epochs 1 --minibatch 8192 --eval-at-end 0 --out /tmp/fh-um16 --force" ;;
    # bf16 at 8,192 rows runs cuBLASLt's Hopper nvjet kernels, in which racecheck reports
    # hazards of its own: that run passes when none is in our kernels (racecheck_ours.py)
    update_racecheck) run_step update_racecheck env FOXHUNT_BLOCK_SHARED_BARRIERS=1 FOXHUNT_GEMM_TUNE=0 bash -c "compute-sanitizer --tool racecheck --error-exitcode 9 $FH train --device cuda --episodes 16 --steps 64 --iterations 2 --epochs 2 --minibatch 200 --out /tmp/fh-ur --force && { compute-sanitizer --tool racecheck --print-limit 1000000 $FH train --device cuda --precision bf16 --episodes 80 --steps 128 --iterations 1 --epochs 1 --minibatch 8192 --eval-at-end 0 --out /tmp/fh-ur16 --force > $OUT/update_racecheck_bf16.log 2>&1; rc=\$?; python3 scripts/racecheck_ours.py $OUT/update_racecheck_bf16.log && [ \$rc = 0 ]; }" ;;
    bench_train) run_step bench_train bash -c "rc=0; $FH bench --device cuda --episodes 4096 --steps 128 --kernel fast --precision tf32 --repeats 3 || rc=1; $FH bench --train --device auto --episodes 128 --steps 500 --repeats ${TRAIN_REPEATS:-5} --cpu-max-samples ${TRAIN_CPU_MAX:-64000} || rc=1; for p in bf16 tf32 fp32; do $FH bench --train --device cuda --episodes 4096 --steps 128 --epochs 2 --minibatch 16384 --precision \$p --repeats ${TRAIN_REPEATS:-5} || rc=1; done; exit \$rc" ;;
    determinism) run_step determinism bash scripts/gpu-determinism.sh "$FH" ;;
    learn_throughput) run_step learn_throughput "$BUILD/tests/rl/test_learning" device=cuda episodes=4096 steps=128 epochs=2 minibatch=16384 precision=${LEARN_TP_PRECISION:-bf16} iterations=${LEARN_TP_ITERATIONS:-40} ${LEARN_TP_ARGS:-} ;;
    update_cli) run_step update_cli "$BUILD/tests/rl/test_update" ;;
    learn_cpu) run_step learn_cpu "$BUILD/tests/rl/test_learning" device=cpu seeds=1 ;;
    update_profile) run_step update_profile ncu --clock-control none --metrics gpu__time_duration.sum --csv --launch-skip ${PROFILE_SKIP:-3000} --launch-count ${PROFILE_COUNT:-120} "$FH" bench --train --device cuda --episodes 128 --steps 500 --repeats 1 ;;
    train_gpu) run_step train_gpu "$FH" train --device cuda ${TRAIN_GPU_FLAGS:---iterations 20} --out /tmp/fh-gpu-train2 --force ;;
    dqn_parity) run_step dqn_parity "$BUILD/tests/dqn/test_dqn_parity" ;;
    train_pqn) run_step train_pqn "$FH" train --algo pqn --device cuda --config configs/quickstart.ini --out /tmp/fh-gpu-pqn --force ;;
    q_update) run_step q_update "$BUILD/tests/dqn/test_gpu_q_update"
              run_step q_update_dqn "$BUILD/tests/dqn/test_gpu_dqn_update" ;;
    q_curiosity) run_step q_curiosity "$BUILD/tests/dqn/test_gpu_curiosity" ;;
    q_resume) run_step q_resume "$BUILD/tests/dqn/test_dqn_resume" ;;
    # issue 18: PPO, PQN and DQN training throughput side by side, one run, same N x L
    bench_q) run_step bench_q "$FH" bench --train --device cuda --algos ppo,pqn,dqn --episodes ${BENCH_Q_EPISODES:-4096} --steps ${BENCH_Q_STEPS:-128} --epochs 2 --minibatch ${BENCH_Q_MINIBATCH:-16384} --replay-ratio ${BENCH_Q_RR:-0.00390625} --precision ${BENCH_Q_PRECISION:-tf32} --repeats ${BENCH_Q_REPEATS:-3} ;;
    dqn_stepped) run_step dqn_stepped "$BUILD/tests/cuda/test_dqn_stepped" ;;
    bench_q_map) run_step bench_q_map "$FH" bench --train --device cuda --algos pqn --kernel both --episodes ${BENCH_MAP_EPISODES:-64,512,4096} --steps 128 --epochs 2 --minibatch 8192 --precision tf32 --repeats ${BENCH_Q_REPEATS:-3} ;;
    side_by_side) run_step side_by_side env FH="$FH" OUT="$OUT/side_by_side" DEVICE=cuda SPY="$DATA_DIR/spy_daily.csv" bash scripts/side_by_side.sh ;;
    learn_sweep) run_step learn_sweep "$BUILD/tests/rl/test_learning" config=ppo_sweep.ini device=cuda seeds=5 ;;
    learn_pqn) run_step learn_pqn "$BUILD/tests/rl/test_learning" config=pqn.ini device=cuda ${LEARN_Q_ARGS:-} ;;
    learn_dqn) run_step learn_dqn "$BUILD/tests/rl/test_learning" config=dqn.ini device=cuda ${LEARN_Q_ARGS:-} ;;
    train_dqn) run_step train_dqn "$FH" train --algo dqn --device cuda --config configs/quickstart.ini --out /tmp/fh-gpu-dqn --force ;;
    walkforward_spy) run_step walkforward_spy walkforward spy --data "$DATA_DIR/spy_daily.csv" ;;
    walkforward_btc) run_step walkforward_btc walkforward btc --data "$DATA_DIR/btcusdt_1h.csv" ;;
    walkforward_synth) run_step walkforward_synth walkforward synth --synthetic-bars 100000 ;;
    walkforward_sweep_spy) WF_CONFIG=configs/walkforward_recommended.ini run_step walkforward_sweep_spy walkforward sweep-spy --data "$DATA_DIR/spy_daily.csv" ;;
    walkforward_sweep_btc) WF_CONFIG=configs/walkforward_recommended.ini run_step walkforward_sweep_btc walkforward sweep-btc --data "$DATA_DIR/btcusdt_1h.csv" ;;
    ablation) run_step ablation bash dev/sweeps/ablation_ppo.sh "$FH" "$OUT/ablation" ${ABLATION_SEEDS:-5} ${ABLATION_JOBS:-8} ;;
    confirm_fresh) run_step confirm_fresh bash -c 'for m in ${CONFIRM_MARKETS:-7 8}; do VARIANTS_FILE=dev/sweeps/confirm_variants.txt EXTRA="--synthetic-seed $m" bash dev/sweeps/ablation_ppo.sh '"$FH"' '"$OUT"'/confirm-m$m 5 8 || exit 1; done' ;;
    q_sweep) run_step q_sweep env BIN="$BUILD/tests/rl/test_learning" OUT="$OUT/q_sweep" JOBS=${Q_JOBS:-8} THREADS=2 SEEDS="${Q_SEEDS:-1 2 3}" bash dev/sweeps/q_learning_sweep.sh ${Q_POINTS:-dev/sweeps/q_points_5.txt} ;;
    q_select) run_step q_select env BIN="$BUILD/tests/rl/test_learning" bash -c 'cat dev/sweeps/logs/s13-sweep*/table.txt "$0"/q_sweep.log > "$0"/q_tables.txt; cat dev/sweeps/q_points_[5-9].txt > "$0"/q_points.txt; bash dev/sweeps/q_select_and_test.sh "$0"/q_tables.txt "$0"/q_points.txt pqn dqn' "$OUT" ;;
    q_folds) run_step q_folds env BIN="$BUILD/tests/rl/test_learning" OUT="$OUT/q_folds" JOBS=8 bash dev/sweeps/q_market_folds.sh ${Q_FOLD_POINTS:-dev/sweeps/q_points_11.txt} pqn ;;
    learn_recommended) run_step learn_recommended "$BUILD/tests/rl/test_learning" config=ppo_recommended.ini device=cuda seeds=5 ${LEARN_REC_ARGS:-} ;;
    python_gpu) run_step python_gpu env BUILD="$BUILD" OUT="$OUT/python_gpu" bash scripts/python_gpu.sh ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
echo
echo "== summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null), commit ${FH_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo ?)}) =="
printf '%s\n' "${ROWS[@]}"
