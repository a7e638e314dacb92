/* config_flags.h — `foxhunt train`'s flags, generated from the config table
 * (train_config.h) so that every hyper-parameter is a flag with the same name as its
 * config-file key (underscores become dashes) and --help shows its default. */
#ifndef FOXHUNT_CONFIG_FLAGS_H
#define FOXHUNT_CONFIG_FLAGS_H

#include "foxhunt/train_config.h"

/* Resolves the configuration of `foxhunt train`: defaults, then the config stored in
 * --resume's checkpoint, then --config FILE, then the flags. *help_shown set on --help. */
fh_status fh_config_from_flags(fh_train_config *cfg, const char *command, const char *summary,
                               int argc, char **argv, int *help_shown, fh_error *err);
/* Prints the resolved configuration, one section per line group. */
void fh_config_print(const fh_train_config *cfg, FILE *out);

#endif
