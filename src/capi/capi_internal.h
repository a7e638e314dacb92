/* capi_internal.h — what every file of the C API (include/foxhunt/capi.h) shares: the
 * header each handle starts with, and the checks and error plumbing of its entries.
 *
 * Every handle struct begins with an fh_api_object, so that fh_api_last_error takes
 * any handle and an entry can tell a live handle of its kind from NULL, a freed handle
 * (its magic is cleared by _free) or a handle of another kind. */
#ifndef FOXHUNT_CAPI_INTERNAL_H
#define FOXHUNT_CAPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/capi.h"
#include "foxhunt/error.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/train_config.h"

#define CAPI_MAGIC 0x46584150u /* "FXAP" */

typedef enum {
    CAPI_CONFIG = 1,
    CAPI_MARKET,
    CAPI_VEC_ENV,
    CAPI_TENSORS,
    CAPI_EVAL,
    CAPI_GPU_COLLECTOR,
    CAPI_TRAINER
} capi_kind;

typedef struct {
    uint32_t magic;
    capi_kind kind;
    fh_error err; /* the last call's error, cleared at the start of each call */
} fh_api_object;

struct fh_api_config {
    fh_api_object obj;
    fh_train_config cfg;
};

/* The data lives as long as its last user: the handle and every vector env or GPU
 * collector built on it hold one reference each (their views point into data). */
struct fh_api_market {
    fh_api_object obj;
    int refs;
    fh_train_config cfg; /* what built it; the default environment of its users */
    fh_run_data data;
};

/* Marks o live as kind, with no error. */
void capi_object_init(fh_api_object *o, capi_kind kind);
/* Marks o dead (before it is freed), so that a stale pointer is refused while its
 * memory has not been reused. */
void capi_object_kill(fh_api_object *o);
/* handle as a live object of kind, its error cleared, or NULL. */
fh_api_object *capi_object_of(const void *handle, capi_kind kind);

/* The entry's handle of the given kind, or `return FH_API_INPUT` from the entry. */
#define CAPI_ENTER(type, var, handle, kind)                                              \
    type *var = (type *)capi_object_of((handle), (kind));                                \
    if (!var)                                                                            \
        return FH_API_INPUT

/* A constructor's error into the caller's buffer (err may be NULL); returns NULL so a
 * constructor can `return capi_error_out(...)`. */
void *capi_error_out(char *err, size_t err_cap, const fh_error *e);
/* The same from a printf-style message. */
void *capi_fail_out(char *err, size_t err_cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One named tensor of an fh_api_tensors handle: its own copy of the bytes. */
typedef struct {
    char *name;
    fh_dtype dtype;
    int rank;
    int64_t shape[FH_ST_MAX_RANK];
    size_t nbytes;
    unsigned char *data;
} capi_tensor;

struct fh_api_tensors {
    fh_api_object obj;
    capi_tensor *tensors; /* in order: a file's header order, then as set */
    size_t n, cap;
    char **meta_keys, **meta_values; /* owned, in order */
    size_t n_meta, cap_meta;
};

/* The tensor called name, or NULL. */
capi_tensor *capi_tensors_find(const fh_api_tensors *t, const char *name);
/* The metadata value of key, or NULL. */
const char *capi_tensors_meta(const fh_api_tensors *t, const char *key);

/* A user of m's data takes a reference and gives it back when freed. */
void capi_market_retain(fh_api_market *m);
void capi_market_release(fh_api_market *m);

/* FH_OK when every param of kind's flat buffer (its n_params floats, shapes.h's layout)
 * is finite; else FH_ERR_INPUT naming the first other one by its index and its tensor
 * ("what: element 17 (fc1.weight[0, 17]) is nan; ..."). Params are checked where they
 * enter, since the C code that runs them would turn one NaN into NaN rewards and
 * batches without a word (issue 32). */
fh_status capi_params_finite(fh_error *err, const char *what, fh_net_kind kind,
                             const float *params);

/* Looks up a configuration key ("horizon" or "env.horizon"); NULL when unknown. */
const fh_config_field *capi_config_field(const char *key);
/* "train", "validation", "test", "all" into *split; 0 when the name is none of them. */
int capi_split_parse(const char *name, fh_split *split);

#endif
