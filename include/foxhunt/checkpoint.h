/* checkpoint.h — training checkpoints as safetensors files (SPEC §4, §10; issue 4;
 * every key is listed in docs/CHECKPOINTS.md).
 *
 * Saving is atomic (PATH.tmp, fsync, rename, fsync of the directory): a crash never
 * leaves a half-written checkpoint, and a failed save leaves the previous file as it
 * was. Loading reads and validates the whole file, then checks every key the caller
 * asks for (presence, dtype, shape) BEFORE copying anything: on any failure the
 * caller's networks, statistics and buffers are untouched, and the message names the
 * file and exactly what is wrong. */
#ifndef FOXHUNT_CHECKPOINT_H
#define FOXHUNT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/data.h"
#include "foxhunt/error.h"
#include "foxhunt/nn.h"
#include "foxhunt/safetensors.h"

#define FH_CHECKPOINT_FORMAT "foxhunt.checkpoint"
#define FH_CHECKPOINT_VERSION "1"
#define FH_CHECKPOINT_MAX_EXTRAS 16

/* A named tensor the trainer adds (e.g. "dqn.target.q_layer_0.weight", "ppo.lr").
 * save: data is read; load: data is written and must hold the given shape. */
typedef struct {
    const char *name;
    fh_dtype dtype;
    int rank;
    int64_t shape[FH_ST_MAX_RANK];
    void *data;
    int optional;   /* load: 1 = absent is fine (data left as is, present set 0) */
    int present;    /* load: set to 1 when found */
} fh_checkpoint_extra;

/* What goes in / comes out of a checkpoint. Any NULL pointer is skipped on save and not
 * asked for on load. */
typedef struct {
    /* networks: params under the design-note keys, Adam m/v under adam.m.KEY /
     * adam.v.KEY, the step under adam.step.NET. nets[FH_NET_ACTOR] etc. */
    fh_mlp *nets[FH_NET_COUNT];
    fh_feature_norm *norm;       /* norm.mean, norm.std (51) */
    uint64_t *seed;              /* run.seed (U64 [1]) */
    int64_t *iteration;          /* run.iteration (I64 [1]) */
    /* rng.episodes (U64 [rng_rows, rng_cols]), e.g. per-episode PCG (state, inc):
     * rows = episodes, cols = 2. On load the shape must match. */
    uint64_t *rng_state;
    size_t rng_rows, rng_cols;
    fh_checkpoint_extra *extras;
    int n_extras;
} fh_checkpoint;

/* config_json: the resolved configuration, stored verbatim as __metadata__["config"]
 * (may be NULL). */
fh_status fh_checkpoint_save(const char *path, const fh_checkpoint *ck, const char *config_json,
                             fh_error *err);

/* Loads everything ck asks for. config_json_out (may be NULL) receives a malloc'd copy
 * of __metadata__["config"] (NULL when the file has none); the caller frees it. */
fh_status fh_checkpoint_load(const char *path, fh_checkpoint *ck, char **config_json_out,
                             fh_error *err);

#endif
