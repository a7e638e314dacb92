/* gpu_update_engine.h — the machinery the three device updates share (gpu_ppo_update.c,
 * gpu_q_update.c, gpu_curiosity.c): the NVRTC module and its kernel table, the one stream
 * a run is enqueued on and the events around it, checked kernel launches, the CUDA graphs
 * that steps are captured into and replayed from, the copies of a network's params and
 * Adam moments, and the optimiser's step over one parameter set (grad_sumsq_kernel then
 * adam_kernel: adam.cu's global-norm clip and Adam).
 *
 * What a step is, which graphs a module keeps and when it captures them again stay the
 * module's: the engine enqueues what it is told, in the order it is told, on its stream,
 * so a module on it launches the same kernels with the same arguments in the same order
 * as one that did this itself. Every CUDA call is checked (cuda_check.h); a failed launch
 * names its kernel. Available when FH_HAVE_CUDA. */
#ifndef FOXHUNT_CUDA_GPU_UPDATE_ENGINE_H
#define FOXHUNT_CUDA_GPU_UPDATE_ENGINE_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "cuda/cuda_module.h"
#include "cuda/kernels/update_args.h"
#include "foxhunt/device.h"
#include "foxhunt/nn.h"

#define FH_UPDATE_ENGINE_MAX_KERNELS 20
#define FH_UPDATE_ENGINE_MAX_GRAPHS 4

typedef struct {
    fh_cuda_module module;
    const char *const *names;      /* the module's entry points (a static table), by id */
    int n_kernels;
    cudaKernel_t k[FH_UPDATE_ENGINE_MAX_KERNELS];
    cudaStream_t stream;           /* non-blocking: a run's steps, copies and replays */
    cudaEvent_t ev_begin, ev_end;  /* around a run */
    cudaGraphExec_t graphs[FH_UPDATE_ENGINE_MAX_GRAPHS]; /* slots the module numbers */
    float last_ms;                 /* device milliseconds of the last run */
    int pdl;                       /* launches with programmatic dependent launch
                                      (pdl_launch.h); 0 after init, set by the module */
} fh_update_engine;

/* On device dev: kernel_file compiled (or loaded from the cache) with options, the
 * entry points names[0 .. n_kernels) looked up (kernel id i is names[i]; the table must
 * outlive the engine), the stream and the two timing events created. On failure the
 * engine is freed. */
fh_status fh_update_engine_init(fh_update_engine *e, const fh_device_info *dev,
                                const char *kernel_file, const char *const *options,
                                int n_options, const char *const *names, int n_kernels,
                                fh_error *err);
/* A module's destroy begins with stop (waits for the stream, destroys the graphs: they
 * name the module's buffers and events, freed next) and ends with free (the events, the
 * stream, the module). Both are safe on a zeroed or half-built engine, and again. */
void fh_update_engine_stop(fh_update_engine *e);
void fh_update_engine_free(fh_update_engine *e);

/* Kernel `kernel` of the table on the stream, grid x block threads, one argument struct
 * (by value: `void *params[] = {args}`), then the launch-error check. */
fh_status fh_update_engine_launch(fh_update_engine *e, int kernel, unsigned grid,
                                  unsigned block, void *args, fh_error *err);
/* The same on another stream (a parallel branch of the step's graph). */
fh_status fh_update_engine_launch_on(fh_update_engine *e, cudaStream_t stream, int kernel,
                                     unsigned grid, unsigned block, void *args, fh_error *err);

/* One parameter set's optimiser: a (4, n) buffer, params | grads | m | v (nn.h's
 * layout, so the norm and Adam are one pass each), its settings and launch shapes. */
typedef struct {
    int sumsq_kernel, adam_kernel;    /* grad_sumsq_kernel's and adam_kernel's ids */
    float *mem;
    long long n;
    double *partials;                 /* (sumsq_blocks): the squared norm's partial sums */
    int sumsq_blocks, reduce_threads; /* grad_sumsq_kernel's grid and block */
    int adam_grid, adam_threads;      /* adam_kernel's */
    fh_update_state *state;           /* the phase adam_kernel reads: apply, step, lr */
    int curiosity;                    /* which phase of *state: 0 ppo, 1 curiosity */
    double max_norm;                  /* the global-norm clip; INFINITY: none */
    float beta1, beta2, eps;
    float weight_decay;               /* AdamW's decoupled decay; 0: plain Adam */
    double *records;                  /* the step's row takes the norm; NULL: no record */
    unsigned short *params16;         /* the bf16 update's weight copy (n), or NULL */
    fh_bf16_padded padded[FH_ADAM_PADDED]; /* with params16: matrices it also keeps padded */
    int n_padded;
} fh_update_optimizer;

/* grad_sumsq_kernel over o's gradients, then adam_kernel over its params. */
fh_status fh_update_engine_optimizer_step(fh_update_engine *e, const fh_update_optimizer *o,
                                          fh_error *err);

/* One step of `rows` rows enqueued on the engine's stream (ctx: the module). */
typedef fh_status (*fh_update_step_fn)(void *ctx, int rows, fh_error *err);

/* `steps` steps of `rows` rows captured into graph slot `slot` (empty: the caller drops
 * graphs before capturing again). A step that fails ends the capture and leaves the
 * slot empty. */
fh_status fh_update_engine_capture(fh_update_engine *e, int slot, fh_update_step_fn step,
                                   void *ctx, int steps, int rows, fh_error *err);
/* Every slot's graph destroyed and the slots emptied. */
void fh_update_engine_drop_graphs(fh_update_engine *e);
/* Slot `slot`'s graph launched `times` times. */
fh_status fh_update_engine_replay(fh_update_engine *e, int slot, long long times,
                                  fh_error *err);
/* An epoch from its graphs: slot `full` `launches` times, then slot `tail` once; a slot
 * left empty (no full steps, no short last step) is skipped. */
fh_status fh_update_engine_replay_epoch(fh_update_engine *e, int full, int launches,
                                        int tail, fh_error *err);

/* A run's start: ev_begin, then state_bytes of h_state up into d_state and, when d_keys
 * is not NULL, key_bytes of h_keys into d_keys (h_*: page-locked). */
fh_status fh_update_engine_begin(fh_update_engine *e, void *d_state, const void *h_state,
                                 size_t state_bytes, void *d_keys, const void *h_keys,
                                 size_t key_bytes, fh_error *err);
/* A run's end: `bytes` of d_src back into h_dst (the summary, or the state), ev_end, the
 * wait for the stream, and last_ms. */
fh_status fh_update_engine_end(fh_update_engine *e, void *h_dst, const void *d_src,
                               size_t bytes, fh_error *err);

/* A network's params, m and v: m->n_params floats at `offset` in regions 0, 2 and 3 of
 * the (4, n) buffer mem, up to the device (upload) or back into m, on the stream; the
 * caller waits. */
fh_status fh_update_engine_copy_net(fh_update_engine *e, float *mem, long long n,
                                    long long offset, fh_mlp *m, int upload, fh_error *err);

#endif
