/* run_dir.h — the run directory of `foxhunt train` (cfg.out): config.json (the resolved
 * configuration) and metrics.csv / metrics.jsonl (one row per iteration, the same
 * fields); the checkpoints land beside them (trainer.h). */
#ifndef FOXHUNT_RUN_DIR_H
#define FOXHUNT_RUN_DIR_H

#include <stdint.h>
#include <stdio.h>

#include "foxhunt/error.h"
#include "foxhunt/iteration_metrics.h"
#include "foxhunt/train_config.h"

typedef struct {
    FILE *metrics_csv, *metrics_jsonl; /* NULL until opened */
} fh_run_dir;

/* mkdir -p. */
fh_status fh_make_dirs(const char *path, fh_error *err);
/* Creates cfg->out, writes config.json and opens the metrics files; on resume
 * (iteration > 0) keeps the rows up to that iteration. */
fh_status fh_run_dir_open(fh_run_dir *rd, const fh_train_config *cfg, const char *config_json,
                          int64_t iteration, fh_error *err);
/* One iteration's row in both files (nothing when the directory was not opened). */
fh_status fh_run_dir_write_metrics(fh_run_dir *rd, const fh_iteration_metrics *m, fh_error *err);
void fh_run_dir_close(fh_run_dir *rd);

#endif
