/* test_input_config.c — the run's config as untrusted input (issue 19 item 8):
 *   - numbers beyond a double (--lr 1e-400, 1e400) are named as too small / too large,
 *     not "not a finite number"; a value below a float's range in a float key too;
 *   - a saved config (checkpoint JSON) with 1e300 or 8.7 for an integer key is an error
 *     naming the key (it was (int)valuedouble: undefined behaviour, or silently 8);
 *   - INI lines too long for inih's 200-byte buffer are refused naming their own line
 *     (inih split them and named the next); errors name the right line; inih's syntax
 *     (BOM, CRLF, comments, ':') still reads;
 *   - a path that is not UTF-8 (byte 0xff) is refused as --out / --data, since the
 *     config is saved as JSON in checkpoints.
 * The CLI cases run `foxhunt train` (exit 2, nothing trained). */
#include "data_fixtures.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

static const fh_config_field *field(const char *key)
{
    for (int i = 0; i < fh_train_config_n_fields; i++)
        if (strcmp(fh_train_config_fields[i].key, key) == 0)
            return &fh_train_config_fields[i];
    fprintf(stderr, "no field %s\n", key);
    exit(1);
}

static void expect_set_fails(const char *key, const char *value, const char *phrase)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_config_field_set(field(key), &cfg, value, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "%s = %s: accepted", key, value);
    CHECK_MSG(strstr(err.message, key) && strstr(err.message, phrase) &&
                  !strstr(err.message, "finite"),
              "%s = %s: message '%s' lacks '%s' (or says 'finite')", key, value, err.message,
              phrase);
    printf("%s = %s: %s\n", key, value, err.message);
}

static void test_number_ranges(void)
{
    expect_set_fails("lr", "1e-400", "too small for a double");
    expect_set_fails("lr", "4e-320", "too small for a double"); /* subnormal */
    expect_set_fails("lr", "1e400", "too large");
    expect_set_fails("initial_equity", "-1e999", "too large");
    expect_set_fails("half_spread", "1e-40", "too small for a 32-bit float");
    expect_set_fails("episodes", "99999999999999999999", "out of range");
    expect_set_fails("episodes", "4294967297", "out of range");
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    CHECK(fh_config_field_set(field("lr"), &cfg, "0", &err) == FH_OK && cfg.lr == 0.0);
    CHECK(fh_config_field_set(field("lr"), &cfg, "2.5e-308", &err) == FH_OK);
    CHECK(fh_config_field_set(field("lr"), &cfg, "inf", &err) == FH_ERR_INPUT &&
          strstr(err.message, "finite"));
    CHECK(fh_config_field_set(field("max_bar_move_sigmas"), &cfg, "0", &err) == FH_OK &&
          cfg.max_bar_move_sigmas == 0.0);
}

static void expect_json_fails(const char *json, const char *phrase)
{
    fh_train_config cfg, before;
    fh_train_config_default(&cfg);
    before = cfg;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_train_config_from_json(json, &cfg, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "%s: accepted", json);
    CHECK_MSG(strstr(err.message, phrase), "%s: message '%s' lacks '%s'", json, err.message,
              phrase);
    CHECK_MSG(memcmp(&cfg, &before, sizeof cfg) == 0, "%s: the config changed", json);
    printf("%s: %s\n", json, err.message);
}

static void test_saved_config(void)
{
    expect_json_fails("{\"run\": {\"episodes\": 1e300}}", "episodes = 1e+300 is out of range");
    expect_json_fails("{\"run\": {\"episodes\": -1e300}}", "episodes = -1e+300");
    expect_json_fails("{\"run\": {\"episodes\": 8.7}}", "episodes = '8.7': expected an integer");
    expect_json_fails("{\"run\": {\"eval_at_end\": 1e300}}", "eval_at_end");
    expect_json_fails("{\"run\": {\"out\": \"runs/\xff\"}}", "not valid UTF-8");
    /* issue 32: a \u0000 would cut the path short ("runs/a"), not be an error */
    expect_json_fails("{\"run\": {\"out\": \"runs/a\\u0000b\"}}", "NUL character");
    /* the round trip of a good config is unchanged; JSON booleans are read too */
    fh_train_config cfg, back;
    fh_train_config_default(&cfg);
    cfg.episodes = 96;
    cfg.max_bar_move_sigmas = 0;
    char *json = fh_train_config_to_json(&cfg);
    fh_train_config_default(&back);
    fh_error err;
    CHECK_MSG(fh_train_config_from_json(json, &back, &err) == FH_OK, "%s", err.message);
    CHECK(memcmp(&cfg, &back, sizeof cfg) == 0);
    CHECK(strstr(json, "\"max_bar_move_sigmas\"") != NULL);
    free(json);
    CHECK(fh_train_config_from_json("{\"run\": {\"eval_at_end\": false}}", &back, &err) ==
              FH_OK &&
          back.eval_at_end == 0);
    /* the fold is 1-based, as the walk-forward's folders count; a config saved before
     * (0-based walkforward_fold) reads as the same fold; a new key wins over the old */
    CHECK(fh_train_config_from_json("{\"run\": {\"walkforward_fold\": 2}}", &back, &err) ==
              FH_OK &&
          back.fold == 3);
    CHECK(fh_train_config_from_json("{\"run\": {\"fold\": 4, \"walkforward_fold\": 2}}",
                                    &back, &err) == FH_OK &&
          back.fold == 4);
    expect_json_fails("{\"run\": {\"walkforward_fold\": 2.5}}", "walkforward_fold = 2.5");
    expect_json_fails("{\"run\": {\"fold\": 0}}", "fold = 0 is out of range");
}

static void expect_ini(const char *name, const char *text, int line, const char *phrase,
                       fh_train_config *out)
{
    char path[512];
    fx_path(path, sizeof path, name);
    fx_write(path, text);
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_train_config_load_ini(path, &cfg, &err);
    if (!phrase) {
        CHECK_MSG(st == FH_OK, "%s: %s", name, err.message);
        if (out)
            *out = cfg;
        return;
    }
    char where[600];
    snprintf(where, sizeof where, "%s:%d: ", path, line);
    CHECK_MSG(st == FH_ERR_INPUT, "%s: accepted", name);
    CHECK_MSG(strncmp(err.message, where, strlen(where)) == 0 && strstr(err.message, phrase),
              "%s: message '%s' should start with '%s' and say '%s'", name, err.message, where,
              phrase);
    printf("%s: %s\n", name, err.message);
}

static void test_ini(void)
{
    char longdir[301], comment[400], text[2048];
    memset(longdir, 'd', 300);
    longdir[300] = '\0';
    memset(comment, '-', 350);
    comment[0] = ';';
    comment[350] = '\0';

    /* a line too long for inih's 200-byte buffer is refused naming that line (inih
     * split it and reported the next one) */
    fh_train_config cfg;
    snprintf(text, sizeof text, "[run]\nout = /tmp/%s\nepisodes = 8\n", longdir);
    expect_ini("long_value.ini", text, 2, "INI lines may have at most 198", NULL);
    snprintf(text, sizeof text, "[run]\nepisodes = 8\n\n%s\nseed = 1\n", comment);
    expect_ini("long_comment.ini", text, 4, "the line is 350 characters long", NULL);
    /* an error after lines just under the limit names its own line */
    comment[190] = '\0';
    snprintf(text, sizeof text, "[run]\n%s\n%s\nepisodes = 0\n", comment, comment);
    expect_ini("near_limit.ini", text, 4, "episodes = 0 is out of range", NULL);
    /* a value too long for its key (but a line inih reads whole) */
    char huge[190];
    memset(huge, 'p', 189);
    huge[189] = '\0';
    snprintf(text, sizeof text, "[run]\n\nalgo = %s\n", huge);
    expect_ini("too_long.ini", text, 3, "algo", NULL);

    /* inih's syntax still reads: BOM, CRLF, comments, ':' and a key before any section */
    expect_ini("syntax.ini",
               "\xEF\xBB\xBF; a comment\r\nepisodes = 16 ; inline comment\r\n# another\r\n"
               "[ppo]\r\n  lr: 0.001\r\n[env]\nhalf_spread=0.0002\n[run]\nseed = 7",
               0, NULL, &cfg);
    CHECK(cfg.episodes == 16 && cfg.lr == 0.001 && cfg.env.half_spread == 0.0002f &&
          cfg.seed == 7);
    expect_ini("unknown.ini", "[run]\nepisodes = 8\nno_such_key = 3\n", 3,
               "unknown key 'no_such_key' in section [run]", NULL);
    expect_ini("wrong_section.ini", "[env]\nepisodes = 8\n", 2, "unknown key 'episodes'", NULL);
    /* the precisions read; another is refused naming them; bf16 is PPO's only */
    expect_ini("tf32.ini", "[run]\nprecision = tf32\n", 0, NULL, &cfg);
    CHECK(strcmp(cfg.precision, "tf32") == 0);
    expect_ini("bf16.ini", "[run]\nprecision = bf16\n", 0, NULL, &cfg);
    CHECK(strcmp(cfg.precision, "bf16") == 0);
    fh_error verr;
    CHECK_MSG(fh_train_config_validate(&cfg, &verr) == FH_OK, "bf16 with ppo: %s", verr.message);
    strcpy(cfg.algo, "pqn");
    CHECK_MSG(fh_train_config_validate(&cfg, &verr) == FH_ERR_INPUT &&
                  strstr(verr.message, "precision = bf16") && strstr(verr.message, "pqn"),
              "bf16 with pqn: not refused by name");
    expect_ini("fp16.ini", "[run]\nprecision = fp16\n", 2, "fp32|tf32|bf16", NULL);
    expect_ini("no_bracket.ini", "[run\nepisodes = 8\n", 1, "syntax error", NULL);
    expect_ini("no_key.ini", "[run]\n = 8\n", 2, "no key", NULL);
    expect_ini("lr_underflow.ini", "[ppo]\nlr = 1e-400\n", 2, "too small for a double", NULL);
    /* a NUL byte in the middle of a line (fx_write stops at a NUL: write it by hand) */
    char path[512];
    fx_path(path, sizeof path, "nul_inside.ini");
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite("[run]\nepi\0sodes = 8\n", 1, 20, f) == 20 && fclose(f) == 0);
    fh_train_config_default(&cfg);
    fh_error err;
    CHECK(fh_train_config_load_ini(path, &cfg, &err) == FH_ERR_INPUT &&
          strstr(err.message, ":2: a NUL byte"));
}

static void test_utf8_paths(void)
{
    expect_set_fails("out", "runs/\xff", "not valid UTF-8 (byte 0xff at offset 5)");
    expect_set_fails("data", "\xc3\x28.csv", "not valid UTF-8");
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    CHECK_MSG(fh_config_field_set(field("out"), &cfg, "runs/\xc3\xa9t\xc3\xa9", &err) == FH_OK,
              "a UTF-8 path is refused: %s", err.message);
}

/* Runs `foxhunt train ARGS`; exit status, stderr in *msg. */
static int train(const char *args, char **msg)
{
    char errp[512], full[4096];
    fx_path(errp, sizeof errp, "stderr.txt");
    snprintf(full, sizeof full, "train --device cpu %s", args);
    int rc = fx_run_foxhunt(full, errp);
    *msg = fx_read(errp);
    return rc;
}

static void test_cli(void)
{
    char run[512], args[2048], *msg = NULL;
    fx_path(run, sizeof run, "run");
    snprintf(args, sizeof args, "--out '%s' --lr 1e-400", run);
    int rc = train(args, &msg);
    CHECK_MSG(rc == 2 && msg && strstr(msg, "--lr") && strstr(msg, "too small") &&
                  !strstr(msg, "finite"),
              "--lr 1e-400: exit %d, stderr %s", rc, msg ? msg : "");
    free(msg);
    CHECK(!fx_exists(run));

    snprintf(args, sizeof args, "--out $(printf '%s/r\\377')", fx_dir);
    rc = train(args, &msg);
    CHECK_MSG(rc == 2 && msg && strstr(msg, "--out") && strstr(msg, "UTF-8"),
              "--out with byte 0xff: exit %d, stderr %s", rc, msg ? msg : "");
    free(msg);
    char bad[600];
    snprintf(bad, sizeof bad, "%s/r\377", fx_dir);
    CHECK_MSG(!fx_exists(bad), "the non-UTF-8 run directory was created");
}

/* The shipped configurations (configs/ quickstart.ini and throughput.ini) load and say
 * what their comments claim. */
static void test_shipped_configs(void)
{
    char path[1024];
    fh_train_config cfg;
    fh_error err;
    snprintf(path, sizeof path, "%s/configs/throughput.ini", FH_SOURCE_DIR);
    fh_train_config_default(&cfg);
    CHECK_MSG(fh_train_config_load_ini(path, &cfg, &err) == FH_OK, "%s", err.message);
    CHECK(cfg.episodes == 4096 && cfg.steps == 128 && cfg.epochs == 2 &&
          cfg.minibatch == 16384 && strcmp(cfg.precision, "bf16") == 0 &&
          strcmp(cfg.device, "cuda") == 0 && cfg.iterations == 20);
    CHECK_MSG(fh_train_config_validate(&cfg, &err) == FH_OK, "%s", err.message);
    snprintf(path, sizeof path, "%s/configs/quickstart.ini", FH_SOURCE_DIR);
    fh_train_config_default(&cfg);
    CHECK_MSG(fh_train_config_load_ini(path, &cfg, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_train_config_validate(&cfg, &err) == FH_OK, "%s", err.message);
}

int main(void)
{
    fx_make_dir();
    test_shipped_configs();
    test_number_ranges();
    test_saved_config();
    test_ini();
    test_utf8_paths();
    test_cli();
    fx_cleanup();
    return fh_test_finish();
}
