/* test_tensorboard.c — the TensorBoard event files of `foxhunt train` (issue 36), read
 * back by the `tensorboard` package (tests/cli/check_tensorboard.py: every metrics.csv
 * cell within one float32 ulp, validation.csv and eval.json exactly as float32, the
 * config text equal to config.json), through the real binary on tiny CPU runs (16 x 64,
 * 4 iterations, 3,000 synthetic bars):
 *  - a fresh run with validation and the final evaluation;
 *  - the same run resumed in place from iteration 2: a second file whose restart marker
 *    hides the first file's later steps (each step once, the values the new rows');
 *  - the checker fails on a tampered metrics.csv (it can fail);
 *  - --tensorboard 0 writes no event file;
 *  - a directory holding only another run's event file is refused without --force.
 * Skips (77) without python3, numpy and tensorboard (pip install tensorboard). */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <dirent.h>
#include <string.h>

#include "test_util.h"

static int run(const char *dir, const char *log, char **argv_tail, char **err_out)
{
    char *err = NULL;
    int rc = fh_run_foxhunt(dir, log, argv_tail, NULL, &err);
    if (err_out)
        *err_out = err;
    else
        free(err);
    return rc;
}

static int check(const char *run_dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 -W ignore '%s/tests/cli/check_tensorboard.py' '%s'",
             FH_SOURCE_DIR, run_dir);
    fflush(stdout);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static int count_event_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, "events.out.tfevents.", 20) == 0;
    if (d)
        closedir(d);
    return n;
}

int main(void)
{
    if (system("python3 -W ignore -c 'import numpy, tensorboard' >/dev/null 2>&1") != 0)
        fh_test_skip("python3 with numpy and tensorboard is not available (pip install "
                     "tensorboard; scripts/setup.sh installs it)");
    char dir[256], out[400], off[400], other[400], ck[500], path[600];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_tensorboard"));
    snprintf(out, sizeof out, "%s/run", dir);
    char *train[] = {"train", "--device", "cpu", "--episodes", "16", "--steps", "64",
                     "--iterations", "4", "--eval-every", "2", "--checkpoint-every", "2",
                     "--synthetic-bars", "3000", "--threads", "1", "--out", out, NULL};
    CHECK_MSG(run(dir, "train", train, NULL) == 0, "the tiny run failed (%s/train.err)", dir);
    CHECK(count_event_files(out) == 1);
    CHECK_MSG(check(out) == 0, "the fresh run's event file disagrees with its files");

    snprintf(ck, sizeof ck, "%s/checkpoint_000002.safetensors", out);
    char *resume[] = {"train", "--resume", ck, "--out", out, "--eval-at-end", "0", NULL};
    sleep(1); /* a new file's name has the time in seconds (the same one is never reused) */
    CHECK_MSG(run(dir, "resume", resume, NULL) == 0, "the resume failed (%s/resume.err)", dir);
    CHECK(count_event_files(out) == 2);
    CHECK_MSG(check(out) == 0, "after a resume in place the event files disagree");

    /* the checker can fail: one metrics.csv cell changed */
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    char *csv = fh_read_text(path);
    char *row3 = csv ? strstr(csv, "\n3,") : NULL;
    CHECK(row3 != NULL);
    if (row3) {
        row3[1] = '9'; /* iteration 3 becomes 9 in charts/iteration's cell */
        CHECK(fh_write_text(path, csv));
        CHECK_MSG(check(out) == 1, "the checker passed a tampered metrics.csv");
    }
    free(csv);

    snprintf(off, sizeof off, "%s/off", dir);
    char *no_tb[] = {"train", "--device", "cpu", "--episodes", "16", "--steps", "64",
                     "--iterations", "1", "--synthetic-bars", "3000", "--threads", "1",
                     "--eval-at-end", "0", "--tensorboard", "0", "--out", off, NULL};
    CHECK_MSG(run(dir, "off", no_tb, NULL) == 0, "--tensorboard 0 failed (%s/off.err)", dir);
    CHECK_MSG(count_event_files(off) == 0, "--tensorboard 0 wrote an event file");

    /* another run's event file alone makes a directory another run's */
    snprintf(other, sizeof other, "%s/other", dir);
    CHECK(mkdir(other, 0755) == 0);
    snprintf(path, sizeof path, "%s/events.out.tfevents.1.host.foxhunt", other);
    CHECK(fh_write_text(path, ""));
    no_tb[sizeof no_tb / sizeof no_tb[0] - 2] = other;
    char *err = NULL;
    CHECK_MSG(run(dir, "other", no_tb, &err) != 0 && err && strstr(err, "--force") &&
                  strstr(err, "events.out.tfevents.1.host.foxhunt"),
              "a directory with another run's event file was not refused: %s", err ? err : "");
    free(err);
    fh_test_tidy(dir);
    return fh_test_finish();
}
