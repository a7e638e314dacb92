/* checkpoint.c — training checkpoints (include/foxhunt/checkpoint.h, keys in
 * docs/CHECKPOINTS.md). Save is one pass over each network's tensor table (params,
 * then Adam m and v under prefixed keys, which lie in the same layout); load validates
 * every requested key into a copy plan and only then copies, so a bad file never
 * leaves the caller half-loaded. */
#include "foxhunt/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK_MAX_ITEMS (FH_NET_COUNT * (3 * FH_NN_MAX_TENSORS + 1) + 8 + FH_CHECKPOINT_MAX_EXTRAS)

static const char *const k_moment_prefix[2] = {"adam.m.", "adam.v."};

static float *moment_buffer(const fh_mlp *m, int which)
{
    return which == 0 ? m->adam_m : m->adam_v;
}

fh_status fh_checkpoint_save(const char *path, const fh_checkpoint *ck, const char *config_json,
                             fh_error *err)
{
    if (ck->n_extras < 0 || ck->n_extras > FH_CHECKPOINT_MAX_EXTRAS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: %d extra tensors (at most %d)", path,
                            ck->n_extras, FH_CHECKPOINT_MAX_EXTRAS);
    fh_st_writer w;
    fh_st_writer_init(&w);
    char key[FH_NN_MAX_NAME + 32];
    fh_status st = fh_st_writer_set_metadata(&w, "format", FH_CHECKPOINT_FORMAT, err);
    if (st == FH_OK)
        st = fh_st_writer_set_metadata(&w, "format_version", FH_CHECKPOINT_VERSION, err);
    if (st == FH_OK && config_json)
        st = fh_st_writer_set_metadata(&w, "config", config_json, err);

    for (int k = 0; k < FH_NET_COUNT && st == FH_OK; k++) {
        const fh_mlp *m = ck->nets[k];
        if (!m)
            continue;
        /* params, then Adam m, then Adam v: one pass over the table per buffer */
        for (int pass = 0; pass < 3 && st == FH_OK; pass++) {
            const float *buf = pass == 0 ? m->params : moment_buffer(m, pass - 1);
            for (int t = 0; t < m->n_tensors && st == FH_OK; t++) {
                const fh_tensor_desc *td = &m->tensors[t];
                int64_t shape[2] = {td->shape[0], td->shape[1]};
                snprintf(key, sizeof key, "%s%s", pass == 0 ? "" : k_moment_prefix[pass - 1],
                         td->name);
                st = fh_st_writer_add(&w, key, FH_DTYPE_F32, td->rank, shape,
                                      buf + td->offset, err);
            }
        }
        if (st == FH_OK) {
            int64_t one = 1;
            snprintf(key, sizeof key, "adam.step.%s", m->desc->name);
            st = fh_st_writer_add(&w, key, FH_DTYPE_I64, 1, &one, &m->adam_step, err);
        }
    }
    int64_t nf = FH_N_MARKET_FEATURES, one = 1;
    if (st == FH_OK && ck->norm)
        st = fh_st_writer_add(&w, "norm.mean", FH_DTYPE_F32, 1, &nf, ck->norm->mean, err);
    if (st == FH_OK && ck->norm)
        st = fh_st_writer_add(&w, "norm.std", FH_DTYPE_F32, 1, &nf, ck->norm->std, err);
    if (st == FH_OK && ck->seed)
        st = fh_st_writer_add(&w, "run.seed", FH_DTYPE_U64, 1, &one, ck->seed, err);
    if (st == FH_OK && ck->iteration)
        st = fh_st_writer_add(&w, "run.iteration", FH_DTYPE_I64, 1, &one, ck->iteration, err);
    if (st == FH_OK && ck->rng_state) {
        int64_t shape[2] = {(int64_t)ck->rng_rows, (int64_t)ck->rng_cols};
        st = fh_st_writer_add(&w, "rng.episodes", FH_DTYPE_U64, 2, shape, ck->rng_state, err);
    }
    for (int i = 0; i < ck->n_extras && st == FH_OK; i++) {
        const fh_checkpoint_extra *x = &ck->extras[i];
        st = fh_st_writer_add(&w, x->name, x->dtype, x->rank, x->shape, x->data, err);
    }
    if (st == FH_OK)
        st = fh_st_writer_write(&w, path, err);
    else
        fh_error_prefix(err, "%s: not saved: ", path);
    fh_st_writer_free(&w);
    return st;
}

/* ---- load: validate into a plan, then copy ---- */
typedef struct {
    const fh_st_tensor *src;
    void *dst;
} ck_item;

typedef struct {
    ck_item items[CK_MAX_ITEMS];
    int n;
} ck_plan;

static fh_status plan_add(ck_plan *plan, const fh_st_file *f, const char *name, fh_dtype dtype,
                          int rank, const int64_t *shape, void *dst, fh_error *err)
{
    const fh_st_tensor *t = NULL;
    fh_status st = fh_st_expect(&t, f, name, dtype, rank, shape, err);
    if (st != FH_OK)
        return st;
    if (plan->n == CK_MAX_ITEMS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: too many checkpoint items", f->path);
    plan->items[plan->n].src = t;
    plan->items[plan->n].dst = dst;
    plan->n++;
    return FH_OK;
}

fh_status fh_checkpoint_load(const char *path, fh_checkpoint *ck, char **config_json_out,
                             fh_error *err)
{
    if (config_json_out)
        *config_json_out = NULL;
    if (ck->n_extras < 0 || ck->n_extras > FH_CHECKPOINT_MAX_EXTRAS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: %d extra tensors (at most %d)", path,
                            ck->n_extras, FH_CHECKPOINT_MAX_EXTRAS);
    fh_st_file f;
    fh_status st = fh_st_read(&f, path, err);
    if (st != FH_OK)
        return st;
    ck_plan *plan = calloc(1, sizeof *plan);
    char *config = NULL;
    if (!plan) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
        goto done;
    }
    const char *fmt = fh_st_metadata(&f, "format");
    const char *ver = fh_st_metadata(&f, "format_version");
    if (!fmt || strcmp(fmt, FH_CHECKPOINT_FORMAT) != 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: not a foxhunt checkpoint (__metadata__ "
                          "\"format\" is %s%s%s, expected \"%s\")", path, fmt ? "\"" : "",
                          fmt ? fmt : "missing", fmt ? "\"" : "", FH_CHECKPOINT_FORMAT);
        goto done;
    }
    if (!ver || strcmp(ver, FH_CHECKPOINT_VERSION) != 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: checkpoint format_version %s, this build "
                          "reads %s", path, ver ? ver : "(missing)", FH_CHECKPOINT_VERSION);
        goto done;
    }
    char key[FH_NN_MAX_NAME + 32];
    int64_t one = 1, nf = FH_N_MARKET_FEATURES;
    for (int k = 0; k < FH_NET_COUNT && st == FH_OK; k++) {
        fh_mlp *m = ck->nets[k];
        if (!m)
            continue;
        for (int pass = 0; pass < 3 && st == FH_OK; pass++) {
            float *buf = pass == 0 ? m->params : moment_buffer(m, pass - 1);
            for (int t = 0; t < m->n_tensors && st == FH_OK; t++) {
                const fh_tensor_desc *td = &m->tensors[t];
                int64_t shape[2] = {td->shape[0], td->shape[1]};
                snprintf(key, sizeof key, "%s%s", pass == 0 ? "" : k_moment_prefix[pass - 1],
                         td->name);
                st = plan_add(plan, &f, key, FH_DTYPE_F32, td->rank, shape, buf + td->offset,
                              err);
            }
        }
        if (st == FH_OK) {
            snprintf(key, sizeof key, "adam.step.%s", m->desc->name);
            st = plan_add(plan, &f, key, FH_DTYPE_I64, 1, &one, &m->adam_step, err);
            if (st == FH_OK) {
                int64_t step;
                memcpy(&step, plan->items[plan->n - 1].src->data, sizeof step);
                if (step < 0)
                    st = fh_error_set(err, FH_ERR_INPUT, "%s: key \"%s\": negative Adam step "
                                      "%lld", path, key, (long long)step);
            }
        }
    }
    if (st == FH_OK && ck->norm)
        st = plan_add(plan, &f, "norm.mean", FH_DTYPE_F32, 1, &nf, ck->norm->mean, err);
    if (st == FH_OK && ck->norm)
        st = plan_add(plan, &f, "norm.std", FH_DTYPE_F32, 1, &nf, ck->norm->std, err);
    if (st == FH_OK && ck->seed)
        st = plan_add(plan, &f, "run.seed", FH_DTYPE_U64, 1, &one, ck->seed, err);
    if (st == FH_OK && ck->iteration)
        st = plan_add(plan, &f, "run.iteration", FH_DTYPE_I64, 1, &one, ck->iteration, err);
    if (st == FH_OK && ck->rng_state) {
        int64_t shape[2] = {(int64_t)ck->rng_rows, (int64_t)ck->rng_cols};
        st = plan_add(plan, &f, "rng.episodes", FH_DTYPE_U64, 2, shape, ck->rng_state, err);
    }
    for (int i = 0; i < ck->n_extras && st == FH_OK; i++) {
        fh_checkpoint_extra *x = &ck->extras[i];
        if (x->optional && !fh_st_find(&f, x->name))
            continue;
        st = plan_add(plan, &f, x->name, x->dtype, x->rank, x->shape, x->data, err);
    }
    if (st == FH_OK && config_json_out) {
        const char *c = fh_st_metadata(&f, "config");
        if (c) {
            size_t n = strlen(c) + 1;
            config = malloc(n);
            if (!config)
                st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
            else
                memcpy(config, c, n);
        }
    }
    if (st != FH_OK)
        goto done;
    /* every check passed: now, and only now, touch the caller's objects */
    for (int i = 0; i < plan->n; i++)
        memcpy(plan->items[i].dst, plan->items[i].src->data, plan->items[i].src->nbytes);
    for (int i = 0; i < ck->n_extras; i++)
        ck->extras[i].present = fh_st_find(&f, ck->extras[i].name) != NULL;
    if (config_json_out) {
        *config_json_out = config;
        config = NULL;
    }
done:
    free(config);
    free(plan);
    fh_st_file_free(&f);
    return st;
}
