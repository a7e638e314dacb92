/* test_dqn_stepped.c — the DQN/PQN collection's stepped mapping (dqn_observe_kernel,
 * the Q forward as matmuls, dqn_step_kernel; gpu_dqn_collector.c) against the plain
 * reference kernel (issue 18).
 *
 * On every machine: dqn_experience_kernel.cu compiles to PTX for sm_90 with the
 * stepped mapping's entry points in it.
 *
 * With a GPU (skips, 77, without one), for the Q-network without LayerNorm (DQN) and
 * with it (PQN, gammas and betas drawn away from 1 and 0), random weights: two
 * collectors from the same seed, one reference, one fast (stepped), over three
 * consecutive collections at epsilon 0.2 with short episodes (resets), the weights
 * changed between collections and the last one read from another device copy (the
 * graph is captured again). Both run the same environment code; only Q's sums run in
 * another order (cuBLAS's fp32 matmuls against a thread's loop), so:
 *  - Q(s, a) agrees to 1e-4 relative wherever the two episodes have not parted;
 *  - an episode's transitions (states, next states, actions, rewards, flags, bars) are
 *    bit-identical up to its first differing action, which only a near tie of two
 *    Q-values can cause: at most 2% of the episodes may part (none did on the H200).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cuda/gpu_dqn_collector.h"
#include "cuda/nvrtc_compile.h"
#include "env/dqn_device_functions.cuh"
#include "foxhunt/device.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define N 300 /* not a multiple of a block */
#define L 40
#define ROUNDS 3

static void test_compiles(void)
{
    const char *const opts[] = {"--fmad=false"};
    fh_nvrtc_output out;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_nvrtc_compile("dqn_experience_kernel.cu", "compute_90", opts, 1, &out, &err);
    CHECK_MSG(st == FH_OK, "NVRTC: %s", err.message);
    if (st != FH_OK)
        return;
    const char *entries[] = {"dqn_experience_kernel", "dqn_observe_kernel", "dqn_step_kernel"};
    for (int e = 0; e < 3; e++) {
        char needle[64];
        snprintf(needle, sizeof needle, ".entry %s(", entries[e]);
        CHECK_MSG(strstr(out.image, needle) != NULL, "no entry %s in the PTX", entries[e]);
    }
    fh_nvrtc_output_free(&out);
}

static double rel(double a, double b)
{
    return fabs(a - b) / (1.0 + fabs(b));
}

/* Row i of both batches: the same transition, bit for bit. */
static int same_row(const fh_transition_batch *a, const fh_transition_batch *b, size_t i)
{
    return memcmp(a->states + i * FH_STATE_DIM, b->states + i * FH_STATE_DIM,
                  FH_STATE_DIM * sizeof(float)) == 0 &&
           memcmp(a->next_states + i * FH_STATE_DIM, b->next_states + i * FH_STATE_DIM,
                  FH_STATE_DIM * sizeof(float)) == 0 &&
           a->actions[i] == b->actions[i] && a->rewards[i] == b->rewards[i] &&
           a->terminal[i] == b->terminal[i] && a->truncated[i] == b->truncated[i] &&
           a->bars[i] == b->bars[i] && a->exposures[i] == b->exposures[i];
}

/* Random weights: orthogonal layers, and for PQN LayerNorm gains in [0.5, 1.5] and
 * shifts in [-0.3, 0.3] (the fresh 1 and 0 would not test them). */
static void random_qnet(fh_mlp *q, int layer_norm, uint64_t seed)
{
    fh_mlp_init_orthogonal(q, seed);
    if (!layer_norm)
        return;
    const fh_net_desc *d = q->desc;
    const fh_tensor_desc *t = q->tensors;
    uint64_t s = seed * 7919 + 1;
    for (int l = 0; l < d->n_layers - 1; l++) {
        int first = fh_net_layer_tensor(d, l);
        for (int k = 2; k < 4; k++)
            for (size_t j = 0; j < t[first + k].numel; j++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                double u = (double)(s >> 11) / 9007199254740992.0;
                q->params[t[first + k].offset + j] = k == 2 ? (float)(0.5 + u) : (float)(0.6 * u - 0.3);
            }
    }
}

static void test_stepped(const fh_device_info *dev, int layer_norm)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    cfg.synthetic_bars = 4000;
    cfg.env.horizon = 30;
    fh_run_data data;
    fh_mlp q, curiosity;
    fh_error err;
    CHECK(fh_run_data_load(&data, &cfg, NULL, &err) == FH_OK);
    CHECK(fh_mlp_init(&q, layer_norm ? FH_NET_PQN : FH_NET_QNET, &err) == FH_OK);
    CHECK(fh_mlp_init(&curiosity, FH_NET_CURIOSITY, &err) == FH_OK);
    random_qnet(&q, layer_norm, 31 + (uint64_t)layer_norm);
    fh_mlp_init_orthogonal(&curiosity, 32);
    fh_market_view view = fh_market_view_of(&data.market, FH_SPLIT_TRAIN);
    fh_gpu_dqn_collector *ref = NULL, *fast = NULL;
    CHECK_MSG(fh_gpu_dqn_collector_create_kernel(&ref, dev, N, L, &cfg.env, &view, 5, layer_norm,
                                                 "reference", &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_gpu_dqn_collector_create_kernel(&fast, dev, N, L, &cfg.env, &view, 5, layer_norm,
                                                 "fast", &err) == FH_OK, "%s", err.message);
    CHECK(ref && fh_gpu_dqn_collector_plan(ref)->mapping == FH_DQN_PLAIN);
    CHECK(fast && fh_gpu_dqn_collector_plan(fast)->mapping == FH_DQN_STEPPED);
    fh_transition_batch a, b;
    CHECK(fh_transition_batch_alloc(&a, N, L, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&b, N, L, &err) == FH_OK);
    int parted[N] = {0}; /* 1: this episode's actions differed once */
    float *d_q = NULL, *d_cur = NULL;
    double worst_q = 0;
    long long compared = 0;
    for (int round = 0; ref && fast && round < ROUNDS; round++) {
        if (round > 0) /* new weights: the graph reads them at launch */
            for (size_t j = 0; j < q.n_params; j += 7)
                q.params[j] *= 0.9f;
        CHECK_MSG(fh_gpu_dqn_collect(ref, q.params, q.n_params, curiosity.params, 0.2f, &a,
                                     &err) == FH_OK, "%s", err.message);
        if (round < ROUNDS - 1) {
            CHECK_MSG(fh_gpu_dqn_collect(fast, q.params, q.n_params, curiosity.params, 0.2f, &b,
                                         &err) == FH_OK, "%s", err.message);
        } else { /* the weights at other addresses: captured again */
            CHECK(cudaMalloc((void **)&d_q, q.n_params * sizeof(float)) == cudaSuccess);
            CHECK(cudaMalloc((void **)&d_cur, curiosity.n_params * sizeof(float)) == cudaSuccess);
            CHECK(cudaMemcpy(d_q, q.params, q.n_params * sizeof(float), cudaMemcpyHostToDevice) ==
                  cudaSuccess);
            CHECK(cudaMemcpy(d_cur, curiosity.params, curiosity.n_params * sizeof(float),
                             cudaMemcpyHostToDevice) == cudaSuccess);
            CHECK_MSG(fh_gpu_dqn_collect_resident(fast, d_q, d_cur, 0.2f, &b, &err) == FH_OK, "%s",
                      err.message);
        }
        int bad_rows = 0;
        for (int n = 0; n < N; n++)
            for (int t = 0; t < L && !parted[n]; t++) {
                size_t i = (size_t)n * L + t;
                double d = rel(b.q_taken[i], a.q_taken[i]);
                if (a.actions[i] != b.actions[i]) {
                    parted[n] = 1; /* from here the two episodes differ */
                    continue;
                }
                worst_q = d > worst_q || d != d ? d : worst_q;
                compared++;
                bad_rows += !same_row(&a, &b, i);
            }
        int n_parted = 0;
        for (int n = 0; n < N; n++)
            n_parted += parted[n];
        printf("%s round %d: %lld steps compared, %d not bit-identical, worst Q relative %.2g, "
               "%d of %d episodes parted\n", layer_norm ? "PQN" : "DQN", round, compared, bad_rows,
               worst_q, n_parted, N);
        CHECK(bad_rows == 0);
        CHECK(worst_q <= 1e-4);
        CHECK(n_parted * 50 <= N);
    }
    CHECK(compared >= (long long)N * L * 2); /* most steps were compared */
    cudaFree(d_q);
    cudaFree(d_cur);
    fh_gpu_dqn_collector_destroy(ref);
    fh_gpu_dqn_collector_destroy(fast);
    fh_transition_batch_free(&a);
    fh_transition_batch_free(&b);
    fh_mlp_free(&q);
    fh_mlp_free(&curiosity);
    fh_run_data_free(&data);
}

int main(void)
{
    test_compiles();
    fh_device_info dev;
    fh_error err;
    if (fh_device_select("auto", &dev, &err) != FH_OK || !dev.use_gpu) {
        if (fh_test_failed == 0)
            fh_test_skip("no CUDA device: the stepped DQN collection against the plain kernel "
                         "needs a GPU (runs in scripts/gpu-check.sh)");
        return fh_test_finish();
    }
    test_stepped(&dev, 0);
    test_stepped(&dev, 1);
    return fh_test_finish();
}
