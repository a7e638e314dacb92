/* test_cli_run_dir_writes.c — the run directory's writes that fail, and the lock in one
 * process (issue 19, item 4; issue 32), split from test_cli_run_dir.c (the fixture both
 * share: run_dir_fixture.h):
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
 *  - the lock and the refusal through fh_run_dir_open in one process. */
#include "cli/run_dir_fixture.h"

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
    /* no file may grow past fit + 0.75 jsonl rows: config.json (rewritten on resume, with
     * the resume's command line in its record: 200 bytes of margin), the rewritten one-row
     * metrics and the rows up to iteration fit fit, iteration fit + 1's jsonl row does not
     * (no checkpoint is due: --checkpoint-every 0); its csv row, written first, is taken
     * back. fit is 2 unless config.json needs more room. */
    long row = (long)jl.len / 2; /* the first run wrote two rows */
    int fit = 2;
    while ((long)cfg.len + 200 >= row * fit + row * 3 / 4)
        fit++;
    long limit = row * fit + row * 3 / 4;
    char iterations[16];
    snprintf(iterations, sizeof iterations, "%d", fit + 2);
    free(jl.bytes);
    free(cfg.bytes);
    const char *resume[] = {"--resume", ck1, "--iterations", iterations, "--checkpoint-every",
                            "0", "--out", run, NULL};
    r = train_limited(0, resume, limit, 0);
    check_stopped_by_limit(&r, run, "metrics.jsonl", fit);
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
    const char *again[] = {"--iterations", iterations, "--checkpoint-every", "0", "--out", fresh,
                           NULL};
    r = train_limited(1, again, limit, 0);
    check_stopped_by_limit(&r, fresh, "metrics.jsonl", fit);
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
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_cli_run_dir_writes")) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = fh_now_seconds();
    test_lock_in_process();
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
