/* run_data.c — loading the run's market (include/foxhunt/run_data.h). */
#include "foxhunt/run_data.h"
#include "foxhunt/format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static fh_status load_multi(fh_run_data *d, const fh_train_config *cfg, fh_error *err);

/* One asset: the CSV at path (cfg->data when it names one file) or the synthetic one. */
static fh_status load_one(fh_run_data *d, const fh_train_config *cfg, const char *path,
                          const fh_feature_norm *norm, fh_error *err)
{
    memset(d, 0, sizeof *d);
    d->n_assets = 1;
    snprintf(d->path, sizeof d->path, "%s", path);
    fh_status st;
    if (path[0]) {
        st = fh_bars_load_csv(path, &d->bars, err);
        if (st != FH_OK)
            return st;
        st = fh_bars_check_moves(&d->bars, cfg->max_bar_move_sigmas, path, err);
        if (st != FH_OK) {
            fh_run_data_free(d);
            return st;
        }
        char gaps[160];
        fh_bars_describe_gaps(&d->bars, gaps, sizeof gaps);
        snprintf(d->description, sizeof d->description, "%.200s (%zu bars%s%s; %s)", path,
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

fh_status fh_run_data_load(fh_run_data *d, const fh_train_config *cfg,
                           const fh_feature_norm *norm, fh_error *err)
{
    if (strchr(cfg->data, ','))
        return load_multi(d, cfg, err);
    return load_one(d, cfg, cfg->data, norm, err);
}

/* --data's comma-separated paths into paths[] (each non-empty); *n set. */
static fh_status split_paths(const char *list, char paths[][FH_CONFIG_STRING_MAX], int *n,
                             fh_error *err)
{
    *n = 0;
    const char *p = list;
    for (int item = 1;; item++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0)
            return fh_error_set(err, FH_ERR_INPUT,
                                "--data \"%s\": item %d of the comma-separated list is empty; "
                                "give one CSV path per asset, e.g. a.csv,b.csv", list, item);
        if (*n == FH_MAX_ASSETS)
            return fh_error_set(err, FH_ERR_INPUT,
                                "--data \"%s\": more than %d assets; train on at most %d",
                                list, FH_MAX_ASSETS, FH_MAX_ASSETS);
        snprintf(paths[*n], FH_CONFIG_STRING_MAX, "%.*s", (int)len, p);
        (*n)++;
        if (!comma)
            return FH_OK;
        p = comma + 1;
    }
}

/* The assets' training splits end to end into d->market, one segment each. */
static fh_status concat_train_splits(fh_run_data *d, fh_error *err)
{
    size_t n = 0;
    for (int k = 0; k < d->n_assets; k++) {
        fh_market_view v = fh_market_view_of(&d->assets[k].market, FH_SPLIT_TRAIN);
        if (v.n < 2)
            return fh_error_set(err, FH_ERR_INPUT, "%s: the training split has %zu bars: too "
                                "few", d->assets[k].path, v.n);
        n += v.n;
    }
    if (n > 0x7fffffff)
        return fh_error_set(err, FH_ERR_INPUT, "the assets' training splits hold %zu bars "
                            "together, more than the environment's int bar index", n);
    fh_market *m = &d->market;
    m->features = malloc(n * FH_N_MARKET_FEATURES * sizeof *m->features);
    m->close = malloc(n * sizeof *m->close);
    m->sigma = malloc(n * sizeof *m->sigma);
    m->time = malloc(n * sizeof *m->time);
    d->segment_ends = malloc((size_t)d->n_assets * sizeof *d->segment_ends);
    if (!m->features || !m->close || !m->sigma || !m->time || !d->segment_ends)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    size_t at = 0;
    for (int k = 0; k < d->n_assets; k++) {
        fh_market_view v = fh_market_view_of(&d->assets[k].market, FH_SPLIT_TRAIN);
        memcpy(m->features + at * FH_N_MARKET_FEATURES, v.features,
               v.n * FH_N_MARKET_FEATURES * sizeof *v.features);
        memcpy(m->close + at, v.close, v.n * sizeof *v.close);
        memcpy(m->sigma + at, v.sigma, v.n * sizeof *v.sigma);
        memcpy(m->time + at, v.time, v.n * sizeof *v.time);
        at += v.n;
        d->segment_ends[k] = (int)at;
    }
    m->n = n;
    m->split.train_begin = 0;
    m->split.train_end = n;
    m->split.val_begin = m->split.val_end = m->split.test_begin = m->split.test_end = n;
    m->norm = d->assets[0].market.norm;
    m->interval_seconds = d->assets[0].market.interval_seconds;
    return FH_OK;
}

static fh_status load_multi(fh_run_data *d, const fh_train_config *cfg, fh_error *err)
{
    memset(d, 0, sizeof *d);
    char paths[FH_MAX_ASSETS][FH_CONFIG_STRING_MAX];
    int n = 0;
    fh_status st = split_paths(cfg->data, paths, &n, err);
    if (st != FH_OK)
        return st;
    d->assets = calloc((size_t)n, sizeof *d->assets);
    if (!d->assets)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
    d->n_assets = n;
    snprintf(d->path, sizeof d->path, "%s", cfg->data);
    for (int k = 0; k < n && st == FH_OK; k++) /* each fits its own normalisation */
        st = load_one(&d->assets[k], cfg, paths[k], NULL, err);
    for (int k = 1; k < n && st == FH_OK; k++) /* names key columns and files */
        for (int j = 0; j < k && st == FH_OK; j++) {
            char a[64], b[64];
            fh_run_data_asset_name(&d->assets[j], a, sizeof a);
            fh_run_data_asset_name(&d->assets[k], b, sizeof b);
            if (strcmp(a, b) == 0)
                st = fh_error_set(err, FH_ERR_INPUT,
                                  "--data: %s and %s are both asset \"%s\" (the file name "
                                  "without its extension names an asset's validation columns "
                                  "and files); give each asset once, under distinct names",
                                  paths[j], paths[k], a);
        }
    if (st == FH_OK)
        st = concat_train_splits(d, err);
    if (st != FH_OK) {
        fh_run_data_free(d);
        return st;
    }
    size_t used = (size_t)snprintf(d->description, sizeof d->description,
                                   "%d assets, their training splits end to end (%zu bars):", n,
                                   d->market.n);
    for (int k = 0; k < n && used < sizeof d->description; k++)
        used += (size_t)snprintf(d->description + used, sizeof d->description - used,
                                 "%s %.120s (%zu bars)", k ? "," : "", d->assets[k].path,
                                 d->assets[k].bars.n);
    return FH_OK;
}

void fh_run_data_free(fh_run_data *d)
{
    for (int k = 0; d->assets && k < d->n_assets; k++)
        fh_run_data_free(&d->assets[k]);
    free(d->assets);
    free(d->segment_ends);
    fh_market_free(&d->market);
    fh_bars_free(&d->bars);
    free(d->expected_return);
    memset(d, 0, sizeof *d);
}

const fh_run_data *fh_run_data_asset(const fh_run_data *d, int k)
{
    return d->assets ? &d->assets[k] : d;
}

void fh_run_data_asset_name(const fh_run_data *asset, char *out, size_t size)
{
    const char *path = asset->path[0] ? asset->path : "synthetic";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot > base ? (size_t)(dot - base) : strlen(base), o = 0;
    for (size_t i = 0; i < n && o + 1 < size; i++) {
        char c = base[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        out[o++] = ok ? c : '_';
    }
    out[o] = 0;
}

void fh_run_data_identity(const fh_run_data *d, const char *source, fh_data_identity *id)
{
    if (!d->assets) {
        fh_data_identity_of(id, &d->bars, source);
        return;
    }
    fh_data_identity_of(id, &d->assets[0].bars, source);
    uint64_t h = 14695981039346656037ULL; /* FNV-1a 64 over the assets' hashes */
    for (int k = 0; k < d->n_assets; k++) {
        fh_data_identity one;
        fh_data_identity_of(&one, &d->assets[k].bars, "");
        for (int b = 0; b < 8; b++) {
            h ^= (one.hash >> (8 * b)) & 0xFF;
            h *= 1099511628211ULL;
        }
        if (k > 0) {
            id->n_bars += one.n_bars;
            if (one.last_time > id->last_time)
                id->last_time = one.last_time;
        }
    }
    id->hash = h;
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
    if (d->assets) { /* each asset's own splits */
        size_t used = 0;
        if (size)
            out[0] = 0;
        for (int k = 0; k < d->n_assets && used + 1 < size; k++) {
            snprintf(out + used, size - used, "%s%s: ", k ? "; " : "", d->assets[k].path);
            used = strlen(out);
            if (used + 1 < size)
                fh_run_data_describe_splits(&d->assets[k], out + used, size - used);
            used = strlen(out);
        }
        return;
    }
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
    if (d->assets) {
        view->n_segments = d->n_assets;
        view->segment_ends = d->segment_ends;
    }
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
