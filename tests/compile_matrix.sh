#!/bin/sh
# The compile matrix: tensor.h as C99 and C++11, with gcc and clang, with and without the
# implementation, -Wall -Wextra -Werror, TENSOR_STATIC in two translation units, overridden
# allocator hooks, TENSOR_NO_WINOGRAD, TENSOR_NO_AVX512, TENSOR_NO_SIMD and TENSOR_USE_MPI. Prints `ok NAME` or `FAIL NAME` per configuration (`skipped: NAME (...)` when its
# compiler is not installed).
set -u
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
root=$(pwd)
W="-Wall -Wextra -Werror -I$root"

cat > "$dir/decl.c" <<'C'
#include "tensor.h"
int use_decl(void) { tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32); int n = (int)tensor_numel(t); tensor_free(t); return n; }
C
cat > "$dir/impl.c" <<'C'
#define TENSOR_IMPLEMENTATION
#include "tensor.h"
#include <stdio.h>
int main(void) {
    tensor *a = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor *b = tensor_add_scalar(a, 1);
    int ok = b && tensor_item(tensor_select(tensor_select(b, 0, 0), 0, 1)) == 2.0;
    tensor_shutdown();
    return ok ? 0 : 1;
}
C
cat > "$dir/static1.c" <<'C'
#define TENSOR_STATIC
#define TENSOR_IMPLEMENTATION
#include "tensor.h"
int other(void);
int main(void) { tensor *t = tensor_ones(TENSOR_SHAPE(4), TENSOR_F32); int ok = tensor_numel(t) == 4 && other() == 6; tensor_shutdown(); return ok ? 0 : 1; }
C
cat > "$dir/static2.c" <<'C'
#define TENSOR_STATIC
#define TENSOR_IMPLEMENTATION
#include "tensor.h"
int other(void) { tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F64); int n = (int)tensor_numel(t); tensor_shutdown(); return n; }
C
cat > "$dir/hooks.c" <<'C'
#include <stdlib.h>
static long allocs, frees;
static void *my_malloc(size_t n) { allocs++; return malloc(n); }
static void my_free(void *p) { if (p) frees++; free(p); }
#define TENSOR_MALLOC(n) my_malloc(n)
#define TENSOR_FREE(p) my_free(p)
#define TENSOR_IMPLEMENTATION
#include "tensor.h"
int main(void) {
    tensor *t = tensor_randn(TENSOR_SHAPE(8, 8), TENSOR_F32);
    tensor *u = tensor_exp(t);
    tensor_free(u); tensor_free(t);
    tensor_shutdown();
    return allocs > 0 && allocs == frees ? 0 : 1;
}
C
cat > "$dir/nowino.c" <<'C'
#define TENSOR_NO_WINOGRAD
#define TENSOR_TEST_HOOKS
#define TENSOR_IMPLEMENTATION
#include "tensor.h"
int main(void) { /* a convolution Winograd would take runs as im2col + GEMM */
    tensor *x = tensor_randn(TENSOR_SHAPE(2, 16, 8, 8), TENSOR_F32), *w = tensor_randn(TENSOR_SHAPE(16, 16, 3, 3), TENSOR_F32);
    tensor *y = tensor_conv2d(x, w, NULL, 1, 1, 1, 1);
    int ok = y && tensor_test_path_count("conv_winograd") == 0;
    tensor_shutdown();
    return ok ? 0 : 1;
}
C
cat > "$dir/noavx512.c" <<'C'
#ifndef TENSOR_NO_SIMD
#define TENSOR_NO_AVX512
#endif
#define TENSOR_IMPLEMENTATION
#include "tensor.h"
#include <string.h>
int main(void) { /* the GEMM kernels named in the build info, and a product through them */
    tensor *a = tensor_ones(TENSOR_SHAPE(40, 70), TENSOR_F32), *b = tensor_ones(TENSOR_SHAPE(70, 50), TENSOR_F32);
    tensor *c = tensor_matmul(a, b);
    int ok = c && tensor_item(tensor_sum_all(c)) == 40.0 * 50 * 70 && !strstr(tensor_build_info(), "gemm: avx512f");
#ifdef TENSOR_NO_SIMD
    ok = ok && strstr(tensor_build_info(), "gemm: portable 6x16 f32, portable 6x8 f64");
#endif
    tensor_shutdown();
    return ok ? 0 : 1;
}
C
cp "$dir/impl.c" "$dir/impl.cpp"; cp "$dir/decl.c" "$dir/decl.cpp"; cp "$dir/hooks.c" "$dir/hooks.cpp"

# A configuration whose compiler is not installed prints `skipped: NAME (apt-get install PACKAGE)`.
# The configurations run as background jobs, one per core at a time (each compiles all of
# tensor.h); their lines are printed in order at the end.
jobs_max=$(nproc 2>/dev/null || echo 2)
n=0
run() { # name, the compiler it needs, command...
  name=$1; need=$2; shift 2
  n=$((n + 1)); out="$dir/result.$(printf %03d $n)"
  if ! command -v "$need" > /dev/null 2>&1; then
    echo "skipped: $name ($need is not installed: apt-get install $([ "$need" = clang++ ] && echo clang || echo "$need"))" > "$out"; return
  fi
  ( if "$@" > "$out.log" 2>&1; then echo "ok $name"; else echo "FAIL $name"; sed 's/^/    /' "$out.log" | head -30; fi ) > "$out" &
  [ $((n % jobs_max)) -ne 0 ] || wait
}
for cc in gcc clang; do
  cxx=$([ $cc = gcc ] && echo g++ || echo clang++)
  o="$dir/$cc"; mkdir -p "$o" # each compiler's outputs apart: the jobs overlap
  run "$cc c99 declarations only" $cc $cc -std=c99 $W -c "$dir/decl.c" -o "$o/decl.o"
  run "$cc c99 implementation" $cc sh -c "$cc -std=c99 $W '$dir/impl.c' -o '$o/impl' -lm -lpthread && '$o/impl'"
  run "$cc c99 implementation at -O3" $cc $cc -std=c99 -O3 $W -c "$dir/impl.c" -o "$o/impl3.o"
  run "$cc c++11 declarations only" $cxx $cxx -std=c++11 $W -c "$dir/decl.cpp" -o "$o/declpp.o"
  run "$cc c++11 implementation" $cxx sh -c "$cxx -std=c++11 $W '$dir/impl.cpp' -o '$o/implpp' -lm -lpthread && '$o/implpp'"
  run "$cc TENSOR_STATIC in two translation units" $cc sh -c "$cc -std=c99 $W '$dir/static1.c' '$dir/static2.c' -o '$o/static' -lm -lpthread && '$o/static'"
  run "$cc overridden TENSOR_MALLOC/TENSOR_FREE" $cc sh -c "$cc -std=c99 $W '$dir/hooks.c' -o '$o/hooks' -lm -lpthread && '$o/hooks'"
  run "$cc TENSOR_NO_WINOGRAD" $cc sh -c "$cc -std=c99 $W '$dir/nowino.c' -o '$o/nowino' -lm -lpthread && '$o/nowino'"
  run "$cc TENSOR_NO_AVX512" $cc sh -c "$cc -std=c99 $W '$dir/noavx512.c' -o '$o/noavx512' -lm -lpthread && '$o/noavx512'"
  run "$cc TENSOR_NO_SIMD" $cc sh -c "$cc -std=c99 $W -DTENSOR_NO_SIMD '$dir/noavx512.c' -o '$o/nosimd' -lm -lpthread && '$o/nosimd'"
  run "$cc c++11 overridden TENSOR_MALLOC/TENSOR_FREE" $cxx sh -c "$cxx -std=c++11 $W '$dir/hooks.cpp' -o '$o/hookspp' -lm -lpthread && '$o/hookspp'"
  # TENSOR_USE_MPI: mpi.h included outside extern "C" and without MPI's C++ bindings (Open MPI's
  # compile flags; tests/dist runs it)
  if mpiflags=$(mpicc --showme:compile 2>/dev/null); then
    run "$cc c99 implementation with TENSOR_USE_MPI" $cc $cc -std=c99 $W -DTENSOR_USE_MPI $mpiflags -c "$dir/impl.c" -o "$o/implmpi.o"
    run "$cc c++11 implementation with TENSOR_USE_MPI" $cxx $cxx -std=c++11 $W -DTENSOR_USE_MPI $mpiflags -c "$dir/impl.cpp" -o "$o/implmpipp.o"
  else
    n=$((n + 1)); echo "skipped: $cc TENSOR_USE_MPI (Open MPI's mpicc is not installed: apt-get install libopenmpi-dev)" > "$dir/result.$(printf %03d $n)"
  fi
  # the optimizers' update built free to contract a * b + c into FMA (as nvcc does) and not: the
  # same bits (tests/fp_contract.c); the CPU must run FMA code
  if [ "$(uname -m)" = x86_64 ] && ! grep -qw fma /proc/cpuinfo 2>/dev/null; then
    n=$((n + 1)); echo "skipped: fp_contract: not on this CPU: no FMA to contract into ($cc)" > "$dir/result.$(printf %03d $n)"
  else
    fmaflag=$([ "$(uname -m)" = x86_64 ] && echo -mfma)
    run "$cc the optimizers' update rounds the same with FMA contraction (tests/fp_contract.c)" $cc sh -c \
      "$cc -O2 $fmaflag -ffp-contract=fast -I$root '$root/tests/fp_contract.c' -o '$o/fpc_on' -lm -lpthread && $cc -O2 -ffp-contract=off -I$root '$root/tests/fp_contract.c' -o '$o/fpc_off' -lm -lpthread && a=\$('$o/fpc_on') && b=\$('$o/fpc_off') && echo \"\$a \$b\" && [ \"\$a\" = \"\$b\" ]"
  fi
done
wait
cat "$dir"/result.[0-9][0-9][0-9]
