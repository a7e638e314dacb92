/* walkforward_record.h — the record `foxhunt walkforward` writes into a fold run's
 * directory (OUT/fold<k>_seed<s>/walkforward_fold.json) once that run is finished: its
 * model chosen, eval.json and returns.csv written. A rerun with the same --out keeps the
 * fold runs whose record holds and retrains the others (issue 32, item 7;
 * docs/WALKFORWARD.md, "A killed walk-forward").
 *
 * The record is written last and atomically (PATH.tmp, fsync, rename, fsync of the
 * directory), so it exists only complete, after every file it names. It carries what
 * made the run (the fold run's resolved configuration, the data's identity, the foxhunt
 * version), which model file was chosen with the FNV-1a 64 of its bytes, the FNV-1a 64
 * of the test segment's returns table (fh_eval_report_returns_csv's text), the training
 * seconds, and a checksum over all of that. A record is untrusted input: reading it
 * checks its size, JSON, checksum, format, fold, seed and every field's type and range;
 * the caller then compares the settings (fh_walkforward_record_compare) and, to keep the
 * run, recomputes the test backtest from the model and checks both hashes, so that no
 * number of the stitched result comes from the record itself. */
#ifndef FOXHUNT_CLI_WALKFORWARD_RECORD_H
#define FOXHUNT_CLI_WALKFORWARD_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/error.h"

#define FH_WALKFORWARD_RECORD_FORMAT "foxhunt.walkforward_fold"
#define FH_WALKFORWARD_RECORD_VERSION 1
#define FH_WALKFORWARD_RECORD_MAX_BYTES (1 << 20)

typedef struct {
    int fold;                /* 1-based */
    uint64_t seed;
    char version[32];        /* FH_VERSION of the foxhunt that wrote it */
    char *config_json;       /* the fold run's resolved configuration (config.json's) */
    fh_data_identity data;
    char model[32];          /* best.safetensors | final.safetensors, in the run's dir */
    uint64_t model_hash;     /* FNV-1a 64 of the model file's bytes */
    uint64_t returns_hash;   /* FNV-1a 64 of the test segment's returns table */
    double train_seconds;
} fh_walkforward_record;

typedef enum {
    FH_WALKFORWARD_RECORD_ABSENT,  /* no record: the run never finished */
    FH_WALKFORWARD_RECORD_INVALID, /* unreadable, torn, corrupted or another run's */
    FH_WALKFORWARD_RECORD_OK
} fh_walkforward_record_state;

/* Writes rec (config_json as given) to path, durably and atomically. */
fh_status fh_walkforward_record_write(const char *path, const fh_walkforward_record *rec,
                                      fh_error *err);
/* Reads path as the record of fold `fold` (1-based), seed `seed`. OK: *rec filled
 * (free it with fh_walkforward_record_free); INVALID: why (n bytes) says what is wrong;
 * ABSENT: no file at path. */
fh_walkforward_record_state fh_walkforward_record_read(const char *path, int fold,
                                                       uint64_t seed,
                                                       fh_walkforward_record *rec,
                                                       char *why, size_t n);
/* 1 when rec was made by the same settings as now: the same foxhunt version, the same
 * configuration (every key but out and data, the paths) and the same data (its
 * identity: bars, first and last time, content hash); else 0 with why (n bytes) listing
 * the differences ("iterations 2, now 3; ..."). */
int fh_walkforward_record_compare(const fh_walkforward_record *rec, const char *config_json,
                                  const fh_data_identity *data, char *why, size_t n);
void fh_walkforward_record_free(fh_walkforward_record *rec);

#endif
