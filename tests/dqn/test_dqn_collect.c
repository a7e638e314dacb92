/* test_dqn_collect.c — the DQN/PQN collection on the CPU (issue 18; dqn_collect.c and
 * src/env/dqn_device_functions.cuh), on the synthetic market with orthogonally
 * initialised networks:
 *  - qnet_forward (the device function) equals the batched OpenBLAS network fh_mlp_forward
 *    on the Q-network's layout and on PQN's (LayerNorm, gamma and beta perturbed), to 1e-4;
 *  - epsilon 0: every action is the argmax of Q(s, .) recomputed from the stored state,
 *    and q_taken is Q(s, a);
 *  - epsilon 1: actions are uniform over the 45 (chi-square, 44 degrees of freedom,
 *    critical value 78.75 at p = 0.001: it can fail, but not by chance);
 *  - transitions chain: inside an episode next_states[t] == states[t+1] exactly; a step
 *    never is both terminal and truncated; rewards are finite;
 *  - a seed gives the same batch twice, and two collections of L/2 steps give the same
 *    transitions as one of L (the episodes carry on between calls);
 *  - a bad epsilon is an input error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/dqn_device_functions.cuh"
#include "foxhunt/dqn.h"
#include "foxhunt/env.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define N 16
#define L 64

typedef struct {
    fh_train_config cfg;
    fh_run_data data;
    fh_env_market market;
    fh_mlp qnet, curiosity;
} fixture;

static int fixture_init(fixture *f)
{
    fh_error err;
    fh_train_config_default(&f->cfg);
    f->cfg.synthetic_bars = 3000;
    if (fh_run_data_load(&f->data, &f->cfg, NULL, &err) != FH_OK ||
        fh_mlp_init(&f->qnet, FH_NET_QNET, &err) != FH_OK ||
        fh_mlp_init(&f->curiosity, FH_NET_CURIOSITY, &err) != FH_OK) {
        fprintf(stderr, "fixture: %s\n", err.message);
        return 0;
    }
    fh_mlp_init_orthogonal(&f->qnet, 7);
    fh_mlp_init_orthogonal(&f->curiosity, 8);
    fh_market_view view = fh_market_view_of(&f->data.market, FH_SPLIT_TRAIN);
    f->market = fh_env_market_from_view(&view);
    return 1;
}

static void episodes_init(const fixture *f, fh_episode_state *eps, uint64_t seed)
{
    for (int n = 0; n < N; n++)
        env_episode_init(&f->cfg.env, &f->market, &eps[n], seed, (unsigned long long)n);
}

static int collect(const fixture *f, fh_episode_state *eps, float epsilon, fh_transition_batch *b)
{
    fh_error err;
    fh_status st = fh_dqn_collect_cpu(f->qnet.params, 0, f->curiosity.params, &f->cfg.env,
                                      &f->market, eps, epsilon, b, &err);
    if (st != FH_OK)
        fprintf(stderr, "collect: %s\n", err.message);
    return st == FH_OK;
}

static void test_forward_matches_blas(const fixture *f, const fh_transition_batch *b)
{
    fh_mlp_ws ws;
    fh_error err;
    CHECK(fh_mlp_ws_init(&ws, &f->qnet, N * L, &err) == FH_OK);
    float *ref = malloc((size_t)N * L * FH_N_ACTIONS * sizeof *ref);
    CHECK(fh_mlp_forward(ref, &ws, &f->qnet, b->states, N * L, &err) == FH_OK);
    double worst = 0;
    float q[FH_N_ACTIONS], h1[FH_QNET_H1], h2[FH_QNET_H2];
    for (int i = 0; i < N * L; i++) {
        qnet_forward(q, f->qnet.params, b->states + (size_t)i * FH_STATE_DIM, h1, h2, 0,
                     FH_QNET_LEAKY_SLOPE);
        for (int k = 0; k < FH_N_ACTIONS; k++) {
            double d = fabs(q[k] - ref[(size_t)i * FH_N_ACTIONS + k]) /
                       (1.0 + fabs(ref[(size_t)i * FH_N_ACTIONS + k]));
            worst = d > worst ? d : worst;
        }
    }
    CHECK_MSG(worst < 1e-4, "qnet_forward differs from fh_mlp_forward by %g", worst);
    free(ref);
    fh_mlp_ws_free(&ws);
}

/* The PQN layout (LayerNorm, gamma and beta perturbed off 1 and 0): the device
 * function against fh_mlp_forward. */
static void test_pqn_forward_matches_blas(const fh_transition_batch *b)
{
    fh_mlp pqn;
    fh_mlp_ws ws;
    fh_error err;
    CHECK(fh_mlp_init(&pqn, FH_NET_PQN, &err) == FH_OK);
    fh_mlp_init_orthogonal(&pqn, 13);
    for (int l = 0; l < 2; l++) {
        float *g = fh_mlp_norm_gamma(&pqn, pqn.params, l), *be = fh_mlp_norm_beta(&pqn, pqn.params, l);
        int n = l == 0 ? FH_QNET_H1 : FH_QNET_H2;
        for (int i = 0; i < n; i++) {
            g[i] = 1.0f + 0.3f * sinf((float)(i + 7 * l));
            be[i] = 0.2f * cosf((float)(3 * i + l));
        }
    }
    const int rows = 256;
    CHECK(fh_mlp_ws_init(&ws, &pqn, rows, &err) == FH_OK);
    float *ref = malloc((size_t)rows * FH_N_ACTIONS * sizeof *ref);
    CHECK(fh_mlp_forward(ref, &ws, &pqn, b->states, rows, &err) == FH_OK);
    double worst = 0;
    float q[FH_N_ACTIONS], h1[FH_QNET_H1], h2[FH_QNET_H2];
    for (int i = 0; i < rows; i++) {
        qnet_forward(q, pqn.params, b->states + (size_t)i * FH_STATE_DIM, h1, h2, 1,
                     FH_QNET_LEAKY_SLOPE);
        for (int k = 0; k < FH_N_ACTIONS; k++)
            worst = fmax(worst, fabs(q[k] - ref[(size_t)i * FH_N_ACTIONS + k]) /
                                    (1.0 + fabs(ref[(size_t)i * FH_N_ACTIONS + k])));
    }
    CHECK_MSG(worst < 1e-4, "PQN: qnet_forward differs from fh_mlp_forward by %g", worst);
    free(ref);
    fh_mlp_ws_free(&ws);
    fh_mlp_free(&pqn);
}

static void test_greedy(const fixture *f, const fh_transition_batch *b)
{
    int argmax_ok = 1, q_ok = 1;
    float q[FH_N_ACTIONS], h1[FH_QNET_H1], h2[FH_QNET_H2];
    for (int i = 0; i < N * L; i++) {
        qnet_forward(q, f->qnet.params, b->states + (size_t)i * FH_STATE_DIM, h1, h2, 0,
                     FH_QNET_LEAKY_SLOPE);
        int best = 0;
        for (int k = 1; k < FH_N_ACTIONS; k++)
            if (q[k] > q[best])
                best = k;
        argmax_ok &= b->actions[i] == best;
        q_ok &= b->q_taken[i] == q[b->actions[i]];
    }
    CHECK_MSG(argmax_ok, "epsilon 0: an action is not the argmax of Q");
    CHECK_MSG(q_ok, "q_taken is not Q(s, a)");
}

static void test_chain(const fh_transition_batch *b)
{
    int chain_ok = 1, flags_ok = 1, finite = 1, dones = 0;
    for (int n = 0; n < N; n++)
        for (int t = 0; t < L; t++) {
            size_t i = (size_t)n * L + t;
            flags_ok &= !(b->terminal[i] && b->truncated[i]);
            finite &= isfinite(b->rewards[i]);
            int done = b->terminal[i] || b->truncated[i];
            dones += done;
            if (!done && t + 1 < L)
                chain_ok &= memcmp(b->next_states + i * FH_STATE_DIM,
                                   b->states + (i + 1) * FH_STATE_DIM,
                                   FH_STATE_DIM * sizeof(float)) == 0;
        }
    CHECK_MSG(chain_ok, "next_states[t] != states[t+1] inside an episode");
    CHECK(flags_ok && finite);
    printf("%d of %d steps ended an episode\n", dones, N * L);
}

int main(void)
{
    fixture f;
    memset(&f, 0, sizeof f);
    if (!fixture_init(&f))
        return 1;
    fh_error err;
    fh_transition_batch a, b2, half;
    CHECK(fh_transition_batch_alloc(&a, N, L, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&b2, N, L, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&half, N, L / 2, &err) == FH_OK);
    fh_episode_state eps[N], eps2[N];
    /* short episodes, so that dones and resets happen inside the batch */
    f.cfg.env.horizon = 20;

    episodes_init(&f, eps, 11);
    CHECK(collect(&f, eps, 0.0f, &a));
    test_forward_matches_blas(&f, &a);
    test_pqn_forward_matches_blas(&a);
    test_greedy(&f, &a);
    test_chain(&a);

    /* the same seed again: the same batch; in two halves: the same transitions */
    episodes_init(&f, eps2, 11);
    CHECK(collect(&f, eps2, 0.0f, &b2));
    CHECK(memcmp(a.states, b2.states, (size_t)N * L * FH_STATE_DIM * sizeof(float)) == 0 &&
          memcmp(a.actions, b2.actions, (size_t)N * L * sizeof(int32_t)) == 0 &&
          memcmp(a.rewards, b2.rewards, (size_t)N * L * sizeof(float)) == 0);
    episodes_init(&f, eps2, 11);
    int halves_ok = 1;
    for (int h = 0; h < 2; h++) {
        CHECK(collect(&f, eps2, 0.0f, &half));
        for (int n = 0; n < N; n++) {
            size_t src = (size_t)n * (L / 2), dst = (size_t)n * L + (size_t)h * (L / 2);
            halves_ok &= memcmp(half.states + src * FH_STATE_DIM, a.states + dst * FH_STATE_DIM,
                                (size_t)(L / 2) * FH_STATE_DIM * sizeof(float)) == 0 &&
                         memcmp(half.rewards + src, a.rewards + dst, (L / 2) * sizeof(float)) == 0 &&
                         memcmp(half.next_states + src * FH_STATE_DIM,
                                a.next_states + dst * FH_STATE_DIM,
                                (size_t)(L / 2) * FH_STATE_DIM * sizeof(float)) == 0;
        }
    }
    CHECK_MSG(halves_ok, "two collections of L/2 differ from one of L");

    /* epsilon 1: uniform actions */
    episodes_init(&f, eps, 12);
    long counts[FH_N_ACTIONS] = {0};
    long total = 0;
    for (int rep = 0; rep < 8; rep++) {
        CHECK(collect(&f, eps, 1.0f, &a));
        for (int i = 0; i < N * L; i++, total++)
            counts[a.actions[i]]++;
    }
    double expected = (double)total / FH_N_ACTIONS, chi2 = 0;
    for (int k = 0; k < FH_N_ACTIONS; k++)
        chi2 += (counts[k] - expected) * (counts[k] - expected) / expected;
    CHECK_MSG(chi2 < 78.75, "epsilon 1: chi-square %.1f over 45 actions (%ld draws)", chi2, total);
    printf("epsilon 1: chi-square %.1f (44 dof, critical 78.75 at p = 0.001)\n", chi2);

    CHECK(fh_dqn_collect_cpu(f.qnet.params, 0, f.curiosity.params, &f.cfg.env, &f.market, eps,
                             1.5f, &a, &err) == FH_ERR_INPUT);
    fh_transition_batch_free(&a);
    fh_transition_batch_free(&b2);
    fh_transition_batch_free(&half);
    fh_mlp_free(&f.qnet);
    fh_mlp_free(&f.curiosity);
    fh_run_data_free(&f.data);
    return fh_test_finish();
}
