/* capi_gpu.c — a foxhunt PPO collection on the GPU from the C API (capi.h), its batch
 * handed out as DLPack tensors that alias the collector's device buffers (issue 21).
 *
 * It drives gpu_ppo_collector (src/cuda) as the trainer does under --device cuda with
 * the GPU update: fh_gpu_ppo_collector_collect_on_device leaves the batch on the device
 * (nothing is downloaded), and fh_gpu_ppo_collector_device_batch / _device_outputs say
 * where it lies. The collector API wants a host batch of N x L for its bookkeeping
 * (its shape is checked and it is page-locked once); nothing is copied into it.
 *
 * Lifetime: each tensor handed out holds a reference to the collector (atomic: a
 * consumer may release it from any thread), so the device buffers outlive the handle
 * until the last consumer calls the tensor's deleter. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi/capi_internal.h"
#include "capi/dlpack_abi.h"
#include "foxhunt/device.h"
#include "foxhunt/nn.h"
#include "foxhunt/rollout.h"
#if FH_HAVE_CUDA
#include <cuda_runtime.h>
#include "cuda/gpu_ppo_collector.h"
#endif

/* the batch's tensors, in fh_api_gpu_tensor_name's order */
static const struct {
    const char *name;
    int is_float;
    int is_state;
} k_tensors[] = {{"states", 1, 1},     {"actions", 0, 0},    {"log_probs", 1, 0},
                 {"values", 1, 0},     {"advantages", 1, 0}, {"returns", 1, 0},
                 {"rewards", 1, 0},    {"dones", 0, 0},      {"exposures", 1, 0},
                 {"bars", 0, 0}};
#define N_TENSORS ((int)(sizeof k_tensors / sizeof k_tensors[0]))

int fh_api_gpu_tensor_count(void)
{
    return N_TENSORS;
}

const char *fh_api_gpu_tensor_name(int i)
{
    return i >= 0 && i < N_TENSORS ? k_tensors[i].name : NULL;
}

int fh_api_gpu_available(char *why, size_t cap)
{
    fh_device_info dev;
    fh_error err;
    fh_error_clear(&err);
    if (fh_device_select("cuda", &dev, &err) == FH_OK && dev.use_gpu)
        return 1;
    if (why && cap)
        snprintf(why, cap, "%s", err.message[0] ? err.message : "no usable CUDA GPU");
    return 0;
}

#if FH_HAVE_CUDA

struct fh_api_gpu_collector {
    fh_api_object obj;
    atomic_int refs;             /* the handle + each tensor not yet released */
    fh_api_market *market;       /* a reference: the device market was built from it */
    fh_train_config cfg;
    fh_device_info dev;
    int n_episodes, n_steps;
    fh_gpu_ppo_collector *gpu;
    fh_mlp actor, critic, curiosity; /* the given params, host side */
    fh_trajectory_batch batch;   /* (N, L): the collector's bookkeeping, never filled */
    int collected;
};

typedef struct {
    fh_dl_managed_tensor managed;
    int64_t shape[3], strides[3];
} dl_tensor;

static void collector_release(fh_api_gpu_collector *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    fh_gpu_ppo_collector_destroy(c->gpu);
    fh_mlp_free(&c->actor);
    fh_mlp_free(&c->critic);
    fh_mlp_free(&c->curiosity);
    fh_trajectory_batch_free(&c->batch);
    if (c->market)
        capi_market_release(c->market);
    free(c);
}

void fh_api_gpu_collector_free(fh_api_gpu_collector *c)
{
    if (!capi_object_of(c, CAPI_GPU_COLLECTOR))
        return;
    capi_object_kill(&c->obj);
    collector_release(c);
}

fh_api_gpu_collector *fh_api_gpu_collector_create(fh_api_market *market,
                                                  const fh_api_config *config, int n_episodes,
                                                  int n_steps, uint64_t seed, const char *kernel,
                                                  char *err, size_t err_cap)
{
    fh_api_market *m = (fh_api_market *)capi_object_of(market, CAPI_MARKET);
    if (!m)
        return capi_fail_out(err, err_cap, "GPU collector: market: %s", fh_api_last_error(NULL));
    const fh_api_config *cfg = NULL;
    if (config && !(cfg = (const fh_api_config *)capi_object_of(config, CAPI_CONFIG)))
        return capi_fail_out(err, err_cap, "GPU collector: config: %s", fh_api_last_error(NULL));
    if (n_episodes < 1 || n_steps < 1)
        return capi_fail_out(err, err_cap, "GPU collector: %d episodes x %d steps; both must "
                             "be >= 1", n_episodes, n_steps);
    fh_api_gpu_collector *c = calloc(1, sizeof *c);
    if (!c)
        return capi_fail_out(err, err_cap, "GPU collector: out of memory");
    capi_object_init(&c->obj, CAPI_GPU_COLLECTOR);
    atomic_init(&c->refs, 1);
    capi_market_retain(m);
    c->market = m;
    c->cfg = cfg ? cfg->cfg : m->cfg;
    c->n_episodes = n_episodes;
    c->n_steps = n_steps;
    fh_error *e = &c->obj.err;
    fh_market_view view;
    fh_env_market env_market;
    fh_status st = fh_device_select("cuda", &c->dev, e);
    if (st == FH_OK)
        st = fh_run_data_train_split(&m->data, &view, &env_market, e);
    if (st == FH_OK && (st = fh_mlp_init(&c->actor, FH_NET_ACTOR, e)) == FH_OK &&
        (st = fh_mlp_init(&c->critic, FH_NET_CRITIC, e)) == FH_OK &&
        (st = fh_mlp_init(&c->curiosity, FH_NET_CURIOSITY, e)) == FH_OK)
        st = fh_trajectory_batch_alloc(&c->batch, n_episodes, n_steps, e);
    if (st == FH_OK)
        st = fh_gpu_ppo_collector_create(&c->gpu, &c->dev, n_episodes, n_steps, &c->cfg.env,
                                         &view, seed, kernel ? kernel : "fast",
                                         c->cfg.precision, NULL, e);
    if (st != FH_OK) {
        capi_error_out(err, err_cap, e);
        capi_object_kill(&c->obj);
        collector_release(c);
        return NULL;
    }
    return c;
}

static fh_status take_params(fh_api_gpu_collector *c, fh_mlp *m, const float *p, int64_t n,
                             const char *what)
{
    if (!p || n != (int64_t)m->n_params)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "GPU collect: the %s's params: %lld "
                            "floats%s; it has %zu (flat, shapes.h's layout)", what,
                            (long long)n, p ? "" : " at NULL", m->n_params);
    char whose[64];
    snprintf(whose, sizeof whose, "GPU collect: the %s's params", what);
    if (capi_params_finite(&c->obj.err, whose, m->desc->kind, p) != FH_OK)
        return FH_ERR_INPUT;
    memcpy(m->params, p, m->n_params * sizeof(float));
    return FH_OK;
}

int fh_api_gpu_collect(fh_api_gpu_collector *collector, const float *actor, int64_t n_actor,
                       const float *critic, int64_t n_critic, const float *curiosity,
                       int64_t n_curiosity)
{
    CAPI_ENTER(fh_api_gpu_collector, c, collector, CAPI_GPU_COLLECTOR);
    fh_status st;
    if ((st = take_params(c, &c->actor, actor, n_actor, "actor")) != FH_OK ||
        (st = take_params(c, &c->critic, critic, n_critic, "critic")) != FH_OK ||
        (st = take_params(c, &c->curiosity, curiosity, n_curiosity, "curiosity model")) != FH_OK)
        return st;
    fh_collect_params p = {&c->actor, &c->critic, &c->curiosity, (float)c->cfg.gamma,
                           (float)c->cfg.gae_lambda};
    st = fh_gpu_ppo_collector_collect_on_device(c->gpu, &p, &c->batch, &c->obj.err);
    if (st == FH_OK)
        c->collected = 1;
    return st;
}

/* Where tensor k of the last collection lies, and its row pitch in elements. */
static const void *tensor_data(const fh_api_gpu_collector *c, int k, int64_t *pitch)
{
    fh_device_batch b;
    const float *features, *rewards;
    const int *actions, *dones;
    const fh_episode_state *episodes;
    fh_gpu_ppo_collector_device_batch(c->gpu, &b, &features);
    fh_gpu_ppo_collector_device_outputs(c->gpu, &rewards, &actions, &dones, &episodes);
    *pitch = k_tensors[k].is_state ? b.states_pitch : 1;
    const void *ptrs[N_TENSORS] = {b.states,     b.actions,  b.log_probs, b.values,
                                   b.advantages, b.returns,  rewards,     dones,
                                   b.exposures,  b.bars};
    return ptrs[k];
}

static int tensor_index(fh_api_gpu_collector *c, const char *name)
{
    for (int k = 0; name && k < N_TENSORS; k++)
        if (strcmp(k_tensors[k].name, name) == 0)
            return k;
    fh_error_set(&c->obj.err, FH_ERR_INPUT, "GPU batch: no tensor \"%.64s\" (states, actions, "
                 "log_probs, values, advantages, returns, rewards, dones, exposures, bars)",
                 name ? name : "(NULL)");
    return -1;
}

static void dl_tensor_delete(fh_dl_managed_tensor *self)
{
    fh_api_gpu_collector *owner = self->manager_ctx;
    free(self); /* the managed struct is the first member of dl_tensor */
    collector_release(owner);
}

int fh_api_gpu_tensor(fh_api_gpu_collector *collector, const char *name, void **managed)
{
    CAPI_ENTER(fh_api_gpu_collector, c, collector, CAPI_GPU_COLLECTOR);
    int k = tensor_index(c, name);
    if (k < 0)
        return FH_API_INPUT;
    if (!managed)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "GPU batch: the output is NULL");
    if (!c->collected)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "GPU batch: nothing collected yet "
                            "(call fh_api_gpu_collect first)");
    dl_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return fh_error_set(&c->obj.err, FH_ERR_FAILURE, "out of memory");
    int64_t pitch, N = c->n_episodes, L = c->n_steps;
    fh_dl_tensor *d = &t->managed.dl_tensor;
    d->data = (void *)tensor_data(c, k, &pitch);
    d->device = (fh_dl_device){FH_DL_CUDA, c->dev.device_index};
    d->dtype = (fh_dl_dtype){(uint8_t)(k_tensors[k].is_float ? FH_DL_FLOAT : FH_DL_INT), 32, 1};
    t->shape[0] = N, t->shape[1] = L, t->shape[2] = FH_STATE_DIM;
    if (k_tensors[k].is_state) { /* (N, L, 54), rows `pitch` floats apart */
        d->ndim = 3;
        t->strides[0] = L * pitch, t->strides[1] = pitch, t->strides[2] = 1;
    } else {
        d->ndim = 2;
        t->strides[0] = L, t->strides[1] = 1;
    }
    d->shape = t->shape;
    d->strides = t->strides;
    t->managed.manager_ctx = c;
    t->managed.deleter = dl_tensor_delete;
    atomic_fetch_add(&c->refs, 1);
    *managed = &t->managed;
    return FH_API_OK;
}

int fh_api_gpu_tensor_to_host(fh_api_gpu_collector *collector, const char *name, void *out,
                              size_t nbytes)
{
    CAPI_ENTER(fh_api_gpu_collector, c, collector, CAPI_GPU_COLLECTOR);
    int k = tensor_index(c, name);
    if (k < 0)
        return FH_API_INPUT;
    if (!c->collected)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "GPU batch: nothing collected yet");
    size_t rows = (size_t)c->n_episodes * (size_t)c->n_steps;
    size_t width = k_tensors[k].is_state ? FH_STATE_DIM : 1;
    if (!out || nbytes != rows * width * 4)
        return fh_error_set(&c->obj.err, FH_ERR_INPUT, "GPU batch \"%s\": %zu bytes asked "
                            "for; it holds %zu", name, nbytes, rows * width * 4);
    int64_t pitch;
    const void *src = tensor_data(c, k, &pitch);
    cudaError_t e = cudaMemcpy2D(out, width * 4, src, (size_t)pitch * 4, width * 4, rows,
                                 cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        return fh_error_set(&c->obj.err, FH_ERR_FAILURE, "%s:%d: cudaMemcpy2D: %s", __FILE__,
                            __LINE__, cudaGetErrorString(e));
    return FH_API_OK;
}

int fh_api_gpu_timing(fh_api_gpu_collector *collector, double *collect_ms, double *total_ms)
{
    CAPI_ENTER(fh_api_gpu_collector, c, collector, CAPI_GPU_COLLECTOR);
    fh_gpu_collect_timing tm = fh_gpu_ppo_collector_timing(c->gpu);
    if (collect_ms)
        *collect_ms = tm.rollout_ms;
    if (total_ms)
        *total_ms = tm.total_ms;
    return FH_API_OK;
}

#else /* a build without the CUDA toolkit: every entry says so */

static const char k_no_cuda[] = "this libfoxhunt was built without the CUDA toolkit: rebuild "
                                "where CMake finds it (docs/PYTHON.md)";

fh_api_gpu_collector *fh_api_gpu_collector_create(fh_api_market *m, const fh_api_config *cfg,
                                                  int n_episodes, int n_steps, uint64_t seed,
                                                  const char *kernel, char *err,
                                                  size_t err_cap)
{
    (void)m, (void)cfg, (void)n_episodes, (void)n_steps, (void)seed, (void)kernel;
    return capi_fail_out(err, err_cap, "GPU collector: %s", k_no_cuda);
}

void fh_api_gpu_collector_free(fh_api_gpu_collector *c)
{
    (void)c;
}

int fh_api_gpu_collect(fh_api_gpu_collector *c, const float *actor, int64_t n_actor,
                       const float *critic, int64_t n_critic, const float *curiosity,
                       int64_t n_curiosity)
{
    (void)c, (void)actor, (void)n_actor, (void)critic, (void)n_critic, (void)curiosity,
        (void)n_curiosity;
    return FH_API_INPUT;
}

int fh_api_gpu_tensor(fh_api_gpu_collector *c, const char *name, void **managed)
{
    (void)c, (void)name, (void)managed;
    return FH_API_INPUT;
}

int fh_api_gpu_tensor_to_host(fh_api_gpu_collector *c, const char *name, void *out,
                              size_t nbytes)
{
    (void)c, (void)name, (void)out, (void)nbytes;
    return FH_API_INPUT;
}

int fh_api_gpu_timing(fh_api_gpu_collector *c, double *collect_ms, double *total_ms)
{
    (void)c, (void)collect_ms, (void)total_ms;
    return FH_API_INPUT;
}

#endif
