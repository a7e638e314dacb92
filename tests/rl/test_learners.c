/* test_learners.c — the learner seam (include/foxhunt/learner.h, train_loop.h; issue 33).
 *
 *  1. the table: FH_LEARNER_CHOICES (the settings' choices for algo) lists the learners of
 *     learners.c in order, and each names its policy network;
 *  2. the loop's contract, on a scripted learner defined here (outside the table): which
 *     iterations it runs, when it syncs and saves (checkpoint_every, validation's best,
 *     final / interrupted), metrics rows with the learner's own columns, and an
 *     iteration's failure naming the last checkpoint and writing none after it; the
 *     per-iteration hook's row (fh_run_dir_row, what the C API's trainer hands its
 *     callback, issue 36) equal to the metrics.csv row written before it;
 *  3. the constant learner (learner_constant.c) learns: against a brute-force reference
 *     (every one of the 45 actions held by every episode, the mean reward in the same
 *     environment), the action it picks is among the best;
 *  4. through the CLI, that learner gets validation, best-model selection, the end-of-run
 *     evaluation and eval's report for free (walk-forward: test_walkforward). */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/env.h"
#include "foxhunt/train_loop.h"
#include "rl/learners.h"
#include "test_util.h"

static char g_dir[256];

/* ---- 1. the table ---- */

static void test_table(void)
{
    char names[256];
    fh_learner_names(names, sizeof names, "|");
    CHECK_MSG(strcmp(names, FH_LEARNER_CHOICES) == 0, "the table's names %s, the settings' "
              "choices %s", names, FH_LEARNER_CHOICES);
    CHECK(fh_learner_find("ppo") == &fh_learner_ppo && fh_learner_find("dqn") == &fh_learner_dqn &&
          fh_learner_find("pqn") == &fh_learner_pqn &&
          fh_learner_find("constant") == &fh_learner_constant && !fh_learner_find("sac"));
    CHECK(fh_learner_policy_net("ppo") == FH_NET_ACTOR && fh_learner_policy_net("dqn") == FH_NET_QNET &&
          fh_learner_policy_net("pqn") == FH_NET_PQN &&
          fh_learner_policy_net("constant") == FH_NET_ACTOR);
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.algo, sizeof cfg.algo, "sac");
    fh_error err;
    CHECK_MSG(fh_train_config_validate(&cfg, &err) == FH_ERR_INPUT &&
              strstr(err.message, "ppo|dqn|pqn|constant"), "an unknown algo: %s", err.message);
}

/* ---- 2. the loop's contract on a scripted learner ---- */

/* The scripted learner's state: what the loop asked of it. Its policy is an actor whose
 * last bias favours action `action`, which changes with the iteration so validation sees
 * different Sharpe ratios. */
typedef struct {
    fh_run_data data;
    fh_mlp actor;
    fh_device_info device;
    fh_data_identity identity;
    char *config_json;
    int fail_at;            /* iterate fails at this iteration (0: never) */
    int iterated, synced;
    int64_t saved_at[32];   /* the iteration of each save */
    char saved_path[32][512];
    int saves, saves_with_meta;
} scripted;

static const fh_metric_column SCRIPTED_COLUMNS[] = {{"twice_iteration", "2it", "%.0f"},
                                                    {"square", NULL, NULL}};

static fh_status s_create(fh_learner *l, fh_error *err)
{
    scripted *s = calloc(1, sizeof *s);
    if (!s)
        return fh_error_set(err, FH_ERR_FAILURE, "out of memory");
    l->state = s;
    s->fail_at = l->cfg.fold - 1; /* the test's knob, borrowed (fold is 1-based) */
    l->cfg.fold = 1;
    fh_status st = fh_run_data_load(&s->data, &l->cfg, NULL, err);
    if (st == FH_OK)
        st = fh_mlp_init(&s->actor, FH_NET_ACTOR, err);
    if (st != FH_OK)
        return st;
    memset(s->actor.params, 0, s->actor.n_params * sizeof(float));
    fh_data_identity_of(&s->identity, &s->data.bars, "scripted");
    s->config_json = fh_train_config_to_json(&l->cfg);
    l->data = &s->data;
    l->data_identity = &s->identity;
    l->device = &s->device;
    l->config_json = s->config_json;
    l->run_steps = 100;
    return FH_OK;
}

static fh_status s_iterate(fh_learner *l, int64_t it, fh_iteration_metrics *m, fh_error *err)
{
    scripted *s = l->state;
    s->iterated++;
    if (it == s->fail_at)
        return fh_error_set(err, FH_ERR_FAILURE, "scripted failure");
    /* the policy: full long (action 44) on odd iterations, full short (4) on even ones */
    memset(s->actor.params + FH_ACTOR_OFF_B2, 0, FH_N_ACTIONS * sizeof(float));
    s->actor.params[FH_ACTOR_OFF_B2 + (it % 2 ? FH_N_ACTIONS - 1 : 4)] = 1.0f;
    m->mean_reward = 0.5;
    m->own[0] = 2.0 * (double)it;
    m->own[1] = (double)(it * it);
    l->iteration = it;
    return FH_OK;
}

static fh_status s_sync(fh_learner *l, fh_error *err)
{
    (void)err;
    ((scripted *)l->state)->synced++;
    return FH_OK;
}

static fh_status s_save(fh_learner *l, const char *path, const fh_save_meta *meta,
                        fh_error *err)
{
    scripted *s = l->state;
    if (s->saves < 32) {
        s->saved_at[s->saves] = l->iteration;
        snprintf(s->saved_path[s->saves], sizeof s->saved_path[0], "%s", path);
    }
    s->saves++;
    s->saves_with_meta += meta != NULL;
    uint64_t seed = l->cfg.seed;
    int64_t iteration = l->iteration;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.nets[FH_NET_ACTOR] = &s->actor;
    ck.norm = &s->data.market.norm;
    ck.seed = &seed;
    ck.iteration = &iteration;
    if (meta) {
        ck.meta_keys = meta->keys;
        ck.meta_values = meta->values;
        ck.n_meta = meta->n;
    }
    return fh_checkpoint_save(path, &ck, s->config_json, err);
}

static const fh_mlp *s_policy(const fh_learner *l) { return &((scripted *)l->state)->actor; }

static void s_describe(const fh_learner *l, char *out, size_t n)
{
    (void)l;
    snprintf(out, n, "scripted");
}

static void s_destroy(fh_learner *l)
{
    scripted *s = l->state;
    if (!s)
        return;
    fh_run_data_free(&s->data);
    fh_mlp_free(&s->actor);
    free(s->config_json);
    free(s);
    l->state = NULL;
}

static const fh_learner_ops SCRIPTED = {
    .name = "scripted", .columns = SCRIPTED_COLUMNS, .n_columns = 2,
    .create = s_create, .iterate = s_iterate, .sync = s_sync, .save = s_save,
    .policy = s_policy, .policy_net = FH_NET_ACTOR, .describe = s_describe,
    .destroy = s_destroy};

static void scripted_config(fh_train_config *cfg, const char *out, int fail_at)
{
    fh_train_config_default(cfg);
    snprintf(cfg->device, sizeof cfg->device, "cpu");
    snprintf(cfg->out, sizeof cfg->out, "%s", out);
    cfg->episodes = 4;
    cfg->steps = 16;
    cfg->minibatch = 16;
    cfg->iterations = 5;
    cfg->checkpoint_every = 2;
    cfg->eval_every = 2;
    cfg->synthetic_bars = 3000;
    cfg->validation_fraction = 0.2;
    cfg->fold = fail_at + 1;
}

static void stop_at_3(const fh_train_loop *loop, const fh_iteration_metrics *m, void *user)
{
    (void)loop;
    if (m->iteration == 3)
        *(volatile sig_atomic_t *)user = 1;
}

static void test_loop_contract(void)
{
    char out[300], path[400];
    snprintf(out, sizeof out, "%s/scripted", g_dir);
    fh_train_config cfg;
    scripted_config(&cfg, out, 0);
    fh_train_loop loop;
    fh_error err;
    fh_status st = fh_train_loop_init_with(&loop, &SCRIPTED, &cfg, &err);
    if (st == FH_OK)
        st = fh_train_loop_open_run(&loop, &err);
    if (st == FH_OK)
        st = fh_train_loop_run(&loop, NULL, NULL, NULL, &err);
    CHECK_MSG(st == FH_OK, "the scripted run: %s", err.message);
    scripted *s = loop.learner.state;
    /* iterations 1..5; validations at 2, 4 and 5 (the last); checkpoints at 2 and 4 and
     * the final one; each save and validation after a sync */
    CHECK_MSG(s && s->iterated == 5 && loop.learner.iteration == 5, "iterated %d",
              s ? s->iterated : -1);
    int64_t want_at[8];
    int n_want = 0, best_saves = s ? s->saves_with_meta : 0;
    CHECK_MSG(best_saves >= 1 && loop.has_best, "validation saved no best (%d)", best_saves);
    CHECK_MSG(s && s->synced == 3 + 2 + 1, "synced %d times: 3 validations, 2 checkpoints, "
              "the final", s ? s->synced : -1);
    for (int k = 0; s && k < s->saves && k < 32; k++)
        if (strstr(s->saved_path[k], "checkpoint_") || strstr(s->saved_path[k], "final"))
            want_at[n_want++ < 8 ? n_want - 1 : 7] = s->saved_at[k];
    CHECK_MSG(n_want == 3 && want_at[0] == 2 && want_at[1] == 4 && want_at[2] == 5,
              "checkpoints at %lld, %lld, %lld (%d)", (long long)want_at[0],
              (long long)want_at[1], (long long)want_at[2], n_want);
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    char *csv = fh_read_text(path);
    CHECK_MSG(csv && strstr(csv, ",action_entropy,twice_iteration,square\n") &&
              strstr(csv, ",10,25\n"), "metrics.csv: the learner's columns and row 5: %s",
              csv ? csv : "(none)");
    free(csv);
    snprintf(path, sizeof path, "%s/validation.csv", out);
    char *val = fh_read_text(path);
    int rows = 0;
    for (const char *p = val; p && (p = strchr(p, '\n')); p++)
        rows++;
    CHECK_MSG(rows == 4, "validation.csv: %d lines (the header and iterations 2, 4, 5)", rows);
    free(val);
    const char *source = NULL;
    CHECK(fh_train_loop_chosen(&loop, &source) == &loop.best_policy && source &&
          strstr(source, "best.safetensors"));
    fh_train_loop_free(&loop);

    /* a stop after iteration 3: interrupted.safetensors at 3, nothing later */
    snprintf(out, sizeof out, "%s/scripted_stop", g_dir);
    scripted_config(&cfg, out, 0);
    volatile sig_atomic_t stop = 0;
    st = fh_train_loop_init_with(&loop, &SCRIPTED, &cfg, &err);
    if (st == FH_OK)
        st = fh_train_loop_run(&loop, &stop, stop_at_3, (void *)&stop, &err);
    s = loop.learner.state;
    snprintf(path, sizeof path, "%s/interrupted.safetensors", out);
    CHECK_MSG(st == FH_OK && s && s->iterated == 3 && fh_file_exists(path) &&
              strcmp(loop.last_checkpoint, path) == 0, "stop: %s, iterated %d, last %s",
              err.message, s ? s->iterated : -1, loop.last_checkpoint);
    fh_train_loop_free(&loop);

    /* a failure at iteration 4: no checkpoint after it; the message names iteration 4
     * and the last checkpoint (2) */
    snprintf(out, sizeof out, "%s/scripted_fail", g_dir);
    scripted_config(&cfg, out, 4);
    st = fh_train_loop_init_with(&loop, &SCRIPTED, &cfg, &err);
    if (st == FH_OK)
        st = fh_train_loop_run(&loop, NULL, NULL, NULL, &err);
    CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, "iteration 4: scripted failure") &&
              strstr(err.message, "checkpoint_000002.safetensors"), "failure: %s",
              err.message);
    snprintf(path, sizeof path, "%s/final.safetensors", out);
    CHECK(!fh_file_exists(path));
    snprintf(path, sizeof path, "%s/interrupted.safetensors", out);
    CHECK(!fh_file_exists(path));
    fh_train_loop_free(&loop);
}

/* The hook's rows as metrics.csv would print them (%.9g, empty when not finite). */
typedef struct {
    char rows[8][1024];
    int n_rows;
    int row_columns;
} hook_rows;

static void record_row(const fh_train_loop *loop, const fh_iteration_metrics *m, void *user)
{
    hook_rows *h = user;
    const char *names[FH_RUN_DIR_MAX_COLUMNS];
    double values[FH_RUN_DIR_MAX_COLUMNS];
    int n = fh_run_dir_row(&loop->run, m, names, values);
    h->row_columns = n;
    if (h->n_rows >= 8)
        return;
    char *row = h->rows[h->n_rows++];
    row[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t at = strlen(row);
        if (isfinite(values[i]))
            snprintf(row + at, 1024 - at, "%s%.9g", i ? "," : "", values[i]);
        else
            snprintf(row + at, 1024 - at, "%s", i ? "," : "");
    }
    CHECK_MSG(strcmp(names[0], "iteration") == 0 && strcmp(names[n - 2], "twice_iteration") == 0
              && strcmp(names[n - 1], "square") == 0, "row columns %s .. %s, %s", names[0],
              names[n - 2], names[n - 1]);
    CHECK_MSG(values[0] == (double)m->iteration && values[n - 2] == 2.0 * (double)m->iteration
              && values[n - 1] == (double)(m->iteration * m->iteration),
              "row %lld: %g, %g, %g", (long long)m->iteration, values[0], values[n - 2],
              values[n - 1]);
}

static void test_hook_row(void)
{
    char out[300], path[400];
    snprintf(out, sizeof out, "%s/scripted_hook", g_dir);
    fh_train_config cfg;
    scripted_config(&cfg, out, 0);
    cfg.eval_every = 0;
    fh_train_loop loop;
    fh_error err;
    hook_rows h = {.n_rows = 0};
    fh_status st = fh_train_loop_init_with(&loop, &SCRIPTED, &cfg, &err);
    if (st == FH_OK)
        st = fh_train_loop_open_run(&loop, &err);
    if (st == FH_OK)
        st = fh_train_loop_run(&loop, NULL, record_row, &h, &err);
    CHECK_MSG(st == FH_OK && h.n_rows == 5 && h.row_columns == 20, "hook: %s, %d rows of %d "
              "columns (want 5 of 18 + 2)", err.message, h.n_rows, h.row_columns);
    fh_train_loop_free(&loop);
    snprintf(path, sizeof path, "%s/metrics.csv", out);
    char *csv = fh_read_text(path);
    const char *line = csv ? strchr(csv, '\n') : NULL; /* after the header */
    for (int r = 0; r < h.n_rows && line; r++) {
        line++;
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        CHECK_MSG(strlen(h.rows[r]) == len && strncmp(h.rows[r], line, len) == 0,
                  "iteration %d: the hook's row %s, metrics.csv's %.*s", r + 1, h.rows[r],
                  (int)len, line);
        line = end;
    }
    free(csv);
}

/* ---- 3. the constant learner learns the best constant action ---- */

/* The mean reward per step of every episode holding action a for `steps` steps, from the
 * same starts (seed) as the learner's environment: the reference. */
static double constant_action_reward(const fh_train_config *cfg, const fh_run_data *data,
                                     int a, int steps)
{
    fh_market_view view;
    fh_env_market unused;
    fh_error err;
    fh_vec_env env;
    memset(&env, 0, sizeof env);
    if (fh_run_data_train_split(data, &view, &unused, &err) != FH_OK ||
        fh_vec_env_init(&env, cfg->episodes, &cfg->env, &view, cfg->seed + 1000, &err) != FH_OK)
        return NAN;
    int N = cfg->episodes;
    int *actions = calloc((size_t)N, sizeof *actions), *dones = calloc((size_t)N, sizeof(int));
    int *terms = calloc((size_t)N, sizeof(int)), *truncs = calloc((size_t)N, sizeof(int));
    float *states = calloc((size_t)N * FH_STATE_DIM, sizeof(float));
    float *rewards = calloc((size_t)N, sizeof(float));
    double total = 0;
    for (int n = 0; n < N; n++)
        actions[n] = a;
    for (int t = 0; t < steps; t++) {
        if (fh_vec_env_step(&env, actions, NULL, states, rewards, dones, terms, truncs, NULL,
                            &err) != FH_OK) {
            total = NAN;
            break;
        }
        for (int n = 0; n < N; n++)
            total += rewards[n];
    }
    free(actions);
    free(dones);
    free(terms);
    free(truncs);
    free(states);
    free(rewards);
    fh_vec_env_free(&env);
    return total / ((double)N * steps);
}

static int by_value_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static void test_constant_learns(void)
{
    char out[300];
    snprintf(out, sizeof out, "%s/constant", g_dir);
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.algo, sizeof cfg.algo, "constant");
    snprintf(cfg.device, sizeof cfg.device, "cpu");
    snprintf(cfg.out, sizeof cfg.out, "%s", out);
    cfg.episodes = 512;
    cfg.steps = 256;
    cfg.minibatch = 64;
    cfg.iterations = 12;
    cfg.synthetic_bars = 20000;
    cfg.eval_at_end = 0;
    cfg.seed = 11;
    fh_train_loop loop;
    fh_error err;
    fh_status st = fh_train_loop_init(&loop, &cfg, &err);
    if (st == FH_OK)
        st = fh_train_loop_run(&loop, NULL, NULL, NULL, &err);
    CHECK_MSG(st == FH_OK, "the constant learner: %s", err.message);
    if (st != FH_OK) {
        fh_train_loop_free(&loop);
        return;
    }
    const fh_mlp *policy = loop.learner.ops->policy(&loop.learner);
    const float *bias = policy->params + FH_ACTOR_OFF_B2;
    int chosen = 0;
    double p_sum = 0;
    for (int a = 0; a < FH_N_ACTIONS; a++) {
        p_sum += exp((double)bias[a]);
        if (bias[a] > bias[chosen])
            chosen = a;
    }
    CHECK_MSG(fabs(p_sum - 1.0) < 1e-4, "exp(bias) sums to %.6f, not 1", p_sum);
    double reward[FH_N_ACTIONS], sorted[FH_N_ACTIONS];
    for (int a = 0; a < FH_N_ACTIONS; a++)
        sorted[a] = reward[a] = constant_action_reward(&cfg, loop.learner.data, a, 256);
    qsort(sorted, FH_N_ACTIONS, sizeof sorted[0], by_value_desc);
    for (int a = 0; a < FH_N_ACTIONS; a++)
        printf("%s%8.5f/%5.3f", a % 5 ? " " : "\n", reward[a], exp(bias[a]));
    printf("\n");
    int rank = 0;
    while (rank < FH_N_ACTIONS && sorted[rank] > reward[chosen])
        rank++;
    printf("constant learner: chose action %d (p %.2f): mean reward %.5f, rank %d of 45 by "
           "the reference (best %.5f, median %.5f, worst %.5f)\n", chosen, exp(bias[chosen]),
           reward[chosen], rank + 1, sorted[0], sorted[FH_N_ACTIONS / 2],
           sorted[FH_N_ACTIONS - 1]);
    /* among the best quarter of the 45 by the reference, and above the median clearly */
    CHECK_MSG(rank < FH_N_ACTIONS / 4, "the chosen action ranks %d of 45", rank + 1);
    fh_train_loop_free(&loop);
}

/* ---- the warning on the model validation chose (issue 34: do no harm) ---- */

static void test_choice_warning(void)
{
    char text[320];
    CHECK(fh_validation_choice_warning(1, 0.8, text, sizeof text) == 0 && text[0] == 0);
    CHECK(fh_validation_choice_warning(1, -0.3, text, sizeof text) == 1 &&
          strstr(text, "-0.30 <= 0") && strstr(text, "flat"));
    CHECK(fh_validation_choice_warning(1, 0.0, text, sizeof text) == 1);
    CHECK(fh_validation_choice_warning(1, NAN, text, sizeof text) == 1);
    CHECK(fh_validation_choice_warning(0, 1.0, text, sizeof text) == 1 &&
          strstr(text, "no validation backtest gave a finite Sharpe"));
}

/* PSR(0) by its definition (Bailey and Lopez de Prado 2012), with erfc for Phi: the
 * reference for fh_backtest_psr */
static double psr_reference(double annual_sharpe, double ppy, int T, double skew, double kurt)
{
    double sr = annual_sharpe / sqrt(ppy);
    double z = sr * sqrt(T - 1.0) / sqrt(1.0 - skew * sr + (kurt - 1.0) / 4.0 * sr * sr);
    return 0.5 * erfc(-z / sqrt(2.0));
}

static void test_deploy_gate(void)
{
    fh_backtest_metrics m;
    memset(&m, 0, sizeof m);
    m.steps = 2000;
    m.sharpe = 1.3;
    m.skewness = -0.4;
    m.kurtosis = 5.5;
    double psr = fh_backtest_psr(&m, 8760), want = psr_reference(1.3, 8760, 2000, -0.4, 5.5);
    CHECK_MSG(fabs(psr - want) < 1e-9, "PSR %.12f, by its definition %.12f", psr, want);
    m.sharpe = NAN;
    CHECK(isnan(fh_backtest_psr(&m, 8760)));
    char why[320];
    CHECK(fh_deploy_gate(1, 0.97, 0.95, why, sizeof why) == 1 && strstr(why, "trades"));
    CHECK(fh_deploy_gate(1, 0.90, 0.95, why, sizeof why) == 0 && strstr(why, "stays flat") &&
          strstr(why, "0.900 is < deploy_min_psr 0.95"));
    CHECK(fh_deploy_gate(0, 0.99, 0.95, why, sizeof why) == 0);
    CHECK(fh_deploy_gate(1, NAN, 0.95, why, sizeof why) == 0 && strstr(why, "unknown"));
    CHECK(fh_deploy_gate(0, NAN, 0.0, why, sizeof why) == 1 && strstr(why, "gate is off"));
}

/* ---- 4. what the loop gives it, through the CLI ---- */

static void test_constant_cli(void)
{
    char out[300], path[400];
    snprintf(out, sizeof out, "%s/constant_cli", g_dir);
    char *argv[] = {"train", "--algo", "constant", "--device", "cpu", "--episodes", "32",
                    "--steps", "32", "--minibatch", "32", "--iterations", "4", "--eval-every",
                    "2", "--synthetic-bars", "4000", "--threads", "1", "--out", out, NULL};
    char *text = NULL, *err_text = NULL;
    CHECK_MSG(fh_run_foxhunt(g_dir, "constant_cli", argv, &text, &err_text) == 0,
              "train --algo constant failed (see %s/constant_cli.err)", g_dir);
    /* the warning comes exactly when the chosen model's validation Sharpe is not > 0 */
    const char *chosen = text ? strstr(text, "validation Sharpe ") : NULL;
    const char *said = text ? strstr(text, "model chosen on the validation split") : NULL;
    double sharpe = said && (chosen = strstr(said, "validation Sharpe ")) ?
                    atof(chosen + strlen("validation Sharpe ")) : NAN;
    int warned = err_text && strstr(err_text, "warning: ") != NULL;
    CHECK_MSG(warned == !(said && sharpe > 0), "validation Sharpe %.2f (%s), warned %d: %s",
              sharpe, said ? "chosen" : "none chosen", warned, err_text ? err_text : "");
    CHECK_MSG(text && strstr(text, "deployment gate: "), "train says nothing of the gate");
    /* eval.json records the same decision */
    int stays_flat = text && strstr(text, "the deployed policy stays flat") != NULL;
    snprintf(path, sizeof path, "%s/eval.json", out);
    char *json = fh_read_text(path);
    const char *gate = json ? strstr(json, "\"deployment_gate\"") : NULL;
    const char *deploy = gate ? strstr(gate, "\"deploy\":") : NULL;
    if (deploy)
        deploy += strlen("\"deploy\":") + strspn(deploy + strlen("\"deploy\":"), " \t");
    CHECK_MSG(deploy && strncmp(deploy, stays_flat ? "false" : "true", 4) == 0,
              "eval.json's deployment_gate disagrees with train's output (stays flat %d)",
              stays_flat);
    free(json);
    free(err_text);
    CHECK_MSG(text && strstr(text, "validation Sharpe") && strstr(text, "action ") &&
              strstr(text, "model chosen on the validation split"),
              "its progress and choice: %s", text ? text : "(none)");
    free(text);
    const char *files[] = {"best.safetensors", "validation.csv", "final.safetensors",
                           "eval.json", "returns.csv", "metrics.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", out, files[i]);
        CHECK_MSG(fh_file_exists(path), "missing %s", path);
    }
    /* the tear sheet plots its own columns (without dygraphs the run says why: no file) */
    snprintf(path, sizeof path, "%s/report.html", out);
    char *html = fh_read_text(path);
    if (html)
        CHECK_MSG(strstr(html, "id=\"chart-train-elite_return\"") &&
                  strstr(html, "id=\"chart-train-best_action\""),
                  "%s plots not the constant learner's columns", path);
    else
        printf("note: no %s (this build has no dygraphs): its curves not checked\n", path);
    free(html);
    /* eval of its best model, as of any checkpoint */
    snprintf(path, sizeof path, "%s/best.safetensors", out);
    char *eval_argv[] = {"eval", "--checkpoint", path, NULL};
    CHECK_MSG(fh_run_foxhunt(g_dir, "constant_eval", eval_argv, &text, NULL) == 0 && text &&
              strstr(text, "greedy"), "eval of the constant learner's best: %s",
              text ? text : "(none)");
    free(text);
}

/* export --actor of a Q learner: the Q-network (its greedy policy) alone; eval of the
 * export gives the full checkpoint's evaluation, number for number */
static void test_export_q(void)
{
    char out[300], full[400], policy[400], json_a[400], json_b[400];
    snprintf(out, sizeof out, "%s/pqn", g_dir);
    snprintf(full, sizeof full, "%s/final.safetensors", out);
    snprintf(policy, sizeof policy, "%s/policy.safetensors", out);
    snprintf(json_a, sizeof json_a, "%s/full.json", out);
    snprintf(json_b, sizeof json_b, "%s/policy.json", out);
    char *train[] = {"train", "--algo", "pqn", "--device", "cpu", "--episodes", "16", "--steps",
                     "32", "--minibatch", "64", "--iterations", "2", "--synthetic-bars", "3000",
                     "--eval-at-end", "0", "--threads", "1", "--out", out, NULL};
    char *export[] = {"export", "--actor", "--checkpoint", full, "--out", policy, NULL};
    char *eval_a[] = {"eval", "--checkpoint", full, "--json", json_a, NULL};
    char *eval_b[] = {"eval", "--checkpoint", policy, "--json", json_b, NULL};
    char *text = NULL;
    CHECK(fh_run_foxhunt(g_dir, "pqn_train", train, NULL, NULL) == 0);
    CHECK(fh_run_foxhunt(g_dir, "pqn_export", export, &text, NULL) == 0 && text &&
          strstr(text, "q_output.weight") && !strstr(text, "adam"));
    free(text);
    CHECK(fh_run_foxhunt(g_dir, "pqn_eval_a", eval_a, NULL, NULL) == 0);
    CHECK(fh_run_foxhunt(g_dir, "pqn_eval_b", eval_b, NULL, NULL) == 0);
    char *a = fh_read_text(json_a), *b = fh_read_text(json_b);
    const char *pa = a ? strstr(a, "\"policies\"") : NULL, *pb = b ? strstr(b, "\"policies\"") : NULL;
    CHECK_MSG(pa && pb && strcmp(pa, pb) == 0, "eval of the exported Q-network differs from "
              "the full checkpoint's (%s, %s)", json_a, json_b);
    free(a);
    free(b);
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_learners"))
        return 1;
    test_table();
    test_choice_warning();
    test_deploy_gate();
    test_loop_contract();
    test_hook_row();
    test_constant_learns();
    test_constant_cli();
    test_export_q();
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "files kept in %s\n", g_dir);
    return fh_test_finish();
}
