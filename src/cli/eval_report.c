/* eval_report.c — see eval_report.h. */
#include "cli/eval_report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <string.h>

fh_status fh_eval_report_run(fh_eval_report *r, const fh_mlp *actor,
                             const fh_train_config *cfg, const fh_run_data *data,
                             fh_split split, uint64_t seed, fh_error *err)
{
    memset(r, 0, sizeof *r);
    fh_market_view view = fh_market_view_of(&data->market, split);
    r->bars = view.n;
    snprintf(r->split, sizeof r->split, "%s",
             split == FH_SPLIT_TEST ? "test" : split == FH_SPLIT_TRAIN ? "train" : "all");
    r->periods_per_year = fh_periods_per_year(data->market.interval_seconds);
    const double *oracle = view.expected_return;
    for (int k = 0; k < FH_POLICY_COUNT; k++) {
        if (k == FH_POLICY_ORACLE && !oracle)
            continue;
        if ((k == FH_POLICY_GREEDY || k == FH_POLICY_SAMPLED) && !actor)
            continue;
        fh_status st = fh_backtest_run(&r->metrics[r->n_policies], (fh_policy_kind)k, actor,
                                       &cfg->env, &view, oracle, r->periods_per_year, seed, NULL,
                                       err);
        if (st != FH_OK)
            return st;
        r->kinds[r->n_policies++] = (fh_policy_kind)k;
    }
    return FH_OK;
}

void fh_eval_report_print(const fh_eval_report *r, const char *title, FILE *out)
{
    fprintf(out, "%s: %s split, %zu bars, %.0f periods/year\n", title, r->split, r->bars,
            r->periods_per_year);
    fprintf(out, "%-13s %9s %9s %8s %7s %7s %7s %7s %6s %9s %7s %6s %7s\n", "policy",
            "cum.ret", "ann.ret", "ann.vol", "Sharpe", "Sortino", "Calmar", "max.DD",
            "DD.len", "turnover", "trades", "hit", "costs");
    for (int i = 0; i < r->n_policies; i++) {
        const fh_backtest_metrics *m = &r->metrics[i];
        fprintf(out, "%-13s %8.2f%% %8.2f%% %7.2f%% %7.2f %7.2f %7.2f %6.2f%% %6d %9.1f %7d %5.1f%% %6.2f%%\n",
                fh_policy_name(r->kinds[i]), 100 * m->cumulative_return,
                100 * m->annualised_return, 100 * m->annualised_volatility, m->sharpe,
                m->sortino, m->calmar, 100 * m->max_drawdown, m->max_drawdown_duration,
                m->turnover, m->trades, 100 * m->hit_rate, 100 * m->costs);
    }
}

static void add_number(cJSON *o, const char *key, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

fh_status fh_eval_report_write_json(const fh_eval_report *r, const char *source,
                                    const char *path, fh_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "source", source);
    cJSON_AddStringToObject(root, "split", r->split);
    cJSON_AddNumberToObject(root, "bars", (double)r->bars);
    cJSON_AddNumberToObject(root, "periods_per_year", r->periods_per_year);
    cJSON *policies = cJSON_AddObjectToObject(root, "policies");
    for (int i = 0; i < r->n_policies; i++) {
        const fh_backtest_metrics *m = &r->metrics[i];
        cJSON *p = cJSON_AddObjectToObject(policies, fh_policy_name(r->kinds[i]));
        add_number(p, "cumulative_return", m->cumulative_return);
        add_number(p, "annualised_return", m->annualised_return);
        add_number(p, "annualised_volatility", m->annualised_volatility);
        add_number(p, "sharpe", m->sharpe);
        add_number(p, "sortino", m->sortino);
        add_number(p, "calmar", m->calmar);
        add_number(p, "max_drawdown", m->max_drawdown);
        add_number(p, "max_drawdown_duration", m->max_drawdown_duration);
        add_number(p, "turnover", m->turnover);
        add_number(p, "turnover_per_year", m->turnover_per_year);
        add_number(p, "trades", m->trades);
        add_number(p, "hit_rate", m->hit_rate);
        add_number(p, "costs", m->costs);
        add_number(p, "final_equity", m->final_equity);
        add_number(p, "steps", m->steps);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%.1000s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f)
        ok = (fclose(f) == 0) && ok;
    cJSON_free(text);
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return fh_error_set(err, FH_ERR_INPUT, "cannot write %s: %s", path, strerror(e));
    }
    return FH_OK;
}
