/* The replay of a fuzzer's inputs, shared by the fuzzers (tests/fuzz/fuzz_*.c, through
   fuzz_main.h, which defines fz_sep and fz_run_all(data, size) before it).
     replay [--each] FILE|FOLDER ...     runs each file's inputs in a child process
     replay --unpack DIR FILE|FOLDER...  writes each packed input as a file of its own
   It prints `ok NAME` / `FAIL NAME` lines for tests/run.sh: one per folder, or one per file after
   --each (the regressions). */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The replay. Each file runs in a child process, so a crash, a failed check or (under make
   test-asan) a sanitizer's report names its file and the other files still run. The report goes
   to the original stdout; tensor_print's text goes to /dev/null. */
static FILE *report;

/* Runs one file; NULL if it passed, else what went wrong. */
static const char *replay_file(const char *path, char *why, size_t n_why) {
    FILE *f = fopen(path, "rb");
    if (!f) return "unreadable";
    uint8_t *buf = (uint8_t *)malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    if (!buf) return "out of memory";
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        fz_run_all(buf, n);
        exit(0); /* exit, not _exit: LeakSanitizer checks at exit */
    }
    free(buf);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return "cannot fork";
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return NULL;
    if (WIFSIGNALED(st)) snprintf(why, n_why, "crashed (signal %d)", WTERMSIG(st));
    else snprintf(why, n_why, "failed (exit %d)", WEXITSTATUS(st));
    return why;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The regular files of a folder, sorted, as malloc'd paths (or path itself if it is a file);
   -1 if it does not exist. */
static int list_files(const char *path, char ***out) {
    struct stat st;
    *out = NULL;
    if (stat(path, &st) != 0) return -1;
    char **names = NULL;
    int n = 0, cap = 0;
    if (!S_ISDIR(st.st_mode)) {
        names = (char **)malloc(sizeof *names);
        names[n++] = strdup(path);
        *out = names;
        return n;
    }
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (e->d_name[0] == '.' || stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (n == cap) { cap = cap ? 2 * cap : 64; names = (char **)realloc(names, sizeof *names * (size_t)cap); }
        names[n++] = strdup(p);
    }
    if (d) closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

/* replay --unpack DIR FILE|FOLDER...: writes each input of the files as a file of its own in DIR
   (make fuzz starts from these: libFuzzer mutates one input per file faster than packs). */
static int unpack(int argc, char **argv) {
    int written = 0;
    for (int a = 3; a < argc; a++) {
        char **files;
        int n = list_files(argv[a], &files);
        for (int i = 0; i < n; i++) {
            FILE *f = fopen(files[i], "rb");
            uint8_t *buf = (uint8_t *)malloc(1 << 20);
            size_t len = f && buf ? fread(buf, 1, 1 << 20, f) : 0, start = 0;
            if (f) fclose(f);
            for (size_t k = 0; buf && k <= len; k++) {
                bool end = k == len || (k + sizeof fz_sep <= len && !memcmp(buf + k, fz_sep, sizeof fz_sep));
                if (!end) continue;
                const char *base = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];
                char p[4096];
                snprintf(p, sizeof p, "%s/%s-%d", argv[2], base, written);
                FILE *o = fopen(p, "wb");
                if (!o || fwrite(buf + start, 1, k - start, o) != k - start) { fprintf(stderr, "replay: cannot write %s\n", p); return 1; }
                fclose(o);
                written++;
                start = k + sizeof fz_sep;
                k = start - 1;
            }
            free(buf);
            free(files[i]);
        }
        free(files);
    }
    fprintf(stderr, "replay: %d inputs unpacked into %s\n", written, argv[2]);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "--unpack")) return unpack(argc, argv);
#ifdef FZ_INIT
    FZ_INIT(argv[0]);
#endif
    fflush(stdout);
    int fd = dup(1);
    report = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!report || !freopen("/dev/null", "w", stdout)) { fprintf(stderr, "replay: cannot redirect stdout\n"); return 2; }
    bool each = false;
    int failed = 0;
    char why[64];
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--each")) { each = true; continue; }
        char **files;
        int n = list_files(argv[a], &files), bad_here = 0;
        if (n < 0) { fprintf(report, "FAIL fuzz-replay %s: not found\n", argv[a]); failed++; continue; }
        for (int i = 0; i < n; i++) {
            const char *bad = replay_file(files[i], why, sizeof why);
            if (bad) { fprintf(report, "FAIL fuzz-replay %s: %s\n", files[i], bad); failed++; bad_here++; }
            else if (each) fprintf(report, "ok fuzz-replay %s\n", files[i]);
            fflush(report);
            free(files[i]);
        }
        free(files);
        if (!each && !bad_here) fprintf(report, "ok fuzz-replay %s (%d inputs)\n", argv[a], n);
        fflush(report);
    }
    fclose(report);
    return failed ? 1 : 0;
}
