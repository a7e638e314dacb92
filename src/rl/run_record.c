/* run_record.c — see include/foxhunt/run_record.h. */
#include "foxhunt/run_record.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "fh_git_commit.h" /* FH_GIT_COMMIT, written at build time by cmake/git_commit.cmake */

const char *fh_run_record_git_commit(void)
{
    return FH_GIT_COMMIT;
}

void fh_run_record_init(fh_run_record *r, const fh_train_config *cfg, const fh_device_info *dev)
{
    memset(r, 0, sizeof *r);
    snprintf(r->command_line, sizeof r->command_line, "unknown");
    snprintf(r->version, sizeof r->version, "%s", FH_VERSION);
    snprintf(r->git_commit, sizeof r->git_commit, "%s", FH_GIT_COMMIT);
    if (!dev)
        snprintf(r->device, sizeof r->device, "unknown");
    else if (dev->use_gpu)
        snprintf(r->device, sizeof r->device, "cuda: %s", dev->name);
    else
        snprintf(r->device, sizeof r->device, "cpu");
    snprintf(r->precision, sizeof r->precision, "%s", cfg->precision);
}

/* 1 when arg reads back as itself in a POSIX shell without quotes */
static int plain_word(const char *arg)
{
    if (!*arg)
        return 0;
    for (const char *c = arg; *c; c++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                    "_-+=.,:/@%", *c))
            return 0;
    return 1;
}

void fh_run_record_set_command(fh_run_record *r, const char *program, int argc,
                               char *const *argv)
{
    char *out = r->command_line;
    size_t cap = sizeof r->command_line, used = 0;
    out[0] = '\0';
    for (int i = -1; i < argc; i++) {
        const char *arg = i < 0 ? program : argv[i];
        char word[FH_RUN_RECORD_COMMAND_MAX];
        size_t w = 0;
        if (plain_word(arg)) {
            w = (size_t)snprintf(word, sizeof word, "%s", arg);
        } else { /* '...' with each ' written '\'' */
            word[w++] = '\'';
            for (const char *c = arg; *c && w + 6 < sizeof word; c++) {
                if (*c == '\'') {
                    memcpy(word + w, "'\\''", 4);
                    w += 4;
                } else {
                    word[w++] = *c;
                }
            }
            word[w++] = '\'';
            word[w] = '\0';
        }
        if (used + (used > 0) + w + 4 >= cap) {
            snprintf(out + used, cap - used, " ...");
            return;
        }
        used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? " " : "", word);
    }
}

char *fh_run_record_add_to_json(const fh_run_record *r, const char *config_json)
{
    cJSON *root = cJSON_Parse(config_json ? config_json : "");
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, "record");
    cJSON *o = cJSON_AddObjectToObject(root, "record");
    cJSON_AddStringToObject(o, "command_line", r->command_line);
    cJSON_AddStringToObject(o, "version", r->version);
    cJSON_AddStringToObject(o, "git_commit", r->git_commit);
    cJSON_AddStringToObject(o, "device", r->device);
    cJSON_AddStringToObject(o, "precision", r->precision);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

fh_save_meta fh_run_record_meta(fh_run_record *r)
{
    static const char *const keys[FH_RUN_RECORD_KEYS] = {
        "record.command_line", "record.version", "record.git_commit", "record.device",
        "record.precision"};
    const char *values[FH_RUN_RECORD_KEYS] = {r->command_line, r->version, r->git_commit,
                                              r->device, r->precision};
    for (int k = 0; k < FH_RUN_RECORD_KEYS; k++) {
        r->meta_keys[k] = keys[k];
        r->meta_values[k] = values[k];
    }
    return (fh_save_meta){r->meta_keys, r->meta_values, FH_RUN_RECORD_KEYS};
}
