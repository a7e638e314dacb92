/* test_ppo_update.c — the PPO update (SPEC §6) on a fixed batch (issue 5).
 *
 * The batch is a real collection: fh_cpu_collector over a small synthetic market with
 * fresh networks. On it:
 *  (a) one fh_ppo_update with the default lr (3e-4) lowers the clipped PPO objective,
 *      recomputed over the whole batch with the nn API (fh_mlp_forward + fh_ppo_loss,
 *      advantages normalised over the whole batch both before and after), and keeps the
 *      whole-batch approx-KL (CleanRL's k3) below 0.02; before the update the batch's
 *      stored log-probs must be the actor's own (approx-KL below 1e-6);
 *  (b) with lr 0 and curiosity_lr 0 the actor, critic and curiosity parameters are
 *      bit-identical afterwards (the Adam moments and step do move);
 *  (c) two updates from the same networks, batch and shuffling stream give
 *      bit-identical parameters, moments and statistics;
 *  (d) a non-finite value in the batch (an advantage, a return, a state, an exposure) or
 *      in the critic's weights stops the update with FH_ERR_FAILURE naming the quantity
 *      (policy or value loss, gradient norm, curiosity gradient), before any step spreads it: the other networks'
 *      params stay finite; fh_mlp_check_finite names the network, buffer, tensor and
 *      index of a NaN or infinity; a backtest of a NaN actor is refused (FH_ERR_INPUT);
 *  (e) the regularisers (issue 34): the update's entropy coefficient is its argument
 *      (an annealed one), not cfg->ent_coef: bit for bit the same update whatever
 *      cfg->ent_coef says, another than with the full coefficient; weight_decay on one
 *      Adam step (1 epoch, the whole batch as its minibatch) gives actor and critic
 *      params p0 (1 - lr wd) - delta, delta the same update's step without decay,
 *      within 2 float ulps (the first step's gradient is taken at p0 either way), and
 *      leaves the curiosity model bit for bit as without it. */
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "foxhunt/evaluate.h"
#include "foxhunt/ppo.h"
#include "foxhunt/rollout.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define N_EPISODES 16
#define N_STEPS 64
#define KL_BOUND 0.02

typedef struct {
    fh_train_config cfg;
    fh_run_data data;
    fh_market_view view;
    fh_env_market market;
    fh_mlp actor, critic, curiosity; /* the networks the batch was collected with */
    fh_trajectory_batch batch;
} fixture;

static void fixture_free(fixture *f)
{
    fh_trajectory_batch_free(&f->batch);
    fh_mlp_free(&f->actor);
    fh_mlp_free(&f->critic);
    fh_mlp_free(&f->curiosity);
    fh_run_data_free(&f->data);
}

static fh_status fixture_init(fixture *f, fh_error *err)
{
    memset(f, 0, sizeof *f);
    fh_train_config_default(&f->cfg);
    f->cfg.synthetic_bars = 3000;
    f->cfg.episodes = N_EPISODES;
    f->cfg.steps = N_STEPS;
    f->cfg.epochs = 4;
    f->cfg.minibatch = 256;
    /* the update's own coefficients are the CleanRL defaults of SPEC §6 */
    f->cfg.lr = 3e-4;
    f->cfg.clip = 0.2;
    f->cfg.target_kl = 0;
    f->cfg.env.horizon = 40; /* truncations inside the batch */
    fh_status st = fh_run_data_load(&f->data, &f->cfg, NULL, err);
    if (st != FH_OK)
        return st;
    f->view = fh_market_view_of(&f->data.market, FH_SPLIT_TRAIN);
    f->market = fh_env_market_from_view(&f->view);
    if ((st = fh_mlp_init(&f->actor, FH_NET_ACTOR, err)) != FH_OK ||
        (st = fh_mlp_init(&f->critic, FH_NET_CRITIC, err)) != FH_OK ||
        (st = fh_mlp_init(&f->curiosity, FH_NET_CURIOSITY, err)) != FH_OK)
        return st;
    fh_mlp_init_orthogonal(&f->actor, 11);
    fh_mlp_init_orthogonal(&f->critic, 12);
    fh_mlp_init_orthogonal(&f->curiosity, 13);
    if ((st = fh_trajectory_batch_alloc(&f->batch, N_EPISODES, N_STEPS, err)) != FH_OK)
        return st;
    fh_cpu_collector c;
    memset(&c, 0, sizeof c);
    st = fh_cpu_collector_init(&c, N_EPISODES, N_STEPS, &f->cfg.env, &f->view, 7, err);
    if (st == FH_OK) {
        fh_collect_params p = {&f->actor, &f->critic, &f->curiosity, (float)f->cfg.gamma,
                               (float)f->cfg.gae_lambda};
        st = fh_cpu_collect_rollouts(&c, &p, &f->batch, err);
    }
    fh_cpu_collector_free(&c);
    return st;
}

/* A fresh copy of src (params, grads, moments, step). */
static fh_status clone(fh_mlp *dst, const fh_mlp *src, fh_error *err)
{
    memset(dst, 0, sizeof *dst);
    fh_status st = fh_mlp_init(dst, src->desc->kind, err);
    if (st == FH_OK)
        fh_mlp_copy(dst, src);
    return st;
}

/* The PPO loss of SPEC §6 over the whole batch, with the update's coefficients:
 * advantages normalised over all N*L samples (the same way before and after). */
static fh_status batch_objective(fh_ppo_loss_stats *out, const fh_mlp *actor,
                                 const fh_mlp *critic, const fh_trajectory_batch *b,
                                 const fh_train_config *cfg, fh_error *err)
{
    int B = b->n_episodes * b->n_steps;
    fh_mlp_ws aws, cws;
    memset(&aws, 0, sizeof aws);
    memset(&cws, 0, sizeof cws);
    float *logits = malloc((size_t)B * FH_N_ACTIONS * sizeof(float));
    float *values = malloc((size_t)B * sizeof(float));
    float *dlogits = calloc((size_t)B * FH_N_ACTIONS, sizeof(float));
    float *dvalues = calloc((size_t)B, sizeof(float));
    float *scratch = malloc(FH_PPO_SCRATCH_FLOATS(B, FH_N_ACTIONS) * sizeof(float));
    fh_status st = FH_OK;
    if (!logits || !values || !dlogits || !dvalues || !scratch)
        st = fh_error_set(err, FH_ERR_FAILURE, "out of memory");
    if (st == FH_OK)
        st = fh_mlp_ws_init(&aws, actor, B, err);
    if (st == FH_OK)
        st = fh_mlp_ws_init(&cws, critic, B, err);
    if (st == FH_OK)
        st = fh_mlp_forward(logits, &aws, actor, b->states, B, err);
    if (st == FH_OK)
        st = fh_mlp_forward(values, &cws, critic, b->states, B, err);
    if (st == FH_OK) {
        fh_ppo_loss_config lc;
        fh_ppo_loss_config_default(&lc);
        lc.clip_coef = (float)cfg->clip;
        lc.vf_coef = (float)cfg->vf_coef;
        lc.ent_coef = (float)cfg->ent_coef;
        lc.vclip_coef = cfg->clip_vloss ? (float)cfg->clip : 0.0f;
        lc.norm_adv = cfg->norm_adv;
        fh_ppo_loss(out, dlogits, dvalues, logits, values, b->actions, b->log_probs,
                    b->advantages, b->returns, b->values, B, FH_N_ACTIONS, &lc, scratch);
    }
    fh_mlp_ws_free(&aws);
    fh_mlp_ws_free(&cws);
    free(logits);
    free(values);
    free(dlogits);
    free(dvalues);
    free(scratch);
    return st;
}

/* Index of the first differing float (bitwise), or -1. */
static long first_bit_difference(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(a + i, b + i, sizeof(float)) != 0)
            return (long)i;
    return -1;
}

static void check_bits(const char *what, const float *a, const float *b, size_t n)
{
    long i = first_bit_difference(a, b, n);
    CHECK_MSG(i < 0, "%s: first bitwise difference at [%ld]: %.9g vs %.9g", what, i,
              i < 0 ? 0.0 : (double)a[i], i < 0 ? 0.0 : (double)b[i]);
}

typedef struct {
    fh_mlp actor, critic, curiosity;
    fh_rng rng;
    fh_ppo_stats stats;
} update_result;

static void update_result_free(update_result *r)
{
    fh_mlp_free(&r->actor);
    fh_mlp_free(&r->critic);
    fh_mlp_free(&r->curiosity);
}

/* One fh_ppo_update from copies of the fixture's networks, with entropy coefficient
 * ent_coef. */
static fh_status run_update_ent(update_result *r, const fixture *f, const fh_train_config *cfg,
                                double lr, double ent_coef, uint64_t rng_seed_value,
                                fh_error *err)
{
    memset(r, 0, sizeof *r);
    fh_status st;
    if ((st = clone(&r->actor, &f->actor, err)) != FH_OK ||
        (st = clone(&r->critic, &f->critic, err)) != FH_OK ||
        (st = clone(&r->curiosity, &f->curiosity, err)) != FH_OK)
        return st;
    rng_seed(&r->rng, rng_seed_value, 99);
    fh_ppo_workspace ws;
    st = fh_ppo_workspace_init(&ws, cfg->minibatch, (int64_t)N_EPISODES * N_STEPS, err);
    if (st == FH_OK)
        st = fh_ppo_update(&r->stats, &r->actor, &r->critic, &r->curiosity, &ws, &f->batch,
                           &f->market, cfg, lr, ent_coef, &r->rng, NULL, err);
    fh_ppo_workspace_free(&ws);
    return st;
}

/* ... with cfg's own (not annealed) entropy coefficient. */
static fh_status run_update(update_result *r, const fixture *f, const fh_train_config *cfg,
                            double lr, uint64_t rng_seed_value, fh_error *err)
{
    return run_update_ent(r, f, cfg, lr, cfg->ent_coef, rng_seed_value, err);
}

/* (a) the objective goes down, the policy moves a little */
static void test_update_lowers_objective(const fixture *f, fh_error *err)
{
    fh_ppo_loss_stats before, after;
    if (batch_objective(&before, &f->actor, &f->critic, &f->batch, &f->cfg, err) != FH_OK) {
        CHECK_MSG(0, "objective: %s", err->message);
        return;
    }
    /* the stored log-probs are the collecting actor's: ratio 1 everywhere */
    CHECK_MSG(fabs(before.approx_kl) < 1e-6 && before.clipfrac == 0.0,
              "before the update: approx_kl %.3g clipfrac %.3g (batch log-probs are not "
              "the actor's)", before.approx_kl, before.clipfrac);
    update_result r;
    if (run_update(&r, f, &f->cfg, f->cfg.lr, 5, err) != FH_OK) {
        CHECK_MSG(0, "update: %s", err->message);
        update_result_free(&r);
        return;
    }
    if (batch_objective(&after, &r.actor, &r.critic, &f->batch, &f->cfg, err) != FH_OK) {
        CHECK_MSG(0, "objective: %s", err->message);
        update_result_free(&r);
        return;
    }
    printf("whole-batch objective before: loss %.6f pg %.6f v %.6f ent %.6f\n", before.loss,
           before.pg_loss, before.v_loss, before.entropy);
    printf("whole-batch objective after:  loss %.6f pg %.6f v %.6f ent %.6f kl %.3g "
           "clipfrac %.3f (update: %d minibatches, mean kl %.3g)\n", after.loss,
           after.pg_loss, after.v_loss, after.entropy, after.approx_kl, after.clipfrac,
           r.stats.minibatches, r.stats.approx_kl);
    CHECK_MSG(after.loss < before.loss, "total loss %.9g -> %.9g did not decrease",
              before.loss, after.loss);
    CHECK_MSG(after.pg_loss < before.pg_loss, "clipped surrogate %.9g -> %.9g did not "
              "decrease", before.pg_loss, after.pg_loss);
    CHECK_MSG(after.v_loss < before.v_loss, "value loss %.9g -> %.9g did not decrease",
              before.v_loss, after.v_loss);
    CHECK_MSG(after.approx_kl >= 0 && after.approx_kl < KL_BOUND,
              "whole-batch approx KL %.6g outside [0, %g)", after.approx_kl, KL_BOUND);
    CHECK_MSG(r.stats.approx_kl < KL_BOUND, "update's mean approx KL %.6g >= %g",
              r.stats.approx_kl, KL_BOUND);
    CHECK(r.stats.epochs_run == f->cfg.epochs);
    CHECK(r.stats.minibatches == f->cfg.epochs * (N_EPISODES * N_STEPS / f->cfg.minibatch));
    /* and it did move the policy */
    CHECK_MSG(after.approx_kl > 1e-7, "approx KL %.3g: the policy did not move",
              after.approx_kl);
    update_result_free(&r);
}

/* (b) lr 0: parameters bit-identical */
static void test_lr_zero_keeps_params(const fixture *f, fh_error *err)
{
    fh_train_config cfg = f->cfg;
    cfg.lr = 0;
    cfg.curiosity_lr = 0;
    update_result r;
    if (run_update(&r, f, &cfg, 0.0, 5, err) != FH_OK) {
        CHECK_MSG(0, "update: %s", err->message);
        update_result_free(&r);
        return;
    }
    check_bits("actor params after an lr-0 update", r.actor.params, f->actor.params,
               f->actor.n_params);
    check_bits("critic params after an lr-0 update", r.critic.params, f->critic.params,
               f->critic.n_params);
    check_bits("curiosity params after an lr-0 update", r.curiosity.params,
               f->curiosity.params, f->curiosity.n_params);
    /* the update did run: steps taken and moments moved */
    CHECK(r.actor.adam_step == f->actor.adam_step + r.stats.minibatches);
    CHECK(r.critic.adam_step == f->critic.adam_step + r.stats.minibatches);
    CHECK(r.curiosity.adam_step > f->curiosity.adam_step);
    CHECK(first_bit_difference(r.actor.adam_m, f->actor.adam_m, f->actor.n_params) >= 0);
    CHECK(first_bit_difference(r.critic.adam_v, f->critic.adam_v, f->critic.n_params) >= 0);
    update_result_free(&r);
}

/* (c) same state, same stream: same bits */
static void test_determinism(const fixture *f, fh_error *err)
{
    update_result r1, r2;
    fh_status s1 = run_update(&r1, f, &f->cfg, f->cfg.lr, 21, err);
    fh_status s2 = s1 == FH_OK ? run_update(&r2, f, &f->cfg, f->cfg.lr, 21, err) : s1;
    if (s1 != FH_OK || s2 != FH_OK) {
        CHECK_MSG(0, "update: %s", err->message);
        update_result_free(&r1);
        if (s1 == FH_OK)
            update_result_free(&r2);
        return;
    }
    const fh_mlp *a[3] = {&r1.actor, &r1.critic, &r1.curiosity};
    const fh_mlp *b[3] = {&r2.actor, &r2.critic, &r2.curiosity};
    const char *names[3] = {"actor", "critic", "curiosity"};
    for (int k = 0; k < 3; k++) {
        char what[64];
        /* params, grads, m and v: the whole 4 * n_params allocation */
        snprintf(what, sizeof what, "%s params/grads/moments, run 1 vs run 2", names[k]);
        check_bits(what, a[k]->mem, b[k]->mem, 4 * a[k]->n_params);
        CHECK(a[k]->adam_step == b[k]->adam_step);
    }
    CHECK(r1.rng.state == r2.rng.state && r1.rng.inc == r2.rng.inc);
    CHECK(memcmp(&r1.stats, &r2.stats, sizeof r1.stats) == 0);
    /* and a different shuffling stream gives different params (the test can fail) */
    update_result r3;
    if (run_update(&r3, f, &f->cfg, f->cfg.lr, 22, err) == FH_OK)
        CHECK_MSG(first_bit_difference(r3.actor.params, r1.actor.params, r1.actor.n_params) >= 0,
                  "another shuffling seed gave the same actor");
    else
        CHECK_MSG(0, "update: %s", err->message);
    update_result_free(&r3);
    update_result_free(&r1);
    update_result_free(&r2);
}

/* (d) non-finite inputs stop the update, naming what went non-finite */
static void test_nonfinite_stops(fixture *f, fh_error *err)
{
    int64_t n = (int64_t)N_EPISODES * N_STEPS, at = n / 3 + 7;
    struct {
        float *where;
        float value;
        const char *want;
        int poisons_critic;
    } cases[] = {
        {&f->batch.advantages[at], NAN, "the policy loss is NaN (epoch 1, minibatch ", 0},
        {&f->batch.returns[at], INFINITY, "the value loss is +Inf (epoch 1, minibatch ", 0},
        /* a ReLU turns a NaN input into 0 in the forward pass: only the gradient shows it */
        {&f->batch.states[at * FH_STATE_DIM + 5], NAN, "the gradient norm is NaN (epoch 1, minibatch ", 0},
        {&f->batch.exposures[at], NAN, "the curiosity gradient is NaN (epoch 1, minibatch ", 0},
        {&f->critic.params[FH_CRITIC_OFF_W3 + 17], NAN, "the gradient norm is NaN (epoch 1, minibatch 1)", 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float keep = *cases[c].where;
        *cases[c].where = cases[c].value;
        update_result r;
        fh_error_clear(err);
        fh_status st = run_update(&r, f, &f->cfg, f->cfg.lr, 5, err);
        *cases[c].where = keep;
        CHECK_MSG(st == FH_ERR_FAILURE && strstr(err->message, cases[c].want) != NULL,
                  "case %zu: status %d, \"%s\" should say \"%s\"", c, (int)st, err->message,
                  cases[c].want);
        fh_error e2;
        CHECK_MSG(fh_mlp_check_finite(&r.actor, &e2) == FH_OK, "case %zu: %s", c, e2.message);
        CHECK_MSG(fh_mlp_check_finite(&r.curiosity, &e2) == FH_OK, "case %zu: %s", c,
                  e2.message);
        if (!cases[c].poisons_critic)
            CHECK_MSG(fh_mlp_check_finite(&r.critic, &e2) == FH_OK, "case %zu: %s", c,
                      e2.message);
        update_result_free(&r);
    }
    /* the weights check names network, buffer, tensor and index */
    fh_mlp m;
    CHECK(clone(&m, &f->critic, err) == FH_OK);
    CHECK(fh_mlp_check_finite(&m, err) == FH_OK);
    m.adam_v[FH_CRITIC_OFF_B2 + 3] = INFINITY;
    CHECK(fh_mlp_check_finite(&m, err) == FH_ERR_FAILURE &&
          strcmp(err->message, "the critic's Adam second moment holds +Inf at "
                 "value_layer_2.bias[3]") == 0);
    m.params[FH_CRITIC_OFF_W1 + 1234] = NAN;
    CHECK_MSG(fh_mlp_check_finite(&m, err) == FH_ERR_FAILURE &&
              strcmp(err->message, "the critic's weights hold NaN at value_layer_1.weight[1234]")
              == 0, "%s", err->message);
    fh_mlp_free(&m);
    /* a backtest refuses a NaN actor instead of reporting on action 0 */
    CHECK(clone(&m, &f->actor, err) == FH_OK);
    m.params[FH_ACTOR_OFF_B1 + 2] = NAN;
    fh_backtest_metrics bm;
    fh_market_view test_view = fh_market_view_of(&f->data.market, FH_SPLIT_TEST);
    fh_status st = fh_backtest_run(&bm, FH_POLICY_GREEDY, &m, &f->cfg.env, &test_view, NULL,
                                   252.0, 1, NULL, err);
    CHECK_MSG(st == FH_ERR_INPUT && strcmp(err->message, "greedy policy: the actor's weights "
              "hold NaN at policy_layer_1.bias[2]") == 0, "%d: %s", (int)st, err->message);
    fh_mlp_free(&m);
}

/* (e) anneal_ent's coefficient reaches the loss; weight_decay is AdamW's */
static void test_regularisers(const fixture *f, fh_error *err)
{
    /* the entropy coefficient is the argument: cfg's does not matter */
    fh_train_config other = f->cfg;
    other.ent_coef = 0.5;
    update_result full, half, half_other;
    fh_status st = run_update_ent(&full, f, &f->cfg, f->cfg.lr, f->cfg.ent_coef, 5, err);
    if (st == FH_OK)
        st = run_update_ent(&half, f, &f->cfg, f->cfg.lr, 0.5 * f->cfg.ent_coef, 5, err);
    if (st == FH_OK)
        st = run_update_ent(&half_other, f, &other, f->cfg.lr, 0.5 * f->cfg.ent_coef, 5, err);
    CHECK_MSG(st == FH_OK, "update: %s", err->message);
    if (st == FH_OK) {
        check_bits("actor, the same ent_coef argument under another cfg->ent_coef",
                   half_other.actor.params, half.actor.params, half.actor.n_params);
        CHECK_MSG(first_bit_difference(half.actor.params, full.actor.params,
                                       full.actor.n_params) >= 0,
                  "half the entropy coefficient left the actor as the full one");
        CHECK_MSG(half.stats.entropy != full.stats.entropy, "entropy %.9g both",
                  full.stats.entropy);
    }
    update_result_free(&full);
    update_result_free(&half);
    update_result_free(&half_other);

    /* AdamW: one step over the whole batch */
    fh_train_config one = f->cfg;
    one.epochs = 1;
    one.minibatch = N_EPISODES * N_STEPS;
    one.lr = 1e-2; /* a decay of 1e-3 a step at weight_decay 0.1: far above the rounding */
    fh_train_config decayed = one;
    decayed.weight_decay = 0.1;
    update_result plain, wd;
    st = run_update(&plain, f, &one, one.lr, 5, err);
    if (st == FH_OK)
        st = run_update(&wd, f, &decayed, one.lr, 5, err);
    CHECK_MSG(st == FH_OK, "update: %s", err->message);
    if (st == FH_OK) {
        CHECK(plain.stats.minibatches == 1 && wd.stats.minibatches == 1);
        const fh_mlp *start[2] = {&f->actor, &f->critic};
        const fh_mlp *without[2] = {&plain.actor, &plain.critic};
        const fh_mlp *with[2] = {&wd.actor, &wd.critic};
        const char *names[2] = {"actor", "critic"};
        double decay = 1.0 - (double)(float)one.lr * (double)(float)decayed.weight_decay;
        for (int k = 0; k < 2; k++) {
            size_t n = start[k]->n_params;
            double *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
            double moved = 0.0;
            for (size_t i = 0; i < n; i++) {
                double p0 = start[k]->params[i];
                double delta = p0 - (double)without[k]->params[i]; /* the Adam step */
                got[i] = with[k]->params[i];
                want[i] = p0 * decay - delta;
                moved = fmax(moved, fabs(got[i] - without[k]->params[i]));
            }
            char what[64];
            snprintf(what, sizeof what, "%s: AdamW's step vs p0 (1 - lr wd) - delta", names[k]);
            /* three roundings in float (the decay, the step, delta's): 1.5 ulps of the
             * params (|p| < 2 here: 1.8e-7 |p| <= 3.6e-7), against a decay of 1e-3 |p0| */
            CHECK_ARRAY_CLOSE(what, got, want, n, 4e-7, 0);
            CHECK_MSG(moved > 1e-5, "%s: the decay moved no param by more than %.3g", names[k],
                      moved);
            free(got);
            free(want);
        }
        check_bits("curiosity params with weight_decay (not decayed)", wd.curiosity.params,
                   plain.curiosity.params, plain.curiosity.n_params);
    }
    update_result_free(&plain);
    update_result_free(&wd);
}

int main(void)
{
    fh_nn_set_threads(1);
    fh_error err;
    fh_error_clear(&err);
    fixture f;
    if (fixture_init(&f, &err) != FH_OK) {
        fprintf(stderr, "fixture: %s\n", err.message);
        fixture_free(&f);
        return 1;
    }
    int dones = 0;
    for (int i = 0; i < N_EPISODES * N_STEPS; i++)
        dones += f.batch.dones[i];
    printf("batch: %d x %d, %d dones\n", N_EPISODES, N_STEPS, dones);
    test_update_lowers_objective(&f, &err);
    test_lr_zero_keeps_params(&f, &err);
    test_determinism(&f, &err);
    test_nonfinite_stops(&f, &err);
    test_regularisers(&f, &err);
    fixture_free(&f);
    return fh_test_finish();
}
