#!/usr/bin/env bash
# test.sh — builds foxhunt twice (optimised, and ASan+UBSan) and runs the whole ctest
# suite in both. Tests labelled "slow" (learning runs, long soaks) run in the optimised
# build only: under the sanitizers they take too long for CI's budget. Tests labelled
# "fuzz" (libFuzzer harnesses, tests/fuzz) run in the optimised pass only too: they build
# their own clang ASan+UBSan copy of the library (BUILD/fuzz) and fuzz 12 s each, or
# skip when clang cannot build them. Tests labelled "memcheck" (tests/memcheck: the
# file readers and the CLI on bad input under valgrind) run in the optimised pass only:
# valgrind and ASan do not mix.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)

echo "== release build =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$JOBS"
(cd build && ctest --output-on-failure -j "$JOBS")

echo "== sanitizer build (ASan + UBSan), slow, fuzz and memcheck tests excluded =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DFH_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$JOBS"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j "$JOBS" -LE 'slow|fuzz|memcheck')
