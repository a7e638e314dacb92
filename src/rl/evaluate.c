/* evaluate.c — backtests of policies over a split (include/foxhunt/evaluate.h). */
#include "foxhunt/evaluate.h"
#include "foxhunt/baselines.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/ppo_device_functions.cuh" /* softmax_sample */
#include "foxhunt/format.h"             /* fh_format_utc */
#include "foxhunt/nn.h"                 /* fh_mlp_check_finite */

/* action = FH_N_URGENCIES * e + k; full urgency trades straight to the target */
#define FULL_URGENCY (FH_N_URGENCIES - 1)
#define ACTION_LONG (FH_N_URGENCIES * (FH_N_EXPOSURES - 1) + FULL_URGENCY)
#define ACTION_FLAT (FH_N_URGENCIES * (FH_N_EXPOSURES / 2) + FULL_URGENCY)
#define ACTION_SHORT (FULL_URGENCY)

const char *fh_policy_name(fh_policy_kind kind)
{
    static const char *names[FH_POLICY_COUNT] = {
        "greedy",     "sampled", "buy_and_hold", "flat", "random", "oracle", "always_long",
        "vol_target", "tsmom",   "ma_crossover"};
    return kind >= 0 && kind < FH_POLICY_COUNT ? names[kind] : "?";
}

/* Finite weights can still overflow float32 in the forward pass (weights of 1e30: issue
 * 32); the argmax of inf/NaN logits picks an action all the same, and the report would
 * print a table of meaningless numbers. Fails naming the step, the output and the first
 * layer whose output is not finite (ws holds every layer's output of this step). */
static fh_status check_outputs(const float *out, const fh_mlp_ws *ws, const fh_mlp *net,
                               fh_policy_kind kind, const fh_market_view *view, int t,
                               fh_error *err)
{
    int bad = -1;
    for (int a = 0; a < FH_N_ACTIONS && bad < 0; a++)
        if (!isfinite(out[a]))
            bad = a;
    if (bad < 0)
        return FH_OK;
    const fh_net_desc *d = net->desc;
    int layer = d->n_layers - 1;
    for (int l = 0; l < d->n_layers && layer == d->n_layers - 1; l++)
        for (int i = 0; i < d->dims[l + 1]; i++)
            if (!isfinite(ws->act[l + 1][i])) {
                layer = l;
                break;
            }
    char when[40] = "";
    if (view->time)
        fh_format_utc(when, sizeof when, view->time[t]);
    const char *what = d->kind == FH_NET_ACTOR ? "logit" : "Q-value";
    return fh_error_set(err, FH_ERR_INPUT,
                        "%s policy: at step %d of the backtest (bar %s) the %s network's %s "
                        "%d is %s although every weight is finite: its weights are so large "
                        "that the forward pass overflows float32, first in layer %d (%s, "
                        "%d outputs); no result can be reported for it: evaluate an earlier "
                        "checkpoint, or retrain (a lower learning rate, a max_grad_norm)",
                        fh_policy_name(kind), t, when[0] ? when : "?", d->name, what, bad,
                        isnan(out[bad]) ? "NaN" : out[bad] > 0 ? "+inf" : "-inf", layer,
                        d->layer_names[layer], d->dims[layer + 1]);
}

fh_status fh_backtest_run(fh_backtest_metrics *m, fh_policy_kind kind, const fh_mlp *actor,
                          const fh_env_config *cfg, const fh_market_view *view,
                          const double *expected_return, double periods_per_year,
                          uint64_t seed, double *exposure_held, fh_error *err)
{
    fh_backtest_path path = {.exposure = exposure_held};
    return fh_backtest_run_path(m, kind, actor, cfg, view, expected_return, periods_per_year,
                                seed, &path, err);
}

int fh_ensemble_action(const int *actions, int n)
{
    double exposure = 0.0, urgency_index = 0.0;
    for (int i = 0; i < n; i++) {
        exposure += (double)action_to_exposure(actions[i]);
        urgency_index += (double)(actions[i] % FH_N_URGENCIES);
    }
    exposure /= n;
    urgency_index /= n;
    int e = fh_baseline_action(exposure) / FH_N_URGENCIES; /* nearest, ties away from 0 */
    int k = (int)floor(urgency_index + 0.5);              /* nearest, ties to the faster */
    return FH_N_URGENCIES * e + (k < FH_N_URGENCIES ? k : FH_N_URGENCIES - 1);
}

/* Every policy's backtest; target: the baselines' exposures per bar (else NULL). The
 * greedy policy of n_actors > 1 networks is their ensemble (fh_ensemble_action). */
static fh_status run_impl(fh_backtest_metrics *m, fh_policy_kind kind,
                          const fh_mlp *const *actors, int n_actors,
                          const fh_env_config *cfg_in, const fh_market_view *view,
                          const double *expected_return, const double *target,
                          double periods_per_year, uint64_t seed,
                          const fh_backtest_path *path, fh_error *err)
{
    memset(m, 0, sizeof *m);
    const fh_mlp *actor = n_actors > 0 ? actors[0] : NULL;
    if (n_actors > FH_ENSEMBLE_MAX || (n_actors > 1 && kind != FH_POLICY_GREEDY))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d networks for the %s policy (an "
                            "ensemble is greedy, of at most %d)", __FILE__, __LINE__,
                            n_actors, fh_policy_name(kind), FH_ENSEMBLE_MAX);
    if (fh_policy_is_baseline(kind) && !target)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s policy needs its targets",
                            __FILE__, __LINE__, fh_policy_name(kind));
    if ((kind == FH_POLICY_GREEDY || kind == FH_POLICY_SAMPLED) && !actor)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s policy needs an actor", __FILE__,
                            __LINE__, fh_policy_name(kind));
    /* NaN weights would give a full report of meaningless numbers (the argmax of NaN
     * logits is action 0); checkpoints are checked at load, callers' own nets here */
    for (int a = 0; a < n_actors && (kind == FH_POLICY_GREEDY || kind == FH_POLICY_SAMPLED);
         a++)
        if (fh_mlp_check_finite(actors[a], err) != FH_OK) {
            fh_error_prefix(err, "%s policy: ", fh_policy_name(kind));
            if (err)
                err->status = FH_ERR_INPUT;
            return FH_ERR_INPUT;
        }
    if (kind == FH_POLICY_ORACLE && !expected_return)
        return fh_error_set(err, FH_ERR_INPUT,
                            "the oracle policy needs the synthetic market's expected returns");
    fh_env_market market = fh_env_market_from_view(view);
    fh_status st = fh_env_market_validate(&market, err);
    if (st != FH_OK)
        return st;
    fh_env_config cfg = *cfg_in;
    int T = market.n_bars - 1;
    int rebase_every = cfg_in->horizon; /* the training episode length */
    cfg.horizon = T; /* one continuous path: only the data's end truncates */
    if (kind == FH_POLICY_BUY_AND_HOLD || fh_policy_is_baseline(kind)) {
        /* the market benchmark: one purchase at the first bar, held to the end; and the
         * classical rules, run as a quant runs them, exiting by their own signal: the
         * environment's barriers (a device of the agent's training, issue 34 item 3)
         * would sell every position within max_hold bars and buy it back at full cost,
         * so they are off. Costs and timing stay the environment's. */
        cfg.barrier_mode = FH_BARRIER_MODE_OFF;
    }

    double *equity = malloc(((size_t)T + 1) * sizeof(double));
    double *turnover = calloc((size_t)T, sizeof(double));
    double *costs = calloc((size_t)T, sizeof(double));
    double *held = calloc((size_t)T, sizeof(double));
    int *barrier = calloc((size_t)T, sizeof(int));
    fh_mlp_ws ws[FH_ENSEMBLE_MAX];
    memset(ws, 0, sizeof ws);
    if (!equity || !turnover || !costs || !held || !barrier) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto done;
    }
    for (int a = 0; a < n_actors; a++)
        if ((st = fh_mlp_ws_init(&ws[a], actors[a], 1, err)) != FH_OK)
            goto done;

    fh_episode_state ep;
    env_episode_init(&cfg, &market, &ep, seed, 0);
    ep.start_bar = 0; /* a backtest starts at the split's first bar */
    ep.bar = 0;
    float state[FH_STATE_DIM], logits[FH_N_ACTIONS];
    equity[0] = ep.equity;
    int t = 0, ended = 0;
    for (; t < T && !ended; t++) {
        if (t > 0 && t % rebase_every == 0)
            ep.initial_equity = ep.equity; /* the observation's and ruin's reference */
        int action = ACTION_FLAT;
        switch (kind) {
        case FH_POLICY_GREEDY:
        case FH_POLICY_SAMPLED:
            env_observe(&cfg, &market, &ep, state);
            if (kind == FH_POLICY_GREEDY) { /* each network on the same state */
                int votes[FH_ENSEMBLE_MAX];
                for (int a = 0; a < n_actors; a++) {
                    if ((st = fh_mlp_forward(logits, &ws[a], actors[a], state, 1, err)) !=
                            FH_OK ||
                        (st = check_outputs(logits, &ws[a], actors[a], kind, view, t, err)) !=
                            FH_OK)
                        goto done;
                    votes[a] = argmax_first(logits, FH_N_ACTIONS);
                }
                action = n_actors == 1 ? votes[0] : fh_ensemble_action(votes, n_actors);
            } else {
                if ((st = fh_mlp_forward(logits, &ws[0], actor, state, 1, err)) != FH_OK ||
                    (st = check_outputs(logits, &ws[0], actor, kind, view, t, err)) != FH_OK)
                    goto done;
                float lp;
                softmax_sample(&action, &lp, logits, FH_N_ACTIONS, gpu_random(&ep.rng));
            }
            break;
        case FH_POLICY_BUY_AND_HOLD:
        case FH_POLICY_ALWAYS_LONG: action = ACTION_LONG; break;
        case FH_POLICY_VOL_TARGET:
        case FH_POLICY_TSMOM:
        case FH_POLICY_MA_CROSSOVER: action = fh_baseline_action(target[ep.bar]); break;
        case FH_POLICY_FLAT: action = ACTION_FLAT; break;
        case FH_POLICY_RANDOM: action = rng_uniform_int(&ep.rng, FH_N_ACTIONS); break;
        case FH_POLICY_ORACLE: {
            /* the drift regime persists for many bars, so its sign is what pays: the
             * expected gain of a regime dwarfs one round trip's cost */
            double mu = expected_return[ep.bar];
            action = mu > 0 ? ACTION_LONG : mu < 0 ? ACTION_SHORT : ACTION_FLAT;
            break;
        }
        default: break;
        }
        fh_step_result res;
        env_step(&cfg, &market, &ep, action, &res);
        equity[t + 1] = ep.equity;
        turnover[t] = res.turnover;
        costs[t] = res.cost;
        held[t] = res.units_held != 0.0 ? res.exposure : 0.0;
        barrier[t] = res.barrier_hit;
        ended = res.terminal;
    }
    for (; t < T; t++) /* after ruin: flat at the fallen equity */
        equity[t + 1] = equity[t];
    if (path) {
        struct { double *dst; const double *src; size_t n; } out[] = {
            {path->equity, equity, (size_t)T + 1}, {path->exposure, held, (size_t)T},
            {path->cost, costs, (size_t)T}, {path->turnover, turnover, (size_t)T}};
        for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
            if (out[i].dst)
                memcpy(out[i].dst, out[i].src, out[i].n * sizeof(double));
        if (path->barrier_hit)
            memcpy(path->barrier_hit, barrier, (size_t)T * sizeof(int));
    }
    fh_backtest_metrics_compute(equity, turnover, costs, held, T, periods_per_year, m);
    st = FH_OK;
done:
    for (int a = 0; a < FH_ENSEMBLE_MAX; a++)
        fh_mlp_ws_free(&ws[a]);
    free(equity);
    free(turnover);
    free(costs);
    free(held);
    free(barrier);
    return st;
}

fh_status fh_backtest_run_path(fh_backtest_metrics *m, fh_policy_kind kind,
                               const fh_mlp *actor, const fh_env_config *cfg,
                               const fh_market_view *view, const double *expected_return,
                               double periods_per_year, uint64_t seed,
                               const fh_backtest_path *path, fh_error *err)
{
    if (fh_policy_is_baseline(kind)) { /* with its default parameters */
        fh_baseline_params p = fh_baseline_default(kind);
        return fh_baseline_backtest(m, &p, cfg, view, periods_per_year, path, err);
    }
    return run_impl(m, kind, &actor, actor ? 1 : 0, cfg, view, expected_return, NULL,
                    periods_per_year, seed, path, err);
}

fh_status fh_backtest_run_targets(fh_backtest_metrics *m, fh_policy_kind kind,
                                  const double *target, const fh_env_config *cfg,
                                  const fh_market_view *view, double periods_per_year,
                                  const fh_backtest_path *path, fh_error *err)
{
    if (!fh_policy_is_baseline(kind))
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %s policy is not given by targets",
                            __FILE__, __LINE__, fh_policy_name(kind));
    return run_impl(m, kind, NULL, 0, cfg, view, NULL, target, periods_per_year, 0, path, err);
}

fh_status fh_backtest_run_ensemble(fh_backtest_metrics *m, const fh_mlp *const *actors,
                                   int n_actors, const fh_env_config *cfg,
                                   const fh_market_view *view, double periods_per_year,
                                   uint64_t seed, const fh_backtest_path *path, fh_error *err)
{
    if (n_actors < 1 || n_actors > FH_ENSEMBLE_MAX)
        return fh_error_set(err, FH_ERR_INPUT, "an ensemble of %d networks: it takes 1 to %d",
                            n_actors, FH_ENSEMBLE_MAX);
    return run_impl(m, FH_POLICY_GREEDY, actors, n_actors, cfg, view, NULL, NULL,
                    periods_per_year, seed, path, err);
}
