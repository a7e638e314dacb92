export FH_COMMIT=7ccb809
bash scripts/gpu-check.sh info >/dev/null 2>&1
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FOXHUNT_CACHE_DIR=/tmp/foxhunt-cache-diag
echo "== racecheck, diagnostic build (all five warps at every barrier)"
compute-sanitizer --tool racecheck --error-exitcode 9 build-diag/foxhunt collect --device cuda --kernel fast/block --episodes 40 --steps 12 --out /tmp/fh-rd.safetensors > $OUT/racecheck-diag.log 2>&1; echo "diag racecheck rc=$?"; grep SUMMARY $OUT/racecheck-diag.log
unset FOXHUNT_CACHE_DIR
CLOCK_EPISODES=128,1024 CLOCK_KERNEL=fast/warp,fast/block bash scripts/gpu-check.sh info cache parity parity_fast parity_map parity_fvr tf32 device_env memcheck racecheck synccheck bench bench_tf32 clocks train learn 2>&1 | tail -45
