/* ppo_update.c — update_mlp and the curiosity fit (include/foxhunt/ppo.h). */
#include "foxhunt/ppo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"

void fh_ppo_workspace_free(fh_ppo_workspace *w)
{
    fh_mlp_ws_free(&w->actor_ws);
    fh_mlp_ws_free(&w->critic_ws);
    fh_mlp_ws_free(&w->curiosity_ws);
    free(w->mb_states);
    free(w->mb_actions);
    free(w->mb_old_logp);
    free(w->mb_adv);
    free(w->mb_returns);
    free(w->mb_old_values);
    free(w->mb_logits);
    free(w->mb_values);
    free(w->mb_dlogits);
    free(w->mb_dvalues);
    free(w->mb_cur_in);
    free(w->mb_cur_target);
    free(w->mb_cur_pred);
    free(w->mb_cur_dpred);
    free(w->scratch);
    free(w->perm);
    memset(w, 0, sizeof *w);
}

fh_status fh_ppo_workspace_init(fh_ppo_workspace *w, int minibatch, int64_t batch_size,
                                fh_error *err)
{
    memset(w, 0, sizeof *w);
    size_t M = (size_t)minibatch;
    w->minibatch = minibatch;
    w->perm_size = batch_size;
    w->mb_states = malloc(M * FH_STATE_DIM * sizeof(float));
    w->mb_actions = malloc(M * sizeof(int32_t));
    w->mb_old_logp = malloc(M * sizeof(float));
    w->mb_adv = malloc(M * sizeof(float));
    w->mb_returns = malloc(M * sizeof(float));
    w->mb_old_values = malloc(M * sizeof(float));
    w->mb_logits = malloc(M * FH_N_ACTIONS * sizeof(float));
    w->mb_values = malloc(M * sizeof(float));
    w->mb_dlogits = malloc(M * FH_N_ACTIONS * sizeof(float));
    w->mb_dvalues = malloc(M * sizeof(float));
    w->mb_cur_in = malloc(M * FH_CURIOSITY_INPUT_DIM * sizeof(float));
    w->mb_cur_target = malloc(M * FH_CURIOSITY_TARGET_DIM * sizeof(float));
    w->mb_cur_pred = malloc(M * FH_CURIOSITY_TARGET_DIM * sizeof(float));
    w->mb_cur_dpred = malloc(M * FH_CURIOSITY_TARGET_DIM * sizeof(float));
    w->scratch = malloc(FH_PPO_SCRATCH_FLOATS(M, FH_N_ACTIONS) * sizeof(float));
    w->perm = malloc((size_t)batch_size * sizeof(int64_t));
    if (!w->mb_states || !w->mb_actions || !w->mb_old_logp || !w->mb_adv || !w->mb_returns ||
        !w->mb_old_values || !w->mb_logits || !w->mb_values || !w->mb_dlogits ||
        !w->mb_dvalues || !w->mb_cur_in || !w->mb_cur_target || !w->mb_cur_pred ||
        !w->mb_cur_dpred || !w->scratch || !w->perm) {
        fh_ppo_workspace_free(w);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory (minibatch %d)",
                            __FILE__, __LINE__, minibatch);
    }
    const fh_net_kind kinds[3] = {FH_NET_ACTOR, FH_NET_CRITIC, FH_NET_CURIOSITY};
    fh_mlp_ws *wss[3] = {&w->actor_ws, &w->critic_ws, &w->curiosity_ws};
    for (int k = 0; k < 3; k++) {
        fh_status st = fh_mlp_ws_init_kind(wss[k], kinds[k], minibatch, err);
        if (st != FH_OK) {
            fh_ppo_workspace_free(w);
            return st;
        }
    }
    return FH_OK;
}

static const char *nonfinite_name(double v)
{
    return isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
}

const char *const fh_ppo_trace_columns[FH_PPO_TRACE_COLS] = {
    "epoch", "minibatch", "samples", "policy_loss", "value_loss", "entropy", "approx_kl",
    "old_approx_kl", "clip_fraction", "grad_norm", "lr", "loss"};

void fh_ppo_trace_free(fh_ppo_trace *tr)
{
    free(tr->order);
    free(tr->records);
    memset(tr, 0, sizeof *tr);
}

fh_status fh_ppo_trace_init(fh_ppo_trace *tr, const fh_train_config *cfg, int64_t batch_size,
                            fh_error *err)
{
    memset(tr, 0, sizeof *tr);
    if (batch_size <= 0 || cfg->minibatch <= 0 || cfg->epochs <= 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: trace of %lld samples, minibatch %d, "
                            "%d epochs", __FILE__, __LINE__, (long long)batch_size,
                            cfg->minibatch, cfg->epochs);
    tr->batch_size = batch_size;
    tr->max_epochs = cfg->epochs;
    tr->minibatches_per_epoch = (int)((batch_size + cfg->minibatch - 1) / cfg->minibatch);
    size_t rows = (size_t)tr->max_epochs * (size_t)tr->minibatches_per_epoch;
    tr->order = malloc((size_t)tr->max_epochs * (size_t)batch_size * sizeof(int64_t));
    tr->records = calloc(rows * FH_PPO_TRACE_COLS, sizeof(double));
    if (!tr->order || !tr->records) {
        fh_ppo_trace_free(tr);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory for the update's "
                            "record (%d epochs x %lld samples)", __FILE__, __LINE__,
                            cfg->epochs, (long long)batch_size);
    }
    return FH_OK;
}

/* A minibatch's statistic that is not finite stops the update (before its step). */
static fh_status check_stat(double v, const char *what, int epoch, int minibatch,
                            fh_error *err)
{
    if (isfinite(v))
        return FH_OK;
    return fh_error_set(err, FH_ERR_FAILURE, "the %s is %s (epoch %d, minibatch %d)", what,
                        nonfinite_name(v), epoch + 1, minibatch + 1);
}

/* The most epochs (PPO or curiosity) whose keys an update draws: train_config.c's bound
 * on epochs and curiosity_epochs. */
#define FH_PPO_MAX_EPOCH_KEYS 1000

/* Draws an epoch key per epoch, in order, from the update's stream (all of them before
 * the first epoch: an early stop does not change how much of the stream is used). */
static fh_status draw_epoch_keys(unsigned long long *keys, int epochs, const char *what,
                                 fh_rng *rng, fh_error *err)
{
    if (epochs < 0 || epochs > FH_PPO_MAX_EPOCH_KEYS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d %s epochs (at most %d)",
                            __FILE__, __LINE__, epochs, what, FH_PPO_MAX_EPOCH_KEYS);
    for (int e = 0; e < epochs; e++)
        keys[e] = fh_minibatch_key(rng);
    return FH_OK;
}

/* An epoch's order: position p visits sample fh_minibatch_order(key, n, p). */
static void fill_order(int64_t *perm, int64_t n, unsigned long long key)
{
    for (int64_t p = 0; p < n; p++)
        perm[p] = (int64_t)fh_minibatch_order(key, (long long)n, (long long)p);
}

static double explained_variance(const float *values, const float *returns, int64_t n)
{
    double mr = 0, md = 0;
    for (int64_t i = 0; i < n; i++) {
        mr += returns[i];
        md += returns[i] - values[i];
    }
    mr /= (double)n;
    md /= (double)n;
    double vr = 0, vd = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = returns[i] - mr, d = (returns[i] - values[i]) - md;
        vr += r * r;
        vd += d * d;
    }
    return vr > 0 ? 1.0 - vd / vr : NAN;
}

fh_status fh_curiosity_fit(double *loss_out, fh_mlp *curiosity, fh_ppo_workspace *w,
                           const float *states, const int32_t *actions,
                           const float *exposures, const int32_t *bars, int64_t n,
                           const fh_env_market *market, const fh_train_config *cfg,
                           fh_rng *rng, fh_error *err)
{
    fh_adam_config adam;
    fh_adam_config_default_curiosity(&adam);
    adam.lr = (float)cfg->curiosity_lr;
    double loss_sum = 0;
    int count = 0;
    unsigned long long keys[FH_PPO_MAX_EPOCH_KEYS];
    fh_status kst = draw_epoch_keys(keys, cfg->curiosity_epochs, "curiosity", rng, err);
    if (kst != FH_OK)
        return kst;
    for (int epoch = 0; epoch < cfg->curiosity_epochs; epoch++) {
        fill_order(w->perm, n, keys[epoch]);
        int mb = 0;
        for (int64_t start = 0; start < n; start += w->minibatch, mb++) {
            int M = (int)(n - start < w->minibatch ? n - start : w->minibatch);
            for (int i = 0; i < M; i++) {
                int64_t r = w->perm[start + i];
                float *in = w->mb_cur_in + (size_t)i * FH_CURIOSITY_INPUT_DIM;
                memcpy(in, states + r * FH_STATE_DIM, FH_CURIOSITY_TARGET_DIM * sizeof(float));
                in[FH_CURIOSITY_TARGET_DIM] = action_to_exposure(actions[r]);
                in[FH_CURIOSITY_TARGET_DIM + 1] = action_to_urgency(actions[r]);
                in[FH_CURIOSITY_TARGET_DIM + 2] = exposures[r];
                memcpy(w->mb_cur_target + (size_t)i * FH_CURIOSITY_TARGET_DIM,
                       market->features + (int64_t)(bars[r] + 1) * FH_N_MARKET_FEATURES,
                       FH_CURIOSITY_TARGET_DIM * sizeof(float));
            }
            size_t elems = (size_t)M * FH_CURIOSITY_TARGET_DIM;
            fh_status st = fh_mlp_forward(w->mb_cur_pred, &w->curiosity_ws, curiosity,
                                          w->mb_cur_in, M, err);
            if (st != FH_OK)
                return st;
            double loss = fh_mse_forward(w->mb_cur_pred, w->mb_cur_target, elems);
            if ((st = check_stat(loss, "curiosity loss", epoch, mb, err)) != FH_OK)
                return st;
            loss_sum += loss;
            count++;
            memset(w->mb_cur_dpred, 0, elems * sizeof(float));
            fh_mse_backward(w->mb_cur_dpred, 1.0f, w->mb_cur_pred, w->mb_cur_target, elems);
            fh_mlp_zero_grad(curiosity);
            st = fh_mlp_backward(NULL, curiosity, &w->curiosity_ws, w->mb_cur_dpred, M, err);
            if (st != FH_OK)
                return st;
            /* a NaN input can hide behind a ReLU in the loss but not in the gradient */
            float acc = 0.0f;
            for (size_t i = 0; i < curiosity->n_params; i++)
                acc += curiosity->grads[i] * 0.0f;
            if ((st = check_stat(acc, "curiosity gradient", epoch, mb, err)) != FH_OK)
                return st;
            fh_mlp_adam_step(curiosity, &adam);
        }
    }
    *loss_out = count ? loss_sum / count : 0;
    return FH_OK;
}

static fh_status fit_curiosity(fh_ppo_stats *stats, fh_mlp *curiosity, fh_ppo_workspace *w,
                               const fh_trajectory_batch *b, const fh_env_market *market,
                               const fh_train_config *cfg, fh_rng *rng, fh_error *err)
{
    return fh_curiosity_fit(&stats->curiosity_loss, curiosity, w, b->states, b->actions,
                            b->exposures, b->bars, (int64_t)b->n_episodes * b->n_steps,
                            market, cfg, rng, err);
}

fh_status fh_ppo_update(fh_ppo_stats *stats, fh_mlp *actor, fh_mlp *critic,
                        fh_mlp *curiosity, fh_ppo_workspace *w,
                        const fh_trajectory_batch *b, const fh_env_market *market,
                        const fh_train_config *cfg, double lr, double ent_coef,
                        fh_rng *rng, fh_ppo_trace *trace, fh_error *err)
{
    memset(stats, 0, sizeof *stats);
    int64_t n = (int64_t)b->n_episodes * b->n_steps;
    if (n != w->perm_size)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: workspace for %lld samples, batch %lld",
                            __FILE__, __LINE__, (long long)w->perm_size, (long long)n);
    if (trace) {
        if (trace->batch_size != n || trace->max_epochs < cfg->epochs ||
            (int64_t)trace->minibatches_per_epoch * w->minibatch < n)
            return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: a record for %lld samples x %d "
                                "epochs, an update of %lld x %d", __FILE__, __LINE__,
                                (long long)trace->batch_size, trace->max_epochs,
                                (long long)n, cfg->epochs);
        trace->epochs = 0;
        trace->n_records = 0;
    }
    fh_ppo_loss_config loss_cfg;
    fh_ppo_loss_config_default(&loss_cfg);
    loss_cfg.clip_coef = (float)cfg->clip;
    loss_cfg.vf_coef = (float)cfg->vf_coef;
    loss_cfg.ent_coef = (float)ent_coef;
    loss_cfg.vclip_coef = cfg->clip_vloss ? (float)cfg->clip : 0.0f;
    loss_cfg.norm_adv = cfg->norm_adv;
    fh_adam_config adam;
    fh_adam_config_default_ppo(&adam);
    adam.lr = (float)lr;
    adam.eps = (float)cfg->adam_eps;
    adam.weight_decay = (float)cfg->weight_decay;
    fh_mlp *nets[2] = {actor, critic};

    double sums[7] = {0};
    int mbs = 0;
    if (cfg->curiosity_epochs < 0 || cfg->curiosity_epochs > FH_PPO_MAX_EPOCH_KEYS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d curiosity epochs (at most %d)",
                            __FILE__, __LINE__, cfg->curiosity_epochs, FH_PPO_MAX_EPOCH_KEYS);
    unsigned long long keys[FH_PPO_MAX_EPOCH_KEYS];
    fh_status kst = draw_epoch_keys(keys, cfg->epochs, "PPO", rng, err);
    if (kst != FH_OK)
        return kst;
    for (int epoch = 0; epoch < cfg->epochs; epoch++) {
        fill_order(w->perm, n, keys[epoch]);
        if (trace) {
            memcpy(trace->order + (size_t)epoch * (size_t)n, w->perm, (size_t)n * sizeof(int64_t));
            trace->epochs = epoch + 1;
        }
        double epoch_kl = 0;
        int epoch_mbs = 0;
        for (int64_t start = 0; start < n; start += w->minibatch, epoch_mbs++) {
            int M = (int)(n - start < w->minibatch ? n - start : w->minibatch);
            for (int i = 0; i < M; i++) {
                int64_t r = w->perm[start + i];
                memcpy(w->mb_states + (size_t)i * FH_STATE_DIM, b->states + r * FH_STATE_DIM,
                       FH_STATE_DIM * sizeof(float));
                w->mb_actions[i] = b->actions[r];
                w->mb_old_logp[i] = b->log_probs[r];
                w->mb_adv[i] = b->advantages[r];
                w->mb_returns[i] = b->returns[r];
                w->mb_old_values[i] = b->values[r];
            }
            fh_status st = fh_mlp_forward(w->mb_logits, &w->actor_ws, actor, w->mb_states, M, err);
            if (st == FH_OK)
                st = fh_mlp_forward(w->mb_values, &w->critic_ws, critic, w->mb_states, M, err);
            if (st != FH_OK)
                return st;
            memset(w->mb_dlogits, 0, (size_t)M * FH_N_ACTIONS * sizeof(float));
            memset(w->mb_dvalues, 0, (size_t)M * sizeof(float));
            fh_ppo_loss_stats ls;
            fh_ppo_loss(&ls, w->mb_dlogits, w->mb_dvalues, w->mb_logits, w->mb_values,
                        w->mb_actions, w->mb_old_logp, w->mb_adv, w->mb_returns,
                        w->mb_old_values, M, FH_N_ACTIONS, &loss_cfg, w->scratch);
            const double seen[4] = {ls.pg_loss, ls.v_loss, ls.entropy, ls.approx_kl};
            const char *names[4] = {"policy loss", "value loss", "entropy", "approximate KL"};
            for (int k = 0; k < 4; k++)
                if ((st = check_stat(seen[k], names[k], epoch, epoch_mbs, err)) != FH_OK)
                    return st;
            fh_mlp_zero_grad(actor);
            fh_mlp_zero_grad(critic);
            st = fh_mlp_backward(NULL, actor, &w->actor_ws, w->mb_dlogits, M, err);
            if (st == FH_OK)
                st = fh_mlp_backward(NULL, critic, &w->critic_ws, w->mb_dvalues, M, err);
            if (st != FH_OK)
                return st;
            double norm = cfg->max_grad_norm > 0
                ? fh_mlp_clip_grad_norm(nets, 2, cfg->max_grad_norm)
                : fh_mlp_clip_grad_norm(nets, 2, INFINITY);
            if ((st = check_stat(norm, "gradient norm", epoch, epoch_mbs, err)) != FH_OK)
                return st; /* the step would spread it through every weight (a NaN input
                              * can hide behind a ReLU in the losses, not in the gradient) */
            fh_mlp_adam_step(actor, &adam);
            fh_mlp_adam_step(critic, &adam);
            sums[0] += ls.pg_loss;
            sums[1] += ls.v_loss;
            sums[2] += ls.entropy;
            sums[3] += ls.approx_kl;
            sums[4] += ls.old_approx_kl;
            sums[5] += ls.clipfrac;
            sums[6] += norm;
            epoch_kl += ls.approx_kl;
            if (trace) {
                double *row = trace->records + (size_t)trace->n_records++ * FH_PPO_TRACE_COLS;
                row[FH_PPO_TRACE_EPOCH] = epoch;
                row[FH_PPO_TRACE_MINIBATCH] = epoch_mbs;
                row[FH_PPO_TRACE_SAMPLES] = M;
                row[FH_PPO_TRACE_POLICY_LOSS] = ls.pg_loss;
                row[FH_PPO_TRACE_VALUE_LOSS] = ls.v_loss;
                row[FH_PPO_TRACE_ENTROPY] = ls.entropy;
                row[FH_PPO_TRACE_APPROX_KL] = ls.approx_kl;
                row[FH_PPO_TRACE_OLD_APPROX_KL] = ls.old_approx_kl;
                row[FH_PPO_TRACE_CLIP_FRACTION] = ls.clipfrac;
                row[FH_PPO_TRACE_GRAD_NORM] = norm;
                row[FH_PPO_TRACE_LR] = adam.lr;
                row[FH_PPO_TRACE_LOSS] = ls.loss;
            }
            mbs++;
        }
        stats->epochs_run = epoch + 1;
        if (cfg->target_kl > 0 && epoch_kl / epoch_mbs > cfg->target_kl)
            break;
    }
    stats->minibatches = mbs;
    stats->policy_loss = sums[0] / mbs;
    stats->value_loss = sums[1] / mbs;
    stats->entropy = sums[2] / mbs;
    stats->approx_kl = sums[3] / mbs;
    stats->old_approx_kl = sums[4] / mbs;
    stats->clip_fraction = sums[5] / mbs;
    stats->grad_norm = sums[6] / mbs;
    stats->explained_variance = explained_variance(b->values, b->returns, n);
    fh_status st = fit_curiosity(stats, curiosity, w, b, market, cfg, rng, err);
    /* one pass over what the steps wrote: a NaN there would be in the next checkpoint */
    for (int k = 0; k < 3 && st == FH_OK; k++)
        st = fh_mlp_check_finite(k == 0 ? actor : k == 1 ? critic : curiosity, err);
    return st;
}
