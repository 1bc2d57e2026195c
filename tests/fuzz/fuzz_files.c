/* The file loaders' fuzzers: one program for the three loaders, which it takes from the name it
   is run by (a link named ..safetensors, ..npy or ..npz: the Makefile makes one per loader, so the
   implementation is compiled once). Each parses its input as a whole file from memory, through the
   loader's own parse function (what tensor_load, tensor_load_npy and tensor_load_npz run on a file's
   bytes), and checks: a failure leaves a message naming the loader; a success gives sane tensors
   whose every byte can be read (ASan sees any overread); nothing leaks; and the memory the loader
   holds at any moment, counted from empty caches, stays within a small multiple of the input's size
   (fz_bound below), so no file can make it allocate more than the file implies.
   Built two ways (make fuzz, make test), like tests/fuzz/fuzz_api.c:
     clang -fsanitize=fuzzer,address,undefined -DFUZZ_LIBFUZZER tests/fuzz/fuzz_files.c -o f; ln f fuzz_npy
     cc tests/fuzz/fuzz_files.c -o replay; ln replay replay-npy; replay-npy [--each] FILE|FOLDER ...
   The seed corpora (tests/fuzz/corpus_safetensors, _npy, _npz) hold valid files of every dtype and
   the malformed files of the tests. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Every library allocation is counted (a header before the block keeps its size), so the peak can
   be compared with the input's size. */
static size_t fz_live, fz_peak;
static void *fz_malloc(size_t n) {
    if (n > ((size_t)1 << 31)) return NULL;
    size_t *p = (size_t *)malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    fz_live += n;
    if (fz_live > fz_peak) fz_peak = fz_live;
    return (char *)p + 16;
}
static void fz_free(void *q) {
    if (!q) return;
    size_t *p = (size_t *)((char *)q - 16);
    fz_live -= p[0];
    free(p);
}
#define TENSOR_MALLOC(n) fz_malloc(n)
#define TENSOR_FREE(p) fz_free(p)
#define TENSOR_IMPLEMENTATION
#include "../../tensor.h"

/* The loader under test (1 safetensors, 2 .npy, 3 .npz), from the program's name. */
static int fz_loader;
static const char *fz_fn = "?";
static void fz_choose(const char *argv0) {
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    fz_loader = strstr(base, "safetensors") ? 1 : strstr(base, "npy") ? 2 : strstr(base, "npz") ? 3 : 0;
    if (!fz_loader) {
        fprintf(stderr, "%s: run me by a name that says the loader (..safetensors, ..npy, ..npz)\n", argv0);
        exit(2);
    }
    fz_fn = fz_loader == 1 ? "tensor_load" : fz_loader == 2 ? "tensor_load_npy" : "tensor_load_npz";
}
#define FZ_INIT(argv0) fz_choose(argv0)
/* the memory a loader may hold for an input of n bytes */
static size_t fz_bound(size_t n) {
    if (fz_loader == 1) return 16 * n + 4096; /* header copy, entries, index, spans, and per tensor a handle, a
                                                 storage block and its name: 15x an entry's 50 bytes of JSON */
    if (fz_loader == 2) return 4 * n + 4096;
    return 1100 * n + 4096; /* a deflated member may be up to 1032 times its compressed size */
}

static void fz_fail(const char *what, int line) {
    fprintf(stderr, "fuzz_files.c:%d: check failed: %s (last error: %s)\n", line, what, tensor_last_error() ? tensor_last_error() : "none");
    abort();
}
#define FZ_CHECK(c) do { if (!(c)) fz_fail(#c, __LINE__); } while (0)

/* A loaded tensor: sane geometry, every byte readable, bools 0 or 1. */
static void fz_check_tensor(tensor *t) {
    FZ_CHECK(t && tensor_ndim(t) >= 0 && tensor_ndim(t) <= TENSOR_MAX_DIMS);
    int64_t n = tensor_numel(t);
    FZ_CHECK(n >= 0);
    size_t bytes = (size_t)n * tensor_dtype_size(tensor_get_dtype(t));
    unsigned char *buf = (unsigned char *)malloc(bytes ? bytes : 1);
    FZ_CHECK(buf != NULL);
    FZ_CHECK(tensor_copy_to(t, buf, bytes) == 0);
    if (tensor_get_dtype(t) == TENSOR_BOOL)
        for (size_t i = 0; i < bytes; i++) FZ_CHECK(buf[i] <= 1);
    free(buf);
}

static int fz_run(const uint8_t *data, size_t size) {
    tensor__rfile f;
    tensor__rfile_mem(&f, data, size, "fuzz input");
    tensor_clear_error();
    tensor_empty_cache(); /* every handle and block of this run is a fresh allocation, counted below */
    fz_peak = fz_live;
    size_t base = fz_live;
    if (fz_loader == 2) {
        tensor *t = tensor__npy_parse(fz_fn, &f, 0, f.size);
        FZ_CHECK(fz_peak - base <= fz_bound(size));
        if (!t) FZ_CHECK(tensor_last_error() && strstr(tensor_last_error(), fz_fn));
        else fz_check_tensor(t);
        tensor_free(t);
        FZ_CHECK(tensor_live_handles() == 0 && tensor_live_bytes() == 0);
        tensor_clear_error();
        return 0;
    }
    tensor_dict *d = fz_loader == 1 ? tensor__st_parse(fz_fn, &f, NULL) : tensor__npz_parse(fz_fn, &f);
    FZ_CHECK(fz_peak - base <= fz_bound(size));
    if (!d) FZ_CHECK(tensor_last_error() && strstr(tensor_last_error(), fz_fn));
    for (int i = 0; d && i < tensor_dict_len(d); i++) {
        const char *name = tensor_dict_name(d, i);
        FZ_CHECK(name && tensor_dict_get(d, name) == tensor_dict_at(d, i)); /* names are unique */
        fz_check_tensor(tensor_dict_at(d, i));
    }
    for (int i = 0; d && i < tensor_dict_metadata_len(d); i++) FZ_CHECK(tensor_dict_metadata(d, tensor_dict_metadata_key(d, i)) != NULL);
    tensor_dict_free(d);
    FZ_CHECK(tensor_live_handles() == 0 && tensor_live_bytes() == 0);
    tensor_clear_error();
    return 0;
}

#include "fuzz_main.h"
