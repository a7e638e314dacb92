/* test_nn_optim.c — Adam and AdamW (decoupled weight decay) against hand-computed steps
 * and an independent double recurrence (bias-corrected, torch form; AdamW's decay
 * before the step, torch.optim.AdamW), the PPO / curiosity defaults, and joint
 * gradient-norm clipping over two networks (norm vs a double reference, clipped norm
 * equals max_norm within 1e-6 relative, no change below the threshold). */
#include <string.h>

#include "foxhunt/nn.h"
#include "test_util.h"

int main(void)
{
    fh_adam_config cfg;
    fh_adam_config_default_ppo(&cfg);
    CHECK(cfg.lr == 3e-4f && cfg.beta1 == 0.9f && cfg.beta2 == 0.999f && cfg.eps == 1e-5f);
    fh_adam_config_default_curiosity(&cfg);
    CHECK(cfg.lr == 1e-3f && cfg.eps == 1e-8f && cfg.weight_decay == 0.0f);
    fh_adam_config_default_ppo(&cfg);
    CHECK(cfg.weight_decay == 0.0f);

    /* hand-computed: lr 0.1, eps 1e-8, p0 = 1, g1 = 0.5, g2 = -1.
     * step 1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25 -> p = 1 - 0.1 = 0.9
     * step 2: m = 0.045 - 0.1 = -0.055, v = 0.00024975 + 0.001 = 0.00124975,
     *         mhat = -0.055 / 0.19 = -0.28947368, vhat = 0.00124975 / 0.001999 = 0.62518759,
     *         p = 0.9 + 0.1 * 0.28947368 / 0.79068805 = 0.93661009 */
    fh_adam_config hc = {0.1f, 0.9f, 0.999f, 1e-8f, 0.0f};
    float p = 1.0f, m = 0.0f, v = 0.0f, g = 0.5f;
    fh_adam_update(&p, &m, &v, &g, 1, 1, &hc);
    CHECK_CLOSE(p, 0.9, 1e-6, 0);
    CHECK_CLOSE(m, 0.05, 1e-8, 1e-6);
    CHECK_CLOSE(v, 0.00025, 1e-10, 1e-4); /* float32 (1 - 0.999f) */
    g = -1.0f;
    fh_adam_update(&p, &m, &v, &g, 1, 2, &hc);
    CHECK_CLOSE(p, 0.93661009, 2e-6, 0);

    /* AdamW, the same steps with weight_decay 0.5: p *= 1 - 0.1 * 0.5 = 0.95 first.
     * step 1: p = 0.95 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.850000002
     * step 2: p = 0.85 * 0.95 + 0.1 * 0.28947368 / 0.79068805 = 0.8075 + 0.03661035
     *           = 0.84411035 (float32 arithmetic: within 2e-6) */
    fh_adam_config wc = {0.1f, 0.9f, 0.999f, 1e-8f, 0.5f};
    CHECK(fh_adam_decay_factor(wc.lr, wc.weight_decay) == (float)(1.0 - 0.1f * 0.5));
    p = 1.0f, m = 0.0f, v = 0.0f, g = 0.5f;
    fh_adam_update(&p, &m, &v, &g, 1, 1, &wc);
    CHECK_CLOSE(p, 0.850000002, 2e-6, 0);
    CHECK_CLOSE(m, 0.05, 1e-8, 1e-6); /* the moments do not see the decay */
    g = -1.0f;
    fh_adam_update(&p, &m, &v, &g, 1, 2, &wc);
    CHECK_CLOSE(p, 0.84411035, 2e-6, 0);

    /* the whole buffer of an mlp vs a double recurrence over 5 steps */
    fh_error err;
    fh_mlp a = {0};
    CHECK(fh_mlp_init(&a, FH_NET_CURIOSITY, &err) == FH_OK);
    fh_mlp_init_orthogonal(&a, 3);
    size_t n = a.n_params;
    double *pd = malloc(n * sizeof *pd), *md = calloc(n, sizeof *md), *vd = calloc(n, sizeof *vd);
    for (size_t i = 0; i < n; i++)
        pd[i] = a.params[i];
    fh_adam_config_default_ppo(&cfg);
    uint64_t s = 77;
    for (int t = 1; t <= 5; t++) {
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            a.grads[i] = (float)((double)(s >> 40) / 16777216.0 - 0.5) * 0.01f;
        }
        fh_mlp_adam_step(&a, &cfg);
        double b1 = 0.9, b2 = 0.999;
        for (size_t i = 0; i < n; i++) {
            double gi = a.grads[i];
            md[i] = b1 * md[i] + (1 - b1) * gi;
            vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
            double mh = md[i] / (1 - pow(b1, t)), vh = vd[i] / (1 - pow(b2, t));
            pd[i] -= 3e-4 * mh / (sqrt(vh) + 1e-5);
        }
    }
    CHECK(a.adam_step == 5);
    double *pf = calloc(n, sizeof *pf);
    for (size_t i = 0; i < n; i++)
        pf[i] = a.params[i];
    CHECK_ARRAY_CLOSE("adam 5 steps vs double", pf, pd, n, 1e-6, 1e-5);
    for (size_t i = 0; i < n; i++)
        pf[i] = a.adam_m[i];
    CHECK_ARRAY_CLOSE("adam m", pf, md, n, 1e-9, 1e-5);

    /* AdamW over the whole buffer vs torch.optim.AdamW's recurrence in double, 5 steps at
     * lr 3e-4 and weight_decay 0.1 from the params above (random gradients); beside it
     * the same steps with weight_decay 0 (plain Adam) show how much the decay moved */
    fh_mlp c = {0}, d = {0};
    CHECK(fh_mlp_init(&c, FH_NET_CURIOSITY, &err) == FH_OK);
    CHECK(fh_mlp_init(&d, FH_NET_CURIOSITY, &err) == FH_OK);
    memcpy(c.params, a.params, n * sizeof(float));
    memcpy(d.params, a.params, n * sizeof(float));
    memset(md, 0, n * sizeof *md);
    memset(vd, 0, n * sizeof *vd);
    for (size_t i = 0; i < n; i++)
        pd[i] = a.params[i];
    fh_adam_config adamw;
    fh_adam_config_default_ppo(&adamw);
    adamw.weight_decay = 0.1f;
    for (int t = 1; t <= 5; t++) {
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            c.grads[i] = d.grads[i] = (float)((double)(s >> 40) / 16777216.0 - 0.5) * 0.01f;
        }
        fh_mlp_adam_step(&c, &adamw);
        fh_mlp_adam_step(&d, &cfg);
        double b1 = 0.9, b2 = 0.999, lr = (double)3e-4f, wd = (double)0.1f;
        for (size_t i = 0; i < n; i++) {
            double gi = c.grads[i];
            pd[i] *= 1.0 - lr * wd;
            md[i] = b1 * md[i] + (1 - b1) * gi;
            vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
            double mh = md[i] / (1 - pow(b1, t)), vh = vd[i] / (1 - pow(b2, t));
            pd[i] -= lr * mh / (sqrt(vh) + 1e-5);
        }
    }
    for (size_t i = 0; i < n; i++)
        pf[i] = c.params[i];
    CHECK_ARRAY_CLOSE("adamw 5 steps vs double", pf, pd, n, 1e-6, 1e-5);
    /* the moments do not see the decay */
    CHECK(memcmp(d.adam_m, c.adam_m, n * sizeof(float)) == 0);
    CHECK(memcmp(d.adam_v, c.adam_v, n * sizeof(float)) == 0);
    /* the decay is visible: after 5 steps of 3e-5 each, |p| shrank by ~1.5e-4 relative */
    double shrink = 0, size = 0;
    for (size_t i = 0; i < n; i++) {
        shrink += fabs((double)d.params[i]) - fabs((double)c.params[i]);
        size += fabs((double)d.params[i]);
    }
    CHECK(shrink / size > 1e-4 && shrink / size < 2e-4);
    fh_mlp_free(&c);
    fh_mlp_free(&d);
    free(pd); free(md); free(vd); free(pf);

    /* joint gradient clipping over two nets */
    fh_mlp b = {0};
    CHECK(fh_mlp_init(&b, FH_NET_ACTOR, &err) == FH_OK);
    double ss = 0;
    for (size_t i = 0; i < a.n_params; i++) {
        a.grads[i] = (float)((i % 7) * 0.01 - 0.03);
        ss += (double)a.grads[i] * a.grads[i];
    }
    for (size_t i = 0; i < b.n_params; i++) {
        b.grads[i] = (float)((i % 5) * 0.02 - 0.04);
        ss += (double)b.grads[i] * b.grads[i];
    }
    fh_mlp *nets[2] = {&a, &b};
    double norm = fh_mlp_clip_grad_norm(nets, 2, 0.5);
    CHECK_CLOSE(norm, sqrt(ss), 0, 1e-9);
    CHECK(norm > 0.5);
    double ss2 = 0;
    for (size_t i = 0; i < a.n_params; i++)
        ss2 += (double)a.grads[i] * a.grads[i];
    for (size_t i = 0; i < b.n_params; i++)
        ss2 += (double)b.grads[i] * b.grads[i];
    CHECK_CLOSE(sqrt(ss2), 0.5, 0, 1e-6);
    /* the ratio between the nets is kept: one scale for both */
    CHECK_CLOSE(b.grads[1] / a.grads[1], (0.02 - 0.04) / (0.01 - 0.03), 0, 1e-5);
    float *before = malloc(b.n_params * sizeof(float));
    memcpy(before, b.grads, b.n_params * sizeof(float));
    fh_mlp *one[1] = {&b};
    double n2 = fh_mlp_clip_grad_norm(one, 1, 100.0);
    CHECK(n2 < 100.0);
    CHECK(memcmp(before, b.grads, b.n_params * sizeof(float)) == 0);
    free(before);
    fh_mlp_free(&a);
    fh_mlp_free(&b);
    return fh_test_finish();
}
