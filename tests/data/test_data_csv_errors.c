/* test_data_csv_errors.c — one ctest entry per bad-input case of SPEC §2 and issue 19
 * item 7 (the case name is argv[1]). Each writes a small CSV with one defect, checks that the loader
 * rejects it with FH_ERR_INPUT and "FILE:LINE:COLUMN: what; what to do" pointing at the
 * defect, leaves the bars empty, and that `foxhunt features` exits 2 with that message
 * and writes nothing (neither OUT nor OUT.tmp). */
#include <math.h>

#include "data_fixtures.h"
#include "foxhunt/data.h"
#include "test_util.h"

#define N_ROWS 350

typedef struct {
    int line, col;        /* expected position (1-based) */
    const char *phrase;   /* expected text in the message */
} expect;

/* Builds a valid kline file of n rows, replacing row `bad_row` by `bad_text` (when not
 * NULL). Returns the character column where field `field` of that row starts. */
static int build(fx_buf *b, int n, int bad_row, const char *bad_text, int field)
{
    fx_printf(b, "timestamp,open,high,low,close,volume\n");
    int col = 0;
    for (int i = 0; i < n; i++) {
        if (i == bad_row) {
            fx_printf(b, "%s\n", bad_text);
            const char *p = bad_text;
            for (int k = 0; k < field; k++)
                p = strchr(p, ',') + 1;
            col = (int)(p - bad_text) + 1;
        } else {
            fx_row(b, i);
            fx_printf(b, "\n");
        }
    }
    return col;
}

static void row_text(char *out, size_t cap, int i, const char *time, const char *o,
                     const char *h, const char *l, const char *c, const char *v)
{
    fx_bar x = fx_bar_at(i);
    char ts[32], so[32], sh[32], sl[32], sc[32], sv[32];
    fx_iso(x.t, ts, sizeof ts, ' ');
    snprintf(so, sizeof so, "%.6f", x.o);
    snprintf(sh, sizeof sh, "%.6f", x.h);
    snprintf(sl, sizeof sl, "%.6f", x.l);
    snprintf(sc, sizeof sc, "%.6f", x.c);
    snprintf(sv, sizeof sv, "%.3f", x.v);
    snprintf(out, cap, "%s,%s,%s,%s,%s,%s", time ? time : ts, o ? o : so, h ? h : sh,
             l ? l : sl, c ? c : sc, v ? v : sv);
}

static void check_case(const char *name, const char *text, expect e)
{
    char path[512], out[512], tmp[512], errp[512];
    fx_path(path, sizeof path, "in.csv");
    fx_path(out, sizeof out, "out.csv");
    fx_path(tmp, sizeof tmp, "out.csv.tmp");
    fx_path(errp, sizeof errp, "stderr.txt");
    fx_write(path, text);

    fh_bars bars;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_bars_load_csv(path, &bars, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "%s: status %d", name, (int)st);
    char where[600];
    snprintf(where, sizeof where, "%s:%d:%d: ", path, e.line, e.col);
    CHECK_MSG(strncmp(err.message, where, strlen(where)) == 0,
              "%s: message '%s' should start with '%s'", name, err.message, where);
    CHECK_MSG(strstr(err.message, e.phrase) != NULL, "%s: message '%s' lacks '%s'", name,
              err.message, e.phrase);
    CHECK_MSG(strstr(err.message + strlen(where), "; ") != NULL,
              "%s: message '%s' says nothing about what to do", name, err.message);
    CHECK(bars.n == 0 && bars.time == NULL && bars.close == NULL);
    printf("%s: %s\n", name, err.message);

    char args[1600];
    snprintf(args, sizeof args, "features --data '%s' --out '%s'", path, out);
    int rc = fx_run_foxhunt(args, errp);
    CHECK_MSG(rc == 2, "%s: foxhunt features exit status %d, expected 2", name, rc);
    CHECK_MSG(!fx_exists(out), "%s: %s was written", name, out);
    CHECK_MSG(!fx_exists(tmp), "%s: %s was left behind", name, tmp);
    char *msg = fx_read(errp);
    CHECK_MSG(msg && strstr(msg, where) && strstr(msg, e.phrase),
              "%s: CLI stderr '%s' lacks '%s' / '%s'", name, msg ? msg : "(none)", where,
              e.phrase);
    free(msg);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE\n", argv[0]);
        return 2;
    }
    const char *c = argv[1];
    fx_make_dir();
    fx_buf b = {0};
    char row[256];
    expect e = {0, 0, NULL};

    if (strcmp(c, "missing_column") == 0) {
        fx_printf(&b, "timestamp,open,low,close,volume\n");
        for (int i = 0; i < N_ROWS; i++) {
            fx_bar x = fx_bar_at(i);
            char ts[32];
            fx_iso(x.t, ts, sizeof ts, ' ');
            fx_printf(&b, "%s,%f,%f,%f,%f\n", ts, x.o, x.l, x.c, x.v);
        }
        e = (expect){1, 1, "missing column 'high'"};
    } else if (strcmp(c, "empty_file") == 0) {
        fx_printf(&b, "%s", "");
        e = (expect){1, 1, "empty"};
    } else if (strcmp(c, "non_numeric") == 0) {
        row_text(row, sizeof row, 10, NULL, NULL, NULL, NULL, "12.5x", NULL);
        e.col = build(&b, N_ROWS, 10, row, 4);
        e = (expect){12, e.col, "'12.5x' in column 'close' is not a number"};
    } else if (strcmp(c, "non_finite") == 0) {
        row_text(row, sizeof row, 20, NULL, "inf", NULL, NULL, NULL, NULL);
        e.col = build(&b, N_ROWS, 20, row, 1);
        e = (expect){22, e.col, "'inf' in column 'open' is not a finite number"};
    } else if (strcmp(c, "non_finite_nan") == 0) {
        row_text(row, sizeof row, 25, NULL, NULL, NULL, NULL, NULL, "NaN");
        e.col = build(&b, N_ROWS, 25, row, 5);
        e = (expect){27, e.col, "'NaN' in column 'volume' is not a finite number"};
    } else if (strcmp(c, "high_below_low") == 0) {
        row_text(row, sizeof row, 30, NULL, "10", "9", "11", "10", NULL);
        e.col = build(&b, N_ROWS, 30, row, 2);
        e = (expect){32, e.col, "high 9 is below low 11"};
    } else if (strcmp(c, "non_positive_price") == 0) {
        row_text(row, sizeof row, 40, NULL, NULL, NULL, "0", NULL, NULL);
        e.col = build(&b, N_ROWS, 40, row, 3);
        e = (expect){42, e.col, "non-positive price: low is 0"};
    } else if (strcmp(c, "duplicate_time") == 0) {
        char ts[32];
        fx_iso(fx_bar_at(49).t, ts, sizeof ts, ' ');
        row_text(row, sizeof row, 50, ts, NULL, NULL, NULL, NULL, NULL);
        e.col = build(&b, N_ROWS, 50, row, 0);
        e = (expect){52, e.col, "duplicate time 2022-01-03 01:00:00 (same as line 51)"};
    } else if (strcmp(c, "out_of_order_time") == 0) {
        char ts[32];
        fx_iso(fx_bar_at(58).t - 1800, ts, sizeof ts, ' ');
        row_text(row, sizeof row, 60, ts, NULL, NULL, NULL, NULL, NULL);
        e.col = build(&b, N_ROWS, 60, row, 0);
        e = (expect){62, e.col, "out of order"};
    } else if (strcmp(c, "long_field") == 0) {
        /* 100,000 digits: once read as its first 127 digits, a finite 1e126 */
        size_t n = 100000;
        char *digits = malloc(n + 1);
        memset(digits, '1', n);
        digits[n] = '\0';
        fx_buf r = {0};
        fx_bar x = fx_bar_at(70);
        char ts[32];
        fx_iso(x.t, ts, sizeof ts, ' ');
        fx_printf(&r, "%s,%.6f,%.6f,%.6f,%s,%.3f", ts, x.o, x.h, x.l, digits, x.v);
        e.col = build(&b, N_ROWS, 70, r.s, 4);
        e = (expect){72, e.col, "is 100000 characters long"};
        free(r.s);
        free(digits);
    } else if (strcmp(c, "open_above_high") == 0) {
        row_text(row, sizeof row, 80, NULL, "12", "11", "9", "10", NULL);
        e.col = build(&b, N_ROWS, 80, row, 1);
        e = (expect){82, e.col, "open 12 is above high 11"};
    } else if (strcmp(c, "close_below_low") == 0) {
        row_text(row, sizeof row, 90, NULL, "10", "11", "9", "8.5", NULL);
        e.col = build(&b, N_ROWS, 90, row, 4);
        e = (expect){92, e.col, "close 8.5 is below low 9"};
    } else if (strcmp(c, "price_overflows_float") == 0) {
        row_text(row, sizeof row, 100, NULL, NULL, "1e39", NULL, NULL, NULL);
        e.col = build(&b, N_ROWS, 100, row, 2);
        e = (expect){102, e.col, "'1e39' in column 'high' overflows a 32-bit float"};
    } else if (strcmp(c, "price_underflows_float") == 0) {
        row_text(row, sizeof row, 110, NULL, NULL, NULL, "1e-39", NULL, NULL);
        e.col = build(&b, N_ROWS, 110, row, 3);
        e = (expect){112, e.col, "'1e-39' in column 'low' is below the smallest normal"};
    } else if (strcmp(c, "too_few_rows") == 0) {
        build(&b, FH_MIN_BARS - 1, -1, NULL, 0);
        e = (expect){FH_MIN_BARS, 1, "only 299 bars"};
    } else {
        fprintf(stderr, "unknown case '%s'\n", c);
        return 2;
    }
    if (!b.s)
        fx_printf(&b, "%s", "");
    check_case(c, b.s, e);
    free(b.s);
    fx_cleanup();
    return fh_test_finish();
}
