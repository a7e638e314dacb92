/* tear_sheet.c — see tear_sheet.h. The page is plain HTML: tables written here, charts
 * drawn in the browser by dygraphs (tear_sheet.js) from one JSON block of the series
 * computed here (tear_sheet_series.h). Every asset is embedded (report_assets.h), so
 * the page loads nothing. */
#include "report/tear_sheet.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "foxhunt/files.h"
#include "report/csv_table.h"
#include "report/eval_columns.h"
#include "report/report_assets.h"
#include "report/tear_sheet_risk.h"
#include "report/tear_sheet_series.h"

#define PATH_ARRAYS 4       /* r->paths per policy: equity, exposure, cost, turnover */
#define HISTOGRAM_BINS 60
#define HISTOGRAM_TAIL 0.005 /* the range leaves out this share at each end (those
                                returns count in the edge bins) */
#define BASE_CHARTS 6        /* equity, drawdown, rolling Sharpe and volatility, exposure,
                                distribution; and the price where the report has it */

static const char *const COLOURS[FH_POLICY_COUNT] = {
    [FH_POLICY_GREEDY] = "#1f77b4",   [FH_POLICY_SAMPLED] = "#17becf",
    [FH_POLICY_BUY_AND_HOLD] = "#ff7f0e", [FH_POLICY_FLAT] = "#7f7f7f",
    [FH_POLICY_RANDOM] = "#bcbd22",   [FH_POLICY_ORACLE] = "#2ca02c",
    [FH_POLICY_ALWAYS_LONG] = "#9467bd", [FH_POLICY_VOL_TARGET] = "#8c564b",
    [FH_POLICY_TSMOM] = "#e377c2",    [FH_POLICY_MA_CROSSOVER] = "#d62728",
};

/* The training curves plotted from metrics.csv (src/rl/run_dir.c names its columns):
 * these two of every learner's, then each of the learner's own columns (those after
 * action_entropy: include/foxhunt/learner.h), each where the file has a number in it. A
 * new learner's columns are plotted without a change here. */
static const char *const COMMON_CURVES[] = {"mean_episode_return", "mean_reward"};
#define LAST_COMMON_COLUMN "action_entropy"
#define MAX_CURVES 32
/* Titles of the columns whose name does not say it plainly (else the name, spaced). */
static const struct {
    const char *column, *title;
} TITLES[] = {
    {"mean_episode_return", "mean episode return"},
    {"mean_reward", "mean reward per step"},
    {"approx_kl", "approx. KL"},
    {"old_approx_kl", "old approx. KL"},
    {"td_loss", "TD loss"},
};

/* A column name the page may write as it is (an id, a JSON key): metrics.csv is read
 * from disk, so anything but [a-z0-9_] is not plotted. */
static int plain_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return 0;
    return 1;
}

static void put_title(FILE *f, const char *column)
{
    for (size_t i = 0; i < sizeof TITLES / sizeof TITLES[0]; i++)
        if (strcmp(TITLES[i].column, column) == 0) {
            fputs(TITLES[i].title, f);
            return;
        }
    for (const char *c = column; *c; c++)
        fputc(*c == '_' ? ' ' : *c, f);
}

static const char *const MONTHS[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* What one page needs besides the report. */
typedef struct {
    const fh_eval_report *r;
    const fh_tear_sheet_info *info;
    size_t stride, points, window;
    fh_csv_table metrics; /* rows == 0 when there is none */
    int train_columns[MAX_CURVES]; /* metrics.csv column of each curve */
    int train_charts;
    double *a, *b; /* scratch, bars values each */
    fh_ts_month *months;
} page;

static const fh_embedded_source *asset(const char *name)
{
    for (const fh_embedded_source *a = fh_report_assets; a->path; a++)
        if (strcmp(a->path, name) == 0)
            return a;
    return NULL;
}

fh_status fh_tear_sheet_available(fh_error *err)
{
    if (asset("dygraph.min.js") && asset("dygraph.min.css") && asset("copyright"))
        return FH_OK;
    return fh_error_set(err, FH_ERR_FAILURE,
                        "--report draws its charts with dygraphs, which this build of foxhunt "
                        "does not carry: install Debian's libjs-dygraphs (bash scripts/setup.sh "
                        "does), then re-run cmake and rebuild");
}

static const double *equity_of(const fh_eval_report *r, int i)
{
    return r->paths + (size_t)i * PATH_ARRAYS * r->bars;
}

static const double *exposure_of(const fh_eval_report *r, int i)
{
    return equity_of(r, i) + r->bars;
}

static int policy_index(const fh_eval_report *r, fh_policy_kind kind)
{
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == kind)
            return i;
    return -1;
}

/* ---- writing ---- */

static void put_html(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Text inside an HTML comment: "--" could end or break it, so it is written "- -". */
static void put_comment_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        fputc(*s, f);
        if (s[0] == '-' && s[1] == '-')
            fputc(' ', f);
    }
}

/* An asset's text, without a trailing source-map reference: the page has no map beside
 * it, and a browser's developer tools would try to fetch one. */
static void put_asset(FILE *f, const char *name, const char *map_marker)
{
    const fh_embedded_source *a = asset(name);
    if (!a)
        return;
    const char *cut = map_marker ? strstr(a->text, map_marker) : NULL;
    fwrite(a->text, 1, cut ? (size_t)(cut - a->text) : a->size, f);
}

static void put_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void put_array(FILE *f, const double *v, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        put_number(f, v[i]);
    }
    fputc(']', f);
}

static void put_head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>", f);
    put_html(f, title);
    fputs("</title>\n"
          /* first of all scripts: collects the page's errors and console errors and
           * warnings for tear_sheet.js to report (data-errors) */
          "<script>window.fhErrors=[];window.addEventListener('error',function(e){"
          "fhErrors.push(String(e.message||e));});['error','warn'].forEach(function(k){"
          "var f=console[k];console[k]=function(){fhErrors.push(k+': '+"
          "Array.prototype.join.call(arguments,' '));return f.apply(console,arguments);};});"
          "</script>\n<style>\n", f);
    put_asset(f, "dygraph.min.css", "/*# sourceMappingURL");
    fputs("\n</style>\n<style>\n", f);
    put_asset(f, "tear_sheet.css", NULL);
    fputs("</style>\n<!-- The charts are drawn by dygraphs, embedded below from Debian's "
          "libjs-dygraphs. Its licence, from that package's copyright file:\n\n", f);
    const fh_embedded_source *copyright = asset("copyright");
    if (copyright)
        put_comment_text(f, copyright->text);
    fputs("-->\n<script>\n", f);
    put_asset(f, "dygraph.min.js", "//# sourceMappingURL");
    fputs("\n</script>\n</head>\n", f);
}

static void put_intro(FILE *f, const page *p)
{
    const fh_eval_report *r = p->r;
    const fh_tear_sheet_info *info = p->info;
    fprintf(f, "<body data-charts-expected=\"%d\">\n<header>\n<h1>",
            BASE_CHARTS + (r->close != NULL) + p->train_charts);
    put_html(f, info->title);
    fputs("</h1>\n<p class=\"meta\">checkpoint: ", f);
    put_html(f, info->source);
    if (info->data) {
        fputs(" &middot; data: ", f);
        put_html(f, info->data);
    }
    fputs("</p>\n<p class=\"meta\">", f);
    put_html(f, r->split);
    fprintf(f, " split: %zu bars from %s to %s, %.0f periods/year; rolling Sharpe over %zu "
            "bars, rolling volatility too", r->bars, r->first_time[0] ? r->first_time : "?",
            r->last_time[0] ? r->last_time : "?", r->periods_per_year, p->window);
    if (p->stride > 1)
        fprintf(f, "; the charts plot one bar in %zu (%zu points: drawdown keeps each "
                "stretch's deepest, exposure each stretch's mean)", p->stride, p->points);
    fputs("</p>\n</header>\n", f);
    if (r->in_sample) {
        fputs("<div class=\"banner\">IN-SAMPLE: the ", f);
        put_html(f, r->split);
        fputs(" split holds the bars the policy was trained on; these numbers say nothing "
              "about unseen data (use --split test)</div>\n", f);
    }
    char verdict[512];
    fh_eval_report_verdict(r, verdict, sizeof verdict);
    fputs("<p class=\"verdict\">", f);
    put_html(f, verdict);
    fputs("</p>\n", f);
}

static void put_table(FILE *f, const fh_eval_report *r, fh_eval_table table)
{
    int columns = fh_eval_column_count(table);
    fputs("<table class=\"metrics\">\n<tr><th>policy</th>", f);
    for (int c = 0; c < columns; c++) {
        const fh_eval_column *col = fh_eval_column_at(table, c);
        fprintf(f, "<th title=\"%s\">", col->json_key);
        put_html(f, col->header);
        fputs("</th>", f);
    }
    fputs("</tr>\n", f);
    for (int i = 0; i < r->n_policies; i++) {
        fprintf(f, "<tr><td>%s</td>", fh_policy_name(r->kinds[i]));
        for (int c = 0; c < columns; c++) {
            char cell[64];
            fh_eval_cell(table, c, &r->metrics[i], cell, sizeof cell);
            fprintf(f, "<td>%s</td>", cell);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* The classical baselines' settings: how each was chosen, its PSR and deflated Sharpe. */
static void put_baselines(FILE *f, const fh_eval_report *r)
{
    int any = 0;
    for (int i = 0; i < r->n_policies; i++) {
        const fh_baseline_choice *c = fh_eval_report_baseline(r, r->kinds[i]);
        if (!c)
            continue;
        if (!any++)
            fputs("<h2>Classical baselines</h2>\n<table class=\"baselines\">\n<tr><th>baseline"
                  "</th><th>setting</th><th>chosen</th><th>validation Sharpe</th>"
                  "<th title=\"psr\">PSR(0)</th><th title=\"deflated_sharpe\">DSR</th></tr>\n",
                  f);
        const fh_backtest_metrics *m = &r->metrics[i];
        char what[160], sharpe[32] = "";
        fh_baseline_describe(&c->chosen, r->periods_per_year, what, sizeof what);
        if (c->on_validation)
            snprintf(sharpe, sizeof sharpe, "%.2f", c->trial_sharpe[c->best]);
        fprintf(f, "<tr><td>%s</td><td>", fh_policy_name(r->kinds[i]));
        put_html(f, what);
        if (c->on_validation)
            fprintf(f, "</td><td>best of %d on validation", c->n_trials);
        else {
            fputs("</td><td>defaults: ", f);
            put_html(f, c->why_default);
        }
        fprintf(f, "</td><td>%s</td><td>%.3f</td><td>%.3f</td></tr>\n", sharpe,
                fh_backtest_psr(m, r->periods_per_year),
                fh_baseline_deflated_sharpe(c, m, r->periods_per_year));
    }
    if (any)
        fputs("</table>\n<p class=\"note\">Rules, grids and the choice on validation: "
              "docs/EVALUATION.md, \"Classical baselines\"; they trade in the agent's "
              "environment (costs, barriers) at full urgency; the DSR counts the settings "
              "tried as trials.</p>\n", f);
}

static void put_chart(FILE *f, const char *name, const char *heading, const char *note,
                      const char *controls)
{
    fprintf(f, "<section>\n<h2>%s</h2>\n<p class=\"note\">%s</p>\n%s"
            "<div class=\"chart\" id=\"chart-%s\"></div>\n<div class=\"legend\" "
            "id=\"legend-%s\"></div>\n</section>\n", heading, note, controls ? controls : "",
            name, name);
}

static void put_charts(FILE *f, const page *p)
{
    put_chart(f, "equity", "Equity",
              "Every policy's equity on the split, costs included, against buy-and-hold (the "
              "thick line), the classical baselines among them.",
              "<label class=\"note\"><input type=\"checkbox\" id=\"fh-log\" checked> log "
              "scale</label>\n");
    if (p->r->close)
        put_chart(f, "price", "Trades on the price",
                  "The close price with the greedy policy's trades: where it opened a long or a "
                  "short position, where it closed one itself (exit), and where the "
                  "environment's barriers closed it (profit take, stop loss, time limit, at "
                  "the close of that bar). On a downsampled chart a mark sits on the point "
                  "that covers its bar, at that bar's price. Many trades: drag across the "
                  "chart to zoom in, double-click to zoom out.", NULL);
    fputs("<div class=\"pair\">\n", f);
    put_chart(f, "drawdown", "Drawdown",
              "1 - equity / its running peak, drawn below zero (flat never draws down and is "
              "left out).", NULL);
    char note[256];
    snprintf(note, sizeof note, "The Sharpe (annualised, risk-free rate 0) of the last %zu "
             "per-bar returns: a quarter of a year of bars, at most a quarter of the split.",
             p->window);
    put_chart(f, "sharpe", "Rolling Sharpe", note, NULL);
    fputs("</div>\n<div class=\"pair\">\n", f);
    snprintf(note, sizeof note, "The annualised volatility (population std times sqrt(%.0f)) "
             "of the last %zu per-bar returns, the rolling Sharpe's window.",
             p->r->periods_per_year, p->window);
    put_chart(f, "volatility", "Rolling volatility", note, NULL);
    put_chart(f, "exposure", "Exposure",
              "The exposure held over each bar (+1 all long, -1 all short): the actor's "
              "policies and, on the synthetic market, the oracle; a moving average over the "
              "number of points set here (1: none).",
              "<label class=\"note\">smoothing: <input type=\"number\" id=\"fh-roll\" "
              "min=\"1\" step=\"1\"> points</label>\n");
    fputs("</div>\n", f);
    put_chart(f, "distribution", "Distribution of per-bar returns",
              "Share of steps per return bin, the greedy policy against buy-and-hold (flat "
              "steps make the spike at 0; the outer 0.5% at each end count in the edge bins).",
              NULL);
}

/* The monthly returns of policy i as a heatmap table; months (bars) is scratch. */
static void put_monthly(FILE *f, const page *p, int i)
{
    const fh_eval_report *r = p->r;
    size_t m = fh_ts_monthly(r->time, equity_of(r, i), r->bars, p->months, r->bars);
    fprintf(f, "<div>\n<h3>%s</h3>\n<table class=\"heatmap\" data-policy=\"%s\">\n<tr><th></th>",
            fh_policy_name(r->kinds[i]), fh_policy_name(r->kinds[i]));
    for (int k = 0; k < 12; k++)
        fprintf(f, "<th>%s</th>", MONTHS[k]);
    fputs("<th>year</th></tr>\n", f);
    double scale = 0;
    for (size_t k = 0; k < m; k++)
        scale = fabs(p->months[k].ret) > scale ? fabs(p->months[k].ret) : scale;
    size_t k = 0;
    while (k < m) {
        int year = p->months[k].year;
        double compound = 1.0;
        fprintf(f, "<tr><th>%d</th>", year);
        for (int month = 1; month <= 12; month++) {
            if (k >= m || p->months[k].year != year || p->months[k].month != month) {
                fputs("<td></td>", f);
                continue;
            }
            double ret = p->months[k++].ret;
            compound *= 1.0 + ret;
            double alpha = scale > 0 ? 0.12 + 0.6 * fabs(ret) / scale : 0.12;
            fprintf(f, "<td data-month=\"%04d-%02d\" data-return=\"%.17g\" "
                    "style=\"background:rgba(%s,%.2f)\">%+.1f%%</td>", year, month, ret,
                    ret >= 0 ? "26,152,80" : "215,48,39", alpha, 100 * ret);
        }
        fprintf(f, "<td class=\"year\" data-year=\"%d\" data-return=\"%.17g\">%+.1f%%</td></tr>\n",
                year, compound - 1.0, 100 * (compound - 1.0));
    }
    fputs("</table>\n</div>\n", f);
}

static void put_months(FILE *f, const page *p)
{
    fputs("<section>\n<h2>Monthly returns</h2>\n<p class=\"note\">Each UTC calendar month's "
          "return (a bar's step belongs to the month of the bar it ends at); the last column "
          "compounds the year's months. Green gains, red losses, deeper for larger.</p>\n"
          "<div class=\"months\">\n", f);
    const fh_policy_kind shown[2] = {FH_POLICY_GREEDY, FH_POLICY_BUY_AND_HOLD};
    for (int s = 0; s < 2; s++) {
        int i = policy_index(p->r, shown[s]);
        if (i >= 0)
            put_monthly(f, p, i);
    }
    fputs("</div>\n</section>\n", f);
}

static void put_training(FILE *f, const page *p)
{
    fputs("<section>\n<h2>Training</h2>\n", f);
    if (p->train_charts == 0) {
        fputs("<p class=\"note\">No training curves: the run's metrics.csv was not found "
              "beside the checkpoint, or holds no numbers.</p>\n</section>\n", f);
        return;
    }
    fputs("<p class=\"note\">From the run's metrics.csv, one point per iteration "
          "(docs/LEARNING.md reads them).</p>\n<div class=\"grid\">\n", f);
    for (int k = 0; k < p->train_charts; k++) {
        const char *column = p->metrics.names[p->train_columns[k]];
        fputs("<div><h3>", f);
        put_title(f, column);
        fprintf(f, "</h3><div class=\"chart\" id=\"chart-train-%s\"></div>"
                "<div class=\"legend\" id=\"legend-train-%s\"></div></div>\n", column, column);
    }
    fputs("</div>\n</section>\n", f);
}

/* One setting's value as text: a string as it is, anything else as compact JSON. */
static void put_setting_value(FILE *f, const cJSON *item)
{
    if (cJSON_IsString(item)) {
        put_html(f, item->valuestring);
        return;
    }
    char *text = cJSON_PrintUnformatted(item);
    put_html(f, text ? text : "?");
    cJSON_free(text);
}

/* The resolved configuration, a two-column table per section ([run], [ppo], ...) in a
 * grid, so keys and values line up. */
static void put_settings(FILE *f, const char *config_json)
{
    fputs("<section>\n<h2>Settings</h2>\n", f);
    if (!config_json) {
        fputs("<p class=\"note\">The checkpoint carries no configuration.</p>\n</section>\n", f);
        return;
    }
    fputs("<p class=\"note\">The run's resolved configuration, as the checkpoint carries it "
          "(docs/CONFIG.md describes every key).</p>\n", f);
    cJSON *json = cJSON_Parse(config_json);
    if (!cJSON_IsObject(json)) { /* not ours: shown as it is */
        fputs("<pre>", f);
        put_html(f, config_json);
        fputs("</pre>\n</section>\n", f);
        cJSON_Delete(json);
        return;
    }
    fputs("<div class=\"settings\">\n", f);
    const cJSON *section;
    cJSON_ArrayForEach(section, json)
    {
        fputs("<div><h3>", f);
        put_html(f, section->string);
        fputs("</h3>\n<table class=\"settings\">\n", f);
        if (!cJSON_IsObject(section)) {
            fputs("<tr><td>", f);
            put_setting_value(f, section);
            fputs("</td></tr>\n", f);
        }
        const cJSON *item;
        for (item = cJSON_IsObject(section) ? section->child : NULL; item; item = item->next) {
            fputs("<tr><th>", f);
            put_html(f, item->string);
            fputs("</th><td>", f);
            put_setting_value(f, item);
            fputs("</td></tr>\n", f);
        }
        fputs("</table>\n</div>\n", f);
    }
    fputs("</div>\n</section>\n", f);
    cJSON_Delete(json);
}

/* One JSON object {policy: [downsampled values]} of the policies shown; series(p, i,
 * out) fills p->a for policy i (n values), then it is downsampled by how. */
typedef void (*series_fn)(const page *p, int i, double *out);

static void put_policy_series(FILE *f, const page *p, const char *key, const int *show,
                              series_fn series, fh_ts_reduce how, size_t n)
{
    fprintf(f, ",\n\"%s\":{", key);
    int first = 1;
    for (int i = 0; i < p->r->n_policies; i++) {
        if (!show[p->r->kinds[i]])
            continue;
        series(p, i, p->a);
        fh_ts_downsample(p->a, n, p->stride, how, p->b);
        fprintf(f, "%s\"%s\":", first ? "" : ",\n", fh_policy_name(p->r->kinds[i]));
        put_array(f, p->b, p->points);
        first = 0;
    }
    fputc('}', f);
}

static void equity_series(const page *p, int i, double *out)
{
    memcpy(out, equity_of(p->r, i), p->r->bars * sizeof *out);
}

/* drawn below zero */
static void drawdown_series(const page *p, int i, double *out)
{
    fh_ts_drawdown(equity_of(p->r, i), p->r->bars, out);
    for (size_t t = 0; t < p->r->bars; t++)
        out[t] = -out[t];
}

static void sharpe_series(const page *p, int i, double *out)
{
    fh_ts_rolling_sharpe(equity_of(p->r, i), p->r->bars, p->window, p->r->periods_per_year, out);
}

static void volatility_series(const page *p, int i, double *out)
{
    fh_ts_rolling_volatility(equity_of(p->r, i), p->r->bars, p->window, p->r->periods_per_year,
                             out);
}

static void exposure_series(const page *p, int i, double *out)
{
    memcpy(out, exposure_of(p->r, i), (p->r->bars - 1) * sizeof *out);
}

/* Per-bar returns of policy i into out (bars - 1). */
static void returns_of(const fh_eval_report *r, int i, double *out)
{
    const double *eq = equity_of(r, i);
    for (size_t t = 1; t < r->bars; t++)
        out[t - 1] = eq[t] / eq[t - 1] - 1.0;
}

static void put_histogram(FILE *f, const page *p)
{
    const fh_eval_report *r = p->r;
    size_t steps = r->bars - 1;
    int shown[2] = {policy_index(r, FH_POLICY_GREEDY), policy_index(r, FH_POLICY_BUY_AND_HOLD)};
    /* the range: the pooled returns' quantiles (p->a, p->b hold both; p->c sorts) */
    size_t pooled = 0;
    for (int s = 0; s < 2; s++)
        if (shown[s] >= 0) {
            returns_of(r, shown[s], s == 0 ? p->a : p->b);
            pooled += steps;
        }
    double *all = malloc(pooled * sizeof *all), *sorted = malloc(pooled * sizeof *sorted);
    double lo = -1e-3, hi = 1e-3;
    if (all && sorted && pooled > 0) {
        size_t used = 0;
        for (int s = 0; s < 2; s++)
            if (shown[s] >= 0) {
                memcpy(all + used, s == 0 ? p->a : p->b, steps * sizeof *all);
                used += steps;
            }
        lo = fh_ts_quantile(all, pooled, HISTOGRAM_TAIL, sorted);
        hi = fh_ts_quantile(all, pooled, 1.0 - HISTOGRAM_TAIL, sorted);
    }
    free(all);
    free(sorted);
    if (!(hi > lo)) { /* every return equal: a small range around it */
        lo -= 1e-4;
        hi += 1e-4;
    }
    double edges[HISTOGRAM_BINS + 1], share[HISTOGRAM_BINS + 1];
    for (int b = 0; b <= HISTOGRAM_BINS; b++)
        edges[b] = lo + (hi - lo) * b / HISTOGRAM_BINS;
    fputs(",\n\"histogram\":{\"edges\":", f);
    put_array(f, edges, HISTOGRAM_BINS + 1);
    fputs(",\"share\":{", f);
    int first = 1;
    for (int s = 0; s < 2; s++) {
        if (shown[s] < 0)
            continue;
        fh_ts_histogram(s == 0 ? p->a : p->b, steps, lo, hi, HISTOGRAM_BINS, share);
        share[HISTOGRAM_BINS] = share[HISTOGRAM_BINS - 1]; /* the last step's right edge */
        fprintf(f, "%s\"%s\":", first ? "" : ",", fh_policy_name(r->kinds[shown[s]]));
        put_array(f, share, HISTOGRAM_BINS + 1);
        first = 0;
    }
    fputs("}}", f);
}

static void put_training_data(FILE *f, const page *p)
{
    fputs(",\n\"training\":{", f);
    const fh_csv_table *t = &p->metrics;
    int it = fh_csv_table_column(t, "iteration");
    if (p->train_charts == 0 || it < 0) {
        fputs("\"iteration\":[],\"series\":{}}", f);
        return;
    }
    size_t rows = t->rows, stride = fh_ts_stride(rows, FH_TS_MAX_POINTS);
    size_t points = fh_ts_points(rows, stride);
    double *column = malloc(rows * sizeof *column), *out = malloc(points * sizeof *out);
    if (!column || !out) {
        free(column);
        free(out);
        fputs("\"iteration\":[],\"series\":{}}", f);
        return;
    }
    int first = 1;
    for (int k = -1; k < p->train_charts; k++) {
        int c = k < 0 ? it : p->train_columns[k];
        for (size_t row = 0; row < rows; row++)
            column[row] = t->values[row * (size_t)t->columns + (size_t)c];
        fh_ts_downsample(column, rows, stride, FH_TS_AT, out);
        if (k < 0)
            fputs("\"iteration\":", f);
        else
            fprintf(f, "%s\"%s\":", first ? ",\"series\":{" : ",\n", t->names[c]);
        put_array(f, out, points);
        if (k >= 0)
            first = 0;
    }
    fputs(first ? ",\"series\":{}}" : "}}", f);
    free(column);
    free(out);
}

static void put_data(FILE *f, const page *p)
{
    const fh_eval_report *r = p->r;
    fprintf(f, "<script type=\"application/json\" id=\"fh-data\">\n{\"bars\":%zu,\"stride\":%zu,"
            "\"points\":%zu,\"sharpe_window\":%zu,\n\"policies\":[", r->bars, p->stride,
            p->points, p->window);
    for (int i = 0; i < r->n_policies; i++)
        fprintf(f, "%s{\"name\":\"%s\",\"colour\":\"%s\"}", i ? "," : "",
                fh_policy_name(r->kinds[i]), COLOURS[r->kinds[i]]);
    fputs("],\n\"time\":[", f);
    for (size_t j = 0; j < p->points; j++)
        fprintf(f, "%s%lld", j ? "," : "",
                (long long)r->time[fh_ts_point_bar(j, r->bars, p->stride)]);
    fputc(']', f);
    int all[FH_POLICY_COUNT], drawdown[FH_POLICY_COUNT], sharpe[FH_POLICY_COUNT] = {0},
        exposure[FH_POLICY_COUNT] = {0};
    for (int k = 0; k < FH_POLICY_COUNT; k++)
        all[k] = drawdown[k] = k != FH_POLICY_FLAT;
    all[FH_POLICY_FLAT] = 1;
    sharpe[FH_POLICY_GREEDY] = sharpe[FH_POLICY_SAMPLED] = sharpe[FH_POLICY_BUY_AND_HOLD] =
        sharpe[FH_POLICY_ORACLE] = 1;
    exposure[FH_POLICY_GREEDY] = exposure[FH_POLICY_SAMPLED] = exposure[FH_POLICY_ORACLE] = 1;
    put_policy_series(f, p, "equity", all, equity_series, FH_TS_AT, r->bars);
    put_policy_series(f, p, "drawdown", drawdown, drawdown_series, FH_TS_MIN, r->bars);
    put_policy_series(f, p, "rolling_sharpe", sharpe, sharpe_series, FH_TS_AT, r->bars);
    put_policy_series(f, p, "rolling_volatility", sharpe, volatility_series, FH_TS_AT, r->bars);
    put_policy_series(f, p, "exposure", exposure, exposure_series, FH_TS_STEP_MEAN, r->bars);
    put_histogram(f, p);
    fh_tear_sheet_put_price(f, r, p->stride, p->points);
    put_training_data(f, p);
    fputs("}\n</script>\n", f);
}

static fh_status put_page(FILE *f, const page *p, fh_error *err)
{
    put_head(f, p->info->title);
    put_intro(f, p);
    fputs("<section>\n<h2>Performance</h2>\n", f);
    put_table(f, p->r, FH_EVAL_TABLE_PERFORMANCE);
    fputs("<h2>Positions</h2>\n", f);
    put_table(f, p->r, FH_EVAL_TABLE_POSITIONS);
    fputs("<p class=\"note\">docs/EVALUATION.md defines every column (hover a header for its "
          "eval.json key).</p>\n", f);
    put_baselines(f, p->r);
    fputs("</section>\n", f);
    fh_status st = fh_tear_sheet_put_risk(f, p->r, err);
    if (st != FH_OK)
        return st;
    put_charts(f, p);
    put_months(f, p);
    put_training(f, p);
    put_settings(f, p->info->config_json);
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(now, sizeof now, "%Y-%m-%d %H:%M UTC", &tm))
        snprintf(now, sizeof now, "?");
    fprintf(f, "<footer>Written by foxhunt %s on %s. Charts: dygraphs "
            "<span id=\"fh-dygraphs-version\"></span> (MIT licence, embedded in this page; "
            "the licence is in a comment in its head).</footer>\n", FH_VERSION, now);
    put_data(f, p);
    fputs("<script>\n", f);
    put_asset(f, "tear_sheet.js", NULL);
    fputs("</script>\n</body>\n</html>\n", f);
    return FH_OK;
}

/* ---- the page's inputs ---- */

static fh_status read_metrics(page *p, fh_error *err)
{
    p->train_charts = 0;
    if (!p->info->metrics_csv)
        return FH_OK;
    fh_status st = fh_csv_table_read(&p->metrics, p->info->metrics_csv, err);
    if (st != FH_OK)
        return st;
    const fh_csv_table *t = &p->metrics;
    if (fh_csv_table_column(t, "iteration") < 0)
        return FH_OK;
    int own = fh_csv_table_column(t, LAST_COMMON_COLUMN); /* the learner's own follow it */
    int n_common = (int)(sizeof COMMON_CURVES / sizeof COMMON_CURVES[0]);
    for (int k = 0; k < n_common + t->columns && p->train_charts < MAX_CURVES; k++) {
        int c = k < n_common ? fh_csv_table_column(t, COMMON_CURVES[k])
              : own >= 0 && k - n_common > own ? k - n_common : -1;
        if (c >= 0 && !plain_name(t->names[c]))
            continue;
        for (size_t row = 0; c >= 0 && row < t->rows; row++)
            if (isfinite(t->values[row * (size_t)t->columns + (size_t)c])) {
                p->train_columns[p->train_charts++] = c;
                break;
            }
    }
    return FH_OK;
}

static void page_free(page *p)
{
    free(p->a);
    free(p->b);
    free(p->months);
    fh_csv_table_free(&p->metrics);
}

fh_status fh_tear_sheet_write(const char *path, const fh_eval_report *r,
                              const fh_tear_sheet_info *info, fh_error *err)
{
    fh_status st = fh_tear_sheet_available(err);
    if (st != FH_OK)
        return st;
    if (!r->paths || !r->time || r->bars < 2)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: the report kept no paths (the "
                            "tear sheet needs fh_eval_report_run with keep_paths)", __FILE__,
                            __LINE__);
    page p;
    memset(&p, 0, sizeof p);
    p.r = r;
    p.info = info;
    p.stride = fh_ts_stride(r->bars, FH_TS_MAX_POINTS);
    p.points = fh_ts_points(r->bars, p.stride);
    p.window = fh_ts_sharpe_window(r->periods_per_year, r->bars);
    p.a = malloc(r->bars * sizeof *p.a);
    p.b = malloc(r->bars * sizeof *p.b);
    p.months = malloc(r->bars * sizeof *p.months);
    if (!p.a || !p.b || !p.months) {
        page_free(&p);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for a tear sheet of "
                            "%zu bars", __FILE__, __LINE__, r->bars);
    }
    st = read_metrics(&p, err);
    if (st != FH_OK) {
        page_free(&p);
        return st;
    }
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%.1000s.tmp", path);
    FILE *f = fh_fopen_regular(tmp, "temporary file", O_WRONLY | O_CREAT | O_TRUNC, err);
    if (!f) { /* an output path the user gave: exit 2, as any bad path */
        page_free(&p);
        if (err)
            err->status = FH_ERR_INPUT;
        return FH_ERR_INPUT;
    }
    errno = 0;
    st = put_page(f, &p, err);
    page_free(&p);
    if (st != FH_OK) { /* no partial page: the temporary file is removed */
        fh_replace_with_tmp(f, 0, 0, tmp, path);
        return st;
    }
    int e = fh_replace_with_tmp(f, 1, 0, tmp, path); /* a failed write shows as ferror */
    if (e)
        return fh_error_set(err, FH_ERR_INPUT, "cannot write %s: %s%s", path, strerror(e),
                            fh_write_error_hint(e));
    return FH_OK;
}
