#!/bin/sh
# The MPI tests: BINARY (tests/dist/test_dist_mpi.c built with mpicc -DTENSOR_USE_MPI) on 2 and 3
# ranks over shared memory, and on 2 ranks over TCP alone (--mca btl tcp,self, standing in for two
# hosts), each under a timeout so a hang fails instead of stopping the suite. Prints rank 0's
# `ok`/`FAIL` lines, then one closing line: N passed, N failed.
bin=$1
MPIRUN=${MPIRUN:-mpirun}
opts="--oversubscribe"
[ "$(id -u)" -ne 0 ] || opts="$opts --allow-run-as-root"   # Open MPI refuses root without it
# Under AddressSanitizer (make test-asan) the ranks check memory but not leaks: Open MPI's
# components are loaded with dlopen and unloaded at MPI_Finalize, leaving allocations LeakSanitizer
# cannot attribute or suppress. The library's own leaks are checked by the suite's world-of-one
# tests (tests/test_dist.c) and everywhere else.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
passed=0; failed=0
for setup in "2" "3" "2 --mca btl tcp,self"; do
  np=${setup%% *}
  extra=$(echo "$setup" | sed -n 's/^[0-9]* //p')
  out=$(mktemp)
  # shellcheck disable=SC2086
  timeout 300 "$MPIRUN" $opts $extra -np "$np" "$bin" > "$out" 2>&1
  status=$?
  sed "s/\$/ [np $np${extra:+ $extra}]/" "$out" | grep -E '^(ok|FAIL) ' || true
  grep -vE '^(ok|FAIL) ' "$out" | head -40
  p=$(grep -c '^ok ' "$out"); f=$(grep -c '^FAIL ' "$out")
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then echo "FAIL mpirun -np $np $extra ended abnormally (exit $status)"; failed=$((failed + 1)); fi
  rm -f "$out"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
