/* test_data_csv_header.c — the first line of a CSV (issue 32 item 1) and gaps in time
 * (issue 32 item 7).
 *
 * bcd20a5 freed the file's buffer before its error message quoted the header from it:
 * a header without a needed column printed freed memory and, on a file over ~128 KiB
 * (glibc returns such a buffer to the system at once), crashed with SIGSEGV. Each case
 * here is a file of ~4,000 rows (~200 KiB) so that the old code crashes rather than
 * quietly quoting stale bytes; `foxhunt features` must exit 2 with a message that
 * quotes the real header (non-printable bytes escaped), and write nothing. The same
 * binary runs under valgrind memcheck in the suite (memcheck_data_csv_header), which
 * sees what libc's vsnprintf reads.
 *
 * A headerless exchange kline dump (what Binance's bulk downloads are) loads, flagged,
 * and the CLI says how it read it; a numeric first line that is not a kline row is
 * refused with what the header must be.
 *
 * Gaps: an hourly market with 500 bars cut out in five holes reports 5 gaps, 500 bars
 * missing and the longest (101 h, 4.2 days) with its start, and with 500 single hours cut
 * out, 500 gaps and 500 bars missing; a weekday-only daily market reports
 * only the closure longer than its weekends; a continuous one, none; the run's data
 * description (what `train`, `eval` and `walkforward` print) carries the line. */
#include "data_fixtures.h"
#include "foxhunt/data.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define BIG_ROWS 4000

static void write_rows(fx_buf *b, int n, const char *sep)
{
    for (int i = 0; i < n; i++) {
        fx_bar x = fx_bar_at(i);
        char ts[32];
        fx_iso(x.t, ts, sizeof ts, ' ');
        fx_printf(b, "%s%s%.6f%s%.6f%s%.6f%s%.6f%s%.3f\n", ts, sep, x.o, sep, x.h, sep, x.l,
                  sep, x.c, sep, x.v);
    }
}

/* Runs `foxhunt features` on text; returns its exit status, *msg its stderr. */
static int run_features(const char *name, const char *text, size_t len, char **msg)
{
    char path[512], out[512], tmp[600], errp[512], args[1600];
    fx_path(path, sizeof path, name);
    fx_path(out, sizeof out, "features_out.csv");
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    fx_path(errp, sizeof errp, "stderr.txt");
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(text, 1, len, f) == len && fclose(f) == 0);
    remove(out);
    snprintf(args, sizeof args, "features --data '%s' --out '%s'", path, out);
    int rc = fx_run_foxhunt(args, errp);
    *msg = fx_read(errp);
    if (rc != 0) {
        CHECK_MSG(!fx_exists(out), "%s: %s was written by a failed run", name, out);
        CHECK_MSG(!fx_exists(tmp), "%s: %s was left behind", name, tmp);
    }
    return rc;
}

static void expect_refused(const char *name, const char *text, size_t len,
                           const char *const *phrases)
{
    CHECK_MSG(len > 150 * 1024, "%s: %zu bytes, too small to crash the old code", name, len);
    char *msg = NULL;
    int rc = run_features(name, text, len, &msg);
    CHECK_MSG(rc == 2, "%s: foxhunt features exit %d, expected 2 (139 is the old crash)", name,
              rc);
    for (const char *const *p = phrases; *p; p++)
        CHECK_MSG(msg && strstr(msg, *p), "%s: message '%s' lacks '%s'", name,
                  msg ? msg : "(none)", *p);
    for (const char *q = msg; q && *q; q++)
        if ((unsigned char)*q < 0x20 && *q != '\n') {
            CHECK_MSG(0, "%s: a raw control byte 0x%02X in the message", name,
                      (unsigned char)*q);
            break;
        }
    free(msg);
}

static void test_header_errors(void)
{
    fx_buf b = {0};
    fx_printf(&b, "timestamp,open,high,low,klose,volume\n");
    write_rows(&b, BIG_ROWS, ",");
    expect_refused("misnamed.csv", b.s, strlen(b.s),
                   (const char *const[]){"misnamed.csv:1:1: missing column 'close'",
                                         "'timestamp,open,high,low,klose,volume'",
                                         "exchange klines", NULL});
    free(b.s);

    b = (fx_buf){0};
    fx_printf(&b, "timestamp;open;high;low;close;volume\n");
    write_rows(&b, BIG_ROWS, ";");
    expect_refused("semicolons.csv", b.s, strlen(b.s),
                   (const char *const[]){"semicolons.csv:1:1: missing column",
                                         "separated by ';'", NULL});
    free(b.s);

    /* a binary file: bytes from a fixed generator, no newline for the first 100 */
    size_t n = 200 * 1024;
    char *bin = malloc(n);
    uint32_t s = 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        bin[i] = (char)(s >> 24);
        if (i < 100 && (bin[i] == '\n' || bin[i] == ','))
            bin[i] = 0x01;
    }
    expect_refused("binary.bin", bin, n,
                   (const char *const[]){"binary.bin:1:1: missing column 'time'", "\\x", NULL});
    free(bin);

    /* numbers, but five of them: not a kline row */
    b = (fx_buf){0};
    for (int i = 0; i < BIG_ROWS; i++) {
        fx_bar x = fx_bar_at(i);
        fx_printf(&b, "%lld000,%.6f,%.6f,%.6f,%.6f\n", (long long)x.t, x.o, x.h, x.l, x.c);
    }
    expect_refused("five_numbers.csv", b.s, strlen(b.s),
                   (const char *const[]){"five_numbers.csv:1:1: the first line is numbers",
                                         "5 fields", "timestamp,open,high,low,close,volume",
                                         NULL});
    free(b.s);
}

static void test_headerless_cli(void)
{
    fx_buf b = {0};
    for (int i = 0; i < BIG_ROWS; i++) {
        fx_bar x = fx_bar_at(i);
        fx_printf(&b, "%lld000,%.6f,%.6f,%.6f,%.6f,%.3f,%lld999,%.4f,%d,%.3f,%.4f,0\n",
                  (long long)x.t, x.o, x.h, x.l, x.c, x.v, (long long)x.t + 3599, x.v * x.c,
                  100 + i, x.v / 2, x.v * x.c / 2);
    }
    char *msg = NULL;
    int rc = run_features("BTCUSDT-1h-2022-01.csv", b.s, strlen(b.s), &msg);
    CHECK_MSG(rc == 0, "a headerless kline file: exit %d (%s)", rc, msg ? msg : "");
    CHECK_MSG(msg && strstr(msg, "no header row") && strstr(msg, "exchange klines"),
              "no note that the file was read as headerless klines: '%s'", msg ? msg : "");
    free(msg);
    free(b.s);
}

/* Loads hourly bars 0..n-1 with the bars in cut[] left out. */
static void load_hourly(fh_bars *bars, int n, int (*cut)(int))
{
    fx_buf b = {0};
    fx_printf(&b, "timestamp,open,high,low,close,volume\n");
    for (int i = 0; i < n; i++) {
        if (cut && cut(i))
            continue;
        fx_bar x = fx_bar_at(i);
        char ts[32];
        fx_iso(x.t, ts, sizeof ts, ' ');
        fx_printf(&b, "%s,%.6f,%.6f,%.6f,%.6f,%.3f\n", ts, x.o, x.h, x.l, x.c, x.v);
    }
    char path[512];
    fx_path(path, sizeof path, "hourly.csv");
    fx_write(path, b.s);
    free(b.s);
    fh_error err;
    CHECK_MSG(fh_bars_load_csv(path, bars, &err) == FH_OK, "%s", err.message);
}

/* five holes of 100 bars; the longest spacing is 101 h, from bar 2999 */
static int five_holes(int i)
{
    return i >= 1000 && i < 3500 && i % 500 < 100;
}

static int one_in_17(int i)
{
    return i < 8500 && i % 17 == 5;
}

static void test_gaps(void)
{
    fh_bars bars;
    load_hourly(&bars, 6000, five_holes);
    fh_bar_gaps g = fh_bars_gaps(&bars);
    CHECK_MSG(g.count == 5 && g.missing_bars == 500 && !g.closes,
              "hourly with 500 bars cut: %zu gaps, %zu missing, closes %d", g.count,
              g.missing_bars, g.closes);
    CHECK_MSG(g.longest == 101 * 3600, "longest %lld s", (long long)g.longest);
    CHECK(g.longest_after < bars.n && bars.time[g.longest_after - 1] == fx_bar_at(999).t);
    char line[200];
    fh_bars_describe_gaps(&bars, line, sizeof line);
    CHECK_MSG(strstr(line, "5 gaps, 500 bars missing, the longest 4.2 days from 2022-02-11 15:00"),
              "'%s'", line);
    fh_bars_free(&bars);

    /* what `train` prints: the run's data description */
    char path[512];
    fx_path(path, sizeof path, "hourly.csv");
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.data, sizeof cfg.data, "%s", path);
    fh_run_data d;
    fh_error err;
    load_hourly(&bars, 6000, five_holes);
    fh_bars_free(&bars);
    CHECK_MSG(fh_run_data_load(&d, &cfg, NULL, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(strstr(d.description, "5500 bars; 5 gaps, 500 bars missing"), "'%s'",
              d.description);
    fh_run_data_free(&d);

    /* 500 single hours missing, one in 17: 5.9% of the spacings are long, which a
     * count of long spacings took for a market's nights; weekends say it trades */
    load_hourly(&bars, 8760, one_in_17);
    g = fh_bars_gaps(&bars);
    fh_bars_describe_gaps(&bars, line, sizeof line);
    CHECK_MSG(!g.closes && g.count == 500 && g.missing_bars == 500 && g.longest == 7200,
              "500 single hours missing: closes %d, '%s'", g.closes, line);
    fh_bars_free(&bars);

    load_hourly(&bars, 2000, NULL);
    g = fh_bars_gaps(&bars);
    fh_bars_describe_gaps(&bars, line, sizeof line);
    CHECK_MSG(g.count == 0 && strcmp(line, "no gaps") == 0, "continuous: %zu, '%s'", g.count,
              line);
    fh_bars_free(&bars);

    /* weekdays only, and one closed week (Monday day 403 .. Friday day 407): Friday 400 to
     * Monday 410 */
    CHECK(fh_bars_alloc(&bars, 700, &err) == FH_OK);
    size_t n = 0;
    for (int64_t day = 0; n < 700 && day < 2000; day++) {
        int dow = (int)((day + 3) % 7); /* 1970-01-01 was a Thursday: 0 Monday */
        if (dow >= 5 || (day >= 403 && day < 408))
            continue;
        fx_bar x = fx_bar_at((int)n);
        bars.time[n] = day * 86400;
        bars.open[n] = x.o;
        bars.high[n] = x.h;
        bars.low[n] = x.l;
        bars.close[n] = x.c;
        bars.volume[n] = x.v;
        n++;
    }
    bars.n = n;
    g = fh_bars_gaps(&bars);
    fh_bars_describe_gaps(&bars, line, sizeof line);
    CHECK_MSG(g.closes && g.count == 1 && g.longest == 10 * 86400 && g.missing_bars == 0,
              "weekdays with a closed week: closes %d, %zu gaps, longest %lld, '%s'", g.closes,
              g.count, (long long)g.longest, line);
    CHECK_MSG(strstr(line, "1 gap longer than the market's usual closures (3.0 days)"), "'%s'",
              line);
    fh_bars_free(&bars);
}

int main(void)
{
    fx_make_dir();
    test_header_errors();
    test_headerless_cli();
    test_gaps();
    if (fh_test_failed == 0)
        fx_cleanup();
    return fh_test_finish();
}
