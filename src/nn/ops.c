/* ops.c — the batched ops of nn.h, forward and backward side by side (STYLE habit 3).
 * Matrix products go through OpenBLAS sgemm; everything else is a plain loop in a fixed
 * order so that results are bit-identical run to run. Row-wise reductions (softmax,
 * entropy) accumulate in double: they are short and it costs nothing measurable. */
#include "foxhunt/nn.h"
#include "nn/nn_internal.h"

#include <math.h>
#include <string.h>

#include <cblas.h>

/* ---- linear ---- */
void fh_linear_forward(float *y, const float *x, const float *w, const float *b, int B,
                       int in, int out)
{
    if (B <= 0)
        return;
    for (int r = 0; r < B; r++) /* y (B, out) starts as the bias row */
        memcpy(y + (size_t)r * out, b, (size_t)out * sizeof(float));
    /* y += x (B, in) . W^T (in, out) */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, out, in, 1.0f, x, in, w, in,
                1.0f, y, out);
}

static void linear_backward_impl(float *dx, float *dw, float *db, const float *dy,
                                 const float *x, const float *w, int B, int in, int out,
                                 float beta_dx)
{
    if (B <= 0)
        return;
    /* dw (out, in) += dy^T (out, B) . x (B, in) */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, B, 1.0f, dy, out, x, in,
                1.0f, dw, in);
    /* db (out) += sum over rows of dy, rows in order */
    for (int r = 0; r < B; r++) {
        const float *dyr = dy + (size_t)r * out;
        for (int j = 0; j < out; j++)
            db[j] += dyr[j];
    }
    /* dx (B, in) = beta dx + dy (B, out) . W (out, in) */
    if (dx)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, in, out, 1.0f, dy, out, w,
                    in, beta_dx, dx, in);
}

void fh_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                        const float *w, int B, int in, int out)
{
    linear_backward_impl(dx, dw, db, dy, x, w, B, in, out, 1.0f);
}

void fh_linear_backward_overwrite_dx(float *dx, float *dw, float *db, const float *dy,
                                     const float *x, const float *w, int B, int in, int out)
{
    linear_backward_impl(dx, dw, db, dy, x, w, B, in, out, 0.0f);
}

/* ---- activations ---- */
void fh_relu_forward(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void fh_relu_backward(float *dx, const float *dy, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (y[i] > 0.0f)
            dx[i] += dy[i];
}

void fh_leaky_relu_forward(float *y, const float *x, size_t n, float slope)
{
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}

void fh_leaky_relu_backward(float *dx, const float *dy, const float *y, size_t n,
                            float slope)
{
    for (size_t i = 0; i < n; i++)
        dx[i] += y[i] > 0.0f ? dy[i] : slope * dy[i];
}

/* ---- LayerNorm (row-wise) ---- */
void fh_layer_norm_forward(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta, int B, int n, float eps)
{
    for (int b = 0; b < B; b++) {
        const float *xr = x + (size_t)b * n;
        float *yr = y + (size_t)b * n;
        /* two passes in double: a row's mean can be large against its spread */
        double s = 0.0;
        for (int i = 0; i < n; i++)
            s += xr[i];
        double mu = s / n, ss = 0.0;
        for (int i = 0; i < n; i++) {
            double e = xr[i] - mu;
            ss += e * e;
        }
        float m = (float)mu, r = (float)(1.0 / sqrt(ss / n + (double)eps));
        mean[b] = m;
        rstd[b] = r;
        /* xhat from the stored float mean and rstd, exactly as the backward rebuilds it */
        for (int i = 0; i < n; i++)
            yr[i] = gamma[i] * ((xr[i] - m) * r) + beta[i];
    }
}

void fh_layer_norm_backward(float *dx, float *dgamma, float *dbeta, const float *dy,
                            const float *x, const float *mean, const float *rstd,
                            const float *gamma, int B, int n)
{
    for (int b = 0; b < B; b++) {
        const float *xr = x + (size_t)b * n, *dyr = dy + (size_t)b * n;
        float m = mean[b], r = rstd[b];
        double s1 = 0.0, s2 = 0.0; /* sum g, sum g xhat */
        for (int i = 0; i < n; i++) {
            float xh = (xr[i] - m) * r, g = dyr[i] * gamma[i];
            s1 += g;
            s2 += (double)g * xh;
            dgamma[i] += dyr[i] * xh;
            dbeta[i] += dyr[i];
        }
        if (!dx)
            continue;
        float c1 = (float)(s1 / n), c2 = (float)(s2 / n);
        float *dxr = dx + (size_t)b * n;
        for (int i = 0; i < n; i++) {
            float xh = (xr[i] - m) * r, g = dyr[i] * gamma[i];
            dxr[i] += r * (g - c1 - xh * c2);
        }
    }
}

/* ---- softmax family ---- */
static float row_max(const float *v, int K)
{
    float m = v[0];
    for (int k = 1; k < K; k++)
        if (v[k] > m)
            m = v[k];
    return m;
}

void fh_softmax_forward(float *p, const float *logits, int B, int K)
{
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * K;
        float *pr = p + (size_t)b * K;
        float m = row_max(z, K);
        double s = 0.0;
        for (int k = 0; k < K; k++) {
            pr[k] = expf(z[k] - m);
            s += pr[k];
        }
        float inv = (float)(1.0 / s);
        for (int k = 0; k < K; k++)
            pr[k] *= inv;
    }
}

void fh_softmax_backward(float *dlogits, const float *dp, const float *p, int B, int K)
{
    for (int b = 0; b < B; b++) {
        const float *g = dp + (size_t)b * K, *pr = p + (size_t)b * K;
        float *dz = dlogits + (size_t)b * K;
        double dot = 0.0;
        for (int k = 0; k < K; k++)
            dot += (double)g[k] * pr[k];
        for (int k = 0; k < K; k++)
            dz[k] += pr[k] * (g[k] - (float)dot);
    }
}

void fh_log_softmax_forward(float *logp, const float *logits, int B, int K)
{
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * K;
        float *lp = logp + (size_t)b * K;
        float m = row_max(z, K);
        double s = 0.0;
        for (int k = 0; k < K; k++)
            s += exp((double)(z[k] - m));
        float lse = m + (float)log(s);
        for (int k = 0; k < K; k++)
            lp[k] = z[k] - lse;
    }
}

void fh_log_softmax_backward(float *dlogits, const float *dlogp, const float *logp, int B,
                             int K)
{
    for (int b = 0; b < B; b++) {
        const float *g = dlogp + (size_t)b * K, *lp = logp + (size_t)b * K;
        float *dz = dlogits + (size_t)b * K;
        double s = 0.0;
        for (int k = 0; k < K; k++)
            s += g[k];
        for (int k = 0; k < K; k++)
            dz[k] += g[k] - expf(lp[k]) * (float)s;
    }
}

void fh_categorical_log_prob_forward(float *lp, const float *logp, const int32_t *actions,
                                     int B, int K)
{
    for (int b = 0; b < B; b++)
        lp[b] = logp[(size_t)b * K + actions[b]];
}

void fh_categorical_log_prob_backward(float *dlogp, const float *dlp,
                                      const int32_t *actions, int B, int K)
{
    for (int b = 0; b < B; b++)
        dlogp[(size_t)b * K + actions[b]] += dlp[b];
}

void fh_categorical_entropy_forward(float *ent, const float *logp, int B, int K)
{
    for (int b = 0; b < B; b++) {
        const float *lp = logp + (size_t)b * K;
        double h = 0.0;
        for (int k = 0; k < K; k++)
            h -= (double)expf(lp[k]) * lp[k];
        ent[b] = (float)h;
    }
}

void fh_categorical_entropy_backward(float *dlogp, const float *dent, const float *logp,
                                     int B, int K)
{
    for (int b = 0; b < B; b++) {
        const float *lp = logp + (size_t)b * K;
        float *g = dlogp + (size_t)b * K;
        for (int k = 0; k < K; k++)
            g[k] += dent[b] * (-expf(lp[k]) * (lp[k] + 1.0f));
    }
}

/* ---- MSE (curiosity) ---- */
float fh_mse_forward(const float *pred, const float *target, size_t n)
{
    if (n == 0)
        return 0.0f;
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)pred[i] - target[i];
        s += e * e;
    }
    return (float)(s / (double)n);
}

void fh_mse_backward(float *dpred, float dloss, const float *pred, const float *target,
                     size_t n)
{
    if (n == 0)
        return;
    float c = 2.0f * dloss / (float)n;
    for (size_t i = 0; i < n; i++)
        dpred[i] += c * (pred[i] - target[i]);
}
