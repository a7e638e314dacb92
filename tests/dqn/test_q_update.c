/* test_q_update.c — the PQN and DQN updates on the CPU (issue 18; src/rl/q_update.c):
 *  - one minibatch step's gradient on the output bias, which the loss reaches linearly:
 *    d loss / d b_out[k] = sum over the rows whose action is k of (Q - y) / M (PQN's
 *    MSE) or of clip(Q - y, -delta, delta) / M (DQN's Huber), computed here in float64
 *    from the forward pass; Adam at lr 0 leaves the weights as they were;
 *  - the target network: a hard copy (tau 1) and a Polyak step by hand;
 *  - fh_dqn_steps' target schedule (the trainer's DQN steps) against the same steps
 *    unrolled by hand: hard copies at each multiple of target_update_every counted
 *    across calls, Polyak after every step; networks, stream and statistics bit for bit;
 *  - learning on a fixed collection: PQN epochs and DQN steps on a replay ring drive
 *    the TD loss down (the last update's loss below a third of the first's);
 *  - a NaN target stops the step with the weights unchanged;
 *  - weight_decay (AdamW, issue 34): fh_q_update_config_of carries it into the Adam
 *    config, and one minibatch step with it gives p0 (1 - lr wd) - delta, delta the
 *    same step's without decay (the gradient is taken at p0 either way), within 1.5
 *    float ulps of the params.
 * One ctest entry per case (test_q_update CASE; tests/dqn/test_cases.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dqn/test_cases.h"
#include "env/dqn_device_functions.cuh"
#include "foxhunt/dqn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define M 64

static void fill_random(fh_q_workspace *w, uint64_t seed)
{
    fh_rng rng;
    fh_pcg32_seed(&rng, seed, 1);
    for (int i = 0; i < M * FH_STATE_DIM; i++)
        w->mb_states[i] = 2.0f * gpu_random(&rng) - 1.0f;
    for (int i = 0; i < M; i++) {
        w->mb_actions[i] = fh_pcg32_uniform_int(&rng, 6); /* few actions: shared biases */
        w->mb_targets[i] = 4.0f * gpu_random(&rng) - 2.0f;
    }
}

static void test_bias_gradient(int huber)
{
    fh_mlp q;
    fh_error err;
    fh_q_workspace w;
    CHECK(fh_mlp_init(&q, FH_NET_QNET, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q, 3);
    CHECK(fh_q_workspace_init(&w, FH_NET_QNET, M, 0, &err) == FH_OK);
    fill_random(&w, 9);
    fh_q_update_config cfg = {0};
    fh_adam_config_default_ppo(&cfg.adam);
    cfg.adam.lr = 0.0f;
    cfg.huber_delta = 0.25f; /* so that some rows are clipped */
    float *before = malloc(q.n_params * sizeof(float));
    memcpy(before, q.params, q.n_params * sizeof(float));
    fh_mlp_ws ws;
    CHECK(fh_mlp_ws_init(&ws, &q, M, &err) == FH_OK);
    float *qv = malloc((size_t)M * FH_N_ACTIONS * sizeof(float));
    CHECK(fh_mlp_forward(qv, &ws, &q, w.mb_states, M, &err) == FH_OK);
    double want[FH_N_ACTIONS] = {0};
    for (int i = 0; i < M; i++) {
        double d = (double)qv[i * FH_N_ACTIONS + w.mb_actions[i]] - w.mb_targets[i];
        if (huber)
            d = d > cfg.huber_delta ? cfg.huber_delta : d < -cfg.huber_delta ? -cfg.huber_delta : d;
        want[w.mb_actions[i]] += d / M;
    }
    fh_q_stats acc = {0};
    CHECK(fh_q_minibatch_step(&q, &w, M, huber, &cfg, &acc, &err) == FH_OK);
    const float *gb = fh_mlp_bias(&q, q.grads, 2);
    double worst = 0;
    for (int k = 0; k < FH_N_ACTIONS; k++)
        worst = fmax(worst, fabs(gb[k] - want[k]));
    CHECK_MSG(worst < 1e-6, "%s: output-bias gradient off by %g", huber ? "Huber" : "MSE", worst);
    CHECK_MSG(memcmp(before, q.params, q.n_params * sizeof(float)) == 0,
              "Adam at lr 0 moved the weights");
    /* a NaN target: refused, weights unchanged */
    w.mb_targets[3] = NAN;
    CHECK(fh_q_minibatch_step(&q, &w, M, huber, &cfg, &acc, &err) == FH_ERR_FAILURE);
    CHECK(strstr(err.message, "TD loss") != NULL);
    CHECK(memcmp(before, q.params, q.n_params * sizeof(float)) == 0);
    free(before);
    free(qv);
    fh_mlp_ws_free(&ws);
    fh_q_workspace_free(&w);
    fh_mlp_free(&q);
}

static void test_target_update(void)
{
    fh_mlp q, t;
    fh_error err;
    CHECK(fh_mlp_init(&q, FH_NET_QNET, &err) == FH_OK && fh_mlp_init(&t, FH_NET_QNET, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q, 1);
    fh_mlp_init_orthogonal(&t, 2);
    float p0 = q.params[100], t0 = t.params[100];
    fh_q_target_update(&t, &q, 0.25f);
    CHECK_CLOSE(t.params[100], 0.25 * p0 + 0.75 * t0, 1e-7, 1e-6);
    fh_q_target_update(&t, &q, 1.0f);
    CHECK(memcmp(t.params, q.params, q.n_params * sizeof(float)) == 0);
    fh_mlp_free(&q);
    fh_mlp_free(&t);
}

/* fh_dqn_steps against fh_dqn_update and fh_q_target_update unrolled by hand, on a ring
 * of random transitions: 7 steps from grad_steps 1 with a hard copy every 3 (copies when
 * the count reaches 3 and 6: chunks of 2, 3, 2), and 7 single steps each followed by a
 * Polyak step of tau 0.3. */
static void test_target_schedule(void)
{
    enum { NE = 4, NL = 32, MB = 32, STEPS = 7 };
    fh_error err;
    fh_transition_batch b;
    fh_replay ring;
    fh_replay_minibatch mb;
    CHECK(fh_transition_batch_alloc(&b, NE, NL, &err) == FH_OK);
    CHECK(fh_replay_init(&ring, 256, &err) == FH_OK);
    CHECK(fh_replay_minibatch_alloc(&mb, MB, &err) == FH_OK);
    fh_rng g;
    fh_pcg32_seed(&g, 11, 1);
    for (int i = 0; i < NE * NL; i++) {
        for (int j = 0; j < FH_STATE_DIM; j++) {
            b.states[i * FH_STATE_DIM + j] = 2.0f * gpu_random(&g) - 1.0f;
            b.next_states[i * FH_STATE_DIM + j] = 2.0f * gpu_random(&g) - 1.0f;
        }
        b.actions[i] = fh_pcg32_uniform_int(&g, FH_N_ACTIONS);
        b.rewards[i] = 2.0f * gpu_random(&g) - 1.0f;
        b.terminal[i] = i % 11 == 5;
        b.truncated[i] = 0;
    }
    CHECK(fh_replay_push_batch(&ring, &b, 3, 0.9f, &err) == FH_OK);
    fh_q_update_config qc = {0};
    fh_adam_config_default_ppo(&qc.adam);
    qc.adam.lr = 1e-3f;
    qc.max_grad_norm = 10.0;
    qc.huber_delta = 1.0f;
    for (int polyak = 0; polyak < 2; polyak++) {
        const int every = polyak ? 0 : 3;
        const float tau = 0.3f;
        fh_mlp q, t, hq, ht; /* fh_dqn_steps's pair, the hand's */
        fh_q_workspace w, hw;
        CHECK(fh_mlp_init(&q, FH_NET_QNET, &err) == FH_OK && fh_mlp_init(&t, FH_NET_QNET, &err) == FH_OK &&
              fh_mlp_init(&hq, FH_NET_QNET, &err) == FH_OK && fh_mlp_init(&ht, FH_NET_QNET, &err) == FH_OK);
        fh_mlp_init_orthogonal(&q, 21);
        fh_mlp_init_orthogonal(&t, 22);
        fh_mlp_copy(&hq, &q);
        fh_mlp_copy(&ht, &t);
        CHECK(fh_q_workspace_init(&w, FH_NET_QNET, MB, 0, &err) == FH_OK);
        CHECK(fh_q_workspace_init(&hw, FH_NET_QNET, MB, 0, &err) == FH_OK);
        fh_rng rng, hrng;
        fh_pcg32_seed(&rng, 5, 3);
        hrng = rng;
        int64_t grad_steps = 1;
        fh_q_stats s;
        CHECK_MSG(fh_dqn_steps(&s, &q, &t, &w, &ring, &mb, STEPS, every, tau, &grad_steps, &qc,
                               &rng, &err) == FH_OK, "%s", err.message);
        CHECK(grad_steps == 1 + STEPS && s.minibatches == STEPS);

        const int hard[3] = {2, 3, 2}; /* to grad_steps 3 (copy), 6 (copy), 8 */
        const int n_chunks = polyak ? STEPS : 3;
        double loss = 0, mean_q = 0, mean_target = 0, norm = 0;
        for (int c = 0; c < n_chunks; c++) {
            int k = polyak ? 1 : hard[c];
            fh_q_stats part;
            CHECK(fh_dqn_update(&part, &hq, &ht, &hw, &ring, &mb, k, &qc, &hrng, &err) == FH_OK);
            if (polyak)
                fh_q_target_update(&ht, &hq, tau);
            else if (c < 2)
                fh_q_target_update(&ht, &hq, 1.0f);
            loss += part.loss * part.minibatches;
            mean_q += part.mean_q * part.minibatches;
            mean_target += part.mean_target * part.minibatches;
            norm += part.grad_norm * part.minibatches;
        }
        const char *what = polyak ? "Polyak" : "hard copies";
        CHECK_MSG(memcmp(q.mem, hq.mem, 4 * q.n_params * sizeof(float)) == 0 &&
                      q.adam_step == hq.adam_step,
                  "%s: the Q-network or its Adam state differ from the hand's", what);
        CHECK_MSG(memcmp(t.params, ht.params, t.n_params * sizeof(float)) == 0,
                  "%s: the target network differs from the hand's", what);
        CHECK_MSG(!polyak || memcmp(t.params, q.params, t.n_params * sizeof(float)) != 0,
                  "Polyak: the target equals the Q-network");
        CHECK_MSG(rng.state == hrng.state, "%s: the streams differ", what);
        CHECK_MSG(s.loss == loss / STEPS && s.mean_q == mean_q / STEPS &&
                      s.mean_target == mean_target / STEPS && s.grad_norm == norm / STEPS,
                  "%s: statistics: loss %.17g vs %.17g", what, s.loss, loss / STEPS);
        fh_q_workspace_free(&w);
        fh_q_workspace_free(&hw);
        fh_mlp_free(&q);
        fh_mlp_free(&t);
        fh_mlp_free(&hq);
        fh_mlp_free(&ht);
    }
    /* no steps: nothing moves, statistics zero */
    {
        fh_mlp q, t;
        fh_q_workspace w;
        CHECK(fh_mlp_init(&q, FH_NET_QNET, &err) == FH_OK && fh_mlp_init(&t, FH_NET_QNET, &err) == FH_OK);
        CHECK(fh_q_workspace_init(&w, FH_NET_QNET, MB, 0, &err) == FH_OK);
        fh_rng rng, before;
        fh_pcg32_seed(&rng, 5, 3);
        before = rng;
        int64_t grad_steps = 4;
        fh_q_stats s;
        CHECK(fh_dqn_steps(&s, &q, &t, &w, &ring, &mb, 0, 3, 1.0f, &grad_steps, &qc, &rng, &err) ==
              FH_OK);
        CHECK(grad_steps == 4 && s.minibatches == 0 && s.loss == 0 && rng.state == before.state);
        fh_q_workspace_free(&w);
        fh_mlp_free(&q);
        fh_mlp_free(&t);
    }
    fh_replay_minibatch_free(&mb);
    fh_replay_free(&ring);
    fh_transition_batch_free(&b);
}

enum { NE = 16, NL = 32 };

/* NE x NL epsilon-greedy transitions of q (orthogonal, seed 4) on a small synthetic market
 * (train split), and the PQN settings the cases below start from. */
static void make_batch(fh_run_data *data, fh_mlp *q, fh_mlp *cur, fh_transition_batch *b,
                       fh_q_update_config *qc)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    cfg.synthetic_bars = 3000;
    cfg.env.horizon = 32;
    fh_error err;
    CHECK(fh_run_data_load(data, &cfg, NULL, &err) == FH_OK);
    CHECK(fh_mlp_init(q, FH_NET_QNET, &err) == FH_OK);
    CHECK(fh_mlp_init(cur, FH_NET_CURIOSITY, &err) == FH_OK);
    fh_mlp_init_orthogonal(q, 4);
    fh_mlp_init_orthogonal(cur, 5);
    fh_market_view view = fh_market_view_of(&data->market, FH_SPLIT_TRAIN);
    fh_env_market market = fh_env_market_from_view(&view);
    fh_episode_state eps[NE];
    for (int n = 0; n < NE; n++)
        env_episode_init(&cfg.env, &market, &eps[n], 6, (unsigned long long)n);
    CHECK(fh_transition_batch_alloc(b, NE, NL, &err) == FH_OK);
    CHECK(fh_dqn_collect_cpu(q->params, 0, cur->params, &cfg.env, &market, eps, 0.5f, b, &err) == FH_OK);
    memset(qc, 0, sizeof *qc);
    fh_adam_config_default_ppo(&qc->adam);
    qc->adam.lr = 1e-3f;
    qc->gamma = 0.9f;
    qc->lambda = 0.65f;
    qc->epochs = 1;
    qc->minibatch = 128;
    qc->max_grad_norm = 10.0;
    qc->huber_delta = 1.0f;
}

/* pqn_huber: with a threshold above every TD error Huber is the squared loss (the same
 * weights, bit for bit); with a small one every minibatch's loss is below the squared loss's (Huber <=
 * x^2 / 2, strictly beyond the threshold) and the weights move otherwise. */
static void test_pqn_huber(void)
{
    fh_run_data data;
    fh_mlp q0, cur;
    fh_transition_batch b;
    fh_q_update_config qc;
    make_batch(&data, &q0, &cur, &b, &qc);
    fh_error err;
    fh_mlp q[3];
    fh_q_stats s[3];
    /* 0: squared loss; 1: Huber, threshold 1e6; 2: Huber, threshold 0.01 */
    for (int k = 0; k < 3; k++) {
        CHECK(fh_mlp_init(&q[k], FH_NET_QNET, &err) == FH_OK);
        fh_mlp_copy(&q[k], &q0);
        fh_q_update_config c = qc;
        c.pqn_huber = k > 0;
        c.huber_delta = k == 1 ? 1e6f : 0.01f;
        fh_q_workspace w;
        CHECK(fh_q_workspace_init(&w, FH_NET_QNET, c.minibatch, NE * NL, &err) == FH_OK);
        fh_rng rng;
        fh_pcg32_seed(&rng, 7, 3);
        CHECK(fh_pqn_update(&s[k], &q[k], &w, &b, &c, &rng, &err) == FH_OK);
        fh_q_workspace_free(&w);
    }
    CHECK_MSG(memcmp(q[0].params, q[1].params, q[0].n_params * sizeof(float)) == 0,
              "Huber with a threshold of 1e6 gave other weights than the squared loss");
    /* the reported losses are summed in other precisions (fh_huber_loss's and the squared
     * path's), the gradients are the same bits */
    CHECK_MSG(fabs(s[0].loss - s[1].loss) <= 1e-6 * s[0].loss,
              "loss %.9g (squared) vs %.9g (Huber, 1e6)", s[0].loss, s[1].loss);
    CHECK_MSG(s[2].loss < s[0].loss, "Huber 0.01 loss %.6g, squared %.6g", s[2].loss, s[0].loss);
    size_t moved = 0;
    for (size_t i = 0; i < q[0].n_params; i++)
        moved += q[0].params[i] != q[2].params[i];
    CHECK_MSG(moved > q[0].n_params / 2, "Huber 0.01 moved %zu of %zu weights otherwise", moved,
              q[0].n_params);
    printf("PQN one update: squared loss %.6g, Huber(0.01) %.6g; %zu of %zu weights differ\n",
           s[0].loss, s[2].loss, moved, q[0].n_params);
    for (int k = 0; k < 3; k++)
        fh_mlp_free(&q[k]);
    fh_mlp_free(&q0);
    fh_mlp_free(&cur);
    fh_transition_batch_free(&b);
    fh_run_data_free(&data);
}

static void test_learning_on_a_batch(void)
{
    fh_run_data data;
    fh_error err;
    fh_mlp q, target, cur;
    fh_transition_batch b;
    fh_q_update_config qc;
    make_batch(&data, &q, &cur, &b, &qc);
    CHECK(fh_mlp_init(&target, FH_NET_QNET, &err) == FH_OK);
    fh_q_workspace w;
    CHECK(fh_q_workspace_init(&w, FH_NET_QNET, qc.minibatch, NE * NL, &err) == FH_OK);
    fh_rng rng;
    fh_pcg32_seed(&rng, 7, 3);
    fh_q_stats s;
    double first = 0, last = 0;
    for (int u = 0; u < 60; u++) {
        CHECK(fh_pqn_update(&s, &q, &w, &b, &qc, &rng, &err) == FH_OK);
        if (u == 0)
            first = s.loss;
        last = s.loss;
    }
    CHECK_MSG(last < first / 3, "PQN on a fixed batch: TD loss %.4g -> %.4g", first, last);
    printf("PQN, 60 updates on one batch: TD loss %.4g -> %.4g\n", first, last);

    /* DQN on a ring of the same transitions; the target follows every 20 steps. Its
     * workspace as the trainer makes it (no Q(lambda) batch) */
    fh_q_workspace_free(&w);
    CHECK(fh_q_workspace_init(&w, FH_NET_QNET, qc.minibatch, 0, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q, 4);
    fh_q_target_update(&target, &q, 1.0f);
    fh_replay ring;
    fh_replay_minibatch mb;
    CHECK(fh_replay_init(&ring, 4096, &err) == FH_OK);
    CHECK(fh_replay_minibatch_alloc(&mb, qc.minibatch, &err) == FH_OK);
    CHECK(fh_replay_push_batch(&ring, &b, 3, qc.gamma, &err) == FH_OK);
    for (int u = 0; u < 60; u++) {
        CHECK(fh_dqn_update(&s, &q, &target, &w, &ring, &mb, 20, &qc, &rng, &err) == FH_OK);
        fh_q_target_update(&target, &q, 1.0f);
        if (u == 0)
            first = s.loss;
        last = s.loss;
    }
    CHECK_MSG(last < first / 3, "DQN on a fixed ring: TD loss %.4g -> %.4g", first, last);
    printf("DQN, 60 x 20 steps on one ring: TD loss %.4g -> %.4g\n", first, last);
    fh_replay_free(&ring);
    fh_replay_minibatch_free(&mb);
    fh_q_workspace_free(&w);
    fh_transition_batch_free(&b);
    fh_mlp_free(&q);
    fh_mlp_free(&target);
    fh_mlp_free(&cur);
    fh_run_data_free(&data);
}

static void test_weight_decay(void)
{
    fh_train_config tc;
    fh_train_config_default(&tc);
    tc.weight_decay = 0.1;
    fh_q_update_config with = fh_q_update_config_of(&tc, 1e-2), without = with;
    CHECK(with.adam.weight_decay == 0.1f && with.adam.lr == 1e-2f);
    without.adam.weight_decay = 0.0f;
    fh_error err;
    fh_mlp q0, a, b;
    CHECK(fh_mlp_init(&q0, FH_NET_QNET, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q0, 5);
    CHECK(fh_mlp_init(&a, FH_NET_QNET, &err) == FH_OK);
    CHECK(fh_mlp_init(&b, FH_NET_QNET, &err) == FH_OK);
    fh_mlp_copy(&a, &q0);
    fh_mlp_copy(&b, &q0);
    fh_q_workspace w;
    CHECK(fh_q_workspace_init(&w, FH_NET_QNET, M, 0, &err) == FH_OK);
    fill_random(&w, 11);
    fh_q_stats acc = {0};
    CHECK(fh_q_minibatch_step(&a, &w, M, 0, &with, &acc, &err) == FH_OK);
    CHECK(fh_q_minibatch_step(&b, &w, M, 0, &without, &acc, &err) == FH_OK);
    double decay = 1.0 - (double)with.adam.lr * (double)with.adam.weight_decay, worst = 0;
    double moved = 0, size = 0;
    for (size_t i = 0; i < q0.n_params; i++) {
        double p0 = q0.params[i], delta = p0 - (double)b.params[i];
        worst = fmax(worst, fabs((double)a.params[i] - (p0 * decay - delta)));
        moved = fmax(moved, fabs((double)a.params[i] - b.params[i]));
        size = fmax(size, fabs(p0));
    }
    CHECK_MSG(worst <= 1.5 * size * 1.2e-7, "AdamW step off by %.3g (params up to %.3g)",
              worst, size);
    CHECK_MSG(moved > 1e-4 * size, "the decay moved no weight by more than %.3g", moved);
    fh_q_workspace_free(&w);
    fh_mlp_free(&q0);
    fh_mlp_free(&a);
    fh_mlp_free(&b);
}

static void test_bias_gradient_mse(void)
{
    test_bias_gradient(0);
}
static void test_bias_gradient_huber(void)
{
    test_bias_gradient(1);
}

static const fh_test_case CASES[] = {
    {"bias_gradient_mse", test_bias_gradient_mse},
    {"bias_gradient_huber", test_bias_gradient_huber},
    {"target_update", test_target_update},
    {"target_schedule", test_target_schedule},
    {"learning_on_a_batch", test_learning_on_a_batch},
    {"pqn_huber", test_pqn_huber},
    {"weight_decay", test_weight_decay},
};
FH_TEST_CASES_MAIN(CASES)
