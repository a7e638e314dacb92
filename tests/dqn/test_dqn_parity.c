/* test_dqn_parity.c — the DQN/PQN collection on the GPU against the CPU (issue 18):
 * dqn_experience_kernel (NVRTC, --fmad=false) and fh_dqn_collect_cpu run the same
 * dqn_rollout_episode from the same episode seeds and weights; over three consecutive
 * collections (the episodes carry on on each side) at epsilon 0.3, with short
 * episodes so that resets happen, the epsilon-greedy actions and the done flags must be
 * identical, and states, next states, rewards and Q(s, a) equal to 1e-5 relative (they
 * are identical when both compilers round alike). Skips (77) without a CUDA device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu_dqn_collector.h"
#include "env/dqn_device_functions.cuh"
#include "foxhunt/device.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "foxhunt/train_config.h"
#include "test_util.h"

#define N 96
#define L 48

static double worst_float(const float *a, const float *b, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        if (!(d <= w))
            w = d; /* NaN too */
    }
    return w;
}

int main(void)
{
    fh_device_info dev;
    fh_error err;
    if (fh_device_select("auto", &dev, &err) != FH_OK || !dev.use_gpu)
        fh_test_skip("no CUDA device: DQN parity needs a GPU (runs in scripts/gpu-check.sh)");
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    cfg.synthetic_bars = 4000;
    cfg.env.horizon = 30;
    fh_run_data data;
    fh_mlp qnet, curiosity;
    CHECK(fh_run_data_load(&data, &cfg, NULL, &err) == FH_OK);
    CHECK(fh_mlp_init(&qnet, FH_NET_QNET, &err) == FH_OK);
    CHECK(fh_mlp_init(&curiosity, FH_NET_CURIOSITY, &err) == FH_OK);
    fh_mlp_init_orthogonal(&qnet, 21);
    fh_mlp_init_orthogonal(&curiosity, 22);
    fh_market_view view = fh_market_view_of(&data.market, FH_SPLIT_TRAIN);
    fh_env_market market = fh_env_market_from_view(&view);
    fh_episode_state eps[N], gpu_eps[N];
    for (int n = 0; n < N; n++)
        env_episode_init(&cfg.env, &market, &eps[n], 5, (unsigned long long)n);
    fh_gpu_dqn_collector *gpu = NULL;
    CHECK_MSG(fh_gpu_dqn_collector_create(&gpu, &dev, N, L, &cfg.env, &view, 5, 0, &err) == FH_OK,
              "%s", err.message);
    fh_transition_batch cpu_b, gpu_b;
    CHECK(fh_transition_batch_alloc(&cpu_b, N, L, &err) == FH_OK);
    CHECK(fh_transition_batch_alloc(&gpu_b, N, L, &err) == FH_OK);
    const size_t nl = (size_t)N * L;
    for (int round = 0; gpu && round < 3; round++) {
        CHECK(fh_dqn_collect_cpu(qnet.params, 0, curiosity.params, &cfg.env, &market, eps, 0.3f,
                                 &cpu_b, &err) == FH_OK);
        CHECK_MSG(fh_gpu_dqn_collect(gpu, qnet.params, qnet.n_params, curiosity.params, 0.3f,
                                     &gpu_b, &err) == FH_OK, "%s", err.message);
        int actions = memcmp(cpu_b.actions, gpu_b.actions, nl * sizeof(int32_t)) == 0;
        int flags = memcmp(cpu_b.terminal, gpu_b.terminal, nl) == 0 &&
                    memcmp(cpu_b.truncated, gpu_b.truncated, nl) == 0;
        double ws = worst_float(gpu_b.states, cpu_b.states, nl * FH_STATE_DIM);
        double wn = worst_float(gpu_b.next_states, cpu_b.next_states, nl * FH_STATE_DIM);
        double wr = worst_float(gpu_b.rewards, cpu_b.rewards, nl);
        double wq = worst_float(gpu_b.q_taken, cpu_b.q_taken, nl);
        printf("round %d: actions %s, flags %s, worst relative: states %.2g next %.2g rewards "
               "%.2g Q %.2g\n", round, actions ? "identical" : "DIFFER",
               flags ? "identical" : "DIFFER", ws, wn, wr, wq);
        CHECK(actions && flags);
        CHECK(ws <= 1e-5 && wn <= 1e-5 && wr <= 1e-5 && wq <= 1e-5);
    }
    if (gpu) {
        CHECK(fh_gpu_dqn_collector_episodes(gpu, gpu_eps, &err) == FH_OK);
        int same = 1;
        for (int n = 0; n < N; n++)
            same &= gpu_eps[n].bar == eps[n].bar && gpu_eps[n].rng.state == eps[n].rng.state &&
                    gpu_eps[n].episodes_done == eps[n].episodes_done;
        CHECK_MSG(same, "the episodes' bars, random streams or episode counts differ");
    }
    fh_gpu_dqn_collector_destroy(gpu);
    fh_transition_batch_free(&cpu_b);
    fh_transition_batch_free(&gpu_b);
    fh_mlp_free(&qnet);
    fh_mlp_free(&curiosity);
    fh_run_data_free(&data);
    return fh_test_finish();
}
