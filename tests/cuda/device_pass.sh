#!/bin/bash
# One pass on a machine with a GPU, over binaries built elsewhere (make gpu-pass: build/gpu-pass/,
# sm_90 machine code, stripped, to carry there): the start-up time with an empty JIT cache, the
# CUDA suite plain and with cuDNN (its cuda_ and gpu_ tests, through tests/run.sh), memcheck and
# racecheck as make test-cuda runs them, then the benchmark and PyTorch's figures.
# usage (from the project root): tests/cuda/device_pass.sh DIR   (logs into $OUT, or DIR/logs)
# DEADLINE: the seconds the pass may take (default 540); a step that would pass it is cut short.
dir=${1:-build/gpu-pass}
OUT=${OUT:-$dir/logs}
mkdir -p "$OUT"
exec > >(tee "$OUT/all.log") 2>&1
START=$SECONDS; DEADLINE=${DEADLINE:-540}
left() { echo $(( DEADLINE - (SECONDS - START) )); }
step() { # step NAME MAXSECONDS LOG CMD...
  local name=$1 max=$2 log=$3; shift 3
  local l; l=$(left); [ "$l" -lt 15 ] && { echo "== $name: skipped, no time left"; return; }
  [ "$max" -gt "$l" ] && max=$l
  echo "== $name (timeout ${max}s) at $((SECONDS - START))s"
  local t=$SECONDS; timeout -k 5 "$max" "$@" > "$OUT/$log" 2>&1; local rc=$?
  echo "== $name rc=$rc in $((SECONDS - t))s"; grep -E "FAIL|passed|failed|skipped|rror|first CUDA" "$OUT/$log" | tail -25
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
chmod +x "$dir"/* 2>/dev/null
step first_call 60 first_call.log env CUDA_CACHE_DISABLE=1 "$dir/first_call"
step test_cuda 200 test_cuda.log env TEST_FILTER=cuda_,gpu_ tests/run.sh "$dir/test_cuda" --no-compile-matrix
step test_cudnn 120 test_cudnn.log env TEST_FILTER=cuda_,gpu_ tests/run.sh "$dir/test_cudnn" --no-compile-matrix
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
step memcheck 120 memcheck.log "$CS" --tool memcheck --report-api-errors no --leak-check full --error-exitcode 1 "$dir/test_cuda" cuda_
tail -6 "$OUT/memcheck.log"
step racecheck 60 racecheck.log "$CS" --tool racecheck --error-exitcode 1 "$dir/test_cuda" cuda_reductions,cuda_shared_memory
tail -6 "$OUT/racecheck.log"
step bench_cuda 110 bench.log env BENCH_CUDA_ROWS="$OUT/rows.txt" "$dir/bench_cuda"
tail -60 "$OUT/bench.log"
step torch_cuda 80 torch.log python3 bench/compare_torch_cuda.py "$OUT/rows.txt"
tail -40 "$OUT/torch.log"
echo "total $((SECONDS - START))s"
