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
 *  (the write failures, the FIFOs and the lock in one process: test_cli_run_dir_writes.c;
 *  the fixture both share: run_dir_fixture.h)
 *  - issue 20: --eval-every writes validation.csv (its best flags the running maximum)
 *    and best.safetensors (its metadata the best row's); a resume in place redoes the
 *    later rows identically and keeps the same best; no validation split is refused. */
#include "cli/run_dir_fixture.h"

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
     * signal) finds the default action. The first waits 0.5 s after iteration 1's row:
     * sent at once, it could land before iteration 2 began, and the loop then stopped
     * before starting it, 0.2 s before the second came (the ASan build on 2 busy cores,
     * session 18: exit 130) */
    usleep(500000);
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

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_cli_run_dir")) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = fh_now_seconds();
    test_lock_and_sigterm();
    test_second_signal();
    test_fresh_into_finished();
    test_resume_older_into_finished();
    test_model_selection();
    printf("took %.1f s\n", fh_now_seconds() - t0);
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "outputs kept in %s\n", g_dir);
    return fh_test_finish();
}
