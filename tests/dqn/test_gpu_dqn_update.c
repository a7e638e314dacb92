/* test_gpu_dqn_update.c — the DQN update on the GPU (gpu_q_update.c) against the CPU's
 * (q_update.c, replay.c), issue 18's (h), split from test_gpu_q_update.c (the fixture
 * both share: gpu_q_fixture.h). One ctest entry per case; each skips (77) without a GPU:
 *  (h) DQN (FH_NET_QNET, minibatch 256, 3-step returns): the device ring after each of
 *      two pushes (the second wraps a ring of 6000) equals replay.c's slot for slot, bit
 *      for bit; then 24 single steps with a hard target copy every 10: the slots drawn
 *      identical to fh_replay_sample's, the host streams equal after every step, the
 *      Double DQN targets within TARGET_TOL, the Q-network's and the target's changes
 *      within STEP_REL / LATE_REL; then 40 steps at once through the graphs (16-step
 *      graphs and single steps) against the CPU's fh_dqn_steps (q_update.c: the chunks
 *      up to each hard copy); Polyak (tau 0.05, every step) for 12 steps;
 *      learning_starts holding the first update back.
 * The cases: dqn_hard_copy, dqn_polyak, dqn_learning_starts. */
#include "dqn/gpu_q_fixture.h"

/* ---- (h): DQN ---- */

/* The device ring against the host's, slot for slot. */
static void check_ring(const fh_gpu_q_update *u, const fh_replay *want, const char *when)
{
    fh_error err;
    fh_replay got;
    CHECK(fh_replay_init(&got, want->capacity, &err) == FH_OK);
    CHECK_MSG(fh_gpu_replay_download(fh_gpu_q_update_ring(u), &got, &err) == FH_OK, "%s",
              err.message);
    CHECK_MSG(got.size == want->size && got.head == want->head && got.n_pushed == want->n_pushed,
              "%s: size %d head %d pushed %lld, the CPU's %d %d %lld", when, got.size, got.head,
              (long long)got.n_pushed, want->size, want->head, (long long)want->n_pushed);
    size_t S = (size_t)want->size;
    int same = memcmp(got.states, want->states, S * FH_STATE_DIM * sizeof(float)) == 0 &&
               memcmp(got.next_states, want->next_states, S * FH_STATE_DIM * sizeof(float)) == 0 &&
               memcmp(got.actions, want->actions, S * sizeof(int32_t)) == 0 &&
               memcmp(got.returns, want->returns, S * sizeof(float)) == 0 &&
               memcmp(got.discounts, want->discounts, S * sizeof(float)) == 0;
    if (!same)
        for (size_t s = 0; s < S; s++)
            if (got.returns[s] != want->returns[s] || got.discounts[s] != want->discounts[s] ||
                got.actions[s] != want->actions[s]) {
                fprintf(stderr, "%s: slot %zu: G %.9g d %.9g a %d, the CPU's %.9g %.9g %d\n",
                        when, s, got.returns[s], got.discounts[s], got.actions[s],
                        want->returns[s], want->discounts[s], want->actions[s]);
                break;
            }
    CHECK_MSG(same, "%s: the device ring differs from replay.c's", when);
    fh_replay_free(&got);
}

typedef struct {
    fh_mlp q, target;
    fh_replay ring;
    fh_replay_minibatch mb;
    fh_q_workspace ws;
    fh_rng rng;
    int64_t grad_steps;
} dqn_cpu;

/* `steps` DQN steps on the CPU with the target's schedule: fh_dqn_steps (q_update.c), the
 * host reference of fh_gpu_dqn_steps. */
static fh_status dqn_cpu_steps(dqn_cpu *d, const fh_train_config *cfg,
                               const fh_q_update_config *qc, long long steps, fh_q_stats *out,
                               fh_error *err)
{
    return fh_dqn_steps(out, &d->q, &d->target, &d->ws, &d->ring, &d->mb, steps,
                        cfg->target_update_every, (float)cfg->tau, &d->grad_steps, qc, &d->rng,
                        err);
}

/* The first row whose Double DQN target differs beyond TARGET_TOL, or -1; a row whose
 * online Q at s' (the CPU's, q_online (rows, 45)) has its two best actions within
 * TIE_GAP may pick either on either device (a rounding decides the argmax): such rows are
 * counted in *ties, not failed. */
#define TIE_GAP 1e-5
static long target_mismatch(const float *got, const float *want, const float *q_online,
                            int rows, int *ties)
{
    for (int i = 0; i < rows; i++) {
        if (fh_close(got[i], want[i], TARGET_TOL, TARGET_TOL))
            continue;
        const float *q = q_online + (size_t)i * FH_N_ACTIONS;
        float best = -INFINITY, second = -INFINITY;
        for (int a = 0; a < FH_N_ACTIONS; a++) {
            if (q[a] > best) {
                second = best;
                best = q[a];
            } else if (q[a] > second) {
                second = q[a];
            }
        }
        if (best - second <= TIE_GAP) {
            (*ties)++;
            continue;
        }
        return i;
    }
    return -1;
}

/* GPU against CPU: the Q-network's and the target's changes from their starts. */
static void compare_nets(fh_gpu_q_update *u, const dqn_cpu *d, const fh_mlp *q0,
                         const fh_mlp *t0, double tol, const char *when, double *worst)
{
    fh_error err;
    fh_mlp q, t;
    clone(&q, q0);
    clone(&t, t0);
    CHECK_MSG(fh_gpu_q_update_download(u, &q, &t, &err) == FH_OK, "%s", err.message);
    size_t P = q.n_params;
    double rq = fh_delta_rel(q.params, d->q.params, q0->params, P);
    double rt = fh_delta_rel(t.params, d->target.params, t0->params, P);
    /* a target not yet copied has not changed: its difference from the CPU's is 0 */
    CHECK_MSG(rq <= tol && rt <= tol && q.adam_step == d->q.adam_step,
              "%s: the Q-network's change off by %.3g, the target's by %.3g (tolerance %g); "
              "Adam step %lld vs %lld", when, rq, rt, tol, (long long)q.adam_step,
              (long long)d->q.adam_step);
    *worst = fmax(*worst, fmax(rq, rt));
    fh_mlp_free(&q);
    fh_mlp_free(&t);
}

/* The DQN comparison proper: one push, single steps, a second push, steps at once. */
static void dqn_compare(fh_gpu_q_update *u, fh_gpu_dqn_collector *c, const fixture *f,
                        const fh_train_config *cfg, const fh_q_update_config *qc, dqn_cpu *d,
                        const fh_mlp *q0, const fh_mlp *t0, const char *label,
                        int single_steps, int bulk_steps, fh_transition_batch *hb)
{
    fh_error err;
    CHECK(fh_gpu_q_update_upload(u, &d->q, &d->target, &err) == FH_OK);
    fh_rng grng = d->rng;
    CHECK_MSG(gpu_collection(c, u, f, hb, &err) == FH_OK, "%s", err.message);
    fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(c);
    CHECK_MSG(fh_gpu_dqn_push(u, &db, &err) == FH_OK, "%s", err.message);
    CHECK(fh_replay_push_batch(&d->ring, hb, cfg->n_step, (float)cfg->gamma, &err) == FH_OK);
    check_ring(u, &d->ring, "the first push");

    /* single steps, compared after each */
    double worst = 0, worst_y = 0;
    int ties = 0;
    int32_t *want_slots = malloc(DQN_MINIBATCH * sizeof(int32_t));
    int32_t *slots = malloc(DQN_MINIBATCH * sizeof(int32_t));
    float *targets = malloc(DQN_MINIBATCH * sizeof(float));
    for (int s = 0; s < single_steps; s++) {
        fh_rng peek = d->rng;
        CHECK(fh_replay_sample(&d->ring, &peek, DQN_MINIBATCH, want_slots, &err) == FH_OK);
        fh_q_stats cs, gs;
        CHECK_MSG(dqn_cpu_steps(d, cfg, qc, 1, &cs, &err) == FH_OK, "%s", err.message);
        CHECK_MSG(fh_gpu_dqn_steps(u, 1, qc, &grng, &gs, &err) == FH_OK, "%s", err.message);
        CHECK_MSG(grng.state == d->rng.state, "%s step %d: the host streams differ", label, s + 1);
        CHECK(fh_gpu_q_update_download_minibatch(u, NULL, NULL, targets, slots, &err) == FH_OK);
        CHECK_MSG(memcmp(slots, want_slots, DQN_MINIBATCH * sizeof(int32_t)) == 0,
                  "%s step %d: the slots drawn differ from fh_replay_sample's", label, s + 1);
        long bad = target_mismatch(targets, d->ws.mb_targets, d->ws.chunk_q, DQN_MINIBATCH,
                                   &ties);
        CHECK_MSG(bad < 0, "%s step %d: Double DQN target %ld: GPU %.9g, CPU %.9g", label, s + 1,
                  bad, bad >= 0 ? targets[bad] : 0.0, bad >= 0 ? d->ws.mb_targets[bad] : 0.0);
        worst_y = fmax(worst_y, fh_rel_norm(targets, d->ws.mb_targets, DQN_MINIBATCH));
        double tol = s < 10 ? STEP_REL : LATE_REL;
        CHECK_MSG(fh_rel(gs.loss, cs.loss) <= tol && fh_rel(gs.grad_norm, cs.grad_norm) <= tol &&
                      gs.minibatches == 1,
                  "%s step %d: loss %.9g vs %.9g, norm %.9g vs %.9g", label, s + 1, gs.loss,
                  cs.loss, gs.grad_norm, cs.grad_norm);
        char when[96];
        snprintf(when, sizeof when, "%s step %d", label, s + 1);
        compare_nets(u, d, q0, t0, tol, when, &worst);
    }
    CHECK(fh_gpu_q_update_grad_steps(u) == d->grad_steps);
    printf("%s, %d single steps: worst change off by %.2g, targets %.2g (%d near-ties of the "
           "online argmax)\n", label, single_steps, worst, worst_y, ties);

    /* a second collection (the ring wraps), then steps at once through the graphs */
    CHECK_MSG(gpu_collection(c, u, f, hb, &err) == FH_OK, "%s", err.message);
    db = fh_gpu_dqn_collector_batch(c);
    CHECK_MSG(fh_gpu_dqn_push(u, &db, &err) == FH_OK, "%s", err.message);
    CHECK(fh_replay_push_batch(&d->ring, hb, cfg->n_step, (float)cfg->gamma, &err) == FH_OK);
    check_ring(u, &d->ring, "the second push (wrapped)");
    if (bulk_steps > 0) {
        fh_q_stats cs, gs;
        CHECK_MSG(dqn_cpu_steps(d, cfg, qc, bulk_steps, &cs, &err) == FH_OK, "%s", err.message);
        CHECK_MSG(fh_gpu_dqn_steps(u, bulk_steps, qc, &grng, &gs, &err) == FH_OK, "%s",
                  err.message);
        CHECK(grng.state == d->rng.state && gs.minibatches == bulk_steps);
        CHECK(fh_gpu_q_update_grad_steps(u) == d->grad_steps);
        CHECK_MSG(fh_rel(gs.loss, cs.loss) <= LATE_REL && fh_rel(gs.mean_q, cs.mean_q) <= LATE_REL &&
                      fh_rel(gs.grad_norm, cs.grad_norm) <= LATE_REL,
                  "%s, %d steps: loss %.9g vs %.9g, Q %.9g vs %.9g, norm %.9g vs %.9g", label,
                  bulk_steps, gs.loss, cs.loss, gs.mean_q, cs.mean_q, gs.grad_norm, cs.grad_norm);
        double bw = 0;
        char when[96];
        snprintf(when, sizeof when, "%s, %d steps through the graphs", label, bulk_steps);
        compare_nets(u, d, q0, t0, LATE_REL, when, &bw);
        printf("%s, %d more steps (graphs): change off by %.2g; %.3f ms on the device\n", label,
               bulk_steps, bw, fh_gpu_q_update_last_ms(u));
    }
    free(want_slots);
    free(slots);
    free(targets);
}

static void test_dqn(const fixture *f, int every, float tau, int single_steps, int bulk_steps)
{
    fh_error err;
    fh_train_config cfg = f->cfg;
    cfg.minibatch = DQN_MINIBATCH;
    cfg.replay_capacity = DQN_CAPACITY;
    cfg.n_step = 3;
    cfg.learning_starts = 0;
    cfg.target_update_every = every;
    cfg.tau = tau;
    fh_q_update_config qc = q_config(&cfg);
    char label[64];
    if (every)
        snprintf(label, sizeof label, "DQN (copy every %d)", every);
    else
        snprintf(label, sizeof label, "DQN (Polyak %.2f)", (double)tau);
    dqn_cpu d;
    memset(&d, 0, sizeof d);
    CHECK(fh_mlp_init(&d.q, FH_NET_QNET, &err) == FH_OK);
    CHECK(fh_mlp_init(&d.target, FH_NET_QNET, &err) == FH_OK);
    fh_mlp_init_orthogonal(&d.q, 51);
    fh_q_target_update(&d.target, &d.q, 1.0f);
    CHECK(fh_replay_init(&d.ring, DQN_CAPACITY, &err) == FH_OK);
    CHECK(fh_replay_minibatch_alloc(&d.mb, DQN_MINIBATCH, &err) == FH_OK);
    CHECK(fh_q_workspace_init(&d.ws, FH_NET_QNET, DQN_MINIBATCH, 0, &err) == FH_OK);
    fh_pcg32_seed(&d.rng, 9, 0x51);
    fh_mlp q0, t0;
    clone(&q0, &d.q);
    clone(&t0, &d.target);
    fh_gpu_q_update *u = NULL;
    fh_gpu_dqn_collector *c = NULL;
    CHECK_MSG(fh_gpu_q_update_create(&u, &g_dev, FH_NET_QNET, N_EPISODES, N_STEPS,
                                     fh_gpu_q_settings_of(&cfg), &err) == FH_OK,
              "%s", err.message);
    CHECK_MSG(fh_gpu_dqn_collector_create(&c, &g_dev, N_EPISODES, N_STEPS, &cfg.env, &f->view, 5,
                                          0, &err) == FH_OK, "%s", err.message);
    fh_transition_batch hb;
    memset(&hb, 0, sizeof hb);
    if (u && c)
        dqn_compare(u, c, f, &cfg, &qc, &d, &q0, &t0, label, single_steps, bulk_steps, &hb);
    fh_transition_batch_free(&hb);
    fh_gpu_dqn_collector_destroy(c);
    fh_gpu_q_update_destroy(u);
    fh_replay_free(&d.ring);
    fh_replay_minibatch_free(&d.mb);
    fh_q_workspace_free(&d.ws);
    fh_mlp_free(&d.q);
    fh_mlp_free(&d.target);
    fh_mlp_free(&q0);
    fh_mlp_free(&t0);
}

/* learning_starts: no step until the ring holds that many; then replay_ratio N L. */
static void test_dqn_learning_starts(const fixture *f)
{
    fh_error err;
    fh_train_config cfg = f->cfg;
    cfg.minibatch = DQN_MINIBATCH;
    cfg.replay_capacity = DQN_CAPACITY;
    cfg.learning_starts = N_EPISODES * N_STEPS + 1;
    cfg.replay_ratio = 8.0 / (N_EPISODES * N_STEPS);
    fh_q_update_config qc = q_config(&cfg);
    fh_mlp q;
    CHECK(fh_mlp_init(&q, FH_NET_QNET, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q, 52);
    fh_gpu_q_update *u = NULL;
    fh_gpu_dqn_collector *c = NULL;
    CHECK(fh_gpu_q_update_create(&u, &g_dev, FH_NET_QNET, N_EPISODES, N_STEPS,
                                 fh_gpu_q_settings_of(&cfg), &err) == FH_OK);
    CHECK(fh_gpu_dqn_collector_create(&c, &g_dev, N_EPISODES, N_STEPS, &cfg.env, &f->view, 5, 0,
                                      &err) == FH_OK);
    if (u && c) {
        CHECK(fh_gpu_q_update_upload(u, &q, NULL, &err) == FH_OK);
        fh_rng rng;
        fh_pcg32_seed(&rng, 1, 0x51);
        fh_rng before = rng;
        fh_q_stats s;
        for (int it = 0; it < 2; it++) {
            CHECK(fh_gpu_dqn_collect_device(c, fh_gpu_q_update_params(u), f->curiosity.params,
                                            EPSILON, NULL, &err) == FH_OK);
            fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(c);
            CHECK_MSG(fh_gpu_dqn_update_run(u, &db, &qc, &rng, &s, &err) == FH_OK, "%s",
                      err.message);
            CHECK_MSG(s.minibatches == (it == 0 ? 0 : 8), "iteration %d: %d steps", it + 1,
                      s.minibatches);
            if (it == 0)
                CHECK(rng.state == before.state);
        }
        CHECK(fh_gpu_q_update_grad_steps(u) == 8);
    }
    fh_gpu_dqn_collector_destroy(c);
    fh_gpu_q_update_destroy(u);
    fh_mlp_free(&q);
}

static void run_dqn_hard_copy(const fixture *f)
{
    test_dqn(f, 10, 1.0f, 24, 40);
}

static void run_dqn_polyak(const fixture *f)
{
    test_dqn(f, 0, 0.05f, 12, 0);
}

static void case_dqn_hard_copy(void)
{
    on_gpu(run_dqn_hard_copy);
}

static void case_dqn_polyak(void)
{
    on_gpu(run_dqn_polyak);
}

static void case_dqn_learning_starts(void)
{
    on_gpu(test_dqn_learning_starts);
}

static const fh_test_case CASES[] = {
    {"dqn_hard_copy", case_dqn_hard_copy},
    {"dqn_polyak", case_dqn_polyak},
    {"dqn_learning_starts", case_dqn_learning_starts},
};
FH_TEST_CASES_MAIN(CASES)
