/* test_nvrtc_common.c — the shared environment header is valid device code (issue 3).
 *
 * 1. fh_nvrtc_compile on ppo_experience_kernel.cu (common header + kernel, as at run
 *    time) gives PTX for compute_90.
 * 2. A test kernel of our own that calls every device function, compiled with NVRTC
 *    directly (common header text from the embedded sources, the public headers it
 *    includes, "foxhunt/shapes.h" and "foxhunt/env_types.h", as named headers): PTX for
 *    compute_90 with the entry, no warnings in the log.
 * Neither needs a GPU. 3. When a CUDA device is present, the test kernel runs and its
 * episodes are compared with the same episodes stepped by the C build of the header:
 * identical random draws and actions, rng states, barrier events and dones; portfolio
 * within 1e-9 relative; rewards within 1e-4 (SPEC §9). */
#include <cuda_runtime.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedded_sources.h"
#include "cuda/nvrtc_compile.h"
#include "env/common_device_functions.cuh"
#include "foxhunt/env.h"
#include "test_util.h"

#define N_EP 64
#define N_STEPS 300
#define N_BARS 1000

/* Every device function is called here; the kernel steps n episodes for `steps`
 * steps with uniform random actions from each episode's own stream. */
static const char *k_test_kernel =
    "extern \"C\" __global__ void fh_test_env_kernel(fh_env_config cfg, fh_env_market m,\n"
    "    fh_episode_state *eps, const float *cur_w, float *rewards, int *actions,\n"
    "    int *dones, int *hits, int n, int steps, unsigned long long seed, float *probe)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    fh_episode_state ep = eps[i];\n"
    "    env_episode_init(&cfg, &m, &ep, seed, (unsigned long long)i);\n"
    "    float state[FH_STATE_DIM];\n"
    "    for (int t = 0; t < steps; t++) {\n"
    "        env_observe(&cfg, &m, &ep, state);\n"
    "        int a = rng_uniform_int(&ep.rng, FH_N_ACTIONS);\n"
    "        fh_step_result r;\n"
    "        env_step(&cfg, &m, &ep, a, &r);\n"
    "        const float *next = m.features + (long long)ep.bar * FH_N_MARKET_FEATURES;\n"
    "        float mse = curiosity_inference(cur_w, state, a, r.exposure, next);\n"
    "        env_add_bonus(&ep, &r, curiosity_bonus(&cfg, mse));\n"
    "        rewards[i * steps + t] = r.reward;\n"
    "        actions[i * steps + t] = a;\n"
    "        dones[i * steps + t] = r.done + 2 * r.terminal;\n"
    "        hits[i * steps + t] = r.barrier_hit + 4 * r.reversal;\n"
    "        if (r.done) env_episode_reset(&cfg, &m, &ep);\n"
    "    }\n"
    "    eps[i] = ep;\n"
    "    if (i == 0) {\n"
    "        fh_rng g; rng_seed(&g, seed, 1000ULL);\n"
    "        probe[0] = gpu_random(&g);\n"
    "        probe[1] = (float)pcg32(&g);\n"
    "        probe[2] = leaky_relu(-2.0f, 0.1f);\n"
    "        float w[4] = {1.0f, -2.0f, 0.5f, 2.0f}, b[2] = {0.0f, -1.0f}, x[2] = {1.0f, 1.0f};\n"
    "        float o[2];\n"
    "        matvec_leaky_relu(o, w, b, x, 2, 2, FH_MATVEC_LEAKY_RELU, 0.1f); probe[3] = o[0] + o[1];\n"
    "        matvec_linear(o, w, b, x, 2, 2); probe[4] = o[1];\n"
    "        probe[5] = action_to_exposure(7) + action_to_urgency(7) + 1000.0f * action_to_tx_cost(7, &cfg);\n"
    "        fh_barrier bar; barrier_init(&bar, 100.0f, 0.01f, 0, -1, &cfg);\n"
    "        probe[6] = (float)barrier_check(&bar, 97.0f, 1, &cfg);\n"
    "        barrier_reset(&bar); probe[7] = bar.direction;\n"
    "        fh_diversity d; diversity_reset(&d);\n"
    "        float pen = 0.0f;\n"
    "        for (int k = 0; k < 30; k++) pen = diversity_entropy(&d, k % 2, &cfg);\n"
    "        probe[8] = pen;\n"
    "        probe[9] = (float)env_sample_start_bar(&cfg, &m, &g);\n"
    "    }\n"
    "}\n";

static int ptx_has_entry(const char *ptx, const char *name)
{
    char needle[128];
    snprintf(needle, sizeof needle, ".entry %s", name);
    return strstr(ptx, needle) != NULL;
}

#define MAX_PUBLIC_HEADERS 16

/* Compiles common header + k_test_kernel; returns malloc'd PTX or NULL. */
static char *compile_test_kernel(int fmad)
{
    const fh_embedded_source *common = fh_embedded_source_find("common_device_functions.cuh");
    CHECK(common != NULL && fh_embedded_source_find("foxhunt/shapes.h") != NULL &&
          fh_embedded_source_find("foxhunt/env_types.h") != NULL);
    if (!common)
        return NULL;
    /* the headers the common header includes, named as fh_nvrtc_compile names them:
     * the public ones by their path under include/ ("foxhunt/shapes.h",
     * "foxhunt/env_types.h"), the shared device code by base name ("obs_noise.cuh") */
    const char *hdr_text[MAX_PUBLIC_HEADERS];
    const char *hdr_name[MAX_PUBLIC_HEADERS];
    int n_hdr = 0;
    for (const fh_embedded_source *s = fh_embedded_sources; s->path; s++) {
        int pub = strncmp(s->path, "include/", 8) == 0;
        if (!pub && strncmp(s->path, "src/env/", 8) != 0)
            continue;
        CHECK(n_hdr < MAX_PUBLIC_HEADERS);
        if (n_hdr == MAX_PUBLIC_HEADERS)
            return NULL;
        hdr_text[n_hdr] = s->text;
        hdr_name[n_hdr++] = s->path + 8; /* past "include/" or "src/env/" */
    }
    size_t klen = strlen(k_test_kernel);
    char *text = malloc(common->size + klen + 2);
    memcpy(text, common->text, common->size);
    text[common->size] = '\n';
    memcpy(text + common->size + 1, k_test_kernel, klen + 1);
    nvrtcProgram prog;
    char *ptx = NULL;
    if (nvrtcCreateProgram(&prog, text, "test_env_kernel.cu", n_hdr, hdr_text, hdr_name) !=
        NVRTC_SUCCESS) {
        CHECK_MSG(0, "nvrtcCreateProgram failed");
        free(text);
        return NULL;
    }
    const char *opts[3] = {"--gpu-architecture=compute_90", "--std=c++17",
                           fmad ? "--fmad=true" : "--fmad=false"};
    nvrtcResult rc = nvrtcCompileProgram(prog, 3, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    char *log = malloc(log_size + 1);
    nvrtcGetProgramLog(prog, log);
    log[log_size] = '\0';
    CHECK_MSG(rc == NVRTC_SUCCESS, "NVRTC: %s\n%s", nvrtcGetErrorString(rc), log);
    CHECK_MSG(strstr(log, "warning") == NULL, "NVRTC warnings:\n%s", log);
    if (rc == NVRTC_SUCCESS) {
        size_t n = 0;
        nvrtcGetPTXSize(prog, &n);
        ptx = malloc(n + 1);
        nvrtcGetPTX(prog, ptx);
        ptx[n] = '\0';
        CHECK_MSG(ptx_has_entry(ptx, "fh_test_env_kernel"), "entry missing from PTX");
    }
    free(log);
    nvrtcDestroyProgram(&prog);
    free(text);
    return ptx;
}

#define CUDA_OK(call)                                                                    \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            CHECK_MSG(0, "%s: %s", #call, cudaGetErrorString(e_));                       \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

static void run_on_device(const char *ptx)
{
    static float close[N_BARS], sigma[N_BARS], feat[N_BARS * FH_N_MARKET_FEATURES];
    static float cur_w[FH_CURIOSITY_N_PARAMS];
    fh_rng g;
    rng_seed(&g, 3u, 3u);
    double p = 100.0;
    for (int i = 0; i < N_BARS; i++) {
        close[i] = (float)p;
        sigma[i] = 0.005f + 0.01f * gpu_random(&g);
        p *= exp(0.02 * (gpu_random(&g) - 0.5));
        for (int j = 0; j < FH_N_MARKET_FEATURES; j++)
            feat[i * FH_N_MARKET_FEATURES + j] = gpu_random(&g) - 0.5f;
    }
    for (int k = 0; k < FH_CURIOSITY_N_PARAMS; k++)
        cur_w[k] = 0.3f * (gpu_random(&g) - 0.5f);
    fh_env_config cfg = fh_env_config_default();
    cfg.horizon = 64;
    cfg.max_hold = 10;
    const unsigned long long seed = 777u;

    size_t nt = (size_t)N_EP * N_STEPS;
    float *rew = malloc(nt * sizeof(float)), *rew_cpu = malloc(nt * sizeof(float));
    int *act = malloc(nt * sizeof(int)), *done_ = malloc(nt * sizeof(int));
    int *hit = malloc(nt * sizeof(int));
    fh_episode_state *eps = calloc(N_EP, sizeof *eps);
    float probe[10] = {0};
    cudaLibrary_t lib = NULL;
    float *d_close = NULL, *d_sigma = NULL, *d_feat = NULL, *d_cur = NULL, *d_rew = NULL;
    float *d_probe = NULL;
    int *d_act = NULL, *d_done = NULL, *d_hit = NULL;
    fh_episode_state *d_eps = NULL;

    CUDA_OK(cudaLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    cudaKernel_t kernel;
    CUDA_OK(cudaLibraryGetKernel(&kernel, lib, "fh_test_env_kernel"));
    CUDA_OK(cudaMalloc((void **)&d_close, sizeof close));
    CUDA_OK(cudaMalloc((void **)&d_sigma, sizeof sigma));
    CUDA_OK(cudaMalloc((void **)&d_feat, sizeof feat));
    CUDA_OK(cudaMalloc((void **)&d_cur, sizeof cur_w));
    CUDA_OK(cudaMalloc((void **)&d_rew, nt * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_act, nt * sizeof(int)));
    CUDA_OK(cudaMalloc((void **)&d_done, nt * sizeof(int)));
    CUDA_OK(cudaMalloc((void **)&d_hit, nt * sizeof(int)));
    CUDA_OK(cudaMalloc((void **)&d_probe, sizeof probe));
    CUDA_OK(cudaMalloc((void **)&d_eps, N_EP * sizeof *eps));
    CUDA_OK(cudaMemcpy(d_close, close, sizeof close, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_sigma, sigma, sizeof sigma, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_feat, feat, sizeof feat, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_cur, cur_w, sizeof cur_w, cudaMemcpyHostToDevice));
    fh_env_market dm = {d_feat, d_close, d_sigma, N_BARS, 0, NULL};
    int n = N_EP, steps = N_STEPS;
    unsigned long long s = seed;
    void *args[] = {&cfg, &dm, &d_eps, &d_cur, &d_rew, &d_act, &d_done, &d_hit,
                    &n, &steps, &s, &d_probe};
    dim3 grid = {1, 1, 1}, block = {N_EP, 1, 1};
    CUDA_OK(cudaLaunchKernel((const void *)kernel, grid, block, args, 0, 0));
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(rew, d_rew, nt * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(act, d_act, nt * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(done_, d_done, nt * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(hit, d_hit, nt * sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(eps, d_eps, N_EP * sizeof *eps, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(probe, d_probe, sizeof probe, cudaMemcpyDeviceToHost));

    /* the same episodes on the CPU, first mismatch printed */
    {
        fh_env_market m = {feat, close, sigma, N_BARS, 0, NULL};
        int mism = 0;
        double max_rew_diff = 0.0;
        for (int i = 0; i < N_EP && !mism; i++) {
            fh_episode_state ep;
            env_episode_init(&cfg, &m, &ep, seed, (unsigned long long)i);
            float state[FH_STATE_DIM];
            for (int t = 0; t < N_STEPS; t++) {
                env_observe(&cfg, &m, &ep, state);
                int a = rng_uniform_int(&ep.rng, FH_N_ACTIONS);
                fh_step_result r;
                env_step(&cfg, &m, &ep, a, &r);
                const float *next = m.features + (size_t)ep.bar * FH_N_MARKET_FEATURES;
                float mse = curiosity_inference(cur_w, state, a, r.exposure, next);
                env_add_bonus(&ep, &r, curiosity_bonus(&cfg, mse));
                size_t k = (size_t)i * N_STEPS + (size_t)t;
                rew_cpu[k] = r.reward;
                double d = fabs((double)rew[k] - (double)r.reward);
                max_rew_diff = d > max_rew_diff ? d : max_rew_diff;
                if (act[k] != a || done_[k] != r.done + 2 * r.terminal ||
                    hit[k] != r.barrier_hit + 4 * r.reversal || d > 1e-4) {
                    fprintf(stderr, "CPU/GPU mismatch: episode %d step %d: action %d/%d "
                            "done %d/%d hit %d/%d reward %.9g/%.9g\n", i, t, act[k], a,
                            done_[k], r.done + 2 * r.terminal, hit[k],
                            r.barrier_hit + 4 * r.reversal, rew[k], r.reward);
                    mism = 1;
                    break;
                }
                if (r.done)
                    env_episode_reset(&cfg, &m, &ep);
            }
            if (!mism) {
                mism |= ep.rng.state != eps[i].rng.state || ep.bar != eps[i].bar;
                mism |= !fh_close(eps[i].cash, ep.cash, 1e-9 * cfg.initial_equity, 1e-9);
                mism |= !fh_close(eps[i].units, ep.units, 1e-12, 1e-9);
                if (mism)
                    fprintf(stderr, "CPU/GPU final state mismatch in episode %d\n", i);
            }
        }
        CHECK_MSG(!mism, "CPU and GPU trajectories differ");
        printf("device run: %d episodes x %d steps match; max |reward diff| %.3g\n", N_EP,
               N_STEPS, max_rew_diff);
        /* the probe values, against the C build */
        fh_rng h;
        rng_seed(&h, seed, 1000u);
        CHECK(probe[0] == gpu_random(&h));
        CHECK(probe[1] == (float)pcg32(&h));
        CHECK_CLOSE(probe[2], -0.2, 1e-7, 0);
        CHECK_CLOSE(probe[3], -0.1 + 1.5, 1e-6, 0);
        CHECK_CLOSE(probe[4], 1.5, 1e-6, 0);
        CHECK_CLOSE(probe[5], -0.75 + 0.6 + 1000.0 * (1e-4 + 5e-4 * 0.6), 1e-5, 0);
        CHECK(probe[6] == (float)FH_BARRIER_PROFIT_TAKE && probe[7] == 0.0f);
        CHECK_CLOSE(probe[8], -0.01 * (1.0 - log(2.0)), 1e-7, 0);
        CHECK(probe[9] == (float)env_sample_start_bar(&cfg, &m, &h));
    }
done:
    cudaFree(d_close);
    cudaFree(d_sigma);
    cudaFree(d_feat);
    cudaFree(d_cur);
    cudaFree(d_rew);
    cudaFree(d_act);
    cudaFree(d_done);
    cudaFree(d_hit);
    cudaFree(d_probe);
    cudaFree(d_eps);
    if (lib)
        cudaLibraryUnload(lib);
    free(rew);
    free(rew_cpu);
    free(act);
    free(done_);
    free(hit);
    free(eps);
}

int main(void)
{
    /* 1. the run-time path: common header + the PPO kernel file */
    fh_nvrtc_output out;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_nvrtc_compile("ppo_experience_kernel.cu", "compute_90", NULL, 0, &out,
                                    &err);
    CHECK_MSG(st == FH_OK, "%s", err.message);
    if (st == FH_OK) {
        CHECK(out.size > 0 && strstr(out.image, ".version") != NULL);
        CHECK_MSG(strstr(out.log, "warning") == NULL, "NVRTC warnings:\n%s", out.log);
        fh_nvrtc_output_free(&out);
    }

    /* 2. our kernel calling every device function */
    char *ptx = compile_test_kernel(1);
    free(ptx);
    ptx = compile_test_kernel(0);

    /* 3. on a device, when there is one */
    int n_dev = 0;
    if (ptx && cudaGetDeviceCount(&n_dev) == cudaSuccess && n_dev > 0)
        run_on_device(ptx);
    else
        printf("note: no CUDA device: compile checks only\n");
    free(ptx);
    return fh_test_finish();
}
