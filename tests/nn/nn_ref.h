/* nn_ref.h — independent float64 references for the nn tests (not the library's code):
 * a seeded RNG, the MLP forward (with LayerNorm for PQN), log-softmax, the PPO loss, and
 * central finite differences. Everything here is written from the formulas in SPEC
 * §4/§6/§7, CleanRL's ppo.py and torch.nn.LayerNorm's definition, in double, so the
 * float32 library is checked against something else. */
#ifndef FOXHUNT_TESTS_NN_REF_H
#define FOXHUNT_TESTS_NN_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/nn.h"

typedef struct {
    uint64_t s;
} ref_rng;

static inline uint64_t ref_next(ref_rng *r)
{
    /* xorshift64* — deliberately not the library's generator */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

static inline double ref_uniform(ref_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(ref_next(r) >> 11) / 9007199254740992.0);
}

/* uniform in [lo, hi] but at least `gap` away from zero (keeps ReLU kinks away from
 * the finite-difference stencil) */
static inline double ref_uniform_nz(ref_rng *r, double lo, double hi, double gap)
{
    double v;
    do {
        v = ref_uniform(r, lo, hi);
    } while (fabs(v) < gap);
    return v;
}

static inline void ref_fill(ref_rng *r, float *f, double *d, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        float v = (float)ref_uniform(r, lo, hi);
        if (f)
            f[i] = v;
        if (d)
            d[i] = v;
    }
}

/* Flat offset of layer l's weight (bias, then with LayerNorm gamma and beta, follow it),
 * walked from the dims independently of fh_net_tensors. */
static inline size_t ref_weight_offset(const fh_net_desc *d, int layer)
{
    size_t off = 0;
    for (int l = 0; l < layer; l++) /* layers before `layer` are hidden ones */
        off += (size_t)d->dims[l + 1] * d->dims[l] + (d->layer_norm ? 3 : 1) * d->dims[l + 1];
    return off;
}

/* LayerNorm of one row in place: v = gamma (v - mean) / sqrt(var + eps) + beta,
 * population variance. */
static inline void ref_layer_norm(double *v, int n, const double *gamma, const double *beta,
                                  double eps)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += v[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (v[i] - mean) * (v[i] - mean);
    var /= n;
    for (int i = 0; i < n; i++)
        v[i] = gamma[i] * (v[i] - mean) / sqrt(var + eps) + beta[i];
}

/* out (B, dims[L]) = MLP(x (B, dims[0])) in double; scratch holds 2 * B * 1024. */
static inline void ref_mlp_forward(double *out, const fh_net_desc *d, const double *p,
                                   const double *x, int B, double *scratch)
{
    const double *in = x;
    double *bufs[2] = {scratch, scratch + (size_t)B * 1024};
    for (int l = 0; l < d->n_layers; l++) {
        int ni = d->dims[l], no = d->dims[l + 1];
        const double *W = p + ref_weight_offset(d, l);
        const double *bias = W + (size_t)no * ni;
        const double *gamma = bias + no, *beta = gamma + no; /* LayerNorm nets only */
        int hidden = l < d->n_layers - 1;
        double *o = l == d->n_layers - 1 ? out : bufs[l & 1];
        for (int b = 0; b < B; b++) {
            double *orow = o + (size_t)b * no;
            for (int j = 0; j < no; j++) {
                double s = bias[j];
                for (int i = 0; i < ni; i++)
                    s += W[(size_t)j * ni + i] * in[(size_t)b * ni + i];
                orow[j] = s;
            }
            if (hidden && d->layer_norm)
                ref_layer_norm(orow, no, gamma, beta, d->norm_eps);
            for (int j = 0; j < no && hidden; j++) {
                double s = orow[j];
                if (d->hidden_act == FH_ACT_RELU)
                    s = s > 0 ? s : 0;
                else if (d->hidden_act == FH_ACT_LEAKY_RELU)
                    s = s > 0 ? s : d->leaky_slope * s;
                orow[j] = s;
            }
        }
        in = o;
    }
}

static inline void ref_log_softmax(double *lp, const double *z, int K)
{
    double m = z[0];
    for (int k = 1; k < K; k++)
        m = z[k] > m ? z[k] : m;
    double s = 0;
    for (int k = 0; k < K; k++)
        s += exp(z[k] - m);
    double lse = m + log(s);
    for (int k = 0; k < K; k++)
        lp[k] = z[k] - lse;
}

static inline double ref_clamp(double x, double lo, double hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* CleanRL's PPO loss in double from logits (B, K) and values (B). */
static inline double ref_ppo_loss(const double *logits, const double *values,
                                  const int32_t *actions, const double *old_logp,
                                  const double *adv_raw, const double *returns,
                                  const double *old_values, int B, int K,
                                  const fh_ppo_loss_config *cfg)
{
    double mean = 0, var = 0;
    for (int i = 0; i < B; i++)
        mean += adv_raw[i];
    mean /= B;
    for (int i = 0; i < B; i++)
        var += (adv_raw[i] - mean) * (adv_raw[i] - mean);
    double sd = sqrt(var / (B - 1));
    double pg = 0, ent = 0, vl = 0;
    double lp[256];
    for (int i = 0; i < B; i++) {
        ref_log_softmax(lp, logits + (size_t)i * K, K);
        double a = cfg->norm_adv ? (adv_raw[i] - mean) / (sd + 1e-8) : adv_raw[i];
        double r = exp(lp[actions[i]] - old_logp[i]);
        double l1 = -a * r, l2 = -a * ref_clamp(r, 1 - cfg->clip_coef, 1 + cfg->clip_coef);
        pg += l1 > l2 ? l1 : l2;
        for (int k = 0; k < K; k++)
            ent -= exp(lp[k]) * lp[k];
        double e = values[i] - returns[i];
        if (cfg->vclip_coef > 0) {
            double vc = old_values[i] +
                        ref_clamp(values[i] - old_values[i], -cfg->vclip_coef, cfg->vclip_coef);
            double ec = vc - returns[i];
            vl += e * e > ec * ec ? e * e : ec * ec;
        } else {
            vl += e * e;
        }
    }
    pg /= B;
    ent /= B;
    vl = 0.5 * vl / B;
    return pg - cfg->ent_coef * ent + cfg->vf_coef * vl;
}

/* Central difference of f at v[i], step h. */
typedef double (*ref_scalar_fn)(void *ctx);
static inline double ref_fd(ref_scalar_fn f, void *ctx, double *v, size_t i, double h)
{
    double s = v[i];
    v[i] = s + h;
    double fp = f(ctx);
    v[i] = s - h;
    double fm = f(ctx);
    v[i] = s;
    return (fp - fm) / (2 * h);
}

#endif
