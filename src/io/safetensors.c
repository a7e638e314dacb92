/* safetensors.c — writer and validating reader for safetensors files (format and
 * guarantees in include/foxhunt/safetensors.h). The header is built and parsed with
 * cJSON; data is written as it lies in memory, so the host must be little-endian
 * (checked at run time: foxhunt targets x86-64 and aarch64). */
#include "foxhunt/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "foxhunt/files.h"
#include "foxhunt/text.h"

#define ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000) /* the Python package's limit */

static const char *const k_dtype_names[FH_DTYPE_COUNT] = {"F32", "F64", "I32",
                                                           "I64", "U64", "U8"};
static const size_t k_dtype_sizes[FH_DTYPE_COUNT] = {4, 8, 4, 8, 8, 1};

const char *fh_dtype_name(fh_dtype dtype)
{
    return (int)dtype >= 0 && dtype < FH_DTYPE_COUNT ? k_dtype_names[dtype] : "?";
}

size_t fh_dtype_size(fh_dtype dtype)
{
    return (int)dtype >= 0 && dtype < FH_DTYPE_COUNT ? k_dtype_sizes[dtype] : 0;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* "[a, b]" into buf */
static const char *shape_str(char *buf, size_t cap, int rank, const int64_t *shape)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (int i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
    return buf;
}

/* element count x size, or SIZE_MAX on overflow */
static size_t shape_bytes(int rank, const int64_t *shape, fh_dtype dtype)
{
    size_t n = fh_dtype_size(dtype);
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return SIZE_MAX;
        size_t d = (size_t)shape[i];
        if (d != 0 && n > SIZE_MAX / d)
            return SIZE_MAX;
        n *= d;
    }
    return n;
}

/* FH_OK when text (a tensor name, a metadata key or value) is UTF-8. */
static fh_status check_utf8(const char *role, const char *name, const char *text,
                            fh_error *err)
{
    size_t at = 0;
    if (fh_utf8_valid(text, strlen(text), &at))
        return FH_OK;
    return fh_error_set(err, FH_ERR_INPUT,
                        "safetensors: %s%s%s%s is not valid UTF-8 (byte 0x%02x at offset %zu); "
                        "the header is JSON, which must be UTF-8 for other readers (Python's "
                        "safetensors) to load the file: use UTF-8 names and paths",
                        role, name ? " \"" : "", name ? name : "", name ? "\"" : "",
                        (unsigned char)text[at], at);
}

/* ---- writer ---- */
void fh_st_writer_init(fh_st_writer *w)
{
    memset(w, 0, sizeof *w);
}

void fh_st_writer_free(fh_st_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_tensors; i++)
        free(w->tensors[i].name);
    free(w->tensors);
    for (size_t i = 0; i < w->n_meta; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->meta_keys);
    free(w->meta_values);
    memset(w, 0, sizeof *w);
}

fh_status fh_st_writer_add(fh_st_writer *w, const char *name, fh_dtype dtype, int rank,
                           const int64_t *shape, const void *data, fh_error *err)
{
    if (!name || !name[0] || strcmp(name, "__metadata__") == 0)
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: invalid tensor name \"%s\"",
                            name ? name : "(null)");
    if (check_utf8("tensor name", NULL, name, err) != FH_OK)
        return FH_ERR_INPUT;
    if ((int)dtype < 0 || dtype >= FH_DTYPE_COUNT)
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: tensor %s: unknown dtype %d",
                            name, (int)dtype);
    if (rank < 0 || rank > FH_ST_MAX_RANK)
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: tensor %s: rank %d outside "
                            "[0, %d]", name, rank, FH_ST_MAX_RANK);
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return fh_error_set(err, FH_ERR_FAILURE, "safetensors: tensor %s added twice",
                                name);
    size_t nbytes = shape_bytes(rank, shape, dtype);
    if (nbytes == SIZE_MAX)
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: tensor %s: bad shape", name);
    if (nbytes > 0 && !data)
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: tensor %s: no data", name);
    if (w->n_tensors == w->cap_tensors) {
        size_t cap = w->cap_tensors ? 2 * w->cap_tensors : 32;
        fh_st_tensor *t = realloc(w->tensors, cap * sizeof *t);
        if (!t)
            return fh_error_set(err, FH_ERR_FAILURE, "safetensors: out of memory");
        w->tensors = t;
        w->cap_tensors = cap;
    }
    fh_st_tensor *t = &w->tensors[w->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = dup_str(name);
    if (!t->name)
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: out of memory");
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->shape[i] = shape[i];
    t->nbytes = nbytes;
    t->data = data;
    w->n_tensors++;
    return FH_OK;
}

fh_status fh_st_writer_set_metadata(fh_st_writer *w, const char *key, const char *value,
                                    fh_error *err)
{
    if (check_utf8("metadata key", NULL, key, err) != FH_OK ||
        check_utf8("metadata", key, value, err) != FH_OK)
        return FH_ERR_INPUT;
    for (size_t i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta_keys[i], key) == 0) {
            char *v = dup_str(value);
            if (!v)
                return fh_error_set(err, FH_ERR_FAILURE, "safetensors: out of memory");
            free(w->meta_values[i]);
            w->meta_values[i] = v;
            return FH_OK;
        }
    }
    if (w->n_meta == w->cap_meta) {
        size_t cap = w->cap_meta ? 2 * w->cap_meta : 8;
        char **k = realloc(w->meta_keys, cap * sizeof *k);
        if (!k)
            return fh_error_set(err, FH_ERR_FAILURE, "safetensors: out of memory");
        w->meta_keys = k;
        char **v = realloc(w->meta_values, cap * sizeof *v);
        if (!v)
            return fh_error_set(err, FH_ERR_FAILURE, "safetensors: out of memory");
        w->meta_values = v;
        w->cap_meta = cap;
    }
    char *k = dup_str(key), *v = dup_str(value);
    if (!k || !v) {
        free(k);
        free(v);
        return fh_error_set(err, FH_ERR_FAILURE, "safetensors: out of memory");
    }
    w->meta_keys[w->n_meta] = k;
    w->meta_values[w->n_meta] = v;
    w->n_meta++;
    return FH_OK;
}

/* Builds the padded header; returns a malloc'd string (length in *len) or NULL. */
static char *build_header(const fh_st_writer *w, size_t *len)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    int ok = 1;
    if (w->n_meta > 0) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        ok = meta != NULL;
        for (size_t i = 0; ok && i < w->n_meta; i++)
            ok = cJSON_AddStringToObject(meta, w->meta_keys[i], w->meta_values[i]) != NULL;
    }
    size_t off = 0;
    for (size_t i = 0; ok && i < w->n_tensors; i++) {
        const fh_st_tensor *t = &w->tensors[i];
        cJSON *e = cJSON_AddObjectToObject(root, t->name);
        ok = e && cJSON_AddStringToObject(e, "dtype", fh_dtype_name(t->dtype));
        cJSON *shape = ok ? cJSON_AddArrayToObject(e, "shape") : NULL;
        cJSON *offs = ok ? cJSON_AddArrayToObject(e, "data_offsets") : NULL;
        ok = ok && shape && offs;
        for (int d = 0; ok && d < t->rank; d++)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
        ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
        off += t->nbytes;
        ok = ok && cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    }
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json)
        return NULL;
    size_t n = strlen(json);
    size_t padded = (n + 7) / 8 * 8;
    char *h = malloc(padded + 1);
    if (h) {
        memcpy(h, json, n);
        memset(h + n, ' ', padded - n);
        h[padded] = '\0';
        *len = padded;
    }
    cJSON_free(json);
    return h;
}

fh_status fh_st_writer_write(const fh_st_writer *w, const char *path, fh_error *err)
{
    if (!host_is_little_endian())
        return fh_error_set(err, FH_ERR_FAILURE, "%s: safetensors writer needs a "
                            "little-endian host", path);
    size_t hlen = 0;
    char *header = build_header(w, &hlen);
    if (!header)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: cannot build the safetensors header "
                            "(out of memory)", path);
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    if (!tmp) {
        free(header);
        return fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);

    fh_status st = FH_OK;
    FILE *fp = fh_fopen_regular(tmp, "checkpoint's temporary file", O_WRONLY | O_CREAT | O_TRUNC,
                                err);
    if (!fp) {
        fh_error_prefix(err, "%s: cannot create its temporary file: ", path);
        st = FH_ERR_FAILURE; /* a save that cannot write fails as a write, whatever blocked it */
        if (err)
            err->status = st;
        goto done;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)(((uint64_t)hlen >> (8 * i)) & 0xFF);
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(header, 1, hlen, fp) == hlen;
    for (size_t i = 0; ok && i < w->n_tensors; i++)
        ok = w->tensors[i].nbytes == 0 ||
             fwrite(w->tensors[i].data, 1, w->tensors[i].nbytes, fp) == w->tensors[i].nbytes;
    ok = ok && fflush(fp) == 0;
    int e = errno;
    ok = ok && fsync(fileno(fp)) == 0;
    if (!ok)
        e = errno;
    if (fclose(fp) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s: writing %s failed: %s%s (removed it; the "
                          "previous file, if any, is untouched)", path, tmp, strerror(e),
                          fh_write_error_hint(e));
        unlink(tmp);
        goto done;
    }
    if (rename(tmp, path) != 0) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s: rename from %s failed: %s (the previous "
                          "file, if any, is untouched)", path, tmp, strerror(errno));
        unlink(tmp);
        goto done;
    }
    st = fh_fsync_dir_of(path, err);
done:
    free(tmp);
    free(header);
    return st;
}

/* ---- reader ---- */
void fh_st_file_free(fh_st_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n_tensors; i++)
        free(f->tensors[i].name);
    free(f->tensors);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_values[i]);
    }
    free(f->meta_keys);
    free(f->meta_values);
    free(f->file);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* A JSON number that is a non-negative integer below 2^53. */
static int json_u64(const cJSON *n, uint64_t *out)
{
    if (!cJSON_IsNumber(n))
        return 0;
    double d = n->valuedouble;
    if (!(d >= 0.0) || d > 9007199254740992.0 || d != (double)(uint64_t)d)
        return 0;
    *out = (uint64_t)d;
    return 1;
}

static int cmp_span(const void *a, const void *b)
{
    const fh_st_tensor *x = *(const fh_st_tensor *const *)a;
    const fh_st_tensor *y = *(const fh_st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : (x->nbytes > y->nbytes);
}

static fh_status parse_entry(fh_st_tensor *t, const cJSON *e, const fh_st_file *f,
                             fh_error *err)
{
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": header entry is not an "
                            "object", f->path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": needs \"dtype\" (string), "
                            "\"shape\" (array) and \"data_offsets\" (array)", f->path, name);
    int d;
    for (d = 0; d < FH_DTYPE_COUNT; d++)
        if (strcmp(dt->valuestring, k_dtype_names[d]) == 0)
            break;
    if (d == FH_DTYPE_COUNT)
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": unsupported dtype \"%s\" "
                            "(known: F32 F64 I32 I64 U64 U8)", f->path, name, dt->valuestring);
    t->dtype = (fh_dtype)d;
    int rank = cJSON_GetArraySize(shape);
    if (rank > FH_ST_MAX_RANK)
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": rank %d above %d", f->path,
                            name, rank, FH_ST_MAX_RANK);
    t->rank = rank;
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, shape) {
        uint64_t v;
        if (!json_u64(it, &v) || v > (uint64_t)INT64_MAX)
            return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": shape entry %d is not "
                                "a non-negative integer", f->path, name, i);
        t->shape[i++] = (int64_t)v;
    }
    uint64_t b = 0, en = 0;
    if (cJSON_GetArraySize(offs) != 2 || !json_u64(cJSON_GetArrayItem(offs, 0), &b) ||
        !json_u64(cJSON_GetArrayItem(offs, 1), &en))
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": data_offsets must be two "
                            "non-negative integers", f->path, name);
    if (en < b)
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": data_offsets [%llu, %llu] "
                            "end before begin", f->path, name, (unsigned long long)b,
                            (unsigned long long)en);
    if (en > f->buffer_len)
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": data_offsets [%llu, %llu] "
                            "beyond the %zu-byte data buffer (truncated file?)", f->path, name,
                            (unsigned long long)b, (unsigned long long)en, f->buffer_len);
    size_t nbytes = shape_bytes(rank, t->shape, t->dtype);
    if (nbytes == SIZE_MAX || nbytes != en - b) {
        char s[256];
        return fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\": shape %s of %s needs %zu "
                            "bytes but data_offsets [%llu, %llu] span %llu", f->path, name,
                            shape_str(s, sizeof s, rank, t->shape), k_dtype_names[d], nbytes,
                            (unsigned long long)b, (unsigned long long)en,
                            (unsigned long long)(en - b));
    }
    t->begin = (size_t)b;
    t->nbytes = nbytes;
    t->data = f->buffer + b;
    return FH_OK;
}

static fh_status parse_header(fh_st_file *f, const char *hdr, size_t hlen, fh_error *err)
{
    if (hlen == 0 || hdr[0] != '{')
        return fh_error_set(err, FH_ERR_INPUT, "%s: header does not start with '{': not a "
                            "safetensors file", f->path);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long pos = at && at >= hdr && at <= hdr + hlen ? (long)(at - hdr) : -1;
        return fh_error_set(err, FH_ERR_INPUT, "%s: header JSON does not parse (near byte %ld "
                            "of the %zu-byte header)", f->path, pos, hlen);
    }
    fh_status st = FH_OK;
    for (const char *p = end; p && p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
            st = fh_error_set(err, FH_ERR_INPUT, "%s: trailing bytes after the header JSON",
                              f->path);
            goto done;
        }
    size_t nul_at = 0;
    if (fh_json_string_has_nul(hdr, end ? (size_t)(end - hdr) : hlen, &nul_at)) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: the header holds a NUL character (\\u0000) "
                          "in a tensor name or metadata string (byte %zu of the file); "
                          "names and metadata are C strings here, which the NUL would cut "
                          "short: rewrite the file without it", f->path, 8 + nul_at);
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: header JSON is not an object", f->path);
        goto done;
    }
    size_t n = (size_t)cJSON_GetArraySize(root);
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    f->meta_keys = calloc(n ? n : 1, sizeof(char *));
    f->meta_values = calloc(n ? n : 1, sizeof(char *));
    if (!f->tensors || !f->meta_keys || !f->meta_values) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", f->path);
        goto done;
    }
    const cJSON *e;
    int seen_meta = 0;
    size_t meta_cap = n ? n : 1;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (seen_meta++ || !cJSON_IsObject(e)) {
                st = fh_error_set(err, FH_ERR_INPUT, "%s: \"__metadata__\" must be one object "
                                  "of strings", f->path);
                goto done;
            }
            const cJSON *kv;
            cJSON_ArrayForEach(kv, e) {
                if (!cJSON_IsString(kv)) {
                    st = fh_error_set(err, FH_ERR_INPUT, "%s: __metadata__ \"%s\" is not a "
                                      "string", f->path, kv->string);
                    goto done;
                }
                if (f->n_meta == meta_cap) {
                    meta_cap *= 2;
                    char **k = realloc(f->meta_keys, meta_cap * sizeof(char *));
                    if (k)
                        f->meta_keys = k;
                    char **v = realloc(f->meta_values, meta_cap * sizeof(char *));
                    if (v)
                        f->meta_values = v;
                    if (!k || !v) {
                        st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", f->path);
                        goto done;
                    }
                }
                f->meta_keys[f->n_meta] = dup_str(kv->string);
                f->meta_values[f->n_meta] = dup_str(kv->valuestring);
                f->n_meta++;
                if (!f->meta_keys[f->n_meta - 1] || !f->meta_values[f->n_meta - 1]) {
                    st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", f->path);
                    goto done;
                }
            }
            continue;
        }
        for (size_t j = 0; j < f->n_tensors; j++)
            if (strcmp(f->tensors[j].name, e->string) == 0) {
                st = fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\" appears twice in the "
                                  "header", f->path, e->string);
                goto done;
            }
        fh_st_tensor *t = &f->tensors[f->n_tensors];
        t->name = dup_str(e->string);
        if (!t->name) {
            st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", f->path);
            goto done;
        }
        f->n_tensors++;
        st = parse_entry(t, e, f, err);
        if (st != FH_OK)
            goto done;
    }
    /* spans sorted by offset must tile the buffer exactly */
    {
        fh_st_tensor **order = malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *order);
        if (!order) {
            st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", f->path);
            goto done;
        }
        for (size_t j = 0; j < f->n_tensors; j++)
            order[j] = &f->tensors[j];
        qsort(order, f->n_tensors, sizeof *order, cmp_span);
        size_t pos = 0;
        for (size_t j = 0; j < f->n_tensors && st == FH_OK; j++) {
            const fh_st_tensor *t = order[j];
            if (t->begin < pos)
                st = fh_error_set(err, FH_ERR_INPUT, "%s: tensor \"%s\" data [%zu, %zu) "
                                  "overlaps the previous tensor (ends at %zu)", f->path,
                                  t->name, t->begin, t->begin + t->nbytes, pos);
            else if (t->begin > pos)
                st = fh_error_set(err, FH_ERR_INPUT, "%s: gap in the data buffer: bytes [%zu, "
                                  "%zu) belong to no tensor (next is \"%s\")", f->path, pos,
                                  t->begin, t->name);
            pos = t->begin + t->nbytes;
        }
        if (st == FH_OK && pos != f->buffer_len)
            st = fh_error_set(err, FH_ERR_INPUT, "%s: tensors cover %zu bytes but the data "
                              "buffer holds %zu (%s)", f->path, pos, f->buffer_len,
                              pos > f->buffer_len ? "truncated file" : "trailing bytes");
        free(order);
    }
done:
    cJSON_Delete(root);
    return st;
}

fh_status fh_st_read(fh_st_file *f, const char *path, fh_error *err)
{
    memset(f, 0, sizeof *f);
    if (!host_is_little_endian())
        return fh_error_set(err, FH_ERR_FAILURE, "%s: safetensors reader needs a "
                            "little-endian host", path);
    f->path = dup_str(path);
    if (!f->path)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
    char *whole = NULL;
    fh_status st = fh_read_regular_file(path, "checkpoint (.safetensors file)", 0, &whole,
                                        &f->file_len, err);
    if (st != FH_OK)
        goto fail;
    f->file = (unsigned char *)whole;
    if (f->file_len < 8) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: %zu bytes, too short to hold the 8-byte "
                          "header length (truncated or not a safetensors file)", path,
                          f->file_len);
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)f->file[i] << (8 * i);
    if (hlen > f->file_len - 8 || hlen > ST_MAX_HEADER) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: header length %llu does not fit in the "
                          "%zu-byte file (truncated or not a safetensors file)", path,
                          (unsigned long long)hlen, f->file_len);
        goto fail;
    }
    f->buffer = f->file + 8 + hlen;
    f->buffer_len = f->file_len - 8 - (size_t)hlen;
    st = parse_header(f, (const char *)f->file + 8, (size_t)hlen, err);
    if (st != FH_OK)
        goto fail;
    return FH_OK;
fail:
    fh_st_file_free(f);
    return st;
}

const fh_st_tensor *fh_st_find(const fh_st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

const char *fh_st_metadata(const fh_st_file *f, const char *key)
{
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0)
            return f->meta_values[i];
    return NULL;
}

fh_status fh_st_expect(const fh_st_tensor **out, const fh_st_file *f, const char *name,
                       fh_dtype dtype, int rank, const int64_t *shape, fh_error *err)
{
    const fh_st_tensor *t = fh_st_find(f, name);
    if (!t)
        return fh_error_set(err, FH_ERR_INPUT, "%s: missing key \"%s\"", f->path, name);
    if (t->dtype != dtype)
        return fh_error_set(err, FH_ERR_INPUT, "%s: key \"%s\": wrong dtype %s, expected %s",
                            f->path, name, fh_dtype_name(t->dtype), fh_dtype_name(dtype));
    int same = t->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = t->shape[i] == shape[i];
    if (!same) {
        char a[256], b[256];
        return fh_error_set(err, FH_ERR_INPUT, "%s: key \"%s\": wrong shape %s, expected %s",
                            f->path, name, shape_str(a, sizeof a, t->rank, t->shape),
                            shape_str(b, sizeof b, rank, shape));
    }
    if (out)
        *out = t;
    return FH_OK;
}
