/* tear_sheet_risk.c — see tear_sheet_risk.h. */
#include "report/tear_sheet_risk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/env_types.h" /* FH_BARRIER_* */
#include "foxhunt/format.h"
#include "report/risk_metrics.h"
#include "report/tear_sheet_series.h"

#define PATH_ARRAYS 4 /* eval_report.h: equity, exposure, cost, turnover per policy */
#define YEAR_BAR_PX 110 /* the longest yearly bar, each side of zero */

static const double *equity_of(const fh_eval_report *r, int i)
{
    return r->paths + (size_t)i * PATH_ARRAYS * r->bars;
}

static int policy_index(const fh_eval_report *r, fh_policy_kind kind)
{
    for (int i = 0; i < r->n_policies; i++)
        if (r->kinds[i] == kind)
            return i;
    return -1;
}

static void put_percent(FILE *f, double v, int digits)
{
    if (isfinite(v))
        fprintf(f, "<td>%.*f%%</td>", digits, 100 * v);
    else
        fputs("<td>-</td>", f);
}

static void put_plain(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "<td>%.3f</td>", v);
    else
        fputs("<td>-</td>", f);
}

/* "2021-03-04 05:00" from the bar's UTC time */
static void put_when(FILE *f, int64_t t)
{
    char when[32];
    fh_format_utc(when, sizeof when, t);
    if (strlen(when) == 20) { /* YYYY-MM-DDTHH:MM:SSZ */
        when[10] = ' ';
        when[16] = '\0';
    }
    fputs(when, f);
}

static void put_days(FILE *f, double days)
{
    if (days < 2)
        fprintf(f, "%.0f hours", 24 * days);
    else if (days < 10)
        fprintf(f, "%.1f days", days);
    else
        fprintf(f, "%.0f days", days);
}

static void put_risk_table(FILE *f, const fh_eval_report *r, const fh_risk_metrics *m)
{
    fputs("<table class=\"metrics\" id=\"fh-risk\">\n<tr><th>policy</th>"
          "<th title=\"risk.var_95\">VaR 95%</th><th title=\"risk.cvar_95\">CVaR 95%</th>"
          "<th title=\"risk.alpha\">alpha</th><th title=\"risk.beta\">beta</th>", f);
    for (int p = 0; p < FH_PERIOD_COUNT; p++)
        fprintf(f, "<th title=\"risk.best_%s\">best %s</th><th title=\"risk.worst_%s\">worst "
                "%s</th>", fh_period_name((fh_period)p), fh_period_name((fh_period)p),
                fh_period_name((fh_period)p), fh_period_name((fh_period)p));
    fputs("</tr>\n", f);
    for (int i = 0; i < r->n_policies; i++) {
        fprintf(f, "<tr><td>%s</td>", fh_policy_name(r->kinds[i]));
        put_percent(f, m[i].var, 3);
        put_percent(f, m[i].cvar, 3);
        put_percent(f, m[i].alpha, 2);
        put_plain(f, m[i].beta);
        for (int p = 0; p < FH_PERIOD_COUNT; p++) {
            put_percent(f, m[i].best[p], 2);
            put_percent(f, m[i].worst[p], 2);
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void put_drawdowns(FILE *f, const fh_eval_report *r, int i, const fh_risk_metrics *m)
{
    fprintf(f, "<div>\n<h3>%s</h3>\n<table class=\"metrics drawdowns\" data-drawdowns=\"%s\">\n"
            "<tr><th>#</th><th>start</th><th>valley</th><th>recovered</th><th>depth</th>"
            "<th>length</th></tr>\n", fh_policy_name(r->kinds[i]), fh_policy_name(r->kinds[i]));
    if (m->n_drawdowns == 0)
        fputs("<tr><td colspan=\"6\">never below a previous peak</td></tr>\n", f);
    for (int k = 0; k < m->n_drawdowns; k++) {
        const fh_drawdown_period *d = &m->drawdowns[k];
        fprintf(f, "<tr data-depth=\"%.17g\" data-days=\"%.17g\"><td>%d</td><td>", d->depth,
                d->days, k + 1);
        put_when(f, r->time[d->start]);
        fputs("</td><td>", f);
        put_when(f, r->time[d->valley]);
        fputs("</td><td>", f);
        if (d->recovered)
            put_when(f, r->time[d->end]);
        else
            fputs("not yet", f);
        fprintf(f, "</td><td>%.2f%%</td><td>", 100 * d->depth);
        put_days(f, d->days);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n</div>\n", f);
}

/* One cell of a yearly bar: negative years grow left of zero, positive right. */
static void put_year_bar(FILE *f, double ret, double scale, const char *css_class)
{
    int px = scale > 0 ? (int)lround(YEAR_BAR_PX * fabs(ret) / scale) : 0;
    fputs("<td class=\"neg\">", f);
    if (ret < 0)
        fprintf(f, "<span class=\"%s\" style=\"width:%dpx\"></span>", css_class, px);
    fputs("</td><td class=\"pos\">", f);
    if (ret >= 0)
        fprintf(f, "<span class=\"%s\" style=\"width:%dpx\"></span>", css_class, px);
    fprintf(f, "</td><td class=\"value\">%+.1f%%</td>", 100 * ret);
}

/* Yearly returns of the greedy policy and buy-and-hold, as horizontal bars. */
static fh_status put_yearly(FILE *f, const fh_eval_report *r, fh_error *err)
{
    int shown[2] = {policy_index(r, FH_POLICY_GREEDY), policy_index(r, FH_POLICY_BUY_AND_HOLD)};
    int *key = malloc(2 * r->bars * sizeof *key);
    double *ret = malloc(2 * r->bars * sizeof *ret);
    if (!key || !ret) {
        free(key);
        free(ret);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    }
    size_t years[2] = {0, 0};
    double scale = 0;
    for (int s = 0; s < 2; s++)
        if (shown[s] >= 0) {
            years[s] = fh_risk_period_returns(r->time, equity_of(r, shown[s]), r->bars,
                                              FH_PERIOD_YEAR, key + s * r->bars,
                                              ret + s * r->bars, r->bars);
            for (size_t k = 0; k < years[s]; k++)
                scale = fmax(scale, fabs(ret[s * r->bars + k]));
        }
    fputs("<h3>Yearly returns</h3>\n<table class=\"yearly\" id=\"fh-yearly\">\n<tr><th>year</th>", f);
    for (int s = 0; s < 2; s++)
        if (shown[s] >= 0)
            fprintf(f, "<th colspan=\"3\">%s</th>", fh_policy_name(r->kinds[shown[s]]));
    fputs("</tr>\n", f);
    /* both paths share the bars, so their years are the same */
    size_t rows = years[0] > years[1] ? years[0] : years[1];
    for (size_t k = 0; k < rows; k++) {
        int s0 = years[0] > k ? 0 : 1;
        fprintf(f, "<tr data-year=\"%d\"><th>%d</th>", key[s0 * r->bars + k] / 10000,
                key[s0 * r->bars + k] / 10000);
        for (int s = 0; s < 2; s++)
            if (shown[s] >= 0 && k < years[s])
                put_year_bar(f, ret[s * r->bars + k], scale, s == 0 ? "strategy" : "benchmark");
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    free(key);
    free(ret);
    return FH_OK;
}

fh_status fh_tear_sheet_put_risk(FILE *f, const fh_eval_report *r, fh_error *err)
{
    fh_risk_metrics *m = calloc((size_t)r->n_policies, sizeof *m);
    if (!m)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    int bench = policy_index(r, FH_POLICY_BUY_AND_HOLD);
    fh_status st = FH_OK;
    for (int i = 0; st == FH_OK && i < r->n_policies; i++)
        st = fh_risk_compute(r->time, equity_of(r, i), bench >= 0 ? equity_of(r, bench) : NULL,
                             r->bars, r->periods_per_year, &m[i], err);
    if (st != FH_OK) {
        free(m);
        return st;
    }
    fputs("<section>\n<h2>Risk</h2>\n<p class=\"note\">VaR and CVaR: historical, per bar, the "
          "5% quantile of the per-bar returns and the mean of those at or below it. Alpha "
          "(annualised) and beta against buy-and-hold's per-bar returns. Best and worst "
          "periods compound the steps of each UTC calendar day, month and year (a step "
          "belongs to the period of the bar it ends at). docs/EVALUATION.md, \"Risk\"."
          "</p>\n", f);
    put_risk_table(f, r, m);
    fputs("<h3>Worst drawdowns</h3>\n<p class=\"note\">The five deepest, from the peak to the "
          "bar that regains it; length in time, from the peak to the recovery (or the split's "
          "end).</p>\n<div class=\"months\">\n", f);
    const fh_policy_kind dd_shown[2] = {FH_POLICY_GREEDY, FH_POLICY_BUY_AND_HOLD};
    for (int s = 0; s < 2; s++) {
        int i = policy_index(r, dd_shown[s]);
        if (i >= 0)
            put_drawdowns(f, r, i, &m[i]);
    }
    fputs("</div>\n", f);
    st = put_yearly(f, r, err);
    fputs("</section>\n", f);
    free(m);
    return st;
}

/* ---- the price chart ---- */

enum { MARK_LONG, MARK_SHORT, MARK_EXIT, MARK_PROFIT_TAKE, MARK_STOP_LOSS, MARK_TIME_LIMIT,
       MARK_COUNT };
static const char *const MARK_NAMES[MARK_COUNT] = {
    "long entry", "short entry", "exit", "profit take", "stop loss", "time limit"};

static int sign_of(double x)
{
    return (x > 0) - (x < 0);
}

/* The plotted point that shows bar t: point j covers bars ((j - 1) stride, j stride]. */
static size_t point_of(size_t t, size_t stride, size_t points)
{
    size_t j = (t + stride - 1) / stride;
    return j < points ? j : points - 1;
}

void fh_tear_sheet_put_price(FILE *f, const fh_eval_report *r, size_t stride, size_t points)
{
    int g = policy_index(r, FH_POLICY_GREEDY);
    if (!r->close || g < 0)
        return;
    double *close = malloc(points * sizeof *close);
    double *marks = malloc((size_t)MARK_COUNT * points * sizeof *marks);
    if (!close || !marks) {
        free(close);
        free(marks);
        return;
    }
    fh_ts_downsample(r->close, r->bars, stride, FH_TS_AT, close);
    for (size_t k = 0; k < (size_t)MARK_COUNT * points; k++)
        marks[k] = NAN;
    const double *ex = equity_of(r, g) + r->bars; /* (bars - 1) exposure held per step */
    const int *hit = r->barrier_hits ? r->barrier_hits + (size_t)g * (r->bars - 1) : NULL;
    for (size_t t = 0; t + 1 < r->bars; t++) {
        /* the position going into step t: none after a barrier closed it at bar t */
        int before = t == 0 || (hit && hit[t - 1]) ? 0 : sign_of(ex[t - 1]);
        int now = sign_of(ex[t]);
        size_t j = point_of(t, stride, points);
        if (before != 0 && now != before)
            marks[MARK_EXIT * points + j] = r->close[t];
        if (now != 0 && now != before)
            marks[(now > 0 ? MARK_LONG : MARK_SHORT) * points + j] = r->close[t];
        int kind = hit ? hit[t] : FH_BARRIER_NONE;
        int mark = kind == FH_BARRIER_PROFIT_TAKE ? MARK_PROFIT_TAKE
                 : kind == FH_BARRIER_STOP_LOSS   ? MARK_STOP_LOSS
                 : kind == FH_BARRIER_TIME_LIMIT  ? MARK_TIME_LIMIT : -1;
        if (mark >= 0) /* closed at the close of the bar step t ends at */
            marks[(size_t)mark * points + point_of(t + 1, stride, points)] = r->close[t + 1];
    }
    fputs(",\n\"price\":{\"close\":[", f);
    for (size_t j = 0; j < points; j++)
        fprintf(f, "%s%.9g", j ? "," : "", close[j]);
    fputc(']', f);
    for (int k = 0; k < MARK_COUNT; k++) {
        fprintf(f, ",\n\"%s\":[", MARK_NAMES[k]);
        for (size_t j = 0; j < points; j++) {
            double v = marks[(size_t)k * points + j];
            if (isfinite(v))
                fprintf(f, "%s%.9g", j ? "," : "", v);
            else
                fprintf(f, "%snull", j ? "," : "");
        }
        fputc(']', f);
    }
    fputc('}', f);
    free(close);
    free(marks);
}
