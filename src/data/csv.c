/* csv.c — loads OHLCV bars from a CSV file (SPEC §2).
 *
 * Accepted: a header row whose names are matched case-insensitively (surrounding
 * spaces and double quotes ignored): a time column (date, time, timestamp, datetime,
 * open_time, "open time"), open, high, low, close, volume, and an optional
 * "adj close"/adj_close/adjclose that is read past (prices are the raw OHLC; a
 * dividend-adjusted series would need all four prices adjusted, which Adj Close alone
 * does not give). Other columns are ignored, columns may come in any order.
 * Times: ISO dates (YYYY-MM-DD), ISO date-times (YYYY-MM-DD[T ]HH:MM[:SS[.frac]] with
 * an optional Z or +HH:MM offset), or Unix seconds (values >= 1e11 are taken as Unix
 * milliseconds, as exchange klines write them). LF or CRLF line ends, with or without
 * a final newline, an optional UTF-8 byte-order mark, blank lines skipped.
 * A file wholly in descending time order is reversed (bars->reversed = 1); gaps in time
 * are normal.
 *
 * Refused as impossible (data.h, fh_bars_load_csv): a path that is not a regular file
 * (before reading it), a field over FH_CSV_FIELD_MAX characters, a price <= 0 or outside
 * a 32-bit float's normal range, high < low, an open or close outside [low, high].
 * Implausible moves are fh_bars_check_moves's business (bars.c), which the caller runs.
 *
 * Every rejection is "FILE:LINE:COLUMN: what is wrong; what to do", LINE 1-based in the
 * file, COLUMN the 1-based character position where the offending field starts. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/data.h"
#include "foxhunt/files.h"
#include "foxhunt/format.h" /* fh_time_format */

enum { COL_TIME, COL_OPEN, COL_HIGH, COL_LOW, COL_CLOSE, COL_VOLUME, N_REQUIRED };
static const char *const COL_NAMES[N_REQUIRED] = {"time", "open", "high", "low", "close",
                                                  "volume"};
#define FIELD_MAX (FH_CSV_FIELD_MAX + 1) /* a field's text and its NUL */

typedef struct {
    const char *path;
    fh_error *err;
} csv_ctx;

static fh_status csv_fail(csv_ctx *c, size_t line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static fh_status csv_fail(csv_ctx *c, size_t line, size_t col, const char *fmt, ...)
{
    char what[FH_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fh_error_set(c->err, FH_ERR_INPUT, "%s:%zu:%zu: %s", c->path, line, col, what);
}

/* Copies field [b, e) without surrounding spaces and double quotes into out (cut to
 * cap - 1 characters); returns its whole length, so that the caller can refuse a field
 * that did not fit rather than read its first digits. */
static size_t field_text(const char *b, const char *e, char *out, size_t cap)
{
    while (b < e && (*b == ' ' || *b == '\t'))
        b++;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (e - b >= 2 && *b == '"' && e[-1] == '"') {
        b++;
        e--;
    }
    size_t whole = (size_t)(e - b), n = whole;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, b, n);
    out[n] = '\0';
    return whole;
}

static int header_column(const char *name)
{
    static const char *const time_names[] = {"date", "time", "timestamp", "datetime",
                                             "open_time", "open time", "opentime"};
    for (size_t k = 0; k < sizeof time_names / sizeof time_names[0]; k++)
        if (strcmp(name, time_names[k]) == 0)
            return COL_TIME;
    for (int k = COL_OPEN; k < N_REQUIRED; k++)
        if (strcmp(name, COL_NAMES[k]) == 0)
            return k;
    return -1; /* adj close and anything else: read past */
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar: count days in
 * whole years shifted to start in March, so that the leap day is the year's last. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                             /* [0, 399] */
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;     /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : dm[m - 1];
}

static int read_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int k = 0; k < n; k++) {
        if (!isdigit((unsigned char)(*p)[k]))
            return 0;
        v = v * 10 + ((*p)[k] - '0');
    }
    *p += n;
    *out = v;
    return 1;
}

/* Parses an ISO date / date-time or Unix seconds (ms when >= 1e11, us when >= 1e14).
 * 1 on success. */
static int parse_time(const char *s, int64_t *out)
{
    if (!*s)
        return 0;
    if (strspn(s, "0123456789.") == strlen(s)) {
        /* Unix time: digits with an optional fractional part */
        char *end = NULL;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v > 9.2e15)
            return 0;
        if (v >= 1e14)
            v /= 1e6; /* microseconds (Binance spot klines since 2025) */
        else if (v >= 1e11)
            v /= 1000.0; /* milliseconds (exchange klines) */
        *out = (int64_t)floor(v);
        return 1;
    }
    const char *p = s;
    int y, mo, d, hh = 0, mi = 0, ss = 0;
    if (!read_digits(&p, 4, &y) || *p++ != '-' || !read_digits(&p, 2, &mo) || *p++ != '-' ||
        !read_digits(&p, 2, &d))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return 0;
    int64_t offset = 0;
    if (*p == 'T' || *p == ' ') {
        p++;
        if (!read_digits(&p, 2, &hh) || *p++ != ':' || !read_digits(&p, 2, &mi))
            return 0;
        if (*p == ':') {
            p++;
            if (!read_digits(&p, 2, &ss))
                return 0;
            if (*p == '.') { /* fractional seconds are dropped */
                p++;
                if (!isdigit((unsigned char)*p))
                    return 0;
                while (isdigit((unsigned char)*p))
                    p++;
            }
        }
        if (hh > 23 || mi > 59 || ss > 60)
            return 0;
        if (*p == 'Z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p == '-' ? -1 : 1, oh, om;
            p++;
            if (!read_digits(&p, 2, &oh))
                return 0;
            if (*p == ':')
                p++;
            if (!read_digits(&p, 2, &om) || oh > 23 || om > 59)
                return 0;
            offset = sign * (oh * 3600 + om * 60);
        }
    }
    if (*p)
        return 0;
    *out = days_from_civil(y, mo, d) * 86400 + hh * 3600 + mi * 60 + ss - offset;
    return 1;
}

static fh_status read_whole_file(csv_ctx *c, char **buf, size_t *len)
{
    return fh_read_regular_file(c->path, "data file (CSV)", 0, buf, len, c->err);
}

static int line_is_blank(const char *b, const char *e)
{
    for (; b < e; b++)
        if (!isspace((unsigned char)*b))
            return 0;
    return 1;
}

static fh_status check_order(csv_ctx *c, fh_bars *bars, size_t *line_of,
                             const size_t *tcol_of)
{
    size_t n = bars->n;
    int descending = n >= 2 && bars->time[1] < bars->time[0];
    for (size_t i = 1; i < n; i++) {
        int64_t a = bars->time[i - 1], b = bars->time[i];
        char ta[32], tb[32];
        if (b == a) {
            fh_time_format(b, tb, sizeof tb);
            return csv_fail(c, line_of[i], tcol_of[i],
                            "duplicate time %s (same as line %zu); remove one of the two rows",
                            tb, line_of[i - 1]);
        }
        if ((b < a) != descending) {
            fh_time_format(a, ta, sizeof ta);
            fh_time_format(b, tb, sizeof tb);
            return csv_fail(c, line_of[i], tcol_of[i],
                            "time %s is out of order (line %zu has %s, and the file runs %s); "
                            "sort the file by time",
                            tb, line_of[i - 1], ta, descending ? "descending" : "ascending");
        }
    }
    if (descending) {
        for (size_t i = 0, j = n - 1; i < j; i++, j--) {
#define SWAP(T, arr) do { T t_ = arr[i]; arr[i] = arr[j]; arr[j] = t_; } while (0)
            SWAP(int64_t, bars->time);
            SWAP(double, bars->open);
            SWAP(double, bars->high);
            SWAP(double, bars->low);
            SWAP(double, bars->close);
            SWAP(double, bars->volume);
            SWAP(size_t, line_of);
#undef SWAP
        }
        bars->reversed = 1;
    }
    return FH_OK;
}

/* The line starting at p: *line_end gets its end (a CR before the LF is not part of
 * it); returns where the next line starts (end for the last, unterminated one). */
static const char *line_split(const char *p, const char *end, const char **line_end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if (le > p && le[-1] == '\r')
        le--;
    *line_end = le;
    return nl ? nl + 1 : end;
}

static fh_status parse_rows(csv_ctx *c, const char *p, const char *end, size_t line_no,
                            const int *field_col, int n_fields_needed, fh_bars *bars,
                            size_t *line_of, size_t *tcol_of)
{
    size_t n = 0, last_line = line_no;
    const char *fb[64], *fe[64];
    while (p < end) {
        line_no++;
        const char *le;
        const char *next = line_split(p, end, &le);
        if (line_is_blank(p, le)) {
            p = next;
            continue;
        }
        last_line = line_no;
        int nf = 0;
        const char *q = p;
        while (nf < n_fields_needed) {
            const char *comma = memchr(q, ',', (size_t)(le - q));
            fb[nf] = q;
            fe[nf] = comma ? comma : le;
            nf++;
            if (!comma)
                break;
            q = comma + 1;
        }
        if (nf < n_fields_needed) {
            for (int k = 0; k < N_REQUIRED; k++)
                if (field_col[k] >= nf)
                    return csv_fail(c, line_no, (size_t)(le - p) + 1,
                                    "row has %d fields, so column '%s' (field %d) is missing; "
                                    "give every row all the header's columns",
                                    nf, COL_NAMES[k], field_col[k] + 1);
        }
        double v[N_REQUIRED];
        for (int k = 0; k < N_REQUIRED; k++) {
            int f = field_col[k];
            size_t col = (size_t)(fb[f] - p) + 1;
            char text[FIELD_MAX];
            size_t text_len = field_text(fb[f], fe[f], text, sizeof text);
            if (text_len > FH_CSV_FIELD_MAX)
                return csv_fail(c, line_no, col,
                                "the value in column '%s' is %zu characters long ('%.16s...'), "
                                "more than the %d a field may have; fix the row or remove it",
                                COL_NAMES[k], text_len, text, FH_CSV_FIELD_MAX);
            if (!text[0])
                return csv_fail(c, line_no, col,
                                "empty value in column '%s'; fill it in or remove the row",
                                COL_NAMES[k]);
            if (k == COL_TIME) {
                int64_t t;
                if (!parse_time(text, &t))
                    return csv_fail(c, line_no, col,
                                    "'%s' in column 'time' is not a time; write ISO dates "
                                    "(2020-01-31), ISO date-times (2020-01-31 13:00:00) or "
                                    "Unix seconds",
                                    text);
                bars->time[n] = t;
                tcol_of[n] = col;
                continue;
            }
            char *ep = NULL;
            errno = 0;
            double x = strtod(text, &ep);
            if (ep == text || *ep)
                return csv_fail(c, line_no, col,
                                "'%s' in column '%s' is not a number; write a decimal number "
                                "or remove the row",
                                text, COL_NAMES[k]);
            if (!isfinite(x))
                return csv_fail(c, line_no, col,
                                "'%s' in column '%s' is not a finite number; write a finite "
                                "decimal number or remove the row",
                                text, COL_NAMES[k]);
            if (k == COL_VOLUME ? x < 0 : x <= 0)
                return csv_fail(c, line_no, col,
                                k == COL_VOLUME
                                    ? "negative %s %s; volumes must be >= 0, fix or remove the row"
                                    : "non-positive price: %s is %s; prices must be > 0, fix "
                                      "or remove the row",
                                COL_NAMES[k], text);
            if (k != COL_VOLUME && x > FLT_MAX)
                return csv_fail(c, line_no, col,
                                "'%s' in column '%s' overflows a 32-bit float (largest %.2g), "
                                "which the market stores prices in; rescale the prices or "
                                "remove the row",
                                text, COL_NAMES[k], (double)FLT_MAX);
            if (k != COL_VOLUME && x < FLT_MIN)
                return csv_fail(c, line_no, col,
                                "'%s' in column '%s' is below the smallest normal 32-bit float "
                                "(%.2g), which the market stores prices in; rescale the prices "
                                "or remove the row",
                                text, COL_NAMES[k], (double)FLT_MIN);
            v[k] = x;
        }
        if (v[COL_HIGH] < v[COL_LOW]) {
            int f = field_col[COL_HIGH];
            return csv_fail(c, line_no, (size_t)(fb[f] - p) + 1,
                            "high %.10g is below low %.10g; fix the row (are the high and "
                            "low columns swapped?)",
                            v[COL_HIGH], v[COL_LOW]);
        }
        static const int inside[2] = {COL_OPEN, COL_CLOSE};
        for (int j = 0; j < 2; j++) {
            int k = inside[j], f = field_col[k];
            if (v[k] < v[COL_LOW] || v[k] > v[COL_HIGH])
                return csv_fail(c, line_no, (size_t)(fb[f] - p) + 1,
                                "%s %.10g is %s %s %.10g; every bar needs low <= open, close "
                                "<= high: fix the row or remove it",
                                COL_NAMES[k], v[k], v[k] < v[COL_LOW] ? "below" : "above",
                                v[k] < v[COL_LOW] ? "low" : "high",
                                v[k] < v[COL_LOW] ? v[COL_LOW] : v[COL_HIGH]);
        }
        bars->open[n] = v[COL_OPEN];
        bars->high[n] = v[COL_HIGH];
        bars->low[n] = v[COL_LOW];
        bars->close[n] = v[COL_CLOSE];
        bars->volume[n] = v[COL_VOLUME];
        line_of[n] = line_no;
        n++;
        p = next;
    }
    bars->n = n;
    if (n < FH_MIN_BARS)
        return csv_fail(c, last_line, 1,
                        "only %zu bar%s; foxhunt needs at least %d (%d for the feature "
                        "warm-up plus room for episodes), give a longer file",
                        n, n == 1 ? "" : "s", FH_MIN_BARS, FH_FEATURE_WARMUP);
    return FH_OK;
}

/* Up to 60 characters of [b, e) for a message, bytes that are not printable ASCII
 * written as \xNN (a binary file's "header" must not reach the terminal raw). */
static void quote_text(const char *b, const char *e, char *out, size_t cap)
{
    size_t n = 0;
    for (; b < e && n + 5 < cap; b++) {
        unsigned char ch = (unsigned char)*b;
        if (n >= 60) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        if (ch >= 0x20 && ch < 0x7f)
            out[n++] = (char)ch;
        else
            n += (size_t)snprintf(out + n, cap - n, "\\x%02X", ch);
    }
    out[n] = '\0';
}

/* 1 when field [b, e) is a whole decimal number */
static int field_is_number(const char *b, const char *e)
{
    char text[FIELD_MAX];
    if (field_text(b, e, text, sizeof text) > FH_CSV_FIELD_MAX || !text[0])
        return 0;
    char *ep = NULL;
    (void)strtod(text, &ep);
    return ep != text && *ep == '\0';
}

/* An exchange kline dump has no header row (Binance's bulk downloads): six or more
 * numeric fields in the documented order, open time (Unix milliseconds, or
 * microseconds as Binance writes spot data since 2025), open, high, low, close,
 * volume, then close time, quote volume, trades, ... which are read past. 1 when
 * the first line [hb, he) is such a row, -1 when it is all numbers but not one (too
 * few fields, or a first field that is not a millisecond or microsecond time), 0 when
 * it is not all numbers (a header, perhaps a wrong one). */
static int kline_row_kind(const char *hb, const char *he, int *n_fields)
{
    int nf = 0;
    for (const char *q = hb;; nf++) {
        const char *comma = memchr(q, ',', (size_t)(he - q));
        const char *fe = comma ? comma : he;
        if (!field_is_number(q, fe))
            return 0;
        if (!comma) {
            nf++;
            break;
        }
        q = comma + 1;
    }
    *n_fields = nf;
    char first[FIELD_MAX];
    const char *comma = memchr(hb, ',', (size_t)(he - hb));
    field_text(hb, comma ? comma : he, first, sizeof first);
    double t = strtod(first, NULL);
    return nf >= N_REQUIRED && t >= 1e11 && t == floor(t) ? 1 : -1;
}

/* The needed columns' field numbers from the header line [hb, he) (line line_no), or
 * from a headerless kline row (*headerless = 1: fields 0..5). Messages quote the
 * header, so the caller frees the file's buffer only after this returns. */
static fh_status find_columns(csv_ctx *c, const char *hb, const char *he, size_t line_no,
                              int field_col[N_REQUIRED], int *n_needed, int *headerless)
{
    for (int k = 0; k < N_REQUIRED; k++)
        field_col[k] = -1;
    int n_header = 0, n_known = 0;
    for (const char *q = hb;; n_header++) {
        const char *comma = memchr(q, ',', (size_t)(he - q));
        const char *fe = comma ? comma : he;
        char name[FIELD_MAX];
        field_text(q, fe, name, sizeof name);
        for (char *s = name; *s; s++)
            *s = (char)tolower((unsigned char)*s);
        int k = header_column(name);
        if (k >= 0) {
            if (field_col[k] >= 0)
                return csv_fail(c, line_no, (size_t)(q - hb) + 1,
                                "column '%s' appears twice in the header (fields %d and %d); "
                                "keep one",
                                name, field_col[k] + 1, n_header + 1);
            field_col[k] = n_header;
            n_known++;
        }
        if (!comma) {
            n_header++;
            break;
        }
        q = comma + 1;
    }
    if (n_known == 0) {
        int nf = 0, kind = kline_row_kind(hb, he, &nf);
        if (kind == 1) {
            for (int k = 0; k < N_REQUIRED; k++)
                field_col[k] = k;
            *n_needed = N_REQUIRED;
            *headerless = 1;
            return FH_OK;
        }
        if (kind == -1) {
            char first[80], why[160];
            const char *comma = memchr(hb, ',', (size_t)(he - hb));
            quote_text(hb, comma ? comma : he, first, sizeof first);
            if (nf < N_REQUIRED)
                snprintf(why, sizeof why, "%d field%s", nf, nf == 1 ? "" : "s");
            else
                snprintf(why, sizeof why, "its first field %s is not a time in Unix "
                         "milliseconds or microseconds", first);
            return csv_fail(c, line_no, 1,
                            "the first line is numbers, not a header, but not an exchange "
                            "kline row either (%s; a headerless file needs six or more "
                            "fields: open time in Unix milliseconds or microseconds, open, "
                            "high, low, close, volume); add the header row "
                            "timestamp,open,high,low,close,volume",
                            why);
        }
    }
    for (int k = 0; k < N_REQUIRED; k++) {
        if (field_col[k] >= 0)
            continue;
        char shown[320];
        quote_text(hb, he, shown, sizeof shown);
        int semicolons = memchr(hb, ';', (size_t)(he - hb)) != NULL &&
                         memchr(hb, ',', (size_t)(he - hb)) == NULL;
        return csv_fail(c, line_no, 1,
                        "missing column '%s' in the header '%s'; %sthe header needs a time "
                        "column (date, time, timestamp or datetime), open, high, low, close "
                        "and volume, separated by commas (a file with no header row is read "
                        "as exchange klines: open time in ms or us, open, high, low, close, "
                        "volume, ...)",
                        COL_NAMES[k], shown,
                        semicolons ? "the fields are separated by ';', write them with ',': " : "");
    }
    for (int k = 0; k < N_REQUIRED; k++)
        if (field_col[k] + 1 > *n_needed)
            *n_needed = field_col[k] + 1;
    if (*n_needed > 64)
        return csv_fail(c, line_no, 1, "a needed column is beyond field 64; move it forward");
    return FH_OK;
}

fh_status fh_bars_load_csv(const char *path, fh_bars *bars, fh_error *err)
{
    csv_ctx c = {path, err};
    memset(bars, 0, sizeof *bars);
    char *buf = NULL;
    size_t len = 0;
    fh_status st = read_whole_file(&c, &buf, &len);
    if (st != FH_OK)
        return st;
    const char *p = buf, *end = buf + len;
    if (len >= 3 && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
        (unsigned char)p[2] == 0xBF)
        p += 3;

    /* header: the first non-blank line */
    size_t line_no = 0;
    const char *hb = NULL, *he = NULL;
    while (p < end) {
        line_no++;
        const char *le;
        const char *next = line_split(p, end, &le);
        if (!line_is_blank(p, le)) {
            hb = p;
            he = le;
            p = next;
            break;
        }
        p = next;
    }
    if (!hb) {
        free(buf);
        return csv_fail(&c, 1, 1,
                        "the file is empty; give a CSV with a header row (for example "
                        "timestamp,open,high,low,close,volume) and at least %d bars",
                        FH_MIN_BARS);
    }
    int field_col[N_REQUIRED], n_needed = 0, headerless = 0;
    /* every message quoting the header is written before buf is freed */
    st = find_columns(&c, hb, he, line_no, field_col, &n_needed, &headerless);
    if (st != FH_OK) {
        free(buf);
        return st;
    }
    if (headerless) { /* the first line is the first bar */
        p = hb;
        line_no--;
    }

    size_t cap = 1;
    for (const char *q = p; q < end; q++)
        cap += *q == '\n';
    size_t *line_of = malloc(cap * sizeof *line_of);
    size_t *tcol_of = malloc(cap * sizeof *tcol_of);
    st = (line_of && tcol_of) ? fh_bars_alloc(bars, cap, err)
                              : fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
    if (st == FH_OK) {
        bars->headerless_klines = headerless;
        st = parse_rows(&c, p, end, line_no, field_col, n_needed, bars, line_of, tcol_of);
    }
    if (st == FH_OK)
        st = check_order(&c, bars, line_of, tcol_of);
    if (st == FH_OK) {
        bars->line = line_of; /* the bars own it now (fh_bars_free) */
        line_of = NULL;
    }
    free(line_of);
    free(tcol_of);
    free(buf);
    if (st != FH_OK)
        fh_bars_free(bars);
    return st;
}
