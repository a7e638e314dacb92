/* test_gpu_q_update.c — the PQN update on the GPU (gpu_q_update.c) against the CPU's
 * (q_update.c), the reference (issue 18); DQN's (h) is test_gpu_dqn_update.c, and the
 * fixture both share gpu_q_fixture.h. fp32 matmuls (TF32 off) unless a
 * case says otherwise.
 *
 * One ctest entry per case (test_gpu_q_update CASE; tests/dqn/test_cases.h): (c1), (c2)
 * run on the CPU (no GPU needed); the others skip (77) without a GPU.
 * On the CPU:
 *  (c1) fh_pcg32_advance(rng, k) equals k draws of pcg32, so a kernel can make
 *       fh_replay_sample's draw s M + i on its own;
 *  (c2) this file's step-by-step PQN reference (Q(lambda) returns, the keyed order,
 *       fh_q_minibatch_step per minibatch) equals fh_pqn_update bit for bit, weights,
 *       Adam moments and statistics: the GPU is compared with that reference step by step.
 * On the GPU, on a real collection (dqn_experience_kernel over the synthetic market,
 * 64 episodes x 64 steps, horizon 30 so episodes end inside rows, epsilon 0.5, random
 * orthogonal weights; the collector reads the update's device weights):
 *  (a) PQN's targets: max_a Q(s', a) within NEXT_MAX_TOL of the CPU's forward pass; the
 *      Q(lambda) returns within SCAN_REL of fh_q_lambda_returns run on the GPU's own
 *      max Q (the scan alone, in double on both: expected identical), and within
 *      RETURNS_TOL of the CPU's end to end;
 *  (b) the first step: its pre-clip gradient norm and every gradient tensor (after the
 *      clip) within FIRST_GRAD_REL in relative norm ||g_gpu - g_cpu|| / ||g_cpu||, the
 *      minibatch (states, actions, targets) the same;
 *  (c) after each of the 16 steps of 2 epochs x 8 minibatches of 512 (eager runs of k
 *      steps): the change of the weights from the start within STEP_REL (first epoch)
 *      and LATE_REL (second) in relative norm, each step's loss, mean Q, mean target and
 *      gradient norm within the same relative bounds;
 *  (d) the whole update through CUDA graphs: within LATE_REL of the CPU (weights'
 *      change, cosine >= COSINE; statistics), within GRAPH_REL of the eager run, and
 *      bit-identical to itself run twice (weights, moments, statistics);
 *  (e) a minibatch that does not divide the batch (500 of 4096: a tail of 96) as (d);
 *  (f) NaN rewards: both updates refuse the first minibatch, naming the TD loss, and
 *      the GPU's weights are left as they were;
 *  (g) TF32: the whole update's change of weights points the CPU's way (cosine >=
 *      TF32_COSINE, drift printed);
 *  (h) DQN (FH_NET_QNET, minibatch 256, 3-step returns): the device ring after each of
 *      two pushes (the second wraps a ring of 6000) equals replay.c's slot for slot, bit
 *      for bit; then 24 single steps with a hard target copy every 10: the slots drawn
 *      identical to fh_replay_sample's, the host streams equal after every step, the
 *      Double DQN targets within TARGET_TOL, the Q-network's and the target's changes
 *      within STEP_REL / LATE_REL; then 40 steps at once through the graphs (16-step
 *      graphs and single steps) against the CPU's fh_dqn_steps (q_update.c: the chunks
 *      up to each hard copy); Polyak (tau 0.05, every step) for 12 steps;
 *      learning_starts holding the first update back;
 *  (i) a timing, printed only: PQN and DQN iterations (collection + update) at
 *      4096 x 128, the PPO throughput configuration's size (docs/BENCHMARKS.md).
 * The cases: pcg32_advance (c1), pqn_reference (c2), pqn (a)-(g), dqn_hard_copy and
 * dqn_polyak (h), dqn_learning_starts (h), timing (i), pqn_huber (j), pqn_weight_decay
 * (k: AdamW's decay on the GPU against the CPU's). */
#include "dqn/gpu_q_fixture.h"

/* ---- the CPU reference of a PQN update, step by step ---- */

typedef struct {
    int steps;
    size_t P;
    float *params;      /* (steps + 1, P): the start, then after each step */
    double (*rec)[4];   /* (steps): loss, mean Q, mean target, gradient norm */
    float *first_grads; /* (P) */
    float *next_max, *returns; /* (n) */
    fh_mlp final;       /* after the update (params, moments, step) */
    fh_q_stats stats;
    /* the first step's minibatch */
    float *mb_states, *mb_targets;
    int32_t *mb_actions;
} pqn_ref;

static void pqn_ref_free(pqn_ref *r)
{
    free(r->params);
    free(r->rec);
    free(r->first_grads);
    free(r->next_max);
    free(r->returns);
    free(r->mb_states);
    free(r->mb_targets);
    free(r->mb_actions);
    fh_mlp_free(&r->final);
    memset(r, 0, sizeof *r);
}

/* fh_pqn_update written out: max Q over the next states (FH_Q_CHUNK rows a pass), the
 * scan, every epoch's key first, then the epochs' minibatches, one fh_q_minibatch_step
 * each, with a snapshot after every step. */
static fh_status pqn_reference(pqn_ref *r, const fh_mlp *start, const fh_transition_batch *b,
                               const fh_q_update_config *qc, fh_rng rng, fh_error *err)
{
    memset(r, 0, sizeof *r);
    const int64_t n = (int64_t)b->n_episodes * b->n_steps;
    const int mbs = (int)((n + qc->minibatch - 1) / qc->minibatch);
    r->steps = qc->epochs * mbs;
    r->P = start->n_params;
    clone(&r->final, start);
    fh_mlp *q = &r->final;
    fh_q_workspace w;
    fh_status st = fh_q_workspace_init(&w, start->desc->kind, qc->minibatch, n, err);
    if (st != FH_OK)
        return st;
    r->params = malloc((size_t)(r->steps + 1) * r->P * sizeof(float));
    r->rec = calloc((size_t)r->steps, sizeof *r->rec);
    r->first_grads = malloc(r->P * sizeof(float));
    r->next_max = malloc((size_t)n * sizeof(float));
    r->returns = malloc((size_t)n * sizeof(float));
    r->mb_states = malloc((size_t)qc->minibatch * FH_STATE_DIM * sizeof(float));
    r->mb_targets = malloc((size_t)qc->minibatch * sizeof(float));
    r->mb_actions = malloc((size_t)qc->minibatch * sizeof(int32_t));
    memcpy(r->params, q->params, r->P * sizeof(float));
    for (int64_t s = 0; s < n && st == FH_OK; s += FH_Q_CHUNK) {
        int B = (int)(n - s < FH_Q_CHUNK ? n - s : FH_Q_CHUNK);
        st = fh_mlp_forward(w.chunk_q, &w.chunk_ws, q, b->next_states + s * FH_STATE_DIM, B, err);
        for (int i = 0; i < B && st == FH_OK; i++) {
            const float *row = w.chunk_q + (size_t)i * FH_N_ACTIONS;
            float m = row[0];
            for (int k = 1; k < FH_N_ACTIONS; k++)
                m = row[k] > m ? row[k] : m;
            r->next_max[s + i] = m;
        }
    }
    fh_q_lambda_returns(b->rewards, b->terminal, b->truncated, r->next_max, b->n_episodes,
                        b->n_steps, qc->gamma, qc->lambda, r->returns);
    unsigned long long keys[16];
    for (int e = 0; e < qc->epochs; e++)
        keys[e] = fh_minibatch_key(&rng);
    int step = 0;
    for (int e = 0; e < qc->epochs && st == FH_OK; e++) {
        for (int64_t s = 0; s < n && st == FH_OK; s += qc->minibatch, step++) {
            int M = (int)(n - s < qc->minibatch ? n - s : qc->minibatch);
            for (int i = 0; i < M; i++) {
                int64_t k = fh_minibatch_order(keys[e], n, s + i);
                memcpy(w.mb_states + (size_t)i * FH_STATE_DIM, b->states + k * FH_STATE_DIM,
                       FH_STATE_DIM * sizeof(float));
                w.mb_actions[i] = b->actions[k];
                w.mb_targets[i] = r->returns[k];
            }
            fh_q_stats one = {0};
            st = fh_q_minibatch_step(q, &w, M, 0, qc, &one, err);
            if (st != FH_OK)
                break;
            r->stats.loss += one.loss;
            r->stats.mean_q += one.mean_q;
            r->stats.mean_target += one.mean_target;
            r->stats.grad_norm += one.grad_norm;
            r->stats.minibatches++;
            r->rec[step][0] = one.loss;
            r->rec[step][1] = one.mean_q;
            r->rec[step][2] = one.mean_target;
            r->rec[step][3] = one.grad_norm;
            if (step == 0) {
                memcpy(r->first_grads, q->grads, r->P * sizeof(float));
                memcpy(r->mb_states, w.mb_states, (size_t)M * FH_STATE_DIM * sizeof(float));
                memcpy(r->mb_targets, w.mb_targets, (size_t)M * sizeof(float));
                memcpy(r->mb_actions, w.mb_actions, (size_t)M * sizeof(int32_t));
            }
            memcpy(r->params + (size_t)(step + 1) * r->P, q->params, r->P * sizeof(float));
        }
    }
    if (r->stats.minibatches > 0) {
        r->stats.loss /= r->stats.minibatches;
        r->stats.mean_q /= r->stats.minibatches;
        r->stats.mean_target /= r->stats.minibatches;
        r->stats.grad_norm /= r->stats.minibatches;
    }
    fh_q_workspace_free(&w);
    return st;
}

/* ---- (c1), (c2): the CPU checks ---- */

static void test_pcg32_advance(void)
{
    const unsigned long long deltas[] = {0, 1, 2, 3, 31, 1000, 65537, 300001};
    for (int s = 0; s < 3; s++) {
        for (size_t d = 0; d < sizeof deltas / sizeof deltas[0]; d++) {
            fh_rng a, b;
            fh_pcg32_seed(&a, 17 + (uint64_t)s, 0x51 + (uint64_t)s);
            b = a;
            for (unsigned long long k = 0; k < deltas[d]; k++)
                (void)fh_pcg32_next(&a);
            fh_pcg32_advance(&b, deltas[d]);
            CHECK_MSG(a.state == b.state && a.inc == b.inc,
                      "jump-ahead by %llu from seed %d: state %llx, %llu draws give %llx",
                      deltas[d], s, (unsigned long long)b.state, deltas[d],
                      (unsigned long long)a.state);
        }
    }
}

/* A small CPU collection (the shared episode code the GPU kernel runs). */
static fh_status cpu_collection(fh_transition_batch *b, const fh_train_config *cfg,
                                const fh_env_market *market, const fh_mlp *q,
                                const fh_mlp *curiosity, int N, int L, fh_error *err)
{
    fh_episode_state *eps = calloc((size_t)N, sizeof *eps);
    if (!eps)
        return fh_error_set(err, FH_ERR_FAILURE, "out of memory");
    for (int n = 0; n < N; n++)
        env_episode_init(&cfg->env, market, &eps[n], 5, (unsigned long long)n);
    fh_status st = fh_transition_batch_alloc(b, N, L, err);
    if (st == FH_OK)
        st = fh_dqn_collect_cpu(q->params, q->desc->layer_norm, curiosity->params, &cfg->env,
                                market, eps, EPSILON, b, err);
    free(eps);
    return st;
}

static void test_reference_is_fh_pqn_update(const fh_train_config *base,
                                            const fh_env_market *market)
{
    fh_train_config cfg = *base;
    cfg.minibatch = 100; /* a tail of 12 of 512 */
    fh_error err;
    fh_mlp q, cur;
    CHECK(fh_mlp_init(&q, FH_NET_PQN, &err) == FH_OK);
    CHECK(fh_mlp_init(&cur, FH_NET_CURIOSITY, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q, 31);
    fh_mlp_init_orthogonal(&cur, 32);
    fh_transition_batch b;
    CHECK_MSG(cpu_collection(&b, &cfg, market, &q, &cur, 16, 32, &err) == FH_OK, "%s",
              err.message);
    fh_q_update_config qc = q_config(&cfg);
    fh_rng rng;
    fh_pcg32_seed(&rng, 3, 0x51);
    pqn_ref r;
    CHECK_MSG(pqn_reference(&r, &q, &b, &qc, rng, &err) == FH_OK, "%s", err.message);
    fh_mlp q2;
    clone(&q2, &q);
    fh_q_workspace w;
    fh_q_stats stats;
    CHECK(fh_q_workspace_init(&w, FH_NET_PQN, qc.minibatch, 16 * 32, &err) == FH_OK);
    CHECK_MSG(fh_pqn_update(&stats, &q2, &w, &b, &qc, &rng, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(memcmp(q2.mem, r.final.mem, 4 * q2.n_params * sizeof(float)) == 0 &&
                  q2.adam_step == r.final.adam_step,
              "fh_pqn_update and the step-by-step reference differ");
    CHECK_MSG(stats.loss == r.stats.loss && stats.mean_q == r.stats.mean_q &&
                  stats.mean_target == r.stats.mean_target &&
                  stats.grad_norm == r.stats.grad_norm && stats.minibatches == r.steps,
              "statistics: loss %.17g vs %.17g, %d vs %d minibatches", stats.loss, r.stats.loss,
              stats.minibatches, r.steps);
    /* the keys used the update's stream: 2 draws an epoch */
    fh_rng want;
    fh_pcg32_seed(&want, 3, 0x51);
    fh_pcg32_advance(&want, 2ULL * (unsigned long long)qc.epochs);
    CHECK_MSG(rng.state == want.state, "fh_pqn_update drew other than 2 outputs an epoch");
    pqn_ref_free(&r);
    fh_q_workspace_free(&w);
    fh_transition_batch_free(&b);
    fh_mlp_free(&q);
    fh_mlp_free(&q2);
    fh_mlp_free(&cur);
}

/* A GPU PQN run from start: u gets start, runs (max_steps: 0 the whole update), and
 * *out (initialised here) gets the result. */
static fh_status gpu_pqn(fh_mlp *out, fh_q_stats *stats, fh_gpu_q_update *u, const fh_mlp *start,
                         const fh_dqn_device_batch *b, const fh_q_update_config *qc, fh_rng rng,
                         int max_steps, fh_error *err)
{
    clone(out, start);
    fh_status st = fh_gpu_q_update_upload(u, start, NULL, err);
    if (st == FH_OK)
        st = fh_gpu_pqn_update_run(u, b, qc, &rng, max_steps, stats, err);
    fh_error err2;
    if (fh_gpu_q_update_download(u, out, NULL, &err2) != FH_OK && st == FH_OK) {
        *err = err2;
        st = err2.status;
    }
    return st;
}

/* ---- (a)-(g): PQN ---- */

static void test_pqn(const fixture *f)
{
    fh_error err;
    fh_train_config cfg = f->cfg;
    fh_mlp start;
    CHECK(fh_mlp_init(&start, FH_NET_PQN, &err) == FH_OK);
    fh_mlp_init_orthogonal(&start, 41);
    const size_t P = start.n_params, n = (size_t)N_EPISODES * N_STEPS;
    fh_gpu_q_update *u = NULL;
    fh_gpu_dqn_collector *c = NULL;
    CHECK_MSG(fh_gpu_q_update_create(&u, &g_dev, FH_NET_PQN, N_EPISODES, N_STEPS,
                                     fh_gpu_q_settings_of(&cfg), &err) == FH_OK,
              "%s", err.message);
    CHECK_MSG(fh_gpu_dqn_collector_create(&c, &g_dev, N_EPISODES, N_STEPS, &cfg.env, &f->view, 5,
                                          1, &err) == FH_OK, "%s", err.message);
    if (!u || !c) {
        fh_gpu_q_update_destroy(u);
        fh_gpu_dqn_collector_destroy(c);
        fh_mlp_free(&start);
        return;
    }
    fh_transition_batch hb;
    memset(&hb, 0, sizeof hb);
    CHECK(fh_gpu_q_update_upload(u, &start, NULL, &err) == FH_OK);
    CHECK_MSG(gpu_collection(c, u, f, &hb, &err) == FH_OK, "%s", err.message);
    fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(c);
    fh_q_update_config qc = q_config(&cfg);
    fh_rng rng;
    fh_pcg32_seed(&rng, 7, 0x51);
    pqn_ref ref;
    CHECK_MSG(pqn_reference(&ref, &start, &hb, &qc, rng, &err) == FH_OK, "%s", err.message);

    /* (a), (b): one eager step */
    fh_mlp got;
    fh_q_stats gs;
    CHECK_MSG(gpu_pqn(&got, &gs, u, &start, &db, &qc, rng, 1, &err) == FH_OK, "%s", err.message);
    float *next_max = malloc(n * sizeof(float)), *returns = malloc(n * sizeof(float));
    float *scan = malloc(n * sizeof(float)), *grads = malloc(P * sizeof(float));
    CHECK(fh_gpu_q_update_download_returns(u, next_max, returns, &err) == FH_OK);
    long bad = fh_first_mismatch(next_max, ref.next_max, n, NEXT_MAX_TOL);
    CHECK_MSG(bad < 0, "max Q(s', a) at sample %ld: GPU %.9g, CPU %.9g", bad,
              bad >= 0 ? next_max[bad] : 0.0, bad >= 0 ? ref.next_max[bad] : 0.0);
    fh_q_lambda_returns(hb.rewards, hb.terminal, hb.truncated, next_max, N_EPISODES, N_STEPS,
                        qc.gamma, qc.lambda, scan);
    bad = fh_first_mismatch(returns, scan, n, SCAN_REL);
    CHECK_MSG(bad < 0, "the Q(lambda) scan at sample %ld: GPU %.9g, CPU on the GPU's max Q "
              "%.9g", bad, bad >= 0 ? returns[bad] : 0.0, bad >= 0 ? scan[bad] : 0.0);
    bad = fh_first_mismatch(returns, ref.returns, n, RETURNS_TOL);
    CHECK_MSG(bad < 0, "Q(lambda) returns at sample %ld: GPU %.9g, CPU %.9g", bad,
              bad >= 0 ? returns[bad] : 0.0, bad >= 0 ? ref.returns[bad] : 0.0);
    printf("PQN targets in relative norm: max Q %.2g, returns %.2g (the scan alone %.2g)\n",
           fh_rel_norm(next_max, ref.next_max, n), fh_rel_norm(returns, ref.returns, n),
           fh_rel_norm(returns, scan, n));
    CHECK(fh_gpu_q_update_download_grads(u, grads, &err) == FH_OK);
    /* the CPU's gradient after its step is clipped in place (fh_mlp_clip_grad_norm);
     * adam_kernel clips on the fly and leaves the buffer as the backward wrote it: scale
     * the GPU's by its own clip coefficient, from its recorded pre-clip norm */
    double first_rec[FH_UREC_COLS];
    int n_first = 0;
    CHECK(fh_gpu_q_update_download_records(u, first_rec, 1, &n_first, &err) == FH_OK && n_first == 1);
    double norm = first_rec[FH_QREC_GRAD_NORM];
    CHECK_MSG(fh_rel(norm, ref.rec[0][3]) <= FIRST_GRAD_REL, "first step's gradient norm: GPU "
              "%.9g, CPU %.9g", norm, ref.rec[0][3]);
    double coef = qc.max_grad_norm > 0 ? qc.max_grad_norm / (norm + 1e-6) : 1.0;
    for (size_t i = 0; coef < 1.0 && i < P; i++)
        grads[i] *= (float)coef;
    double worst_grad = 0;
    for (int t = 0; t < start.n_tensors; t++) {
        const fh_tensor_desc *td = &start.tensors[t];
        double r = fh_rel_norm(grads + td->offset, ref.first_grads + td->offset, td->numel);
        worst_grad = fmax(worst_grad, r);
        CHECK_MSG(r <= FIRST_GRAD_REL, "first step: gradient of %s off by %.3g in relative norm",
                  td->name, r);
    }
    float *mb_states = malloc((size_t)MINIBATCH * FH_STATE_DIM * sizeof(float));
    float *mb_targets = malloc(MINIBATCH * sizeof(float));
    int32_t *mb_actions = malloc(MINIBATCH * sizeof(int32_t));
    CHECK(fh_gpu_q_update_download_minibatch(u, mb_states, mb_actions, mb_targets, NULL, &err) == FH_OK);
    CHECK_MSG(memcmp(mb_states, ref.mb_states, (size_t)MINIBATCH * FH_STATE_DIM * sizeof(float)) == 0 &&
                  memcmp(mb_actions, ref.mb_actions, MINIBATCH * sizeof(int32_t)) == 0,
              "the first minibatch's rows differ from the keyed order's");
    bad = fh_first_mismatch(mb_targets, ref.mb_targets, MINIBATCH, RETURNS_TOL);
    CHECK_MSG(bad < 0, "first minibatch's target %ld differs", bad);
    printf("PQN first step: worst gradient tensor %.2g in relative norm (norm %.6g%s)\n",
           worst_grad, norm, coef < 1.0 ? ", clipped" : "");
    fh_mlp_free(&got);

    /* (c): the weights after each step, eagerly */
    double worst_step[2] = {0, 0};
    int rows = 0;
    double (*rec)[FH_UREC_COLS] = malloc((size_t)ref.steps * sizeof *rec);
    for (int k = 1; k <= ref.steps; k++) {
        fh_status st = gpu_pqn(&got, &gs, u, &start, &db, &qc, rng, k, &err);
        CHECK_MSG(st == FH_OK, "%d steps: %s", k, err.message);
        const float *want = ref.params + (size_t)k * P;
        double r = fh_delta_rel(got.params, want, start.params, P);
        int late = k > ref.steps / EPOCHS;
        worst_step[late] = fmax(worst_step[late], r);
        CHECK_MSG(r <= (late ? LATE_REL : STEP_REL), "after step %d the weights' change is off "
                  "by %.3g in relative norm", k, r);
        if (k == ref.steps) {
            CHECK(fh_gpu_q_update_download_records(u, &rec[0][0], ref.steps, &rows, &err) == FH_OK);
            CHECK(rows == ref.steps);
            for (int s = 0; s < rows; s++) {
                double tol = s < ref.steps / EPOCHS ? STEP_REL : LATE_REL;
                const int cols[4] = {FH_QREC_LOSS, FH_QREC_MEAN_Q, FH_QREC_MEAN_TARGET,
                                     FH_QREC_GRAD_NORM};
                const char *names[4] = {"loss", "mean Q", "mean target", "gradient norm"};
                for (int j = 0; j < 4; j++)
                    CHECK_MSG(fh_rel(rec[s][cols[j]], ref.rec[s][j]) <= tol,
                              "step %d's %s: GPU %.9g, CPU %.9g", s + 1, names[j],
                              rec[s][cols[j]], ref.rec[s][j]);
            }
        }
        fh_mlp_free(&got);
    }
    printf("PQN step by step: weights' change worst %.2g (epoch 1), %.2g (epoch 2)\n",
           worst_step[0], worst_step[1]);

    /* (d): the whole update through the graphs */
    fh_mlp whole, whole2, eager;
    fh_q_stats ws, ws2, es;
    CHECK_MSG(gpu_pqn(&whole, &ws, u, &start, &db, &qc, rng, 0, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(gpu_pqn(&whole2, &ws2, u, &start, &db, &qc, rng, 0, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(gpu_pqn(&eager, &es, u, &start, &db, &qc, rng, ref.steps, &err) == FH_OK, "%s",
              err.message);
    const float *final = ref.params + (size_t)ref.steps * P;
    double r = fh_delta_rel(whole.params, final, start.params, P);
    double cosv = fh_delta_cosine(whole.params, final, start.params, P);
    CHECK_MSG(r <= LATE_REL && cosv >= COSINE, "whole update: the change is off by %.3g "
              "(cosine %.9f)", r, cosv);
    CHECK_MSG(ws.minibatches == ref.steps && whole.adam_step == ref.final.adam_step,
              "whole update: %d steps (CPU %d), Adam step %lld (CPU %lld)", ws.minibatches,
              ref.steps, (long long)whole.adam_step, (long long)ref.final.adam_step);
    CHECK_MSG(fh_rel(ws.loss, ref.stats.loss) <= LATE_REL && fh_rel(ws.mean_q, ref.stats.mean_q) <= LATE_REL &&
                  fh_rel(ws.mean_target, ref.stats.mean_target) <= LATE_REL &&
                  fh_rel(ws.grad_norm, ref.stats.grad_norm) <= LATE_REL,
              "whole update's statistics: loss %.9g / %.9g, Q %.9g / %.9g, y %.9g / %.9g, norm "
              "%.9g / %.9g", ws.loss, ref.stats.loss, ws.mean_q, ref.stats.mean_q,
              ws.mean_target, ref.stats.mean_target, ws.grad_norm, ref.stats.grad_norm);
    double rg = fh_delta_rel(whole.params, eager.params, start.params, P);
    CHECK_MSG(rg <= GRAPH_REL, "graphs against eager: %.3g", rg);
    CHECK_MSG(memcmp(whole.mem, whole2.mem, 4 * P * sizeof(float)) == 0 &&
                  memcmp(&ws, &ws2, sizeof ws) == 0,
              "the same update twice is not bit-identical");
    printf("PQN whole update (graphs): change off by %.2g, cosine %.9f; graphs vs eager %.2g%s; "
           "%.3f ms on the device\n", r, cosv, rg,
           memcmp(whole.params, eager.params, P * sizeof(float)) == 0 ? " (bit-identical)" : "",
           fh_gpu_q_update_last_ms(u));
    fh_mlp_free(&whole);
    fh_mlp_free(&whole2);
    fh_mlp_free(&eager);

    /* (f): NaN rewards at every row's last step: the first minibatch's targets are NaN */
    fh_transition_batch nb;
    CHECK(fh_transition_batch_alloc(&nb, N_EPISODES, N_STEPS, &err) == FH_OK);
    memcpy(nb.states, hb.states, n * FH_STATE_DIM * sizeof(float));
    memcpy(nb.next_states, hb.next_states, n * FH_STATE_DIM * sizeof(float));
    memcpy(nb.actions, hb.actions, n * sizeof(int32_t));
    memcpy(nb.rewards, hb.rewards, n * sizeof(float));
    memcpy(nb.terminal, hb.terminal, n);
    memcpy(nb.truncated, hb.truncated, n);
    for (int e = 0; e < N_EPISODES; e++)
        for (int t = N_STEPS / 2; t < N_STEPS; t++)
            nb.rewards[(size_t)e * N_STEPS + t] = NAN;
    device_copy dn;
    CHECK_MSG(device_copy_upload(&dn, &nb, &err) == FH_OK, "%s", err.message);
    fh_mlp cpu_nan;
    clone(&cpu_nan, &start);
    fh_q_workspace w;
    fh_q_stats cs;
    CHECK(fh_q_workspace_init(&w, FH_NET_PQN, MINIBATCH, (int64_t)n, &err) == FH_OK);
    fh_rng rc = rng;
    fh_status cst = fh_pqn_update(&cs, &cpu_nan, &w, &nb, &qc, &rc, &err);
    CHECK_MSG(cst == FH_ERR_FAILURE && strstr(err.message, "TD loss") &&
                  strstr(err.message, "epoch 1") && strstr(err.message, "minibatch 1)"),
              "the CPU update on NaN rewards: %s", err.message);
    fh_status gst = gpu_pqn(&got, &gs, u, &start, &dn.view, &qc, rng, 0, &err);
    CHECK_MSG(gst == FH_ERR_FAILURE && strstr(err.message, "TD loss") &&
                  strstr(err.message, "epoch 1") && strstr(err.message, "minibatch 1 "),
              "the GPU update on NaN rewards: %s", err.message);
    CHECK_MSG(memcmp(got.params, start.params, P * sizeof(float)) == 0 &&
                  memcmp(got.adam_m, start.adam_m, P * sizeof(float)) == 0,
              "the refused GPU update changed the weights");
    fh_mlp_free(&got);
    fh_mlp_free(&cpu_nan);
    fh_q_workspace_free(&w);
    fh_transition_batch_free(&nb);
    cudaFree(dn.mem);

    /* (g): TF32 */
    fh_train_config tcfg = cfg;
    snprintf(tcfg.precision, sizeof tcfg.precision, "tf32");
    fh_gpu_q_update *ut = NULL;
    CHECK_MSG(fh_gpu_q_update_create(&ut, &g_dev, FH_NET_PQN, N_EPISODES, N_STEPS,
                                     fh_gpu_q_settings_of(&tcfg), &err) == FH_OK,
              "%s", err.message);
    if (ut) {
        CHECK_MSG(gpu_pqn(&got, &gs, ut, &start, &db, &qc, rng, 0, &err) == FH_OK, "%s", err.message);
        double tc = fh_delta_cosine(got.params, final, start.params, P);
        CHECK_MSG(tc >= TF32_COSINE, "TF32: cosine %.6f", tc);
        printf("PQN TF32: the change off by %.2g in relative norm, cosine %.6f\n",
               fh_delta_rel(got.params, final, start.params, P), tc);
        fh_mlp_free(&got);
    }
    fh_gpu_q_update_destroy(ut);

    /* (e): a tail minibatch */
    fh_train_config tail = cfg;
    tail.minibatch = 500;
    fh_q_update_config tqc = q_config(&tail);
    fh_gpu_q_update *u2 = NULL;
    CHECK_MSG(fh_gpu_q_update_create(&u2, &g_dev, FH_NET_PQN, N_EPISODES, N_STEPS,
                                     fh_gpu_q_settings_of(&tail), &err) == FH_OK,
              "%s", err.message);
    pqn_ref tref;
    CHECK_MSG(pqn_reference(&tref, &start, &hb, &tqc, rng, &err) == FH_OK, "%s", err.message);
    if (u2) {
        CHECK_MSG(gpu_pqn(&got, &gs, u2, &start, &db, &tqc, rng, 0, &err) == FH_OK, "%s",
                  err.message);
        const float *tfinal = tref.params + (size_t)tref.steps * P;
        double tr = fh_delta_rel(got.params, tfinal, start.params, P);
        CHECK_MSG(tr <= LATE_REL && gs.minibatches == tref.steps && gs.minibatches == 18,
                  "tail: the change off by %.3g, %d steps (CPU %d)", tr, gs.minibatches, tref.steps);
        CHECK_MSG(fh_rel(gs.loss, tref.stats.loss) <= LATE_REL, "tail: loss %.9g vs %.9g", gs.loss,
                  tref.stats.loss);
        printf("PQN tail minibatch: the change off by %.2g\n", tr);
        fh_mlp_free(&got);
    }
    fh_gpu_q_update_destroy(u2);
    pqn_ref_free(&tref);

    free(rec);
    free(mb_states);
    free(mb_targets);
    free(mb_actions);
    free(next_max);
    free(returns);
    free(scan);
    free(grads);
    pqn_ref_free(&ref);
    fh_transition_batch_free(&hb);
    fh_gpu_dqn_collector_destroy(c);
    fh_gpu_q_update_destroy(u);
    fh_mlp_free(&start);
}

/* ---- (j): PQN with the Huber loss ---- */

/* A PQN whole update with one setting on (cfg, qc) on the GPU and on the CPU, and on the
 * CPU with it off (off: qc less the setting), from the same start (orthogonal init
 * init_seed), collection (collector seed collect_seed) and minibatch stream (rng_seed,
 * rng_stream). *out: the GPU's change off the CPU's (relative, cosine), how far the
 * setting moved the CPU's change, the three runs' stats; 0 if a run could not start. */
typedef struct {
    double r, cosv, r_off;
    fh_q_stats cs, cs_off, gs;
} pqn_setting_result;

static int pqn_setting_case(const fixture *f, const fh_train_config *cfg,
                            const fh_q_update_config *qc, const fh_q_update_config *off,
                            uint64_t init_seed, uint64_t collect_seed, uint64_t rng_seed,
                            uint64_t rng_stream, pqn_setting_result *out)
{
    fh_error err;
    int ran = 0;
    fh_mlp start;
    CHECK(fh_mlp_init(&start, FH_NET_PQN, &err) == FH_OK);
    fh_mlp_init_orthogonal(&start, init_seed);
    const size_t P = start.n_params, n = (size_t)N_EPISODES * N_STEPS;
    fh_gpu_q_update *u = NULL;
    fh_gpu_dqn_collector *c = NULL;
    CHECK_MSG(fh_gpu_q_update_create(&u, &g_dev, FH_NET_PQN, N_EPISODES, N_STEPS,
                                     fh_gpu_q_settings_of(cfg), &err) == FH_OK,
              "%s", err.message);
    CHECK_MSG(fh_gpu_dqn_collector_create(&c, &g_dev, N_EPISODES, N_STEPS, &cfg->env, &f->view,
                                          collect_seed, 1, &err) == FH_OK, "%s", err.message);
    fh_transition_batch hb;
    memset(&hb, 0, sizeof hb);
    if (u && c && fh_gpu_q_update_upload(u, &start, NULL, &err) == FH_OK &&
        gpu_collection(c, u, f, &hb, &err) == FH_OK) {
        fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(c);
        fh_rng rng;
        fh_pcg32_seed(&rng, rng_seed, rng_stream);
        fh_q_workspace w;
        CHECK(fh_q_workspace_init(&w, FH_NET_PQN, MINIBATCH, (int64_t)n, &err) == FH_OK);
        fh_mlp cpu, cpu_off, got;
        clone(&cpu, &start);
        clone(&cpu_off, &start);
        fh_rng r1 = rng, r2 = rng;
        CHECK_MSG(fh_pqn_update(&out->cs, &cpu, &w, &hb, qc, &r1, &err) == FH_OK, "%s",
                  err.message);
        CHECK_MSG(fh_pqn_update(&out->cs_off, &cpu_off, &w, &hb, off, &r2, &err) == FH_OK, "%s",
                  err.message);
        CHECK_MSG(gpu_pqn(&got, &out->gs, u, &start, &db, qc, rng, 0, &err) == FH_OK, "%s",
                  err.message);
        out->r = fh_delta_rel(got.params, cpu.params, start.params, P);
        out->cosv = fh_delta_cosine(got.params, cpu.params, start.params, P);
        out->r_off = fh_delta_rel(cpu_off.params, cpu.params, start.params, P);
        ran = 1;
        fh_mlp_free(&cpu);
        fh_mlp_free(&cpu_off);
        fh_mlp_free(&got);
        fh_q_workspace_free(&w);
    }
    fh_transition_batch_free(&hb);
    fh_gpu_dqn_collector_destroy(c);
    fh_gpu_q_update_destroy(u);
    fh_mlp_free(&start);
    return ran;
}

/* configs/pqn.ini trains PQN with the Huber loss (pqn_huber). Its GPU path is the loss
 * kernel's Huber branch, which (h) checks for DQN's targets; here the whole PQN update
 * through the graphs against the CPU's fh_pqn_update on the same collection, with the
 * threshold low enough (HUBER_DELTA) that TD errors fall on both of its sides. The
 * squared loss's CPU update on the same batch must differ, or the setting did nothing. */
#define HUBER_DELTA 0.05
static void test_pqn_huber(const fixture *f)
{
    fh_train_config cfg = f->cfg;
    cfg.pqn_huber = 1;
    cfg.huber_delta = HUBER_DELTA;
    fh_q_update_config qc = q_config(&cfg), mse = qc;
    mse.pqn_huber = 0;
    pqn_setting_result x;
    if (!pqn_setting_case(f, &cfg, &qc, &mse, 43, 7, 9, 0x52, &x))
        return;
    CHECK_MSG(x.r <= LATE_REL && x.cosv >= COSINE, "PQN Huber whole update: the change is off "
              "by %.3g (cosine %.9f)", x.r, x.cosv);
    CHECK_MSG(x.gs.minibatches == x.cs.minibatches && fh_rel(x.gs.loss, x.cs.loss) <= LATE_REL &&
                  fh_rel(x.gs.grad_norm, x.cs.grad_norm) <= LATE_REL,
              "PQN Huber: %d / %d steps, loss %.9g / %.9g, norm %.9g / %.9g", x.gs.minibatches,
              x.cs.minibatches, x.gs.loss, x.cs.loss, x.gs.grad_norm, x.cs.grad_norm);
    CHECK_MSG(x.r_off > 100 * LATE_REL && fh_rel(x.cs.loss, x.cs_off.loss) > 0.1,
              "the squared loss's update is as the Huber one's (change %.3g apart, loss "
              "%.9g / %.9g): pqn_huber did nothing", x.r_off, x.cs.loss, x.cs_off.loss);
    printf("PQN Huber (delta %.2f) whole update: the change off by %.2g, cosine %.9f; loss "
           "GPU %.6g CPU %.6g (squared loss %.6g, its change %.2g apart)\n", HUBER_DELTA, x.r,
           x.cosv, x.gs.loss, x.cs.loss, x.cs_off.loss, x.r_off);
}

/* (k) weight_decay (AdamW, issue 34): PQN's whole update with weight_decay 1 on the GPU
 * within LATE_REL (cosine >= COSINE) of the CPU's, whose change is more than 10 LATE_REL
 * away from the update without decay (the case can fail). */
#define PQN_WEIGHT_DECAY 1.0
static void test_pqn_weight_decay(const fixture *f)
{
    fh_train_config cfg = f->cfg;
    cfg.weight_decay = PQN_WEIGHT_DECAY;
    fh_q_update_config qc = q_config(&cfg), plain = qc;
    plain.adam.weight_decay = 0.0f;
    CHECK(qc.adam.weight_decay == (float)PQN_WEIGHT_DECAY);
    pqn_setting_result x;
    if (!pqn_setting_case(f, &cfg, &qc, &plain, 44, 8, 10, 0x53, &x))
        return;
    CHECK_MSG(x.r <= LATE_REL && x.cosv >= COSINE, "PQN weight_decay whole update: the change "
              "is off by %.3g (cosine %.9f)", x.r, x.cosv);
    CHECK_MSG(x.r_off > 10 * LATE_REL, "weight_decay %g moved the update by %.3g only",
              PQN_WEIGHT_DECAY, x.r_off);
    printf("PQN weight_decay %g whole update: the change off by %.2g, cosine %.9f (without "
           "decay %.2g apart)\n", PQN_WEIGHT_DECAY, x.r, x.cosv, x.r_off);
}

/* ---- (i): a timing at the PPO throughput configuration's size ---- */

/* A warm-up iteration (NVRTC, graphs, cuBLAS), then 3 timed: collection, update. */
static void time_loop(fh_gpu_q_update *u, fh_gpu_dqn_collector *c, const fixture *f,
                      const fh_train_config *cfg, const fh_q_update_config *qc, fh_net_kind net)
{
    const int iterations = 3;
    fh_error err;
    fh_rng rng;
    fh_pcg32_seed(&rng, 1, 0x51);
    double collect_s = 0, update_s = 0, device_ms = 0;
    int steps = 0;
    for (int it = 0; it <= iterations; it++) {
        double t0 = fh_clock_seconds();
        fh_status st = fh_gpu_dqn_collect_device(c, fh_gpu_q_update_params(u),
                                                 f->curiosity.params, 0.1f, NULL, &err);
        double t1 = fh_clock_seconds();
        fh_dqn_device_batch db = fh_gpu_dqn_collector_batch(c);
        fh_q_stats s;
        if (st == FH_OK)
            st = net == FH_NET_PQN ? fh_gpu_pqn_update_run(u, &db, qc, &rng, 0, &s, &err)
                                   : fh_gpu_dqn_update_run(u, &db, qc, &rng, &s, &err);
        double t2 = fh_clock_seconds();
        CHECK_MSG(st == FH_OK, "timing, iteration %d: %s", it, err.message);
        if (st != FH_OK)
            return;
        if (it > 0) {
            collect_s += t1 - t0;
            update_s += t2 - t1;
            device_ms += fh_gpu_q_update_last_ms(u);
            steps = s.minibatches;
        }
    }
    double per = (double)cfg->episodes * cfg->steps;
    printf("timing %s %d x %d (%d steps of %d an update): collection %.1f ms, update %.1f ms "
           "(%.1f ms on the device), %.0f env steps/s for whole iterations\n",
           net == FH_NET_PQN ? "PQN" : "DQN", cfg->episodes, cfg->steps, steps, cfg->minibatch,
           1e3 * collect_s / iterations, 1e3 * update_s / iterations, device_ms / iterations,
           per * iterations / (collect_s + update_s));
}

static void time_iterations(const fixture *f, fh_net_kind net)
{
    fh_error err;
    fh_train_config cfg = f->cfg;
    cfg.episodes = 4096;
    cfg.steps = 128;
    cfg.minibatch = net == FH_NET_PQN ? 4096 : 512;
    cfg.epochs = 2;
    cfg.replay_capacity = 1 << 20;
    cfg.learning_starts = 0;
    fh_q_update_config qc = q_config(&cfg);
    fh_mlp q;
    CHECK(fh_mlp_init(&q, net, &err) == FH_OK);
    fh_mlp_init_orthogonal(&q, 61);
    fh_gpu_q_update *u = NULL;
    fh_gpu_dqn_collector *c = NULL;
    if (fh_gpu_q_update_create(&u, &g_dev, net, cfg.episodes, cfg.steps,
                               fh_gpu_q_settings_of(&cfg), &err) != FH_OK ||
        fh_gpu_dqn_collector_create(&c, &g_dev, cfg.episodes, cfg.steps, &cfg.env, &f->view, 5,
                                    net == FH_NET_PQN, &err) != FH_OK ||
        fh_gpu_q_update_upload(u, &q, NULL, &err) != FH_OK)
        CHECK_MSG(0, "timing set-up: %s", err.message);
    else
        time_loop(u, c, f, &cfg, &qc, net);
    fh_gpu_dqn_collector_destroy(c);
    fh_gpu_q_update_destroy(u);
    fh_mlp_free(&q);
}

/* ---- the cases ---- */

static void case_pcg32_advance(void)
{
    test_pcg32_advance();
}

static void case_pqn_reference(void)
{
    fh_error err;
    fixture f;
    fh_status st = fixture_init(&f, &err);
    CHECK_MSG(st == FH_OK, "%s", err.message);
    if (st == FH_OK)
        test_reference_is_fh_pqn_update(&f.cfg, &f.market);
    fixture_free(&f);
}

static void run_timing(const fixture *f)
{
    time_iterations(f, FH_NET_PQN);
    time_iterations(f, FH_NET_QNET);
}


static void case_pqn(void)
{
    on_gpu(test_pqn);
}

static void case_pqn_huber(void)
{
    on_gpu(test_pqn_huber);
}

static void case_pqn_weight_decay(void)
{
    on_gpu(test_pqn_weight_decay);
}

static void case_timing(void)
{
    on_gpu(run_timing);
}

static const fh_test_case CASES[] = {
    {"pcg32_advance", case_pcg32_advance},
    {"pqn_reference", case_pqn_reference},
    {"pqn", case_pqn},
    {"pqn_huber", case_pqn_huber},
    {"pqn_weight_decay", case_pqn_weight_decay},
    {"timing", case_timing},
};
FH_TEST_CASES_MAIN(CASES)
