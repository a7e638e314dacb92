/* batch_file.h — a collection (fh_trajectory_batch) as a safetensors file: `foxhunt
 * collect` writes it, `foxhunt update` reads it back (issues 6, 17).
 *
 * Tensors (little-endian, row-major, episode-major): states F32 (N, L, 54); actions,
 * dones, terminals, bars I32 (N, L); log_probs, values, rewards, advantages, returns,
 * trunc_values, exposures F32 (N, L); last_values F32 (N). __metadata__: format
 * "foxhunt.collection", device, config (the collecting run's resolved configuration),
 * weights ("checkpoint PATH" or "fresh seed=S"), weights.hash (fh_weights_hash of the
 * collecting actor and critic, 16 hex digits) and the data's identity (data.*, as in a
 * checkpoint: docs/CHECKPOINTS.md). */
#ifndef FOXHUNT_BATCH_FILE_H
#define FOXHUNT_BATCH_FILE_H

#include <stdint.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/env.h"
#include "foxhunt/nn.h"
#include "foxhunt/rollout.h"

#define FH_BATCH_FORMAT "foxhunt.collection"

/* What a collection file says about itself (metadata). */
typedef struct {
    char device[256];              /* "cpu" or the GPU's name */
    char weights[1100];            /* "checkpoint PATH" or "fresh seed=S" */
    uint64_t weights_hash;
    int weights_hash_present;      /* 0: written before the hash was recorded */
    fh_data_identity data;
    int data_present;
} fh_batch_file_info;

/* FNV-1a 64 (docs/CHECKPOINTS.md's constants) over the bytes of each network's params
 * in turn (float32, little-endian): which weights a collection was made with. */
uint64_t fh_weights_hash(const fh_mlp *const *nets, int n_nets);

/* Writes b to path atomically. config_json may be NULL; info's device and weights are
 * written, weights.hash and data.* when their present flags are set. */
fh_status fh_batch_file_write(const fh_trajectory_batch *b, const char *path,
                              const char *config_json, const fh_batch_file_info *info,
                              fh_error *err);

/* Reads path into b (allocated here, N x L), checking it before use (FH_ERR_INPUT naming
 * the file): the format; states (N', L', 54) with N' x L' = n_episodes x n_steps, else
 * an error naming both sizes (expected_from says whose they are, e.g. "the checkpoint
 * run/c.safetensors"); every tensor present (a missing one is named) with its dtype and
 * exact shape; floats finite, log_probs <= 0; actions in [0, 45); dones and terminals
 * 0 or 1; bars such that bar and bar + 1 lie in market (the curiosity fit reads the next
 * bar). info (may be NULL) receives the metadata. On error b is left freed. */
fh_status fh_batch_file_read(fh_trajectory_batch *b, fh_batch_file_info *info,
                             const char *path, int n_episodes, int n_steps,
                             const char *expected_from, const fh_env_market *market,
                             fh_error *err);

#endif
