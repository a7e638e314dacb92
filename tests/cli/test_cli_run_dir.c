/* test_cli_run_dir.c — the run directory's safety and the signals of `foxhunt train`
 * (issue 19, items 3, 4 and 6), through the binary on a tiny synthetic run and, for the
 * metrics write failure, through the library:
 *  - a second run into a directory a running one holds is refused at once, naming the
 *    directory and the other process; SIGTERM then stops the first after its iteration
 *    with interrupted.safetensors and exit 143 (SIGINT: 130, test_cli_train.c);
 *  - a second SIGINT ends the process at once;
 *  - a fresh run into a finished run's directory is refused (exit 2, naming --force and
 *    a new --out) and changes nothing; with --force it moves the old files into
 *    OUT/superseded-<time>/, byte for byte; a resume of a checkpoint from elsewhere into
 *    it is refused too;
 *  - resuming an older checkpoint into a finished run moves the later rows,
 *    checkpoints and final.safetensors aside (not deleted), keeps the rows up to the
 *    checkpoint and appends after them; stale *.tmp files are removed and said so;
 *  - a metrics write failure (RLIMIT_FSIZE through the binary; /dev/full through the
 *    library) stops the run with a message naming the metrics file and the reason, exit
 *    1, no checkpoint written after it and the earlier ones intact;
 *  - issue 32: under a file size limit the binary is not killed by SIGXFSZ (the child
 *    keeps its default action, as a shell's `ulimit -f` leaves it): a metrics row or a
 *    checkpoint past the limit ends the run with exit 1 and a message naming the file
 *    and "ulimit -f", no *.tmp left, both metrics files whole (every row complete, the
 *    same rows in each) and the last checkpoint intact; with no checkpoint yet the
 *    message says so instead of calling one intact;
 *  - issue 32: a FIFO named metrics.csv or validation.csv in a run directory makes
 *    `eval --report` and `train --resume` in place fail at once naming it, never hang
 *    (every run here is bounded: a hang reads as a failure);
 *  - the lock and the refusal through fh_run_dir_open in one process;
 *  - issue 20: --eval-every writes validation.csv (its best flags the running maximum)
 *    and best.safetensors (its metadata the best row's); a resume in place redoes the
 *    later rows identically and keeps the same best; no validation split is refused. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>

#include "foxhunt/run_dir.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/train_loop.h"
#include "test_util.h"

static char g_dir[256];

/* The tiny run: well under a second. */
static const char *TINY[] = {"--device", "cpu", "--episodes", "4", "--steps", "8",
                             "--epochs", "1", "--minibatch", "32", "--synthetic-bars",
                             "2000", "--threads", "1", "--horizon", "20", "--eval-at-end",
                             "0", NULL};

typedef struct {
    int rc;
    char *out, *err;
} result;

static void result_free(result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* argv of `foxhunt train [TINY...] extra...` into argv (NULL-terminated). */
static void train_argv(char **argv, int tiny, const char *const *extra)
{
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    argv[n++] = (char *)"train";
    for (int i = 0; tiny && TINY[i]; i++)
        argv[n++] = (char *)TINY[i];
    for (int i = 0; extra && extra[i] && n < FH_PROC_MAX_ARGS - 1; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
}

/* A bound on every command of this test: a hang (a FIFO read) reads as a failure. */
#define COMMAND_SECONDS 120.0

/* fh_proc_spawn with a file size limit (0: none). SIGXFSZ keeps its default action (the
 * binary must ignore it itself, issue 32): set explicitly, as this test's own parent may
 * ignore it and an ignored signal is inherited. */
static pid_t spawn_limited(char *const argv[], const char *out, const char *errp,
                           long fsize_limit)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    const char *paths[2] = {out ? out : "/dev/null", errp ? errp : "/dev/null"};
    for (int k = 0; k < 2; k++) {
        int fd = open(paths[k], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, k + 1) < 0)
            _exit(126);
        close(fd);
    }
    if (fsize_limit > 0) {
        struct rlimit rl = {(rlim_t)fsize_limit, (rlim_t)fsize_limit};
        signal(SIGXFSZ, SIG_DFL);
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(125);
    }
    execv(argv[0], argv);
    _exit(127);
}

/* argv (argv[0] the binary) run to its end or COMMAND_SECONDS (rc -2: killed). */
static result run_limited(char *const *argv, long fsize_limit, int keep_stdout)
{
    static int counter = 0;
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s/cmd%02d.out", g_dir, counter);
    snprintf(errp, sizeof errp, "%s/cmd%02d.err", g_dir, counter++);
    result r;
    pid_t pid = spawn_limited(argv, keep_stdout ? out : NULL, errp, fsize_limit);
    r.rc = pid < 0 ? -1 : fh_proc_wait_timeout(pid, COMMAND_SECONDS);
    r.out = keep_stdout ? fh_read_text(out) : NULL;
    r.err = fh_read_text(errp);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    return r;
}

static result train_limited(int tiny, const char *const *extra, long fsize_limit, int keep_stdout)
{
    char *argv[FH_PROC_MAX_ARGS];
    train_argv(argv, tiny, extra);
    return run_limited(argv, fsize_limit, keep_stdout);
}

static result train(int tiny, const char *const *extra)
{
    return train_limited(tiny, extra, 0, 1);
}

static void in_dir(char *out, size_t size, const char *dir, const char *file)
{
    snprintf(out, size, "%s/%s", dir, file);
}

/* Whole file (binary) into a malloc'd buffer; NULL when unreadable. */
static unsigned char *read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f)
        return NULL;
    size_t cap = 1 << 16;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + *len, 1, cap - *len, f)) > 0) {
        *len += got;
        if (*len == cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    return buf;
}

typedef struct {
    unsigned char *bytes;
    size_t len;
} snapshot;

static snapshot snap(const char *path)
{
    snapshot s;
    s.bytes = read_bytes(path, &s.len);
    return s;
}

/* path holds exactly the snapshot's bytes. */
static int same_as(const char *path, const snapshot *s)
{
    size_t len;
    unsigned char *now = read_bytes(path, &len);
    int same = now && s->bytes && len == s->len && memcmp(now, s->bytes, len) == 0;
    free(now);
    return same;
}

static int csv_rows(const char *dir)
{
    char path[512];
    in_dir(path, sizeof path, dir, "metrics.csv");
    char *t = fh_read_text(path);
    int n = t ? fh_count_lines(t) - 1 : -1;
    free(t);
    return n;
}

/* The single OUT/superseded-* directory into out; returns how many there are. */
static int superseded_dir(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    int n = 0;
    out[0] = '\0';
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, "superseded-", 11) == 0 && n++ == 0)
            snprintf(out, size, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    return n;
}

static long long checkpoint_iteration(const char *path)
{
    fh_st_file f;
    fh_error err;
    memset(&f, 0, sizeof f);
    long long it = -1;
    if (fh_st_read(&f, path, &err) == FH_OK) {
        const fh_st_tensor *x = fh_st_find(&f, "run.iteration");
        if (x && x->nbytes == sizeof(int64_t)) {
            int64_t v;
            memcpy(&v, x->data, sizeof v);
            it = v;
        }
    }
    fh_st_file_free(&f);
    return it;
}

/* Starts a long run of tiny iterations (slow: of about a second each) into dir; waits
 * for its first metrics row. */
static pid_t start_long_run(const char *dir, const char *tag, int slow)
{
    char *argv[FH_PROC_MAX_ARGS], out[512], errp[512];
    const char *extra[] = {"--iterations", "100000", "--checkpoint-every", "0", "--out", dir,
                           NULL};
    const char *slow_extra[] = {"--device", "cpu", "--epochs", "1", "--synthetic-bars", "2000",
                                "--threads", "1", "--horizon", "20", "--episodes", "32",
                                "--steps", "4096", "--minibatch", "4096", "--iterations",
                                "100000", "--checkpoint-every", "0", "--out", dir, NULL};
    train_argv(argv, !slow, slow ? slow_extra : extra);
    snprintf(out, sizeof out, "%s/%s.out", g_dir, tag);
    snprintf(errp, sizeof errp, "%s/%s.err", g_dir, tag);
    pid_t pid = fh_proc_spawn(argv, out, errp);
    if (pid <= 0)
        return pid;
    double t0 = fh_now_seconds();
    while (csv_rows(dir) < 1 && fh_now_seconds() - t0 < 60.0 && waitpid(pid, NULL, WNOHANG) == 0)
        usleep(10000);
    if (csv_rows(dir) < 1) {
        CHECK_MSG(0, "%s: no metrics row within 60 s", tag);
        kill(pid, SIGKILL);
        fh_proc_wait(pid);
        return -1;
    }
    return pid;
}

/* ---- item 3: the lock; item 6: SIGTERM ---- */

static void test_lock_and_sigterm(void)
{
    char run[300], path[512], config[512];
    snprintf(run, sizeof run, "%s/locked", g_dir);
    pid_t pid = start_long_run(run, "locked", 0);
    if (pid <= 0)
        return;
    in_dir(config, sizeof config, run, "config.json");
    snapshot cfg_before = snap(config);

    /* a second run into the same --out: refused at once, nothing touched */
    const char *second[] = {"--iterations", "2", "--out", run, NULL};
    double t0 = fh_now_seconds();
    result r = train(1, second);
    CHECK_MSG(r.rc == 1, "second run into a locked directory exited %d (want 1): %s", r.rc,
              r.err);
    CHECK_MSG(strstr(r.err, run) && strstr(r.err, "another foxhunt process"),
              "the refusal does not name the directory and the other process: %s", r.err);
    CHECK_MSG(fh_now_seconds() - t0 < 30.0, "the refusal took %.1f s", fh_now_seconds() - t0);
    result_free(&r);
    char aside[512];
    CHECK_MSG(superseded_dir(run, aside, sizeof aside) == 0, "the refused run moved files");
    CHECK_MSG(same_as(config, &cfg_before), "the refused run rewrote config.json");
    free(cfg_before.bytes);

    /* SIGTERM: stop after the current iteration, interrupted.safetensors, exit 143 */
    kill(pid, SIGTERM);
    int rc = fh_proc_wait_timeout(pid, COMMAND_SECONDS);
    CHECK_MSG(rc == 143, "train after SIGTERM exited %d (want 143)", rc);
    in_dir(path, sizeof path, run, "interrupted.safetensors");
    int rows = csv_rows(run);
    CHECK_MSG(checkpoint_iteration(path) == rows,
              "interrupted.safetensors at iteration %lld, metrics rows %d",
              checkpoint_iteration(path), rows);
    in_dir(path, sizeof path, run, "final.safetensors");
    CHECK_MSG(!fh_file_exists(path), "final.safetensors written after SIGTERM");
    snprintf(path, sizeof path, "%s/locked.out", g_dir);
    char *text = fh_read_text(path);
    CHECK_MSG(text && strstr(text, "interrupted by SIGTERM"), "no 'interrupted by SIGTERM' line");
    free(text);

    /* the lock went with the process: a resume continues in place */
    char ck[512], iters[32];
    in_dir(ck, sizeof ck, run, "interrupted.safetensors");
    snprintf(iters, sizeof iters, "%d", rows + 1);
    const char *resume[] = {"--resume", ck, "--iterations", iters, "--out", run, NULL};
    r = train(0, resume);
    CHECK_MSG(r.rc == 0, "resume after SIGTERM exited %d: %s", r.rc, r.err);
    result_free(&r);
    CHECK_MSG(csv_rows(run) == rows + 1, "after resume: %d rows, want %d", csv_rows(run),
              rows + 1);
}

/* ---- item 6: a second signal stops at once ---- */

static void test_second_signal(void)
{
    char run[300], path[512];
    snprintf(run, sizeof run, "%s/twice", g_dir);
    pid_t pid = start_long_run(run, "twice", 1);
    if (pid <= 0)
        return;
    /* iteration 2 has just begun and lasts a few seconds on one thread (1024 steps an
     * episode were done in under 0.2 s on the H200 host's cores, so that the first
     * SIGINT's stop came before the second): the first SIGINT asks for a stop after it,
     * the second (0.2 s later, apart so that the two do not merge into one pending
     * signal) finds the default action */
    kill(pid, SIGINT);
    usleep(200000);
    kill(pid, SIGINT);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
              "after two SIGINTs: %s %d, want killed by the second",
              WIFEXITED(status) ? "exit" : "signal",
              WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    in_dir(path, sizeof path, run, "final.safetensors");
    CHECK_MSG(!fh_file_exists(path), "final.safetensors after a second signal");
}

/* ---- item 3: a fresh run into a finished run's directory ---- */

static void test_fresh_into_finished(void)
{
    char run[300], final_path[512], csv[512], jsonl[512];
    snprintf(run, sizeof run, "%s/finished", g_dir);
    const char *first[] = {"--iterations", "2", "--checkpoint-every", "1", "--out", run, NULL};
    result r = train(1, first);
    CHECK_MSG(r.rc == 0, "first run exited %d: %s", r.rc, r.err);
    result_free(&r);
    in_dir(final_path, sizeof final_path, run, "final.safetensors");
    in_dir(csv, sizeof csv, run, "metrics.csv");
    in_dir(jsonl, sizeof jsonl, run, "metrics.jsonl");
    snapshot final_before = snap(final_path), csv_before = snap(csv), jsonl_before = snap(jsonl);

    /* refused: exit 2, the directory, --force and a new --out named, nothing changed */
    const char *again[] = {"--iterations", "1", "--out", run, NULL};
    r = train(1, again);
    CHECK_MSG(r.rc == 2, "fresh run into a finished run exited %d (want 2): %s", r.rc, r.err);
    CHECK_MSG(strstr(r.err, run) && strstr(r.err, "--force") && strstr(r.err, "new --out") &&
                  strstr(r.err, "final.safetensors"),
              "the refusal does not name the directory, its files, --force and --out: %s",
              r.err);
    result_free(&r);
    CHECK_MSG(same_as(final_path, &final_before) && same_as(csv, &csv_before) &&
                  same_as(jsonl, &jsonl_before),
              "the refused run changed the finished run's files");
    char aside[512];
    CHECK(superseded_dir(run, aside, sizeof aside) == 0);

    /* --force: the old files moved aside byte for byte, the new run in their place */
    const char *forced[] = {"--iterations", "1", "--out", run, "--force", NULL};
    r = train(1, forced);
    CHECK_MSG(r.rc == 0, "--force run exited %d: %s", r.rc, r.err);
    CHECK_MSG(strstr(r.out, "note: ") && strstr(r.out, "superseded-"),
              "the --force run does not say where the old files went: %s", r.out);
    result_free(&r);
    CHECK_MSG(superseded_dir(run, aside, sizeof aside) == 1, "no superseded-* directory");
    char path[600];
    in_dir(path, sizeof path, aside, "final.safetensors");
    CHECK_MSG(same_as(path, &final_before), "%s is not the old final.safetensors", path);
    in_dir(path, sizeof path, aside, "metrics.csv");
    CHECK_MSG(same_as(path, &csv_before), "%s is not the old metrics.csv", path);
    in_dir(path, sizeof path, aside, "metrics.jsonl");
    CHECK_MSG(same_as(path, &jsonl_before), "%s is not the old metrics.jsonl", path);
    in_dir(path, sizeof path, aside, "checkpoint_000001.safetensors");
    CHECK_MSG(checkpoint_iteration(path) == 1, "%s: the old checkpoint not moved aside", path);
    CHECK_MSG(csv_rows(run) == 1, "the --force run's metrics.csv has %d rows, want 1",
              csv_rows(run));
    CHECK_MSG(checkpoint_iteration(final_path) == 1, "the new final.safetensors is at %lld",
              checkpoint_iteration(final_path));
    free(final_before.bytes);
    free(csv_before.bytes);
    free(jsonl_before.bytes);

    /* a resume of a checkpoint from elsewhere into this run's directory: refused */
    in_dir(path, sizeof path, aside, "checkpoint_000001.safetensors");
    char other[300];
    snprintf(other, sizeof other, "%s/elsewhere.safetensors", g_dir);
    rename(path, other);
    const char *foreign[] = {"--resume", other, "--iterations", "2", "--out", run, NULL};
    r = train(0, foreign);
    CHECK_MSG(r.rc == 2 && strstr(r.err, run) && strstr(r.err, "another run"),
              "a resume from elsewhere into a run's directory: exit %d: %s", r.rc, r.err);
    result_free(&r);
}

/* ---- item 3: resume of an older checkpoint into a finished run; stale *.tmp ---- */

static void test_resume_older_into_finished(void)
{
    char run[300], path[600], aside[512];
    snprintf(run, sizeof run, "%s/older", g_dir);
    const char *first[] = {"--iterations", "3", "--checkpoint-every", "1", "--out", run, NULL};
    result r = train(1, first);
    CHECK_MSG(r.rc == 0, "first run exited %d: %s", r.rc, r.err);
    result_free(&r);
    char final_path[512], ck1[512], ck2[512], csv[512], jsonl[512];
    in_dir(final_path, sizeof final_path, run, "final.safetensors");
    in_dir(ck1, sizeof ck1, run, "checkpoint_000001.safetensors");
    in_dir(ck2, sizeof ck2, run, "checkpoint_000002.safetensors");
    in_dir(csv, sizeof csv, run, "metrics.csv");
    in_dir(jsonl, sizeof jsonl, run, "metrics.jsonl");
    snapshot final_before = snap(final_path), ck1_before = snap(ck1), ck2_before = snap(ck2),
             csv_before = snap(csv), jsonl_before = snap(jsonl);
    char *old_csv = fh_read_text(csv);
    /* what a kill during two saves leaves */
    char tmp1[512], tmp2[512];
    in_dir(tmp1, sizeof tmp1, run, "final.safetensors.tmp");
    in_dir(tmp2, sizeof tmp2, run, "checkpoint_000002.safetensors.tmp");
    fh_write_text(tmp1, "half a checkpoint");
    fh_write_text(tmp2, "half a checkpoint");

    const char *resume[] = {"--resume", ck1, "--out", run, NULL};
    r = train(0, resume);
    CHECK_MSG(r.rc == 0, "resume of checkpoint 1 into the finished run exited %d: %s", r.rc,
              r.err);
    CHECK_MSG(strstr(r.out, "note: ") && strstr(r.out, "stale") && strstr(r.out, "superseded-") &&
                  strstr(r.out, "iteration 1"),
              "the resume does not say what it moved and removed: %s", r.out);
    result_free(&r);
    CHECK_MSG(!fh_file_exists(tmp1) && !fh_file_exists(tmp2), "stale *.tmp files still there");

    /* the later history, moved aside byte for byte */
    CHECK_MSG(superseded_dir(run, aside, sizeof aside) == 1, "no superseded-* directory");
    in_dir(path, sizeof path, aside, "final.safetensors");
    CHECK_MSG(same_as(path, &final_before), "%s is not the old final.safetensors", path);
    in_dir(path, sizeof path, aside, "checkpoint_000002.safetensors");
    CHECK_MSG(same_as(path, &ck2_before), "%s is not the old checkpoint 2", path);
    in_dir(path, sizeof path, aside, "metrics.csv");
    CHECK_MSG(same_as(path, &csv_before), "%s is not the old metrics.csv (3 rows)", path);
    in_dir(path, sizeof path, aside, "metrics.jsonl");
    CHECK_MSG(same_as(path, &jsonl_before), "%s is not the old metrics.jsonl", path);
    in_dir(path, sizeof path, aside, "checkpoint_000001.safetensors");
    CHECK_MSG(!fh_file_exists(path), "the resumed checkpoint was moved aside");
    CHECK_MSG(same_as(ck1, &ck1_before), "the resumed checkpoint changed");

    /* the run continued after iteration 1: row 1 kept as it was, rows 2-3 new */
    char *new_csv = fh_read_text(csv);
    CHECK_MSG(csv_rows(run) == 3, "metrics.csv: %d rows, want 3", csv_rows(run));
    if (old_csv && new_csv) {
        char *row1 = strchr(old_csv, '\n'), *row2 = row1 ? strchr(row1 + 1, '\n') : NULL;
        if (row1 && row2) {
            row2[1] = '\0';
            CHECK_MSG(strstr(new_csv, row1 + 1) != NULL, "row 1 not kept as it was");
        }
    }
    free(old_csv);
    free(new_csv);
    char *jl = fh_read_text(jsonl);
    CHECK_MSG(jl && fh_count_lines(jl) == 3, "metrics.jsonl: %d lines, want 3",
              jl ? fh_count_lines(jl) : -1);
    free(jl);
    CHECK_MSG(checkpoint_iteration(final_path) == 3, "new final.safetensors at %lld",
              checkpoint_iteration(final_path));
    free(final_before.bytes);
    free(ck1_before.bytes);
    free(ck2_before.bytes);
    free(csv_before.bytes);
    free(jsonl_before.bytes);
}

/* ---- issue 20: model selection on the validation split (--eval-every) ---- */

/* validation.csv's rows: iteration, Sharpe and the best flag; returns the row count. */
static int read_validation(const char *path, long long *it, double *sharpe, int *best, int max)
{
    char *text = fh_read_text(path);
    int n = 0;
    char *next = NULL;
    for (char *line = text ? strchr(text, '\n') : NULL; line && line[1] && n < max;
         line = next) {
        next = strchr(line + 1, '\n');
        if (next)
            *next = '\0'; /* one row at a time */
        char *p = line + 1, *end;
        it[n] = strtoll(p, &end, 10);
        p = strchr(end + 1, ','); /* skip global_step */
        sharpe[n] = p ? strtod(p + 1, &end) : NAN;
        const char *last = strrchr(p ? p : line, ',');
        best[n] = last ? atoi(last + 1) : -1;
        n++;
        if (!next)
            break;
    }
    free(text);
    return n;
}

static void best_metadata(const char *path, double *sharpe, long long *iteration)
{
    fh_st_file f;
    fh_error err;
    memset(&f, 0, sizeof f);
    *sharpe = NAN;
    *iteration = -1;
    if (fh_st_read(&f, path, &err) == FH_OK) {
        const char *s = fh_st_metadata(&f, "validation.sharpe");
        const char *i = fh_st_metadata(&f, "validation.iteration");
        *sharpe = s ? strtod(s, NULL) : NAN;
        *iteration = i ? strtoll(i, NULL, 10) : -1;
    }
    fh_st_file_free(&f);
}

static void test_model_selection(void)
{
    char run[300], csv[512], best[512], ck2[512];
    snprintf(run, sizeof run, "%s/selection", g_dir);
    in_dir(csv, sizeof csv, run, "validation.csv");
    in_dir(best, sizeof best, run, "best.safetensors");
    in_dir(ck2, sizeof ck2, run, "checkpoint_000002.safetensors");
    const char *first[] = {"--iterations", "4", "--checkpoint-every", "2", "--eval-every",
                           "1", "--out", run, NULL};
    result r = train(1, first);
    CHECK_MSG(r.rc == 0, "the run with --eval-every exited %d: %s", r.rc, r.err);
    result_free(&r);
    long long it[8];
    double sharpe[8];
    int flag[8];
    int n = read_validation(csv, it, sharpe, flag, 8);
    CHECK_MSG(n == 4, "validation.csv: %d rows, want 4", n);
    /* the best flag marks each new running maximum; best.safetensors holds the last */
    double top = -INFINITY;
    long long top_it = -1;
    int flags_ok = 1;
    for (int i = 0; i < n; i++) {
        int is_best = isfinite(sharpe[i]) && sharpe[i] > top;
        flags_ok &= it[i] == i + 1 && flag[i] == is_best;
        if (is_best) {
            top = sharpe[i];
            top_it = it[i];
        }
    }
    CHECK_MSG(flags_ok, "validation.csv's best flags are not the running maximum");
    double meta_sharpe;
    long long meta_it;
    best_metadata(best, &meta_sharpe, &meta_it);
    CHECK_MSG(meta_it == top_it && meta_sharpe == top,
              "best.safetensors records iteration %lld Sharpe %.17g; the rows say %lld %.17g",
              meta_it, meta_sharpe, top_it, top);
    CHECK_MSG(checkpoint_iteration(best) == top_it, "best.safetensors is of iteration %lld",
              checkpoint_iteration(best));
    char *before = fh_read_text(csv);

    /* resuming iteration 2 in place redoes rows 3-4 identically (a resume is
     * bit-identical) and ends with the same best */
    const char *resume[] = {"--resume", ck2, "--out", run, NULL};
    r = train(0, resume);
    CHECK_MSG(r.rc == 0, "the resume exited %d: %s", r.rc, r.err);
    result_free(&r);
    char *after = fh_read_text(csv);
    CHECK_MSG(before && after && strcmp(before, after) == 0,
              "validation.csv after the resume differs:\n%s\nwas\n%s", after ? after : "",
              before ? before : "");
    free(before);
    free(after);
    double again_sharpe;
    long long again_it;
    best_metadata(best, &again_sharpe, &again_it);
    CHECK_MSG(again_it == top_it && again_sharpe == top, "after the resume the best is "
              "iteration %lld Sharpe %.17g, not %lld %.17g", again_it, again_sharpe, top_it, top);

    /* no validation split: refused before anything runs */
    char none[300];
    snprintf(none, sizeof none, "%s/selection-none", g_dir);
    const char *bad[] = {"--iterations", "1", "--eval-every", "1", "--validation-fraction",
                         "0", "--out", none, NULL};
    r = train(1, bad);
    CHECK_MSG(r.rc == 2 && strstr(r.err, "needs a validation split"),
              "--eval-every without a validation split: exit %d: %s", r.rc, r.err);
    result_free(&r);
}

/* ---- item 4, issue 32: a write past a file size limit through the binary ---- */

/* How many entries of dir end in ".tmp" (their names into names). */
static int count_tmp(const char *dir, char *names, size_t size)
{
    DIR *d = opendir(dir);
    int n = 0;
    names[0] = '\0';
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0) {
            size_t used = strlen(names);
            snprintf(names + used, size - used, "%s%s", n ? ", " : "", e->d_name);
            n++;
        }
    }
    if (d)
        closedir(d);
    return n;
}

/* Both metrics files whole: every line complete ("\n"-terminated), metrics.csv's rows
 * and metrics.jsonl's lines the iterations 1..n in order, n the same in both; returns n,
 * or -1 (with a failed check naming the fault). */
static int metrics_rows_whole(const char *dir)
{
    char path[512];
    const char *names[2] = {"metrics.csv", "metrics.jsonl"};
    int rows[2] = {-1, -1};
    for (int k = 0; k < 2; k++) {
        in_dir(path, sizeof path, dir, names[k]);
        char *text = fh_read_text(path);
        if (!text) {
            CHECK_MSG(0, "%s: unreadable", path);
            return -1;
        }
        size_t len = strlen(text);
        int ok = len > 0 && text[len - 1] == '\n', n = 0;
        CHECK_MSG(ok, "%s: its last line is cut (no newline)", path);
        char *line = text;
        if (k == 0) /* the header */
            line = strchr(text, '\n') ? strchr(text, '\n') + 1 : text + len;
        while (ok && *line) {
            char *nl = strchr(line, '\n');
            *nl = '\0';
            char want[48];
            snprintf(want, sizeof want, k ? "{\"iteration\":%d," : "%d,", n + 1);
            ok = strncmp(line, want, strlen(want)) == 0 &&
                 (k == 0 || line[strlen(line) - 1] == '}');
            CHECK_MSG(ok, "%s: row %d is cut or out of order: '%.80s'", path, n + 1, line);
            n++;
            line = nl + 1;
        }
        free(text);
        if (!ok)
            return -1;
        rows[k] = n;
    }
    CHECK_MSG(rows[0] == rows[1], "metrics.csv has %d rows, metrics.jsonl %d", rows[0],
              rows[1]);
    return rows[0] == rows[1] ? rows[0] : -1;
}

/* What a run stopped by the limit must leave: its message naming file and cause, exit
 * 1 (not 153, SIGXFSZ), no .tmp, whole metrics of want_rows rows. */
static void check_stopped_by_limit(const result *r, const char *run, const char *file,
                                   int want_rows)
{
    CHECK_MSG(r->rc == 1, "a run stopped by the file size limit exited %d (want 1; 153 is "
              "SIGXFSZ's kill): %s", r->rc, r->err);
    CHECK_MSG(strstr(r->err, file) && strstr(r->err, strerror(EFBIG)) &&
                  strstr(r->err, "ulimit -f"),
              "the message does not name %s, '%s' and ulimit -f: %s", file, strerror(EFBIG),
              r->err);
    char names[512];
    CHECK_MSG(count_tmp(run, names, sizeof names) == 0, "%s: left %s", run, names);
    int rows = metrics_rows_whole(run);
    CHECK_MSG(rows == want_rows, "%s: %d whole metrics rows, want %d", run, rows, want_rows);
}

static void test_metrics_write_failure_cli(void)
{
    char run[300], ck1[512], jsonl[512], config[512], path[512];
    snprintf(run, sizeof run, "%s/efbig", g_dir);
    const char *first[] = {"--iterations", "2", "--checkpoint-every", "1", "--out", run, NULL};
    result r = train(1, first);
    CHECK_MSG(r.rc == 0, "first run exited %d: %s", r.rc, r.err);
    result_free(&r);
    in_dir(ck1, sizeof ck1, run, "checkpoint_000001.safetensors");
    in_dir(jsonl, sizeof jsonl, run, "metrics.jsonl");
    in_dir(config, sizeof config, run, "config.json");
    snapshot ck1_before = snap(ck1), jl = snap(jsonl), cfg = snap(config);
    /* no file may grow past 2.75 jsonl rows: config.json, the rewritten one-row metrics
     * and iteration 2's rows fit, iteration 3's jsonl row does not (no checkpoint is due:
     * --checkpoint-every 0); its csv row, written first, is taken back */
    long limit = (long)jl.len * 11 / 8;
    CHECK_MSG(cfg.len + 200 < (size_t)limit, "config.json (%zu bytes) too big for the limit %ld",
              cfg.len, limit);
    free(jl.bytes);
    free(cfg.bytes);
    const char *resume[] = {"--resume", ck1, "--iterations", "4", "--checkpoint-every", "0",
                            "--out", run, NULL};
    r = train_limited(0, resume, limit, 0);
    check_stopped_by_limit(&r, run, "metrics.jsonl", 2);
    CHECK_MSG(strstr(r.err, "last good one is") && strstr(r.err, ck1),
              "the message does not name the last good checkpoint %s: %s", ck1, r.err);
    result_free(&r);
    CHECK_MSG(same_as(ck1, &ck1_before), "checkpoint 1 changed");
    const char *none[] = {"final.safetensors", "interrupted.safetensors",
                          "checkpoint_000002.safetensors"};
    for (int k = 0; k < 3; k++) {
        in_dir(path, sizeof path, run, none[k]);
        CHECK_MSG(!fh_file_exists(path), "%s written after the metrics write failed", path);
    }

    /* a checkpoint past the limit (1 MB; a checkpoint is about 4.6 MB): its .tmp is
     * removed, the metrics keep iteration 2's row, checkpoint 1 stays as it was */
    const char *big[] = {"--resume", ck1, "--iterations", "4", "--checkpoint-every", "1",
                         "--out", run, NULL};
    r = train_limited(0, big, 1L << 20, 0);
    check_stopped_by_limit(&r, run, "checkpoint_000002.safetensors", 2);
    CHECK_MSG(strstr(r.err, "last good one is") && strstr(r.err, ck1),
              "the message does not name the last good checkpoint %s: %s", ck1, r.err);
    result_free(&r);
    CHECK_MSG(same_as(ck1, &ck1_before), "checkpoint 1 changed");
    free(ck1_before.bytes);
    for (int k = 0; k < 3; k++) {
        in_dir(path, sizeof path, run, none[k]);
        CHECK_MSG(!fh_file_exists(path), "%s written past the file size limit", path);
    }

    /* a fresh run stopped before its first checkpoint: the message must not call a
     * checkpoint intact, there is none */
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s/efbig2", g_dir);
    const char *again[] = {"--iterations", "4", "--checkpoint-every", "0", "--out", fresh, NULL};
    r = train_limited(1, again, limit, 0);
    check_stopped_by_limit(&r, fresh, "metrics.jsonl", 2);
    CHECK_MSG(strstr(r.err, "no checkpoint yet") && !strstr(r.err, "intact"),
              "a run with no checkpoint yet is told otherwise: %s", r.err);
    result_free(&r);
}

/* ---- issue 32: a FIFO in a run directory ---- */

static void test_fifo_in_run_dir(void)
{
    char run[300], ck1[512], final_path[512], csv[512], html[512], validation[512];
    snprintf(run, sizeof run, "%s/fifo", g_dir);
    const char *first[] = {"--iterations", "2", "--checkpoint-every", "1", "--out", run, NULL};
    result r = train(1, first);
    CHECK_MSG(r.rc == 0, "first run exited %d: %s", r.rc, r.err);
    result_free(&r);
    in_dir(ck1, sizeof ck1, run, "checkpoint_000001.safetensors");
    in_dir(final_path, sizeof final_path, run, "final.safetensors");
    in_dir(csv, sizeof csv, run, "metrics.csv");
    in_dir(validation, sizeof validation, run, "validation.csv");
    snprintf(html, sizeof html, "%s/fifo.html", g_dir);
    if (unlink(csv) != 0 || mkfifo(csv, 0644) != 0) {
        CHECK_MSG(0, "cannot make the FIFO %s: %s", csv, strerror(errno));
        return;
    }
    /* eval --report reads the run's metrics.csv for its training curves */
    char *argv[] = {(char *)FH_FOXHUNT_BIN, (char *)"eval", (char *)"--checkpoint", final_path,
                    (char *)"--device", (char *)"cpu", (char *)"--report", html, NULL};
    double t0 = fh_now_seconds();
    r = run_limited(argv, 0, 0);
    if (r.rc == 1 && strstr(r.err, "libjs-dygraphs")) /* refused before metrics.csv is read */
        printf("eval --report with a FIFO named metrics.csv: not checked: this foxhunt was "
               "built without dygraphs (install libjs-dygraphs, re-run cmake)\n");
    else
        CHECK_MSG(r.rc == 2 && strstr(r.err, csv) && strstr(r.err, "FIFO"),
                  "eval --report with a FIFO named metrics.csv: exit %d (-2: hung, killed "
                  "after %.0f s): %s", r.rc, COMMAND_SECONDS, r.err);
    CHECK_MSG(!fh_file_exists(html), "%s written", html);
    result_free(&r);

    /* a resume in place reads the metrics to keep the rows up to its checkpoint */
    const char *resume[] = {"--resume", ck1, "--out", run, NULL};
    r = train(0, resume);
    CHECK_MSG(r.rc == 2 && strstr(r.err, csv) && strstr(r.err, "FIFO"),
              "train --resume in place with a FIFO named metrics.csv: exit %d (-2: hung): %s",
              r.rc, r.err);
    result_free(&r);
    char aside[512];
    CHECK_MSG(superseded_dir(run, aside, sizeof aside) == 0, "the refused resume moved files");
    CHECK_MSG(checkpoint_iteration(final_path) == 2, "the refused resume changed %s",
              final_path);

    /* validation.csv, kept up to the checkpoint by a resume with --eval-every */
    unlink(csv);
    if (mkfifo(validation, 0644) != 0) {
        CHECK_MSG(0, "cannot make the FIFO %s: %s", validation, strerror(errno));
        return;
    }
    const char *selection[] = {"--resume", ck1, "--eval-every", "1", "--out", run, NULL};
    r = train(0, selection);
    CHECK_MSG(r.rc == 2 && strstr(r.err, validation) && strstr(r.err, "FIFO"),
              "train --resume --eval-every with a FIFO named validation.csv: exit %d (-2: "
              "hung): %s", r.rc, r.err);
    result_free(&r);
    printf("FIFOs in a run directory: refused in %.1f s\n", fh_now_seconds() - t0);
}

/* ---- item 4: a metrics write failure through the library (/dev/full) ---- */

static void set(fh_train_config *cfg, const char *key, const char *value)
{
    fh_error err;
    for (int k = 0; k < fh_train_config_n_fields; k++)
        if (!strcmp(fh_train_config_fields[k].key, key)) {
            CHECK_MSG(fh_config_field_set(&fh_train_config_fields[k], cfg, value, &err) == FH_OK,
                      "%s=%s: %s", key, value, err.message);
            return;
        }
    CHECK_MSG(0, "no config key %s", key);
}

static void tiny_config(fh_train_config *cfg, const char *out)
{
    fh_train_config_default(cfg);
    const char *kv[][2] = {{"device", "cpu"}, {"episodes", "4"}, {"steps", "8"},
                           {"epochs", "1"}, {"minibatch", "32"}, {"synthetic_bars", "2000"},
                           {"threads", "1"}, {"horizon", "20"}, {"eval_at_end", "0"},
                           {"iterations", "4"}, {"checkpoint_every", "1"}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        set(cfg, kv[i][0], kv[i][1]);
    snprintf(cfg->out, sizeof cfg->out, "%s", out);
}

/* After iteration 2's row, the jsonl file becomes /dev/full. */
static void swap_to_dev_full(const fh_train_loop *tc, const fh_iteration_metrics *m, void *user)
{
    fh_train_loop *t = user;
    (void)tc;
    if (m->iteration == 2) {
        int full = open("/dev/full", O_WRONLY);
        if (full >= 0) {
            dup2(full, t->run.metrics_fd[1]);
            close(full);
        }
    }
}

static void test_metrics_write_failure_lib(void)
{
    FILE *probe = fopen("/dev/full", "w");
    if (!probe) {
        printf("skipped the /dev/full metrics test: no /dev/full\n");
        return;
    }
    fclose(probe);
    char run[300], path[512];
    snprintf(run, sizeof run, "%s/devfull", g_dir);
    fh_train_config cfg;
    tiny_config(&cfg, run);
    fh_train_loop t;
    fh_error err;
    fh_error_clear(&err);
    if (fh_train_loop_init(&t, &cfg, &err) != FH_OK || fh_train_loop_open_run(&t, &err) != FH_OK) {
        CHECK_MSG(0, "trainer: %s", err.message);
        fh_train_loop_free(&t);
        return;
    }
    fh_status st = fh_train_loop_run(&t, NULL, swap_to_dev_full, &t, &err);
    CHECK_MSG(st == FH_ERR_FAILURE, "the run went on after a failed metrics write (status %d)",
              (int)st);
    CHECK_MSG(strstr(err.message, "metrics.jsonl") && strstr(err.message, strerror(ENOSPC)),
              "the message does not name metrics.jsonl and '%s': %s", strerror(ENOSPC),
              err.message);
    fh_train_loop_free(&t);
    for (int k = 1; k <= 2; k++) {
        snprintf(path, sizeof path, "%s/checkpoint_%06d.safetensors", run, k);
        CHECK_MSG(checkpoint_iteration(path) == k, "%s: iteration %lld", path,
                  checkpoint_iteration(path));
    }
    const char *none[] = {"final.safetensors", "interrupted.safetensors",
                          "checkpoint_000003.safetensors"};
    for (int k = 0; k < 3; k++) {
        in_dir(path, sizeof path, run, none[k]);
        CHECK_MSG(!fh_file_exists(path), "%s written after the metrics write failed", path);
    }
}

/* ---- the lock and the refusal in one process ---- */

static void test_lock_in_process(void)
{
    char run[300];
    snprintf(run, sizeof run, "%s/inproc", g_dir);
    fh_train_config cfg;
    tiny_config(&cfg, run);
    fh_run_dir a, b;
    fh_error err;
    CHECK_MSG(fh_run_dir_open(&a, &cfg, "{}\n", 0, NULL, 0, &err) == FH_OK, "open: %s", err.message);
    fh_status st = fh_run_dir_open(&b, &cfg, "{}\n", 0, NULL, 0, &err);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, run) &&
                  strstr(err.message, "another foxhunt process") && strstr(err.message, pid),
              "a second open of a locked directory: %d %s", (int)st, err.message);
    fh_run_dir_close(&b);
    fh_run_dir_close(&a);
    /* unlocked now, but it holds a run's files */
    st = fh_run_dir_open(&b, &cfg, "{}\n", 0, NULL, 0, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "--force"),
              "a fresh open of a used directory: %d %s", (int)st, err.message);
    fh_run_dir_close(&b);
    cfg.force = 1;
    st = fh_run_dir_open(&b, &cfg, "{}\n", 0, NULL, 0, &err);
    CHECK_MSG(st == FH_OK && strstr(b.note, "superseded-"), "--force open: %d %s / %s",
              (int)st, err.message, b.note);
    fh_run_dir_close(&b);
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_cli_run_dir")) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = fh_now_seconds();
    test_lock_in_process();
    test_lock_and_sigterm();
    test_second_signal();
    test_fresh_into_finished();
    test_resume_older_into_finished();
    test_model_selection();
    test_metrics_write_failure_cli();
    test_metrics_write_failure_lib();
    test_fifo_in_run_dir();
    printf("took %.1f s\n", fh_now_seconds() - t0);
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "outputs kept in %s\n", g_dir);
    return fh_test_finish();
}
