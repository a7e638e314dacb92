#!/usr/bin/env bash
# fuzz.sh — builds foxhunt's libFuzzer harnesses with clang (ASan + UBSan) and runs them
# on their seed corpora (tests/fuzz/README.md). The test suite runs each for a few
# seconds (ctest fuzz_*); run it by hand for longer:
#
#   bash scripts/fuzz.sh                    # every harness, 60 s each
#   bash scripts/fuzz.sh 600 checkpoint     # one harness, 10 minutes
#   bash scripts/fuzz.sh 300 csv -- -jobs=2 -workers=2   # extra libFuzzer flags
#
# Harnesses: csv, safetensors, checkpoint, ini, gemm_cache, batch, rendezvous. Options:
# --build-dir DIR (default build-fuzz), --build-only, --no-build. Inputs it finds that
# grow coverage collect in DIR/corpus/NAME (the seeds in tests/fuzz/corpus/NAME are only
# read); a failing input is saved in DIR/artifacts/NAME/ and the command to reproduce it
# printed. Exit status: 0 all ran clean, 1 a harness failed (or the build did), 77
# skipped: no clang that can link -fsanitize=fuzzer with OpenMP (scripts/setup.sh
# installs clang, libclang-rt-dev and libomp-dev).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-fuzz
MODE=all
SECONDS_EACH=60
NAMES=()
EXTRA=()
ALL_NAMES=(csv safetensors checkpoint ini gemm_cache batch rendezvous)
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD=$2; shift 2 ;;
    --build-only) MODE=build; shift ;;
    --no-build) MODE=run; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    [0-9]*) SECONDS_EACH=$1; shift ;;
    csv|safetensors|checkpoint|ini|gemm_cache|batch|rendezvous) NAMES+=("$1"); shift ;;
    *) echo "fuzz: unknown argument '$1' (harnesses: ${ALL_NAMES[*]}; see --help)" >&2; exit 2 ;;
  esac
done
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL_NAMES[@]}")
CC_FUZZ=${FH_FUZZ_CC:-clang}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# Can this compiler build a fuzzer with OpenMP (the library uses it)? Else skip, saying why.
preflight() {
  if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
    echo "fuzz: skipped: no '$CC_FUZZ' (install clang, libclang-rt-dev and libomp-dev: scripts/setup.sh)"
    exit 77
  fi
  local dir
  dir=$(mktemp -d)
  printf '#include <stdint.h>\n#include <stddef.h>\n#include <omp.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return omp_get_max_threads() > 0 ? 0 : 1; }\n' >"$dir/t.c"
  if ! "$CC_FUZZ" -fsanitize=fuzzer,address,undefined -fopenmp "$dir/t.c" -o "$dir/t" >"$dir/log" 2>&1; then
    echo "fuzz: skipped: $CC_FUZZ cannot link -fsanitize=fuzzer,address,undefined with -fopenmp:"
    sed 's/^/  /' "$dir/log" | head -5
    echo "  (install libclang-rt-dev and libomp-dev: scripts/setup.sh)"
    rm -rf "$dir"
    exit 77
  fi
  rm -rf "$dir"
}
preflight

if [ "$MODE" != run ]; then
  echo "fuzz: building the harnesses with $CC_FUZZ into $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DFH_FUZZ=ON -DFH_SANITIZE=ON -DFH_WITH_CUDA=OFF \
        -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >"$BUILD.configure.log" 2>&1 \
    || { cat "$BUILD.configure.log"; echo "fuzz: configuring $BUILD failed"; exit 1; }
  targets=()
  for n in "${ALL_NAMES[@]}"; do targets+=(--target "fuzz_$n"); done
  cmake --build "$BUILD" -j "$JOBS" "${targets[@]}" >"$BUILD.build.log" 2>&1 \
    || { tail -40 "$BUILD.build.log"; echo "fuzz: building the harnesses failed ($BUILD.build.log)"; exit 1; }
  rm -f "$BUILD.configure.log" "$BUILD.build.log"
  [ "$MODE" = build ] && { echo "fuzz: built ${ALL_NAMES[*]} in $BUILD/tests/fuzz"; exit 0; }
fi

# Per harness: the longest input tried and a dictionary of the format's tokens.
max_len() {
  case "$1" in csv) echo 32768 ;; safetensors) echo 16384 ;; checkpoint) echo 24576 ;; ini) echo 4096 ;;
    gemm_cache) echo 8192 ;; batch) echo 16384 ;; rendezvous) echo 512 ;; esac
}
dict() {
  case "$1" in checkpoint) echo "$ROOT/tests/fuzz/dict/checkpoint.dict" ;; *) echo "$ROOT/tests/fuzz/dict/$1.dict" ;; esac
}

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
for n in "${NAMES[@]}"; do
  bin=$BUILD/tests/fuzz/fuzz_$n
  if [ ! -x "$bin" ]; then
    echo "fuzz: $bin is not built (run: bash scripts/fuzz.sh --build-dir $BUILD --build-only)"
    exit 1
  fi
  corpus=$BUILD/corpus/$n
  artifacts=$BUILD/artifacts/$n/
  log=$BUILD/logs/$n.log
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  start=$(date +%s)
  set +e
  # libFuzzer's own exit code for a finding is 77, which ctest reads as "skipped": 1.
  "$bin" -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$n")" -dict="$(dict "$n")" \
         -timeout=25 -rss_limit_mb=2560 -error_exitcode=1 -timeout_exitcode=1 \
         -print_final_stats=1 -artifact_prefix="$artifacts" ${EXTRA[@]+"${EXTRA[@]}"} \
         "$corpus" "$ROOT/tests/fuzz/corpus/$n" >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ $rc -eq 0 ]; then
    echo "fuzz: $n: ${runs:-?} inputs in ${took} s, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) files: clean"
  else
    failed=1
    echo "fuzz: $n: FAILED (exit $rc) after ${took} s; log $log; its end:"
    tail -60 "$log" | sed 's/^/  /'
    sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | while read -r a; do
      echo "fuzz: $n: failing input $a; reproduce: $bin $a"
    done
  fi
done
exit $failed
