/* test_data_csv_formats.c — the file shapes SPEC §2 says must load as they come:
 * kline style with ISO date-times (the reference), CRLF line ends, no final newline,
 * descending order (reversed, flagged, and the CLI says so), Unix seconds and
 * milliseconds, ISO 'T'/'Z' date-times, Yahoo style with dates, mixed-case headers,
 * columns in another order and an Adj Close that must not replace Close, a UTF-8 BOM
 * and blank lines, gaps in time and zero volume, and exchange kline dumps with no
 * header row (Binance's bulk files: twelve numeric columns, open time in milliseconds,
 * or microseconds as spot files have it since 2025). Every variant must give exactly
 * the generated bars. */
#include "data_fixtures.h"
#include "foxhunt/data.h"
#include "test_util.h"

#define N 320

typedef enum { V_PLAIN, V_CRLF, V_NO_FINAL_NL, V_DESC, V_UNIX, V_UNIX_MS, V_ISO_TZ,
               V_PERMUTED, V_BOM_BLANK, V_KLINE_MS, V_KLINE_US, V_COUNT } variant;
static const char *const VARIANT_NAMES[V_COUNT] = {
    "plain", "crlf", "no_final_newline", "descending", "unix_seconds", "unix_ms",
    "iso_T_Z", "permuted_mixed_case_adj_close", "bom_blank_lines", "headerless_kline_ms",
    "headerless_kline_us"};

static char *make_file(variant v)
{
    fx_buf b = {0};
    const char *nl = v == V_CRLF ? "\r\n" : "\n";
    if (v == V_BOM_BLANK)
        fx_printf(&b, "\xEF\xBB\xBF\n");
    int headerless = v == V_KLINE_MS || v == V_KLINE_US;
    if (v == V_PERMUTED)
        fx_printf(&b, "Close,VOLUME,\"Adj Close\",Low,DateTime,High,oPEN,Trades%s", nl);
    else if (!headerless)
        fx_printf(&b, "timestamp,open,high,low,close,volume%s", nl);
    for (int k = 0; k < N; k++) {
        int i = v == V_DESC ? N - 1 - k : k;
        fx_bar x = fx_bar_at(i);
        char ts[40];
        if (v == V_UNIX)
            snprintf(ts, sizeof ts, "%lld", (long long)x.t);
        else if (v == V_UNIX_MS)
            snprintf(ts, sizeof ts, "%lld000", (long long)x.t);
        else if (v == V_ISO_TZ) {
            fx_iso(x.t, ts, sizeof ts, 'T');
            strcat(ts, "Z");
        } else
            fx_iso(x.t, ts, sizeof ts, ' ');
        if (headerless) { /* open time, OHLCV, close time, quote volume, trades, taker
                             buy base and quote volumes, ignore */
            const char *scale = v == V_KLINE_US ? "000000" : "000";
            fx_printf(&b, "%lld%s,%.6f,%.6f,%.6f,%.6f,%.3f,%lld%s,%.4f,%d,%.3f,%.4f,0",
                      (long long)x.t, scale, x.o, x.h, x.l, x.c, x.v, (long long)x.t + 3599,
                      v == V_KLINE_US ? "999999" : "999", x.v * x.c, 100 + i, x.v * 0.5,
                      x.v * x.c * 0.5);
        } else if (v == V_PERMUTED)
            fx_printf(&b, "%.6f,%.3f,%.6f,%.6f,%s,%.6f,%.6f,%d", x.c, x.v, x.c * 0.5, x.l, ts,
                      x.h, x.o, i);
        else
            fx_printf(&b, "%s,%.6f,%.6f,%.6f,%.6f,%.3f", ts, x.o, x.h, x.l, x.c, x.v);
        if (!(v == V_NO_FINAL_NL && k == N - 1))
            fx_printf(&b, "%s", nl);
        if (v == V_BOM_BLANK && k % 100 == 0)
            fx_printf(&b, "\n  \n");
    }
    return b.s;
}

/* The bars the text was generated from, after the same %.6f / %.3f rounding. */
static int same_as_generated(const fh_bars *bars, const char *what)
{
    if (bars->n != N) {
        fprintf(stderr, "%s: %zu bars, expected %d\n", what, bars->n, N);
        return 0;
    }
    for (int i = 0; i < N; i++) {
        fx_bar x = fx_bar_at(i);
        char s[5][64];
        snprintf(s[0], 64, "%.6f", x.o);
        snprintf(s[1], 64, "%.6f", x.h);
        snprintf(s[2], 64, "%.6f", x.l);
        snprintf(s[3], 64, "%.6f", x.c);
        snprintf(s[4], 64, "%.3f", x.v);
        if (bars->time[i] != x.t || bars->open[i] != atof(s[0]) ||
            bars->high[i] != atof(s[1]) || bars->low[i] != atof(s[2]) ||
            bars->close[i] != atof(s[3]) || bars->volume[i] != atof(s[4])) {
            fprintf(stderr, "%s: bar %d differs (time %lld vs %lld, close %.6f vs %s)\n", what,
                    i, (long long)bars->time[i], (long long)x.t, bars->close[i], s[3]);
            return 0;
        }
    }
    return 1;
}

static void test_variants(void)
{
    for (int v = 0; v < V_COUNT; v++) {
        char path[512];
        fx_path(path, sizeof path, "variant.csv");
        char *text = make_file((variant)v);
        fx_write(path, text);
        free(text);
        fh_bars bars;
        fh_error err;
        fh_error_clear(&err);
        fh_status st = fh_bars_load_csv(path, &bars, &err);
        CHECK_MSG(st == FH_OK, "%s: %s", VARIANT_NAMES[v], err.message);
        if (st != FH_OK)
            continue;
        CHECK_MSG(same_as_generated(&bars, VARIANT_NAMES[v]), "%s", VARIANT_NAMES[v]);
        CHECK_MSG(bars.reversed == (v == V_DESC), "%s: reversed flag %d", VARIANT_NAMES[v],
                  bars.reversed);
        CHECK_MSG(bars.headerless_klines == (v == V_KLINE_MS || v == V_KLINE_US),
                  "%s: headerless flag %d", VARIANT_NAMES[v], bars.headerless_klines);
        fh_bars_free(&bars);
    }
}

static void test_descending_cli(void)
{
    char path[512], out[512], errp[512], args[1200];
    fx_path(path, sizeof path, "desc.csv");
    fx_path(out, sizeof out, "desc_features.csv");
    fx_path(errp, sizeof errp, "desc_stderr.txt");
    char *text = make_file(V_DESC);
    fx_write(path, text);
    free(text);
    snprintf(args, sizeof args, "features --data '%s' --out '%s'", path, out);
    int rc = fx_run_foxhunt(args, errp);
    CHECK_MSG(rc == 0, "foxhunt features on a descending file: exit %d", rc);
    char *msg = fx_read(errp);
    CHECK_MSG(msg && strstr(msg, "descending") && strstr(msg, "reversed"),
              "no reversal notice on stderr: '%s'", msg ? msg : "(none)");
    free(msg);
    char *csv = fx_read(out);
    CHECK_MSG(csv != NULL, "%s not written", out);
    if (csv) {
        size_t lines = 0;
        for (char *p = csv; *p; p++)
            lines += *p == '\n';
        CHECK_MSG(lines == 1 + (N - FH_FEATURE_WARMUP), "%zu lines", lines);
        CHECK(strncmp(csv, "time,ret_1,", 11) == 0);
        /* first data row is bar 200, in ascending order */
        char ts[32];
        fx_iso(fx_bar_at(FH_FEATURE_WARMUP).t, ts, sizeof ts, ' ');
        char *row1 = strchr(csv, '\n') + 1;
        CHECK_MSG(strncmp(row1, ts, strlen(ts)) == 0, "first row '%.30s', expected %s", row1,
                  ts);
    }
    free(csv);
}

static void test_yahoo_dates_gaps_zero_volume(void)
{
    /* daily bars with weekends missing (gaps), some zero volumes, Yahoo header */
    fx_buf b = {0};
    fx_printf(&b, "Date,Open,High,Low,Close,Adj Close,Volume\n");
    int64_t t = 1577836800; /* 2020-01-01, a Wednesday */
    int n = 0;
    int64_t times[600];
    for (int i = 0; n < 400; i++, t += 86400) {
        int dow = (int)(((t / 86400) + 3) % 7); /* 0 Monday */
        if (dow >= 5)
            continue;
        fx_bar x = fx_bar_at(i);
        char ts[40];
        fx_iso(t, ts, sizeof ts, ' ');
        ts[10] = '\0';
        fx_printf(&b, "%s,%.6f,%.6f,%.6f,%.6f,%.6f,%d\n", ts, x.o, x.h, x.l, x.c, x.c * 0.9,
                  n % 7 == 0 ? 0 : 1000 + n);
        times[n++] = t;
    }
    char path[512];
    fx_path(path, sizeof path, "yahoo.csv");
    fx_write(path, b.s);
    free(b.s);
    fh_bars bars;
    fh_error err;
    fh_status st = fh_bars_load_csv(path, &bars, &err);
    CHECK_MSG(st == FH_OK, "%s", err.message);
    if (st != FH_OK)
        return;
    CHECK(bars.n == 400);
    int times_ok = 1;
    for (int i = 0; i < n; i++)
        times_ok &= bars.time[i] == times[i];
    CHECK(times_ok);
    CHECK(bars.volume[0] == 0.0 && bars.volume[1] == 1001.0);
    CHECK(fh_bars_interval_seconds(&bars) == 86400.0);
    /* features stay finite with zero volumes and weekend gaps */
    float *f = malloc(bars.n * FH_N_MARKET_FEATURES * sizeof *f);
    CHECK(fh_features_compute(&bars, f, NULL, &err) == FH_OK);
    size_t bad = 0;
    for (size_t k = 0; k < bars.n * FH_N_MARKET_FEATURES; k++)
        bad += !isfinite(f[k]);
    CHECK_MSG(bad == 0, "%zu non-finite features", bad);
    free(f);
    fh_bars_free(&bars);
}

int main(void)
{
    fx_make_dir();
    test_variants();
    test_descending_cli();
    test_yahoo_dates_gaps_zero_volume();
    fx_cleanup();
    return fh_test_finish();
}
