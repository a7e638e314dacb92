/* capi_object.c — the handle header, errors, version and the shared look-ups of the
 * C API (include/foxhunt/capi.h, src/capi/capi_internal.h). */
#include "capi/capi_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "foxhunt/shapes.h"

/* capi.h's copies of the sizes, for C callers, are the library's own. */
_Static_assert(FH_API_STATE_DIM == FH_STATE_DIM && FH_API_N_ACTIONS == FH_N_ACTIONS &&
                   FH_API_N_FEATURES == FH_N_MARKET_FEATURES,
               "capi.h's FH_API_* sizes differ from foxhunt/shapes.h");

#define CAPI_STR2(x) #x
#define CAPI_STR(x) CAPI_STR2(x)

static const char k_invalid_handle[] =
    "invalid handle: NULL, already freed, or a handle of another kind (each foxhunt "
    "handle is used with its own fh_api_<kind>_* calls, until its _free)";

int fh_api_version(void)
{
    return FH_API_VERSION_MAJOR * 1000 + FH_API_VERSION_MINOR;
}

const char *fh_api_build_info(void)
{
    return "foxhunt " FH_VERSION " (" FH_BUILD_TYPE ", CUDA " CAPI_STR(FH_HAVE_CUDA) ")";
}

int fh_api_size(const char *name)
{
    static const struct {
        const char *name;
        int value;
    } sizes[] = {
        {"state_dim", FH_STATE_DIM},
        {"n_actions", FH_N_ACTIONS},
        {"n_features", FH_N_MARKET_FEATURES},
        {"n_portfolio_features", FH_N_PORTFOLIO_FEATURES},
        {"n_exposures", FH_N_EXPOSURES},
        {"n_urgencies", FH_N_URGENCIES},
    };
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(name, sizes[i].name) == 0)
            return sizes[i].value;
    return -1;
}

void capi_object_init(fh_api_object *o, capi_kind kind)
{
    o->magic = CAPI_MAGIC;
    o->kind = kind;
    fh_error_clear(&o->err);
}

void capi_object_kill(fh_api_object *o)
{
    o->magic = 0;
}

fh_api_object *capi_object_of(const void *handle, capi_kind kind)
{
    fh_api_object *o = (fh_api_object *)handle;
    if (!o || o->magic != CAPI_MAGIC || o->kind != kind)
        return NULL;
    fh_error_clear(&o->err);
    return o;
}

const char *fh_api_last_error(const void *handle)
{
    const fh_api_object *o = handle;
    if (!o || o->magic != CAPI_MAGIC)
        return k_invalid_handle;
    return o->err.message;
}

void *capi_error_out(char *err, size_t err_cap, const fh_error *e)
{
    if (err && err_cap > 0)
        snprintf(err, err_cap, "%s", e->message[0] ? e->message : "unknown error");
    return NULL;
}

void *capi_fail_out(char *err, size_t err_cap, const char *fmt, ...)
{
    if (err && err_cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_cap, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

const fh_config_field *capi_config_field(const char *key)
{
    if (!key)
        return NULL;
    const char *dot = strchr(key, '.');
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        if (!dot && strcmp(f->key, key) == 0)
            return f;
        if (dot && strlen(f->section) == (size_t)(dot - key) &&
            strncmp(f->section, key, (size_t)(dot - key)) == 0 && strcmp(f->key, dot + 1) == 0)
            return f;
    }
    return NULL;
}

int capi_split_parse(const char *name, fh_split *split)
{
    static const fh_split all[] = {FH_SPLIT_TRAIN, FH_SPLIT_VALIDATION, FH_SPLIT_TEST,
                                   FH_SPLIT_ALL};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (strcmp(name, fh_split_name(all[i])) == 0) {
            *split = all[i];
            return 1;
        }
    return 0;
}
