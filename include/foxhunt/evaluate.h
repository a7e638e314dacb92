/* evaluate.h — honest backtests on a held-out split (issue 5, `foxhunt eval`).
 *
 * A backtest is one continuous path over the whole split: it starts flat at the
 * split's first bar with the initial equity and steps with the shared env_step (same
 * costs, barriers and accounting as training) until the last bar. The agent trained on
 * episodes of `horizon` steps, whose observation measures equity against the episode's
 * start; so every `horizon` steps the backtest re-bases that reference (and the ruin
 * level) to the current equity, keeping the position, the barriers and the equity path
 * itself: the observation stays in the range the actor saw in training. Ruin (equity
 * below `ruin` of the reference) ends the path early and the equity then stays where it
 * fell. Policies:
 * the trained actor greedy (argmax) and sampled, and the baselines buy-and-hold (one
 * purchase at the first bar held to the end: barriers out of reach, the market's own
 * return after one entry cost), flat (target 0), uniformly random actions, and, on the
 * synthetic market, an oracle that knows the predictable component (full long while
 * the hidden drift is up, full short while down, flat while none) and trades in the
 * same environment as the agent, barriers included; always-long targets +1 every bar
 * in that same environment (barrier exits are re-entered and paid for), which
 * separates a policy that follows the drift from one that merely learned to be long.
 * The classical baselines (baselines.h: volatility-targeted long, time-series momentum,
 * a moving-average crossover) trade in that same environment too, to the grid exposure
 * nearest their rule's target at full urgency; fh_backtest_run(_path) runs them with
 * their default parameters, fh_baseline_backtest with chosen ones. */
#ifndef FOXHUNT_EVALUATE_H
#define FOXHUNT_EVALUATE_H

#include "foxhunt/data.h"
#include "foxhunt/env.h"
#include "foxhunt/metrics.h"
#include "foxhunt/nn.h"

typedef enum {
    FH_POLICY_GREEDY = 0,
    FH_POLICY_SAMPLED,
    FH_POLICY_BUY_AND_HOLD,
    FH_POLICY_FLAT,
    FH_POLICY_RANDOM,
    FH_POLICY_ORACLE,
    FH_POLICY_ALWAYS_LONG,
    FH_POLICY_VOL_TARGET,   /* the classical baselines (baselines.h) */
    FH_POLICY_TSMOM,
    FH_POLICY_MA_CROSSOVER,
    FH_POLICY_COUNT
} fh_policy_kind;

const char *fh_policy_name(fh_policy_kind kind);

/* A backtest's path, bar by bar (eval --returns): each array the caller's, or NULL. */
typedef struct {
    double *equity;   /* (view.n) equity at each bar, [0] the initial equity */
    double *exposure; /* (view.n - 1) the exposure held over step t (0 when flat) */
    double *cost;     /* (view.n - 1) costs paid at step t, in currency */
    double *turnover; /* (view.n - 1) |exposure traded| at step t */
    int *barrier_hit; /* (view.n - 1) the barrier (FH_BARRIER_*) that closed the position
                         at the end of step t (at bar t + 1's close), FH_BARRIER_NONE 0 */
} fh_backtest_path;

/* Runs one policy over the whole view. actor is needed for greedy/sampled;
 * expected_return (view.n) for the oracle (else NULL). seed drives sampled/random.
 * exposure_held (view.n - 1, or NULL) gets the exposure held over each price move
 * (0 when flat): what tests compare with the hidden drift. */
fh_status fh_backtest_run(fh_backtest_metrics *m, fh_policy_kind kind, const fh_mlp *actor,
                          const fh_env_config *cfg, const fh_market_view *view,
                          const double *expected_return, double periods_per_year,
                          uint64_t seed, double *exposure_held, fh_error *err);
/* The same, writing the path (path NULL: none). */
fh_status fh_backtest_run_path(fh_backtest_metrics *m, fh_policy_kind kind,
                               const fh_mlp *actor, const fh_env_config *cfg,
                               const fh_market_view *view, const double *expected_return,
                               double periods_per_year, uint64_t seed,
                               const fh_backtest_path *path, fh_error *err);
/* A policy given as a target exposure per bar (target: view.n values; the classical
 * baselines): at each bar it trades to the action grid's exposure nearest target[bar]
 * at full urgency (fh_baseline_action). kind names it in messages. */
fh_status fh_backtest_run_targets(fh_backtest_metrics *m, fh_policy_kind kind,
                                  const double *target, const fh_env_config *cfg,
                                  const fh_market_view *view, double periods_per_year,
                                  const fh_backtest_path *path, fh_error *err);

/* Seed ensembles (issue 34 item 3): the greedy policy of several networks (the actors,
 * or the Q-networks, of runs that differ only by seed), each run on the ensemble's own
 * state every bar. fh_ensemble_action turns their n greedy actions into one: the
 * exposure of the grid nearest their mean exposure (ties away from zero) at the urgency
 * nearest their mean urgency (ties to the faster); n agreeing actions give that action. */
#define FH_ENSEMBLE_MAX 16
int fh_ensemble_action(const int *actions, int n);
fh_status fh_backtest_run_ensemble(fh_backtest_metrics *m, const fh_mlp *const *actors,
                                   int n_actors, const fh_env_config *cfg,
                                   const fh_market_view *view, double periods_per_year,
                                   uint64_t seed, const fh_backtest_path *path, fh_error *err);

#endif
