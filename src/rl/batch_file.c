/* batch_file.c — a collection as a safetensors file (include/foxhunt/batch_file.h). */
#include "foxhunt/batch_file.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

uint64_t fh_weights_hash(const fh_mlp *const *nets, int n_nets)
{
    uint64_t h = FNV_OFFSET;
    for (int k = 0; k < n_nets; k++) {
        for (size_t i = 0; i < nets[k]->n_params; i++) {
            uint32_t v;
            memcpy(&v, &nets[k]->params[i], sizeof v);
            for (int b = 0; b < 4; b++) { /* little-endian bytes whatever the host */
                h ^= (v >> (8 * b)) & 0xFF;
                h *= FNV_PRIME;
            }
        }
    }
    return h;
}

/* One tensor of the file: its name, dtype, rank (3: (N, L, 54), 2: (N, L), 1: (N)) and
 * where it lives in a batch. */
typedef struct {
    const char *name;
    fh_dtype dtype;
    int rank;
    size_t offset; /* of the pointer member in fh_trajectory_batch */
} batch_tensor;

#define BT(name, dtype, rank) {#name, dtype, rank, offsetof(fh_trajectory_batch, name)}
static const batch_tensor k_tensors[] = {
    BT(states, FH_DTYPE_F32, 3),     BT(actions, FH_DTYPE_I32, 2),
    BT(log_probs, FH_DTYPE_F32, 2),  BT(values, FH_DTYPE_F32, 2),
    BT(rewards, FH_DTYPE_F32, 2),    BT(dones, FH_DTYPE_I32, 2),
    BT(terminals, FH_DTYPE_I32, 2),  BT(advantages, FH_DTYPE_F32, 2),
    BT(returns, FH_DTYPE_F32, 2),    BT(trunc_values, FH_DTYPE_F32, 2),
    BT(last_values, FH_DTYPE_F32, 1), BT(exposures, FH_DTYPE_F32, 2),
    BT(bars, FH_DTYPE_I32, 2),
};
#define N_TENSORS (sizeof k_tensors / sizeof k_tensors[0])

static void *member(const fh_trajectory_batch *b, const batch_tensor *t)
{
    void *p;
    memcpy(&p, (const char *)b + t->offset, sizeof p);
    return p;
}

static void shape_of(const batch_tensor *t, int64_t N, int64_t L, int64_t *shape)
{
    shape[0] = N;
    shape[1] = t->rank >= 2 ? L : 0;
    shape[2] = t->rank == 3 ? FH_STATE_DIM : 0;
}

fh_status fh_batch_file_write(const fh_trajectory_batch *b, const char *path,
                              const char *config_json, const fh_batch_file_info *info,
                              fh_error *err)
{
    int64_t N = b->n_episodes, L = b->n_steps;
    fh_st_writer w;
    fh_st_writer_init(&w);
    fh_status st = FH_OK;
    int64_t shapes[N_TENSORS][3];
    for (size_t i = 0; st == FH_OK && i < N_TENSORS; i++) {
        shape_of(&k_tensors[i], N, L, shapes[i]);
        st = fh_st_writer_add(&w, k_tensors[i].name, k_tensors[i].dtype, k_tensors[i].rank,
                              shapes[i], member(b, &k_tensors[i]), err);
    }
    if (st == FH_OK)
        st = fh_st_writer_set_metadata(&w, "format", FH_BATCH_FORMAT, err);
    if (st == FH_OK)
        st = fh_st_writer_set_metadata(&w, "device", info->device, err);
    if (st == FH_OK && config_json)
        st = fh_st_writer_set_metadata(&w, "config", config_json, err);
    if (st == FH_OK)
        st = fh_st_writer_set_metadata(&w, "weights", info->weights, err);
    if (st == FH_OK && info->weights_hash_present) {
        char hex[24];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)info->weights_hash);
        st = fh_st_writer_set_metadata(&w, "weights.hash", hex, err);
    }
    if (st == FH_OK && info->data_present)
        st = fh_data_identity_write_metadata(&w, &info->data, err);
    if (st == FH_OK)
        st = fh_st_writer_write(&w, path, err);
    fh_st_writer_free(&w);
    return st;
}

/* The file's metadata into info. */
static fh_status read_info(fh_batch_file_info *info, const fh_st_file *f, fh_error *err)
{
    memset(info, 0, sizeof *info);
    const char *v = fh_st_metadata(f, "device");
    snprintf(info->device, sizeof info->device, "%s", v ? v : "");
    v = fh_st_metadata(f, "weights");
    snprintf(info->weights, sizeof info->weights, "%s", v ? v : "");
    v = fh_st_metadata(f, "weights.hash");
    if (v) {
        char *end = NULL;
        errno = 0;
        unsigned long long h = strtoull(v, &end, 16);
        if (strlen(v) != 16 || errno || !end || *end || v[0] == '-' || v[0] == '+')
            return fh_error_set(err, FH_ERR_INPUT, "%s: __metadata__ \"weights.hash\" is "
                                "\"%s\" (16 lowercase hex digits expected)", f->path, v);
        info->weights_hash = h;
        info->weights_hash_present = 1;
    }
    int id = fh_data_identity_read_metadata(f, &info->data, err);
    if (id < 0)
        return FH_ERR_INPUT;
    info->data_present = id;
    return FH_OK;
}

/* Content checks of a loaded batch (all tensors copied in). */
static fh_status check_values(const fh_trajectory_batch *b, const char *path,
                              const fh_env_market *market, fh_error *err)
{
    int64_t N = b->n_episodes, L = b->n_steps, nl = N * L;
    for (size_t i = 0; i < N_TENSORS; i++) {
        const batch_tensor *t = &k_tensors[i];
        if (t->dtype != FH_DTYPE_F32)
            continue;
        const float *x = member(b, t);
        int64_t count = t->rank == 3 ? nl * FH_STATE_DIM : t->rank == 2 ? nl : N;
        for (int64_t j = 0; j < count; j++)
            if (!isfinite(x[j]))
                return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": element %lld is %g "
                                    "(a collection holds finite floats only)", path, t->name,
                                    (long long)j, (double)x[j]);
    }
    for (int64_t j = 0; j < nl; j++) {
        const char *bad = NULL;
        long long value = 0;
        if (!(b->log_probs[j] <= 0.0f))
            return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"log_probs\": element %lld is "
                                "%g; a log-probability is <= 0", path, (long long)j,
                                (double)b->log_probs[j]);
        if (b->actions[j] < 0 || b->actions[j] >= FH_N_ACTIONS)
            bad = "actions", value = b->actions[j];
        else if (b->dones[j] != 0 && b->dones[j] != 1)
            bad = "dones", value = b->dones[j];
        else if (b->terminals[j] != 0 && b->terminals[j] != 1)
            bad = "terminals", value = b->terminals[j];
        if (bad)
            return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": element %lld is %lld, "
                                "outside %s%d%s", path, bad, (long long)j, value,
                                !strcmp(bad, "actions") ? "[0, " : "{0, ",
                                !strcmp(bad, "actions") ? FH_N_ACTIONS : 1,
                                !strcmp(bad, "actions") ? ")" : "}");
        /* bar + 1 < n_bars written without the + 1: INT32_MAX + 1 overflowed, and the
         * wrapped bar was accepted and read out of bounds (fuzz_batch, issue 32) */
        if (b->bars[j] < 0 || b->bars[j] >= market->n_bars - 1)
            return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"bars\": element %lld is %d, "
                                "outside [0, %d) (the training split has %d bars and a step "
                                "reads the next one: the collection was made on other "
                                "data?)", path, (long long)j, (int)b->bars[j],
                                market->n_bars - 1, market->n_bars);
    }
    return FH_OK;
}

fh_status fh_batch_file_read(fh_trajectory_batch *b, fh_batch_file_info *info,
                             const char *path, int n_episodes, int n_steps,
                             const char *expected_from, const fh_env_market *market,
                             fh_error *err)
{
    memset(b, 0, sizeof *b);
    fh_st_file f;
    fh_status st = fh_st_read(&f, path, err);
    if (st != FH_OK)
        return st;
    const char *format = fh_st_metadata(&f, "format");
    if (!format || strcmp(format, FH_BATCH_FORMAT) != 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: not a foxhunt collection (__metadata__ "
                          "\"format\" is %s%s%s, expected \"%s\"; `foxhunt collect` writes "
                          "one)", path, format ? "\"" : "", format ? format : "missing",
                          format ? "\"" : "", FH_BATCH_FORMAT);
        goto done;
    }
    const fh_st_tensor *states = fh_st_find(&f, "states");
    if (!states) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: missing tensor \"states\"", path);
        goto done;
    }
    if (states->rank == 3 && states->shape[2] == FH_STATE_DIM &&
        (states->shape[0] != n_episodes || states->shape[1] != n_steps)) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: the collection is %lld x %lld (episodes x "
                          "steps), but %s is configured for %d x %d; collect with "
                          "--episodes %d --steps %d", path, (long long)states->shape[0],
                          (long long)states->shape[1], expected_from, n_episodes, n_steps,
                          n_episodes, n_steps);
        goto done;
    }
    /* every tensor present with its dtype and shape before anything is allocated */
    const fh_st_tensor *found[N_TENSORS];
    for (size_t i = 0; i < N_TENSORS; i++) {
        int64_t shape[3];
        shape_of(&k_tensors[i], n_episodes, n_steps, shape);
        if (!fh_st_find(&f, k_tensors[i].name)) {
            st = fh_error_set(err, FH_ERR_INPUT, "%s: missing tensor \"%s\" (%s)", path,
                              k_tensors[i].name,
                              (!strcmp(k_tensors[i].name, "bars") ||
                               !strcmp(k_tensors[i].name, "exposures"))
                                  ? "collections written before the update could read "
                                    "them lack it: collect again with this build"
                                  : "every collection has it");
            goto done;
        }
        if ((st = fh_st_expect(&found[i], &f, k_tensors[i].name, k_tensors[i].dtype,
                               k_tensors[i].rank, shape, err)) != FH_OK)
            goto done;
    }
    if (info && (st = read_info(info, &f, err)) != FH_OK)
        goto done;
    if ((st = fh_trajectory_batch_alloc(b, n_episodes, n_steps, err)) != FH_OK)
        goto done;
    for (size_t i = 0; i < N_TENSORS; i++)
        memcpy(member(b, &k_tensors[i]), found[i]->data, found[i]->nbytes);
    st = check_values(b, path, market, err);
done:
    if (st != FH_OK)
        fh_trajectory_batch_free(b);
    fh_st_file_free(&f);
    return st;
}
