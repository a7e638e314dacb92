/* run_data.c — loading the run's market (include/foxhunt/run_data.h). */
#include "foxhunt/run_data.h"
#include "foxhunt/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fh_status fh_run_data_load(fh_run_data *d, const fh_train_config *cfg,
                           const fh_feature_norm *norm, fh_error *err)
{
    memset(d, 0, sizeof *d);
    fh_status st;
    if (cfg->data[0]) {
        st = fh_bars_load_csv(cfg->data, &d->bars, err);
        if (st != FH_OK)
            return st;
        st = fh_bars_check_moves(&d->bars, cfg->max_bar_move_sigmas, cfg->data, err);
        if (st != FH_OK) {
            fh_run_data_free(d);
            return st;
        }
        char gaps[160];
        fh_bars_describe_gaps(&d->bars, gaps, sizeof gaps);
        snprintf(d->description, sizeof d->description, "%.200s (%zu bars%s%s; %s)", cfg->data,
                 d->bars.n, d->bars.reversed ? ", reversed from descending order" : "",
                 d->bars.headerless_klines ? ", no header row: read as exchange klines" : "",
                 gaps);
    } else {
        fh_synth_config sc;
        fh_synth_config_default(&sc);
        sc.seed = cfg->synthetic_seed;
        sc.n_bars = (size_t)cfg->synthetic_bars;
        d->synthetic = 1;
        d->expected_return = malloc(sc.n_bars * sizeof(double));
        if (!d->expected_return)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        st = fh_synth_generate(&sc, &d->bars, d->expected_return, err);
        if (st != FH_OK) {
            fh_run_data_free(d);
            return st;
        }
        snprintf(d->description, sizeof d->description,
                 "synthetic market (seed %llu, %zu bars)",
                 (unsigned long long)cfg->synthetic_seed, d->bars.n);
        /* the generator's own output must pass the check real data does */
        st = fh_bars_check_moves(&d->bars, cfg->max_bar_move_sigmas, d->description, err);
        if (st != FH_OK) {
            fh_run_data_free(d);
            return st;
        }
    }
    fh_split_spec split = fh_train_config_split_spec(cfg);
    st = fh_market_build(&d->bars, d->expected_return, &split, norm, &d->market, err);
    if (st != FH_OK) {
        fh_error_prefix(err, "%s: ", d->description);
        fh_run_data_free(d);
    }
    return st;
}

void fh_run_data_free(fh_run_data *d)
{
    fh_market_free(&d->market);
    fh_bars_free(&d->bars);
    free(d->expected_return);
    memset(d, 0, sizeof *d);
}

static size_t describe_one(const fh_market *m, fh_split split, char *out, size_t size)
{
    fh_market_view v = fh_market_view_of(m, split);
    if (v.n == 0 || !v.time)
        return (size_t)snprintf(out, size, "%s none", fh_split_name(split));
    char a[32], b[32];
    fh_format_utc(a, sizeof a, v.time[0]);
    fh_format_utc(b, sizeof b, v.time[v.n - 1]);
    return (size_t)snprintf(out, size, "%s %zu bars (%s .. %s)", fh_split_name(split), v.n, a,
                            b);
}

void fh_run_data_describe_splits(const fh_run_data *d, char *out, size_t size)
{
    const fh_market *m = &d->market;
    const fh_split_bounds *s = &m->split;
    size_t used = describe_one(m, FH_SPLIT_TRAIN, out, size);
    if (used < size && s->val_end > s->val_begin) {
        used += (size_t)snprintf(out + used, size - used, ", gap %zu, ",
                                 s->val_begin - s->train_end);
        if (used < size)
            used += describe_one(m, FH_SPLIT_VALIDATION, out + used, size - used);
    }
    size_t before_test = s->val_end > s->val_begin ? s->val_end : s->train_end;
    if (used < size)
        used += (size_t)snprintf(out + used, size - used, ", gap %zu, ",
                                 s->test_begin - before_test);
    if (used < size)
        describe_one(m, FH_SPLIT_TEST, out + used, size - used);
}

fh_status fh_run_data_train_split(const fh_run_data *d, fh_market_view *view,
                                  fh_env_market *market, fh_error *err)
{
    *view = fh_market_view_of(&d->market, FH_SPLIT_TRAIN);
    *market = fh_env_market_from_view(view);
    if (view->n < 2)
        return fh_error_set(err, FH_ERR_INPUT, "the training split has %zu bars: too few",
                            view->n);
    return FH_OK;
}

void fh_run_data_source(const fh_train_config *cfg, char *out, size_t size)
{
    if (cfg->data[0])
        snprintf(out, size, "%s", cfg->data);
    else
        snprintf(out, size, "synthetic seed=%llu bars=%d",
                 (unsigned long long)cfg->synthetic_seed, cfg->synthetic_bars);
}
