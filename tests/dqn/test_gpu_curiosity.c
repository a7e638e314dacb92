/* test_gpu_curiosity.c — the curiosity model's fit on the GPU (gpu_curiosity.c) against
 * fh_curiosity_fit (ppo_update.c), the reference (issue 18). fp32 matmuls (no TF32).
 *
 * One ctest entry per case (test_gpu_curiosity CASE; tests/dqn/test_cases.h):
 * program_entries (c1) on the CPU (no GPU needed); fit (a)-(c), nan_state (d),
 * resident_collection (e) and timing (f) skip (77) without a GPU, each on a fixture and
 * collection of its own.
 * On the CPU:
 *  (c1) the fit's program, update_kernels.cu with update_plan.c's options, compiles to
 *       PTX for sm_90 and holds every entry point the fit launches
 *       (FH_GPU_CURIOSITY_ENTRIES).
 * On the GPU, on a real collection (dqn_experience_kernel over the synthetic market, 64
 * episodes x 64 steps, horizon 30, epsilon 0.5, random orthogonal Q weights), each fit
 * from the same weights and the same update stream on both sides:
 *  (a) 1 epoch of 8 minibatches of 512: the streams after the fit identical (the same
 *      keys drawn), the loss within LOSS_REL, the change of the weights within
 *      WEIGHTS_REL in relative norm ||dW_gpu - dW_cpu|| / ||dW_cpu|| (test_gpu_update.c's
 *      EARLY_REL, its bound on the PPO update's curiosity fit), Adam's moments within
 *      MOMENTS_REL, the Adam step the same; the same fit again bit-identical;
 *  (b) 2 epochs of minibatches of 500 (each epoch's last one 96 rows) as (a);
 *  (c) 300 rows, fewer than a minibatch (the CPU then takes them all at once), as (a);
 *  (d) a NaN in a state of the first minibatch: both fits refuse it at epoch 1,
 *      minibatch 1, naming the curiosity loss or gradient, the streams still advance
 *      alike, and the GPU's weights, moments and step are left as they were;
 *  (e) fh_gpu_dqn_collect_resident (the curiosity params read on the device) gives
 *      transitions identical, bit for bit, to fh_gpu_dqn_collect's (uploaded from the
 *      host), two collections in a row;
 *  (f) a timing, printed only: the fit alone at 4096 x 128 (the PPO throughput
 *      configuration's size, docs/BENCHMARKS.md), minibatches of 512 (the default) and
 *      16384 (that configuration's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/gpu_curiosity.h"
#include "cuda/gpu_dqn_collector.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/update_plan.h"
#include "rl/gpu_update_settings.h"
#include "dqn/test_cases.h"
#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/device.h"
#include "foxhunt/dqn.h"
#include "foxhunt/nn.h"
#include "foxhunt/ppo.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_norms.h"
#include "test_util.h"

#define N_EPISODES 64
#define N_STEPS 64
#define MINIBATCH 512
#define EPSILON 0.5f
#define LOSS_REL 1e-4
#define WEIGHTS_REL 1e-5  /* test_gpu_update.c's EARLY_REL (the PPO update's curiosity fit) */
#define MOMENTS_REL 1e-5
#define NAN_FEATURE 5     /* a state feature the model reads (0..31) */

static fh_device_info g_dev;

/* ---- small tools ---- */

static void clone(fh_mlp *dst, const fh_mlp *src)
{
    fh_error err;
    memset(dst, 0, sizeof *dst);
    if (fh_mlp_init(dst, src->desc->kind, &err) == FH_OK)
        fh_mlp_copy(dst, src);
}

/* ---- (c1) the program ---- */

static void test_program_entries(void)
{
    fh_update_problem prob = {132, (long long)N_EPISODES * N_STEPS, MINIBATCH, 1, 1, 0, 0, 0};
    fh_update_plan plan;
    fh_error err;
    fh_error_clear(&err);
    CHECK_MSG(fh_update_plan_make(&prob, &plan, &err) == FH_OK, "%s", err.message);
    fh_nvrtc_output out;
    fh_status st = fh_nvrtc_compile(FH_GPU_CURIOSITY_KERNEL_FILE, "compute_90", plan.options,
                                    plan.n_options, &out, &err);
    CHECK_MSG(st == FH_OK, "NVRTC, %s: %s", FH_GPU_CURIOSITY_KERNEL_FILE, err.message);
    if (st != FH_OK)
        return;
    const char *const entries[] = FH_GPU_CURIOSITY_ENTRIES;
    for (size_t e = 0; e < sizeof entries / sizeof entries[0]; e++) {
        char needle[128];
        snprintf(needle, sizeof needle, ".entry %s(", entries[e]);
        CHECK_MSG(strstr(out.image, needle) != NULL, "no entry %s in %s's PTX", entries[e],
                  FH_GPU_CURIOSITY_KERNEL_FILE);
    }
    fh_nvrtc_output_free(&out);
}

/* ---- the fixture: a GPU collection, on the host too ---- */

typedef struct {
    fh_train_config cfg;
    fh_run_data data;
    fh_market_view view;
    fh_env_market market;
    fh_mlp qnet, curiosity;     /* the collection's networks; curiosity: every fit's start */
    fh_gpu_dqn_collector *collector;
    fh_transition_batch batch;  /* the collection, downloaded */
    fh_dqn_device_batch dbatch; /* the same, where it lies */
    fh_rng rng;                 /* the update stream at every fit's start */
} fixture;

static fh_status fixture_init(fixture *f, fh_error *err)
{
    memset(f, 0, sizeof *f);
    fh_train_config_default(&f->cfg);
    f->cfg.synthetic_bars = 4000;
    f->cfg.episodes = N_EPISODES;
    f->cfg.steps = N_STEPS;
    f->cfg.minibatch = MINIBATCH;
    f->cfg.curiosity_epochs = 1;
    f->cfg.env.horizon = 30;
    snprintf(f->cfg.precision, sizeof f->cfg.precision, "fp32");
    fh_status st = fh_run_data_load(&f->data, &f->cfg, NULL, err);
    if (st != FH_OK)
        return st;
    f->view = fh_market_view_of(&f->data.market, FH_SPLIT_TRAIN);
    f->market = fh_env_market_from_view(&f->view);
    if ((st = fh_mlp_init(&f->qnet, FH_NET_QNET, err)) != FH_OK ||
        (st = fh_mlp_init(&f->curiosity, FH_NET_CURIOSITY, err)) != FH_OK)
        return st;
    fh_mlp_init_orthogonal(&f->qnet, 21);
    fh_mlp_init_orthogonal(&f->curiosity, 22);
    rng_seed(&f->rng, 7, 1ULL << 62);
    return fh_transition_batch_alloc(&f->batch, N_EPISODES, N_STEPS, err);
}

static fh_status fixture_collect(fixture *f, fh_error *err)
{
    fh_status st = fh_gpu_dqn_collector_create(&f->collector, &g_dev, N_EPISODES, N_STEPS,
                                               &f->cfg.env, &f->view, 5, 0, err);
    if (st == FH_OK)
        st = fh_gpu_dqn_collect(f->collector, f->qnet.params, f->qnet.n_params,
                                f->curiosity.params, EPSILON, &f->batch, err);
    if (st == FH_OK)
        f->dbatch = fh_gpu_dqn_collector_batch(f->collector);
    return st;
}

static void fixture_free(fixture *f)
{
    fh_gpu_dqn_collector_destroy(f->collector);
    fh_transition_batch_free(&f->batch);
    fh_mlp_free(&f->qnet);
    fh_mlp_free(&f->curiosity);
    fh_run_data_free(&f->data);
}

/* ---- one fit on each side ---- */

typedef struct {
    fh_status st;
    char message[FH_ERROR_MESSAGE_MAX];
    fh_mlp net;   /* after the fit */
    fh_rng rng;   /* the stream after it */
    double loss;
} fit_result;

static void cpu_fit(fit_result *r, const fixture *f, const fh_train_config *cfg,
                    const float *states, int64_t n)
{
    fh_error err;
    fh_error_clear(&err);
    memset(r, 0, sizeof *r);
    clone(&r->net, &f->curiosity);
    r->rng = f->rng;
    fh_ppo_workspace ws;
    r->st = fh_ppo_workspace_init(&ws, cfg->minibatch, n, &err);
    if (r->st == FH_OK)
        r->st = fh_curiosity_fit(&r->loss, &r->net, &ws, states, f->batch.actions,
                                 f->batch.exposures, f->batch.bars, n, &f->market, cfg, &r->rng,
                                 &err);
    fh_ppo_workspace_free(&ws);
    snprintf(r->message, sizeof r->message, "%s", err.message);
}

/* A fit on g (created by the caller) from the fixture's start; the weights come back
 * into r->net whether or not the fit succeeded. */
static void gpu_fit(fit_result *r, fh_gpu_curiosity *g, const fixture *f, const float *d_states,
                    int64_t n)
{
    fh_error err;
    fh_error_clear(&err);
    memset(r, 0, sizeof *r);
    clone(&r->net, &f->curiosity);
    r->rng = f->rng;
    r->st = fh_gpu_curiosity_upload(g, &f->curiosity, &err);
    if (r->st == FH_OK)
        r->st = fh_gpu_curiosity_fit(g, d_states, f->dbatch.actions, f->dbatch.exposures,
                                     f->dbatch.bars,
                                     fh_gpu_dqn_collector_market_features(f->collector), n,
                                     &r->rng, &r->loss, &err);
    snprintf(r->message, sizeof r->message, "%s", err.message);
    fh_error err2;
    fh_error_clear(&err2);
    fh_status dst = fh_gpu_curiosity_download(g, &r->net, &err2);
    CHECK_MSG(dst == FH_OK, "download after the fit: %s", err2.message);
}

static int same_net(const fh_mlp *a, const fh_mlp *b)
{
    size_t bytes = a->n_params * sizeof(float);
    return memcmp(a->params, b->params, bytes) == 0 && memcmp(a->adam_m, b->adam_m, bytes) == 0 &&
           memcmp(a->adam_v, b->adam_v, bytes) == 0 && a->adam_step == b->adam_step;
}

/* (a)-(c): the GPU's fit of n rows against the CPU's, then again (determinism). */
static void compare_fit(const fixture *f, const fh_train_config *cfg, int64_t n, const char *label)
{
    fh_error err;
    fh_error_clear(&err);
    fh_gpu_curiosity *g = NULL;
    CHECK_MSG(fh_gpu_curiosity_create(&g, &g_dev, (int64_t)N_EPISODES * N_STEPS,
                                      fh_gpu_curiosity_settings_of(cfg), &err) == FH_OK,
              "%s: %s", label, err.message);
    if (!g)
        return;
    fit_result c, r, r2;
    cpu_fit(&c, f, cfg, f->batch.states, n);
    gpu_fit(&r, g, f, f->dbatch.states, n);
    gpu_fit(&r2, g, f, f->dbatch.states, n);
    CHECK_MSG(c.st == FH_OK, "%s: CPU fit: %s", label, c.message);
    CHECK_MSG(r.st == FH_OK, "%s: GPU fit: %s", label, r.message);
    if (c.st == FH_OK && r.st == FH_OK) {
        const size_t P = f->curiosity.n_params;
        CHECK_MSG(memcmp(&c.rng, &r.rng, sizeof c.rng) == 0,
                  "%s: the update streams differ after the fits", label);
        double dw = fh_delta_rel(r.net.params, c.net.params, f->curiosity.params, P);
        double dm = fh_rel_norm(r.net.adam_m, c.net.adam_m, P);
        double dv = fh_rel_norm(r.net.adam_v, c.net.adam_v, P);
        printf("%s: loss GPU %.9g CPU %.9g (rel %.2e); ||dW_gpu - dW_cpu|| / ||dW_cpu|| = "
               "%.2e; Adam m %.2e, v %.2e; %lld steps; %.3f ms\n", label, r.loss, c.loss,
               fh_rel(r.loss, c.loss), dw, dm, dv, (long long)r.net.adam_step,
               (double)fh_gpu_curiosity_last_ms(g));
        CHECK_MSG(fh_rel(r.loss, c.loss) <= LOSS_REL, "%s: loss %.9g vs CPU %.9g", label, r.loss,
                  c.loss);
        CHECK_MSG(dw <= WEIGHTS_REL, "%s: the weights' change differs by %.2e > %.0e", label,
                  dw, WEIGHTS_REL);
        CHECK_MSG(dm <= MOMENTS_REL && dv <= MOMENTS_REL, "%s: Adam moments differ: m %.2e, "
                  "v %.2e > %.0e", label, dm, dv, MOMENTS_REL);
        CHECK_MSG(r.net.adam_step == c.net.adam_step, "%s: Adam step %lld vs CPU %lld", label,
                  (long long)r.net.adam_step, (long long)c.net.adam_step);
        CHECK_MSG(r2.st == FH_OK && same_net(&r.net, &r2.net) && r.loss == r2.loss &&
                      memcmp(&r.rng, &r2.rng, sizeof r.rng) == 0,
                  "%s: the same fit twice differs (%s)", label, r2.message);
    }
    fh_mlp_free(&c.net);
    fh_mlp_free(&r.net);
    fh_mlp_free(&r2.net);
    fh_gpu_curiosity_destroy(g);
}

/* (d) a NaN in the state at the first position of epoch 1 (on both sides). */
static void test_nan_state(const fixture *f)
{
    const int64_t n = (int64_t)N_EPISODES * N_STEPS;
    const size_t floats = (size_t)n * FH_STATE_DIM;
    fh_rng keys = f->rng;
    long long r0 = fh_minibatch_order(fh_minibatch_key(&keys), n, 0);
    float *states = malloc(floats * sizeof(float));
    float *d_states = NULL;
    fh_error err;
    fh_error_clear(&err);
    fh_gpu_curiosity *g = NULL;
    CHECK(states != NULL);
    CHECK(cudaMalloc((void **)&d_states, floats * sizeof(float)) == cudaSuccess);
    CHECK_MSG(fh_gpu_curiosity_create(&g, &g_dev, n, fh_gpu_curiosity_settings_of(&f->cfg),
                                      &err) == FH_OK, "%s", err.message);
    if (!states || !d_states || !g)
        goto done;
    memcpy(states, f->batch.states, floats * sizeof(float));
    states[r0 * FH_STATE_DIM + NAN_FEATURE] = NAN;
    CHECK(cudaMemcpy(d_states, states, floats * sizeof(float), cudaMemcpyHostToDevice) ==
          cudaSuccess);
    fit_result c, r;
    cpu_fit(&c, f, &f->cfg, states, n);
    gpu_fit(&r, g, f, d_states, n);
    printf("NaN state (row %lld): CPU: %s\n                      GPU: %s\n", r0, c.message,
           r.message);
    CHECK_MSG(c.st != FH_OK, "the CPU fit took a NaN state");
    CHECK_MSG(r.st != FH_OK, "the GPU fit took a NaN state");
    CHECK_MSG(strstr(r.message, "curiosity") && strstr(r.message, "(epoch 1, minibatch 1)"),
              "the GPU's refusal names neither the curiosity fit nor its position: %s",
              r.message);
    CHECK_MSG(memcmp(&c.rng, &r.rng, sizeof c.rng) == 0,
              "the update streams differ after the refused fits");
    CHECK_MSG(same_net(&r.net, &f->curiosity),
              "the GPU's refused fit changed the weights, moments or Adam step");
    fh_mlp_free(&c.net);
    fh_mlp_free(&r.net);
done:
    fh_gpu_curiosity_destroy(g);
    cudaFree(d_states);
    free(states);
}

/* (e) the curiosity params read on the device against uploaded from the host. */
static void test_resident_collection(const fixture *f)
{
    fh_error err;
    fh_error_clear(&err);
    fh_gpu_dqn_collector *a = NULL, *b = NULL;
    fh_gpu_curiosity *g = NULL;
    float *d_qnet = NULL;
    fh_transition_batch ta, tb;
    memset(&ta, 0, sizeof ta);
    memset(&tb, 0, sizeof tb);
    fh_mlp cur;
    clone(&cur, &f->curiosity);
    CHECK_MSG(fh_gpu_dqn_collector_create(&a, &g_dev, N_EPISODES, N_STEPS, &f->cfg.env, &f->view,
                                          9, 0, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_gpu_dqn_collector_create(&b, &g_dev, N_EPISODES, N_STEPS, &f->cfg.env, &f->view,
                                          9, 0, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_gpu_curiosity_create(&g, &g_dev, (int64_t)N_EPISODES * N_STEPS,
                                      fh_gpu_curiosity_settings_of(&f->cfg), &err) == FH_OK,
              "%s", err.message);
    CHECK(fh_transition_batch_alloc(&ta, N_EPISODES, N_STEPS, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&tb, N_EPISODES, N_STEPS, &err) == FH_OK);
    CHECK(cudaMalloc((void **)&d_qnet, f->qnet.n_params * sizeof(float)) == cudaSuccess);
    if (!a || !b || !g || !ta.states || !tb.states || !d_qnet)
        goto done;
    CHECK(cudaMemcpy(d_qnet, f->qnet.params, f->qnet.n_params * sizeof(float),
                     cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK_MSG(fh_gpu_curiosity_upload(g, &cur, &err) == FH_OK, "%s", err.message);
    const size_t nl = (size_t)N_EPISODES * N_STEPS;
    for (int round = 0; round < 2; round++) {
        CHECK_MSG(fh_gpu_dqn_collect(a, f->qnet.params, f->qnet.n_params, cur.params, EPSILON,
                                     &ta, &err) == FH_OK, "%s", err.message);
        CHECK_MSG(fh_gpu_dqn_collect_resident(b, d_qnet, fh_gpu_curiosity_params(g), EPSILON,
                                              &tb, &err) == FH_OK, "%s", err.message);
        int same = memcmp(ta.states, tb.states, nl * FH_STATE_DIM * sizeof(float)) == 0 &&
                   memcmp(ta.next_states, tb.next_states, nl * FH_STATE_DIM * sizeof(float)) == 0 &&
                   memcmp(ta.actions, tb.actions, nl * sizeof(int32_t)) == 0 &&
                   memcmp(ta.rewards, tb.rewards, nl * sizeof(float)) == 0 &&
                   memcmp(ta.terminal, tb.terminal, nl) == 0 &&
                   memcmp(ta.truncated, tb.truncated, nl) == 0 &&
                   memcmp(ta.q_taken, tb.q_taken, nl * sizeof(float)) == 0 &&
                   memcmp(ta.exposures, tb.exposures, nl * sizeof(float)) == 0 &&
                   memcmp(ta.bars, tb.bars, nl * sizeof(int32_t)) == 0;
        CHECK_MSG(same, "round %d: the resident collection differs from the uploaded one", round);
        /* the next round on weights the GPU fitted, the host given the same */
        fh_rng rng = f->rng;
        double loss;
        fh_dqn_device_batch d = fh_gpu_dqn_collector_batch(b);
        CHECK_MSG(fh_gpu_curiosity_fit(g, d.states, d.actions, d.exposures, d.bars,
                                       fh_gpu_dqn_collector_market_features(b), (int64_t)nl, &rng,
                                       &loss, &err) == FH_OK, "%s", err.message);
        CHECK_MSG(fh_gpu_curiosity_download(g, &cur, &err) == FH_OK, "%s", err.message);
    }
done:
    cudaFree(d_qnet);
    fh_transition_batch_free(&ta);
    fh_transition_batch_free(&tb);
    fh_gpu_curiosity_destroy(g);
    fh_gpu_dqn_collector_destroy(a);
    fh_gpu_dqn_collector_destroy(b);
    fh_mlp_free(&cur);
}

/* (f) the fit at the throughput configuration's size, printed. */
static void time_fit(const fixture *f, int minibatch)
{
    fh_error err;
    fh_error_clear(&err);
    fh_train_config cfg = f->cfg;
    cfg.minibatch = minibatch;
    cfg.episodes = 4096;
    cfg.steps = 128;
    const int64_t n = (int64_t)cfg.episodes * cfg.steps;
    fh_gpu_dqn_collector *c = NULL;
    fh_gpu_curiosity *g = NULL;
    float *d_qnet = NULL;
    if (fh_gpu_dqn_collector_create(&c, &g_dev, cfg.episodes, cfg.steps, &cfg.env, &f->view, 5, 0,
                                    &err) != FH_OK ||
        fh_gpu_curiosity_create(&g, &g_dev, n,
                                fh_gpu_curiosity_settings_of(&cfg), &err) != FH_OK ||
        fh_gpu_curiosity_upload(g, &f->curiosity, &err) != FH_OK ||
        cudaMalloc((void **)&d_qnet, f->qnet.n_params * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(d_qnet, f->qnet.params, f->qnet.n_params * sizeof(float),
                   cudaMemcpyHostToDevice) != cudaSuccess) {
        CHECK_MSG(0, "timing setup: %s", err.message);
        goto done;
    }
    fh_rng rng = f->rng;
    for (int it = 0; it < 3; it++) {
        double loss;
        CHECK_MSG(fh_gpu_dqn_collect_resident(c, d_qnet, fh_gpu_curiosity_params(g), EPSILON,
                                              NULL, &err) == FH_OK, "%s", err.message);
        fh_dqn_device_batch d = fh_gpu_dqn_collector_batch(c);
        CHECK_MSG(fh_gpu_curiosity_fit(g, d.states, d.actions, d.exposures, d.bars,
                                       fh_gpu_dqn_collector_market_features(c), n, &rng, &loss,
                                       &err) == FH_OK, "%s", err.message);
        long long steps = cfg.curiosity_epochs * ((n + minibatch - 1) / minibatch);
        printf("timing: fit %d of %lld rows (%d epoch, minibatch %d): %.2f ms, %.1f us a "
               "step, loss %.6g\n", it + 1, (long long)n, cfg.curiosity_epochs, minibatch,
               (double)fh_gpu_curiosity_last_ms(g),
               1e3 * fh_gpu_curiosity_last_ms(g) / (double)steps, loss);
    }
done:
    cudaFree(d_qnet);
    fh_gpu_curiosity_destroy(g);
    fh_gpu_dqn_collector_destroy(c);
}

/* ---- the cases ---- */

/* A GPU case: g_dev, the fixture and its collection, then run(&f); skipped without a GPU. */
static void on_gpu(void (*run)(const fixture *f))
{
    fh_error err;
    if (fh_device_select("auto", &g_dev, &err) != FH_OK || !g_dev.use_gpu) {
        fh_test_case_skip("no CUDA device: the GPU curiosity fit needs a GPU (runs in "
                          "scripts/gpu-check.sh)");
        return;
    }
    fixture f;
    fh_status st = fixture_init(&f, &err);
    if (st == FH_OK)
        st = fixture_collect(&f, &err);
    CHECK_MSG(st == FH_OK, "%s", err.message);
    if (st == FH_OK)
        run(&f);
    fixture_free(&f);
}

static void run_fit(const fixture *f)
{
    const int64_t n = (int64_t)N_EPISODES * N_STEPS;
    compare_fit(f, &f->cfg, n, "(a) 1 epoch x 8 of 512");
    fh_train_config tail = f->cfg;
    tail.minibatch = 500;
    tail.curiosity_epochs = 2;
    compare_fit(f, &tail, n, "(b) 2 epochs x 9 of 500 (tail 96)");
    compare_fit(f, &f->cfg, 300, "(c) 300 rows, minibatch 512");
}

static void run_timing(const fixture *f)
{
    time_fit(f, 512);
    time_fit(f, 16384);
}

static void case_fit(void)
{
    on_gpu(run_fit);
}

static void case_nan_state(void)
{
    on_gpu(test_nan_state);
}

static void case_resident_collection(void)
{
    on_gpu(test_resident_collection);
}

static void case_timing(void)
{
    on_gpu(run_timing);
}

static const fh_test_case CASES[] = {
    {"program_entries", test_program_entries},
    {"fit", case_fit},
    {"nan_state", case_nan_state},
    {"resident_collection", case_resident_collection},
    {"timing", case_timing},
};
FH_TEST_CASES_MAIN(CASES)
