/* capi_tensors.c — named tensors (capi.h): safetensors files read and written with the
 * library's own validating reader and atomic writer (safetensors.h), and checkpoints
 * read with fh_checkpoint_load's file checks. The handle keeps its own copy of every
 * tensor (a file's bytes may be unaligned and the file is closed after reading). */
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "foxhunt/checkpoint.h"

static fh_api_tensors *tensors_alloc(char *err, size_t err_cap)
{
    fh_api_tensors *t = calloc(1, sizeof *t);
    if (!t)
        return capi_fail_out(err, err_cap, "tensors: out of memory");
    capi_object_init(&t->obj, CAPI_TENSORS);
    return t;
}

static void tensors_release(fh_api_tensors *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->tensors[i].name);
        free(t->tensors[i].data);
    }
    for (size_t i = 0; i < t->n_meta; i++) {
        free(t->meta_keys[i]);
        free(t->meta_values[i]);
    }
    free(t->tensors);
    free(t->meta_keys);
    free(t->meta_values);
    free(t);
}

void fh_api_tensors_free(fh_api_tensors *t)
{
    if (!capi_object_of(t, CAPI_TENSORS))
        return;
    capi_object_kill(&t->obj);
    tensors_release(t);
}

fh_api_tensors *fh_api_tensors_new(char *err, size_t err_cap)
{
    return tensors_alloc(err, err_cap);
}

capi_tensor *capi_tensors_find(const fh_api_tensors *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->tensors[i].name, name) == 0)
            return &t->tensors[i];
    return NULL;
}

const char *capi_tensors_meta(const fh_api_tensors *t, const char *key)
{
    for (size_t i = 0; i < t->n_meta; i++)
        if (strcmp(t->meta_keys[i], key) == 0)
            return t->meta_values[i];
    return NULL;
}

static char *dup_text(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Adds or replaces (in place) a tensor; data copied. */
static fh_status tensors_put(fh_api_tensors *t, const char *name, fh_dtype dtype, int rank,
                             const int64_t *shape, const void *data, size_t nbytes)
{
    capi_tensor *slot = capi_tensors_find(t, name);
    unsigned char *copy = malloc(nbytes ? nbytes : 1);
    if (!copy)
        return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "tensor \"%.200s\": out of memory "
                            "for %zu bytes", name, nbytes);
    if (nbytes)
        memcpy(copy, data, nbytes);
    if (!slot) {
        if (t->n == t->cap) {
            size_t cap = t->cap ? 2 * t->cap : 32;
            capi_tensor *grown = realloc(t->tensors, cap * sizeof *grown);
            if (!grown) {
                free(copy);
                return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "out of memory");
            }
            t->tensors = grown;
            t->cap = cap;
        }
        slot = &t->tensors[t->n];
        memset(slot, 0, sizeof *slot);
        if (!(slot->name = dup_text(name))) {
            free(copy);
            return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "out of memory");
        }
        t->n++;
    }
    free(slot->data);
    slot->data = copy;
    slot->dtype = dtype;
    slot->rank = rank;
    memset(slot->shape, 0, sizeof slot->shape);
    for (int r = 0; r < rank; r++)
        slot->shape[r] = shape[r];
    slot->nbytes = nbytes;
    return FH_OK;
}

static fh_status meta_put(fh_api_tensors *t, const char *key, const char *value)
{
    for (size_t i = 0; i < t->n_meta; i++) {
        if (strcmp(t->meta_keys[i], key) == 0) {
            char *v = dup_text(value);
            if (!v)
                return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "out of memory");
            free(t->meta_values[i]);
            t->meta_values[i] = v;
            return FH_OK;
        }
    }
    if (t->n_meta == t->cap_meta) {
        size_t cap = t->cap_meta ? 2 * t->cap_meta : 16;
        char **k = realloc(t->meta_keys, cap * sizeof *k);
        if (k)
            t->meta_keys = k;
        char **v = k ? realloc(t->meta_values, cap * sizeof *v) : NULL;
        if (v)
            t->meta_values = v;
        if (!k || !v)
            return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "out of memory");
        t->cap_meta = cap;
    }
    char *k = dup_text(key), *v = dup_text(value);
    if (!k || !v) {
        free(k);
        free(v);
        return fh_error_set(&t->obj.err, FH_ERR_FAILURE, "out of memory");
    }
    t->meta_keys[t->n_meta] = k;
    t->meta_values[t->n_meta] = v;
    t->n_meta++;
    return FH_OK;
}

/* Copies everything of a validated file into t. */
static fh_status tensors_from_file(fh_api_tensors *t, const fh_st_file *f)
{
    fh_status st = FH_OK;
    for (size_t i = 0; st == FH_OK && i < f->n_tensors; i++) {
        const fh_st_tensor *s = &f->tensors[i];
        st = tensors_put(t, s->name, s->dtype, s->rank, s->shape, s->data, s->nbytes);
    }
    for (size_t i = 0; st == FH_OK && i < f->n_meta; i++)
        st = meta_put(t, f->meta_keys[i], f->meta_values[i]);
    return st;
}

static fh_api_tensors *read_file(const char *path, int as_checkpoint, char *err,
                                 size_t err_cap)
{
    if (!path)
        return capi_fail_out(err, err_cap, "read: the path is NULL");
    fh_api_tensors *t = tensors_alloc(err, err_cap);
    if (!t)
        return NULL;
    fh_status st = FH_OK;
    if (as_checkpoint) {
        /* asking for nothing runs every whole-file check of a load: format, version,
         * kind, finite floats, norm.std > 0, the data identity's metadata */
        fh_checkpoint ck;
        memset(&ck, 0, sizeof ck);
        fh_data_identity identity;
        ck.data = &identity;
        st = fh_checkpoint_load(path, &ck, NULL, &t->obj.err);
    }
    fh_st_file f;
    memset(&f, 0, sizeof f);
    if (st == FH_OK)
        st = fh_st_read(&f, path, &t->obj.err);
    if (st == FH_OK)
        st = tensors_from_file(t, &f);
    fh_st_file_free(&f);
    if (st != FH_OK) {
        capi_error_out(err, err_cap, &t->obj.err);
        tensors_release(t);
        return NULL;
    }
    return t;
}

fh_api_tensors *fh_api_tensors_read(const char *path, char *err, size_t err_cap)
{
    return read_file(path, 0, err, err_cap);
}

fh_api_tensors *fh_api_checkpoint_load(const char *path, char *err, size_t err_cap)
{
    return read_file(path, 1, err, err_cap);
}

int64_t fh_api_tensors_count(const fh_api_tensors *t)
{
    const fh_api_tensors *h = (const fh_api_tensors *)capi_object_of(t, CAPI_TENSORS);
    return h ? (int64_t)h->n : -1;
}

static fh_status index_ok(fh_api_tensors *t, int64_t i, size_t n, const char *what)
{
    if (i < 0 || (uint64_t)i >= n)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "%s %lld is outside [0, %zu)", what,
                            (long long)i, n);
    return FH_OK;
}

int fh_api_tensors_info(fh_api_tensors *tensors, int64_t i, const char **name, int *dtype,
                        int *rank, int64_t *shape, size_t *nbytes)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (index_ok(t, i, t->n, "tensor") != FH_OK)
        return FH_API_INPUT;
    const capi_tensor *x = &t->tensors[i];
    if (name)
        *name = x->name;
    if (dtype)
        *dtype = (int)x->dtype;
    if (rank)
        *rank = x->rank;
    if (shape)
        memcpy(shape, x->shape, sizeof x->shape);
    if (nbytes)
        *nbytes = x->nbytes;
    return FH_API_OK;
}

int fh_api_tensors_copy(fh_api_tensors *tensors, int64_t i, void *out, size_t nbytes)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (index_ok(t, i, t->n, "tensor") != FH_OK)
        return FH_API_INPUT;
    const capi_tensor *x = &t->tensors[i];
    if (!out || nbytes != x->nbytes)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "tensor \"%s\": %zu bytes asked for "
                            "into %s; it holds %zu", x->name, nbytes, out ? "a buffer" : "NULL",
                            x->nbytes);
    memcpy(out, x->data, nbytes);
    return FH_API_OK;
}

int fh_api_tensors_set(fh_api_tensors *tensors, const char *name, int dtype, int rank,
                       const int64_t *shape, const void *data, size_t nbytes)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (!name || !name[0] || strcmp(name, "__metadata__") == 0)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "tensor name \"%s\" is not allowed",
                            name ? name : "(NULL)");
    if (dtype < 0 || dtype >= FH_DTYPE_COUNT)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "tensor \"%.200s\": dtype %d; use 0 "
                            "F32, 1 F64, 2 I32, 3 I64, 4 U64 or 5 U8", name, dtype);
    if (rank < 0 || rank > FH_ST_MAX_RANK || (rank > 0 && !shape))
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "tensor \"%.200s\": rank %d (0..%d, "
                            "with its shape)", name, rank, FH_ST_MAX_RANK);
    size_t count = 1;
    for (int r = 0; r < rank; r++) {
        if (shape[r] < 0 || (shape[r] > 0 && count > SIZE_MAX / (size_t)shape[r]))
            return fh_error_set(&t->obj.err, FH_ERR_INPUT, "tensor \"%.200s\": dimension %d "
                                "is %lld", name, r, (long long)shape[r]);
        count *= (size_t)shape[r];
    }
    size_t want = count * fh_dtype_size((fh_dtype)dtype);
    if (nbytes != want || (nbytes && !data))
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "tensor \"%.200s\": %zu bytes given, "
                            "its shape and dtype %s make %zu", name, nbytes,
                            fh_dtype_name((fh_dtype)dtype), want);
    return tensors_put(t, name, (fh_dtype)dtype, rank, shape, data, nbytes);
}

int64_t fh_api_tensors_meta_count(const fh_api_tensors *t)
{
    const fh_api_tensors *h = (const fh_api_tensors *)capi_object_of(t, CAPI_TENSORS);
    return h ? (int64_t)h->n_meta : -1;
}

int fh_api_tensors_meta_at(fh_api_tensors *tensors, int64_t i, const char **key,
                           const char **value)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (index_ok(t, i, t->n_meta, "metadata entry") != FH_OK)
        return FH_API_INPUT;
    if (key)
        *key = t->meta_keys[i];
    if (value)
        *value = t->meta_values[i];
    return FH_API_OK;
}

int fh_api_tensors_set_meta(fh_api_tensors *tensors, const char *key, const char *value)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (!key || !key[0] || !value)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "metadata: a key (not empty) and a "
                            "value are required");
    return meta_put(t, key, value);
}

int fh_api_tensors_write(fh_api_tensors *tensors, const char *path)
{
    CAPI_ENTER(fh_api_tensors, t, tensors, CAPI_TENSORS);
    if (!path)
        return fh_error_set(&t->obj.err, FH_ERR_INPUT, "write: the path is NULL");
    fh_st_writer w;
    fh_st_writer_init(&w);
    fh_status st = FH_OK;
    for (size_t i = 0; st == FH_OK && i < t->n; i++) {
        const capi_tensor *x = &t->tensors[i];
        st = fh_st_writer_add(&w, x->name, x->dtype, x->rank, x->shape, x->data, &t->obj.err);
    }
    for (size_t i = 0; st == FH_OK && i < t->n_meta; i++)
        st = fh_st_writer_set_metadata(&w, t->meta_keys[i], t->meta_values[i], &t->obj.err);
    if (st == FH_OK)
        st = fh_st_writer_write(&w, path, &t->obj.err);
    fh_st_writer_free(&w);
    return st;
}
