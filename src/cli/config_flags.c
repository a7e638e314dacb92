/* config_flags.c — see config_flags.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "foxhunt/trainer.h"

#define EXTRA_FLAGS 3 /* --config, --force, --allow-other-data */
#define NAME_CHARS 64
#define HELP_CHARS 800
#define VALUE_CHARS (FH_CONFIG_STRING_MAX + 32)

/* --key, underscores as dashes (or the command's older name for it). */
/* A field whose value is one of its choices' names (the parser lists them). */
static int has_choices(const fh_config_field *f)
{
    return f->type == FH_FIELD_CHOICE || f->type == FH_FIELD_ENUM;
}

static void flag_name(const fh_config_field *f, const char *flag, char *name)
{
    if (flag) {
        snprintf(name, NAME_CHARS, "%s", flag);
        return;
    }
    snprintf(name, NAME_CHARS, "--%s", f->key);
    for (char *p = name; *p; p++)
        if (*p == '_')
            *p = '-';
}

/* The table's help, the command's note, and the INI key it is: the same name under
 * [section] in --config's file and in the run's saved config. */
static void flag_help(const fh_config_field *f, const char *note, char *help)
{
    snprintf(help, HELP_CHARS, "%s%s%s [%s] %s", f->help, note ? "; " : "", note ? note : "",
             f->section, f->key);
}

/* Sets each defaults[i].key to its value: a command's own defaults. */
static fh_status set_defaults(fh_train_config *cfg, const char *command,
                              const fh_key_flag *defaults, int n, fh_error *err)
{
    for (int i = 0; i < n; i++) {
        const fh_config_field *f = fh_config_field_find(defaults[i].key);
        if (!f)
            return fh_error_set(err, FH_ERR_FAILURE, "foxhunt %s: its flags name '%s', which "
                                "is no key of the settings table (train_config.c)", command,
                                defaults[i].key);
        if (defaults[i].value && !defaults[i].list &&
            fh_config_field_set(f, cfg, defaults[i].value, err) != FH_OK) {
            fh_error_prefix(err, "foxhunt %s: its default for ", command);
            if (err)
                err->status = FH_ERR_FAILURE;
            return FH_ERR_FAILURE;
        }
    }
    return FH_OK;
}

void fh_config_print(const fh_train_config *cfg, FILE *out)
{
    const char *section = "";
    int col = 0;
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        char value[FH_CONFIG_STRING_MAX + 32];
        fh_config_field_format(f, cfg, value, sizeof value);
        if (strcmp(section, f->section) != 0) {
            fprintf(out, "%s[%s]", i ? "\n" : "", f->section);
            section = f->section;
            col = (int)strlen(section) + 2;
        }
        int len = (int)(strlen(f->key) + strlen(value) + 2);
        if (col + len > 88) {
            fprintf(out, "\n   ");
            col = 3;
        }
        col += fprintf(out, " %s=%s", f->key, value[0] ? value : "\"\"");
    }
    fprintf(out, "\n");
}

fh_status fh_config_from_flags(fh_train_config *cfg, const char *command, const char *summary,
                               int argc, char **argv, int *help_shown, fh_error *err)
{
    return fh_config_from_flags_with(cfg, command, summary, NULL, 0, argc, argv, help_shown,
                                     err);
}

fh_status fh_config_from_flags_with(fh_train_config *cfg, const char *command,
                                    const char *summary, const fh_key_flag *overrides,
                                    int n_overrides, int argc, char **argv, int *help_shown,
                                    fh_error *err)
{
    fh_train_config_default(cfg);
    int n = fh_train_config_n_fields;
    fh_arg *args = calloc((size_t)n + EXTRA_FLAGS, sizeof *args);
    char (*names)[NAME_CHARS] = calloc((size_t)n, sizeof *names);
    char (*defaults)[VALUE_CHARS] = calloc((size_t)n, sizeof *defaults);
    char (*helps)[HELP_CHARS] = calloc((size_t)n, sizeof *helps);
    const char **values = calloc((size_t)n, sizeof *values);
    const char *config_path = NULL;
    int force = 0, allow_other_data = 0;
    fh_status st = FH_OK;
    *help_shown = 0;
    if (!args || !names || !defaults || !values || !helps) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto done;
    }
    if ((st = set_defaults(cfg, command, overrides, n_overrides, err)) != FH_OK)
        goto done;
    for (int i = 0; i < n; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        flag_name(f, NULL, names[i]);
        fh_config_field_format(f, cfg, defaults[i], sizeof defaults[i]);
        values[i] = defaults[i][0] ? defaults[i] : NULL;
        flag_help(f, NULL, helps[i]);
        args[i] = (fh_arg){names[i], has_choices(f) ? FH_ARG_CHOICE : FH_ARG_STRING,
                           &values[i], "VALUE", helps[i], f->choices, 0, 0, 0};
    }
    args[n] = (fh_arg){"--config", FH_ARG_STRING, &config_path, "FILE",
                       "INI file of these keys in [run] [ppo] [q] [env] sections", NULL, 0, 0, 0};
    args[n + 1] = (fh_arg){"--force", FH_ARG_FLAG, &force, NULL,
                           "write into a run directory that already holds another run's files "
                           "(never saved with the run)", NULL, 0, 0, 0};
    args[n + 2] = (fh_arg){"--allow-other-data", FH_ARG_FLAG, &allow_other_data, NULL,
                           "resume a checkpoint on data other than the one it was trained on "
                           "(never saved with the run)", NULL, 0, 0, 0};
    fh_arg_spec spec = {command, summary, args, n + EXTRA_FLAGS};
    if ((st = fh_args_parse(&spec, argc, argv, help_shown, err)) != FH_OK || *help_shown)
        goto done;

    const fh_arg *resume = fh_args_find(&spec, "--resume");
    if (resume->seen) {
        const char *path = *(const char **)resume->target;
        if ((st = fh_checkpoint_read_config(path, cfg, err)) != FH_OK)
            goto done;
    }
    if (config_path && (st = fh_train_config_load_ini(config_path, cfg, err)) != FH_OK)
        goto done;
    for (int i = 0; i < n; i++) {
        if (!args[i].seen)
            continue;
        if ((st = fh_config_field_set(&fh_train_config_fields[i], cfg, values[i], err)) != FH_OK) {
            fh_error_prefix(err, "%s: ", names[i]);
            goto done;
        }
    }
    if (!resume->seen)
        cfg->resume[0] = '\0';
    cfg->force = force;
    cfg->allow_other_data = allow_other_data;
done:
    free(args);
    free(names);
    free(defaults);
    free(helps);
    free(values);
    return st;
}

const fh_key_flag *fh_key_flag_of(const fh_key_flag *keys, int n_keys, const char *key)
{
    for (int i = 0; i < n_keys; i++)
        if (strcmp(keys[i].key, key) == 0)
            return &keys[i];
    return NULL;
}

/* Checks each value of a list flag's text through the table (on a copy of cfg). */
static fh_status check_list(const fh_config_field *f, const fh_key_flag *k, const char *name,
                            const char *text, const fh_train_config *cfg, fh_error *err)
{
    fh_train_config scratch = *cfg;
    for (const char *p = text;; p++) {
        size_t len = strcspn(p, ",");
        char one[VALUE_CHARS];
        snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1), p);
        if (!(k->also && strcmp(one, k->also) == 0) &&
            fh_config_field_set(f, &scratch, one, err) != FH_OK) {
            fh_error_prefix(err, "%s '%s': ", name, text);
            return FH_ERR_INPUT;
        }
        p += len;
        if (!*p)
            return FH_OK;
    }
}

/* The text of each key flag: its name, help and the value given (or its default). */
typedef struct {
    char name[NAME_CHARS], help[HELP_CHARS], value[VALUE_CHARS], metavar[NAME_CHARS * 2];
    const char *text;
} key_text;

fh_status fh_key_flags_parse(fh_train_config *cfg, const char *command, const char *summary,
                             fh_key_flag *keys, int n_keys, fh_arg *own, int n_own, int argc,
                             char **argv, int *help_shown, fh_error *err)
{
    fh_train_config_default(cfg);
    *help_shown = 0;
    fh_arg *args = calloc((size_t)(n_own + n_keys) + 1, sizeof *args);
    key_text *kt = calloc((size_t)n_keys + 1, sizeof *kt);
    fh_status st = FH_OK;
    if (!args || !kt) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto done;
    }
    if ((st = set_defaults(cfg, command, keys, n_keys, err)) != FH_OK)
        goto done;
    for (int i = 0; i < n_own; i++)
        args[i] = own[i];
    for (int i = 0; i < n_keys; i++) {
        const fh_config_field *f = fh_config_field_find(keys[i].key);
        key_text *t = &kt[i];
        flag_name(f, keys[i].flag, t->name);
        flag_help(f, keys[i].note, t->help);
        if (keys[i].list)
            snprintf(t->value, sizeof t->value, "%s", keys[i].value ? keys[i].value : "");
        else
            fh_config_field_format(f, cfg, t->value, sizeof t->value);
        t->text = t->value[0] ? t->value : NULL;
        /* a list is text to the parser, its values checked below; --help shows a list
         * of choices as the choices */
        int choice = has_choices(f) && !keys[i].list;
        snprintf(t->metavar, sizeof t->metavar, "%s%s",
                 keys[i].list && f->choices ? f->choices : "VALUE", keys[i].list ? "[,...]" : "");
        args[n_own + i] = (fh_arg){t->name, choice ? FH_ARG_CHOICE : FH_ARG_STRING, &t->text,
                                   t->metavar, t->help, choice ? f->choices : NULL, 0, 0, 0};
    }
    fh_arg_spec spec = {command, summary, args, n_own + n_keys};
    st = fh_args_parse(&spec, argc, argv, help_shown, err);
    for (int i = 0; i < n_own; i++)
        own[i].seen = args[i].seen;
    if (st != FH_OK || *help_shown)
        goto done;
    /* each flag given through the table, in the order of the list */
    for (int i = 0; i < n_keys && st == FH_OK; i++) {
        const fh_config_field *f = fh_config_field_find(keys[i].key);
        if (!(keys[i].seen = args[n_own + i].seen))
            continue;
        if (keys[i].list) {
            st = check_list(f, &keys[i], kt[i].name, kt[i].text, cfg, err);
        } else if ((st = fh_config_field_set(f, cfg, kt[i].text, err)) != FH_OK) {
            fh_error_prefix(err, "%s: ", kt[i].name);
        }
    }
    /* a list's text outlives this call: it points into argv, or is the command's default */
    for (int i = 0; i < n_keys && st == FH_OK; i++)
        if (keys[i].list)
            *keys[i].list = keys[i].seen ? kt[i].text : keys[i].value;
done:
    free(args);
    free(kt);
    return st;
}
