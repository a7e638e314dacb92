/* optim.c — Adam with bias correction (torch.optim.Adam's update; with weight_decay > 0
 * torch.optim.AdamW's decoupled decay) over a flat buffer, and global gradient-norm
 * clipping across networks (torch clip_grad_norm_). Because params, grads, m and v
 * share one layout, each is one loop. */
#include "foxhunt/nn.h"

#include <math.h>

void fh_adam_config_default_ppo(fh_adam_config *cfg)
{
    cfg->lr = 3e-4f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-5f;
    cfg->weight_decay = 0.0f;
}

void fh_adam_config_default_curiosity(fh_adam_config *cfg)
{
    cfg->lr = 1e-3f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->weight_decay = 0.0f;
}

float fh_adam_decay_factor(float lr, float weight_decay)
{
    return (float)(1.0 - (double)lr * (double)weight_decay);
}

void fh_adam_update(float *p, float *m, float *v, const float *g, size_t n, int64_t t,
                    const fh_adam_config *cfg)
{
    float b1 = cfg->beta1, b2 = cfg->beta2;
    double bc1 = 1.0 - pow((double)b1, (double)t);
    double bc2 = 1.0 - pow((double)b2, (double)t);
    float step_size = (float)(cfg->lr / bc1);
    float inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
    float eps = cfg->eps;
    if (cfg->weight_decay > 0.0f) { /* AdamW: decay first, from the params before the step */
        float decay = fh_adam_decay_factor(cfg->lr, cfg->weight_decay);
        for (size_t i = 0; i < n; i++)
            p[i] *= decay;
    }
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + eps);
    }
}

void fh_mlp_adam_step(fh_mlp *m, const fh_adam_config *cfg)
{
    m->adam_step += 1;
    fh_adam_update(m->params, m->adam_m, m->adam_v, m->grads, m->n_params, m->adam_step, cfg);
}

double fh_mlp_clip_grad_norm(fh_mlp *const *nets, int n_nets, double max_norm)
{
    double ss = 0.0;
    for (int k = 0; k < n_nets; k++) {
        const float *g = nets[k]->grads;
        for (size_t i = 0; i < nets[k]->n_params; i++)
            ss += (double)g[i] * g[i];
    }
    double norm = sqrt(ss);
    double coef = max_norm / (norm + 1e-6);
    if (coef < 1.0) {
        float c = (float)coef;
        for (int k = 0; k < n_nets; k++) {
            float *g = nets[k]->grads;
            for (size_t i = 0; i < nets[k]->n_params; i++)
                g[i] *= c;
        }
    }
    return norm;
}
