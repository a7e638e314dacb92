/* test_nn_grad.c — gradient checks for every op of nn.h, for the MLP backward of each
 * network, and for the whole PPO loss through actor + critic, against central finite
 * differences of independent float64 references (nn_ref.h).
 *
 * Step h = 1e-6 (in double: truncation ~h^2 f''' and rounding ~1e-16/h are both far
 * below float32 resolution). The analytic gradients are float32, so the tolerance is
 * |analytic - fd| <= atol + rtol |fd| with atol 1e-5 and rtol 1e-3 for single ops
 * (values O(1)); the network checks scale atol by the largest reference gradient
 * (atol = 2e-3 max|fd|, rtol 1e-2) because float32 forward rounding through six
 * layers is larger. Inputs that feed a kink (ReLU at 0) are kept >= 1e-3 away from it.
 * Every backward is called on gradients pre-filled with random values and the check
 * is on the difference, which also verifies that backward accumulates. */
#include <stdio.h>

#include "foxhunt/nn.h"
#include "nn_ref.h"
#include "test_util.h"

#define H 1e-6
#define ATOL 1e-5
#define RTOL 1e-3

/* Compares (after - before) with finite differences of f over vars[idx[0..n)]. */
static void check_grad(const char *what, ref_scalar_fn f, void *ctx, double *vars,
                       const size_t *idx, size_t n, const float *after, const float *before,
                       double atol, double rtol)
{
    double *a = malloc(n * sizeof *a), *r = malloc(n * sizeof *r);
    double maxr = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = idx ? idx[k] : k;
        a[k] = (double)after[i] - (before ? (double)before[i] : 0.0);
        r[k] = ref_fd(f, ctx, vars, i, H);
        if (fabs(r[k]) > maxr)
            maxr = fabs(r[k]);
    }
    if (atol < 0) /* relative to the largest gradient */
        atol = -atol * maxr;
    if (!CHECK_ARRAY_CLOSE(what, a, r, n, atol, rtol))
        fprintf(stderr, "  (%s: %zu values, max |fd| %.3g)\n", what, n, maxr);
    free(a);
    free(r);
}

static float *fdup(const float *x, size_t n)
{
    float *p = malloc(n * sizeof *p);
    memcpy(p, x, n * sizeof *p);
    return p;
}

/* ---------------- linear ---------------- */
typedef struct {
    int B, in, out;
    double *x, *w, *b, *gy;
} lin_ctx;

static double lin_loss(void *c)
{
    lin_ctx *t = c;
    double s = 0;
    for (int r = 0; r < t->B; r++)
        for (int j = 0; j < t->out; j++) {
            double y = t->b[j];
            for (int i = 0; i < t->in; i++)
                y += t->w[j * t->in + i] * t->x[r * t->in + i];
            s += t->gy[r * t->out + j] * y;
        }
    return s;
}

static void test_linear(ref_rng *rng)
{
    enum { B = 5, IN = 7, OUT = 4 };
    float x[B * IN], w[OUT * IN], b[OUT], gy[B * OUT], y[B * OUT];
    double xd[B * IN], wd[OUT * IN], bd[OUT], gyd[B * OUT];
    ref_fill(rng, x, xd, B * IN, -1, 1);
    ref_fill(rng, w, wd, OUT * IN, -1, 1);
    ref_fill(rng, b, bd, OUT, -1, 1);
    ref_fill(rng, gy, gyd, B * OUT, -1, 1);
    fh_linear_forward(y, x, w, b, B, IN, OUT);
    double yd[B * OUT], yref[B * OUT];
    for (int r = 0; r < B; r++)
        for (int j = 0; j < OUT; j++) {
            double s = bd[j];
            for (int i = 0; i < IN; i++)
                s += wd[j * IN + i] * xd[r * IN + i];
            yref[r * OUT + j] = s;
            yd[r * OUT + j] = y[r * OUT + j];
        }
    CHECK_ARRAY_CLOSE("linear forward", yd, yref, B * OUT, 1e-6, 1e-5);

    float dx0[B * IN], dw0[OUT * IN], db0[OUT];
    ref_fill(rng, dx0, NULL, B * IN, -1, 1);
    ref_fill(rng, dw0, NULL, OUT * IN, -1, 1);
    ref_fill(rng, db0, NULL, OUT, -1, 1);
    float *dx = fdup(dx0, B * IN), *dw = fdup(dw0, OUT * IN), *db = fdup(db0, OUT);
    fh_linear_backward(dx, dw, db, gy, x, w, B, IN, OUT);
    lin_ctx c = {B, IN, OUT, xd, wd, bd, gyd};
    check_grad("linear dx", lin_loss, &c, xd, NULL, B * IN, dx, dx0, ATOL, RTOL);
    check_grad("linear dw", lin_loss, &c, wd, NULL, OUT * IN, dw, dw0, ATOL, RTOL);
    check_grad("linear db", lin_loss, &c, bd, NULL, OUT, db, db0, ATOL, RTOL);
    free(dx);
    free(dw);
    free(db);
}

/* ---------------- activations ---------------- */
typedef struct {
    size_t n;
    double *x, *gy;
    double slope; /* 0 for ReLU */
} act_ctx;

static double act_loss(void *c)
{
    act_ctx *t = c;
    double s = 0;
    for (size_t i = 0; i < t->n; i++)
        s += t->gy[i] * (t->x[i] > 0 ? t->x[i] : t->slope * t->x[i]);
    return s;
}

static void test_activations(ref_rng *rng)
{
    enum { N = 64 };
    float x[N], gy[N], y[N], dx0[N];
    double xd[N], gyd[N];
    for (int leaky = 0; leaky < 2; leaky++) {
        for (int i = 0; i < N; i++) {
            xd[i] = ref_uniform_nz(rng, -2, 2, 1e-3);
            x[i] = (float)xd[i];
            xd[i] = x[i];
        }
        ref_fill(rng, gy, gyd, N, -1, 1);
        ref_fill(rng, dx0, NULL, N, -1, 1);
        float *dx = fdup(dx0, N);
        float slope = 0.01f;
        if (leaky) {
            fh_leaky_relu_forward(y, x, N, slope);
            fh_leaky_relu_backward(dx, gy, y, N, slope);
        } else {
            fh_relu_forward(y, x, N);
            fh_relu_backward(dx, gy, y, N);
        }
        double yd[N], yr[N];
        for (int i = 0; i < N; i++) {
            yd[i] = y[i];
            yr[i] = xd[i] > 0 ? xd[i] : (leaky ? (double)slope : 0.0) * xd[i];
        }
        CHECK_ARRAY_CLOSE(leaky ? "leaky_relu forward" : "relu forward", yd, yr, N, 1e-7, 1e-6);
        act_ctx c = {N, xd, gyd, leaky ? (double)slope : 0.0};
        check_grad(leaky ? "leaky_relu dx" : "relu dx", act_loss, &c, xd, NULL, N, dx, dx0,
                   ATOL, RTOL);
        free(dx);
    }
}

/* ---------------- softmax family ---------------- */
enum { SB = 4, SK = 45 };
typedef struct {
    double *z, *g; /* (SB, SK) */
    const int32_t *a;
    int op; /* 0 softmax, 1 log_softmax, 2 log_prob of free logp, 3 entropy of free logp,
               4 entropy through log_softmax, 5 log_prob through log_softmax */
} sm_ctx;

static double sm_loss(void *c)
{
    sm_ctx *t = c;
    double s = 0, lp[SK];
    for (int b = 0; b < SB; b++) {
        const double *z = t->z + b * SK, *g = t->g + b * SK;
        switch (t->op) {
        case 0:
            ref_log_softmax(lp, z, SK);
            for (int k = 0; k < SK; k++)
                s += g[k] * exp(lp[k]);
            break;
        case 1:
            ref_log_softmax(lp, z, SK);
            for (int k = 0; k < SK; k++)
                s += g[k] * lp[k];
            break;
        case 2:
            s += g[0] * z[t->a[b]];
            break;
        case 3:
            for (int k = 0; k < SK; k++)
                s -= g[0] * exp(z[k]) * z[k];
            break;
        case 4:
            ref_log_softmax(lp, z, SK);
            for (int k = 0; k < SK; k++)
                s -= g[0] * exp(lp[k]) * lp[k];
            break;
        case 5:
            ref_log_softmax(lp, z, SK);
            s += g[0] * lp[t->a[b]];
            break;
        }
    }
    return s;
}

static void test_softmax_family(ref_rng *rng)
{
    float z[SB * SK], g[SB * SK], out[SB * SK], d0[SB * SK], lp[SB * SK];
    double zd[SB * SK], gd[SB * SK];
    int32_t a[SB];
    for (int b = 0; b < SB; b++)
        a[b] = (int32_t)(ref_next(rng) % SK);
    for (int op = 0; op < 6; op++) {
        ref_fill(rng, z, zd, SB * SK, -3, 3);
        ref_fill(rng, g, gd, SB * SK, -1, 1);
        ref_fill(rng, d0, NULL, SB * SK, -1, 1);
        float *d = fdup(d0, SB * SK);
        float gb[SB]; /* per-row upstream for row-scalar ops: g[b*SK] */
        for (int b = 0; b < SB; b++)
            gb[b] = g[b * SK];
        double *vars = zd;
        sm_ctx c = {zd, gd, a, op};
        const char *name = "";
        float tmp[SB * SK], row[SB];
        switch (op) {
        case 0:
            name = "softmax dlogits";
            fh_softmax_forward(out, z, SB, SK);
            fh_softmax_backward(d, g, out, SB, SK);
            break;
        case 1:
            name = "log_softmax dlogits";
            fh_log_softmax_forward(out, z, SB, SK);
            fh_log_softmax_backward(d, g, out, SB, SK);
            break;
        case 2:
            name = "categorical_log_prob dlogp";
            fh_categorical_log_prob_forward(row, z, a, SB, SK);
            fh_categorical_log_prob_backward(d, gb, a, SB, SK);
            for (int b = 0; b < SB; b++)
                CHECK(row[b] == z[b * SK + a[b]]);
            break;
        case 3:
            name = "categorical_entropy dlogp (free logp)";
            fh_categorical_entropy_backward(d, gb, z, SB, SK);
            break;
        case 4:
            name = "entropy through log_softmax dlogits";
            fh_log_softmax_forward(lp, z, SB, SK);
            fh_categorical_entropy_forward(row, lp, SB, SK);
            memset(tmp, 0, sizeof tmp);
            fh_categorical_entropy_backward(tmp, gb, lp, SB, SK);
            fh_log_softmax_backward(d, tmp, lp, SB, SK);
            for (int b = 0; b < SB; b++) { /* entropy value vs reference */
                double l[SK], h = 0;
                ref_log_softmax(l, zd + b * SK, SK);
                for (int k = 0; k < SK; k++)
                    h -= exp(l[k]) * l[k];
                CHECK_CLOSE(row[b], h, 1e-5, 1e-5);
            }
            break;
        case 5:
            name = "log_prob through log_softmax dlogits";
            fh_log_softmax_forward(lp, z, SB, SK);
            memset(tmp, 0, sizeof tmp);
            fh_categorical_log_prob_backward(tmp, gb, a, SB, SK);
            fh_log_softmax_backward(d, tmp, lp, SB, SK);
            break;
        }
        if (op <= 1) { /* forward values */
            double od[SB * SK], rd[SB * SK], l[SK];
            for (int b = 0; b < SB; b++) {
                ref_log_softmax(l, zd + b * SK, SK);
                for (int k = 0; k < SK; k++) {
                    od[b * SK + k] = out[b * SK + k];
                    rd[b * SK + k] = op == 0 ? exp(l[k]) : l[k];
                }
            }
            CHECK_ARRAY_CLOSE(op == 0 ? "softmax forward" : "log_softmax forward", od, rd,
                              SB * SK, 1e-6, 1e-5);
        }
        check_grad(name, sm_loss, &c, vars, NULL, SB * SK, d, d0, ATOL, RTOL);
        free(d);
    }
}

/* ---------------- PPO surrogate, value loss, MSE ---------------- */
enum { LB = 64 };
typedef struct {
    double *x, *old, *adv, *ret;
    double clip;
    int op; /* 0 surrogate (x = newlp), 1 value loss (x = v), 2 mse (x = pred, adv = target) */
} loss_ctx;

static double loss_fn(void *c)
{
    loss_ctx *t = c;
    double s = 0;
    for (int i = 0; i < LB; i++) {
        if (t->op == 0) {
            double r = exp(t->x[i] - t->old[i]);
            double l1 = -t->adv[i] * r, l2 = -t->adv[i] * ref_clamp(r, 1 - t->clip, 1 + t->clip);
            s += l1 > l2 ? l1 : l2;
        } else if (t->op == 1) {
            double e = t->x[i] - t->ret[i];
            if (t->clip > 0) {
                double ec = t->old[i] + ref_clamp(t->x[i] - t->old[i], -t->clip, t->clip) - t->ret[i];
                s += 0.5 * (e * e > ec * ec ? e * e : ec * ec);
            } else {
                s += 0.5 * e * e;
            }
        } else {
            double e = t->x[i] - t->adv[i];
            s += e * e;
        }
    }
    return s / LB;
}

static void test_losses(ref_rng *rng)
{
    float x[LB], old[LB], adv[LB], ret[LB], d0[LB];
    double xd[LB], oldd[LB], advd[LB], retd[LB];
    const float dloss = 1.7f; /* upstream, to check it is applied */
    /* surrogate: ratios spread over exp(+-0.6) so that clipping is active on some */
    ref_fill(rng, x, xd, LB, -3, -1);
    for (int i = 0; i < LB; i++) {
        double dl;
        do { /* keep the ratio away from the clip edges by more than the FD step */
            dl = ref_uniform(rng, -0.6, 0.6);
        } while (fabs(exp(dl) - 0.8) < 1e-4 || fabs(exp(dl) - 1.2) < 1e-4);
        old[i] = (float)(x[i] - dl);
        oldd[i] = old[i];
    }
    ref_fill(rng, adv, advd, LB, -2, 2);
    ref_fill(rng, d0, NULL, LB, -1, 1);
    int n_clipped = 0;
    for (int i = 0; i < LB; i++) {
        double r = exp(xd[i] - oldd[i]);
        double l1 = -advd[i] * r, l2 = -advd[i] * ref_clamp(r, 0.8, 1.2);
        n_clipped += l2 > l1;
    }
    CHECK_MSG(n_clipped > 4 && n_clipped < LB - 4, "clipped branch active on %d of %d",
              n_clipped, LB);
    loss_ctx c = {xd, oldd, advd, retd, 0.2, 0};
    CHECK_CLOSE(fh_ppo_surrogate_forward(x, old, adv, LB, 0.2f), loss_fn(&c), 1e-6, 1e-5);
    float *d = fdup(d0, LB);
    fh_ppo_surrogate_backward(d, dloss, x, old, adv, LB, 0.2f);
    for (int i = 0; i < LB; i++) /* compare against dloss * fd */
        d[i] = d0[i] + (d[i] - d0[i]) / dloss;
    check_grad("ppo surrogate dnewlp (clipping active)", loss_fn, &c, xd, NULL, LB, d, d0,
               ATOL, RTOL);
    free(d);

    /* value loss, with and without clipping */
    for (int clip = 0; clip < 2; clip++) {
        ref_fill(rng, x, xd, LB, -2, 2);
        ref_fill(rng, ret, retd, LB, -2, 2);
        for (int i = 0; i < LB; i++) {
            double dv;
            do {
                dv = ref_uniform(rng, -0.6, 0.6);
            } while (fabs(fabs(dv) - 0.2) < 1e-4);
            old[i] = (float)(x[i] - dv);
            oldd[i] = old[i];
        }
        loss_ctx cv = {xd, oldd, advd, retd, clip ? 0.2 : 0.0, 1};
        CHECK_CLOSE(fh_value_loss_forward(x, clip ? old : NULL, ret, LB, clip ? 0.2f : 0.0f),
                    loss_fn(&cv), 1e-6, 1e-5);
        int n_vclipped = 0;
        for (int i = 0; i < LB && clip; i++) {
            double e = xd[i] - retd[i];
            double ec = oldd[i] + ref_clamp(xd[i] - oldd[i], -0.2, 0.2) - retd[i];
            n_vclipped += ec * ec > e * e;
        }
        if (clip)
            CHECK_MSG(n_vclipped > 4, "value clipping active on %d of %d", n_vclipped, LB);
        d = fdup(d0, LB);
        fh_value_loss_backward(d, 1.0f, x, clip ? old : NULL, ret, LB, clip ? 0.2f : 0.0f);
        check_grad(clip ? "value loss dv (clipped)" : "value loss dv", loss_fn, &cv, xd, NULL,
                   LB, d, d0, ATOL, RTOL);
        free(d);
    }

    /* MSE */
    ref_fill(rng, x, xd, LB, -2, 2);
    ref_fill(rng, adv, advd, LB, -2, 2);
    loss_ctx cm = {xd, oldd, advd, retd, 0, 2};
    CHECK_CLOSE(fh_mse_forward(x, adv, LB), loss_fn(&cm), 1e-6, 1e-5);
    d = fdup(d0, LB);
    fh_mse_backward(d, 1.0f, x, adv, LB);
    check_grad("mse dpred", loss_fn, &cm, xd, NULL, LB, d, d0, ATOL, RTOL);
    free(d);

    /* advantage normalisation vs reference (mean 0, unbiased std 1) */
    float an[LB];
    ref_fill(rng, adv, advd, LB, -5, 3);
    fh_normalize_advantages(an, adv, LB);
    double m = 0, v = 0;
    for (int i = 0; i < LB; i++)
        m += advd[i];
    m /= LB;
    for (int i = 0; i < LB; i++)
        v += (advd[i] - m) * (advd[i] - m);
    double sd = sqrt(v / (LB - 1));
    double and_[LB], anr[LB];
    for (int i = 0; i < LB; i++) {
        and_[i] = an[i];
        anr[i] = (advd[i] - m) / (sd + 1e-8);
    }
    CHECK_ARRAY_CLOSE("normalize_advantages", and_, anr, LB, 1e-6, 1e-5);
}

/* ---------------- MLP backward, every network ---------------- */
typedef struct {
    const fh_net_desc *d;
    double *p, *x, *g, *out, *scratch;
    int B;
} mlp_ctx;

static double mlp_loss(void *c)
{
    mlp_ctx *t = c;
    ref_mlp_forward(t->out, t->d, t->p, t->x, t->B, t->scratch);
    double s = 0;
    for (int i = 0; i < t->B * t->d->dims[t->d->n_layers]; i++)
        s += t->g[i] * t->out[i];
    return s;
}

/* n_idx parameter indices: every bias of the first and last layer plus random picks */
static size_t pick_indices(size_t *idx, size_t n_max, const fh_mlp *m, ref_rng *rng)
{
    size_t n = 0;
    for (int t = 1; t < m->n_tensors && n < n_max; t += 2)
        for (size_t i = 0; i < m->tensors[t].numel && i < 8 && n < n_max; i++)
            idx[n++] = m->tensors[t].offset + i;
    while (n < n_max)
        idx[n++] = ref_next(rng) % m->n_params;
    return n;
}

static void test_mlp_backward(ref_rng *rng, fh_net_kind kind)
{
    enum { B = 3, NIDX = 160 };
    fh_error err;
    fh_mlp m = {0};
    fh_mlp_ws ws = {0};
    CHECK(fh_mlp_init(&m, kind, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&ws, &m, B, &err) == FH_OK);
    fh_mlp_init_orthogonal(&m, 1234 + kind);
    const fh_net_desc *d = m.desc;
    /* random biases too, so hidden units are neither all on nor all off */
    for (int t = 1; t < m.n_tensors; t += 2)
        for (size_t i = 0; i < m.tensors[t].numel; i++)
            m.params[m.tensors[t].offset + i] = (float)ref_uniform(rng, -0.3, 0.3);
    int in = d->dims[0], out = d->dims[d->n_layers];
    float *x = malloc(sizeof(float) * B * in), *g = malloc(sizeof(float) * B * out);
    double *xd = malloc(sizeof(double) * B * in), *gd = malloc(sizeof(double) * B * out);
    double *pd = malloc(sizeof(double) * m.n_params);
    double *outd = malloc(sizeof(double) * B * out), *scr = malloc(sizeof(double) * 2 * B * 1024);
    ref_fill(rng, x, xd, (size_t)B * in, -1.5, 1.5);
    ref_fill(rng, g, gd, (size_t)B * out, -1, 1);
    for (size_t i = 0; i < m.n_params; i++)
        pd[i] = m.params[i];
    /* grads pre-filled with noise: backward must add to them */
    ref_fill(rng, m.grads, NULL, m.n_params, -0.1, 0.1);
    float *g0 = fdup(m.grads, m.n_params);
    float *dx0 = malloc(sizeof(float) * B * in);
    ref_fill(rng, dx0, NULL, (size_t)B * in, -0.1, 0.1);
    float *dx = fdup(dx0, (size_t)B * in);
    float *y = malloc(sizeof(float) * B * out);
    CHECK(fh_mlp_forward(y, &ws, &m, x, B, &err) == FH_OK);
    CHECK(fh_mlp_backward(dx, &m, &ws, g, B, &err) == FH_OK);

    mlp_ctx c = {d, pd, xd, gd, outd, scr, B};
    size_t idx[NIDX];
    size_t n = pick_indices(idx, NIDX, &m, rng);
    char what[96];
    snprintf(what, sizeof what, "%s backward dparams", d->name);
    check_grad(what, mlp_loss, &c, pd, idx, n, m.grads, g0, -2e-3, 1e-2);
    snprintf(what, sizeof what, "%s backward dx", d->name);
    check_grad(what, mlp_loss, &c, xd, NULL, (size_t)B * in, dx, dx0, -2e-3, 1e-2);
    /* batch over the workspace size is an error, not an overflow */
    CHECK(fh_mlp_forward(y, &ws, &m, x, B + 1, &err) != FH_OK);
    free(x); free(g); free(xd); free(gd); free(pd); free(outd); free(scr);
    free(g0); free(dx0); free(dx); free(y);
    fh_mlp_ws_free(&ws);
    fh_mlp_free(&m);
    fh_mlp_free(&m); /* twice: safe */
}

/* ---------------- the whole PPO loss through actor + critic ---------------- */
enum { PB = 8 };
typedef struct {
    const fh_net_desc *da, *dc;
    double *pa, *pc, *x, *old_logp, *adv, *ret, *old_v, *scratch;
    const int32_t *actions;
    const fh_ppo_loss_config *cfg;
} ppo_ctx;

static double ppo_total(void *c)
{
    ppo_ctx *t = c;
    double logits[PB * FH_N_ACTIONS], values[PB];
    ref_mlp_forward(logits, t->da, t->pa, t->x, PB, t->scratch);
    ref_mlp_forward(values, t->dc, t->pc, t->x, PB, t->scratch);
    return ref_ppo_loss(logits, values, t->actions, t->old_logp, t->adv, t->ret, t->old_v, PB,
                        FH_N_ACTIONS, t->cfg);
}

static void test_ppo_full(ref_rng *rng, int vclip)
{
    enum { NIDX = 120 };
    fh_error err;
    fh_mlp a = {0}, c = {0};
    fh_mlp_ws wa = {0}, wc = {0};
    CHECK(fh_mlp_init(&a, FH_NET_ACTOR, &err) == FH_OK);
    CHECK(fh_mlp_init(&c, FH_NET_CRITIC, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&wa, &a, PB, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&wc, &c, PB, &err) == FH_OK);
    fh_mlp_init_orthogonal(&a, 7);
    fh_mlp_init_orthogonal(&c, 8);
    /* a policy output far from uniform, so the ratios and entropy move */
    for (size_t i = 0; i < (size_t)FH_N_ACTIONS * FH_ACTOR_H2; i++)
        a.params[FH_ACTOR_OFF_W2 + i] *= 60.0f;
    float x[PB * FH_STATE_DIM], old_logp[PB], adv[PB], ret[PB], old_v[PB];
    double xd[PB * FH_STATE_DIM], old_logpd[PB], advd[PB], retd[PB], old_vd[PB];
    int32_t act[PB];
    ref_fill(rng, x, xd, PB * FH_STATE_DIM, -1.5, 1.5);
    ref_fill(rng, adv, advd, PB, -2, 2);
    ref_fill(rng, ret, retd, PB, -1, 1);
    for (int i = 0; i < PB; i++)
        act[i] = (int32_t)(ref_next(rng) % FH_N_ACTIONS);

    float logits[PB * FH_N_ACTIONS], values[PB];
    CHECK(fh_mlp_forward(logits, &wa, &a, x, PB, &err) == FH_OK);
    CHECK(fh_mlp_forward(values, &wc, &c, x, PB, &err) == FH_OK);
    float lp[PB * FH_N_ACTIONS];
    fh_log_softmax_forward(lp, logits, PB, FH_N_ACTIONS);
    /* old log-probs: ratios alternate well inside and well outside the clip band */
    for (int i = 0; i < PB; i++) {
        double dl = (i % 2 ? 0.45 : 0.05) * (i % 4 < 2 ? 1 : -1);
        old_logp[i] = (float)(lp[i * FH_N_ACTIONS + act[i]] - dl);
        old_logpd[i] = old_logp[i];
        old_v[i] = (float)(values[i] + (i % 3 == 0 ? 0.5 : -0.05));
        old_vd[i] = old_v[i];
    }
    fh_ppo_loss_config cfg;
    fh_ppo_loss_config_default(&cfg);
    cfg.vclip_coef = vclip ? 0.2f : 0.0f;

    fh_mlp_zero_grad(&a);
    fh_mlp_zero_grad(&c);
    float dlogits[PB * FH_N_ACTIONS] = {0}, dvalues[PB] = {0};
    float *scratch = malloc(sizeof(float) * FH_PPO_SCRATCH_FLOATS(PB, FH_N_ACTIONS));
    fh_ppo_loss_stats st;
    fh_ppo_loss(&st, dlogits, dvalues, logits, values, act, old_logp, adv, ret,
                vclip ? old_v : NULL, PB, FH_N_ACTIONS, &cfg, scratch);
    CHECK_MSG(st.clipfrac > 0.2 && st.clipfrac < 0.8, "clipfrac %g", st.clipfrac);
    CHECK(fh_mlp_backward(NULL, &a, &wa, dlogits, PB, &err) == FH_OK);
    CHECK(fh_mlp_backward(NULL, &c, &wc, dvalues, PB, &err) == FH_OK);

    double *pa = malloc(sizeof(double) * a.n_params), *pc = malloc(sizeof(double) * c.n_params);
    for (size_t i = 0; i < a.n_params; i++)
        pa[i] = a.params[i];
    for (size_t i = 0; i < c.n_params; i++)
        pc[i] = c.params[i];
    double *scr = malloc(sizeof(double) * 2 * PB * 1024);
    ppo_ctx ctx = {a.desc, c.desc, pa, pc, xd, old_logpd, advd, retd, old_vd, scr, act, &cfg};
    CHECK_CLOSE(st.loss, ppo_total(&ctx), 1e-5, 1e-4);
    size_t idx[NIDX];
    size_t n = pick_indices(idx, NIDX, &a, rng);
    check_grad(vclip ? "PPO loss d actor (value clip)" : "PPO loss d actor", ppo_total, &ctx,
               pa, idx, n, a.grads, NULL, -2e-3, 1e-2);
    n = pick_indices(idx, NIDX, &c, rng);
    check_grad(vclip ? "PPO loss d critic (value clip)" : "PPO loss d critic", ppo_total, &ctx,
               pc, idx, n, c.grads, NULL, -2e-3, 1e-2);
    free(pa); free(pc); free(scr); free(scratch);
    fh_mlp_ws_free(&wa);
    fh_mlp_ws_free(&wc);
    fh_mlp_free(&a);
    fh_mlp_free(&c);
}

int main(void)
{
    fh_nn_set_threads(1);
    ref_rng rng = {0x1234567887654321ull};
    test_linear(&rng);
    test_activations(&rng);
    test_softmax_family(&rng);
    test_losses(&rng);
    for (int k = 0; k < FH_NET_COUNT; k++)
        test_mlp_backward(&rng, (fh_net_kind)k);
    test_ppo_full(&rng, 0);
    test_ppo_full(&rng, 1);
    return fh_test_finish();
}
