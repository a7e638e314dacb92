/* args.h — the one flag parser every subcommand uses, so that all of them behave the
 * same (STYLE habit 11): `--name value` or `--name=value`, `--help` lists every flag
 * with its current default (or, when its help says "(default: ...)", that text alone),
 * unknown flags and bad values are usage errors (exit 2). */
#ifndef FOXHUNT_ARGS_H
#define FOXHUNT_ARGS_H

#include <stdint.h>

#include "foxhunt/error.h"

typedef enum {
    FH_ARG_STRING, /* target: const char ** (points into argv, or the default) */
    FH_ARG_INT,    /* target: int * */
    FH_ARG_U64,    /* target: uint64_t * */
    FH_ARG_DOUBLE, /* target: double * */
    FH_ARG_FLAG,   /* target: int *, set to 1; takes no value */
    FH_ARG_CHOICE  /* target: const char **; value must be one of `choices` ("a|b|c") */
} fh_arg_type;

typedef struct {
    const char *name;    /* "--episodes" */
    fh_arg_type type;
    void *target;
    const char *metavar; /* "N" (shown in --help) */
    const char *help;
    const char *choices; /* FH_ARG_CHOICE only */
    double min, max;     /* numeric range when min < max; else unchecked */
    int seen;            /* set by the parser when the flag was given */
} fh_arg;

typedef struct {
    const char *command; /* "train" */
    const char *summary; /* one line */
    fh_arg *args;
    int n_args;
} fh_arg_spec;

/* Parses argv[1..argc) (argv[0] is the subcommand name). Returns FH_OK, or
 * FH_ERR_INPUT with a message naming the flag. *help_shown is set when --help was
 * given (help printed to stdout; the caller exits 0). */
fh_status fh_args_parse(fh_arg_spec *spec, int argc, char **argv, int *help_shown,
                        fh_error *err);
void fh_args_print_help(const fh_arg_spec *spec);
/* The flag named name, or NULL (to ask whether it was given). */
const fh_arg *fh_args_find(const fh_arg_spec *spec, const char *name);
/* Parses a comma-separated list of positive ints ("128,1024"); returns count or -1. */
int fh_args_parse_int_list(const char *text, int *values, int max_values);

#endif
