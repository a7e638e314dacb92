/* test_cli_flags.c — the settings table as the only declaration of a setting (issue 33):
 * every command's flag that is a table key is parsed by the table.
 *
 * 1. fh_key_flags_parse on a made-up command: defaults, a command's default, a list, an
 *    older flag name, the table's range error, and a key list naming no key (a mistake in
 *    the command: FH_ERR_FAILURE).
 * 2. Each command's --help (it runs the command's key list, so a key the table lacks
 *    fails it): every flag named as a table key, or tagged "[section] key", carries that
 *    key's help from the table; each command shows at least the table flags it takes.
 * 3. Each command given an out-of-range value of one of its table flags: exit 2 and the
 *    table's message ("key = value is out of range ..."), naming the flag. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <string.h>

#include "cli/config_flags.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define COMMAND_SECONDS 60

static char g_dir[256];
static int g_counter;

static fh_cmd_result foxhunt(const char *const *argv_tail)
{
    return fh_foxhunt_captured(argv_tail, g_dir, &g_counter, COMMAND_SECONDS);
}

/* ---- 1. the parser ---- */

static void test_parse(void)
{
    const char *episodes = NULL, *kernel = NULL, *json = NULL;
    fh_arg own[] = {{"--json", FH_ARG_STRING, &json, "FILE", "a flag of the command's own", NULL, 0, 0, 0}};
    fh_key_flag keys[] = {
        {.key = "episodes", .value = "4,8", .list = &episodes},
        {.key = "kernel", .value = "both", .list = &kernel, .also = "both"},
        {.key = "synthetic_seed", .flag = "--seed"},
        {.key = "train_fraction", .value = "0.8"},
        {.key = "device"},
    };
    const int n = (int)(sizeof keys / sizeof keys[0]);
    fh_train_config cfg;
    fh_error err;
    int help = 0;
    char *argv[] = {"made-up", "--episodes", "16,32", "--seed", "7", "--json", "f.json", NULL};
    fh_status st = fh_key_flags_parse(&cfg, "made-up", "a test", keys, n, own, 1, 7, argv, &help,
                                      &err);
    CHECK_MSG(st == FH_OK && !help, "parse failed: %s", err.message);
    CHECK(episodes && strcmp(episodes, "16,32") == 0);
    CHECK(kernel && strcmp(kernel, "both") == 0); /* the command's default */
    CHECK(cfg.synthetic_seed == 7 && cfg.seed == 1);
    CHECK_CLOSE(cfg.train_fraction, 0.8, 0, 0);
    CHECK(strcmp(cfg.device, "auto") == 0);
    CHECK(keys[0].seen && !keys[1].seen && keys[2].seen && !keys[3].seen && !keys[4].seen);
    CHECK(own[0].seen && json && strcmp(json, "f.json") == 0);
    CHECK(fh_key_flag_of(keys, n, "synthetic_seed") == &keys[2]);

    /* the table's checks: a value out of range, a bad list element */
    char *range[] = {"made-up", "--train-fraction", "0.99", NULL};
    keys[3].seen = 0;
    st = fh_key_flags_parse(&cfg, "made-up", "a test", keys, n, own, 1, 3, range, &help, &err);
    CHECK_MSG(st == FH_ERR_INPUT &&
                  strstr(err.message, "--train-fraction: train_fraction = 0.99 is out of range"),
              "out of range: status %d, %s", (int)st, err.message);
    char *list[] = {"made-up", "--kernel", "fast,warp", NULL};
    st = fh_key_flags_parse(&cfg, "made-up", "a test", keys, n, own, 1, 3, list, &help, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "--kernel 'fast,warp'") &&
                  strstr(err.message, "'warp' is not one of"),
              "bad list: status %d, %s", (int)st, err.message);

    /* a key list naming no key of the table is the command's mistake, not the user's */
    fh_key_flag wrong[] = {{.key = "no_such_key"}};
    char *none[] = {"made-up", NULL};
    st = fh_key_flags_parse(&cfg, "made-up", "a test", wrong, 1, NULL, 0, 1, none, &help, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "no_such_key"),
              "unknown key: status %d, %s", (int)st, err.message);
}

/* ---- 2. --help of every command ---- */

/* The field whose flag is name (--key, dashes for underscores), or NULL. */
static const fh_config_field *field_of_flag(const char *name, size_t len)
{
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const char *key = fh_train_config_fields[i].key;
        if (len != strlen(key) + 2 || strncmp(name, "--", 2) != 0)
            continue;
        size_t k = 0;
        while (k < strlen(key) && (name[k + 2] == key[k] || (key[k] == '_' && name[k + 2] == '-')))
            k++;
        if (k == strlen(key))
            return &fh_train_config_fields[i];
    }
    return NULL;
}

/* The field whose tag " [section] key" line holds, or NULL. */
static const fh_config_field *field_tagged(const char *line, size_t len)
{
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        char tag[96];
        snprintf(tag, sizeof tag, " [%s] %s", f->section, f->key);
        const char *at = strstr(line, tag);
        if (at && at < line + len && (at[strlen(tag)] == ' ' || at[strlen(tag)] == '\n'))
            return f;
    }
    return NULL;
}

static void check_help(const char *command, int min_table_flags)
{
    const char *argv[] = {command, "--help", NULL};
    fh_cmd_result r = foxhunt(argv);
    CHECK_MSG(r.rc == 0, "%s --help: exit %d: %s", command, r.rc, r.err);
    int table_flags = 0;
    for (const char *line = strstr(r.out, "\n  --"); line; line = strstr(line + 1, "\n  --")) {
        const char *name = line + 3, *eol = strchr(name, '\n');
        size_t len = eol ? (size_t)(eol - name) : strlen(name);
        size_t name_len = strcspn(name, " \n");
        const fh_config_field *named = field_of_flag(name, name_len);
        const fh_config_field *tagged = field_tagged(name, len);
        if (!named && !tagged)
            continue; /* the command's own flag */
        table_flags++;
        CHECK_MSG(tagged != NULL, "%s --help: %.*s is a table key's name but not the table's "
                  "flag (no [section] key): %.*s", command, (int)name_len, name, (int)len, name);
        if (tagged) {
            const char *help = strstr(name, tagged->help);
            CHECK_MSG(help && help < name + len, "%s --help: %.*s lacks the table's help of "
                      "%s: %.*s", command, (int)name_len, name, tagged->key, (int)len, name);
        }
    }
    CHECK_MSG(table_flags >= min_table_flags, "%s --help: %d table flags, expected %d or more",
              command, table_flags, min_table_flags);
    fh_cmd_result_free(&r);
}

/* ---- 3. an out-of-range value of a table flag, per command ---- */

static void expect_table_error(const char *const *argv, const char *flag, const char *message)
{
    fh_cmd_result r = foxhunt(argv);
    CHECK_MSG(r.rc == 2, "%s %s: exit %d, expected 2 (stderr: %s)", argv[0], flag, r.rc, r.err);
    CHECK_MSG(strstr(r.err, flag) && strstr(r.err, message),
              "%s %s: stderr lacks the flag or the table's '%s': %s", argv[0], flag, message,
              r.err);
    fh_cmd_result_free(&r);
}

static void test_out_of_range(void)
{
    char never[400], long_path[700];
    snprintf(never, sizeof never, "%s/never", g_dir);
    memset(long_path, 'x', 600);
    long_path[600] = '\0';
    const char *train[] = {"train", "--out", never, "--episodes", "0", NULL};
    expect_table_error(train, "--episodes", "episodes = 0 is out of range 1..1048576");
    const char *wf[] = {"walkforward", "--out", never, "--walkforward-folds", "1001", NULL};
    expect_table_error(wf, "--walkforward-folds", "walkforward_folds = 1001 is out of range");
    const char *wf1[] = {"walkforward", "--out", never, "--walkforward-folds", "1", NULL};
    expect_table_error(wf1, "--walkforward-folds", "needs 2 folds or more");
    const char *eval[] = {"eval", "--checkpoint", never, "--periods-per-year", "-1", NULL};
    expect_table_error(eval, "--periods-per-year", "periods_per_year = -1 is out of range");
    const char *export[] = {"export", "--checkpoint", never, "--actor", "--out", long_path, NULL};
    expect_table_error(export, "--out", "out is longer than 511 characters");
    const char *features[] = {"features", "--out", never, "--bars", "10", NULL};
    expect_table_error(features, "--bars", "synthetic_bars = 10 is out of range");
    const char *features2[] = {"features", "--out", never, "--train-fraction", "0.99", NULL};
    expect_table_error(features2, "--train-fraction", "train_fraction = 0.99 is out of range");
    const char *collect[] = {"collect", "--out", never, "--episodes", "0", NULL};
    expect_table_error(collect, "--episodes", "episodes = 0 is out of range");
    const char *update[] = {"update", "--checkpoint", never, "--lr", "2", NULL};
    expect_table_error(update, "--lr", "lr = 2 is out of range 0..1");
    const char *bench[] = {"bench", "--device", "cpu", "--steps", "0", NULL};
    expect_table_error(bench, "--steps", "steps = 0 is out of range");
    const char *bench2[] = {"bench", "--device", "cpu", "--episodes", "8,0", NULL};
    expect_table_error(bench2, "--episodes '8,0'", "episodes = 0 is out of range");
    const char *info[] = {"info", "--steps", "0", NULL};
    expect_table_error(info, "--steps", "steps = 0 is out of range");
    const char *info2[] = {"info", "--device", "tpu", NULL};
    expect_table_error(info2, "--device", "is not one of auto|cpu|cuda");
    CHECK_MSG(!fh_file_exists(never), "%s was written", never);
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_cli_flags")) {
        fprintf(stderr, "cannot make a temporary directory\n");
        return 1;
    }
    test_parse();
    /* the table flags each command takes (train and walkforward: every key) */
    check_help("train", fh_train_config_n_fields);
    check_help("walkforward", fh_train_config_n_fields);
    check_help("eval", 4);
    check_help("export", 1);
    check_help("features", 5);
    check_help("collect", 7);
    check_help("update", 4);
    check_help("bench", 9);
    check_help("info", 4);
    /* walk-forward's own default, from its key list */
    const char *wf[] = {"walkforward", "--help", NULL};
    fh_cmd_result r = foxhunt(wf);
    const char *folds = strstr(r.out, "\n  --walkforward-folds ");
    const char *eol = folds ? strchr(folds + 1, '\n') : NULL;
    const char *five = folds ? strstr(folds, "(default: 5)") : NULL;
    CHECK_MSG(five && (!eol || five < eol), "walkforward --help: --walkforward-folds without "
              "(default: 5): %s", r.out);
    fh_cmd_result_free(&r);
    test_out_of_range();
    fh_test_tidy(g_dir);
    return fh_test_finish();
}
