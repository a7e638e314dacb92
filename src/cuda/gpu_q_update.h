/* gpu_q_update.h — the PQN and DQN updates on the GPU (issue 18), the device twin of
 * q_update.c's fh_pqn_update / fh_dqn_update. The Q-network lives on the device
 * between updates (params, grads, Adam m and v in nn.h's layout, one buffer, so
 * clipping and Adam are one pass: adam.cu's kernels), with DQN's target network and
 * replay ring (gpu_replay.h) beside it; the collector reads the params in place
 * (fh_gpu_dqn_collect_device with fh_gpu_q_update_params), and the update reads the
 * collection where it lies (fh_gpu_dqn_collector_batch): no host round trip per
 * iteration but a summary of a few hundred bytes.
 *
 * Semantics are the CPU's, for the same update stream:
 *  - PQN: max_a Q(s', a) over the collection with the network as it is, the Q(lambda)
 *    scan (fh_q_lambda_returns), then `epochs` epochs of minibatches in the keyed order
 *    of minibatch_order.cuh (every epoch's key drawn first, as fh_pqn_update does), each
 *    a step on 0.5 (Q(s, a) - y)^2: gradient / rows, the global-norm clip, Adam;
 *  - DQN: the collection's n-step transitions pushed into the device ring
 *    (fh_replay_push_batch's rules and slots); once it holds learning_starts,
 *    llround(replay_ratio N L) steps, each on `minibatch` slots drawn as
 *    fh_replay_sample draws them (row i of step s is the stream's output s M + i,
 *    reached by PCG32 jump-ahead, so the host's stream ends where the CPU's does), the
 *    Double DQN target with the target network, the Huber loss, Adam, then the target
 *    copied when grad_steps % target_update_every == 0, or Polyak tau every step when
 *    target_update_every is 0 (q_trainer.c's schedule);
 *  - the same failures: a TD loss or gradient norm that is not finite stops the update
 *    before that step's Adam, naming it and its position.
 * Sums run in other orders and the matmuls are cuBLAS's, so results agree with the CPU
 * within tests/dqn/test_gpu_q_update.c's tolerances; on one GPU a run is bit-identical
 * to the next (fixed reduction trees, fixed cuBLAS algorithms). Tensor-core matmuls only
 * when the run's precision is "tf32". Steps are captured into CUDA graphs (as gpu_ppo_update.c
 * does) and replayed; their position lives on the device (q_update_args.h). The
 * curiosity fit stays the caller's (fh_curiosity_fit on the host batch). Available when
 * FH_HAVE_CUDA. */
#ifndef FOXHUNT_CUDA_GPU_Q_UPDATE_H
#define FOXHUNT_CUDA_GPU_Q_UPDATE_H

#include "cuda/gpu_dqn_collector.h"
#include "cuda/gpu_replay.h"
#include "cuda/gpu_update_settings.h"
#include "foxhunt/device.h"
#include "foxhunt/dqn.h"

/* q_update.cu's NVRTC options (the CPU's arithmetic: no fused multiply-adds, IEEE
 * division and square roots) and the entry points gpu_q_update.c launches, for the
 * compile test (tests/dqn/test_dqn_kernel.c). */
#define FH_Q_UPDATE_OPTIONS {"--fmad=false", "--prec-div=true", "--prec-sqrt=true"}
#define FH_Q_UPDATE_ENTRIES                                                                 \
    {"q_gather_kernel", "q_loss_kernel", "q_hidden_forward_kernel",                         \
     "q_hidden_backward_kernel", "q_max_kernel", "q_lambda_kernel", "replay_push_kernel",   \
     "q_sample_kernel", "q_double_dqn_kernel", "q_target_kernel", "q_summary_kernel",       \
     "bias_grad_kernel", "bias_act_kernel", "grad_sumsq_kernel", "adam_kernel"}

typedef struct fh_gpu_q_update fh_gpu_q_update;

/* An update of net (FH_NET_PQN: PQN; FH_NET_QNET: DQN, with its target network and a
 * ring of s.replay_capacity) for collections of n_episodes x n_steps, with s's
 * minibatch, epochs (PQN), n_step, gamma, replay_ratio, learning_starts,
 * target_update_every, tau and precision. */
fh_status fh_gpu_q_update_create(fh_gpu_q_update **out, const fh_device_info *dev,
                                 fh_net_kind net, int n_episodes, int n_steps,
                                 fh_gpu_q_settings s, fh_error *err);
void fh_gpu_q_update_destroy(fh_gpu_q_update *u);

/* The Q-network's params, Adam moments and step, and (DQN) the target's params, host ->
 * device (start, resume) and back (checkpoints, evaluation, tests; the host copies are
 * then checked for NaN and infinities). target NULL (DQN): the target becomes a copy of
 * q on upload, and is not downloaded. */
fh_status fh_gpu_q_update_upload(fh_gpu_q_update *u, const fh_mlp *q, const fh_mlp *target,
                                 fh_error *err);
fh_status fh_gpu_q_update_download(fh_gpu_q_update *u, fh_mlp *q, fh_mlp *target,
                                   fh_error *err);
/* The Q-network's params on the device (FH_NET_QNET's or FH_NET_PQN's layout): the
 * collector's weights. */
const float *fh_gpu_q_update_params(const fh_gpu_q_update *u);

/* PQN: one update (fh_pqn_update) on the collection b. qc: epochs and minibatch as at
 * creation; lr this iteration's. rng: the update's stream, advanced by the epochs' keys.
 * max_steps > 0 runs only that many steps, eagerly (tests); 0 the whole update. */
fh_status fh_gpu_pqn_update_run(fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                                const fh_q_update_config *qc, fh_rng *rng, int max_steps,
                                fh_q_stats *stats, fh_error *err);

/* DQN: one iteration's update, as q_trainer.c's: the push, then, once the ring holds
 * s.learning_starts transitions, llround(replay_ratio N L) steps (none before: stats
 * zero). */
fh_status fh_gpu_dqn_update_run(fh_gpu_q_update *u, const fh_dqn_device_batch *b,
                                const fh_q_update_config *qc, fh_rng *rng, fh_q_stats *stats,
                                fh_error *err);
/* Its two halves. push: b's n-step transitions into the ring (returns once they are
 * in, so the collector may overwrite b). steps: n_steps gradient steps (fh_dqn_update
 * followed by the target schedule), rng advanced by n_steps * minibatch draws. */
fh_status fh_gpu_dqn_push(fh_gpu_q_update *u, const fh_dqn_device_batch *b, fh_error *err);
fh_status fh_gpu_dqn_steps(fh_gpu_q_update *u, long long n_steps, const fh_q_update_config *qc,
                           fh_rng *rng, fh_q_stats *stats, fh_error *err);
/* DQN's gradient steps so far (the target schedule's count; a resume sets it). */
long long fh_gpu_q_update_grad_steps(const fh_gpu_q_update *u);
void fh_gpu_q_update_set_grad_steps(fh_gpu_q_update *u, long long grad_steps);
const fh_gpu_replay *fh_gpu_q_update_ring(const fh_gpu_q_update *u);
/* DQN: the device ring onto a host ring of the same capacity (a checkpoint) and back (a
 * resume). */
fh_status fh_gpu_q_update_download_ring(fh_gpu_q_update *u, fh_replay *out, fh_error *err);
fh_status fh_gpu_q_update_upload_ring(fh_gpu_q_update *u, const fh_replay *in, fh_error *err);

/* ---- for tests and diagnostics (host copies; each waits for the device) ---- */
/* PQN's last max_a Q(s', a) and Q(lambda) returns (N*L each; either may be NULL). */
fh_status fh_gpu_q_update_download_returns(fh_gpu_q_update *u, float *next_max,
                                           float *returns, fh_error *err);
/* The last step's gradient (the params' layout). */
fh_status fh_gpu_q_update_download_grads(fh_gpu_q_update *u, float *grads, fh_error *err);
/* The last step's minibatch: states (rows, 54), actions, targets y, and (DQN) the slots
 * drawn; rows = the minibatch (a tail step's are its first rows). Any may be NULL. */
fh_status fh_gpu_q_update_download_minibatch(fh_gpu_q_update *u, float *states,
                                             int32_t *actions, float *targets,
                                             int32_t *slots, fh_error *err);
/* The last run's records (one row of FH_UREC_COLS doubles per applied step, the columns
 * FH_QREC_* of q_update_args.h), at most max_rows; *n_rows gets how many. */
fh_status fh_gpu_q_update_download_records(fh_gpu_q_update *u, double *records, int max_rows,
                                           int *n_rows, fh_error *err);
/* Device milliseconds of the last run (events around it). */
float fh_gpu_q_update_last_ms(const fh_gpu_q_update *u);

#endif
