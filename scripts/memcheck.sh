#!/usr/bin/env bash
# memcheck.sh — runs a test binary (and every process it starts: the foxhunt CLI it
# tests) under valgrind memcheck, which sees what libc reads on the program's behalf
# (an error message's vsnprintf quoting freed memory, issue 32) where ASan's
# interceptors did not. Exit: the test's own status, 99 when memcheck found an error,
# 77 (skipped) without valgrind. Leaks are the ASan pass's business (--leak-check=no).
#   scripts/memcheck.sh TEST_BINARY [ARGS...]
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "memcheck: skipped: valgrind is not installed (scripts/setup.sh installs it)"
  exit 77
fi
exec valgrind --tool=memcheck --error-exitcode=99 --leak-check=no --track-origins=no \
  --num-callers=24 --trace-children=yes \
  --trace-children-skip='*/rm,*/python3*,*/chromium*,*/headless_shell*,*/mkfifo,*/sleep' \
  --suppressions="$here/tests/memcheck/memcheck.supp" "$@"
