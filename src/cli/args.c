/* args.c — see args.h. */
#include "cli/args.h"
#include "foxhunt/format.h"
#include "foxhunt/train_config.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fh_arg *find_arg(fh_arg_spec *spec, const char *name, size_t name_len)
{
    for (int i = 0; i < spec->n_args; i++)
        if (strlen(spec->args[i].name) == name_len &&
            strncmp(spec->args[i].name, name, name_len) == 0)
            return &spec->args[i];
    return NULL;
}

const fh_arg *fh_args_find(const fh_arg_spec *spec, const char *name)
{
    for (int i = 0; i < spec->n_args; i++)
        if (strcmp(spec->args[i].name, name) == 0)
            return &spec->args[i];
    return NULL;
}


static fh_status range_error(const fh_arg_spec *spec, const fh_arg *a, const char *value,
                             fh_error *err)
{
    char range[FH_RANGE_CHARS];
    return fh_error_set(err, FH_ERR_INPUT, "foxhunt %s: %s %s is out of range: expected %s",
                        spec->command, a->name, value, fh_format_range(range, a->min, a->max));
}

static fh_status set_value(const fh_arg_spec *spec, fh_arg *a, const char *value,
                           fh_error *err)
{
    char *end = NULL;
    errno = 0;
    switch (a->type) {
    case FH_ARG_STRING:
        if (!*value)
            return fh_error_set(err, FH_ERR_INPUT, "foxhunt %s: %s needs a non-empty value",
                                spec->command, a->name);
        *(const char **)a->target = value;
        return FH_OK;
    case FH_ARG_CHOICE:
        if (!fh_config_choice_ok(a->choices, value))
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: %s '%s' is not one of %s", spec->command,
                                a->name, value, a->choices);
        *(const char **)a->target = value;
        return FH_OK;
    case FH_ARG_INT: {
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < -2147483647L || v > 2147483647L)
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: %s expects an integer, got '%s'",
                                spec->command, a->name, value);
        if (a->min < a->max && (v < a->min || v > a->max))
            return range_error(spec, a, value, err);
        *(int *)a->target = (int)v;
        return FH_OK;
    }
    case FH_ARG_U64: {
        if (value[0] == '-')
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: %s expects a non-negative integer, got '%s'",
                                spec->command, a->name, value);
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end)
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: %s expects a non-negative integer, got '%s'",
                                spec->command, a->name, value);
        *(uint64_t *)a->target = (uint64_t)v;
        return FH_OK;
    }
    case FH_ARG_DOUBLE: {
        double v = strtod(value, &end);
        if (end == value || *end || isnan(v) || (isinf(v) && errno != ERANGE))
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: %s expects a finite number, got '%s'",
                                spec->command, a->name, value);
        /* strtod's ERANGE: beyond a double, or below the smallest normal one (read as 0
         * or a subnormal): say which, not "not a finite number" */
        if (errno == ERANGE) {
            int small = fabs(v) <= DBL_MIN;
            char range[FH_RANGE_CHARS + 16] = "", span[FH_RANGE_CHARS];
            if (a->min < a->max)
                snprintf(range, sizeof range, " in range %s",
                         fh_format_range(span, a->min, a->max));
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: %s %s is too %s for a double (%s %.3g); give a "
                                "value%s%s",
                                spec->command, a->name, value, small ? "small" : "large",
                                small ? "below" : "above", small ? DBL_MIN : DBL_MAX, range,
                                small ? " (or 0)" : "");
        }
        if (a->min < a->max && (v < a->min || v > a->max))
            return range_error(spec, a, value, err);
        *(double *)a->target = v;
        return FH_OK;
    }
    case FH_ARG_FLAG:
        *(int *)a->target = 1;
        return FH_OK;
    }
    return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: unknown flag type", __FILE__, __LINE__);
}

/* Edit distance between a (length na) and b, capped: enough to rank flag names. */
static int edit_distance(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b);
    if (na > 63 || nb > 63)
        return 99;
    int row[64];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int sub = diag + (a[i - 1] != b[j - 1]);
            int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[nb];
}

/* The flag nearest to an unknown one, when it is near enough to be a typo. */
static const char *nearest_flag(const fh_arg_spec *spec, const char *tok, size_t len)
{
    const char *best = NULL;
    int best_d = 99, limit = len / 3 > 2 ? (int)(len / 3) : 2;
    for (int i = 0; i < spec->n_args; i++) {
        int d = edit_distance(tok, len, spec->args[i].name);
        if (d < best_d) {
            best_d = d;
            best = spec->args[i].name;
        }
    }
    return best_d <= limit ? best : NULL;
}

fh_status fh_args_parse(fh_arg_spec *spec, int argc, char **argv, int *help_shown,
                        fh_error *err)
{
    *help_shown = 0;
    for (int i = 1; i < argc; i++) {
        const char *tok = argv[i];
        if (strcmp(tok, "--help") == 0 || strcmp(tok, "-h") == 0) {
            fh_args_print_help(spec);
            *help_shown = 1;
            return FH_OK;
        }
        if (strncmp(tok, "--", 2) != 0)
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: unexpected argument '%s' (flags start with --; "
                                "see foxhunt %s --help)",
                                spec->command, tok, spec->command);
        const char *eq = strchr(tok, '=');
        size_t name_len = eq ? (size_t)(eq - tok) : strlen(tok);
        fh_arg *a = find_arg(spec, tok, name_len);
        if (!a) {
            const char *near = nearest_flag(spec, tok, name_len);
            if (near)
                return fh_error_set(err, FH_ERR_INPUT, "foxhunt %s: unknown flag '%.*s'; did "
                                    "you mean %s? (see foxhunt %s --help)", spec->command,
                                    (int)name_len, tok, near, spec->command);
            return fh_error_set(err, FH_ERR_INPUT,
                                "foxhunt %s: unknown flag '%.*s' (see foxhunt %s --help)",
                                spec->command, (int)name_len, tok, spec->command);
        }
        if (a->seen)
            return fh_error_set(err, FH_ERR_INPUT, "foxhunt %s: %s given twice",
                                spec->command, a->name);
        a->seen = 1;
        const char *value = NULL;
        if (a->type == FH_ARG_FLAG) {
            if (eq)
                return fh_error_set(err, FH_ERR_INPUT, "foxhunt %s: %s takes no value",
                                    spec->command, a->name);
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
            value = argv[++i];
        } else {
            return fh_error_set(err, FH_ERR_INPUT, "foxhunt %s: %s needs a value (%s)",
                                spec->command, a->name, a->metavar ? a->metavar : "VALUE");
        }
        fh_status st = set_value(spec, a, value, err);
        if (st != FH_OK)
            return st;
    }
    return FH_OK;
}

static void print_default(const fh_arg *a)
{
    switch (a->type) {
    case FH_ARG_STRING:
    case FH_ARG_CHOICE: {
        const char *v = *(const char **)a->target;
        printf(" (default: %s)", v ? v : "none");
        break;
    }
    case FH_ARG_INT: printf(" (default: %d)", *(int *)a->target); break;
    case FH_ARG_U64: printf(" (default: %" PRIu64 ")", *(uint64_t *)a->target); break;
    case FH_ARG_DOUBLE: printf(" (default: %g)", *(double *)a->target); break;
    case FH_ARG_FLAG: printf(" (default: off)"); break;
    }
}

void fh_args_print_help(const fh_arg_spec *spec)
{
    printf("usage: foxhunt %s [flags]\n\n%s\n\nflags:\n", spec->command, spec->summary);
    for (int i = 0; i < spec->n_args; i++) {
        const fh_arg *a = &spec->args[i];
        char left[96];
        if (a->type == FH_ARG_FLAG)
            snprintf(left, sizeof left, "%s", a->name);
        else if (a->type == FH_ARG_CHOICE)
            snprintf(left, sizeof left, "%s %s", a->name, a->choices);
        else
            snprintf(left, sizeof left, "%s %s", a->name, a->metavar ? a->metavar : "VALUE");
        printf("  %-30s %s", left, a->help);
        /* a default the help states itself is not stated twice */
        if (!strstr(a->help, "(default: ") && !strstr(a->help, "(the default"))
            print_default(a);
        printf("\n");
    }
    printf("  %-30s %s\n", "--help", "show this help and exit");
}

int fh_args_parse_int_list(const char *text, int *values, int max_values)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v <= 0 || v > 100000000L || n >= max_values)
            return -1;
        values[n++] = (int)v;
        if (*end == ',')
            p = end + 1;
        else if (*end == '\0')
            break;
        else
            return -1;
    }
    return n > 0 ? n : -1;
}
