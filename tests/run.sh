#!/bin/sh
# Runs the test binary, the compile matrix and the fuzzer's replay ($FUZZ_REPLAY, when set), then
# prints one closing line: N passed, N failed
# (N passed, N failed, N skipped when something was skipped: a test that cannot run here (the test
# binary's `skipped: ...` lines), a compile-matrix configuration whose compiler is not installed
# prints `skipped: ...`, and so do $TESTS_SKIPPED and $TESTS_SKIPPED2, which name what the caller
# skipped).
# usage: tests/run.sh TEST_BINARY [--no-compile-matrix]
bin=$1
passed=0; failed=0; skipped=0
out=$(mktemp)
"$bin" > "$out" 2>&1
status=$?
cat "$out"
last=$(tail -n 1 "$out")
p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
skipped=$((skipped + $(grep -c '^skipped: ' "$out")))
rm -f "$out"
if [ -z "$p" ]; then echo "FAIL $bin ended abnormally (exit $status)"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
if [ "$2" != "--no-compile-matrix" ]; then
  m=$(mktemp)
  sh tests/compile_matrix.sh > "$m" 2>&1
  cat "$m"
  passed=$((passed + $(grep -c '^ok ' "$m")))
  failed=$((failed + $(grep -c '^FAIL ' "$m")))
  skipped=$((skipped + $(grep -c '^skipped: ' "$m")))
  rm -f "$m"
fi
# The fuzzer's corpus (one line) and each input of a bug it found (one line each), replayed by
# $FUZZ_REPLAY (tests/fuzz/fuzz_api.c), which prints `ok ...` or `FAIL ...` lines.
if [ -n "${FUZZ_REPLAY:-}" ]; then
  r=$(mktemp)
  "$FUZZ_REPLAY" tests/fuzz/corpus --each tests/fuzz/regressions > "$r" 2>&1
  rs=$?
  cat "$r"
  passed=$((passed + $(grep -c '^ok ' "$r")))
  failed=$((failed + $(grep -c '^FAIL ' "$r")))
  if [ "$rs" -ne 0 ] && ! grep -q '^FAIL ' "$r"; then echo "FAIL $FUZZ_REPLAY ended abnormally (exit $rs)"; failed=$((failed + 1)); fi
  rm -f "$r"
fi
# Further test binaries (the suite's .npz tests built with zlib, and with ZIP64 everywhere): each
# runs its `npy` tests and adds its count.
for xt in ${EXTRA_TESTS:-}; do
  r=$(mktemp)
  ASAN_OPTIONS=detect_leaks=1 "$xt" npy > "$r" 2>&1
  cat "$r" | grep -E 'FAIL|passed'
  last=$(tail -n 1 "$r")
  p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
  f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
  if [ -z "$p" ]; then echo "FAIL $xt ended abnormally"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
  rm -f "$r"
done
# The file loaders' fuzzers (tests/fuzz/fuzz_files.c): each replay binary, named replay-LOADER
# (or asan-replay-LOADER), replays tests/fuzz/corpus_LOADER.
for fr in ${FUZZ_FILE_REPLAYS:-}; do
  loader=${fr##*replay-}
  r=$(mktemp)
  "$fr" "tests/fuzz/corpus_$loader" > "$r" 2>&1
  rs=$?
  cat "$r"
  passed=$((passed + $(grep -c '^ok ' "$r")))
  failed=$((failed + $(grep -c '^FAIL ' "$r")))
  if [ "$rs" -ne 0 ] && ! grep -q '^FAIL ' "$r"; then echo "FAIL $fr ended abnormally (exit $rs)"; failed=$((failed + 1)); fi
  rm -f "$r"
done
for s in "${TESTS_SKIPPED:-}" "${TESTS_SKIPPED2:-}"; do
  [ -n "$s" ] || continue
  echo "skipped: $s"
  skipped=$((skipped + 1))
done
if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ "$failed" -eq 0 ]
