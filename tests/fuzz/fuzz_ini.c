/* fuzz_ini.c — libFuzzer harness: an arbitrary file given as `--config` (issue 19).
 *
 * The input is written to a scratch .ini file and read with fh_train_config_load_ini
 * over the defaults. Beyond "no crash, no leak, no undefined behaviour" it checks what
 * train_config.h promises:
 *  - a rejected file: FH_ERR_INPUT, a message naming the file, and the configuration
 *    left exactly as it was ("nothing changes unless the whole file is good");
 *  - an accepted file: every field's value within the table's range or choices; and,
 *    when the configuration validates, its JSON (what config.json and every checkpoint
 *    hold) reads back with fh_train_config_from_json into the same configuration. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/train_config.h"
#include "fuzz_util.h"

static void check_ranges(const fh_train_config *cfg)
{
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        const char *base = (const char *)cfg + f->offset;
        double v;
        switch (f->type) {
        case FH_FIELD_STRING:
            FUZZ_REQUIRE(memchr(base, '\0', f->size) != NULL, "%s is not terminated", f->key);
            continue;
        case FH_FIELD_CHOICE:
            FUZZ_REQUIRE(memchr(base, '\0', f->size) != NULL && fh_config_choice_ok(f->choices, base),
                         "%s = '%s' is not one of %s", f->key, base, f->choices);
            continue;
        case FH_FIELD_ENUM: {
            int index = *(const int *)base, n_choices = 1;
            for (const char *c = f->choices; *c; c++)
                n_choices += *c == '|';
            FUZZ_REQUIRE(index >= 0 && index < n_choices, "%s = %d is not an index of %s",
                         f->key, index, f->choices);
            continue;
        }
        case FH_FIELD_U64: continue;
        case FH_FIELD_BOOL:
            FUZZ_REQUIRE(*(const int *)base == 0 || *(const int *)base == 1, "%s = %d", f->key,
                         *(const int *)base);
            continue;
        case FH_FIELD_INT: v = *(const int *)base; break;
        case FH_FIELD_DOUBLE: v = *(const double *)base; break;
        case FH_FIELD_FLOAT: v = *(const float *)base; break;
        default: continue;
        }
        /* a float field may round just past a bound it was given within */
        double slack = f->type == FH_FIELD_FLOAT ? 1e-6 * (f->max > 1 ? f->max : 1) : 0;
        FUZZ_REQUIRE(!(f->min < f->max) || (v >= f->min - slack && v <= f->max + slack),
                     "%s = %.17g outside %g..%g", f->key, v, f->min, f->max);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("ini", ".ini", data, size);
    fh_train_config cfg, before;
    fh_train_config_default(&cfg);
    before = cfg;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_train_config_load_ini(path, &cfg, &err);
    if (st != FH_OK) {
        FUZZ_REQUIRE(st == FH_ERR_INPUT, "status %d: %s", (int)st, err.message);
        FUZZ_REQUIRE(strstr(err.message, path) != NULL, "the message does not name the file: %s",
                     err.message);
        FUZZ_REQUIRE(memcmp(&cfg, &before, sizeof cfg) == 0,
                     "a rejected file changed the configuration");
        return 0;
    }
    check_ranges(&cfg);
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        char text[FH_CONFIG_STRING_MAX + 32];
        fh_config_field_format(&fh_train_config_fields[i], &cfg, text, sizeof text);
    }
    if (fh_train_config_validate(&cfg, &err) != FH_OK)
        return 0;

    char *json = fh_train_config_to_json(&cfg);
    FUZZ_REQUIRE(json != NULL, "fh_train_config_to_json returned NULL");
    fh_train_config back;
    fh_train_config_default(&back);
    st = fh_train_config_from_json(json, &back, &err);
    FUZZ_REQUIRE(st == FH_OK, "the JSON of a valid configuration does not read back: %s\n%s",
                 err.message, json);
    char *again = fh_train_config_to_json(&back);
    FUZZ_REQUIRE(again && strcmp(json, again) == 0,
                 "the configuration changed in its JSON round trip:\n%s\n---\n%s", json,
                 again ? again : "(null)");
    free(again);
    free(json);
    return 0;
}
