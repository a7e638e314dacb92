/* capi_market.c — market data (capi.h): fh_run_data_load behind a handle, so Python
 * sees exactly the bars, features, normalisation and splits `foxhunt train` builds from
 * the same configuration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"

fh_api_market *fh_api_market_load(const fh_api_config *cfg, const float *norm_mean,
                                  const float *norm_std, char *err, size_t err_cap)
{
    const fh_api_config *c = (const fh_api_config *)capi_object_of(cfg, CAPI_CONFIG);
    if (!c)
        return capi_fail_out(err, err_cap, "market: %s", fh_api_last_error(NULL));
    if (!norm_mean != !norm_std)
        return capi_fail_out(err, err_cap, "market: give both norm_mean and norm_std (a "
                             "checkpoint's norm.mean and norm.std), or neither to fit them "
                             "on the training split");
    fh_feature_norm norm;
    if (norm_mean) {
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++) {
            if (!isfinite(norm_mean[j]) || !isfinite(norm_std[j]) || !(norm_std[j] > 0.0f))
                return capi_fail_out(err, err_cap, "market: normalisation feature %d (%s): "
                                     "mean %g, std %g; a mean is finite and a standard "
                                     "deviation finite and > 0", j, fh_feature_name(j),
                                     (double)norm_mean[j], (double)norm_std[j]);
            norm.mean[j] = norm_mean[j];
            norm.std[j] = norm_std[j];
        }
    }
    fh_api_market *m = calloc(1, sizeof *m);
    if (!m)
        return capi_fail_out(err, err_cap, "market: out of memory");
    capi_object_init(&m->obj, CAPI_MARKET);
    m->refs = 1;
    m->cfg = c->cfg;
    if (fh_run_data_load(&m->data, &m->cfg, norm_mean ? &norm : NULL, &m->obj.err) != FH_OK) {
        capi_error_out(err, err_cap, &m->obj.err);
        free(m);
        return NULL;
    }
    int n_assets = m->data.n_assets;
    if (n_assets > 1) { /* its bars are the assets', one market per asset */
        fh_run_data_free(&m->data);
        free(m);
        return capi_fail_out(err, err_cap, "market: data names %d assets; a Market is one "
                             "asset's bars: open one Market per CSV", n_assets);
    }
    return m;
}

void capi_market_retain(fh_api_market *m)
{
    m->refs++;
}

void capi_market_release(fh_api_market *m)
{
    if (--m->refs > 0)
        return;
    fh_run_data_free(&m->data);
    free(m);
}

void fh_api_market_free(fh_api_market *m)
{
    if (!capi_object_of(m, CAPI_MARKET))
        return;
    capi_object_kill(&m->obj);
    capi_market_release(m);
}

const char *fh_api_market_description(const fh_api_market *m)
{
    const fh_api_market *h = (const fh_api_market *)capi_object_of(m, CAPI_MARKET);
    return h ? h->data.description : NULL;
}

int64_t fh_api_market_bar_count(const fh_api_market *m)
{
    const fh_api_market *h = (const fh_api_market *)capi_object_of(m, CAPI_MARKET);
    return h ? (int64_t)h->data.bars.n : -1;
}

int64_t fh_api_market_row_count(const fh_api_market *m)
{
    const fh_api_market *h = (const fh_api_market *)capi_object_of(m, CAPI_MARKET);
    return h ? (int64_t)h->data.market.n : -1;
}

int fh_api_market_is_synthetic(const fh_api_market *m)
{
    const fh_api_market *h = (const fh_api_market *)capi_object_of(m, CAPI_MARKET);
    return h ? h->data.synthetic : -1;
}

static void copy_if(void *dst, const void *src, size_t bytes)
{
    if (dst && bytes)
        memcpy(dst, src, bytes);
}

int fh_api_market_bars(fh_api_market *market, int64_t *time, double *open, double *high,
                       double *low, double *close, double *volume)
{
    CAPI_ENTER(fh_api_market, m, market, CAPI_MARKET);
    const fh_bars *b = &m->data.bars;
    size_t n = b->n;
    copy_if(time, b->time, n * sizeof *time);
    copy_if(open, b->open, n * sizeof *open);
    copy_if(high, b->high, n * sizeof *high);
    copy_if(low, b->low, n * sizeof *low);
    copy_if(close, b->close, n * sizeof *close);
    copy_if(volume, b->volume, n * sizeof *volume);
    return FH_API_OK;
}

int fh_api_market_rows(fh_api_market *market, float *features, float *close, float *sigma,
                       int64_t *time, double *expected_return)
{
    CAPI_ENTER(fh_api_market, m, market, CAPI_MARKET);
    const fh_market *mk = &m->data.market;
    if (expected_return && !mk->expected_return)
        return fh_error_set(&m->obj.err, FH_ERR_INPUT, "%s: no expected return: only the "
                            "synthetic market has one (its hidden drift)", m->data.description);
    size_t n = mk->n;
    copy_if(features, mk->features, n * FH_N_MARKET_FEATURES * sizeof *features);
    copy_if(close, mk->close, n * sizeof *close);
    copy_if(sigma, mk->sigma, n * sizeof *sigma);
    copy_if(time, mk->time, n * sizeof *time);
    copy_if(expected_return, mk->expected_return, n * sizeof *expected_return);
    return FH_API_OK;
}

int fh_api_market_raw_features(fh_api_market *market, float *features, float *sigma)
{
    CAPI_ENTER(fh_api_market, m, market, CAPI_MARKET);
    if (!features)
        return fh_error_set(&m->obj.err, FH_ERR_INPUT, "raw features: the output is NULL");
    /* fh_features_compute wants sigma's room even when the caller does not */
    float *own_sigma = NULL;
    if (!sigma && !(sigma = own_sigma = malloc(m->data.bars.n * sizeof *sigma)))
        return fh_error_set(&m->obj.err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__,
                            __LINE__);
    fh_status st = fh_features_compute(&m->data.bars, features, sigma, &m->obj.err);
    free(own_sigma);
    return st;
}

int fh_api_market_norm(fh_api_market *market, float *mean, float *std)
{
    CAPI_ENTER(fh_api_market, m, market, CAPI_MARKET);
    copy_if(mean, m->data.market.norm.mean, sizeof m->data.market.norm.mean);
    copy_if(std, m->data.market.norm.std, sizeof m->data.market.norm.std);
    return FH_API_OK;
}

int fh_api_market_split(fh_api_market *market, const char *split, int64_t *begin, int64_t *end)
{
    CAPI_ENTER(fh_api_market, m, market, CAPI_MARKET);
    fh_split s;
    if (!capi_split_parse(split, &s))
        return fh_error_set(&m->obj.err, FH_ERR_INPUT, "split \"%.64s\": use train, "
                            "validation, test or all", split ? split : "(NULL)");
    if (!begin || !end)
        return fh_error_set(&m->obj.err, FH_ERR_INPUT, "split: begin and end are required");
    const fh_market *mk = &m->data.market;
    fh_market_view v = fh_market_view_of(mk, s);
    *begin = mk->features && v.features ? (int64_t)((v.features - mk->features) /
                                                    FH_N_MARKET_FEATURES)
                                        : 0;
    *end = *begin + (int64_t)v.n;
    return FH_API_OK;
}

const char *fh_api_feature_name(int i)
{
    return fh_feature_name(i);
}
