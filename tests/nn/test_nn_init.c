/* test_nn_init.c — orthogonal initialisation with CleanRL gains: for each weight
 * [out, in], W W^T = gain^2 I (out <= in) or W^T W = gain^2 I (out > in), within
 * atol 2e-5 gain^2 (float32 rounding of sums of up to 512 products); biases zero;
 * gains sqrt 2 hidden, 0.01 policy output, 1.0 value output; same seed -> same bits,
 * another seed -> other weights; grads, moments and step zeroed; LayerNorm gamma 1 and
 * beta 0, and a PQN net's linear layers equal to a Q-network's of the same seed. Checked
 * in double. */
#include <stdio.h>
#include <string.h>

#include "foxhunt/nn.h"
#include "test_util.h"

static void check_net(fh_net_kind kind, const double *gains)
{
    fh_error err;
    fh_mlp m = {0};
    CHECK(fh_mlp_init(&m, kind, &err) == FH_OK);
    for (size_t i = 0; i < 4 * m.n_params; i++) /* garbage that init must clear */
        m.mem[i] = 1.0f;
    m.adam_step = 17;
    fh_mlp_init_orthogonal(&m, 2024);
    CHECK(m.adam_step == 0);
    int zero_rest = 1;
    for (size_t i = m.n_params; i < 4 * m.n_params; i++)
        zero_rest &= m.mem[i] == 0.0f;
    CHECK_MSG(zero_rest, "%s: grads/moments not zeroed", m.desc->name);
    const fh_net_desc *d = m.desc;
    for (int l = 0; l < d->n_layers; l++) {
        int out = d->dims[l + 1], in = d->dims[l];
        const float *w = fh_mlp_weight(&m, m.params, l);
        const float *b = fh_mlp_bias(&m, m.params, l);
        double g2 = gains[l] * gains[l];
        int rows = out <= in; /* rows orthonormal */
        int n = rows ? out : in;
        double worst = 0;
        int wi = 0, wj = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j <= i; j++) {
                double s = 0;
                if (rows)
                    for (int k = 0; k < in; k++)
                        s += (double)w[i * in + k] * w[j * in + k];
                else
                    for (int k = 0; k < out; k++)
                        s += (double)w[k * in + i] * w[k * in + j];
                double e = fabs(s - (i == j ? g2 : 0.0));
                if (e > worst) {
                    worst = e;
                    wi = i;
                    wj = j;
                }
            }
        CHECK_MSG(worst <= 2e-5 * g2, "%s layer %d [%d, %d]: |W%sW%s - gain^2 I| = %g at "
                  "(%d, %d), gain %g", d->name, l, out, in, rows ? " " : "^T ",
                  rows ? "^T" : "", worst, wi, wj, gains[l]);
        int zb = 1;
        for (int i = 0; i < out; i++)
            zb &= b[i] == 0.0f;
        CHECK_MSG(zb, "%s layer %d: bias not zero", d->name, l);
        const float *gamma = fh_mlp_norm_gamma(&m, m.params, l);
        const float *beta = fh_mlp_norm_beta(&m, m.params, l);
        CHECK_MSG((gamma != NULL) == (d->layer_norm && l < d->n_layers - 1) &&
                      (beta != NULL) == (gamma != NULL),
                  "%s layer %d: LayerNorm pointers", d->name, l);
        int ones = 1;
        for (int i = 0; gamma && i < out; i++)
            ones &= gamma[i] == 1.0f && beta[i] == 0.0f;
        CHECK_MSG(ones, "%s layer %d: LayerNorm not gamma 1, beta 0", d->name, l);
    }
    /* determinism by seed */
    fh_mlp m2 = {0};
    CHECK(fh_mlp_init(&m2, kind, &err) == FH_OK);
    fh_mlp_init_orthogonal(&m2, 2024);
    CHECK(memcmp(m.params, m2.params, m.n_params * sizeof(float)) == 0);
    fh_mlp_init_orthogonal(&m2, 2025);
    CHECK(memcmp(m.params, m2.params, m.n_params * sizeof(float)) != 0);
    fh_mlp_free(&m2);
    fh_mlp_free(&m);
}

int main(void)
{
    const double s2 = sqrt(2.0);
    const double actor[] = {s2, s2, 0.01};
    const double critic[] = {s2, s2, s2, s2, s2, 1.0};
    const double cur[] = {s2, 1.0};
    const double q[] = {s2, s2, 1.0};
    check_net(FH_NET_ACTOR, actor);
    check_net(FH_NET_CRITIC, critic);
    check_net(FH_NET_CURIOSITY, cur);
    check_net(FH_NET_QNET, q);
    check_net(FH_NET_PQN, q);
    { /* PQN's linear layers are the Q-network's of the same seed */
        fh_error err;
        fh_mlp qn = {0}, pq = {0};
        CHECK(fh_mlp_init(&qn, FH_NET_QNET, &err) == FH_OK);
        CHECK(fh_mlp_init(&pq, FH_NET_PQN, &err) == FH_OK);
        fh_mlp_init_orthogonal(&qn, 77);
        fh_mlp_init_orthogonal(&pq, 77);
        for (int l = 0; l < 3; l++) {
            size_t nw = (size_t)qn.desc->dims[l + 1] * qn.desc->dims[l];
            CHECK(memcmp(fh_mlp_weight(&qn, qn.params, l), fh_mlp_weight(&pq, pq.params, l),
                         nw * sizeof(float)) == 0);
        }
        fh_mlp_free(&qn);
        fh_mlp_free(&pq);
    }
    /* a half-built mlp can be freed: zeroed struct */
    fh_mlp z;
    memset(&z, 0, sizeof z);
    fh_mlp_free(&z);
    fh_mlp_free(NULL);
    fh_mlp_ws_free(NULL);
    CHECK(z.mem == NULL);
    return fh_test_finish();
}
