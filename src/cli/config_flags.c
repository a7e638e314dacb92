/* config_flags.c — see config_flags.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "foxhunt/trainer.h"

#define EXTRA_FLAGS 3 /* --config, --force, --allow-other-data */

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
    fh_train_config_default(cfg);
    int n = fh_train_config_n_fields;
    fh_arg *args = calloc((size_t)n + EXTRA_FLAGS, sizeof *args);
    char (*names)[64] = calloc((size_t)n, sizeof *names);
    char (*defaults)[FH_CONFIG_STRING_MAX + 32] = calloc((size_t)n, sizeof *defaults);
    char (*helps)[320] = calloc((size_t)n, sizeof *helps);
    const char **values = calloc((size_t)n, sizeof *values);
    const char *config_path = NULL;
    int force = 0, allow_other_data = 0;
    fh_status st = FH_OK;
    if (!args || !names || !defaults || !values || !helps) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        snprintf(names[i], sizeof names[i], "--%s", f->key);
        for (char *p = names[i]; *p; p++)
            if (*p == '_')
                *p = '-';
        fh_config_field_format(f, cfg, defaults[i], sizeof defaults[i]);
        values[i] = defaults[i][0] ? defaults[i] : NULL;
        /* the INI key it sets: the same name under [section] in --config's file */
        snprintf(helps[i], sizeof helps[i], "%s [%s] %s", f->help, f->section, f->key);
        args[i] = (fh_arg){names[i], f->type == FH_FIELD_CHOICE ? FH_ARG_CHOICE : FH_ARG_STRING,
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
