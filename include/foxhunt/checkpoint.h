/* checkpoint.h — training checkpoints as safetensors files (SPEC §4, §10; issue 4;
 * every key is listed in docs/CHECKPOINTS.md).
 *
 * Saving is atomic (PATH.tmp, fsync, rename, fsync of the directory): a crash never
 * leaves a half-written checkpoint, and a failed save leaves the previous file as it
 * was. Loading reads and validates the whole file, then checks every key the caller
 * asks for (presence, dtype, shape) BEFORE copying anything: on any failure the
 * caller's networks, statistics and buffers are untouched, and the message names the
 * file and exactly what is wrong.
 *
 * A checkpoint never holds a non-finite float: saving refuses a NaN or infinity in any
 * F32/F64 tensor (FH_ERR_FAILURE, nothing written), loading refuses one in any F32/F64
 * tensor of the file, asked for or not, and a norm.std that is not > 0 (FH_ERR_INPUT,
 * naming the key and the first bad index).
 *
 * An actor-only checkpoint (`foxhunt export --actor`; __metadata__ "kind" = "actor")
 * holds what an evaluation needs and nothing else: the actor's params, norm.mean,
 * norm.std, the config and the data identity; no Adam state, no critic, no episodes. It
 * evaluates like a full one and cannot resume training (docs/CHECKPOINTS.md). */
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
/* __metadata__ "kind" of an actor-only checkpoint; a full checkpoint has no "kind" */
#define FH_CHECKPOINT_KIND_ACTOR "actor"

/* What the training data was (docs/CHECKPOINTS.md, "Data identity"): stored as
 * __metadata__ strings data.source, data.bars, data.first_time, data.last_time and
 * data.hash, so that a resume can tell whether it runs on the same data. */
#define FH_DATA_SOURCE_MAX 1024
typedef struct {
    /* the CSV path as given (bytes that are not UTF-8, and control characters, written
     * as \xNN), or "synthetic seed=S bars=N": what the data was called, for messages;
     * not compared (the same file may move) */
    char source[FH_DATA_SOURCE_MAX];
    int64_t n_bars;                  /* raw bars (before the feature warm-up is dropped) */
    int64_t first_time, last_time;   /* Unix seconds of the first and last bar */
    uint64_t hash;                   /* FNV-1a 64 over the raw arrays (fh_data_identity_of) */
} fh_data_identity;

/* The identity of bars: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
 * 0x100000001b3) over the bytes of time[0..n) (int64), then open, high, low, close and
 * volume[0..n) (float64), each value little-endian, in the bars' (ascending) order. What
 * numpy gives with b"".join(a.astype("<i8"/"<f8").tobytes() for a in arrays). source is
 * copied (escaped as above, truncated to fit). */
void fh_data_identity_of(fh_data_identity *id, const fh_bars *bars, const char *source);
/* 1 when saved and now are the same data (bars, first and last time, hash; the source
 * is not compared); else 0 with why (n bytes) listing each difference, e.g. "1000 bars,
 * now 1200; last bar 2020-01-01 00:00:00, now 2021-06-30 00:00:00; content hash
 * 9f0c..., now 31aa...; source spy.csv, now btc.csv". */
int fh_data_identity_same(const fh_data_identity *saved, const fh_data_identity *now,
                          char *why, size_t n);

/* The identity as the data.* __metadata__ strings of a safetensors file (checkpoints,
 * `foxhunt collect`'s collections). */
fh_status fh_data_identity_write_metadata(fh_st_writer *w, const fh_data_identity *id,
                                          fh_error *err);
/* 0: f has no data.* key; 1: read into *id; -1: some but not all, or one that does not
 * parse (FH_ERR_INPUT in err, naming the file and the key). */
int fh_data_identity_read_metadata(const fh_st_file *f, fh_data_identity *id, fh_error *err);

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
    /* the training data's identity: save writes the data.* metadata when not NULL; load
     * fills it when not NULL and the file has it (data_present = 1), else leaves it as
     * is (data_present = 0: a checkpoint from before the identity was recorded). A file
     * with some data.* keys but not all, or one that does not parse, is refused. */
    fh_data_identity *data;
    int data_present;
    /* An actor-only checkpoint: the greedy policy's one network (PPO's actor, or a Q
     * learner's Q-network: learner.h). Save: 1 writes one: that network's params (no
     * Adam state; the one net given), norm, the config and (when given) data, with
     * __metadata__ "kind" = "actor"; the network, norm and config_json are required, and
     * a second network, seed, iteration, rng_state or extra is an error (FH_ERR_FAILURE,
     * nothing written). Load: set to 1 when the file is one, else 0. Such a file answers
     * a load that asks for one network (its params; its Adam moments and step are zeroed,
     * a fresh optimiser's), norm, data, the config and optional extras; a load that asks
     * for anything else (a second network, seed, iteration, rng_state, a required extra:
     * a resume) is refused (FH_ERR_INPUT) saying the file is actor-only. */
    int actor_only;
    /* save only: further __metadata__ strings (e.g. "update.lr"); a key may not be
     * format, format_version, kind, config or data.* (FH_ERR_FAILURE, nothing written) */
    const char *const *meta_keys;
    const char *const *meta_values;
    int n_meta;
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
