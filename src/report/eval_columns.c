/* eval_columns.c — see eval_columns.h. */
#include "report/eval_columns.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    fh_eval_column column;
    const char *format; /* printf format of the value times scale */
    double scale;
    size_t offset;      /* of the field in fh_backtest_metrics */
    int is_int;         /* the field is an int (else a double) */
} column_def;

#define D(header, key, width, format, scale, field)                                      \
    {{header, key, width}, format, scale, offsetof(fh_backtest_metrics, field), 0}
#define I(header, key, width, field)                                                     \
    {{header, key, width}, "%.0f", 1.0, offsetof(fh_backtest_metrics, field), 1}

static const column_def PERFORMANCE[] = {
    D("cum.ret", "cumulative_return", 9, "%.2f%%", 100, cumulative_return),
    D("ann.ret", "annualised_return", 9, "%.2f%%", 100, annualised_return),
    D("ann.vol", "annualised_volatility", 8, "%.2f%%", 100, annualised_volatility),
    D("Sharpe", "sharpe", 7, "%.2f", 1, sharpe),
    D("+-se", "sharpe_se", 5, "%.2f", 1, sharpe_se),
    D("Sortino", "sortino", 7, "%.2f", 1, sortino),
    D("Calmar", "calmar", 7, "%.2f", 1, calmar),
    D("max.DD", "max_drawdown", 7, "%.2f%%", 100, max_drawdown),
    D("DD.days", "max_drawdown_days", 7, "%.1f", 1, max_drawdown_days),
    D("turnover", "turnover", 9, "%.1f", 1, turnover),
    I("trades", "trades", 7, trades),
    D("hit", "hit_rate", 6, "%.1f%%", 100, hit_rate),
    D("costs", "costs", 7, "%.2f%%", 100, costs),
};

static const column_def POSITIONS[] = {
    D("in mkt", "time_in_market", 9, "%.1f%%", 100, time_in_market),
    D("mean exp", "mean_exposure", 9, "%.3f", 1, mean_exposure),
    D("mean |exp|", "mean_abs_exposure", 9, "%.3f", 1, mean_abs_exposure),
    I("round trips", "round_trips", 11, round_trips),
    D("RT hit", "round_trip_hit_rate", 9, "%.1f%%", 100, round_trip_hit_rate),
};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const column_def *table_defs(fh_eval_table table, int *n)
{
    if (table == FH_EVAL_TABLE_POSITIONS) {
        *n = COUNT(POSITIONS);
        return POSITIONS;
    }
    *n = COUNT(PERFORMANCE);
    return PERFORMANCE;
}

int fh_eval_column_count(fh_eval_table table)
{
    int n;
    table_defs(table, &n);
    return n;
}

const fh_eval_column *fh_eval_column_at(fh_eval_table table, int c)
{
    int n;
    const column_def *defs = table_defs(table, &n);
    return c >= 0 && c < n ? &defs[c].column : NULL;
}

void fh_eval_cell(fh_eval_table table, int c, const fh_backtest_metrics *m, char *out,
                  size_t size)
{
    int n;
    const column_def *defs = table_defs(table, &n);
    if (c < 0 || c >= n) {
        snprintf(out, size, "?");
        return;
    }
    const column_def *d = &defs[c];
    const char *field = (const char *)m + d->offset;
    double v;
    if (d->is_int) {
        int iv;
        memcpy(&iv, field, sizeof iv);
        v = iv;
    } else {
        memcpy(&v, field, sizeof v);
    }
    if (isfinite(v))
        snprintf(out, size, d->format, d->scale * v);
    else /* not known (a drawdown's days on a stitched path) */
        snprintf(out, size, "-");
}
