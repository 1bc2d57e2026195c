/* tensor.h - v0.1.0 - a single-file C tensor library with PyTorch's model of computation.

   GENERATED FILE: do not edit. It is made by generator/gen from ops.def, tensor_autograd.h and the
   parts listed in generator/manifest.txt. Regenerate with `make tensor.h`; `make check-amalgamation`
   verifies that this file matches its sources.

   USAGE
       In exactly one C or C++ file:
           #define TENSOR_IMPLEMENTATION
           #include "tensor.h"
       Every other file includes "tensor.h" without the define. Build with one command:
           cc -O2 app.c -o app -lm -lpthread

       #include "tensor.h"
       tensor *a = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
       tensor *b = tensor_arange(0, 3, 1, TENSOR_F32);
       tensor *c = tensor_add(a, b);              // broadcasting, like PyTorch
       if (!c) fprintf(stderr, "%s\n", tensor_last_error());
       tensor_print(c);
       tensor_free(a); tensor_free(b); tensor_free(c);

   RULES IN FOUR LINES
       Every tensor * a function returns is a handle you own: free it with tensor_free, or make it
       inside tensor_scope_begin()/tensor_scope_end() and it is freed there unless tensor_keep'd.
       Views share storage; storage lives while any handle (or autograd graph) refers to it.
       Nothing aborts on bad input: a failing function returns NULL (or non-zero) and records a
       message naming the function and the values at fault (tensor_last_error); NULL inputs fail
       without crashing, so a chain of calls can be checked once at its end.
       Threads may call the library at once, each with its own scopes, errors, grad mode and
       random generator; they may share tensors they only read, and free any handle (README:
       Threads).

   CONFIGURATION (define before including, in the implementing file)
       TENSOR_IMPLEMENTATION   emit the implementation in this translation unit      (undefined)
       TENSOR_STATIC           make every function static to this translation unit     (undefined)
       TENSOR_MALLOC(n)        allocator; define TENSOR_MALLOC and TENSOR_FREE together (malloc)
       TENSOR_FREE(p)          deallocator                                              (free)
       TENSOR_ASSERT(x)        internal invariant check, never used for bad input       (assert)
       TENSOR_CACHE_LIMIT      bytes of freed storage kept for reuse (tensor_empty_cache) (1 GiB)
       TENSOR_NO_SIMD          use the portable scalar kernels even where SIMD exists   (undefined)
       TENSOR_USE_SLEEF        SLEEF's vector math instead of ours (link -lsleef)       (undefined)
       TENSOR_USE_MPI          the tensor_dist_ collectives over MPI (build with mpicc) (undefined)
       TENSOR_NO_THREADS       run every kernel on the calling thread                   (undefined)
       TENSOR_SPIN_US          how long an idle pool worker polls before it sleeps, us  (5000)
   The SIMD instance (avx512, avx2, sse2, neon, scalar) is chosen at run time from the CPU; the
   environment variable TENSOR_SIMD=avx2 (etc.) picks a lower one, and the GEMM kernel follows.
   tensor_build_info() names both. The thread pool uses every core unless tensor_set_num_threads
   or the environment variable TENSOR_NUM_THREADS (read at the first use) says otherwise.

   SECTIONS (search for the anchor)
       >>api >>impl >>core >>errors >>scopes >>dtypes >>dispatch >>iter >>create >>rng
       >>elementwise >>reduce >>shape >>construct >>gemm >>linalg >>products >>nn
       >>norm >>conv >>pool >>attention >>loss >>print >>autograd >>optim >>file-io >>npy
       >>dlpack >>dist >>runtime

   VERSION 0.1.0. The licence (MIT) is at the end of the file.
*/
