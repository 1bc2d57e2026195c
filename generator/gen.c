/* gen.c: writes tensor.h from an ordered manifest of hand-written parts and the op registry.

   usage: gen MANIFEST OPS_DEF > tensor.h

   MANIFEST lists one part per line (paths relative to the project root; '#' starts a comment).
   Each part is copied between begin/end banners. Inside a part, a line that is exactly one of
       //@@ OPS_LIST          the registry as a list macro: #define TENSOR_OPS(X) X(...) ...
       //@@ OPS_ENUM          the op enum, one greppable enumerator per op
       //@@ OPS_PROTOTYPES    one public prototype per op, with its doc comment
   is replaced by what it names. The output depends only on the inputs: no dates, no paths
   outside the project, so `make check-amalgamation` can compare bytes. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FIELD_NAME, FIELD_KIND, FIELD_IMPL, FIELD_TYPES, FIELD_GRAD, FIELD_PARAMS, FIELD_DOC, N_FIELDS };
static const char *field_names[N_FIELDS] = {"name", "kind", "impl", "types", "grad", "params", "doc"};

typedef struct { char *f[N_FIELDS]; int line; } op_entry;

static op_entry *ops;
static int n_ops, cap_ops;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "gen: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) die("cannot read", path);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static char *trimmed_copy(const char *s, size_t n) {
    while (n && isspace((unsigned char)*s)) s++, n--;
    while (n && isspace((unsigned char)s[n - 1])) n--;
    char *r = malloc(n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

/* Collapses runs of whitespace (the registry lines are aligned in columns). */
static char *squeeze_spaces(char *s) {
    char *w = s;
    int in_string = 0;
    for (char *r = s; *r; r++) {
        if (*r == '"') in_string = !in_string;
        if (!in_string && isspace((unsigned char)*r)) {
            if (w > s && w[-1] != ' ' && w[-1] != '(') *w++ = ' ';
            continue;
        }
        if (!in_string && *r == ')' && w > s && w[-1] == ' ') w--;
        if (!in_string && *r == ',' && w > s && w[-1] == ' ') w--;
        *w++ = *r;
    }
    *w = 0;
    return s;
}

/* Parses every TENSOR_OP(...) entry of ops.def, skipping comments. */
static void parse_registry(const char *path) {
    char *src = read_file(path);
    int line = 1;
    for (char *p = src; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            char *e = strstr(p + 2, "*/");
            if (!e) die("unterminated comment in", path);
            for (; p < e + 2; p++) line += *p == '\n';
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') p++;
            continue;
        }
        if (*p == '\n') { line++; p++; continue; }
        if (strncmp(p, "TENSOR_OP(", 10) != 0) {
            if (!isspace((unsigned char)*p)) {
                fprintf(stderr, "gen: %s:%d: expected TENSOR_OP(...)\n", path, line);
                exit(1);
            }
            p++;
            continue;
        }
        p += 10;
        if (n_ops == cap_ops) {
            cap_ops = cap_ops ? cap_ops * 2 : 64;
            ops = realloc(ops, sizeof *ops * (size_t)cap_ops);
        }
        op_entry *op = &ops[n_ops++];
        op->line = line;
        int depth = 0, nf = 0, in_string = 0;
        char *start = p;
        for (;; p++) {
            if (!*p) die("unterminated TENSOR_OP in", path);
            if (*p == '\n') line++;
            if (*p == '"' && p[-1] != '\\') in_string = !in_string;
            if (in_string) continue;
            if (*p == '(') depth++;
            if ((*p == ',' && depth == 0) || (*p == ')' && depth == 0)) {
                if (nf >= N_FIELDS) {
                    fprintf(stderr, "gen: %s:%d: more than %d fields\n", path, op->line, N_FIELDS);
                    exit(1);
                }
                op->f[nf++] = squeeze_spaces(trimmed_copy(start, (size_t)(p - start)));
                start = p + 1;
                if (*p == ')') { p++; break; }
                continue;
            }
            if (*p == ')') depth--;
        }
        if (nf != N_FIELDS) {
            fprintf(stderr, "gen: %s:%d: %d fields, expected %d (", path, op->line, nf, N_FIELDS);
            for (int i = 0; i < N_FIELDS; i++) fprintf(stderr, "%s%s", field_names[i], i + 1 < N_FIELDS ? ", " : ")\n");
            exit(1);
        }
        for (int i = 0; i < n_ops - 1; i++)
            if (!strcmp(ops[i].f[FIELD_NAME], op->f[FIELD_NAME])) {
                fprintf(stderr, "gen: %s:%d: op '%s' declared twice\n", path, op->line, op->f[FIELD_NAME]);
                exit(1);
            }
        if (op->f[FIELD_PARAMS][0] != '(') {
            fprintf(stderr, "gen: %s:%d: params of '%s' must be a parenthesized list\n", path, op->line, op->f[FIELD_NAME]);
            exit(1);
        }
    }
    free(src);
}

static void emit_list(void) {
    printf("/* The op registry, generated from ops.def: X(name, kind, impl, types, grad, params, doc) */\n");
    printf("#define TENSOR_OPS(X) \\\n");
    for (int i = 0; i < n_ops; i++) {
        printf("    X(");
        for (int k = 0; k < N_FIELDS; k++) printf("%s%s", ops[i].f[k], k + 1 < N_FIELDS ? ", " : "");
        printf(")%s\n", i + 1 < n_ops ? " \\" : "");
    }
}

static void emit_enum(void) {
    printf("/* One enumerator per op of ops.def, in registry order. */\n");
    printf("typedef enum tensor_op {\n");
    for (int i = 0; i < n_ops; i++) printf("    TENSOR_OP_%s,\n", ops[i].f[FIELD_NAME]);
    printf("    TENSOR_OP_COUNT\n} tensor_op;\n");
}

/* The doc field is a C string literal; print its contents as a comment. */
static void print_doc(const char *doc) {
    size_t n = strlen(doc);
    if (n >= 2 && doc[0] == '"' && doc[n - 1] == '"') { doc++; n -= 2; }
    for (size_t i = 0; i < n; i++) {
        if (doc[i] == '\\' && i + 1 < n) i++;
        if (doc[i] == '*' && i + 1 < n && doc[i + 1] == '/') { putchar('*'); putchar(' '); continue; }
        putchar(doc[i]);
    }
}

static void emit_prototypes(void) {
    const char *kind = "";
    for (int i = 0; i < n_ops; i++) {
        if (strcmp(kind, ops[i].f[FIELD_KIND])) {
            kind = ops[i].f[FIELD_KIND];
            printf("\n/* -- %s ops -- */\n", kind);
        }
        printf("/* ");
        print_doc(ops[i].f[FIELD_DOC]);
        printf(" */\n");
        printf("TENSOR_API tensor *tensor_%s%s;\n", ops[i].f[FIELD_NAME], ops[i].f[FIELD_PARAMS]);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) die("usage: gen MANIFEST OPS_DEF > tensor.h", NULL);
    parse_registry(argv[2]);
    char *manifest = read_file(argv[1]);
    for (char *line = strtok(manifest, "\n"); line; line = strtok(NULL, "\n")) {
        char *path = trimmed_copy(line, strlen(line));
        if (!path[0] || path[0] == '#') { free(path); continue; }
        char *text = read_file(path);
        printf("/* ==== begin %s ==== */\n", path);
        for (char *l = text; *l;) {
            char *e = strchr(l, '\n');
            size_t n = e ? (size_t)(e - l) : strlen(l);
            if (!strncmp(l, "//@@ OPS_LIST", 13) && n == 13) emit_list();
            else if (!strncmp(l, "//@@ OPS_ENUM", 13) && n == 13) emit_enum();
            else if (!strncmp(l, "//@@ OPS_PROTOTYPES", 19) && n == 19) emit_prototypes();
            else fwrite(l, 1, n, stdout), putchar('\n');
            l += n + (e != NULL);
        }
        printf("/* ==== end %s ==== */\n", path);
        free(text);
        free(path);
    }
    return 0;
}
