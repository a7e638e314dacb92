/* test_run_compare.h — what the resume tests (tests/rl/test_resume.c,
 * tests/dqn/test_dqn_resume.c) share: `foxhunt train` runs with their logs in the test's
 * directory, metrics.csv rows compared as text (timing columns left out), and two
 * checkpoints compared tensor by tensor, byte for byte, the first difference named.
 *
 * Include test_proc.h first (it sets _GNU_SOURCE); the runs need FH_FOXHUNT_BIN. */
#ifndef FOXHUNT_TEST_RUN_COMPARE_H
#define FOXHUNT_TEST_RUN_COMPARE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/safetensors.h"
#include "io/ckpt_fixture.h"
#include "test_proc.h"
#include "test_util.h"

#ifdef FH_FOXHUNT_BIN
/* foxhunt ARGS... with its output in DIR/LOG.out and DIR/LOG.err; returns the exit status;
 * *err_text gets stderr (malloc'd, never NULL). */
static inline int fh_run_foxhunt_stderr(const char *dir, const char *log, const char *const *args,
                                        char **err_text)
{
    int rc = fh_run_foxhunt(dir, log, (char **)args, NULL, err_text);
    if (!*err_text)
        *err_text = calloc(1, 1);
    return rc;
}

/* foxhunt train HEAD... EXTRA... (head may be NULL) with its output in DIR/LOG.out and
 * DIR/LOG.err; a failure's stderr is printed. Returns the exit status. */
static inline int fh_run_train(const char *dir, const char *log, const char *const *head,
                               const char *const *extra)
{
    const char *args[FH_PROC_MAX_ARGS];
    int n = 0;
    args[n++] = "train";
    for (int i = 0; head && head[i] && n < FH_PROC_MAX_ARGS - 2; i++)
        args[n++] = head[i];
    for (int i = 0; extra[i] && n < FH_PROC_MAX_ARGS - 2; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    char *text = NULL;
    int rc = fh_run_foxhunt(dir, log, (char **)args, NULL, &text);
    if (rc != 0)
        fprintf(stderr, "train (%s) exited %d:\n%s\n", log, rc, text ? text : "");
    free(text);
    return rc;
}
#endif

/* DIR/SUB/FILE as a malloc'd string (NULL if unreadable). */
static inline char *fh_read_in(const char *dir, const char *sub, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, file);
    return fh_read_text(path);
}

/* fix_poke at a byte offset into the tensor (fix_poke counts in elements of its dtype). */
static inline int fh_poke_bytes(const char *dst, const char *src, const char *key, size_t byte,
                                const void *bytes, size_t len)
{
    fh_st_file f;
    fh_error err;
    size_t elem = 1;
    if (fh_st_read(&f, src, &err) == FH_OK) {
        const fh_st_tensor *t = fh_st_find(&f, key);
        elem = t ? fh_dtype_size(t->dtype) : 1;
        fh_st_file_free(&f);
    }
    return fix_poke(dst, src, key, byte / elem, bytes, len);
}

/* ---- metrics.csv ---- */

/* Timing columns (…_seconds, …steps_per_second) differ between any two runs. */
static inline int fh_is_timing_column(const char *name)
{
    size_t n = strlen(name);
    const char *suffixes[2] = {"_seconds", "steps_per_second"};
    for (int k = 0; k < 2; k++) {
        size_t m = strlen(suffixes[k]);
        if (n >= m && strcmp(name + n - m, suffixes[k]) == 0)
            return 1;
    }
    return 0;
}

/* Splits a line in place on ','; returns the field count. */
static inline int fh_split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    char *nl = strchr(fields[n - 1], '\n');
    if (nl)
        *nl = '\0';
    return n;
}

/* Line `index` (0 = header) of text, copied into out; 0 when absent. */
static inline int fh_get_line(const char *text, int index, char *out, size_t size)
{
    const char *p = text;
    for (int i = 0; i < index && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p || !*p)
        return 0;
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len >= size)
        len = size - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 1;
}

/* The rows of iterations first..last of csv a (starting at line a_first, the uninterrupted
 * run) and csv b (at line b_first, the resumed one): every non-timing column equal as
 * written (%.9g text), at least 18 of them. */
static inline void fh_compare_metrics(const char *what, const char *csv_a, int a_first,
                                      const char *csv_b, int b_first, int first, int last)
{
    char header[4096], la[4096], lb[4096];
    char *names[64], *fa[64], *fb[64];
    if (!fh_get_line(csv_a, 0, header, sizeof header)) {
        CHECK_MSG(0, "%s: no header", what);
        return;
    }
    int nc = fh_split_csv(header, names, 64);
    for (int it = first; it <= last; it++) {
        int ok_a = fh_get_line(csv_a, a_first + it - first, la, sizeof la);
        int ok_b = fh_get_line(csv_b, b_first + it - first, lb, sizeof lb);
        CHECK_MSG(ok_a && ok_b, "%s: iteration %d row missing (%d, %d)", what, it, ok_a, ok_b);
        if (!ok_a || !ok_b)
            return;
        int na = fh_split_csv(la, fa, 64), nb = fh_split_csv(lb, fb, 64);
        CHECK_MSG(na == nc && nb == nc, "%s: row %d has %d / %d fields, header %d", what, it,
                  na, nb, nc);
        if (na != nc || nb != nc)
            return;
        CHECK_MSG(atoi(fa[0]) == it && atoi(fb[0]) == it, "%s: rows are iterations %s / %s, "
                  "expected %d", what, fa[0], fb[0], it);
        int compared = 0, mismatch = -1;
        for (int c = 0; c < nc; c++) {
            if (fh_is_timing_column(names[c]))
                continue;
            compared++;
            if (strcmp(fa[c], fb[c]) != 0 && mismatch < 0)
                mismatch = c;
        }
        CHECK_MSG(mismatch < 0, "%s: iteration %d column %s: uninterrupted %s, resumed %s",
                  what, it, mismatch < 0 ? "" : names[mismatch], mismatch < 0 ? "" : fa[mismatch],
                  mismatch < 0 ? "" : fb[mismatch]);
        CHECK(compared >= 18); /* 14 common columns and the learner's own */
    }
}

/* A resumed run's metrics against the uninterrupted run's metrics.csv text ref_csv (of
 * ref_lines lines with the header; -1: not counted): resumed_dir's metrics.csv has
 * csv_lines lines, its metrics.jsonl jsonl_lines, and its rows from line 1, iterations
 * first..last, equal ref_csv's (fh_compare_metrics). */
static inline void fh_check_resumed_metrics(const char *what, const char *ref_csv, int ref_lines,
                                            const char *resumed_dir, int csv_lines,
                                            int jsonl_lines, int first, int last)
{
    char path[512];
    snprintf(path, sizeof path, "%s/metrics.csv", resumed_dir);
    char *csv = fh_read_text(path);
    snprintf(path, sizeof path, "%s/metrics.jsonl", resumed_dir);
    char *jl = fh_read_text(path);
    CHECK_MSG(ref_csv && csv && jl, "%s: unreadable metrics (uninterrupted csv %d, resumed csv "
              "%d, jsonl %d)", what, ref_csv != NULL, csv != NULL, jl != NULL);
    if (ref_csv && csv && jl) {
        if (ref_lines >= 0)
            CHECK_MSG(fh_count_lines(ref_csv) == ref_lines, "%s: the uninterrupted run's "
                      "metrics.csv has %d lines, expected %d", what, fh_count_lines(ref_csv),
                      ref_lines);
        CHECK_MSG(fh_count_lines(csv) == csv_lines, "%s: %s has %d lines, expected %d", what,
                  "metrics.csv", fh_count_lines(csv), csv_lines);
        CHECK_MSG(fh_count_lines(jl) == jsonl_lines, "%s: %s has %d lines, expected %d", what,
                  "metrics.jsonl", fh_count_lines(jl), jsonl_lines);
        fh_compare_metrics(what, ref_csv, first, csv, 1, first, last);
    }
    free(csv);
    free(jl);
}

/* ---- checkpoints ---- */

/* Every tensor of the checkpoints at path_a and path_b: the same count, names, dtypes,
 * shapes and bytes; the first difference is a failed check naming the tensor and the
 * offset, equality one passed check. *a keeps the first file for the caller's further
 * checks (the caller frees it; it is empty when a file was unreadable). Returns 1 when
 * every tensor of a is equal to b's, 0 when one differs, -1 when a file was unreadable. */
static inline int fh_compare_checkpoints(const char *what, const char *path_a,
                                         const char *path_b, fh_st_file *a)
{
    fh_st_file b;
    fh_error err;
    memset(a, 0, sizeof *a);
    memset(&b, 0, sizeof b);
    if (fh_st_read(a, path_a, &err) != FH_OK || fh_st_read(&b, path_b, &err) != FH_OK) {
        CHECK_MSG(0, "%s: %s", what, err.message);
        fh_st_file_free(a);
        fh_st_file_free(&b);
        memset(a, 0, sizeof *a);
        return -1;
    }
    CHECK_MSG(a->n_tensors == b.n_tensors, "%s: %zu vs %zu tensors", what, a->n_tensors,
              b.n_tensors);
    int bad = 0;
    for (size_t i = 0; i < a->n_tensors && !bad; i++) {
        const fh_st_tensor *ta = &a->tensors[i];
        const fh_st_tensor *tb = fh_st_find(&b, ta->name);
        if (!tb || tb->dtype != ta->dtype || tb->nbytes != ta->nbytes || tb->rank != ta->rank ||
            memcmp(tb->shape, ta->shape, sizeof ta->shape) != 0) {
            CHECK_MSG(0, "%s: tensor %s missing or of another dtype/shape", what, ta->name);
            bad = 1;
            break;
        }
        const unsigned char *pa = ta->data, *pb = tb->data;
        for (size_t k = 0; k < ta->nbytes; k++)
            if (pa[k] != pb[k]) {
                CHECK_MSG(0, "%s: tensor %s: first differing byte at offset %zu (element %zu)",
                          what, ta->name, k, k / fh_dtype_size(ta->dtype));
                bad = 1;
                break;
            }
    }
    if (!bad)
        fh_test_passed++;
    fh_st_file_free(&b);
    return !bad;
}

#endif
