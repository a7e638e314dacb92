/* capi_checkpoint.c — fh_api_checkpoint_save (capi.h): a handle of named tensors written
 * as a checkpoint by fh_checkpoint_save, the writer `foxhunt train` uses, so a file
 * saved from Python is one `foxhunt eval` and `foxhunt train --resume` read like their
 * own (docs/CHECKPOINTS.md, docs/PYTHON.md).
 *
 * The handle is taken apart into what fh_checkpoint_save expects: each network whose
 * design-note keys are present (with its Adam state), the normalisation, the run's
 * seed, iteration and episode streams, everything else as extras in the handle's order,
 * and the metadata the checkpoint writes itself (format, kind, config, data.*). The
 * writer then lays them out in its own order, which is the order of the files it wrote:
 * a checkpoint loaded and saved unchanged comes back byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/nn.h"

typedef struct {
    fh_mlp nets[FH_NET_COUNT];
    fh_feature_norm norm;
    uint64_t seed;
    int64_t iteration;
    uint64_t *rng;                       /* borrowed from the handle */
    fh_checkpoint_extra extras[FH_CHECKPOINT_MAX_EXTRAS];
    const char *meta_keys[64], *meta_values[64];
    unsigned char *used;                 /* (n tensors) 1 once a field took the tensor */
} save_plan;

/* t's tensor name checked for dtype and exact shape; NULL (and err set) when it is not
 * there or differs. */
static capi_tensor *expect(fh_api_tensors *t, const char *name, fh_dtype dtype, int rank,
                           const int64_t *shape, fh_status *st)
{
    capi_tensor *x = capi_tensors_find(t, name);
    if (!x) {
        *st = fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: missing tensor \"%s\"",
                           name);
        return NULL;
    }
    int same = x->dtype == dtype && x->rank == rank;
    for (int r = 0; same && r < rank; r++)
        same = x->shape[r] == shape[r];
    if (!same) {
        char got[96] = "", want[96] = "";
        size_t a = 0, b = 0;
        for (int r = 0; r < x->rank && a < sizeof got; r++)
            a += (size_t)snprintf(got + a, sizeof got - a, "%s%lld", r ? ", " : "",
                                  (long long)x->shape[r]);
        for (int r = 0; r < rank && b < sizeof want; r++)
            b += (size_t)snprintf(want + b, sizeof want - b, "%s%lld", r ? ", " : "",
                                  (long long)shape[r]);
        *st = fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: tensor \"%s\" is %s [%s]; "
                           "expected %s [%s]", name, fh_dtype_name(x->dtype), got,
                           fh_dtype_name(dtype), want);
        return NULL;
    }
    return x;
}

static void mark_used(const fh_api_tensors *t, save_plan *p, const capi_tensor *x)
{
    p->used[x - t->tensors] = 1;
}

/* 1 when the handle holds network kind (its first tensor's key; PQN and DQN share the
 * q_layer_* keys: a file holding q_norm_0.weight is PQN's). */
static int holds_net(const fh_api_tensors *t, fh_net_kind kind)
{
    fh_tensor_desc table[FH_NN_MAX_TENSORS];
    fh_net_tensors(table, fh_net_desc_get(kind));
    if (kind == FH_NET_QNET && capi_tensors_find(t, "q_norm_0.weight"))
        return 0;
    if (kind == FH_NET_PQN)
        return capi_tensors_find(t, "q_norm_0.weight") != NULL;
    return capi_tensors_find(t, table[0].name) != NULL;
}

/* Fills m (kind) from the handle: every param tensor, and the Adam state when any of
 * it is there (then all of it), else a fresh optimiser's zeros. */
static fh_status take_net(fh_api_tensors *t, save_plan *p, fh_mlp *m, fh_net_kind kind,
                          int actor_only)
{
    fh_status st = fh_mlp_init(m, kind, &t->obj.err);
    if (st != FH_OK)
        return st;
    static const char *const prefix[3] = {"", "adam.m.", "adam.v."};
    char key[FH_NN_MAX_NAME + 32];
    snprintf(key, sizeof key, "adam.step.%s", m->desc->name);
    int has_adam = capi_tensors_find(t, key) != NULL;
    for (int i = 0; !has_adam && i < m->n_tensors; i++)
        for (int pass = 1; pass < 3 && !has_adam; pass++) {
            char k[FH_NN_MAX_NAME + 32];
            snprintf(k, sizeof k, "%s%s", prefix[pass], m->tensors[i].name);
            has_adam = capi_tensors_find(t, k) != NULL;
        }
    if (has_adam && actor_only)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: an actor-only checkpoint "
                            "(metadata kind \"actor\") holds no Adam state, and this one has "
                            "the %s's: remove kind to save a full checkpoint, or the adam.* "
                            "tensors", m->desc->name);
    float *buffers[3] = {m->params, m->adam_m, m->adam_v};
    for (int pass = 0; pass < (has_adam ? 3 : 1); pass++) {
        for (int i = 0; i < m->n_tensors; i++) {
            const fh_tensor_desc *td = &m->tensors[i];
            int64_t shape[2] = {td->shape[0], td->shape[1]};
            snprintf(key, sizeof key, "%s%s", prefix[pass], td->name);
            capi_tensor *x = expect(t, key, FH_DTYPE_F32, td->rank, shape, &st);
            if (!x)
                return st;
            memcpy(buffers[pass] + td->offset, x->data, x->nbytes);
            mark_used(t, p, x);
        }
    }
    if (has_adam) {
        int64_t one = 1;
        snprintf(key, sizeof key, "adam.step.%s", m->desc->name);
        capi_tensor *x = expect(t, key, FH_DTYPE_I64, 1, &one, &st);
        if (!x)
            return st;
        memcpy(&m->adam_step, x->data, sizeof m->adam_step);
        mark_used(t, p, x);
    }
    return FH_OK;
}

/* A U64/I64 [1] tensor into out, when the handle has it; *present set. */
static fh_status take_scalar(fh_api_tensors *t, save_plan *p, const char *name, fh_dtype dtype,
                             void *out, int *present)
{
    *present = capi_tensors_find(t, name) != NULL;
    if (!*present)
        return FH_OK;
    int64_t one = 1;
    fh_status st = FH_OK;
    capi_tensor *x = expect(t, name, dtype, 1, &one, &st);
    if (!x)
        return st;
    memcpy(out, x->data, 8);
    mark_used(t, p, x);
    return FH_OK;
}

/* The handle's metadata as fh_checkpoint_save takes it: config, kind, the data identity
 * (parsed by the checkpoint code's own reader, through a view of the strings) and the
 * other keys. */
static fh_status take_metadata(fh_api_tensors *t, save_plan *p, fh_checkpoint *ck,
                               const char *path, const char **config, fh_data_identity *id)
{
    const char *fmt = capi_tensors_meta(t, "format");
    const char *ver = capi_tensors_meta(t, "format_version");
    if ((fmt && strcmp(fmt, FH_CHECKPOINT_FORMAT) != 0) ||
        (ver && strcmp(ver, FH_CHECKPOINT_VERSION) != 0))
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: metadata format \"%.64s\" "
                            "version \"%.16s\"; a checkpoint is \"%s\" version \"%s\" (a "
                            "collection or other file is not one)", fmt ? fmt : "",
                            ver ? ver : "", FH_CHECKPOINT_FORMAT, FH_CHECKPOINT_VERSION);
    const char *kind = capi_tensors_meta(t, "kind");
    if (kind && strcmp(kind, FH_CHECKPOINT_KIND_ACTOR) != 0)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: metadata kind \"%.64s\"; "
                            "it is \"%s\" (an actor-only checkpoint) or absent (a full one)",
                            kind, FH_CHECKPOINT_KIND_ACTOR);
    ck->actor_only = kind != NULL;
    *config = capi_tensors_meta(t, "config");
    fh_st_file view;
    memset(&view, 0, sizeof view);
    view.path = (char *)path;
    view.n_meta = t->n_meta;
    view.meta_keys = t->meta_keys;
    view.meta_values = t->meta_values;
    int got = fh_data_identity_read_metadata(&view, id, &t->obj.err);
    if (got < 0)
        return FH_ERR_INPUT;
    ck->data = got ? id : NULL;
    for (size_t i = 0; i < t->n_meta; i++) {
        const char *k = t->meta_keys[i];
        if (!strcmp(k, "format") || !strcmp(k, "format_version") || !strcmp(k, "kind") ||
            !strcmp(k, "config") || !strncmp(k, "data.", 5))
            continue;
        if (ck->n_meta == (int)(sizeof p->meta_keys / sizeof p->meta_keys[0]))
            return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: more than %d "
                                "metadata keys of its own", ck->n_meta);
        p->meta_keys[ck->n_meta] = k;
        p->meta_values[ck->n_meta] = t->meta_values[i];
        ck->n_meta++;
    }
    ck->meta_keys = p->meta_keys;
    ck->meta_values = p->meta_values;
    return FH_OK;
}

static fh_status build(fh_api_tensors *t, save_plan *p, fh_checkpoint *ck, const char *path,
                       const char **config, fh_data_identity *id)
{
    fh_status st = take_metadata(t, p, ck, path, config, id);
    for (int k = 0; st == FH_OK && k < FH_NET_COUNT; k++) {
        if (!holds_net(t, (fh_net_kind)k))
            continue;
        st = take_net(t, p, &p->nets[k], (fh_net_kind)k, ck->actor_only);
        ck->nets[k] = &p->nets[k];
    }
    int has_mean = capi_tensors_find(t, "norm.mean") != NULL;
    int has_std = capi_tensors_find(t, "norm.std") != NULL;
    if (st == FH_OK && has_mean != has_std)
        st = fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: norm.mean and norm.std come "
                          "together; this one has only %s", has_mean ? "norm.mean" : "norm.std");
    if (st == FH_OK && has_mean) {
        int64_t nf = FH_N_MARKET_FEATURES;
        capi_tensor *m = expect(t, "norm.mean", FH_DTYPE_F32, 1, &nf, &st);
        capi_tensor *s = m ? expect(t, "norm.std", FH_DTYPE_F32, 1, &nf, &st) : NULL;
        if (s) {
            memcpy(p->norm.mean, m->data, sizeof p->norm.mean);
            memcpy(p->norm.std, s->data, sizeof p->norm.std);
            mark_used(t, p, m);
            mark_used(t, p, s);
            ck->norm = &p->norm;
        }
    }
    int present = 0;
    if (st == FH_OK && (st = take_scalar(t, p, "run.seed", FH_DTYPE_U64, &p->seed, &present)) == FH_OK && present)
        ck->seed = &p->seed;
    if (st == FH_OK && (st = take_scalar(t, p, "run.iteration", FH_DTYPE_I64, &p->iteration, &present)) == FH_OK && present)
        ck->iteration = &p->iteration;
    capi_tensor *rng = capi_tensors_find(t, "rng.episodes");
    if (st == FH_OK && rng) {
        if (rng->dtype != FH_DTYPE_U64 || rng->rank != 2)
            return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: rng.episodes is %s of "
                                "rank %d; expected U64 [episodes, k]", fh_dtype_name(rng->dtype),
                                rng->rank);
        ck->rng_state = (uint64_t *)(void *)rng->data; /* malloc'd: aligned */
        ck->rng_rows = (size_t)rng->shape[0];
        ck->rng_cols = (size_t)rng->shape[1];
        mark_used(t, p, rng);
    }
    for (size_t i = 0; st == FH_OK && i < t->n; i++) {
        if (p->used[i])
            continue;
        const capi_tensor *x = &t->tensors[i];
        if (ck->n_extras == FH_CHECKPOINT_MAX_EXTRAS)
            return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint: more than %d tensors "
                                "beyond the networks, norm.*, run.* and rng.episodes (at "
                                "\"%s\"); a checkpoint holds at most %d extras",
                                FH_CHECKPOINT_MAX_EXTRAS, x->name, FH_CHECKPOINT_MAX_EXTRAS);
        fh_checkpoint_extra *e = &p->extras[ck->n_extras++];
        memset(e, 0, sizeof *e);
        e->name = x->name;
        e->dtype = x->dtype;
        e->rank = x->rank;
        memcpy(e->shape, x->shape, sizeof e->shape);
        e->data = x->data;
    }
    ck->extras = p->extras;
    return st;
}

int fh_api_checkpoint_save(fh_api_tensors *tensors, const char *path)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (!path)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "checkpoint save: the path is NULL");
    save_plan *p = calloc(1, sizeof *p);
    unsigned char *used = calloc(t->n ? t->n : 1, 1);
    if (!p || !used) {
        free(p);
        free(used);
        return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__,
                            __LINE__);
    }
    p->used = used;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    const char *config = NULL;
    fh_data_identity identity;
    fh_status st = build(t, p, &ck, path, &config, &identity);
    if (st == FH_OK)
        st = fh_checkpoint_save(path, &ck, config, &t->obj.err);
    else
        fh_error_prefix(&t->obj.err, "%s: not saved: ", path);
    for (int k = 0; k < FH_NET_COUNT; k++)
        fh_mlp_free(&p->nets[k]);
    free(used);
    free(p);
    return st;
}
