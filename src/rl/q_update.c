/* q_update.c — the PQN and DQN updates on the CPU (include/foxhunt/dqn.h): the
 * reference the GPU's (src/cuda/gpu_q_update.c) is checked against, and the fallback.
 *
 * PQN visits its samples in the keyed order PPO uses on both devices
 * (env/minibatch_order.cuh): one key per epoch from the update's stream, all drawn
 * before the first epoch, position p of an epoch visiting sample
 * fh_minibatch_order(key, n, p). The GPU update computes the same order row by row, so
 * the two can be compared minibatch by minibatch (tests/dqn/test_gpu_q_update.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/dqn.h"
#include "foxhunt/nn.h" /* fh_mlp_check_finite */

/* The most PQN epochs whose keys an update draws: train_config.c's bound on epochs. */
#define FH_Q_MAX_EPOCHS 1000

void fh_q_workspace_free(fh_q_workspace *w)
{
    fh_mlp_ws_free(&w->ws);
    fh_mlp_ws_free(&w->chunk_ws);
    free(w->mb_states);
    free(w->mb_actions);
    free(w->mb_targets);
    free(w->mb_q);
    free(w->mb_dq);
    free(w->chunk_q);
    free(w->chunk_q2);
    free(w->returns);
    free(w->next_max);
    free(w->perm);
    memset(w, 0, sizeof *w);
}

fh_status fh_q_workspace_init(fh_q_workspace *w, fh_net_kind net, int minibatch,
                              int64_t batch_size, fh_error *err)
{
    memset(w, 0, sizeof *w);
    if (minibatch < 1)
        return fh_error_set(err, FH_ERR_INPUT, "minibatch %d: need at least 1", minibatch);
    w->minibatch = minibatch;
    w->batch_size = batch_size;
    size_t M = (size_t)minibatch;
    /* perm also holds DQN's M sampled indices (int32, in fh_dqn_update) */
    size_t B = batch_size > (int64_t)M ? (size_t)batch_size : M;
    fh_status st = fh_mlp_ws_init_kind(&w->ws, net, minibatch, err);
    if (st == FH_OK)
        st = fh_mlp_ws_init_kind(&w->chunk_ws, net, FH_Q_CHUNK, err);
    if (st != FH_OK) {
        fh_q_workspace_free(w);
        return st;
    }
    w->mb_states = malloc(M * FH_STATE_DIM * sizeof(float));
    w->mb_actions = malloc(M * sizeof(int32_t));
    w->mb_targets = malloc(M * sizeof(float));
    w->mb_q = malloc(M * FH_N_ACTIONS * sizeof(float));
    w->mb_dq = calloc(M * FH_N_ACTIONS, sizeof(float));
    w->chunk_q = malloc((size_t)FH_Q_CHUNK * FH_N_ACTIONS * sizeof(float));
    w->chunk_q2 = malloc((size_t)FH_Q_CHUNK * FH_N_ACTIONS * sizeof(float));
    w->returns = malloc(B * sizeof(float));
    w->next_max = malloc(B * sizeof(float));
    w->perm = malloc(B * sizeof(int64_t));
    if (!w->mb_states || !w->mb_actions || !w->mb_targets || !w->mb_q || !w->mb_dq ||
        !w->chunk_q || !w->chunk_q2 || !w->returns || !w->next_max || !w->perm) {
        fh_q_workspace_free(w);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for a Q update of "
                            "minibatch %d", __FILE__, __LINE__, minibatch);
    }
    return FH_OK;
}

fh_q_update_config fh_q_update_config_of(const fh_train_config *cfg, double lr)
{
    fh_q_update_config qc;
    memset(&qc, 0, sizeof qc);
    qc.gamma = (float)cfg->gamma;
    qc.lambda = (float)cfg->q_lambda;
    qc.epochs = cfg->epochs;
    qc.minibatch = cfg->minibatch;
    qc.max_grad_norm = cfg->max_grad_norm;
    qc.huber_delta = (float)cfg->huber_delta;
    qc.pqn_huber = cfg->pqn_huber;
    fh_adam_config_default_ppo(&qc.adam);
    qc.adam.lr = (float)lr;
    qc.adam.eps = (float)cfg->adam_eps;
    qc.adam.weight_decay = (float)cfg->weight_decay;
    return qc;
}

fh_status fh_q_minibatch_step(fh_mlp *q, fh_q_workspace *w, int M, int huber,
                              const fh_q_update_config *cfg, fh_q_stats *acc, fh_error *err)
{
    fh_status st = fh_mlp_forward(w->mb_q, &w->ws, q, w->mb_states, M, err);
    if (st != FH_OK)
        return st;
    float pred[1], grad[1];
    double loss = 0, mean_q = 0, mean_y = 0;
    memset(w->mb_dq, 0, (size_t)M * FH_N_ACTIONS * sizeof(float));
    for (int i = 0; i < M; i++) {
        int a = w->mb_actions[i];
        pred[0] = w->mb_q[(size_t)i * FH_N_ACTIONS + a];
        float y = w->mb_targets[i], d = pred[0] - y;
        if (huber) {
            loss += fh_huber_loss(pred, &y, 1, cfg->huber_delta, grad);
        } else {
            loss += 0.5 * (double)d * d;
            grad[0] = d;
        }
        /* the mean over the minibatch: each row's gradient / M, on its action only */
        w->mb_dq[(size_t)i * FH_N_ACTIONS + a] = grad[0] / (float)M;
        mean_q += pred[0];
        mean_y += y;
    }
    loss /= M;
    if (!isfinite(loss))
        return fh_error_set(err, FH_ERR_FAILURE, "the TD loss is %s (minibatch %d): a target "
                            "or a Q-value is not finite", isnan(loss) ? "NaN" : "infinite",
                            acc->minibatches + 1);
    fh_mlp_zero_grad(q);
    if ((st = fh_mlp_backward(NULL, q, &w->ws, w->mb_dq, M, err)) != FH_OK)
        return st;
    fh_mlp *nets[1] = {q};
    double norm = fh_mlp_clip_grad_norm(nets, 1, cfg->max_grad_norm > 0 ? cfg->max_grad_norm
                                                                        : INFINITY);
    if (!isfinite(norm))
        return fh_error_set(err, FH_ERR_FAILURE, "the Q-network's gradient norm is %s "
                            "(minibatch %d)", isnan(norm) ? "NaN" : "infinite",
                            acc->minibatches + 1);
    fh_mlp_adam_step(q, &cfg->adam);
    acc->loss += loss;
    acc->mean_q += mean_q / M;
    acc->mean_target += mean_y / M;
    acc->grad_norm += norm;
    acc->minibatches++;
    return FH_OK;
}

static void finish_stats(fh_q_stats *s)
{
    if (s->minibatches > 0) {
        s->loss /= s->minibatches;
        s->mean_q /= s->minibatches;
        s->mean_target /= s->minibatches;
        s->grad_norm /= s->minibatches;
    }
}

/* out[i] = max_a net(states[i])[a] for n rows, in chunks. */
static fh_status max_q(float *out, const fh_mlp *net, fh_q_workspace *w, const float *states,
                       int64_t n, fh_error *err)
{
    for (int64_t r = 0; r < n; r += FH_Q_CHUNK) {
        int B = (int)(n - r < FH_Q_CHUNK ? n - r : FH_Q_CHUNK);
        fh_status st = fh_mlp_forward(w->chunk_q, &w->chunk_ws, net,
                                      states + r * FH_STATE_DIM, B, err);
        if (st != FH_OK)
            return st;
        for (int i = 0; i < B; i++) {
            const float *row = w->chunk_q + (size_t)i * FH_N_ACTIONS;
            float m = row[0];
            for (int k = 1; k < FH_N_ACTIONS; k++)
                m = row[k] > m ? row[k] : m;
            out[r + i] = m;
        }
    }
    return FH_OK;
}

fh_status fh_pqn_update(fh_q_stats *stats, fh_mlp *q, fh_q_workspace *w,
                        const fh_transition_batch *b, const fh_q_update_config *cfg,
                        fh_rng *rng, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    const int64_t n = (int64_t)b->n_episodes * b->n_steps;
    if (n > w->batch_size)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a batch of %lld for a workspace of "
                            "%lld", __FILE__, __LINE__, (long long)n, (long long)w->batch_size);
    if (cfg->epochs < 0 || cfg->epochs > FH_Q_MAX_EPOCHS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d PQN epochs (at most %d)", __FILE__,
                            __LINE__, cfg->epochs, FH_Q_MAX_EPOCHS);
    fh_status st = max_q(w->next_max, q, w, b->next_states, n, err);
    if (st != FH_OK)
        return st;
    fh_q_lambda_returns(b->rewards, b->terminal, b->truncated, w->next_max, b->n_episodes,
                        b->n_steps, cfg->gamma, cfg->lambda, w->returns);
    unsigned long long keys[FH_Q_MAX_EPOCHS];
    for (int epoch = 0; epoch < cfg->epochs; epoch++) /* every key first, as PPO draws them */
        keys[epoch] = fh_minibatch_key(rng);
    for (int epoch = 0; epoch < cfg->epochs; epoch++) {
        for (int64_t p = 0; p < n; p++)
            w->perm[p] = (int64_t)fh_minibatch_order(keys[epoch], (long long)n, (long long)p);
        for (int64_t start = 0; start < n; start += cfg->minibatch) {
            int M = (int)(n - start < cfg->minibatch ? n - start : cfg->minibatch);
            for (int i = 0; i < M; i++) {
                int64_t k = w->perm[start + i];
                memcpy(w->mb_states + (size_t)i * FH_STATE_DIM, b->states + k * FH_STATE_DIM,
                       FH_STATE_DIM * sizeof(float));
                w->mb_actions[i] = b->actions[k];
                w->mb_targets[i] = w->returns[k];
            }
            if ((st = fh_q_minibatch_step(q, w, M, cfg->pqn_huber, cfg, stats, err)) != FH_OK) {
                fh_error_prefix(err, "PQN epoch %d: ", epoch + 1);
                return st;
            }
        }
    }
    finish_stats(stats);
    return fh_mlp_check_finite(q, err);
}

fh_status fh_dqn_update(fh_q_stats *stats, fh_mlp *q, const fh_mlp *target, fh_q_workspace *w,
                        const fh_replay *ring, fh_replay_minibatch *mb, int n_steps,
                        const fh_q_update_config *cfg, fh_rng *rng, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    const int M = w->minibatch;
    if (M > FH_Q_CHUNK || mb->capacity < M)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: minibatch %d above the chunk %d or "
                            "the gather buffer %d", __FILE__, __LINE__, M, FH_Q_CHUNK,
                            mb->capacity);
    int32_t *idx = (int32_t *)w->perm; /* M int32 indices fit in the int64 buffer */
    for (int step = 0; step < n_steps; step++) {
        fh_status st = fh_replay_sample(ring, rng, M, idx, err);
        if (st == FH_OK)
            st = fh_replay_gather(ring, idx, M, mb, err);
        /* Double DQN: the online network picks a' on s', the target network values it */
        if (st == FH_OK)
            st = fh_mlp_forward(w->chunk_q, &w->chunk_ws, q, mb->next_states, M, err);
        if (st == FH_OK)
            st = fh_mlp_forward(w->chunk_q2, &w->chunk_ws, target, mb->next_states, M, err);
        if (st != FH_OK)
            return st;
        fh_double_dqn_targets(mb->returns, mb->discounts, w->chunk_q, w->chunk_q2, M,
                              w->mb_targets);
        memcpy(w->mb_states, mb->states, (size_t)M * FH_STATE_DIM * sizeof(float));
        memcpy(w->mb_actions, mb->actions, (size_t)M * sizeof(int32_t));
        if ((st = fh_q_minibatch_step(q, w, M, 1, cfg, stats, err)) != FH_OK) {
            fh_error_prefix(err, "DQN step %d: ", step + 1);
            return st;
        }
    }
    finish_stats(stats);
    return fh_mlp_check_finite(q, err);
}

void fh_q_target_update(fh_mlp *target, const fh_mlp *q, float tau)
{
    if (tau >= 1.0f) {
        memcpy(target->params, q->params, q->n_params * sizeof(float));
        return;
    }
    for (size_t i = 0; i < q->n_params; i++)
        target->params[i] = tau * q->params[i] + (1.0f - tau) * target->params[i];
}

fh_status fh_dqn_steps(fh_q_stats *stats, fh_mlp *q, fh_mlp *target, fh_q_workspace *w,
                       const fh_replay *ring, fh_replay_minibatch *mb, int64_t steps,
                       int target_update_every, float tau, int64_t *grad_steps,
                       const fh_q_update_config *cfg, fh_rng *rng, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    fh_q_stats part, sum;
    memset(&sum, 0, sizeof sum);
    while (steps > 0) {
        /* up to the next hard copy (or one step at a time for Polyak) */
        int64_t chunk = 1;
        if (target_update_every > 0) {
            int64_t to_copy = target_update_every - *grad_steps % target_update_every;
            chunk = to_copy < steps ? to_copy : steps;
        }
        fh_status st = fh_dqn_update(&part, q, target, w, ring, mb, (int)chunk, cfg, rng, err);
        if (st != FH_OK)
            return st;
        *grad_steps += chunk;
        steps -= chunk;
        if (target_update_every == 0)
            fh_q_target_update(target, q, tau);
        else if (*grad_steps % target_update_every == 0)
            fh_q_target_update(target, q, 1.0f);
        /* fh_dqn_update's means, weighted back into sums */
        sum.loss += part.loss * part.minibatches;
        sum.mean_q += part.mean_q * part.minibatches;
        sum.mean_target += part.mean_target * part.minibatches;
        sum.grad_norm += part.grad_norm * part.minibatches;
        sum.minibatches += part.minibatches;
    }
    *stats = sum;
    finish_stats(stats);
    return FH_OK;
}
