/* capi_config.c — configurations (capi.h): train_config.h's table behind a handle, so a
 * binding sets any key by name with the CLI's own checks. */
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "foxhunt/trainer.h" /* fh_checkpoint_read_config */

static fh_api_config *config_alloc(char *err, size_t err_cap)
{
    fh_api_config *c = calloc(1, sizeof *c);
    if (!c)
        return capi_fail_out(err, err_cap, "out of memory for a configuration");
    capi_object_init(&c->obj, CAPI_CONFIG);
    fh_train_config_default(&c->cfg);
    return c;
}

fh_api_config *fh_api_config_new(char *err, size_t err_cap)
{
    return config_alloc(err, err_cap);
}

fh_api_config *fh_api_config_from_checkpoint(const char *path, char *err, size_t err_cap)
{
    if (!path)
        return capi_fail_out(err, err_cap, "config from checkpoint: the path is NULL");
    fh_api_config *c = config_alloc(err, err_cap);
    if (c && fh_checkpoint_read_config(path, &c->cfg, &c->obj.err) != FH_OK) {
        capi_error_out(err, err_cap, &c->obj.err);
        fh_api_config_free(c);
        return NULL;
    }
    return c;
}

fh_api_config *fh_api_config_from_json(const char *json, char *err, size_t err_cap)
{
    if (!json)
        return capi_fail_out(err, err_cap, "config from JSON: the text is NULL");
    fh_api_config *c = config_alloc(err, err_cap);
    if (c && fh_train_config_from_json(json, &c->cfg, &c->obj.err) != FH_OK) {
        capi_error_out(err, err_cap, &c->obj.err);
        fh_api_config_free(c);
        return NULL;
    }
    return c;
}

void fh_api_config_free(fh_api_config *c)
{
    if (!capi_object_of(c, CAPI_CONFIG))
        return;
    capi_object_kill(&c->obj);
    free(c);
}

static const fh_config_field *field_or_error(fh_api_config *c, const char *key)
{
    const fh_config_field *f = capi_config_field(key);
    if (!f)
        fh_error_set(&c->obj.err, FH_ERR_INPUT, "unknown configuration key \"%.200s\" (the "
                     "keys are those of `foxhunt train --help` without the dashes, with '_' "
                     "for '-', e.g. \"horizon\" or \"env.horizon\")", key ? key : "(NULL)");
    return f;
}

int fh_api_config_set(fh_api_config *cfg, const char *key, const char *value)
{
    CAPI_ENTER(fh_api_config, c, cfg, CAPI_CONFIG);
    const fh_config_field *f = field_or_error(c, key);
    if (!f)
        return FH_API_INPUT;
    if (!value)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "%s: the value is NULL", f->key);
    return fh_config_field_set(f, &c->cfg, value, &c->obj.err);
}

int fh_api_config_get(fh_api_config *cfg, const char *key, char *out, size_t cap)
{
    CAPI_ENTER(fh_api_config, c, cfg, CAPI_CONFIG);
    const fh_config_field *f = field_or_error(c, key);
    if (!f)
        return FH_API_INPUT;
    if (!out || cap == 0)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "%s: no output buffer", f->key);
    fh_config_field_format(f, &c->cfg, out, cap);
    return FH_API_OK;
}

int fh_api_config_to_json(fh_api_config *cfg, char *out, size_t cap, size_t *len)
{
    CAPI_ENTER(fh_api_config, c, cfg, CAPI_CONFIG);
    char *json = fh_train_config_to_json(&c->cfg);
    if (!json)
        return fh_error_set(&c->obj.err, FH_ERR_FAILURE, "out of memory for the JSON");
    size_t n = strlen(json);
    if (len)
        *len = n;
    fh_status st = FH_OK;
    if (!out || cap <= n)
        st = fh_error_set(&c->obj.err, FH_ERR_INPUT, "the configuration's JSON is %zu bytes; "
                          "give a buffer of at least %zu", n, n + 1);
    else
        memcpy(out, json, n + 1);
    free(json);
    return st;
}

int fh_api_config_load_ini(fh_api_config *cfg, const char *path)
{
    CAPI_ENTER(fh_api_config, c, cfg, CAPI_CONFIG);
    if (!path)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "config file: path is NULL");
    return fh_train_config_load_ini(path, &c->cfg, &c->obj.err);
}

int fh_api_config_validate(fh_api_config *cfg)
{
    CAPI_ENTER(fh_api_config, c, cfg, CAPI_CONFIG);
    return fh_train_config_validate(&c->cfg, &c->obj.err);
}

int fh_api_config_key_count(void)
{
    return fh_train_config_n_fields;
}

static const fh_config_field *field_at(int i)
{
    return i >= 0 && i < fh_train_config_n_fields ? &fh_train_config_fields[i] : NULL;
}

const char *fh_api_config_key_name(int i)
{
    return field_at(i) ? field_at(i)->key : NULL;
}

const char *fh_api_config_key_section(int i)
{
    return field_at(i) ? field_at(i)->section : NULL;
}

const char *fh_api_config_key_help(int i)
{
    return field_at(i) ? field_at(i)->help : NULL;
}
