/* test_report_html.c — `foxhunt eval --report` read as text, no browser needed
 * (tests/cli/test_report_browser.c renders it): a tiny CPU run on 12,000 synthetic hourly
 * bars, then eval --report with --returns on the test split (2,400 bars, plotted whole)
 * and on the whole series (12,000 bars, downsampled to at most 5,000 points). The page
 * names no URL in any src or href and loads nothing (no <link>, no @import); it embeds
 * dygraphs with its MIT licence; its data's arrays match the returns file: every bar
 * (or every stride-th bar and the last), equity to 1e-5 relative (the page prints 6
 * digits), drawdown the deepest of each stretch; the training curves have one point per
 * metrics.csv row; the monthly heatmaps of the greedy policy and buy-and-hold equal the
 * months recomputed here from the CSV's per-bar returns to 1e-9; IN-SAMPLE is bannered
 * where it should be; a page that cannot be written fails with the path, leaving no
 * temporary file. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <cjson/cJSON.h>
#include <math.h>

#include "report_fixture.h"

#define MAX_POINTS 5000 /* the page's documented bound per series */

/* A src=, href= or url( whose value leaves the page. */
static int names_external_url(const char *html, char *where, size_t size)
{
    const char *keys[] = {"src", "href", "url(", "@import"};
    for (const char *p = html; *p; p++) {
        for (int k = 0; k < 4; k++) {
            size_t n = strlen(keys[k]);
            if (strncasecmp(p, keys[k], n) != 0)
                continue;
            const char *v = p + n;
            while (*v == ' ')
                v++;
            if (k < 2) {
                if (*v != '=')
                    continue;
                v++;
            }
            while (*v == ' ' || *v == '"' || *v == '\'')
                v++;
            if (strncasecmp(v, "http:", 5) == 0 || strncasecmp(v, "https:", 6) == 0 ||
                strncmp(v, "//", 2) == 0 || (k == 3)) {
                snprintf(where, size, "%.60s", p);
                return 1;
            }
        }
    }
    return 0;
}

/* The page's JSON data block, parsed (NULL if missing). */
static cJSON *page_data(const char *html)
{
    const char *open = "<script type=\"application/json\" id=\"fh-data\">";
    const char *at = strstr(html, open);
    if (!at)
        return NULL;
    at += strlen(open);
    const char *end = strstr(at, "</script>");
    if (!end)
        return NULL;
    return cJSON_ParseWithLength(at, (size_t)(end - at));
}

static int array_size(const cJSON *o, const char *key)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, key));
}

static double item(const cJSON *array, int i)
{
    const cJSON *x = cJSON_GetArrayItem(array, i);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static double cell_number(const fh_test_csv *csv, size_t row, int col)
{
    const char *s = fh_test_csv_cell(csv, row, col);
    return s && *s ? strtod(s, NULL) : NAN;
}

static void utc_string(long long t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The monthly returns the page shows for policy, against the months recomputed from the
 * CSV: the product of (1 + return) over the rows of each "YYYY-MM", minus 1. */
static void check_months(const char *html, const fh_test_csv *csv, const char *policy)
{
    char key[64], col_name[64];
    snprintf(key, sizeof key, "data-policy=\"%s\"", policy);
    snprintf(col_name, sizeof col_name, "%s_return", policy);
    int col = fh_test_csv_column(csv, col_name), tcol = fh_test_csv_column(csv, "time");
    const char *table = strstr(html, key);
    CHECK_MSG(table && col >= 0 && tcol >= 0, "no monthly table or column for %s", policy);
    if (!table || col < 0 || tcol < 0)
        return;
    const char *table_end = strstr(table, "</table>");
    /* recompute */
    char months[64][8];
    double product[64], year_product[64];
    int years[64], n_months = 0, n_years = 0;
    for (size_t r = 1; r < csv->rows && n_months < 64; r++) {
        const char *when = fh_test_csv_cell(csv, r, tcol);
        if (n_months == 0 || strncmp(months[n_months - 1], when, 7) != 0) {
            snprintf(months[n_months], sizeof months[0], "%.7s", when);
            product[n_months++] = 1.0;
        }
        double ret = cell_number(csv, r, col);
        product[n_months - 1] *= 1.0 + ret;
        int year = atoi(when);
        if (n_years == 0 || years[n_years - 1] != year) {
            years[n_years] = year;
            year_product[n_years++] = 1.0;
        }
        year_product[n_years - 1] *= 1.0 + ret;
    }
    /* the page's cells, in order */
    int seen = 0, seen_years = 0;
    const char *p = table;
    while ((p = strstr(p, "data-")) && p < table_end) {
        if (strncmp(p, "data-month=\"", 12) == 0) {
            char month[8];
            snprintf(month, sizeof month, "%.7s", p + 12);
            const char *v = strstr(p, "data-return=\"");
            double ret = v ? strtod(v + 13, NULL) : NAN;
            CHECK_MSG(seen < n_months && strcmp(month, months[seen]) == 0,
                      "%s: month %d of the page is %s, the CSV's is %s", policy, seen, month,
                      seen < n_months ? months[seen] : "(none)");
            if (seen < n_months)
                CHECK_MSG(fabs(ret - (product[seen] - 1.0)) <= 1e-9,
                          "%s %s: the page says %.12g, the CSV gives %.12g", policy, month, ret,
                          product[seen] - 1.0);
            seen++;
        } else if (strncmp(p, "data-year=\"", 11) == 0) {
            const char *v = strstr(p, "data-return=\"");
            double ret = v ? strtod(v + 13, NULL) : NAN;
            CHECK_MSG(seen_years < n_years && atoi(p + 11) == years[seen_years] &&
                          fabs(ret - (year_product[seen_years] - 1.0)) <= 1e-9,
                      "%s: year %d of the page (%.12g) disagrees with the CSV", policy,
                      atoi(p + 11), ret);
            seen_years++;
        }
        p += 5;
    }
    CHECK_MSG(seen == n_months && n_months > 0 && seen_years == n_years,
              "%s: the page shows %d months and %d years, the CSV has %d and %d", policy, seen,
              seen_years, n_months, n_years);
}

/* The page's series against the CSV, bar by bar or every stride-th bar. */
static void check_series(const cJSON *data, const fh_test_csv *csv, const char *what)
{
    size_t bars = csv->rows;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(data, "stride");
    int stride = cJSON_IsNumber(s) ? s->valueint : 0;
    /* the smallest stride that gives at most MAX_POINTS points, computed here */
    size_t want_stride = 1;
    while ((bars - 1 + want_stride - 1) / want_stride + 1 > MAX_POINTS)
        want_stride++;
    size_t points = (bars - 1 + want_stride - 1) / want_stride + 1;
    CHECK_MSG((size_t)stride == want_stride, "%s: stride %d, expected %zu for %zu bars", what,
              stride, want_stride, bars);
    CHECK_MSG((size_t)array_size(data, "time") == points,
              "%s: %d times for %zu bars (stride %zu: %zu points)", what,
              array_size(data, "time"), bars, want_stride, points);
    const cJSON *time = cJSON_GetObjectItemCaseSensitive(data, "time");
    int tcol = fh_test_csv_column(csv, "time");
    int bad_time = 0;
    for (size_t j = 0; j < points && tcol >= 0; j++) {
        size_t bar = j * want_stride < bars ? j * want_stride : bars - 1;
        char when[32];
        utc_string((long long)item(time, (int)j), when, sizeof when);
        bad_time += strcmp(when, fh_test_csv_cell(csv, bar, tcol)) != 0;
    }
    CHECK_MSG(bad_time == 0, "%s: %d plotted times are not the CSV's bars", what, bad_time);
    const char *keys[4] = {"equity", "drawdown", "rolling_sharpe", "exposure"};
    for (int k = 0; k < 4; k++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(data, keys[k]);
        CHECK_MSG(cJSON_GetArraySize(o) > 0, "%s: no %s series", what, keys[k]);
        const cJSON *series;
        cJSON_ArrayForEach(series, o)
            CHECK_MSG((size_t)cJSON_GetArraySize(series) == points, "%s: %s of %s has %d "
                      "points, not %zu", what, keys[k], series->string,
                      cJSON_GetArraySize(series), points);
    }
    const char *policies[2] = {"greedy", "buy_and_hold"};
    for (int q = 0; q < 2; q++) {
        char name[64];
        snprintf(name, sizeof name, "%s_equity", policies[q]);
        int col = fh_test_csv_column(csv, name);
        const cJSON *eq = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(data, "equity"), policies[q]);
        const cJSON *dd = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(data, "drawdown"), policies[q]);
        CHECK_MSG(col >= 0 && eq && dd, "%s: no equity or drawdown for %s", what, policies[q]);
        if (col < 0 || !eq || !dd)
            continue;
        int bad_eq = 0, bad_dd = 0;
        double peak = -INFINITY, deepest = 0;
        for (size_t t = 0, j = 0; t < bars; t++) {
            double e = cell_number(csv, t, col);
            peak = e > peak ? e : peak;
            double d = 1.0 - e / peak;
            deepest = d > deepest ? d : deepest;
            size_t bar = j * want_stride < bars ? j * want_stride : bars - 1;
            if (t != bar)
                continue;
            bad_eq += !fh_close(item(eq, (int)j), e, 0, 1e-5);
            /* drawn below zero, the deepest since the previous point */
            bad_dd += !fh_close(-item(dd, (int)j), t == 0 ? d : deepest, 1e-6, 1e-5);
            deepest = 0;
            j++;
        }
        CHECK_MSG(bad_eq == 0 && bad_dd == 0, "%s: %s: %d equity and %d drawdown points "
                  "disagree with the CSV", what, policies[q], bad_eq, bad_dd);
    }
    /* the distribution: shares of steps sum to one (the last value repeats the last bin) */
    const cJSON *share = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(data, "histogram"), "share");
    const cJSON *series;
    cJSON_ArrayForEach(series, share) {
        double sum = 0;
        int n = cJSON_GetArraySize(series);
        for (int b = 0; b + 1 < n; b++)
            sum += item(series, b);
        CHECK_MSG(fabs(sum - 1.0) < 1e-4, "%s: the %s histogram sums to %g", what,
                  series->string, sum);
    }
}

/* One page against its returns file: URLs, library, data, months. */
static void check_page(const char *html_path, const char *csv_path, size_t metrics_rows,
                       int in_sample)
{
    char *html = fh_read_text(html_path);
    fh_test_csv csv;
    CHECK_MSG(html && fh_test_csv_read(&csv, csv_path) && csv.rows >= 2, "%s or %s unreadable",
              html_path, csv_path);
    if (!html || csv.rows < 2) {
        free(html);
        return;
    }
    char where[80];
    CHECK_MSG(!names_external_url(html, where, sizeof where), "%s loads from outside: %s",
              html_path, where);
    CHECK_MSG(!strstr(html, "<link") && !strstr(html, "<iframe") && !strstr(html, "<img"),
              "%s has a <link>, <iframe> or <img>", html_path);
    /* dygraphs itself and its licence, in a comment beside it */
    const char *licence = strstr(html, "Permission is hereby granted, free of charge");
    const char *comment = strstr(html, "<!--");
    const char *library = strstr(html, "dygraphs/src/dygraph.js");
    CHECK_MSG(library && licence && comment && comment < licence &&
                  strstr(licence, "-->") < library && strstr(html, "Dan Vanderkam"),
              "%s: dygraphs or its licence comment is missing", html_path);
    char expected[16];
    fh_body_attr(html, "data-charts-expected", expected, sizeof expected);
    /* 7 charts of the backtest (the price among them), then the training curves: mean
     * reward and PPO's 10 own columns (learner_ppo.c; mean episode return is empty in a
     * run this short) */
    CHECK_MSG(atoi(expected) == 7 + 11, "%s: %s charts expected, not 18 (7 + 11 training "
              "curves)", html_path, expected);
    int banner = strstr(html, "class=\"banner\">IN-SAMPLE") != NULL;
    CHECK_MSG(banner == in_sample, "%s: the IN-SAMPLE banner is %s", html_path,
              banner ? "there" : "missing");
    CHECK_MSG(strstr(html, "verdict: the greedy policy") && strstr(html, "<th title=\"sharpe_se\">+-se</th>") &&
                  strstr(html, "<th title=\"round_trips\">round trips</th>") &&
                  strstr(html, "<tr><th>episodes</th><td>") &&
                  strstr(html, "<table class=\"metrics\" id=\"fh-risk\">") &&
                  strstr(html, "data-drawdowns=\"greedy\"") && strstr(html, "id=\"fh-yearly\""),
              "%s: the verdict, the tables, the risk section or the settings are missing",
              html_path);
    cJSON *data = page_data(html);
    CHECK_MSG(data != NULL, "%s: no parsable JSON data block", html_path);
    if (data) {
        const cJSON *bars = cJSON_GetObjectItemCaseSensitive(data, "bars");
        CHECK_MSG(cJSON_IsNumber(bars) && (size_t)bars->valuedouble == csv.rows,
                  "%s: %g bars, the CSV has %zu rows", html_path,
                  cJSON_IsNumber(bars) ? bars->valuedouble : -1.0, csv.rows);
        check_series(data, &csv, html_path);
        const cJSON *training = cJSON_GetObjectItemCaseSensitive(data, "training");
        const cJSON *series = cJSON_GetObjectItemCaseSensitive(training, "series");
        CHECK_MSG((size_t)array_size(training, "iteration") == metrics_rows &&
                      cJSON_GetArraySize(series) == 11 &&
                      (size_t)array_size(series, "policy_loss") == metrics_rows,
                  "%s: the training curves do not have one point per metrics.csv row (%zu)",
                  html_path, metrics_rows);
        cJSON_Delete(data);
    }
    check_months(html, &csv, "greedy");
    check_months(html, &csv, "buy_and_hold");
    fh_test_csv_free(&csv);
    free(html);
}

int main(void)
{
    char dir[256], run_dir[400], ck[500], html[600], csv[600], tmp[700], metrics[600];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "fh_report_html"));
    CHECK_MSG(fh_report_train(dir, "12000", run_dir, sizeof run_dir) == 0, "the tiny run failed");
    snprintf(ck, sizeof ck, "%s/final.safetensors", run_dir);
    snprintf(metrics, sizeof metrics, "%s/metrics.csv", run_dir);
    char *m = fh_read_text(metrics);
    size_t metrics_rows = m ? (size_t)fh_count_lines(m) - 1 : 0;
    free(m);
    CHECK_MSG(metrics_rows == 2, "metrics.csv has %zu rows, not 2", metrics_rows);

    const char *splits[2] = {"test", "all"};
    for (int s = 0; s < 2; s++) {
        snprintf(html, sizeof html, "%s/%s.html", dir, splits[s]);
        snprintf(csv, sizeof csv, "%s/%s.csv", dir, splits[s]);
        char *extra[] = {"--split", (char *)splits[s], "--returns", csv, NULL};
        CHECK_MSG(fh_report_eval(dir, splits[s], ck, html, extra) == 0,
                  "eval --report --split %s failed", splits[s]);
        snprintf(tmp, sizeof tmp, "%s.tmp", html);
        CHECK_MSG(!fh_file_exists(tmp), "%s left behind", tmp);
        check_page(html, csv, metrics_rows, s == 1);
    }
    /* a page that cannot be written: the path named, exit 2, nothing left behind */
    snprintf(html, sizeof html, "%s/no-such-dir/x.html", dir);
    char *bad[] = {"eval", "--checkpoint", ck, "--report", html, NULL};
    char *err = NULL;
    int rc = fh_run_foxhunt(dir, "unwritable", bad, NULL, &err);
    CHECK_MSG(rc == 2 && err && strstr(err, "no-such-dir/x.html"),
              "an unwritable --report exited %d: %s", rc, err ? err : "");
    free(err);
    fh_test_tidy(dir);
    return fh_test_finish();
}
