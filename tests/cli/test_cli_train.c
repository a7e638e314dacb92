/* test_cli_train.c — `foxhunt train` and `foxhunt eval` end to end through the binary
 * (SPEC §10, STYLE habit 11, issue 5), on a tiny synthetic config:
 *  - a run writes config.json, metrics.csv (header + K rows), metrics.jsonl (K JSON
 *    lines), final.safetensors and eval.json;
 *  - --config FILE (INI) values are applied and flags override them (config.json);
 *  - bad values, unknown flags, unknown INI keys and bad INI values exit 2 with a
 *    message naming the flag or FILE:LINE, and create no run directory;
 *  - --help lists every flag of the config table with its default;
 *  - SIGINT during a run writes interrupted.safetensors and exits 130; resuming it works;
 *  - eval prints the table and writes JSON with greedy, sampled, buy_and_hold, flat,
 *    random, (synthetic market) oracle and the classical baselines' entries, and each
 *    baseline's choice: how, the grid's validation Sharpes (the chosen the highest),
 *    its PSR and deflated Sharpe;
 *  - eval on a missing, corrupt or truncated checkpoint exits 2 (an input error),
 *    names the file and writes no JSON. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <cjson/cJSON.h>
#include <string.h>

#include "foxhunt/safetensors.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

static char g_dir[256];

/* The tiny run: about a second in Release. */
static const char *TINY[] = {"--device", "cpu", "--episodes", "8", "--steps", "32",
                             "--epochs", "1", "--minibatch", "128", "--synthetic-bars",
                             "2000", "--threads", "1", "--horizon", "20", NULL};

typedef struct {
    int rc;
    char *out; /* captured stdout */
    char *err; /* captured stderr */
} result;

static void result_free(result *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* foxhunt CMD [TINY...] extra... */
static result foxhunt(const char *cmd, int tiny, const char *const *extra)
{
    static int counter = 0;
    char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    argv[n++] = (char *)cmd;
    for (int i = 0; tiny && TINY[i]; i++)
        argv[n++] = (char *)TINY[i];
    for (int i = 0; extra && extra[i] && n < FH_PROC_MAX_ARGS - 1; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s/cmd%02d.out", g_dir, counter);
    snprintf(errp, sizeof errp, "%s/cmd%02d.err", g_dir, counter++);
    result r;
    r.rc = fh_proc_run(argv, out, errp);
    r.out = fh_read_text(out);
    r.err = fh_read_text(errp);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    return r;
}

static void sub_path(char *out, size_t size, const char *sub)
{
    snprintf(out, size, "%s/%s", g_dir, sub);
}

static void file_in(char *out, size_t size, const char *dir, const char *file)
{
    snprintf(out, size, "%s/%s", dir, file);
}

static cJSON *read_json(const char *path)
{
    char *text = fh_read_text(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static double json_number(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* ---- a whole run, then eval on its checkpoint ---- */

/* eval.json's "baselines": each chosen on validation is the grid's highest validation
 * Sharpe (the first of equals); PSR and DSR are probabilities, DSR <= PSR. */
static void check_baselines_json(const cJSON *j, const char *what)
{
    const cJSON *bl = cJSON_GetObjectItemCaseSensitive(j, "baselines");
    const char *names[] = {"vol_target", "tsmom", "ma_crossover"};
    for (int k = 0; k < 3; k++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(bl, names[k]);
        CHECK_MSG(cJSON_IsObject(b), "%s: no baselines.%s", what, names[k]);
        if (!b)
            continue;
        const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "chosen_on"));
        const char *chosen = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(b, "parameters"), "description"));
        CHECK_MSG(how && chosen, "%s: baselines.%s lacks chosen_on or parameters", what, names[k]);
        const cJSON *grid = cJSON_GetObjectItemCaseSensitive(b, "grid"), *t;
        const char *best = NULL;
        double best_sharpe = -1e300;
        cJSON_ArrayForEach(t, grid) {
            double sr = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "validation_sharpe"));
            if (sr > best_sharpe) {
                best_sharpe = sr;
                best = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "description"));
            }
        }
        if (how && strcmp(how, "validation") == 0)
            CHECK_MSG(best && chosen && strcmp(best, chosen) == 0 &&
                      cJSON_GetArraySize(grid) == (int)json_number(bl, names[k], "trials"),
                      "%s: %s chose %s, the grid's best on validation is %s", what, names[k],
                      chosen ? chosen : "?", best ? best : "?");
        else
            CHECK_MSG(how && strcmp(how, "defaults") == 0 &&
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "why_default")),
                      "%s: %s: chosen_on neither validation nor defaults (with why)", what,
                      names[k]);
        double psr = json_number(bl, names[k], "psr"), dsr = json_number(bl, names[k], "deflated_sharpe");
        CHECK_MSG(psr >= 0 && psr <= 1 && dsr >= 0 && dsr <= psr + 1e-12,
                  "%s: %s: PSR %g, DSR %g", what, names[k], psr, dsr);
    }
}

static void check_eval_json(const char *path, const char *what)
{
    cJSON *j = read_json(path);
    CHECK_MSG(j != NULL, "%s: %s is not JSON", what, path);
    if (!j)
        return;
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(j, "policies");
    const char *names[] = {"greedy", "sampled", "buy_and_hold", "flat", "random", "oracle",
                           "vol_target", "tsmom", "ma_crossover"};
    for (int k = 0; k < 9; k++) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(pol, names[k]);
        CHECK_MSG(cJSON_IsObject(p), "%s: no policies.%s", what, names[k]);
        const char *fields[] = {"cumulative_return", "annualised_return", "sharpe", "sortino",
                                "max_drawdown", "turnover", "trades", "hit_rate", "costs"};
        for (int f = 0; p && f < 9; f++)
            CHECK_MSG(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(p, fields[f])),
                      "%s: policies.%s.%s missing or not a number", what, names[k], fields[f]);
    }
    /* flat never trades: nothing earned, nothing paid */
    CHECK_CLOSE(json_number(pol, "flat", "cumulative_return"), 0.0, 0.0, 0.0);
    CHECK_CLOSE(json_number(pol, "flat", "costs"), 0.0, 0.0, 0.0);
    CHECK_MSG(json_number(j, "bars", NULL) > 0, "%s: bars missing", what);
    check_baselines_json(j, what);
    cJSON_Delete(j);
}

static void test_train_run_and_eval(void)
{
    char run[300], path[512];
    sub_path(run, sizeof run, "run");
    const char *extra[] = {"--iterations", "3", "--checkpoint-every", "2", "--out", run, NULL};
    result r = foxhunt("train", 1, extra);
    CHECK_MSG(r.rc == 0, "train exited %d: %s", r.rc, r.err);
    CHECK_MSG(strstr(r.out, "resolved configuration") != NULL, "no resolved config printed");
    CHECK_MSG(strstr(r.out, "greedy") && strstr(r.out, "buy_and_hold"),
              "no evaluation table printed");
    result_free(&r);

    /* config.json: the resolved configuration */
    file_in(path, sizeof path, run, "config.json");
    cJSON *cfg = read_json(path);
    CHECK_MSG(cfg != NULL, "%s missing or not JSON", path);
    CHECK_CLOSE(json_number(cfg, "run", "episodes"), 8, 0, 0);
    CHECK_CLOSE(json_number(cfg, "run", "steps"), 32, 0, 0);
    CHECK_CLOSE(json_number(cfg, "run", "iterations"), 3, 0, 0);
    CHECK_CLOSE(json_number(cfg, "ppo", "epochs"), 1, 0, 0);
    CHECK_CLOSE(json_number(cfg, "env", "horizon"), 20, 0, 0);
    cJSON_Delete(cfg);

    /* metrics.csv: header + 3 rows, iterations 1..3, as many fields as the header */
    file_in(path, sizeof path, run, "metrics.csv");
    char *csv = fh_read_text(path);
    CHECK_MSG(csv && fh_count_lines(csv) == 4, "metrics.csv: %d lines, expected 4",
              csv ? fh_count_lines(csv) : -1);
    int header_fields = 0;
    if (csv) {
        char *save = NULL, *line = strtok_r(csv, "\n", &save);
        for (int row = 0; line; row++, line = strtok_r(NULL, "\n", &save)) {
            int fields = 1;
            for (char *p = line; *p; p++)
                fields += *p == ',';
            if (row == 0) {
                header_fields = fields;
                CHECK(strncmp(line, "iteration,", 10) == 0);
                CHECK_MSG(strstr(line, "approx_kl") && strstr(line, "entropy") &&
                          strstr(line, "explained_variance") && strstr(line, "turnover") &&
                          strstr(line, "costs") && strstr(line, "barrier_stop_loss") &&
                          strstr(line, "mean_episode_return"),
                          "metrics.csv header lacks a SPEC §6 / issue 5 column: %s", line);
            } else {
                CHECK_MSG(fields == header_fields, "metrics.csv row %d: %d fields, header %d",
                          row, fields, header_fields);
                CHECK_MSG(atoi(line) == row, "metrics.csv row %d is iteration %d", row,
                          atoi(line));
            }
        }
    }
    free(csv);

    /* metrics.jsonl: 3 JSON objects, iteration 1..3, same keys as the CSV header */
    file_in(path, sizeof path, run, "metrics.jsonl");
    char *jl = fh_read_text(path);
    CHECK_MSG(jl && fh_count_lines(jl) == 3, "metrics.jsonl: %d lines, expected 3",
              jl ? fh_count_lines(jl) : -1);
    if (jl) {
        char *save = NULL, *line = strtok_r(jl, "\n", &save);
        for (int row = 1; line; row++, line = strtok_r(NULL, "\n", &save)) {
            cJSON *o = cJSON_Parse(line);
            CHECK_MSG(cJSON_IsObject(o), "metrics.jsonl line %d is not a JSON object", row);
            CHECK_CLOSE(json_number(o, "iteration", NULL), row, 0, 0);
            CHECK_MSG(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "approx_kl")),
                      "metrics.jsonl line %d: approx_kl", row);
            CHECK_MSG(cJSON_GetArraySize(o) == header_fields, "metrics.jsonl line %d: %d keys, "
                      "csv header %d", row, cJSON_GetArraySize(o), header_fields);
            cJSON_Delete(o);
        }
    }
    free(jl);

    /* checkpoints: every 2 (not at the end) and final */
    file_in(path, sizeof path, run, "checkpoint_000002.safetensors");
    CHECK_MSG(fh_file_exists(path), "%s missing", path);
    file_in(path, sizeof path, run, "final.safetensors");
    fh_st_file st;
    fh_error err;
    memset(&st, 0, sizeof st);
    CHECK_MSG(fh_st_read(&st, path, &err) == FH_OK, "final.safetensors: %s", err.message);
    CHECK(fh_st_find(&st, "policy_output.weight") != NULL);
    CHECK(fh_st_find(&st, "value_output.weight") != NULL);
    CHECK(fh_st_find(&st, "fc2.weight") != NULL);
    fh_st_file_free(&st);

    file_in(path, sizeof path, run, "eval.json");
    check_eval_json(path, "train's eval.json");

    /* foxhunt eval on the final checkpoint */
    char ck[512], json[512];
    file_in(ck, sizeof ck, run, "final.safetensors");
    sub_path(json, sizeof json, "eval_out.json");
    const char *eval_args[] = {"--checkpoint", ck, "--device", "cpu", "--json", json, NULL};
    r = foxhunt("eval", 0, eval_args);
    CHECK_MSG(r.rc == 0, "eval exited %d: %s", r.rc, r.err);
    const char *names[] = {"greedy", "sampled", "buy_and_hold", "flat", "random", "oracle",
                           "Sharpe", "vol_target", "tsmom", "ma_crossover", "baselines:"};
    for (int k = 0; k < 11; k++)
        CHECK_MSG(strstr(r.out, names[k]) != NULL, "eval table lacks %s", names[k]);
    result_free(&r);
    check_eval_json(json, "foxhunt eval --json");

    /* eval on a missing, a corrupt and a truncated checkpoint: exit 2, no JSON */
    char missing[512], corrupt[512], truncated[512], none_json[512];
    sub_path(missing, sizeof missing, "no_such.safetensors");
    sub_path(corrupt, sizeof corrupt, "corrupt.safetensors");
    sub_path(truncated, sizeof truncated, "truncated.safetensors");
    sub_path(none_json, sizeof none_json, "must_not_exist.json");
    fh_write_text(corrupt, "this is not a safetensors file at all\n");
    char *whole = NULL;
    FILE *f = fopen(ck, "rb");
    struct stat sb;
    if (f && stat(ck, &sb) == 0 && (whole = malloc((size_t)sb.st_size))) {
        size_t got = fread(whole, 1, (size_t)sb.st_size, f);
        FILE *g = fopen(truncated, "wb");
        if (g) {
            fwrite(whole, 1, got / 2, g);
            fclose(g);
        }
    }
    if (f)
        fclose(f);
    free(whole);
    const char *bad[3] = {missing, corrupt, truncated};
    for (int k = 0; k < 3; k++) {
        const char *args[] = {"--checkpoint", bad[k], "--device", "cpu", "--json", none_json,
                              NULL};
        r = foxhunt("eval", 0, args);
        CHECK_MSG(r.rc == 2, "eval on %s exited %d, expected 2", bad[k], r.rc);
        CHECK_MSG(strstr(r.err, bad[k]) != NULL, "eval's message does not name %s: %s", bad[k],
                  r.err);
        CHECK_MSG(!fh_file_exists(none_json), "eval on %s wrote %s", bad[k], none_json);
        CHECK_MSG(strstr(r.out, "greedy") == NULL, "eval on %s printed a table", bad[k]);
        result_free(&r);
    }
    /* eval without --checkpoint is a usage error */
    r = foxhunt("eval", 0, NULL);
    CHECK_MSG(r.rc == 2 && strstr(r.err, "--checkpoint"), "eval without --checkpoint: rc %d, %s",
              r.rc, r.err);
    result_free(&r);
}

/* ---- --config FILE and flag precedence ---- */

static void test_config_file(void)
{
    char ini[512], run[300], path[512];
    sub_path(ini, sizeof ini, "good.ini");
    sub_path(run, sizeof run, "run_ini");
    fh_write_text(ini,
                  "; a comment\n"
                  "[run]\n"
                  "episodes = 4\n"
                  "steps = 48\n"
                  "iterations = 1\n"
                  "eval_at_end = false\n"
                  "[ppo]\n"
                  "gamma = 0.9\n"
                  "clip = 0.3\n"
                  "[env]\n"
                  "horizon = 17\n"
                  "risk_coef = 0.25\n");
    /* TINY's flags come first; the INI must lose to every flag given */
    const char *extra[] = {"--config", ini, "--steps", "40", "--clip", "0.1", "--out", run, NULL};
    const char *flags_only[] = {"--device", "cpu", "--epochs", "1", "--minibatch", "32",
                                "--synthetic-bars", "2000", "--threads", "1", NULL};
    char *argv_extra[32];
    int n = 0;
    for (int i = 0; flags_only[i]; i++)
        argv_extra[n++] = (char *)flags_only[i];
    for (int i = 0; extra[i]; i++)
        argv_extra[n++] = (char *)extra[i];
    argv_extra[n] = NULL;
    result r = foxhunt("train", 0, (const char *const *)argv_extra);
    CHECK_MSG(r.rc == 0, "train --config exited %d: %s", r.rc, r.err);
    result_free(&r);
    file_in(path, sizeof path, run, "config.json");
    cJSON *cfg = read_json(path);
    CHECK_MSG(cfg != NULL, "%s missing", path);
    CHECK_CLOSE(json_number(cfg, "run", "episodes"), 4, 0, 0);     /* INI */
    CHECK_CLOSE(json_number(cfg, "run", "steps"), 40, 0, 0);       /* flag over INI 48 */
    CHECK_CLOSE(json_number(cfg, "run", "iterations"), 1, 0, 0);   /* INI */
    CHECK_CLOSE(json_number(cfg, "run", "eval_at_end"), 0, 0, 0);  /* INI "false" */
    CHECK_CLOSE(json_number(cfg, "ppo", "gamma"), 0.9, 1e-12, 0);  /* INI */
    CHECK_CLOSE(json_number(cfg, "ppo", "clip"), 0.1, 1e-12, 0);   /* flag over INI 0.3 */
    CHECK_CLOSE(json_number(cfg, "ppo", "epochs"), 1, 0, 0);       /* flag, no INI */
    CHECK_CLOSE(json_number(cfg, "env", "horizon"), 17, 0, 0);     /* INI */
    CHECK_CLOSE(json_number(cfg, "env", "risk_coef"), 0.25, 1e-12, 0);
    cJSON_Delete(cfg);
    file_in(path, sizeof path, run, "eval.json");
    CHECK_MSG(!fh_file_exists(path), "eval_at_end = false still evaluated");
}

/* ---- usage errors: exit 2, the culprit named, no run directory ---- */

static void expect_usage_error(const char *what, const char *const *args, const char *named)
{
    char run[300];
    sub_path(run, sizeof run, "must_not_exist_run");
    const char *argv_extra[FH_PROC_MAX_ARGS];
    int n = 0;
    argv_extra[n++] = "--out"; /* first, so that a flag missing its value comes last */
    argv_extra[n++] = run;
    for (int i = 0; args[i]; i++)
        argv_extra[n++] = args[i];
    argv_extra[n] = NULL;
    result r = foxhunt("train", 1, argv_extra);
    CHECK_MSG(r.rc == 2, "%s: exit %d, expected 2 (stderr: %s)", what, r.rc, r.err);
    CHECK_MSG(strstr(r.err, named) != NULL, "%s: stderr does not name '%s': %s", what, named,
              r.err);
    CHECK_MSG(!fh_file_exists(run), "%s: the run directory was created", what);
    result_free(&r);
}

static void test_usage_errors(void)
{
    const char *a1[] = {"--episodes", "abc", NULL};
    expect_usage_error("non-numeric --episodes", a1, "--episodes");
    const char *a2[] = {"--episodes", "0", NULL};
    expect_usage_error("--episodes 0", a2, "--episodes");
    const char *a3[] = {"--lr", "-1", NULL};
    expect_usage_error("negative --lr", a3, "--lr");
    const char *a4[] = {"--device", "tpu", NULL};
    expect_usage_error("--device tpu", a4, "--device");
    const char *a5[] = {"--no-such-flag", "1", NULL};
    expect_usage_error("unknown flag", a5, "--no-such-flag");
    const char *a6[] = {"--iterations", NULL};
    expect_usage_error("flag without its value", a6, "--iterations");
    const char *a7[] = {"--gamma", "0.9x", NULL};
    expect_usage_error("trailing garbage in --gamma", a7, "--gamma");

    char ini[512], named[600];
    sub_path(ini, sizeof ini, "unknown_key.ini");
    fh_write_text(ini, "[run]\nepisodes = 8\nno_such_key = 3\n");
    snprintf(named, sizeof named, "%s:3", ini);
    const char *b1[] = {"--config", ini, NULL};
    expect_usage_error("unknown INI key", b1, named);

    sub_path(ini, sizeof ini, "bad_value.ini");
    fh_write_text(ini, "[ppo]\nclip = 0.2\nepochs = many\n");
    snprintf(named, sizeof named, "%s:3", ini);
    const char *b2[] = {"--config", ini, NULL};
    expect_usage_error("bad INI value", b2, named);

    sub_path(ini, sizeof ini, "wrong_section.ini");
    fh_write_text(ini, "[env]\nepisodes = 8\n");
    snprintf(named, sizeof named, "%s:2", ini);
    const char *b3[] = {"--config", ini, NULL};
    expect_usage_error("key in the wrong INI section", b3, named);

    sub_path(ini, sizeof ini, "absent.ini");
    const char *b4[] = {"--config", ini, NULL};
    expect_usage_error("missing config file", b4, ini);

    const char *c1[] = {"--resume", "/nonexistent/x.safetensors", NULL};
    expect_usage_error("--resume of a missing checkpoint", c1, "/nonexistent/x.safetensors");
    const char *c2[] = {"--kernel", "fast/nope", NULL};
    expect_usage_error("unknown rollout mapping", c2, "--kernel");

    /* issue 20's frictions: a typo gets a suggestion; ranges print whole numbers in
     * full; a missing data file is reported before any configuration is printed */
    const char *d1[] = {"--iteration", "3", NULL};
    expect_usage_error("a flag's typo", d1, "did you mean --iterations?");
    const char *d2[] = {"--iterations", "0", NULL};
    expect_usage_error("range as whole numbers", d2, "out of range 1..16777216");
    char missing[400];
    sub_path(missing, sizeof missing, "no_such_data.csv");
    const char *d3[] = {"--data", missing, NULL};
    expect_usage_error("missing data file", d3, missing);
    const char *d3run[] = {"--data", missing, "--out", "/tmp/fh-never-made", NULL};
    result r = foxhunt("train", 1, d3run);
    CHECK_MSG(r.out && !strstr(r.out, "resolved configuration"),
              "a missing --data printed the configuration before its error: %s", r.out);
    result_free(&r);
}

/* bench --kernel takes a list of known kernels; anything else is a usage error that
 * names the flag and the bad list, before any collection runs. */
static void test_bench_kernel_list(void)
{
    const char *bad[][3] = {{"--kernel", "fast,warp", NULL},
                            {"--kernel", "fast,,", NULL},
                            {"--kernel", "reference,fast,fast/warp,fast/block,fast/lane,fast", NULL}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const char *args[] = {"--device", "cpu", bad[k][0], bad[k][1], NULL};
        result r = foxhunt("bench", 0, args);
        CHECK_MSG(r.rc == 2, "bench --kernel %s: exit %d, expected 2 (stderr: %s)", bad[k][1], r.rc,
                  r.err);
        CHECK_MSG(strstr(r.err, "--kernel") && strstr(r.err, bad[k][1]),
                  "bench --kernel %s: stderr does not name the flag and the list: %s", bad[k][1],
                  r.err);
        result_free(&r);
    }
}

/* ---- --help: every flag with its default ---- */

static void test_help(void)
{
    const char *args[] = {"--help", NULL};
    result r = foxhunt("train", 0, args);
    CHECK_MSG(r.rc == 0, "train --help exited %d", r.rc);
    fh_train_config def;
    fh_train_config_default(&def);
    int missing = 0;
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        char flag[80], value[FH_CONFIG_STRING_MAX + 32], want[FH_CONFIG_STRING_MAX + 64];
        snprintf(flag, sizeof flag, "\n  --%s ", f->key); /* a flag line of the list */
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        fh_config_field_format(f, &def, value, sizeof value);
        snprintf(want, sizeof want, "(default: %s)", value[0] ? value : "none");
        /* the flag's own line must carry its default */
        const char *at = strstr(r.out, flag);
        const char *eol = at ? strchr(at + 1, '\n') : NULL;
        const char *def_at = at ? strstr(at, want) : NULL;
        if (!at || !def_at || (eol && def_at > eol)) {
            if (!missing++)
                fprintf(stderr, "--help: %s%s not found on its line\n", flag, want);
        }
    }
    CHECK_MSG(missing == 0, "--help: %d of %d flags missing or without their default", missing,
              fh_train_config_n_fields);
    CHECK(strstr(r.out, "\n  --config FILE") != NULL);
    CHECK(strstr(r.out, "--help") != NULL);
    CHECK(fh_train_config_n_fields >= 40);
    result_free(&r);
    r = foxhunt("eval", 0, args);
    CHECK_MSG(r.rc == 0 && strstr(r.out, "--checkpoint") && strstr(r.out, "--json") &&
              strstr(r.out, "--data") && strstr(r.out, "--device"),
              "eval --help (rc %d) lacks a SPEC §10 flag", r.rc);
    result_free(&r);
}

/* ---- Ctrl-C ---- */

static int csv_rows(const char *path)
{
    char *t = fh_read_text(path);
    int n = t ? fh_count_lines(t) - 1 : -1;
    free(t);
    return n;
}

static void test_sigint_and_resume(void)
{
    char run[300], csv[512], ck[512], path[512], out[512], errp[512];
    sub_path(run, sizeof run, "run_sigint");
    file_in(csv, sizeof csv, run, "metrics.csv");
    sub_path(out, sizeof out, "sigint.out");
    sub_path(errp, sizeof errp, "sigint.err");
    char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    argv[n++] = (char *)"train";
    for (int i = 0; TINY[i]; i++)
        argv[n++] = (char *)TINY[i];
    const char *extra[] = {"--iterations", "100000", "--checkpoint-every", "0", "--out", run,
                           NULL};
    for (int i = 0; extra[i]; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    pid_t pid = fh_proc_spawn(argv, out, errp);
    CHECK(pid > 0);
    if (pid <= 0)
        return;
    double t0 = fh_now_seconds();
    while (csv_rows(csv) < 1 && fh_now_seconds() - t0 < 60.0 && waitpid(pid, NULL, WNOHANG) == 0)
        usleep(20000);
    int started = csv_rows(csv) >= 1;
    CHECK_MSG(started, "no metrics row within 60 s");
    kill(pid, SIGINT);
    int rc = fh_proc_wait(pid);
    CHECK_MSG(rc == 130, "train after SIGINT exited %d (want 130)", rc);
    file_in(ck, sizeof ck, run, "interrupted.safetensors");
    CHECK_MSG(fh_file_exists(ck), "no %s after SIGINT", ck);
    file_in(path, sizeof path, run, "final.safetensors");
    CHECK_MSG(!fh_file_exists(path), "final.safetensors written by an interrupted run");
    char *text = fh_read_text(out);
    CHECK_MSG(text && strstr(text, "interrupted"), "no 'interrupted' message on stdout");
    free(text);
    int done = csv_rows(csv);
    CHECK_MSG(done >= 1 && done < 100000, "%d rows after SIGINT", done);
    if (!started || rc != 130 || done < 1)
        return;

    /* resume it for one more iteration, in place */
    char iters[32];
    snprintf(iters, sizeof iters, "%d", done + 1);
    const char *resume[] = {"--resume", ck, "--iterations", iters, "--eval-at-end", "0",
                            "--out", run, NULL};
    result r = foxhunt("train", 0, resume);
    CHECK_MSG(r.rc == 0, "resume from interrupted.safetensors exited %d: %s", r.rc, r.err);
    CHECK_MSG(strstr(r.out, "resumed from") != NULL, "no 'resumed from' line");
    result_free(&r);
    CHECK_MSG(csv_rows(csv) == done + 1, "after resume: %d rows, expected %d", csv_rows(csv),
              done + 1);
    CHECK_MSG(fh_file_exists(path), "no final.safetensors after the resumed run");
    file_in(path, sizeof path, run, "config.json");
    cJSON *cfg = read_json(path);
    CHECK_CLOSE(json_number(cfg, "run", "episodes"), 8, 0, 0); /* from the checkpoint */
    CHECK_CLOSE(json_number(cfg, "run", "iterations"), done + 1, 0, 0);
    cJSON_Delete(cfg);
}

/* Resuming a checkpoint on data its episodes no longer fit (a shorter synthetic
 * market) is a usage error naming the checkpoint, not an out-of-bounds read. */
static void test_resume_on_changed_data(void)
{
    char run[300], ck[400];
    sub_path(run, sizeof run, "changed_data_run");
    const char *first[] = {"--out", run, "--iterations", "1", NULL};
    result r = foxhunt("train", 1, first);
    CHECK_MSG(r.rc == 0, "first run exit %d: %s", r.rc, r.err);
    result_free(&r);
    file_in(ck, sizeof ck, run, "final.safetensors");
    /* the tiny run's episodes sit anywhere in a 1,440-bar training split (2,000 bars);
     * 1,000 bars leave a 640-bar split, so most of them are outside it */
    const char *again[] = {"--resume", ck, "--iterations", "2", "--synthetic-bars", "1000", NULL};
    r = foxhunt("train", 0, again);
    CHECK_MSG(r.rc == 2, "resume on shorter data exited %d (want 2): %s", r.rc, r.err);
    CHECK_MSG(strstr(r.err, "final.safetensors") &&
                  (strstr(r.err, "data changed") || strstr(r.err, "other data")),
              "message does not name the checkpoint and the cause: %s", r.err);
    result_free(&r);
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_cli_train")) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = fh_now_seconds();
    test_help();
    test_usage_errors();
    test_bench_kernel_list();
    test_config_file();
    test_train_run_and_eval();
    test_sigint_and_resume();
    test_resume_on_changed_data();
    printf("took %.1f s\n", fh_now_seconds() - t0);
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "outputs kept in %s\n", g_dir);
    return fh_test_finish();
}
