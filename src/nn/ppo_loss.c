/* ppo_loss.c — the PPO objective of SPEC §6, as CleanRL's ppo.py computes it:
 *   ratio = exp(newlogp - oldlogp)
 *   pg_loss = mean max(-A ratio, -A clip(ratio, 1 - c, 1 + c))   (A normalised per
 *             minibatch: (A - mean) / (std + 1e-8), std unbiased)
 *   v_loss  = 0.5 mean (V - R)^2, or with clipping
 *             0.5 mean max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)
 *   loss    = pg_loss - ent_coef mean(entropy) + vf_coef v_loss
 * and its gradient with respect to the actor's logits and the critic's values, which
 * fh_mlp_backward then carries into the two networks. */
#include "foxhunt/nn.h"

#include <math.h>
#include <string.h>

void fh_ppo_loss_config_default(fh_ppo_loss_config *cfg)
{
    cfg->clip_coef = 0.2f;
    cfg->vf_coef = 0.5f;
    cfg->ent_coef = 0.01f;
    cfg->vclip_coef = 0.0f; /* CleanRL's clip_vloss defaults to True; SPEC §6 calls it
                               optional, so the trainer's config decides */
    cfg->norm_adv = 1;
}

void fh_normalize_advantages(float *out, const float *adv, int B)
{
    if (B <= 0)
        return;
    double mean = 0.0;
    for (int i = 0; i < B; i++)
        mean += adv[i];
    mean /= B;
    double var = 0.0;
    for (int i = 0; i < B; i++) {
        double d = adv[i] - mean;
        var += d * d;
    }
    double std = B > 1 ? sqrt(var / (B - 1)) : 0.0;
    double inv = 1.0 / (std + 1e-8);
    if (B == 1)
        inv = 1.0;
    for (int i = 0; i < B; i++)
        out[i] = (float)((adv[i] - mean) * inv);
}

static float clampf(float x, float lo, float hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

float fh_ppo_surrogate_forward(const float *newlp, const float *oldlp, const float *adv,
                               int B, float clip_coef)
{
    if (B <= 0)
        return 0.0f;
    double s = 0.0;
    for (int i = 0; i < B; i++) {
        float r = expf(newlp[i] - oldlp[i]);
        float l1 = -adv[i] * r;
        float l2 = -adv[i] * clampf(r, 1.0f - clip_coef, 1.0f + clip_coef);
        s += l1 > l2 ? l1 : l2;
    }
    return (float)(s / B);
}

void fh_ppo_surrogate_backward(float *dnewlp, float dloss, const float *newlp,
                               const float *oldlp, const float *adv, int B, float clip_coef)
{
    if (B <= 0)
        return;
    float c = dloss / (float)B;
    for (int i = 0; i < B; i++) {
        float r = expf(newlp[i] - oldlp[i]);
        float l1 = -adv[i] * r;
        float l2 = -adv[i] * clampf(r, 1.0f - clip_coef, 1.0f + clip_coef);
        /* Unclipped branch (or a tie): d(-A r)/dnewlp = -A r. The clipped branch is
         * strictly larger only when r is outside the band, where it is constant. */
        if (l1 >= l2)
            dnewlp[i] += c * (-adv[i] * r);
    }
}

float fh_value_loss_forward(const float *v, const float *old_v, const float *returns, int B,
                            float clip_coef)
{
    if (B <= 0)
        return 0.0f;
    double s = 0.0;
    for (int i = 0; i < B; i++) {
        float e = v[i] - returns[i];
        float a = e * e;
        if (clip_coef > 0.0f) {
            float vc = old_v[i] + clampf(v[i] - old_v[i], -clip_coef, clip_coef);
            float ec = vc - returns[i];
            float b = ec * ec;
            s += a > b ? a : b;
        } else {
            s += a;
        }
    }
    return (float)(0.5 * s / B);
}

void fh_value_loss_backward(float *dv, float dloss, const float *v, const float *old_v,
                            const float *returns, int B, float clip_coef)
{
    if (B <= 0)
        return;
    float c = dloss / (float)B; /* d(0.5 e^2)/de = e */
    for (int i = 0; i < B; i++) {
        float e = v[i] - returns[i];
        if (clip_coef > 0.0f) {
            float dvo = v[i] - old_v[i];
            float vc = old_v[i] + clampf(dvo, -clip_coef, clip_coef);
            float ec = vc - returns[i];
            if (e * e >= ec * ec)
                dv[i] += c * e;
            else if (dvo >= -clip_coef && dvo <= clip_coef) /* torch.clamp passes 1 */
                dv[i] += c * ec;
        } else {
            dv[i] += c * e;
        }
    }
}

void fh_ppo_loss(fh_ppo_loss_stats *stats, float *dlogits, float *dvalues,
                 const float *logits, const float *values, const int32_t *actions,
                 const float *old_logp, const float *advantages, const float *returns,
                 const float *old_values, int B, int K, const fh_ppo_loss_config *cfg,
                 float *scratch)
{
    memset(stats, 0, sizeof *stats);
    if (B <= 0)
        return;
    float *logp = scratch;                   /* (B, K) */
    float *dlogp = logp + (size_t)B * K;     /* (B, K) */
    float *newlp = dlogp + (size_t)B * K;    /* (B) */
    float *adv = newlp + B;                  /* (B) */
    float *dnewlp = adv + B;                 /* (B) */
    float *ent = dnewlp + B;                 /* (B) entropy, then its upstream grad */

    fh_log_softmax_forward(logp, logits, B, K);
    fh_categorical_log_prob_forward(newlp, logp, actions, B, K);
    fh_categorical_entropy_forward(ent, logp, B, K);
    if (cfg->norm_adv)
        fh_normalize_advantages(adv, advantages, B);
    else
        memcpy(adv, advantages, (size_t)B * sizeof(float));

    double ent_sum = 0.0, kl_old = 0.0, kl = 0.0, clipped = 0.0;
    for (int i = 0; i < B; i++) {
        ent_sum += ent[i];
        double lr = (double)newlp[i] - old_logp[i];
        double r = exp(lr);
        kl_old += -lr;
        kl += (r - 1.0) - lr;
        clipped += fabs(r - 1.0) > cfg->clip_coef ? 1.0 : 0.0;
    }
    stats->pg_loss = fh_ppo_surrogate_forward(newlp, old_logp, adv, B, cfg->clip_coef);
    stats->v_loss = fh_value_loss_forward(values, old_values, returns, B, cfg->vclip_coef);
    stats->entropy = ent_sum / B;
    stats->approx_kl = kl / B;
    stats->old_approx_kl = kl_old / B;
    stats->clipfrac = clipped / B;
    stats->loss = stats->pg_loss - cfg->ent_coef * stats->entropy + cfg->vf_coef * stats->v_loss;

    /* backward: loss -> newlp, entropy -> logp -> logits; loss -> values */
    memset(dlogp, 0, (size_t)B * K * sizeof(float));
    memset(dnewlp, 0, (size_t)B * sizeof(float));
    fh_ppo_surrogate_backward(dnewlp, 1.0f, newlp, old_logp, adv, B, cfg->clip_coef);
    fh_categorical_log_prob_backward(dlogp, dnewlp, actions, B, K);
    for (int i = 0; i < B; i++)
        ent[i] = -cfg->ent_coef / (float)B;
    fh_categorical_entropy_backward(dlogp, ent, logp, B, K);
    fh_log_softmax_backward(dlogits, dlogp, logp, B, K);
    fh_value_loss_backward(dvalues, cfg->vf_coef, values, old_values, returns, B,
                           cfg->vclip_coef);
}
