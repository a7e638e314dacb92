/* test_data_bar_moves.c — implausible one-bar moves (issue 19 item 7, data.h
 * fh_bars_check_moves): a 1e6x spike in a CSV, in the test split or only in a bar's
 * high, is refused by default naming FILE:LINE and how to accept it
 * (max_bar_move_sigmas = 0, --max-bar-move-sigmas); accepted with the check off; the
 * real data (../shared/data, skipped when absent) and the synthetic market pass the
 * default, and their largest moves are printed (docs/FEATURES.md quotes them). */
#include "data_fixtures.h"
#include "foxhunt/data.h"
#include "foxhunt/format.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define N_ROWS 350

/* A valid kline file of N_ROWS bars; row `bad` (when >= 0) has its high (and close,
 * when close_too) multiplied by factor. Returns the row's 1-based line. */
static int write_spiky(const char *path, int bad, double factor, int close_too)
{
    fx_buf b = {0};
    fx_printf(&b, "timestamp,open,high,low,close,volume\n");
    for (int i = 0; i < N_ROWS; i++) {
        fx_bar x = fx_bar_at(i);
        if (i == bad) {
            x.h *= factor;
            if (close_too)
                x.c *= factor;
        }
        char ts[32];
        fx_iso(x.t, ts, sizeof ts, ' ');
        fx_printf(&b, "%s,%.6f,%.6f,%.6f,%.6f,%.3f\n", ts, x.o, x.h, x.l, x.c, x.v);
    }
    fx_write(path, b.s);
    free(b.s);
    return bad + 2;
}

static fh_status load(const char *path, double max_sigmas, fh_error *err)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.data, sizeof cfg.data, "%s", path);
    cfg.max_bar_move_sigmas = max_sigmas;
    /* 350-bar files: the old layout (train 0.8, test the rest, no validation, no gap) */
    cfg.train_fraction = 0.8;
    cfg.validation_fraction = 0.0;
    cfg.split_gap = 0;
    fh_run_data d;
    fh_error_clear(err);
    fh_status st = fh_run_data_load(&d, &cfg, NULL, err);
    if (st == FH_OK)
        fh_run_data_free(&d);
    return st;
}

static void expect_refused(const char *what, const char *path, int line, const char *price)
{
    fh_error err;
    fh_status st = load(path, FH_DEFAULT_MAX_BAR_MOVE_SIGMAS, &err);
    char where[600];
    snprintf(where, sizeof where, "%s:%d: implausible move", path, line);
    CHECK_MSG(st == FH_ERR_INPUT, "%s: status %d, expected a refusal", what, (int)st);
    CHECK_MSG(strncmp(err.message, where, strlen(where)) == 0,
              "%s: message '%s' should start with '%s'", what, err.message, where);
    CHECK_MSG(strstr(err.message, price) && strstr(err.message, "max_bar_move_sigmas = 0") &&
                  strstr(err.message, "--max-bar-move-sigmas"),
              "%s: message '%s' lacks the price '%s' or how to accept it", what, err.message,
              price);
    printf("%s: %s\n", what, err.message);
    st = load(path, 0.0, &err);
    CHECK_MSG(st == FH_OK, "%s: max_bar_move_sigmas = 0 still refuses: %s", what, err.message);
}

static void test_spikes(void)
{
    char path[512];
    fx_path(path, sizeof path, "clean.csv");
    write_spiky(path, -1, 1.0, 0);
    fh_error err;
    CHECK_MSG(load(path, FH_DEFAULT_MAX_BAR_MOVE_SIGMAS, &err) == FH_OK, "clean file: %s",
              err.message);

    /* in the test split (train_fraction 0.8 of the 150 bars after the warm-up) */
    fx_path(path, sizeof path, "spike_test_split.csv");
    int line = write_spiky(path, 340, 1e6, 1);
    expect_refused("1e6x spike in the test split", path, line, "close");
    /* a wick: only the high */
    fx_path(path, sizeof path, "spike_high.csv");
    line = write_spiky(path, 120, 1e6, 0);
    expect_refused("1e6x high", path, line, "high");
    /* a misplaced decimal point: x10, early in the file */
    fx_path(path, sizeof path, "decimal.csv");
    line = write_spiky(path, 30, 10.0, 1);
    expect_refused("x10 close", path, line, "close");

    /* the CLI: train refuses before doing anything, exit 2, with the message */
    fx_path(path, sizeof path, "spike_test_split.csv");
    char out[512], errp[512], args[2048];
    fx_path(out, sizeof out, "run");
    fx_path(errp, sizeof errp, "stderr.txt");
    snprintf(args, sizeof args, "train --data '%s' --out '%s' --device cpu", path, out);
    int rc = fx_run_foxhunt(args, errp);
    char *msg = fx_read(errp);
    CHECK_MSG(rc == 2, "foxhunt train on a spike: exit %d, expected 2 (stderr: %s)", rc,
              msg ? msg : "");
    char where[600];
    snprintf(where, sizeof where, "%s:342: implausible move", path);
    CHECK_MSG(msg && strstr(msg, where), "foxhunt train: stderr lacks '%s': %s", where,
              msg ? msg : "(none)");
    free(msg);
}

static void test_check_function(void)
{
    /* by hand: no lines, a source description; a flat series is never refused */
    fh_bars b;
    fh_error err;
    CHECK(fh_bars_alloc(&b, 400, &err) == FH_OK);
    for (size_t i = 0; i < b.n; i++) {
        b.time[i] = (int64_t)i * 60;
        b.open[i] = b.high[i] = b.low[i] = b.close[i] = 5.0;
        b.volume[i] = 1.0;
    }
    CHECK(fh_bars_check_moves(&b, 1.0, "flat", &err) == FH_OK);
    CHECK(fh_bars_largest_move(&b, NULL) == 0.0);
    /* the fixture's wavy prices, then 100 bars that do not move, then an ordinary 1%
     * move: the floor (a quarter of the series' scale) keeps it ordinary, though the
     * EWMA alone has decayed to nearly 0 */
    double k = 1.0; /* after bar 300, the fixture scaled to continue from it */
    for (size_t i = 0; i < b.n; i++) {
        fx_bar x = fx_bar_at((int)i);
        b.open[i] = k * x.o, b.high[i] = k * x.h, b.low[i] = k * x.l, b.close[i] = k * x.c;
        if (i >= 200 && i < 300)
            b.open[i] = b.high[i] = b.low[i] = b.close[i] = b.close[199];
        if (i == 300) {
            b.open[i] = b.low[i] = b.close[299];
            b.close[i] = b.high[i] = 1.01 * b.close[299];
            k = b.close[i] / x.c;
        }
    }
    size_t at = 0;
    double m = fh_bars_largest_move(&b, &at);
    printf("a 1%% move after 100 still bars: largest move %.2f sigmas (bar %zu)\n", m, at);
    CHECK_MSG(m < 10.0, "an ordinary move after a quiet stretch measures %.1f sigmas", m);
    b.close[300] *= 1e6;
    b.high[300] = b.close[300];
    CHECK(fh_bars_check_moves(&b, 100.0, "by hand", &err) == FH_ERR_INPUT);
    CHECK_MSG(strncmp(err.message, "by hand: bar 300: implausible move", 34) == 0, "%s",
              err.message);
    CHECK(fh_bars_check_moves(&b, 0.0, "by hand", &err) == FH_OK);
    fh_bars_free(&b);
}

static void test_real_data(void)
{
    const char *files[2] = {"spy_daily.csv", "btcusdt_1h.csv"};
    int found = 0;
    for (int k = 0; k < 2; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FH_SHARED_DATA_DIR, files[k]);
        if (!fx_exists(path)) {
            printf("note: %s absent, not checked\n", path);
            continue;
        }
        found++;
        fh_bars b;
        fh_error err;
        CHECK_MSG(fh_bars_load_csv(path, &b, &err) == FH_OK, "%s", err.message);
        size_t at = 0;
        double m = fh_bars_largest_move(&b, &at);
        char when[32];
        fh_time_format(b.time[at], when, sizeof when);
        printf("%s: largest one-bar move %.1f sigmas (line %zu, %s)\n", files[k], m,
               b.line ? b.line[at] : 0, when);
        CHECK_MSG(m < FH_DEFAULT_MAX_BAR_MOVE_SIGMAS / 2,
                  "%s: %.1f sigmas leaves less than 2x room under the default %g", files[k], m,
                  FH_DEFAULT_MAX_BAR_MOVE_SIGMAS);
        fh_bars_free(&b);
        CHECK_MSG(load(path, FH_DEFAULT_MAX_BAR_MOVE_SIGMAS, &err) == FH_OK, "%s: %s",
                  files[k], err.message);
    }
    if (!found)
        printf("note: no real data beside the project; only the synthetic market checked\n");
}

static void test_synthetic(void)
{
    const uint64_t seeds[] = {42, 1, 2, 3, 7, 123456789};
    double worst = 0.0;
    for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
        fh_synth_config sc;
        fh_synth_config_default(&sc);
        sc.seed = seeds[k];
        fh_bars b;
        fh_error err;
        CHECK_MSG(fh_synth_generate(&sc, &b, NULL, &err) == FH_OK, "%s", err.message);
        double m = fh_bars_largest_move(&b, NULL);
        worst = m > worst ? m : worst;
        CHECK_MSG(m < FH_DEFAULT_MAX_BAR_MOVE_SIGMAS / 2,
                  "synthetic seed %llu: %.1f sigmas", (unsigned long long)seeds[k], m);
        fh_bars_free(&b);
    }
    printf("synthetic market (%zu seeds, 20000 bars): largest move %.1f sigmas\n",
           sizeof seeds / sizeof seeds[0], worst);
    /* through the run's loader with the defaults, as train and eval load it */
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_run_data d;
    fh_error err;
    CHECK_MSG(fh_run_data_load(&d, &cfg, NULL, &err) == FH_OK, "%s", err.message);
    fh_run_data_free(&d);
}

int main(void)
{
    fx_make_dir();
    test_check_function();
    test_spikes();
    test_real_data();
    test_synthetic();
    fx_cleanup();
    return fh_test_finish();
}
