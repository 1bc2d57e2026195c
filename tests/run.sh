#!/bin/sh
# Runs the test binary, the compile matrix and the fuzzer's replay ($FUZZ_REPLAY, when set), then
# prints one closing line: N passed, N failed
# (N passed, N failed, N skipped when something was skipped: a test that cannot run here (the test
# binary's `skipped: ...` lines), a compile-matrix configuration whose compiler is not installed
# prints `skipped: ...`, and so do $TESTS_SKIPPED, $TESTS_SKIPPED2, $TESTS_SKIPPED3 and $TESTS_SKIPPED4, which name what the caller
# skipped).
# usage: tests/run.sh TEST_BINARY [--no-compile-matrix]   (TEST_SHARDS=N: the binary's tests in N
# processes at once)
bin=$1
TEST_RUNNER=${TEST_RUNNER:-}
TEST_FILTER=${TEST_FILTER:-}
passed=0; failed=0; skipped=0
# A suite binary: BINARY [FILTER]; adds its closing line's counts and its `skipped:` lines. Its
# output is shown whole, or only its FAIL and count lines when QUIET is set.
suite() {
  out=$(mktemp)
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$@" > "$out" 2>&1
  status=$?
  if [ -n "${QUIET:-}" ]; then grep -E 'FAIL|passed' "$out"; else cat "$out"; fi
  last=$(tail -n 1 "$out")
  p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
  f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
  skipped=$((skipped + $(grep -c '^skipped: ' "$out")))
  rm -f "$out"
  if [ -z "$p" ]; then echo "FAIL $1 ended abnormally (exit $status)"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
}
# The suite's tests shared among $TEST_SHARDS processes at once (default: one per core, at most
# 4): each runs every N-th test (test_all --shard I/N); their outputs are shown one after another
# and their counts added. $TEST_RUNNER runs the binary (make test-neon: qemu-aarch64) and
# $TEST_FILTER picks its tests.
shards=${TEST_SHARDS:-$(nproc 2>/dev/null || echo 1)}
[ "$shards" -ge 1 ] 2>/dev/null || shards=1
[ "$shards" -le 4 ] || shards=4
if [ "$shards" -eq 1 ]; then
  suite $TEST_RUNNER "$bin" $TEST_FILTER
else
  sdir=$(mktemp -d)
  i=0
  while [ $i -lt "$shards" ]; do
    ( ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} $TEST_RUNNER "$bin" --shard $i/$shards $TEST_FILTER > "$sdir/out.$i" 2>&1; echo $? > "$sdir/status.$i" ) &
    i=$((i + 1))
  done
  wait
  i=0
  while [ $i -lt "$shards" ]; do
    out="$sdir/out.$i"
    if [ -n "${QUIET:-}" ]; then grep -E 'FAIL|passed' "$out"; else cat "$out"; fi
    last=$(tail -n 1 "$out")
    p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    skipped=$((skipped + $(grep -c '^skipped: ' "$out")))
    if [ -z "$p" ]; then echo "FAIL $bin --shard $i/$shards ended abnormally (exit $(cat "$sdir/status.$i"))"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
    i=$((i + 1))
  done
  rm -rf "$sdir"
fi
if [ "$2" != "--no-compile-matrix" ]; then
  m=$(mktemp)
  sh tests/compile_matrix.sh > "$m" 2>&1
  cat "$m"
  passed=$((passed + $(grep -c '^ok ' "$m")))
  failed=$((failed + $(grep -c '^FAIL ' "$m")))
  skipped=$((skipped + $(grep -c '^skipped: ' "$m")))
  rm -f "$m"
fi
# A fuzzer's replay: BINARY ARGS... prints `ok ...` or `FAIL ...` lines, counted here.
replay() {
  r=$(mktemp)
  "$@" > "$r" 2>&1
  rs=$?
  cat "$r"
  passed=$((passed + $(grep -c '^ok ' "$r")))
  failed=$((failed + $(grep -c '^FAIL ' "$r")))
  if [ "$rs" -ne 0 ] && ! grep -q '^FAIL ' "$r"; then echo "FAIL $1 ended abnormally (exit $rs)"; failed=$((failed + 1)); fi
  rm -f "$r"
}
# The API fuzzer's corpus (one line) and each input of a bug it found (one line each), replayed by
# $FUZZ_REPLAY (tests/fuzz/fuzz_api.c).
[ -z "${FUZZ_REPLAY:-}" ] || replay "$FUZZ_REPLAY" tests/fuzz/corpus --each tests/fuzz/regressions
# Further test binaries (the suite's .npz tests built with zlib, and with ZIP64 everywhere): each
# runs its `npy` tests and adds its count.
for xt in ${EXTRA_TESTS:-}; do QUIET=1 suite "$xt" npy; done
# The collectives over MPI (tests/dist/run.sh: 2 and 3 ranks, and TCP alone), whenever mpicc and
# mpirun are found: $DIST_TESTS names the binary.
for dt in ${DIST_TESTS:-}; do suite sh tests/dist/run.sh "$dt"; done
# The harness with tensor_cuda.o linked (tests/cuda/test_cuda_link.c), whenever nvcc is found.
for xt in ${CUDA_TESTS:-}; do suite "$xt"; done
# The file loaders' fuzzers (tests/fuzz/fuzz_files.c): each replay binary, named replay-LOADER
# (or asan-replay-LOADER), replays tests/fuzz/corpus_LOADER.
for fr in ${FUZZ_FILE_REPLAYS:-}; do replay "$fr" "tests/fuzz/corpus_${fr##*replay-}"; done
for s in "${TESTS_SKIPPED:-}" "${TESTS_SKIPPED2:-}" "${TESTS_SKIPPED3:-}" "${TESTS_SKIPPED4:-}"; do
  [ -n "$s" ] || continue
  echo "skipped: $s"
  skipped=$((skipped + 1))
done
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
