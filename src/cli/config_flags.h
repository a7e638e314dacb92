/* config_flags.h — every command's settings flags, generated from the config table
 * (train_config.h): a flag has the name of its config-file key (underscores become
 * dashes), the table's type, range, choices and help, and --help shows its default. The
 * table is the only declaration of a setting; a command says which keys it takes.
 *
 * `foxhunt train` and `walkforward` take every key (fh_config_from_flags); the other
 * commands name theirs in an fh_key_flag list beside their own flags, which are not
 * settings (fh_key_flags_parse). */
#ifndef FOXHUNT_CONFIG_FLAGS_H
#define FOXHUNT_CONFIG_FLAGS_H

#include <stdio.h>

#include "cli/args.h"
#include "foxhunt/train_config.h"

/* One table key a command takes as a flag. Its type, range, choices and help come from
 * the table; what the command changes is said here, and nothing else. */
typedef struct {
    const char *key;   /* the table key ("episodes"): the flag --episodes */
    const char *value; /* this command's default, as the flag's text (NULL: the table's) */
    const char *note;  /* what the key means to this command, after the table's help */
    const char *flag;  /* the flag's name where it predates the table ("--seed" for
                          synthetic_seed in features); NULL: --key */
    const char **list; /* non-NULL: the flag takes a comma-separated list of values, each
                          checked by the table; *list gets the text (default: value) */
    const char *also;  /* with list: one more word the list may hold ("both") */
    int seen;          /* set by the parser when the flag was given */
} fh_key_flag;

/* Parses a command's flags: own (its flags that are not settings; each own[i].seen set
 * as fh_args_parse does) and keys. *cfg gets the table's defaults, then the keys' values,
 * then the flags given, each set through the table (fh_config_field_set: its range,
 * choices and error messages). *help_shown is set on --help (own flags listed first).
 * FH_ERR_FAILURE when keys names no table key (a mistake in the command). */
fh_status fh_key_flags_parse(fh_train_config *cfg, const char *command, const char *summary,
                             fh_key_flag *keys, int n_keys, fh_arg *own, int n_own, int argc,
                             char **argv, int *help_shown, fh_error *err);
/* The key flag named key in keys (NULL when none), to ask whether it was given. */
const fh_key_flag *fh_key_flag_of(const fh_key_flag *keys, int n_keys, const char *key);

/* Resolves the configuration of `foxhunt train`: defaults, then the config stored in
 * --resume's checkpoint, then --config FILE, then the flags. *help_shown set on --help. */
fh_status fh_config_from_flags(fh_train_config *cfg, const char *command, const char *summary,
                               int argc, char **argv, int *help_shown, fh_error *err);
/* The same, every key a flag, with the command's own defaults for some keys (each
 * defaults[i].key set to defaults[i].value before --resume, --config and the flags):
 * `foxhunt walkforward`'s 5 folds. */
fh_status fh_config_from_flags_with(fh_train_config *cfg, const char *command,
                                    const char *summary, const fh_key_flag *defaults,
                                    int n_defaults, int argc, char **argv, int *help_shown,
                                    fh_error *err);
/* Prints the resolved configuration, one section per line group. */
void fh_config_print(const fh_train_config *cfg, FILE *out);

#endif
