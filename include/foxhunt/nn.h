/* nn.h — the networks and their math on the CPU (SPEC §4, §6; issue 4).
 *
 * Layout (STYLE habit 5, the contract with the GPU kernels in shapes.h): one flat float
 * buffer per network; per layer in order the weight [out, in] row-major, then the bias
 * [out]; a network with LayerNorm (fh_net_desc.layer_norm, PQN) has after each hidden
 * layer's bias its LayerNorm's gamma [out] then beta [out]. A network's descriptor
 * (fh_net_desc) gives its layer widths, activation, initialisation gains and tensor
 * names; fh_net_tensors() walks it into the tensor table (name, shape, offset) that the
 * checkpoint code and the tests use.
 *
 * fh_mlp owns ONE allocation of 4 * n_params floats: params, grads, Adam m, Adam v, each
 * in that same layout, so the optimiser is one loop over the buffer and a checkpoint is
 * one pass over the table.
 *
 * Conventions (STYLE habit 3): forward and backward of each op side by side, arguments
 * ordered outputs, inputs, sizes; gradients are prefixed d; every backward ACCUMULATES
 * into its output gradients (+=), so callers zero them first (fh_mlp_zero_grad).
 *
 * Determinism: every reduction here runs in a fixed serial order and the matrix products
 * go through OpenBLAS sgemm, which splits work over the rows/columns of the output, not
 * over the summed dimension. With a fixed OpenBLAS thread count (fh_nn_set_threads, or
 * OPENBLAS_NUM_THREADS) results are bit-identical run to run, which resume relies on. */
#ifndef FOXHUNT_NN_H
#define FOXHUNT_NN_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/error.h"
#include "foxhunt/shapes.h"

/* ---- network descriptors ---- */
typedef enum {
    FH_NET_ACTOR = 0,     /* 54 -> 128 -> 64 -> 45, ReLU, raw logits */
    FH_NET_CRITIC = 1,    /* 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1, ReLU */
    FH_NET_CURIOSITY = 2, /* 35 -> 64 -> 32, ReLU hidden */
    FH_NET_QNET = 3,      /* 54 -> 256 -> 128 -> 45, LeakyReLU hidden (SPEC §7, DQN) */
    FH_NET_PQN = 4,       /* FH_NET_QNET with LayerNorm before each hidden activation (PQN) */
    FH_NET_COUNT = 5
} fh_net_kind;

typedef enum {
    FH_ACT_NONE = 0,
    FH_ACT_RELU = 1,
    FH_ACT_LEAKY_RELU = 2
} fh_activation;

#define FH_NN_MAX_LAYERS 8
/* weight and bias per layer, and gamma and beta per LayerNorm */
#define FH_NN_MAX_TENSORS (4 * FH_NN_MAX_LAYERS)
#define FH_NN_MAX_NAME 64
#define FH_QNET_LEAKY_SLOPE 0.01f
/* Q-network parameter count: 54*256+256 + 256*128+128 + 128*45+45 */
#define FH_QNET_N_PARAMS                                                                 \
    (FH_QNET_H1 * FH_STATE_DIM + FH_QNET_H1 + FH_QNET_H2 * FH_QNET_H1 + FH_QNET_H2 +      \
     FH_N_ACTIONS * FH_QNET_H2 + FH_N_ACTIONS) /* 52,781 */
/* PQN Q-network (Gallici et al. 2024): the Q-network's layers with a LayerNorm (gamma,
 * beta) on each hidden layer: h = leaky_relu(LN(W x + b)). */
#define FH_PQN_N_PARAMS (FH_QNET_N_PARAMS + 2 * FH_QNET_H1 + 2 * FH_QNET_H2) /* 53,549 */
#define FH_PQN_LN_EPS 1e-5f /* LayerNorm epsilon (torch.nn.LayerNorm's default) */

typedef struct {
    fh_net_kind kind;
    const char *name;          /* "actor", "critic", "curiosity", "qnet", "pqn" */
    int n_layers;
    int dims[FH_NN_MAX_LAYERS + 1];             /* dims[0] input ... dims[n_layers] output */
    const char *layer_names[FH_NN_MAX_LAYERS];  /* "policy_layer_0", ..., "policy_output" */
    fh_activation hidden_act;  /* after every layer but the last; the last is linear */
    float leaky_slope;         /* FH_ACT_LEAKY_RELU only */
    /* 1: every hidden layer is linear, LayerNorm, activation; its norm's gamma and beta
     * follow its bias in the layout, named norm_names[l] + ".weight" / ".bias" */
    int layer_norm;
    float norm_eps;                             /* LayerNorm epsilon (FH_PQN_LN_EPS) */
    const char *norm_names[FH_NN_MAX_LAYERS];   /* "q_norm_0", "q_norm_1" */
    double hidden_gain;        /* orthogonal-init gain of hidden layers (sqrt 2) */
    double output_gain;        /* 0.01 policy output, 1.0 value output */
    size_t n_params;
} fh_net_desc;

typedef struct {
    char name[FH_NN_MAX_NAME]; /* "policy_layer_0.weight" */
    int rank;                  /* 2 for a weight [out, in], 1 for a bias, gamma, beta [out] */
    int shape[2];
    size_t offset;             /* in floats from the start of the network's buffer */
    size_t numel;
} fh_tensor_desc;

const fh_net_desc *fh_net_desc_get(fh_net_kind kind);
/* Walks desc into its tensor table (weight, bias, and with LayerNorm gamma, beta per
 * hidden layer); returns the count (2 * n_layers, plus 2 per hidden layer with
 * LayerNorm). out holds FH_NN_MAX_TENSORS entries. */
int fh_net_tensors(fh_tensor_desc *out, const fh_net_desc *desc);
/* Index in that table of layer l's weight; its bias is the next entry, then (LayerNorm,
 * hidden layers) gamma and beta. */
int fh_net_layer_tensor(const fh_net_desc *desc, int layer);

/* Sets the OpenBLAS thread count (0: leave as is). Results are bit-identical run to run
 * for a fixed count; keep it fixed across a resume. */
void fh_nn_set_threads(int n_threads);
int fh_nn_get_threads(void);

/* ---- the network: one allocation for params, grads, Adam m and v ---- */
typedef struct {
    const fh_net_desc *desc;
    int n_tensors;
    fh_tensor_desc tensors[FH_NN_MAX_TENSORS];
    size_t n_params;
    float *mem;       /* (4, n_params): the only allocation */
    float *params;    /* (n_params) mem + 0 */
    float *grads;     /* (n_params) mem + n_params */
    float *adam_m;    /* (n_params) mem + 2 n_params */
    float *adam_v;    /* (n_params) mem + 3 n_params */
    int64_t adam_step; /* Adam steps taken (bias correction uses step after increment) */
} fh_mlp;

/* Allocates and zeroes everything (params too: call fh_mlp_init_orthogonal). On error
 * m is left freeable. */
fh_status fh_mlp_init(fh_mlp *m, fh_net_kind kind, fh_error *err);
/* Safe on a zeroed, half-built or already freed fh_mlp. */
void fh_mlp_free(fh_mlp *m);
/* Orthogonal weights (gains from desc), zero biases, LayerNorm gamma 1 and beta 0, from
 * a deterministic generator seeded by seed (the weights depend only on the seed and the
 * widths: a PQN net's linear layers equal a Q-network's of the same seed); also zeroes
 * grads, Adam moments and step. */
void fh_mlp_init_orthogonal(fh_mlp *m, uint64_t seed);
void fh_mlp_zero_grad(fh_mlp *m);
/* Copies params, grads, moments and step (same kind): e.g. a DQN target network. */
void fh_mlp_copy(fh_mlp *dst, const fh_mlp *src);
/* FH_ERR_FAILURE when m's params or Adam moments hold a NaN or infinity, naming the
 * network, the buffer, the tensor and the index ("the critic's weights hold NaN at
 * value_layer_1.weight[1234]"). */
fh_status fh_mlp_check_finite(const fh_mlp *m, fh_error *err);
/* Weight/bias pointers of layer l into params (or any buffer in the same layout). */
float *fh_mlp_weight(const fh_mlp *m, float *buffer, int layer);
float *fh_mlp_bias(const fh_mlp *m, float *buffer, int layer);
/* Gamma/beta of hidden layer l's LayerNorm; NULL when the layer has none. */
float *fh_mlp_norm_gamma(const fh_mlp *m, float *buffer, int layer);
float *fh_mlp_norm_beta(const fh_mlp *m, float *buffer, int layer);

/* Activation cache for batched forward/backward, sized for max_batch rows. */
typedef struct {
    int max_batch;
    int n_layers;
    fh_net_kind kind;                    /* the network it was built for */
    float *mem;                          /* the only allocation */
    float *act[FH_NN_MAX_LAYERS + 1];    /* act[0] (B, dims[0]) copy of the input;
                                            act[l+1] (B, dims[l+1]) output of layer l
                                            after its LayerNorm and activation (last:
                                            linear) */
    /* LayerNorm nets, hidden layer l (NULL otherwise): the norm's input (the linear
     * output, (B, dims[l+1])), its row means and 1 / sqrt(var + eps) ((B) each) */
    float *norm_in[FH_NN_MAX_LAYERS];
    float *norm_mean[FH_NN_MAX_LAYERS];
    float *norm_rstd[FH_NN_MAX_LAYERS];
    float *grad[2];                      /* (B, max dim) ping-pong backward buffers */
} fh_mlp_ws;

fh_status fh_mlp_ws_init(fh_mlp_ws *ws, const fh_mlp *m, int max_batch, fh_error *err);
/* The same from the network kind alone (no fh_mlp needed to size a workspace). */
fh_status fh_mlp_ws_init_kind(fh_mlp_ws *ws, fh_net_kind kind, int max_batch, fh_error *err);
void fh_mlp_ws_free(fh_mlp_ws *ws);

/* out (B, dims[L]) = net(x (B, dims[0])); caches activations in ws. out may be NULL
 * (the result is ws->act[L]). Fails (FH_ERR_FAILURE) when B > ws->max_batch or ws was
 * built for another kind. B = 1 is the single-row forward (the GPU kernels' reference). */
fh_status fh_mlp_forward(float *out, fh_mlp_ws *ws, const fh_mlp *m, const float *x, int B,
                         fh_error *err);
/* m->grads += d loss / d params; dx (B, dims[0]) += d loss / d x when dx != NULL.
 * dout (B, dims[L]) is d loss / d out; ws holds the cache of the matching forward. */
fh_status fh_mlp_backward(float *dx, fh_mlp *m, fh_mlp_ws *ws, const float *dout, int B,
                          fh_error *err);

/* ---- ops (forward and backward side by side; backward accumulates) ---- */
/* y (B, out) = x (B, in) W^T + b;  W (out, in), b (out) */
void fh_linear_forward(float *y, const float *x, const float *w, const float *b, int B,
                       int in, int out);
/* dx (B, in) += dy W (skipped when dx NULL); dw (out, in) += dy^T x; db (out) += sum_B dy */
void fh_linear_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                        const float *w, int B, int in, int out);

/* y = max(x, 0); y may alias x */
void fh_relu_forward(float *y, const float *x, size_t n);
/* dx += dy * (y > 0), y the forward output */
void fh_relu_backward(float *dx, const float *dy, const float *y, size_t n);
/* y = x > 0 ? x : slope x; y may alias x */
void fh_leaky_relu_forward(float *y, const float *x, size_t n, float slope);
/* dx += dy * (y > 0 ? 1 : slope), y the forward output (sign(y) = sign(x), slope > 0) */
void fh_leaky_relu_backward(float *dx, const float *dy, const float *y, size_t n,
                            float slope);

/* LayerNorm row-wise over n features: y (B, n) = gamma (x - mean) rstd + beta with
 * mean, var the row's mean and population variance (in double) and rstd =
 * 1 / sqrt(var + eps); mean, rstd (B) are written for the backward. y may alias x, but
 * the backward needs x. */
void fh_layer_norm_forward(float *y, float *mean, float *rstd, const float *x,
                           const float *gamma, const float *beta, int B, int n, float eps);
/* With xhat = (x - mean) rstd and g = dy gamma: dx (B, n) += rstd (g - mean_n(g) -
 * xhat mean_n(g xhat)) (skipped when dx NULL); dgamma (n) += sum_B dy xhat;
 * dbeta (n) += sum_B dy. x, mean, rstd are the forward's. */
void fh_layer_norm_backward(float *dx, float *dgamma, float *dbeta, const float *dy,
                            const float *x, const float *mean, const float *rstd,
                            const float *gamma, int B, int n);

/* p (B, K) = softmax(logits (B, K)) row-wise, max-subtracted */
void fh_softmax_forward(float *p, const float *logits, int B, int K);
/* dlogits += p * (dp - sum_k dp p) */
void fh_softmax_backward(float *dlogits, const float *dp, const float *p, int B, int K);
/* logp (B, K) = logits - logsumexp(logits) row-wise */
void fh_log_softmax_forward(float *logp, const float *logits, int B, int K);
/* dlogits += dlogp - exp(logp) * sum_k dlogp */
void fh_log_softmax_backward(float *dlogits, const float *dlogp, const float *logp, int B,
                             int K);
/* lp (B) = logp[b, actions[b]] */
void fh_categorical_log_prob_forward(float *lp, const float *logp, const int32_t *actions,
                                     int B, int K);
/* dlogp[b, actions[b]] += dlp[b] */
void fh_categorical_log_prob_backward(float *dlogp, const float *dlp,
                                      const int32_t *actions, int B, int K);
/* ent (B) = -sum_k exp(logp) logp */
void fh_categorical_entropy_forward(float *ent, const float *logp, int B, int K);
/* dlogp += dent * (-exp(logp) (logp + 1))  (logp taken as the free variable) */
void fh_categorical_entropy_backward(float *dlogp, const float *dent, const float *logp,
                                     int B, int K);

/* out (B) = (adv - mean) / (std + 1e-8), std unbiased (CleanRL / torch.std).
 * B == 1 gives adv - mean. Treated as a constant (no backward). */
void fh_normalize_advantages(float *out, const float *adv, int B);

/* PPO clipped surrogate (CleanRL): r = exp(newlp - oldlp),
 * loss = mean_B max(-adv r, -adv clip(r, 1-c, 1+c)). Returns the loss. */
float fh_ppo_surrogate_forward(const float *newlp, const float *oldlp, const float *adv,
                               int B, float clip_coef);
/* dnewlp (B) += dloss * d loss / d newlp (0 where the clipped branch is taken and
 * strictly larger). */
void fh_ppo_surrogate_backward(float *dnewlp, float dloss, const float *newlp,
                               const float *oldlp, const float *adv, int B,
                               float clip_coef);

/* Value loss (CleanRL): clip_coef <= 0: 0.5 mean (v - R)^2; else
 * 0.5 mean max((v - R)^2, (old_v + clamp(v - old_v, -c, c) - R)^2). old_v may be NULL
 * when not clipping. Returns the loss. */
float fh_value_loss_forward(const float *v, const float *old_v, const float *returns, int B,
                            float clip_coef);
void fh_value_loss_backward(float *dv, float dloss, const float *v, const float *old_v,
                            const float *returns, int B, float clip_coef);

/* MSE over n elements: mean (pred - target)^2 (the curiosity loss over B x 32). */
float fh_mse_forward(const float *pred, const float *target, size_t n);
void fh_mse_backward(float *dpred, float dloss, const float *pred, const float *target,
                     size_t n);

/* ---- the combined PPO loss ---- */
typedef struct {
    float clip_coef;    /* 0.2 */
    float vf_coef;      /* 0.5 */
    float ent_coef;     /* 0.01 */
    float vclip_coef;   /* value clipping range; <= 0 turns it off (CleanRL clip_vloss
                           uses clip_coef: set vclip_coef = clip_coef for that) */
    int norm_adv;       /* 1: normalise advantages per minibatch */
} fh_ppo_loss_config;

void fh_ppo_loss_config_default(fh_ppo_loss_config *cfg);

typedef struct {
    double loss;         /* pg_loss - ent_coef entropy + vf_coef v_loss */
    double pg_loss;
    double v_loss;
    double entropy;      /* mean over the minibatch */
    double approx_kl;    /* mean((r - 1) - ln r), CleanRL's k3 estimator */
    double old_approx_kl;/* mean(-ln r) */
    double clipfrac;     /* fraction with |r - 1| > clip_coef */
} fh_ppo_loss_stats;

/* Floats of scratch fh_ppo_loss needs for a minibatch of B over K actions. */
#define FH_PPO_SCRATCH_FLOATS(B, K) ((size_t)(B) * (2 * (size_t)(K) + 4))

/* Forward and backward of the PPO loss on one minibatch:
 * dlogits (B, K) += d loss / d logits, dvalues (B) += d loss / d values.
 * logits (B, K) actor output, values (B) critic output, actions (B), old_logp (B),
 * advantages (B) raw (normalised here when cfg->norm_adv), returns (B),
 * old_values (B) (NULL unless cfg->vclip_coef > 0), scratch FH_PPO_SCRATCH_FLOATS. */
void fh_ppo_loss(fh_ppo_loss_stats *stats, float *dlogits, float *dvalues,
                 const float *logits, const float *values, const int32_t *actions,
                 const float *old_logp, const float *advantages, const float *returns,
                 const float *old_values, int B, int K, const fh_ppo_loss_config *cfg,
                 float *scratch);

/* ---- optimiser ---- */
typedef struct {
    float lr;     /* 3e-4 PPO (decayed by the trainer), 1e-3 curiosity */
    float beta1;  /* 0.9 */
    float beta2;  /* 0.999 */
    float eps;    /* 1e-5 PPO (CleanRL), 1e-8 torch default */
    float weight_decay; /* decoupled (AdamW); 0: plain Adam (both defaults) */
} fh_adam_config;

void fh_adam_config_default_ppo(fh_adam_config *cfg);       /* 3e-4, 0.9, 0.999, 1e-5, 0 */
void fh_adam_config_default_curiosity(fh_adam_config *cfg); /* 1e-3, 0.9, 0.999, 1e-8, 0 */

/* The factor AdamW multiplies the params by before its step, 1 - lr * weight_decay
 * (in double, rounded once to float; the GPU's adam_kernel computes the same). */
float fh_adam_decay_factor(float lr, float weight_decay);

/* One Adam step (torch.optim.Adam; with weight_decay > 0 torch.optim.AdamW, Loshchilov
 * & Hutter 2019) on n elements at step t (>= 1):
 * p *= 1 - lr weight_decay (only when weight_decay > 0: else not even a multiply by 1);
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= (lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
void fh_adam_update(float *p, float *m, float *v, const float *g, size_t n, int64_t t,
                    const fh_adam_config *cfg);
/* m->adam_step += 1, then fh_adam_update over the whole buffer. */
void fh_mlp_adam_step(fh_mlp *m, const fh_adam_config *cfg);

/* Global gradient-norm clipping over several networks jointly (torch
 * clip_grad_norm_): norm = sqrt(sum of all grads^2) (in double, fixed order); when
 * norm > max_norm the grads are scaled by max_norm / (norm + 1e-6). Returns the norm
 * before clipping. PPO passes {actor, critic}: CleanRL keeps one optimiser over both
 * nets, so the clip is joint; per-element Adam over two buffers with equal steps is
 * then the same as one shared optimiser. */
double fh_mlp_clip_grad_norm(fh_mlp *const *nets, int n_nets, double max_norm);

#endif
