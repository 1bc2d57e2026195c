#!/bin/sh
# Runs the test binary and the compile matrix, then prints one closing line: N passed, N failed.
# usage: tests/run.sh TEST_BINARY [--no-compile-matrix]
bin=$1
passed=0; failed=0
out=$(mktemp)
"$bin" > "$out" 2>&1
status=$?
cat "$out"
last=$(tail -n 1 "$out")
p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
rm -f "$out"
if [ -z "$p" ]; then echo "FAIL $bin ended abnormally (exit $status)"; failed=$((failed + 1)); else passed=$((passed + p)); failed=$((failed + f)); fi
if [ "$2" != "--no-compile-matrix" ]; then
  m=$(mktemp)
  sh tests/compile_matrix.sh > "$m" 2>&1
  cat "$m"
  passed=$((passed + $(grep -c '^ok ' "$m")))
  failed=$((failed + $(grep -c '^FAIL ' "$m")))
  rm -f "$m"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
