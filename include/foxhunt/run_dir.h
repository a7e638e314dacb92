/* run_dir.h — the run directory of `foxhunt train` (cfg.out): config.json (the resolved
 * configuration) and metrics.csv / metrics.jsonl (one row per iteration, the same
 * fields); the checkpoints land beside them (trainer.h).
 *
 * Safety (issue 19):
 *  - the directory is locked (flock on OUT/.foxhunt.lock, held until fh_run_dir_close):
 *    a second run into it fails at once, naming the directory and the holder's pid (on
 *    a file system without locks the run goes on unlocked and the note says so);
 *  - stale *.tmp files (a save killed half-way) are removed once the lock is held;
 *  - a fresh run into a directory holding another run's files (config.json, metrics,
 *    eval.json, *.safetensors), or a resume of a checkpoint from elsewhere into one, is
 *    refused unless cfg->force; with it, those files are moved into
 *    OUT/superseded-<UTC time>/ (never deleted);
 *  - a resume in place keeps the metrics rows up to the checkpoint's iteration and
 *    appends after them; later history (later rows, checkpoint_N past the iteration, a
 *    final/interrupted checkpoint of a later iteration, its eval.json and config.json)
 *    is moved into OUT/superseded-<UTC time>/ first;
 *  - every file is opened only as a regular file: a FIFO or a device named metrics.csv,
 *    config.json.tmp, the lock, ... is refused with a message instead of blocking the
 *    run (issue 32);
 *  - every metrics write is checked: a failure names the file and the system's reason
 *    (a full disk, a file size limit); each row is appended whole or not at all, and
 *    the two files keep the same rows.
 * events.out.tfevents.* (TensorBoard's, rl/run_tensorboard.h) count as a run's files; a
 * resume in place keeps them (its restart marker hides their later steps).
 * What was moved or removed is described in rd->note (library code never prints). */
#ifndef FOXHUNT_RUN_DIR_H
#define FOXHUNT_RUN_DIR_H

#include <stdint.h>
#include <stdio.h>

#include "foxhunt/error.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/tfevents.h"
#include "foxhunt/train_config.h"

#define FH_RUN_DIR_PATH_MAX (FH_CONFIG_STRING_MAX + 320) /* out + a file name */
#define FH_RUN_DIR_LOCK_FILE ".foxhunt.lock"
/* `foxhunt walkforward`'s record of a finished fold run (cli/walkforward_record.h): one
 * of the run's files, so a fresh run into the directory moves it aside with the rest */
#define FH_RUN_DIR_FOLD_RECORD "walkforward_fold.json"

typedef struct {
    int metrics_fd[2];                 /* metrics.csv, metrics.jsonl (O_APPEND); valid
                                          while metrics_open and >= 0 */
    int metrics_open;
    char csv_path[FH_RUN_DIR_PATH_MAX], jsonl_path[FH_RUN_DIR_PATH_MAX];
    const char *own[FH_METRICS_MAX_OWN]; /* the learner's own columns (static strings) */
    int n_own;
    int lock_fd;                       /* valid when locked */
    int locked;
    char note[2048];                   /* what opening moved aside or removed; "" if nothing */
    fh_tfevents tb;                    /* the TensorBoard event file (rl/run_tensorboard.h);
                                          closed when cfg.tensorboard is 0 */
} fh_run_dir;

/* mkdir -p. */
fh_status fh_make_dirs(const char *path, fh_error *err);
/* A run directory name no file holds yet, in CleanRL's manner (data, algorithm, seed,
 * time): runs/<data>__<algo>__<seed>__YYYYMMDD-HHMMSS (UTC; <data> "synthetic" or the
 * CSV's name without extension), with -2, -3, ... appended while that exists; for a run
 * given no --out, so runs never share one. tag (e.g. "walkforward") replaces the seed. */
fh_status fh_run_dir_new_name(char *out, size_t n, const fh_train_config *cfg, const char *tag,
                              fh_error *err);
/* Creates and locks cfg->out, cleans and checks it (above), writes config.json and
 * opens the metrics files, whose columns are the common ones then own[0 .. n_own) (the
 * learner's: learner.h); on resume (cfg->resume set) keeps the rows up to iteration.
 * On failure nothing in the directory was changed except a stale *.tmp removed, and the
 * lock is released. */
fh_status fh_run_dir_open(fh_run_dir *rd, const fh_train_config *cfg, const char *config_json,
                          int64_t iteration, const char *const *own, int n_own, fh_error *err);
/* Only the lock of dir (an existing directory), as fh_run_dir_open takes it: for a
 * directory of runs (`foxhunt walkforward`'s), held until fh_run_dir_close. */
fh_status fh_run_dir_lock(fh_run_dir *rd, const char *dir, fh_error *err);
/* The columns of a row: the 18 every learner has, then the learner's own. */
#define FH_RUN_DIR_MAX_COLUMNS (18 + FH_METRICS_MAX_OWN)
/* One iteration's row as metrics.csv holds it: the columns' names (static strings) and
 * values (NaN where the csv cell is empty) into names and values (FH_RUN_DIR_MAX_COLUMNS
 * each); returns the number of columns. rd gives the learner's columns (after
 * fh_run_dir_open; 0 of them before). The Python training API's callbacks get it. */
int fh_run_dir_row(const fh_run_dir *rd, const fh_iteration_metrics *m, const char **names,
                   double *values);
/* One iteration's row in both files (nothing when the directory was not opened), each
 * appended whole (fh_append_whole); a failed write returns an error naming the file and
 * the reason, and leaves both files with the rows they had. */
fh_status fh_run_dir_write_metrics(fh_run_dir *rd, const fh_iteration_metrics *m, fh_error *err);
/* After a failure that stops a run: appends to err's message which checkpoint the run
 * can go on from, last (the run's latest save) or else resume (the one it resumed), or
 * that it has written none yet (either may be NULL or ""). */
void fh_run_dir_note_last_checkpoint(fh_error *err, const char *last, const char *resume);
/* Closes the metrics files, reporting a failed close; the lock stays held. */
fh_status fh_run_dir_finish(fh_run_dir *rd, fh_error *err);
/* Closes everything and releases the lock (safe on a zeroed or closed rd). */
void fh_run_dir_close(fh_run_dir *rd);

#endif
