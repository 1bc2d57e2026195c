/* gpt_text.h: a text of a few kilobytes for examples/gpt.c's tests (tests/test_gpt.c and the MPI
   test, tests/dist/test_dist_mpi.c): words drawn from a list by a fixed recurrence; the first 90%
   trains. Include after examples/gpt.c. */
#ifndef GPT_TEXT_H
#define GPT_TEXT_H
static gpt_data gpt_test_text(void) {
    static const char *words[] = {"the ", "cat ", "sat ", "on ", "a ", "mat. ", "It ", "was ", "warm, ", "and ", "dogs ", "ran\n"};
    gpt_data d = {0};
    d.bytes = (unsigned char *)malloc(8192);
    uint32_t x = 12345;
    while (d.bytes && d.n < 8000) {
        x = x * 1103515245u + 12345u;
        const char *w = words[(x >> 16) % 12];
        size_t len = strlen(w);
        memcpy(d.bytes + d.n, w, len);
        d.n += (int64_t)len;
    }
    d.n_train = d.n * 9 / 10;
    return d;
}
#endif
