/* test_resume.c — resume is bit-identical on the CPU (issue 5), through the real
 * `foxhunt train --resume` (FH_FOXHUNT_BIN).
 *
 * Two ways of stopping at iteration 2 of a 4-iteration run:
 *  A. the mid-run checkpoint: run A trains 4 iterations with --checkpoint-every 2;
 *     run B is a new process `--resume A/checkpoint_000002.safetensors` (every setting
 *     comes from the checkpoint) into a fresh directory: its rows 3 and 4 must equal A's.
 *  B. a run that ended: run C trains --iterations 2 (final.safetensors at iteration 2);
 *     then `--resume C/final.safetensors --iterations 4 --out C` continues it in place;
 *     its metrics rows 1..4 must equal those of run D, 4 iterations uninterrupted.
 *     (--anneal-lr 0 here: with annealing the lr schedule depends on --iterations, so a
 *     2-iteration run is not the first half of a 4-iteration one.)
 * "Equal": every non-timing column of metrics.csv as written (%.9g text; timing columns
 * end in _seconds or steps_per_second), the same number of metrics.jsonl lines, and
 * every tensor of the two final checkpoints byte-identical (networks, Adam moments and
 * steps, normalisation, episode states, random streams). OpenBLAS runs with --threads 1
 * in every process, as resume requires a fixed thread count (nn.h). */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <string.h>

#include "foxhunt/safetensors.h"
#include "test_util.h"

static const char *COMMON[] = {"--device", "cpu", "--episodes", "16", "--steps", "64",
                               "--epochs", "2", "--minibatch", "128", "--synthetic-bars",
                               "3000", "--threads", "1", "--horizon", "40", "--seed", "3",
                               "--eval-at-end", "0", NULL};

static char g_dir[256];

/* foxhunt train COMMON... extra... ; returns the exit status. */
static int train(const char *log_name, const char *const *extra, int with_common)
{
    char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    argv[n++] = (char *)"train";
    for (int i = 0; with_common && COMMON[i]; i++)
        argv[n++] = (char *)COMMON[i];
    for (int i = 0; extra[i]; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s/%s.out", g_dir, log_name);
    snprintf(errp, sizeof errp, "%s/%s.err", g_dir, log_name);
    int rc = fh_proc_run(argv, out, errp);
    if (rc != 0) {
        char *text = fh_read_text(errp);
        fprintf(stderr, "train (%s) exited %d:\n%s\n", log_name, rc, text ? text : "");
        free(text);
    }
    return rc;
}

static int is_timing_column(const char *name)
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
static int split_csv(char *line, char **fields, int max)
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
static int get_line(const char *text, int index, char *out, size_t size)
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

/* Compares data rows [first, last] (1-based iterations) of csv a (rows at
 * a_row0 + i - first) and b, non-timing columns only, as text. */
static void compare_metrics(const char *what, const char *csv_a, int a_first_line,
                            const char *csv_b, int b_first_line, int first, int last)
{
    char header[4096], la[4096], lb[4096];
    char *names[64], *fa[64], *fb[64];
    if (!get_line(csv_a, 0, header, sizeof header)) {
        CHECK_MSG(0, "%s: no header", what);
        return;
    }
    int nc = split_csv(header, names, 64);
    for (int it = first; it <= last; it++) {
        int ok_a = get_line(csv_a, a_first_line + it - first, la, sizeof la);
        int ok_b = get_line(csv_b, b_first_line + it - first, lb, sizeof lb);
        CHECK_MSG(ok_a && ok_b, "%s: iteration %d row missing (%d, %d)", what, it, ok_a, ok_b);
        if (!ok_a || !ok_b)
            return;
        int na = split_csv(la, fa, 64), nb = split_csv(lb, fb, 64);
        CHECK_MSG(na == nc && nb == nc, "%s: row %d has %d / %d fields, header %d", what, it,
                  na, nb, nc);
        if (na != nc || nb != nc)
            return;
        CHECK_MSG(atoi(fa[0]) == it && atoi(fb[0]) == it, "%s: rows are iterations %s / %s, "
                  "expected %d", what, fa[0], fb[0], it);
        int compared = 0, mismatch = -1;
        for (int c = 0; c < nc; c++) {
            if (is_timing_column(names[c]))
                continue;
            compared++;
            if (strcmp(fa[c], fb[c]) != 0 && mismatch < 0)
                mismatch = c;
        }
        CHECK_MSG(mismatch < 0, "%s: iteration %d column %s: uninterrupted %s, resumed %s",
                  what, it, mismatch < 0 ? "" : names[mismatch], mismatch < 0 ? "" : fa[mismatch],
                  mismatch < 0 ? "" : fb[mismatch]);
        CHECK(compared >= 20);
    }
}

/* Every tensor of a and b: same names, dtypes, shapes, bytes. */
static void compare_checkpoints(const char *what, const char *path_a, const char *path_b)
{
    fh_st_file a, b;
    fh_error err;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (fh_st_read(&a, path_a, &err) != FH_OK || fh_st_read(&b, path_b, &err) != FH_OK) {
        CHECK_MSG(0, "%s: %s", what, err.message);
        fh_st_file_free(&a);
        fh_st_file_free(&b);
        return;
    }
    CHECK_MSG(a.n_tensors == b.n_tensors, "%s: %zu vs %zu tensors", what, a.n_tensors,
              b.n_tensors);
    int networks = 0, bad = 0;
    for (size_t i = 0; i < a.n_tensors && !bad; i++) {
        const fh_st_tensor *ta = &a.tensors[i];
        const fh_st_tensor *tb = fh_st_find(&b, ta->name);
        if (!tb || tb->dtype != ta->dtype || tb->nbytes != ta->nbytes || tb->rank != ta->rank ||
            memcmp(tb->shape, ta->shape, sizeof ta->shape) != 0) {
            CHECK_MSG(0, "%s: tensor %s missing or of another dtype/shape", what, ta->name);
            bad = 1;
            break;
        }
        const unsigned char *pa = ta->data, *pb = tb->data;
        for (size_t k = 0; k < ta->nbytes; k++) {
            if (pa[k] != pb[k]) {
                CHECK_MSG(0, "%s: tensor %s: first differing byte at offset %zu "
                          "(element %zu)", what, ta->name, k, k / fh_dtype_size(ta->dtype));
                bad = 1;
                break;
            }
        }
        if (strstr(ta->name, "policy_") || strstr(ta->name, "value_") || strstr(ta->name, "fc"))
            networks++;
    }
    if (!bad) {
        fh_test_passed++;
        /* actor 6 + critic 12 + curiosity 4 tensors, plus their Adam moments */
        CHECK_MSG(networks >= 22, "%s: only %d network tensors found", what, networks);
    }
    fh_st_file_free(&a);
    fh_st_file_free(&b);
}

static char *read_in(const char *sub, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", g_dir, sub, file);
    return fh_read_text(path);
}

static void path_in(char *out, size_t size, const char *sub, const char *file)
{
    snprintf(out, size, "%s/%s/%s", g_dir, sub, file);
}

static void test_resume_mid_run_checkpoint(void)
{
    char out_a[300], out_b[300], ck[512];
    snprintf(out_a, sizeof out_a, "%s/A", g_dir);
    snprintf(out_b, sizeof out_b, "%s/B", g_dir);
    const char *run_a[] = {"--iterations", "4", "--checkpoint-every", "2", "--out", out_a, NULL};
    if (train("A", run_a, 1) != 0) {
        CHECK_MSG(0, "run A failed");
        return;
    }
    path_in(ck, sizeof ck, "A", "checkpoint_000002.safetensors");
    CHECK_MSG(fh_file_exists(ck), "%s missing", ck);
    /* settings from the checkpoint alone; only the output directory is new */
    const char *run_b[] = {"--resume", ck, "--out", out_b, NULL};
    if (train("B", run_b, 0) != 0) {
        CHECK_MSG(0, "resumed run B failed");
        return;
    }
    char *csv_a = read_in("A", "metrics.csv"), *csv_b = read_in("B", "metrics.csv");
    char *jl_b = read_in("B", "metrics.jsonl");
    CHECK(csv_a && csv_b && jl_b);
    if (csv_a && csv_b && jl_b) {
        CHECK_MSG(fh_count_lines(csv_a) == 5, "A: %d csv lines", fh_count_lines(csv_a));
        /* a fresh directory: the resumed run writes rows 3 and 4 only */
        CHECK_MSG(fh_count_lines(csv_b) == 3, "B: %d csv lines", fh_count_lines(csv_b));
        CHECK_MSG(fh_count_lines(jl_b) == 2, "B: %d jsonl lines", fh_count_lines(jl_b));
        compare_metrics("mid-run checkpoint resume", csv_a, 3, csv_b, 1, 3, 4);
    }
    free(csv_a);
    free(csv_b);
    free(jl_b);
    char fa[512], fb[512];
    path_in(fa, sizeof fa, "A", "final.safetensors");
    path_in(fb, sizeof fb, "B", "final.safetensors");
    compare_checkpoints("final checkpoints A vs B", fa, fb);
}

static void test_resume_finished_run(void)
{
    char out_c[300], out_d[300], ck[512];
    snprintf(out_c, sizeof out_c, "%s/C", g_dir);
    snprintf(out_d, sizeof out_d, "%s/D", g_dir);
    const char *run_c[] = {"--iterations", "2", "--anneal-lr", "0", "--checkpoint-every",
                           "0", "--out", out_c, NULL};
    const char *run_d[] = {"--iterations", "4", "--anneal-lr", "0", "--checkpoint-every",
                           "0", "--out", out_d, NULL};
    if (train("C", run_c, 1) != 0 || train("D", run_d, 1) != 0) {
        CHECK_MSG(0, "run C or D failed");
        return;
    }
    path_in(ck, sizeof ck, "C", "final.safetensors");
    const char *resume_c[] = {"--resume", ck, "--iterations", "4", "--out", out_c, NULL};
    if (train("C-resumed", resume_c, 0) != 0) {
        CHECK_MSG(0, "resuming C failed");
        return;
    }
    char *csv_c = read_in("C", "metrics.csv"), *csv_d = read_in("D", "metrics.csv");
    char *jl_c = read_in("C", "metrics.jsonl");
    CHECK(csv_c && csv_d && jl_c);
    if (csv_c && csv_d && jl_c) {
        /* in place: rows 1-2 kept from the first process, 3-4 appended */
        CHECK_MSG(fh_count_lines(csv_c) == 5, "C: %d csv lines", fh_count_lines(csv_c));
        CHECK_MSG(fh_count_lines(jl_c) == 4, "C: %d jsonl lines", fh_count_lines(jl_c));
        compare_metrics("stopped-run resume", csv_d, 1, csv_c, 1, 1, 4);
    }
    free(csv_c);
    free(csv_d);
    free(jl_c);
    char fc[512], fd[512];
    path_in(fc, sizeof fc, "C", "final.safetensors");
    path_in(fd, sizeof fd, "D", "final.safetensors");
    compare_checkpoints("final checkpoints C (resumed) vs D", fc, fd);
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_resume")) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = fh_now_seconds();
    test_resume_mid_run_checkpoint();
    test_resume_finished_run();
    printf("resume runs took %.1f s\n", fh_now_seconds() - t0);
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "run directories kept in %s\n", g_dir);
    return fh_test_finish();
}
