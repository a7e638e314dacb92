/* test_multiasset.c — training on several assets at once (issue 34; run_data.h):
 *  - data: "a.csv,b.csv" loads each asset exactly as it loads alone (features and the
 *    normalisation fitted on its own training split, compared bit for bit with a
 *    one-asset load), and the training market is their training splits end to end with
 *    the segment ends at the split lengths;
 *  - bad input: a missing file, an empty item (",," or a trailing comma), one asset twice
 *    are clear errors naming the file or the item; walkforward refuses several assets;
 *  - end to end on the CPU with two synthetic CSVs: train writes validation.csv with
 *    each asset's Sharpe and PSR, whose mean (within 1e-12) is the row's Sharpe and PSR,
 *    and eval_ASSET.json per asset; eval of best.safetensors prints one table per asset
 *    and writes NAME_ASSET.json equal, in the greedy Sharpe, to what train wrote (the
 *    same model and data: bit for bit). */
#include "test_proc.h" /* first: it defines _GNU_SOURCE */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "foxhunt/run_data.h"
#include "test_util.h"

/* n synthetic hourly bars of seed `seed` as a CSV at path. */
static int write_csv(const char *path, uint64_t seed, size_t n)
{
    fh_synth_config sc;
    fh_synth_config_default(&sc);
    sc.seed = seed;
    sc.n_bars = n;
    fh_bars bars;
    fh_error err;
    if (fh_synth_generate(&sc, &bars, NULL, &err) != FH_OK)
        return 0;
    FILE *f = fopen(path, "w");
    if (!f) {
        fh_bars_free(&bars);
        return 0;
    }
    fprintf(f, "timestamp,open,high,low,close,volume\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%lld,%.17g,%.17g,%.17g,%.17g,%.17g\n", (long long)bars.time[i],
                bars.open[i], bars.high[i], bars.low[i], bars.close[i], bars.volume[i]);
    fh_bars_free(&bars);
    return fclose(f) == 0;
}

static void test_load(const char *a, const char *b) /* paths under 200 bytes */
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    cfg.validation_fraction = 0.1;
    snprintf(cfg.data, sizeof cfg.data, "%s,%s", a, b);
    fh_run_data both, alone[2];
    fh_error err;
    CHECK_MSG(fh_run_data_load(&both, &cfg, NULL, &err) == FH_OK, "load: %s", err.message);
    CHECK(both.n_assets == 2 && both.assets != NULL);
    const char *paths[2] = {a, b};
    size_t at = 0;
    for (int k = 0; k < 2 && both.assets; k++) {
        snprintf(cfg.data, sizeof cfg.data, "%s", paths[k]);
        CHECK(fh_run_data_load(&alone[k], &cfg, NULL, &err) == FH_OK);
        const fh_market *got = &both.assets[k].market, *want = &alone[k].market;
        CHECK_MSG(memcmp(&got->norm, &want->norm, sizeof got->norm) == 0,
                  "asset %d: normalisation differs from fitting it alone", k);
        CHECK_MSG(got->n == want->n &&
                  memcmp(got->features, want->features,
                         got->n * FH_N_MARKET_FEATURES * sizeof(float)) == 0,
                  "asset %d: features differ from loading it alone", k);
        fh_market_view tv = fh_market_view_of(want, FH_SPLIT_TRAIN);
        CHECK_MSG(memcmp(both.market.features + at * FH_N_MARKET_FEATURES, tv.features,
                         tv.n * FH_N_MARKET_FEATURES * sizeof(float)) == 0 &&
                  memcmp(both.market.close + at, tv.close, tv.n * sizeof(float)) == 0,
                  "asset %d: the training market's segment is not its training split", k);
        at += tv.n;
        CHECK_MSG(both.segment_ends[k] == (int)at, "segment %d ends at %d, expected %zu", k,
                  both.segment_ends[k], at);
        fh_run_data_free(&alone[k]);
    }
    CHECK(both.market.n == at);
    fh_market_view view;
    fh_env_market market;
    CHECK(fh_run_data_train_split(&both, &view, &market, &err) == FH_OK &&
          market.n_segments == 2 && market.segment_ends[1] == market.n_bars);
    char name[64];
    fh_run_data_asset_name(&both.assets[1], name, sizeof name);
    CHECK_MSG(strcmp(name, "asset_b") == 0, "asset name %s", name);
    fh_run_data_free(&both);
}

static void expect_load_error(const char *list, const char *want)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.data, sizeof cfg.data, "%s", list);
    fh_run_data d;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_run_data_load(&d, &cfg, NULL, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, want) != NULL,
              "--data %s: status %d, message \"%s\" lacks \"%s\"", list, st, err.message, want);
    if (st == FH_OK)
        fh_run_data_free(&d);
}

static double json_greedy_sharpe(const char *path)
{
    char *text = fh_read_text(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    double s = NAN;
    const cJSON *pol = root ? cJSON_GetObjectItem(root, "policies") : NULL;
    const cJSON *g = pol ? cJSON_GetObjectItem(pol, "greedy") : NULL;
    const cJSON *v = g ? cJSON_GetObjectItem(g, "sharpe") : NULL;
    if (cJSON_IsNumber(v))
        s = v->valuedouble;
    cJSON_Delete(root);
    return s;
}

/* validation.csv: every row's mean columns against its per-asset columns */
static void check_validation_csv(const char *path)
{
    char *text = fh_read_text(path);
    CHECK_MSG(text != NULL, "no %s", path);
    if (!text)
        return;
    CHECK_MSG(strstr(text, ",sharpe_asset_a,psr_asset_a,sharpe_asset_b,psr_asset_b\n") != NULL,
              "validation.csv header lacks the per-asset columns: %.200s", text);
    int rows = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (rows++ == 0)
            continue;
        double v[14];
        int n = 0;
        for (char *p = line; n < 14; n++) {
            v[n] = strtod(p, &p);
            if (*p != ',')
                break;
            p++;
        }
        CHECK_MSG(n == 13, "row %d has %d fields, expected 14", rows - 1, n + 1);
        if (n != 13 || !isfinite(v[10]) || !isfinite(v[12]))
            continue;
        CHECK_CLOSE(v[2], (v[10] + v[12]) / 2.0, 1e-12, 1e-12); /* sharpe: the mean */
        CHECK_CLOSE(v[8], (v[11] + v[13]) / 2.0, 1e-12, 1e-12); /* psr: the mean */
    }
    CHECK_MSG(rows == 3, "validation.csv: %d lines, expected header + 2", rows);
    free(text);
}

static void test_end_to_end(const char *dir, const char *a, const char *b)
{
    char list[1100], run[600], path[700], best[700], json[700];
    snprintf(list, sizeof list, "%s,%s", a, b);
    snprintf(run, sizeof run, "%s/run", dir);
    char *train[] = {"train", "--data", list, "--device", "cpu", "--episodes", "16",
                     "--steps", "32", "--iterations", "2", "--eval-every", "1",
                     "--validation-fraction", "0.1", "--epochs", "1", "--minibatch", "128",
                     "--threads", "1", "--out", run, NULL};
    char *out = NULL, *err = NULL;
    int rc = fh_run_foxhunt(dir, "train", train, &out, &err);
    CHECK_MSG(rc == 0, "train rc %d: %s", rc, err ? err : "");
    CHECK_MSG(out && strstr(out, "evaluation of ") && strstr(out, "asset_b.csv"),
              "train's output lacks a table per asset");
    free(out);
    free(err);
    snprintf(path, sizeof path, "%s/validation.csv", run);
    check_validation_csv(path);
    snprintf(best, sizeof best, "%s/best.safetensors", run);
    snprintf(json, sizeof json, "%s/ev.json", dir);
    char *eval[] = {"eval", "--checkpoint", best, "--json", json, NULL};
    rc = fh_run_foxhunt(dir, "eval", eval, &out, &err);
    CHECK_MSG(rc == 0, "eval rc %d: %s", rc, err ? err : "");
    CHECK_MSG(out && strstr(out, "each normalised on its own training split"),
              "eval does not say how the assets are normalised");
    free(out);
    free(err);
    const char *names[2] = {"asset_a", "asset_b"};
    for (int k = 0; k < 2; k++) {
        char mine[800], trains[800];
        snprintf(mine, sizeof mine, "%s/ev_%s.json", dir, names[k]);
        snprintf(trains, sizeof trains, "%s/eval_%s.json", run, names[k]);
        double s1 = json_greedy_sharpe(mine), s2 = json_greedy_sharpe(trains);
        CHECK_MSG(isfinite(s1) && s1 == s2, "%s: eval's greedy Sharpe %.17g, train's %.17g",
                  names[k], s1, s2);
    }
    char wf_out[700];
    snprintf(wf_out, sizeof wf_out, "%s/wf", dir);
    char *wf[] = {"walkforward", "--data", list, "--device", "cpu", "--out", wf_out, NULL};
    rc = fh_run_foxhunt(dir, "walkforward", wf, NULL, &err);
    CHECK_MSG(rc == 2 && err && strstr(err, "several assets"),
              "walkforward on two assets: rc %d, %s", rc, err ? err : "");
    free(err);
}

int main(void)
{
    char dir[128], a[200], b[200], list[450];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh-multiasset"));
    snprintf(a, sizeof a, "%s/asset_a.csv", dir);
    snprintf(b, sizeof b, "%s/asset_b.csv", dir);
    CHECK(write_csv(a, 11, 3000) && write_csv(b, 12, 2200));
    test_load(a, b);
    snprintf(list, sizeof list, "%s,%s/missing.csv", a, dir);
    expect_load_error(list, "missing.csv");
    snprintf(list, sizeof list, "%s,,%s", a, b);
    expect_load_error(list, "item 2 of the comma-separated list is empty");
    snprintf(list, sizeof list, "%s,", a);
    expect_load_error(list, "item 2 of the comma-separated list is empty");
    snprintf(list, sizeof list, "%s,%s", a, a);
    expect_load_error(list, "are both asset \"asset_a\"");
    test_end_to_end(dir, a, b);
    fh_test_tidy(dir);
    return fh_test_finish();
}
