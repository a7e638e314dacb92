/* ckpt_fixture.h — a fully populated training state for the checkpoint tests: actor,
 * critic and curiosity with distinct exact values in params and Adam moments, Adam
 * steps, normalisation statistics, seed, iteration, per-episode RNG states and one
 * extra tensor. Values are exact in float32 so other tools can recompute them. fix_poke
 * edits one element of a saved checkpoint (the NaN and episode-state tests). */
#ifndef FOXHUNT_TESTS_CKPT_FIXTURE_H
#define FOXHUNT_TESTS_CKPT_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/checkpoint.h"

#define FIX_RNG_ROWS 128
#define FIX_RNG_COLS 2

typedef struct {
    fh_mlp nets[3];
    fh_feature_norm norm;
    uint64_t seed;
    int64_t iteration;
    uint64_t rng[FIX_RNG_ROWS * FIX_RNG_COLS];
    double lr_frac[2];
    fh_checkpoint_extra extra;
    fh_checkpoint ck;
} fixture;

/* value k of buffer b (0 params, 1 m, 2 v) of net n: exact in float32 */
static inline float fix_value(int n, int b, size_t k)
{
    return (float)((double)(k % 1000) * 0.25 - 100.0 + n * 1000.0 + b * 0.125);
}

/* fill = 1: the known values; fill = 0: a sentinel pattern (for "untouched" checks) */
static inline int fixture_init(fixture *fx, int fill)
{
    memset(fx, 0, sizeof *fx);
    fh_error err;
    for (int n = 0; n < 3; n++) {
        if (fh_mlp_init(&fx->nets[n], (fh_net_kind)n, &err) != FH_OK)
            return -1;
        fh_mlp *m = &fx->nets[n];
        float *bufs[3] = {m->params, m->adam_m, m->adam_v};
        for (int b = 0; b < 3; b++)
            for (size_t k = 0; k < m->n_params; k++)
                bufs[b][k] = fill ? fix_value(n, b, k) : -7.0f;
        m->adam_step = fill ? 1000 + n : -1;
        fx->ck.nets[n] = m;
    }
    for (int i = 0; i < FH_N_MARKET_FEATURES; i++) {
        fx->norm.mean[i] = fill ? (float)i * 0.5f : -1.0f;
        fx->norm.std[i] = fill ? 1.0f + (float)i : -1.0f;
    }
    fx->seed = fill ? 0xFEDCBA9876543210ull : 0;
    fx->iteration = fill ? 42 : -1;
    for (int i = 0; i < FIX_RNG_ROWS * FIX_RNG_COLS; i++)
        fx->rng[i] = fill ? 0x9E3779B97F4A7C15ull * (uint64_t)(i + 1) : 0;
    fx->lr_frac[0] = fill ? 0.75 : -1;
    fx->lr_frac[1] = fill ? 1.0 / 3.0 : -1;
    fx->extra = (fh_checkpoint_extra){.name = "ppo.lr_frac", .dtype = FH_DTYPE_F64, .rank = 1,
                                      .shape = {2}, .data = fx->lr_frac};
    fx->ck.norm = &fx->norm;
    fx->ck.seed = &fx->seed;
    fx->ck.iteration = &fx->iteration;
    fx->ck.rng_state = fx->rng;
    fx->ck.rng_rows = FIX_RNG_ROWS;
    fx->ck.rng_cols = FIX_RNG_COLS;
    fx->ck.extras = &fx->extra;
    fx->ck.n_extras = 1;
    return 0;
}

static inline void fixture_free(fixture *fx)
{
    for (int n = 0; n < 3; n++)
        fh_mlp_free(&fx->nets[n]);
}

/* 1 when every field of a equals b bit for bit */
static inline int fixture_equal(const fixture *a, const fixture *b)
{
    for (int n = 0; n < 3; n++) {
        if (memcmp(a->nets[n].mem, b->nets[n].mem, 4 * a->nets[n].n_params * sizeof(float)))
            return 0;
        if (a->nets[n].adam_step != b->nets[n].adam_step)
            return 0;
    }
    return memcmp(&a->norm, &b->norm, sizeof a->norm) == 0 && a->seed == b->seed &&
           a->iteration == b->iteration && memcmp(a->rng, b->rng, sizeof a->rng) == 0 &&
           memcmp(a->lr_frac, b->lr_frac, sizeof a->lr_frac) == 0;
}

/* Writes dst = src with the `len` bytes at element `index` of tensor `key` replaced by
 * `bytes` (an edited-but-well-formed checkpoint). Returns 0, or -1 (absent key, index
 * out of range, I/O). */
static inline int fix_poke(const char *dst, const char *src, const char *key, size_t index,
                           const void *bytes, size_t len)
{
    fh_st_file f;
    fh_error err;
    if (fh_st_read(&f, src, &err) != FH_OK)
        return -1;
    const fh_st_tensor *t = fh_st_find(&f, key);
    size_t at = t ? index * fh_dtype_size(t->dtype) : 0;
    int rc = -1;
    if (t && at + len <= t->nbytes) {
        size_t off = (size_t)((const unsigned char *)t->data - f.file) + at;
        unsigned char *copy = malloc(f.file_len);
        FILE *out = copy ? fopen(dst, "wb") : NULL;
        if (out) {
            memcpy(copy, f.file, f.file_len);
            memcpy(copy + off, bytes, len);
            rc = fwrite(copy, 1, f.file_len, out) == f.file_len ? 0 : -1;
            rc = fclose(out) == 0 ? rc : -1;
        }
        free(copy);
    }
    fh_st_file_free(&f);
    return rc;
}

#define FIX_CONFIG "{\"algo\":\"ppo\",\"episodes\":128,\"lr\":0.0003,\"note\":\"q\\\"uote\"}"

#endif
