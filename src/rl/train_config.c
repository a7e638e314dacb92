/* train_config.c — the hyper-parameter table, INI loading and JSON round trip
 * (include/foxhunt/train_config.h). */
#include "foxhunt/train_config.h"
#include "foxhunt/format.h"
#include "foxhunt/learner.h"
#include "foxhunt/nn.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <ini.h>

#include "foxhunt/data.h"        /* FH_DEFAULT_MAX_BAR_MOVE_SIGMAS */
#include "foxhunt/files.h"
#include "foxhunt/text.h"
#include "foxhunt/precision.h"

#define RUN(key, type, member, choices, lo, hi, help)                                    \
    {"run", key, type, offsetof(fh_train_config, member),                                \
     sizeof(((fh_train_config *)0)->member), choices, lo, hi, help}
#define PPO(key, type, member, lo, hi, help)                                             \
    {"ppo", key, type, offsetof(fh_train_config, member),                                \
     sizeof(((fh_train_config *)0)->member), NULL, lo, hi, help}
#define Q(key, type, member, lo, hi, help)                                               \
    {"q", key, type, offsetof(fh_train_config, member),                                  \
     sizeof(((fh_train_config *)0)->member), NULL, lo, hi, help}
#define DIST(key, type, member, lo, hi, help)                                            \
    {"dist", key, type, offsetof(fh_train_config, member),                               \
     sizeof(((fh_train_config *)0)->member), NULL, lo, hi, help}
#define ENV(key, type, member, lo, hi, help)                                             \
    {"env", key, type, offsetof(fh_train_config, env.member),                            \
     sizeof(((fh_train_config *)0)->env.member), NULL, lo, hi, help}
#define ENV_ENUM(key, member, choices, help)                                             \
    {"env", key, FH_FIELD_ENUM, offsetof(fh_train_config, env.member),                   \
     sizeof(((fh_train_config *)0)->env.member), choices, 0, 0, help}

const fh_config_field fh_train_config_fields[] = {
    RUN("data", FH_FIELD_STRING, data, NULL, 0, 0, "OHLCV CSV file (empty: the built-in synthetic market); several, comma-separated (a.csv,b.csv), train on their training splits at once, each asset normalised on its own (docs/REAL_DATA.md)"),
    RUN("algo", FH_FIELD_CHOICE, algo, FH_LEARNER_CHOICES, 0, 0, "the learner (src/rl/learners.c; docs/LEARNERS.md): ppo, dqn (Double DQN with a replay ring and a target network), pqn (Q(lambda), LayerNorm, no replay; Gallici et al. 2024) or constant (the best constant action: a baseline)"),
    RUN("device", FH_FIELD_CHOICE, device, "auto|cpu|cuda", 0, 0, "where to collect experience"),
    RUN("kernel", FH_FIELD_CHOICE, kernel, "fast|reference|fast/warp|fast/block|fast/lane", 0, 0, "GPU collection kernel (fast: its rollout mapping chosen from N; fast/warp, /block, /lane force one)"),
    RUN("precision", FH_FIELD_CHOICE, precision, FH_PRECISION_CHOICES, 0, 0, "GPU matmul precision: fp32; TF32 tensor cores (fp32 operands and accumulation) (the batched critic and curiosity model, the update); or bf16 (algo ppo: the update's matmuls over bf16 weight copies and activations, fp32 accumulation, master weights and Adam; the collection's batched critic over bf16 copies of its weights and rows)"),
    RUN("update_device", FH_FIELD_CHOICE, update_device, "same|cpu", 0, 0, "where the PPO update runs: same (the collection's device: the GPU under --device cuda) or cpu (the reference)"),
    RUN("out", FH_FIELD_STRING, out, NULL, 0, 0, "where to write: train's and walkforward's run directory (config, metrics, checkpoints; empty: a new runs/<data>__<algo>__<seed>__<UTC time> each run), the other commands' output file"),
    RUN("resume", FH_FIELD_STRING, resume, NULL, 0, 0, "checkpoint to resume from"),
    RUN("episodes", FH_FIELD_INT, episodes, NULL, 1, 1 << 20, "N: parallel episodes per collection"),
    RUN("steps", FH_FIELD_INT, steps, NULL, 1, 1 << 16, "L: steps per episode per collection"),
    RUN("iterations", FH_FIELD_INT, iterations, NULL, 1, 1 << 24, "K: collect+update iterations"),
    RUN("seed", FH_FIELD_U64, seed, NULL, 0, 0, "run seed (episodes, sampling, init)"),
    RUN("checkpoint_every", FH_FIELD_INT, checkpoint_every, NULL, 0, 1 << 24, "iterations between checkpoints (0: at the end only)"),
    RUN("train_fraction", FH_FIELD_DOUBLE, train_fraction, NULL, 0.05, 0.95, "share of the bars (by time, after the warm-up and the gaps) in the training split"),
    RUN("validation_fraction", FH_FIELD_DOUBLE, validation_fraction, NULL, 0, 0.9, "share of the bars in the validation split, after training (0: none); the test split is the rest"),
    RUN("split_gap", FH_FIELD_INT, split_gap, NULL, 0, 1 << 24, "bars dropped between train, validation and test (below the 200-bar feature warm-up, a split's features see the previous split's bars)"),
    RUN("walkforward_folds", FH_FIELD_INT, walkforward_folds, NULL, 0, 1000, "walk-forward folds over the test part (0: one test split; foxhunt walkforward sets it)"),
    RUN("fold", FH_FIELD_INT, fold, NULL, 1, 1000, "which walk-forward fold this run trains and tests, 1 .. walkforward_folds (counted as foxhunt walkforward's folders fold<k>_seed<s> count them)"),
    RUN("walkforward_window", FH_FIELD_CHOICE, walkforward_window, "expanding|rolling", 0, 0, "walk-forward training window: expanding (from the first bar) or rolling (the first fold's length)"),
    RUN("walkforward_seeds", FH_FIELD_INT, walkforward_seeds, NULL, 1, 1000, "foxhunt walkforward: seeds per fold (seed, seed+1, ...); their spread and the deflated Sharpe come from them"),
    RUN("synthetic_bars", FH_FIELD_INT, synthetic_bars, NULL, 1000, 1 << 26, "bars of the synthetic market"),
    RUN("synthetic_seed", FH_FIELD_U64, synthetic_seed, NULL, 0, 0, "seed of the synthetic market (independent of the run's seed)"),
    RUN("threads", FH_FIELD_INT, threads, NULL, 0, 1024, "CPU threads (0: all cores)"),
    RUN("eval_at_end", FH_FIELD_BOOL, eval_at_end, NULL, 0, 1, "evaluate on the test split when training ends"),
    RUN("tensorboard", FH_FIELD_BOOL, tensorboard, NULL, 0, 1, "write a TensorBoard event file (events.out.tfevents.*) into the run directory: every metrics column, validation, the final evaluation, the config (`tensorboard --logdir runs`; docs/LEARNING.md)"),
    RUN("eval_every", FH_FIELD_INT, eval_every, NULL, 0, 1 << 24, "iterations between greedy backtests on the validation split; the best by Sharpe is kept as best.safetensors and evaluated at the end (0: none)"),
    RUN("deploy_min_psr", FH_FIELD_DOUBLE, deploy_min_psr, NULL, 0, 1, "the deployment gate (do no harm): the model chosen on validation trades the test split only when its validation PSR(0), the probability that its true Sharpe is above 0, is at least this; else the deployed policy stays flat (0: always trade; both are reported)"),
    RUN("periods_per_year", FH_FIELD_DOUBLE, periods_per_year, NULL, 0, 1e8, "bars per year for the evaluation's annualised figures (0: from the bar spacing: 252 for daily bars, 8760 for hourly; set e.g. 1638 for 6.5-hour-a-day hourly equity bars)"),
    RUN("max_bar_move_sigmas", FH_FIELD_DOUBLE, max_bar_move_sigmas, NULL, 0, 1e12, "refuse data with a one-bar move beyond this many sigmas, an implausible tick (0: no check; docs/FEATURES.md)"),
    PPO("lr", FH_FIELD_DOUBLE, lr, 0, 1, "Adam learning rate (actor and critic)"),
    PPO("anneal_lr", FH_FIELD_BOOL, anneal_lr, 0, 1, "linear learning-rate decay to 0"),
    PPO("epochs", FH_FIELD_INT, epochs, 1, 1000, "PPO epochs per update"),
    PPO("minibatch", FH_FIELD_INT, minibatch, 1, 1 << 24, "minibatch size"),
    PPO("gamma", FH_FIELD_DOUBLE, gamma, 0, 1, "discount"),
    PPO("gae_lambda", FH_FIELD_DOUBLE, gae_lambda, 0, 1, "GAE lambda"),
    PPO("clip", FH_FIELD_DOUBLE, clip, 0, 10, "PPO clip coefficient"),
    PPO("vf_coef", FH_FIELD_DOUBLE, vf_coef, 0, 100, "value loss coefficient"),
    PPO("ent_coef", FH_FIELD_DOUBLE, ent_coef, 0, 10, "entropy bonus coefficient"),
    PPO("anneal_ent", FH_FIELD_BOOL, anneal_ent, 0, 1, "linear entropy-coefficient decay to 0 over the run, as anneal_lr decays the learning rate (docs/LEARNING.md)"),
    PPO("max_grad_norm", FH_FIELD_DOUBLE, max_grad_norm, 0, 1e6, "global gradient-norm clip (0: off)"),
    PPO("clip_vloss", FH_FIELD_BOOL, clip_vloss, 0, 1, "clip the value loss as CleanRL"),
    PPO("target_kl", FH_FIELD_DOUBLE, target_kl, 0, 10, "stop the epochs when approx KL exceeds it (0: off)"),
    PPO("norm_adv", FH_FIELD_BOOL, norm_adv, 0, 1, "normalise advantages per minibatch"),
    PPO("adam_eps", FH_FIELD_DOUBLE, adam_eps, 1e-12, 1, "Adam epsilon"),
    PPO("weight_decay", FH_FIELD_DOUBLE, weight_decay, 0, 1e3, "decoupled weight decay (AdamW: p *= 1 - lr * weight_decay before each Adam step) of the actor and critic, or DQN/PQN's Q-network; not the curiosity model's (0: plain Adam; docs/LEARNING.md)"),
    PPO("curiosity_lr", FH_FIELD_DOUBLE, curiosity_lr, 0, 1, "curiosity model Adam learning rate"),
    PPO("curiosity_epochs", FH_FIELD_INT, curiosity_epochs, 0, 1000, "curiosity fitting epochs per iteration"),
    Q("epsilon_start", FH_FIELD_DOUBLE, epsilon_start, 0, 1, "DQN/PQN: epsilon-greedy's epsilon at the start"),
    Q("epsilon_end", FH_FIELD_DOUBLE, epsilon_end, 0, 1, "DQN/PQN: epsilon after the decay"),
    Q("epsilon_fraction", FH_FIELD_DOUBLE, epsilon_fraction, 0, 1, "DQN/PQN: share of the run's steps over which epsilon decays linearly"),
    Q("q_lambda", FH_FIELD_DOUBLE, q_lambda, 0, 1, "PQN: lambda of the Q(lambda) returns"),
    Q("n_step", FH_FIELD_INT, n_step, 1, 1000, "DQN: n-step returns"),
    Q("replay_capacity", FH_FIELD_INT, replay_capacity, 1, 1 << 26, "DQN: transitions the replay ring holds"),
    Q("replay_ratio", FH_FIELD_DOUBLE, replay_ratio, 0, 16, "DQN: gradient steps per collected transition"),
    Q("learning_starts", FH_FIELD_INT, learning_starts, 0, 1 << 30, "DQN: transitions in the ring before the first update"),
    Q("target_update_every", FH_FIELD_INT, target_update_every, 0, 1 << 30, "DQN: gradient steps between hard copies into the target network (0: Polyak with tau every step)"),
    Q("tau", FH_FIELD_DOUBLE, tau, 0, 1, "DQN: Polyak rate when target_update_every = 0"),
    Q("huber_delta", FH_FIELD_DOUBLE, huber_delta, 1e-6, 1e6, "DQN: Huber loss threshold (and PQN's with pqn_huber)"),
    Q("pqn_huber", FH_FIELD_BOOL, pqn_huber, 0, 1, "PQN: the Huber loss (threshold huber_delta) instead of Gallici et al.'s squared loss"),
    ENV("initial_equity", FH_FIELD_DOUBLE, initial_equity, 1e-6, 1e15, "starting cash"),
    ENV("half_spread", FH_FIELD_FLOAT, half_spread, 0, 0.1, "cost rate per unit turnover"),
    ENV("impact", FH_FIELD_FLOAT, impact, 0, 0.1, "extra cost rate per unit urgency"),
    ENV("pt", FH_FIELD_FLOAT, pt, 0, 1000, "profit-take distance in sigmas"),
    ENV("sl", FH_FIELD_FLOAT, sl, 0, 1000, "stop-loss distance in sigmas"),
    ENV("max_hold", FH_FIELD_INT, max_hold, 0, 1 << 20, "barrier time limit (steps; 0: none)"),
    ENV_ENUM("barrier_mode", barrier_mode, "liquidate|reward|off", "what a barrier hit does: liquidate (SPEC: it closes the whole position at full urgency), reward (it scales that step's reward by pt_bonus or sl_scale, the position stays and the barriers re-arm around the new price) or off (no barriers); docs/ENVIRONMENT.md"),
    ENV("turnover_penalty", FH_FIELD_FLOAT, turnover_penalty, 0, 1, "reward penalty per unit of exposure traded, times reward_scale (0: none; the log return already pays the costs; docs/ENVIRONMENT.md)"),
    ENV("obs_noise", FH_FIELD_FLOAT, obs_noise, 0, 10, "PPO, a regulariser: standard deviation of the Gaussian noise on each (unit-scale) market feature the policy sees in training collections; never in validation, evaluation or the Gymnasium env (0: none; docs/ENVIRONMENT.md)"),
    ENV("pt_bonus", FH_FIELD_FLOAT, pt_bonus, 0, 100, "barrier_scale on a profit-take"),
    ENV("sl_scale", FH_FIELD_FLOAT, sl_scale, 0, 100, "barrier_scale on a stop-loss"),
    ENV("div_coef", FH_FIELD_FLOAT, div_coef, 0, 100, "diversity penalty coefficient"),
    ENV("cur_coef", FH_FIELD_FLOAT, cur_coef, 0, 100, "curiosity bonus coefficient"),
    ENV("risk_coef", FH_FIELD_FLOAT, risk_coef, 0, 1e6, "risk penalty coefficient"),
    ENV("reward_scale", FH_FIELD_FLOAT, reward_scale, 0, 1e6, "reward scale"),
    ENV("ruin", FH_FIELD_FLOAT, ruin, 0, 1, "terminal when equity < ruin * initial"),
    ENV("horizon", FH_FIELD_INT, horizon, 1, 1 << 24, "episode horizon (steps) before truncation"),
    /* [dist] (issue 22, docs/SCALING.md): launch settings, never saved with the run */
    DIST("gpus", FH_FIELD_INT, gpus, 0, 1024, "data-parallel PPO on this host: start this many ranks, one a GPU, --episodes and --minibatch split evenly between them (0: one process, no NCCL; 1: one rank through NCCL)"),
    DIST("world", FH_FIELD_INT, world, 0, 1 << 16, "data-parallel PPO under a launcher of your own (mpirun, srun, a script per host): ranks in all (0: off); with --rendezvous"),
    DIST("rank", FH_FIELD_INT, rank, -1, (1 << 16) - 1, "with --world: this process's rank (-1: from the launcher's environment: OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)"),
    DIST("rendezvous", FH_FIELD_STRING, rendezvous, 0, 0, "with --world: a file every rank can reach (a shared filesystem across hosts) through which rank 0 hands out NCCL's id; a new path each run"),
    DIST("nccl_library", FH_FIELD_STRING, nccl_library, 0, 0, "libnccl.so.2 to load (empty: the dynamic loader's search, then NVIDIA's Python wheels; foxhunt info says which it finds)"),
    DIST("dist_timeout", FH_FIELD_INT, dist_timeout, 1, 86400, "seconds a rank waits for the others to start (rendezvous, communicator)"),
    DIST("dist_graphs", FH_FIELD_BOOL, dist_graphs, 0, 1, "with several ranks: the update's all-reduces inside its CUDA graphs (0: the update's steps launched one by one)"),
};
const int fh_train_config_n_fields = sizeof fh_train_config_fields / sizeof fh_train_config_fields[0];

void fh_train_config_default(fh_train_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    strcpy(cfg->algo, "ppo");
    strcpy(cfg->device, "auto");
    strcpy(cfg->kernel, "fast");
    strcpy(cfg->precision, "fp32");
    strcpy(cfg->update_device, "same");
    /* cfg->out "": `foxhunt train` picks a new runs/<data>__<algo>__<seed>__<UTC time>
     * (fh_run_dir_new_name) */
    cfg->episodes = FH_DEFAULT_EPISODES;
    cfg->steps = FH_DEFAULT_STEPS;
    cfg->iterations = 12; /* ~3.5 min on 2 cores at N 128 x L 500 (docs/LEARNING.md) */
    cfg->seed = 1;
    cfg->checkpoint_every = 10;
    cfg->train_fraction = 0.7;
    cfg->validation_fraction = 0.1;
    cfg->split_gap = FH_FEATURE_WARMUP;
    strcpy(cfg->walkforward_window, "expanding");
    cfg->walkforward_seeds = 3;
    cfg->fold = 1;
    cfg->synthetic_bars = 20000;
    cfg->synthetic_seed = 42;
    cfg->threads = 0;
    cfg->eval_at_end = 1;
    cfg->tensorboard = 1;
    cfg->deploy_min_psr = 0.95; /* Bailey & Lopez de Prado's usual bar */
    cfg->max_bar_move_sigmas = FH_DEFAULT_MAX_BAR_MOVE_SIGMAS;
    cfg->lr = 3e-4;
    cfg->anneal_lr = 1;
    cfg->epochs = 10;
    cfg->minibatch = 512;
    cfg->gamma = 0.99;
    cfg->gae_lambda = 0.95;
    cfg->clip = 0.2;
    cfg->vf_coef = 0.5;
    cfg->ent_coef = 0.01;
    cfg->max_grad_norm = 0.5;
    cfg->clip_vloss = 1;
    cfg->target_kl = 0;
    cfg->norm_adv = 1;
    cfg->adam_eps = 1e-5;
    cfg->curiosity_lr = 1e-3;
    cfg->curiosity_epochs = 1;
    cfg->epsilon_start = 1.0;
    cfg->epsilon_end = 0.05;
    cfg->epsilon_fraction = 0.5;
    cfg->q_lambda = 0.65;
    cfg->n_step = 3;
    cfg->replay_capacity = 1 << 20;
    cfg->replay_ratio = 1.0 / 64.0;
    cfg->learning_starts = 10000;
    cfg->target_update_every = 500;
    cfg->tau = 0.005;
    cfg->huber_delta = 1.0;
    cfg->env = fh_env_config_default();
    cfg->rank = -1;
    cfg->dist_timeout = 300;
    cfg->dist_graphs = 1;
}

int fh_config_choice_index(const char *choices, const char *value)
{
    size_t len = strlen(value);
    int index = 0;
    for (const char *p = choices; *p; index++) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, value, n) == 0)
            return index;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

int fh_config_choice_ok(const char *choices, const char *value)
{
    return fh_config_choice_index(choices, value) >= 0;
}

/* The index-th name of "a|b|c" into out ("" when there is none). */
static void choice_name(const char *choices, int index, char *out, size_t out_size)
{
    const char *p = choices;
    for (int i = 0; i < index && p; i++) {
        p = strchr(p, '|');
        p = p ? p + 1 : NULL;
    }
    size_t n = p ? strcspn(p, "|") : 0;
    snprintf(out, out_size, "%.*s", (int)n, p ? p : "");
}

static fh_status range_check(const fh_config_field *f, double v, const char *value,
                             fh_error *err)
{
    char range[FH_RANGE_CHARS];
    if (f->min < f->max && (v < f->min || v > f->max))
        return fh_error_set(err, FH_ERR_INPUT, "%s = %s is out of range %s (%s)",
                            f->key, value, fh_format_range(range, f->min, f->max), f->help);
    return FH_OK;
}

fh_status fh_config_field_set(const fh_config_field *f, fh_train_config *cfg,
                              const char *value, fh_error *err)
{
    char range[FH_RANGE_CHARS];
    char *base = (char *)cfg + f->offset;
    char *end = NULL;
    errno = 0;
    switch (f->type) {
    case FH_FIELD_STRING: {
        size_t bad = 0;
        if (strlen(value) >= f->size)
            return fh_error_set(err, FH_ERR_INPUT, "%s is longer than %zu characters",
                                f->key, f->size - 1);
        /* the config is saved as JSON in every checkpoint, and JSON is UTF-8: a path with
         * other bytes would make checkpoints other readers refuse */
        if (!fh_utf8_valid(value, strlen(value), &bad))
            return fh_error_set(err, FH_ERR_INPUT,
                                "%s is not valid UTF-8 (byte 0x%02x at offset %zu); the run's "
                                "config is saved as JSON in its checkpoints, which must be "
                                "UTF-8: rename the file or directory, or use a link with a "
                                "UTF-8 name",
                                f->key, (unsigned char)value[bad], bad);
        strcpy(base, value);
        return FH_OK;
    }
    case FH_FIELD_CHOICE:
        if (!fh_config_choice_ok(f->choices, value))
            return fh_error_set(err, FH_ERR_INPUT, "%s = '%s' is not one of %s", f->key,
                                value, f->choices);
        strcpy(base, value);
        return FH_OK;
    case FH_FIELD_ENUM: {
        int index = fh_config_choice_index(f->choices, value);
        if (index < 0)
            return fh_error_set(err, FH_ERR_INPUT, "%s = '%s' is not one of %s", f->key,
                                value, f->choices);
        *(int *)base = index;
        return FH_OK;
    }
    case FH_FIELD_BOOL:
        if (!strcmp(value, "1") || !strcasecmp(value, "true") || !strcasecmp(value, "yes"))
            *(int *)base = 1;
        else if (!strcmp(value, "0") || !strcasecmp(value, "false") || !strcasecmp(value, "no"))
            *(int *)base = 0;
        else
            return fh_error_set(err, FH_ERR_INPUT, "%s = '%s': expected 0/1/true/false",
                                f->key, value);
        return FH_OK;
    case FH_FIELD_INT: {
        long v = strtol(value, &end, 10);
        if (end == value || *end || (errno && errno != ERANGE)) {
            /* a whole number written as 1e+300 (a saved config's JSON number) is out of
             * range rather than not an integer */
            char *dend = NULL;
            double d = strtod(value, &dend);
            if (dend != value && !*dend && isfinite(d) && d == floor(d) && f->min < f->max &&
                (d < f->min || d > f->max))
                return fh_error_set(err, FH_ERR_INPUT, "%s = %s is out of range %s (%s)",
                                    f->key, value, fh_format_range(range, f->min, f->max),
                                    f->help);
            return fh_error_set(err, FH_ERR_INPUT, "%s = '%s': expected an integer", f->key,
                                value);
        }
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
            return fh_error_set(err, FH_ERR_INPUT, "%s = %s is out of range %s (%s)",
                                f->key, value, fh_format_range(range, f->min, f->max), f->help);
        if (range_check(f, (double)v, value, err) != FH_OK)
            return FH_ERR_INPUT;
        *(int *)base = (int)v;
        return FH_OK;
    }
    case FH_FIELD_U64: {
        unsigned long long v = strtoull(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-')
            return fh_error_set(err, FH_ERR_INPUT,
                                "%s = '%s': expected a non-negative integer", f->key, value);
        *(uint64_t *)base = (uint64_t)v;
        return FH_OK;
    }
    case FH_FIELD_DOUBLE:
    case FH_FIELD_FLOAT: {
        double v = strtod(value, &end);
        if (end == value || *end || isnan(v) || (isinf(v) && errno != ERANGE))
            return fh_error_set(err, FH_ERR_INPUT, "%s = '%s': expected a finite number",
                                f->key, value);
        /* strtod's ERANGE: beyond a double (v is +-HUGE_VAL), or below the smallest
         * normal one (v is 0 or subnormal); a float field has a narrower range still */
        const int is_float = f->type == FH_FIELD_FLOAT;
        const double tiny = is_float ? (double)FLT_MIN : DBL_MIN;
        if ((errno == ERANGE && fabs(v) <= DBL_MIN) || (v != 0.0 && fabs(v) < tiny))
            return fh_error_set(err, FH_ERR_INPUT,
                                "%s = %s is too small for a %s (below %.3g, the smallest normal "
                                "one, it would read as %g); write 0 or a value in range %s (%s)",
                                f->key, value, is_float ? "32-bit float" : "double", tiny,
                                is_float ? (double)(float)v : v,
                                fh_format_range(range, f->min, f->max), f->help);
        if (errno == ERANGE)
            return fh_error_set(err, FH_ERR_INPUT,
                                "%s = %s is too large to represent (above %.3g); write a value "
                                "in range %s (%s)",
                                f->key, value, DBL_MAX, fh_format_range(range, f->min, f->max),
                                f->help);
        if (range_check(f, v, value, err) != FH_OK)
            return FH_ERR_INPUT;
        if (f->type == FH_FIELD_FLOAT)
            *(float *)base = (float)v;
        else
            *(double *)base = v;
        return FH_OK;
    }
    }
    return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: unknown field type", __FILE__, __LINE__);
}

void fh_config_field_format(const fh_config_field *f, const fh_train_config *cfg,
                            char *out, size_t out_size)
{
    const char *base = (const char *)cfg + f->offset;
    switch (f->type) {
    case FH_FIELD_STRING:
    case FH_FIELD_CHOICE: snprintf(out, out_size, "%s", base); break;
    case FH_FIELD_ENUM: choice_name(f->choices, *(const int *)base, out, out_size); break;
    case FH_FIELD_BOOL:
    case FH_FIELD_INT: snprintf(out, out_size, "%d", *(const int *)base); break;
    case FH_FIELD_U64: snprintf(out, out_size, "%" PRIu64, *(const uint64_t *)base); break;
    case FH_FIELD_DOUBLE: {
        /* the shortest text that reads back to the same value */
        double v = *(const double *)base;
        for (int digits = 6; digits <= 17; digits++) {
            snprintf(out, out_size, "%.*g", digits, v);
            if (strtod(out, NULL) == v)
                break;
        }
        break;
    }
    case FH_FIELD_FLOAT: {
        float v = *(const float *)base;
        for (int digits = 6; digits <= 9; digits++) {
            snprintf(out, out_size, "%.*g", digits, (double)v);
            if ((float)strtod(out, NULL) == v)
                break;
        }
        break;
    }
    }
}

const fh_config_field *fh_config_field_find(const char *key)
{
    for (int i = 0; i < fh_train_config_n_fields; i++)
        if (strcmp(fh_train_config_fields[i].key, key) == 0)
            return &fh_train_config_fields[i];
    return NULL;
}

static const fh_config_field *find_field(const char *section, const char *key)
{
    for (int i = 0; i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        if (strcmp(f->key, key) == 0 && (!section || !*section || !strcmp(f->section, section)))
            return f;
    }
    return NULL;
}

/* The INI file, parsed by inih (ini_parse_string) after two checks of our own on the
 * whole text: no NUL byte, and no line of INI_MAX_LINE or more characters, which the
 * Debian build of inih (a fixed 200-byte line buffer) would split in two and report on
 * the wrong line (issue 19). The first error stops the reading: "FILE:LINE: ...". */
#define INI_MAX_BYTES ((size_t)16 << 20)
#define INI_MAX_LINE 200 /* inih's default line buffer, newline and NUL included */

typedef struct {
    fh_train_config *cfg;
    fh_error *err;
    int failed;
} ini_context;

static int on_ini_key(void *user, const char *section, const char *name, const char *value)
{
    ini_context *ctx = user;
    if (ctx->failed)
        return 0;
    if (!name[0]) {
        fh_error_set(ctx->err, FH_ERR_INPUT, "syntax error: no key before '='; write key = "
                     "value");
        ctx->failed = 1;
        return 0;
    }
    const fh_config_field *f = find_field(section, name);
    if (!f) {
        fh_error_set(ctx->err, FH_ERR_INPUT,
                     "unknown key '%s'%s%s%s (see foxhunt train --help for the keys)", name,
                     section && *section ? " in section [" : "", section && *section ? section : "",
                     section && *section ? "]" : "");
        ctx->failed = 1;
        return 0;
    }
    if (fh_config_field_set(f, ctx->cfg, value, ctx->err) != FH_OK) {
        ctx->failed = 1;
        return 0;
    }
    return 1;
}

/* FH_ERR_INPUT naming the first line that holds a NUL byte or is too long for inih. */
static fh_status ini_check_lines(const char *path, const char *text, size_t len, fh_error *err)
{
    size_t line = 1, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] == '\0')
            return fh_error_set(err, FH_ERR_INPUT, "%s:%zu: a NUL byte: not a text file; give "
                                "an INI file of key = value lines", path, line);
        if (i == len || text[i] == '\n') {
            if (i - start + 2 > INI_MAX_LINE)
                return fh_error_set(err, FH_ERR_INPUT, "%s:%zu: the line is %zu characters long; "
                                    "INI lines may have at most %d", path, line, i - start,
                                    INI_MAX_LINE - 2);
            line++;
            start = i + 1;
        }
    }
    return FH_OK;
}

fh_status fh_train_config_load_ini(const char *path, fh_train_config *cfg, fh_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    fh_status st = fh_read_regular_file(path, "config file (INI)", INI_MAX_BYTES, &buf, &len,
                                        err);
    if (st != FH_OK)
        return st;
    if ((st = ini_check_lines(path, buf, len, err)) != FH_OK) {
        free(buf);
        return st;
    }
    fh_train_config tmp = *cfg; /* nothing changes unless the whole file is good */
    ini_context ctx = {&tmp, err, 0};
    int rc = ini_parse_string(buf, on_ini_key, &ctx);
    free(buf);
    if (ctx.failed) {
        fh_error_prefix(err, "%s:%d: ", path, rc);
        return err ? err->status : FH_ERR_INPUT;
    }
    if (rc != 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s:%d: syntax error (expected [section] or "
                            "key = value)", path, rc);
    *cfg = tmp;
    return FH_OK;
}

fh_split_spec fh_train_config_split_spec(const fh_train_config *cfg)
{
    fh_split_spec s = fh_split_spec_simple(cfg->train_fraction);
    s.validation_fraction = cfg->validation_fraction;
    s.gap = (size_t)cfg->split_gap;
    s.folds = cfg->walkforward_folds;
    s.fold = cfg->fold - 1;
    s.window = strcmp(cfg->walkforward_window, "rolling") == 0 ? FH_WINDOW_ROLLING
                                                               : FH_WINDOW_EXPANDING;
    return s;
}

/* CleanRL's annealing fraction of (1-based) iteration: 1 at the first, 1/K at the last;
 * 0 past the run's end (foxhunt update --iteration K > iterations), never negative: a
 * negative entropy coefficient would penalise exploration. */
static double anneal_fraction(const fh_train_config *cfg, int64_t iteration)
{
    double f = 1.0 - (double)(iteration - 1) / (double)cfg->iterations;
    return f > 0.0 ? f : 0.0;
}

double fh_train_config_lr(const fh_train_config *cfg, int64_t iteration)
{
    return cfg->anneal_lr ? anneal_fraction(cfg, iteration) * cfg->lr : cfg->lr;
}

double fh_train_config_ent_coef(const fh_train_config *cfg, int64_t iteration)
{
    return cfg->anneal_ent ? anneal_fraction(cfg, iteration) * cfg->ent_coef : cfg->ent_coef;
}

fh_status fh_train_config_check_decay(double lr, double weight_decay, fh_error *err)
{
    /* lr * weight_decay < 1, and the factor as the optimisers compute it (from floats) > 0:
     * else every step flips (or zeroes) the weights' signs */
    if (weight_decay > 0.0 && (!(lr * weight_decay < 1.0) ||
                               !(fh_adam_decay_factor((float)lr, (float)weight_decay) > 0.0f)))
        return fh_error_set(err, FH_ERR_INPUT,
                            "weight_decay %g with lr %g: each step multiplies the weights by "
                            "1 - lr * weight_decay = %g; lower weight_decay below 1 / lr = %g",
                            weight_decay, lr, 1.0 - lr * weight_decay, 1.0 / lr);
    return FH_OK;
}

fh_status fh_train_config_validate(const fh_train_config *cfg, fh_error *err)
{
    if (!fh_learner_find(cfg->algo))
        return fh_error_set(err, FH_ERR_INPUT, "algo = %s: expected one of %s", cfg->algo,
                            FH_LEARNER_CHOICES);
    if (fh_train_config_check_decay(cfg->lr, cfg->weight_decay, err) != FH_OK)
        return err->status;
    long batch = (long)cfg->episodes * cfg->steps;
    if (cfg->minibatch > batch)
        return fh_error_set(err, FH_ERR_INPUT,
                            "minibatch %d is larger than the batch N*L = %ld (lower --minibatch)",
                            cfg->minibatch, batch);
    if (cfg->env.ruin >= 1.0f)
        return fh_error_set(err, FH_ERR_INPUT, "ruin must be below 1");
    /* the DQN/PQN collections (dqn_device_functions.cuh) observe without the noise */
    if (cfg->env.obs_noise > 0.0f && strcmp(cfg->algo, "ppo") != 0)
        return fh_error_set(err, FH_ERR_INPUT, "obs_noise = %g: observation noise is built for "
                            "algo ppo only, not %s; set obs_noise = 0 (--obs-noise 0)",
                            (double)cfg->env.obs_noise, cfg->algo);
    /* bf16 weight copies and activations are the PPO update's (precision.h) */
    if (strcmp(cfg->precision, "bf16") == 0 && strcmp(cfg->algo, "ppo") != 0)
        return fh_error_set(err, FH_ERR_INPUT, "precision = bf16 is built for algo ppo only, "
                            "not %s; set precision = fp32 or tf32 (--precision)", cfg->algo);
    return fh_env_config_validate(&cfg->env, err);
}

char *fh_train_config_to_json(const fh_train_config *cfg)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    /* [dist] is left out on purpose: how a run was launched is not part of it */
    const char *sections[4] = {"run", "ppo", "q", "env"};
    for (int s = 0; s < 4; s++) {
        cJSON *obj = cJSON_AddObjectToObject(root, sections[s]);
        for (int i = 0; obj && i < fh_train_config_n_fields; i++) {
            const fh_config_field *f = &fh_train_config_fields[i];
            if (strcmp(f->section, sections[s]) != 0)
                continue;
            char text[FH_CONFIG_STRING_MAX + 32];
            fh_config_field_format(f, cfg, text, sizeof text);
            /* a u64 (a seed) as a number below 1e15 (a double holds it exactly and %.15g
             * writes it back as digits: from_json), else as a string; both read back */
            int u64_as_text = f->type == FH_FIELD_U64 && strtod(text, NULL) >= 1e15;
            if (f->type == FH_FIELD_STRING || f->type == FH_FIELD_CHOICE ||
                f->type == FH_FIELD_ENUM || u64_as_text)
                cJSON_AddStringToObject(obj, f->key, text);
            else
                cJSON_AddRawToObject(obj, f->key, text);
        }
    }
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    return out;
}

fh_status fh_train_config_from_json(const char *json, fh_train_config *cfg, fh_error *err)
{
    size_t nul_at = 0;
    if (fh_json_string_has_nul(json, strlen(json), &nul_at))
        return fh_error_set(err, FH_ERR_INPUT, "the saved config holds a NUL character "
                            "(\\u0000) in a string, at byte %zu; a path or name would be cut "
                            "short at it: remove it", nul_at);
    cJSON *root = cJSON_Parse(json);
    if (!root)
        return fh_error_set(err, FH_ERR_INPUT, "the saved config is not valid JSON");
    fh_train_config tmp = *cfg;
    fh_status st = FH_OK;
    for (int i = 0; st == FH_OK && i < fh_train_config_n_fields; i++) {
        const fh_config_field *f = &fh_train_config_fields[i];
        cJSON *sec = cJSON_GetObjectItemCaseSensitive(root, f->section);
        cJSON *item = sec ? cJSON_GetObjectItemCaseSensitive(sec, f->key) : NULL;
        if (!item)
            continue; /* older files: keep the default */
        char text[FH_CONFIG_STRING_MAX + 32];
        if (cJSON_IsString(item))
            snprintf(text, sizeof text, "%s", item->valuestring);
        else if (cJSON_IsBool(item))
            snprintf(text, sizeof text, "%d", cJSON_IsTrue(item));
        else if (cJSON_IsNumber(item)) {
            /* as text, never (int)valuedouble: 1e300 or 2.5 for an integer key is then an
             * error naming the key (fh_config_field_set), not undefined behaviour; the
             * shortest text that reads back to the same number */
            for (int digits = 15; digits <= 17; digits++) {
                snprintf(text, sizeof text, "%.*g", digits, item->valuedouble);
                if (strtod(text, NULL) == item->valuedouble)
                    break;
            }
        } else {
            continue;
        }
        st = fh_config_field_set(f, &tmp, text, err);
        if (st != FH_OK)
            fh_error_prefix(err, "saved config [%s]: ", f->section);
    }
    /* before session 17 the fold was saved 0-based as walkforward_fold: its run (a
     * walk-forward's fold checkpoint) keeps evaluating its own fold */
    cJSON *run = cJSON_GetObjectItemCaseSensitive(root, "run");
    cJSON *old_fold = run ? cJSON_GetObjectItemCaseSensitive(run, "walkforward_fold") : NULL;
    if (st == FH_OK && old_fold && !cJSON_GetObjectItemCaseSensitive(run, "fold")) {
        double v = cJSON_GetNumberValue(old_fold);
        if (!(v >= 0 && v <= 999 && v == floor(v)))
            st = fh_error_set(err, FH_ERR_INPUT, "saved config [run]: walkforward_fold = %g "
                              "is not a fold index 0 .. 999", v);
        else
            tmp.fold = (int)v + 1;
    }
    cJSON_Delete(root);
    if (st == FH_OK)
        *cfg = tmp;
    return st;
}
