/* walkforward_record.c — see walkforward_record.h. */
#define _DEFAULT_SOURCE /* fsync */
#include "cli/walkforward_record.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "foxhunt/format.h"
#include "foxhunt/hash.h"
#include "foxhunt/files.h"

#define MAX_TRAIN_SECONDS 1e9 /* a sanity bound: about 32 years */

static void say(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t n, const char *fmt, ...)
{
    if (!why || !n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}


static void hex64(char out[17], uint64_t v)
{
    snprintf(out, 17, "%016" PRIx64, v);
}

/* Exactly 16 lowercase hex digits. */
static int parse_hex64(const cJSON *item, uint64_t *v)
{
    const char *s = cJSON_GetStringValue(item);
    if (!s || strlen(s) != 16)
        return 0;
    for (int i = 0; i < 16; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    *v = strtoull(s, NULL, 16);
    return 1;
}

/* A decimal integer string (optionally negative when is_signed) that fits 64 bits. */
static int parse_int64(const cJSON *item, int is_signed, int64_t *i, uint64_t *u)
{
    const char *s = cJSON_GetStringValue(item);
    if (!s || !s[0] || strlen(s) > 21 || (!is_signed && s[0] == '-'))
        return 0;
    for (const char *p = s + (s[0] == '-'); *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    char *end;
    errno = 0;
    if (is_signed)
        *i = strtoll(s, &end, 10);
    else
        *u = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}

/* FNV-1a 64 of the object's compact JSON, without its "checksum" member. */
static int checksum_of(const cJSON *obj, uint64_t *h)
{
    char *text = cJSON_PrintUnformatted(obj);
    if (!text)
        return 0;
    *h = fh_fnv1a(text, strlen(text), FH_FNV1A_OFFSET);
    free(text);
    return 1;
}

/* text into path.tmp, flushed to the disk, renamed over path, the directory synced: a
 * kill or a power cut leaves either no record or the whole one. */
static fh_status write_durably(const char *path, const char *text, fh_error *err)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%.1000s.tmp", path);
    /* a FIFO left at PATH.tmp is refused, not waited on (issue 32) */
    FILE *f = fh_fopen_regular(tmp, "walk-forward record's temporary file",
                               O_WRONLY | O_CREAT | O_TRUNC, err);
    if (!f)
        return err ? err->status : FH_ERR_FAILURE;
    errno = 0;
    int e = fh_replace_with_tmp(f, fputs(text, f) >= 0, 1, tmp, path);
    if (e)
        return fh_error_set(err, FH_ERR_FAILURE, "cannot write %s: %s%s", path, strerror(e),
                            fh_write_error_hint(e));
    return FH_OK;
}

fh_status fh_walkforward_record_write(const char *path, const fh_walkforward_record *rec,
                                      fh_error *err)
{
    char h[17], num[32];
    cJSON *root = cJSON_CreateObject();
    cJSON *config = cJSON_Parse(rec->config_json ? rec->config_json : "");
    if (!root || !cJSON_IsObject(config)) {
        cJSON_Delete(root);
        cJSON_Delete(config);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the fold's configuration is not a "
                            "JSON object (or out of memory)", __FILE__, __LINE__);
    }
    cJSON_AddStringToObject(root, "format", FH_WALKFORWARD_RECORD_FORMAT);
    cJSON_AddNumberToObject(root, "version", FH_WALKFORWARD_RECORD_VERSION);
    cJSON_AddStringToObject(root, "foxhunt", rec->version);
    cJSON_AddNumberToObject(root, "fold", rec->fold);
    snprintf(num, sizeof num, "%" PRIu64, rec->seed);
    cJSON_AddStringToObject(root, "seed", num);
    cJSON_AddItemToObject(root, "config", config);
    cJSON *data = cJSON_AddObjectToObject(root, "data");
    cJSON_AddStringToObject(data, "source", rec->data.source);
    snprintf(num, sizeof num, "%" PRId64, rec->data.n_bars);
    cJSON_AddStringToObject(data, "bars", num);
    snprintf(num, sizeof num, "%" PRId64, rec->data.first_time);
    cJSON_AddStringToObject(data, "first_time", num);
    snprintf(num, sizeof num, "%" PRId64, rec->data.last_time);
    cJSON_AddStringToObject(data, "last_time", num);
    hex64(h, rec->data.hash);
    cJSON_AddStringToObject(data, "hash", h);
    cJSON_AddStringToObject(root, "model", rec->model);
    hex64(h, rec->model_hash);
    cJSON_AddStringToObject(root, "model_hash", h);
    hex64(h, rec->returns_hash);
    cJSON_AddStringToObject(root, "returns_hash", h);
    cJSON_AddNumberToObject(root, "train_seconds", rec->train_seconds);
    uint64_t sum;
    char *text = NULL;
    if (checksum_of(root, &sum)) {
        hex64(h, sum);
        cJSON_AddStringToObject(root, "checksum", h);
        text = cJSON_Print(root);
    }
    cJSON_Delete(root);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    fh_status st = write_durably(path, text, err);
    free(text);
    return st;
}

static fh_walkforward_record_state read_fields(const cJSON *root, int fold, uint64_t seed,
                                               fh_walkforward_record *rec, char *why,
                                               size_t n)
{
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsString(format) || strcmp(format->valuestring, FH_WALKFORWARD_RECORD_FORMAT) ||
        !cJSON_IsNumber(version) || version->valuedouble != FH_WALKFORWARD_RECORD_VERSION) {
        say(why, n, "not a version-%d %s record", FH_WALKFORWARD_RECORD_VERSION,
            FH_WALKFORWARD_RECORD_FORMAT);
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "fold");
    uint64_t u = 0;
    int64_t i = 0;
    if (!cJSON_IsNumber(item) || item->valuedouble != fold) {
        say(why, n, "it is not fold %d's record", fold);
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    rec->fold = fold;
    if (!parse_int64(cJSON_GetObjectItemCaseSensitive(root, "seed"), 0, &i, &u) || u != seed) {
        say(why, n, "it is not seed %" PRIu64 "'s record", seed);
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    rec->seed = u;
    item = cJSON_GetObjectItemCaseSensitive(root, "foxhunt");
    if (!cJSON_IsString(item) || strlen(item->valuestring) >= sizeof rec->version) {
        say(why, n, "\"foxhunt\" is not a version string");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    snprintf(rec->version, sizeof rec->version, "%s", item->valuestring);
    item = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (!cJSON_IsObject(item) || !(rec->config_json = cJSON_PrintUnformatted(item))) {
        say(why, n, "\"config\" is not an object");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(data, "source");
    fh_data_identity *d = &rec->data;
    if (!cJSON_IsObject(data) || !cJSON_IsString(source) ||
        strlen(source->valuestring) >= sizeof d->source ||
        !parse_int64(cJSON_GetObjectItemCaseSensitive(data, "bars"), 1, &d->n_bars, &u) ||
        d->n_bars < 0 ||
        !parse_int64(cJSON_GetObjectItemCaseSensitive(data, "first_time"), 1, &d->first_time,
                     &u) ||
        !parse_int64(cJSON_GetObjectItemCaseSensitive(data, "last_time"), 1, &d->last_time,
                     &u) ||
        !parse_hex64(cJSON_GetObjectItemCaseSensitive(data, "hash"), &d->hash)) {
        say(why, n, "\"data\" is not a data identity (source, bars, first_time, last_time, "
            "hash)");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    snprintf(d->source, sizeof d->source, "%s", source->valuestring);
    item = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsString(item) || (strcmp(item->valuestring, "best.safetensors") != 0 &&
                                  strcmp(item->valuestring, "final.safetensors") != 0)) {
        say(why, n, "\"model\" is neither best.safetensors nor final.safetensors");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    snprintf(rec->model, sizeof rec->model, "%s", item->valuestring);
    if (!parse_hex64(cJSON_GetObjectItemCaseSensitive(root, "model_hash"), &rec->model_hash) ||
        !parse_hex64(cJSON_GetObjectItemCaseSensitive(root, "returns_hash"),
                     &rec->returns_hash)) {
        say(why, n, "\"model_hash\" or \"returns_hash\" is not 16 hex digits");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    item = cJSON_GetObjectItemCaseSensitive(root, "train_seconds");
    if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0) ||
        !(item->valuedouble <= MAX_TRAIN_SECONDS)) {
        say(why, n, "\"train_seconds\" is not a number of seconds");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    rec->train_seconds = item->valuedouble;
    return FH_WALKFORWARD_RECORD_OK;
}

fh_walkforward_record_state fh_walkforward_record_read(const char *path, int fold,
                                                       uint64_t seed,
                                                       fh_walkforward_record *rec,
                                                       char *why, size_t n)
{
    memset(rec, 0, sizeof *rec);
    say(why, n, "%s", "");
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return FH_WALKFORWARD_RECORD_ABSENT;
    char *text = NULL;
    size_t len = 0;
    fh_error err;
    if (fh_read_regular_file(path, "walk-forward fold record", FH_WALKFORWARD_RECORD_MAX_BYTES,
                             &text, &len, &err) != FH_OK) {
        say(why, n, "%s", err.message);
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    cJSON *root = strlen(text) == len ? cJSON_Parse(text) : NULL; /* no NUL inside */
    free(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        say(why, n, "not a JSON object (torn or corrupted)");
        return FH_WALKFORWARD_RECORD_INVALID;
    }
    uint64_t want = 0, got = 0;
    cJSON *sum = cJSON_DetachItemFromObjectCaseSensitive(root, "checksum");
    int ok = parse_hex64(sum, &want) && checksum_of(root, &got) && got == want;
    cJSON_Delete(sum);
    fh_walkforward_record_state state = FH_WALKFORWARD_RECORD_INVALID;
    if (!ok)
        say(why, n, "its checksum is missing or does not match its contents (corrupted or "
            "edited)");
    else
        state = read_fields(root, fold, seed, rec, why, n);
    cJSON_Delete(root);
    if (state != FH_WALKFORWARD_RECORD_OK)
        fh_walkforward_record_free(rec);
    return state;
}

/* The configuration keys that name where things are, not what the run is: the run's
 * directory, and the data's path (its identity is compared instead). */
static int path_key(const char *key)
{
    return strcmp(key, "out") == 0 || strcmp(key, "data") == 0;
}

/* Lists the keys of a whose value differs in b ("key A, now B"), within sections too;
 * returns how many differ in all (count: those found before). */
static int diff_keys(const cJSON *a, const cJSON *b, int a_is_record, char *why, size_t n,
                     int count)
{
    for (const cJSON *x = a ? a->child : NULL; x; x = x->next) {
        if (!x->string || path_key(x->string))
            continue;
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (cJSON_IsObject(x) && cJSON_IsObject(y)) { /* a section: [run], [ppo], ... */
            count = diff_keys(x, y, a_is_record, why, n, count);
            continue;
        }
        if (!a_is_record && y)
            continue; /* keys of both were compared from the record's side */
        char *tx = cJSON_PrintUnformatted(x), *ty = y ? cJSON_PrintUnformatted(y) : NULL;
        if (!tx || !ty || strcmp(tx, ty) != 0) {
            if (count < 6)
                fh_format_append(why, n, "%s%s %s, now %s", why[0] ? "; " : "", x->string,
                       a_is_record ? (tx ? tx : "?") : "absent",
                       a_is_record ? (ty ? ty : "absent") : (tx ? tx : "?"));
            count++;
        }
        free(tx);
        free(ty);
    }
    return count;
}

int fh_walkforward_record_compare(const fh_walkforward_record *rec, const char *config_json,
                                  const fh_data_identity *data, char *why, size_t n)
{
    char local[8];
    if (!why || !n) {
        why = local;
        n = sizeof local;
    }
    why[0] = '\0';
    int count = 0;
    if (strcmp(rec->version, FH_VERSION) != 0) {
        fh_format_append(why, n, "made by foxhunt %s, now %s", rec->version, FH_VERSION);
        count++;
    }
    cJSON *was = cJSON_Parse(rec->config_json ? rec->config_json : "");
    cJSON *now = cJSON_Parse(config_json ? config_json : "");
    if (!cJSON_IsObject(was) || !cJSON_IsObject(now)) {
        fh_format_append(why, n, "%sa configuration does not parse", why[0] ? "; " : "");
        count++;
    } else {
        count = diff_keys(was, now, 1, why, n, count);
        count = diff_keys(now, was, 0, why, n, count);
    }
    cJSON_Delete(was);
    cJSON_Delete(now);
    char data_why[1024];
    if (!fh_data_identity_same(&rec->data, data, data_why, sizeof data_why)) {
        fh_format_append(why, n, "%sother data: %s", why[0] ? "; " : "", data_why);
        count++;
    }
    if (count > 6)
        fh_format_append(why, n, "; %d differences in all", count);
    return count == 0;
}

void fh_walkforward_record_free(fh_walkforward_record *rec)
{
    free(rec->config_json);
    rec->config_json = NULL;
}
