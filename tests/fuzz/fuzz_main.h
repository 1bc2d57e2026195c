/* What every fuzzer in tests/fuzz/ ends with: the file that includes it defines
   fz_run(data, size), one input's run, first. Built with -DFUZZ_LIBFUZZER this is the libFuzzer
   entry point; otherwise the replay (replay.h). */
/* A file may hold several inputs, each ended by this line (the committed corpus packs many small
   ones into a few files); each runs as if alone. */
static const uint8_t fz_sep[8] = {'\n', '-', '-', 'f', 'z', '-', '-', '\n'};
static int fz_run_all(const uint8_t *data, size_t size) {
    size_t start = 0;
    for (size_t i = 0; i + sizeof fz_sep <= size; i++)
        if (!memcmp(data + i, fz_sep, sizeof fz_sep)) { fz_run(data + start, i - start); start = i + sizeof fz_sep; i = start - 1; }
    return fz_run(data + start, size - start);
}

#ifdef FUZZ_LIBFUZZER
/* Requests past 2 GiB fail rather than abort, under ASan too (the cap above covers the library;
   this covers the harness and the sanitizer runtime). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1:max_allocation_size_mb=2048"; }
#ifdef FZ_INIT /* what the fuzzer does first with its program's name */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    FZ_INIT((*argv)[0]);
    return 0;
}
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_run_all(data, size); }
#else
#include "replay.h"
#endif
