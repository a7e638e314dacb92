#!/usr/bin/env bash
# gpu-dist-check.sh — what data-parallel training (issue 22, docs/SCALING.md) must show on
# a machine with two GPUs (nvidia-h200-x2), in one command:
#
#   0. one GPU: world size 1 through NCCL byte-identical to one process
#      (tests/dist/test_dist_world1), and the GPU update's own test;
#   1. one full-batch update (minibatch = the whole batch, one epoch) on 2 GPUs against 1,
#      the same 128 episodes and seed: the episodes' states byte-identical (each rank ran
#      its share of the one-GPU run's episodes), the weights equal within the
#      all-reduce's rounding (below);
#   2. learning curves of a short run (configs/throughput.ini, 20 iterations) on 2 GPUs
#      (its runs pin --precision tf32, the precision this check was written and measured
#      at; bf16 data-parallel has not run on 2 GPUs yet: issue 35, session 20)
#      against 1 GPU with two seeds: the 2-GPU curve within the seed-to-seed spread;
#      2b. validation.csv's global_step on 2 GPUs equal to metrics.csv's (the run's steps);
#   3. scaling at the same per-GPU N: training steps/s on 1 and 2 GPUs, medians of 3 runs
#      (each run's median over its iterations after the warm-up), at the throughput
#      configuration and at SPEC defaults (target: 2 GPUs >= 1.9 x 1 GPU);
#   4. the all-reduce's share of an iteration: the update's steps launched one by one
#      (--dist-graphs 0) with CUDA events around every all-reduce (the progress line's
#      "all-reduce X of Y ms"), against the iteration's time.
#
# Tolerance of step 1 (stated in docs/SCALING.md): one process sums a gradient over all
# 8,192 rows, two ranks over 4,096 each and NCCL averages the two, so the gradients
# differ by float32 summation order (relative ~1e-6; the critic's values and advantages
# by cuBLAS's choice of kernel for another row count, likewise). Adam's first step is
# lr * g / (|g| + eps): a relative change d of g moves it by at most lr * d / 4, except
# where g is a near-cancelled sum whose sign rounding can flip (then up to 2 lr). So:
# every weight within 2 lr, and at most 0.1% of them off by more than 1e-7; the Adam
# moments likewise (m within 1e-4 relative + 1e-9 for 99.9%); episodes, random streams
# and counters byte for byte.
#
# Run on nvidia-h200-x2 (NVLink multicast stays off: NCCL_NVLS_ENABLE=0 here, and
# foxhunt sets it too); the log lands in $OUT (the device tool's folder) or
# build-gpu/dist-check. Needs python3 with numpy (the GPU image has it) and NCCL from the
# nvidia-nccl-cu13 wheel, or any libnccl.so.2 the dynamic loader finds; the build's
# Debian packages as scripts/gpu-check.sh takes them (.deps/*.deb; carry those files and
# not all of .deps, whose wheels/ may hold the 300 MB NCCL wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=${OUT:-$PWD/build-gpu/dist-check}
mkdir -p "$RESULTS"
exec > >(tee "$RESULTS/gpu-dist-check.log") 2>&1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export FOXHUNT_CACHE_DIR=${FOXHUNT_CACHE_DIR:-/tmp/foxhunt-cache}
. scripts/device-deps.sh # cJSON, inih, OpenBLAS from .deps/*.deb where the machine lacks them
WORK=$(mktemp -d /tmp/gpu-dist-check.XXXXXX)
echo "== gpu-dist-check $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(date -u +%FT%TZ); runs in $WORK"
nvidia-smi -L
nvidia-smi topo -m || true
GPUS=$(nvidia-smi -L | grep -c '^GPU ' || true)

# NCCL: the Python wheel's header and library when it is installed
NCCL_DIR=$(python3 - <<'EOF' 2>/dev/null || true
import importlib.util
s = importlib.util.find_spec("nvidia.nccl")
print(list(s.submodule_search_locations)[0] if s else "")
EOF
)
CMAKE_NCCL=() NCCL_FLAG=()
if [ -n "$NCCL_DIR" ] && [ -f "$NCCL_DIR/include/nccl.h" ]; then
  CMAKE_NCCL=(-DFH_NCCL_INCLUDE_DIR="$NCCL_DIR/include")
  NCCL_FLAG=(--nccl-library "$NCCL_DIR/lib/libnccl.so.2")
fi
echo "NCCL wheel: ${NCCL_DIR:-none found (the CUDA toolkit's or the system's)}"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release "${CMAKE_NCCL[@]}" | grep -i 'foxhunt:'
cmake --build build-gpu -j"$(nproc)" --target foxhunt > "$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; exit 1; }
FH=$PWD/build-gpu/foxhunt
"$FH" info | grep -E '^(NCCL|CUDA)'
if "$FH" info | grep -q '^NCCL: *\(nccl.h not\|not built\)'; then
  echo "this build has no NCCL code (nccl.h not found): install nvidia-nccl-cu13 or set FH_NCCL_INCLUDE_DIR"
  exit 1
fi
cmake --build build-gpu -j"$(nproc)" --target test_dist_world1 test_gpu_update >> "$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; exit 1; }

echo; echo "== 0. one GPU: one rank through NCCL against one process"
(cd build-gpu && ctest -R '^(test_dist_world1|test_gpu_update)$' --output-on-failure) \
  && echo "step 0: PASS" || echo "step 0: FAIL"
if [ "$GPUS" -lt 2 ]; then
  echo "only $GPUS GPU: steps 1-4 need two (nvidia-h200-x2); stopped here"
  exit 0
fi

# ---- helpers ----
train() { # train OUT LOG [flags...]: foxhunt train, stdout/stderr to LOG; prints the tail on failure
  local out=$1 log=$2; shift 2
  if ! "$FH" train --out "$out" --eval-at-end 0 "${NCCL_FLAG[@]}" "$@" > "$log" 2>&1; then
    { echo "FAILED: foxhunt train $* (log $log)"; tail -20 "$log"; } >&2; return 1
  fi
}
cat > "$WORK/compare.py" <<'EOF'
# compare.py A B LR: two checkpoints, tensor by tensor (safetensors read by hand: numpy only)
import json, struct, sys
import numpy as np
DT = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32,
      "U64": np.uint64, "U8": np.uint8}
def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n)); data = f.read()
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], DT[v["dtype"]])
            for k, v in head.items() if k != "__metadata__"}
a, b, lr = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
ok = True
assert a.keys() == b.keys(), "different tensors"
for k in a:
    x, y = a[k], b[k]
    exact = k.startswith(("env.", "rng.", "ppo.", "run.", "adam.step")) or k == "trainer.episode_length"
    if exact or x.dtype.kind != "f":
        same = np.array_equal(x, y)
        print(f"  {k:40s} {'identical' if same else 'DIFFERS'}" + ("" if same else " (must be byte-identical)"))
        ok &= same
        continue
    d = np.abs(x.astype(np.float64) - y.astype(np.float64))
    if k.startswith("adam.m."):
        bad = np.mean(d > 1e-4 * np.abs(x) + 1e-9); limit = 2 * lr
    elif k.startswith("adam.v."):
        bad = np.mean(d > 1e-3 * np.abs(x) + 1e-12); limit = np.inf
    elif k == "trainer.episode_return":
        bad = np.mean(d > 1e-9 * (1 + np.abs(x))); limit = np.inf
    else:
        bad = np.mean(d > 1e-7); limit = 2 * lr
    good = d.max() <= limit and bad <= 1e-3
    ok &= bool(good)
    print(f"  {k:40s} max |diff| {d.max():.3e}  beyond tolerance {100 * bad:.3f}%  {'ok' if good else 'OUT OF TOLERANCE'}")
print("step 1:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
EOF
col() { # col CSV NAME: one metrics column, one value a line
  python3 - "$1" "$2" <<'EOF'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    print(row[sys.argv[2]])
EOF
}
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo; echo "== 1. one full-batch update: 2 GPUs x 64 episodes against 1 GPU x 128 (seed 5, fp32)"
ONE=(--episodes 128 --steps 64 --minibatch 8192 --epochs 1 --curiosity-epochs 1 --iterations 1
     --checkpoint-every 0 --lr 3e-4 --anneal-lr 0 --precision fp32 --kernel fast/block --seed 5
     --synthetic-bars 20000)
train "$WORK/u1" "$WORK/u1.log" "${ONE[@]}"
train "$WORK/u2" "$WORK/u2.log" "${ONE[@]}" --gpus 2
python3 "$WORK/compare.py" "$WORK/u1/final.safetensors" "$WORK/u2/final.safetensors" 3e-4 || true
for c in policy_loss value_loss entropy approx_kl explained_variance grad_norm mean_reward; do
  printf '  %-20s 1 GPU %-14s 2 GPUs %s\n' "$c" "$(col "$WORK/u1/metrics.csv" $c)" "$(col "$WORK/u2/metrics.csv" $c)"
done

echo; echo "== 2. learning curves: configs/throughput.ini (TF32), 20 iterations, N 4096 in all"
train "$WORK/c1s1" "$WORK/c1s1.log" --config configs/throughput.ini --precision tf32 --seed 1
train "$WORK/c1s2" "$WORK/c1s2.log" --config configs/throughput.ini --precision tf32 --seed 2
train "$WORK/c2s1" "$WORK/c2s1.log" --config configs/throughput.ini --precision tf32 --seed 1 --gpus 2
paste <(col "$WORK/c1s1/metrics.csv" iteration) <(col "$WORK/c1s1/metrics.csv" mean_episode_return) \
      <(col "$WORK/c1s2/metrics.csv" mean_episode_return) <(col "$WORK/c2s1/metrics.csv" mean_episode_return) \
  | awk 'BEGIN {print "  iteration  return: 1 GPU seed 1 | 1 GPU seed 2 | 2 GPUs seed 1"} {printf "  %9s  %14s %14s %14s\n", $1, $2, $3, $4}'
python3 - "$WORK" <<'EOF'
import csv, sys
def last(run, k=5):
    r = [float(x["mean_episode_return"]) for x in csv.DictReader(open(f"{sys.argv[1]}/{run}/metrics.csv"))
         if x["mean_episode_return"] not in ("", "nan")]
    return sum(r[-k:]) / len(r[-k:])
a, b, c = last("c1s1"), last("c1s2"), last("c2s1")
spread = abs(a - b)
lo, hi = min(a, b) - spread, max(a, b) + spread
print(f"  mean return of the last 5 iterations: 1 GPU {a:.4f} / {b:.4f} (seeds 1, 2), 2 GPUs {c:.4f}")
print("step 2:", "PASS (within the seeds' spread)" if lo <= c <= hi else "CHECK (outside the seeds' spread)")
EOF

echo; echo "== 2b. validation.csv under --gpus 2 counts the run's steps, as metrics.csv does"
train "$WORK/v2" "$WORK/v2.log" --episodes 128 --steps 64 --iterations 2 --eval-every 1 \
  --checkpoint-every 0 --synthetic-bars 20000 --gpus 2
python3 - "$WORK/v2" <<'EOF'
import csv, sys
m = {r["iteration"]: r["global_step"] for r in csv.DictReader(open(f"{sys.argv[1]}/metrics.csv"))}
v = list(csv.DictReader(open(f"{sys.argv[1]}/validation.csv")))
ok = bool(v) and all(float(m.get(r["iteration"], "nan")) == float(r["global_step"]) for r in v)
print("  global_step: validation.csv", [r["global_step"] for r in v], "metrics.csv",
      [m.get(r["iteration"]) for r in v])
print("step 2b:", "PASS" if ok else "FAIL")
EOF

# run_rate NAME REPEATS FLAGS...: median over repeats of each run's median steps/s (iterations 3..)
run_rate() {
  local name=$1 reps=$2; shift 2
  local rates=()
  for r in $(seq 1 "$reps"); do
    train "$WORK/$name.$r" "$WORK/$name.$r.log" "$@" || continue
    rates+=("$(col "$WORK/$name.$r/metrics.csv" steps_per_second | tail -n +3 | median)")
  done
  printf '%s\n' "${rates[@]}" | median
}
echo; echo "== 3. scaling at the same per-GPU N (medians of 3 runs)"
T=(--config configs/throughput.ini --precision tf32 --iterations 8 --checkpoint-every 0)
S=(--device cuda --steps 500 --epochs 10 --iterations 5 --checkpoint-every 0)
t1=$(run_rate t1 3 "${T[@]}" --episodes 4096 --minibatch 16384)
t2=$(run_rate t2 3 "${T[@]}" --episodes 8192 --minibatch 32768 --gpus 2)
s1=$(run_rate s1 3 "${S[@]}" --episodes 128 --minibatch 512)
s2=$(run_rate s2 3 "${S[@]}" --episodes 256 --minibatch 1024 --gpus 2)
awk -v t1="$t1" -v t2="$t2" -v s1="$s1" -v s2="$s2" 'BEGIN {
  printf "  throughput (N 4096 x L 128 a GPU, TF32): 1 GPU %.0f, 2 GPUs %.0f steps/s: %.2fx\n", t1, t2, t2 / t1
  printf "  SPEC defaults (N 128 x L 500 a GPU, fp32): 1 GPU %.0f, 2 GPUs %.0f steps/s: %.2fx\n", s1, s2, s2 / s1
  printf "step 3: %s (target 1.9x at the throughput configuration)\n", (t2 / t1 >= 1.9) ? "PASS" : "MISSED" }'

echo; echo "== 4. the all-reduce's share (2 GPUs, --dist-graphs 0: events around every all-reduce)"
share() { # share NAME FLAGS...
  local name=$1; shift
  train "$WORK/$name" "$WORK/$name.log" "$@" --dist-graphs 0 --gpus 2
  python3 - "$WORK/$name.log" "$WORK/$name/metrics.csv" "$name" <<'EOF'
import csv, re, statistics, sys
lines = [l for l in open(sys.argv[1]) if "all-reduce" in l]
ar = [tuple(map(float, re.search(r"all-reduce ([0-9.]+) of ([0-9.]+) ms", l).groups())) for l in lines]
rows = list(csv.DictReader(open(sys.argv[2])))
it = [1e3 * (float(r["collect_seconds"]) + float(r["update_seconds"])) for r in rows]
ar, it = ar[2:], it[2:]  # after the warm-up
a = statistics.median(x for x, _ in ar); u = statistics.median(y for _, y in ar); i = statistics.median(it)
print(f"  {sys.argv[3]}: all-reduce {a:.2f} ms of the update's {u:.2f} ms ({100 * a / u:.1f}%), "
      f"of the iteration's {i:.2f} ms ({100 * a / i:.1f}%)")
EOF
}
share r_throughput "${T[@]}" --episodes 8192 --minibatch 32768
share r_spec "${S[@]}" --episodes 256 --minibatch 1024
echo; echo "logs: $RESULTS/gpu-dist-check.log; runs kept in $WORK"
