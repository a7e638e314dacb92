/* update_layers.h — a network's forward and backward pass over a minibatch on the
 * device, for the update (issue 17): the forward as cublasLt matmuls with bias(+ReLU)
 * epilogues (gemm.h, cublasLt's first heuristic algorithm: no timing, so the same
 * algorithm every run and bit-identical results), the backward as cuBLAS matmuls
 * (weight and input gradients) and bias_grad_kernel (the ReLU's gradient and the bias
 * gradient). Forward and backward side by side; gradients are written, not added.
 *
 * The Q-networks (issue 18: FH_NET_QNET, Linear -> LeakyReLU; FH_NET_PQN, Linear ->
 * LayerNorm -> LeakyReLU) take the same matmuls with a bias-only epilogue, then
 * q_update.cu's q_hidden_forward_kernel; their backward runs q_hidden_backward_kernel
 * (the LeakyReLU's and LayerNorm's gradients) and bias_grad_kernel without a mask for
 * the column sums (bias, and LayerNorm's beta and gamma). Their kernels are set with
 * fh_update_blas_set_hidden. The PPO networks (ReLU) take the path they always took.
 *
 * bf16 (precision.h; a network given params16, the bf16 copy of its weights): the
 * input converted to bf16 (to_bf16_kernel), the hidden layers' outputs and the backward's
 * gradients at each pre-activation kept in bf16, the output layer and every weight and
 * bias gradient in fp32; bias_grad_bf16_kernel masks and sums. An input whose width is
 * not a multiple of 8 (the 54-wide state, the curiosity model's 35) is kept with rows
 * padded with zeros to FH_BF16_LD (bf16_convert.h), and the first layer's weights with
 * it: cuBLASLt then runs that layer on its Hopper kernels (16-byte rows) rather than
 * Ampere's. The Q-networks take fp32 or tf32 only. */
#ifndef FOXHUNT_CUDA_UPDATE_LAYERS_H
#define FOXHUNT_CUDA_UPDATE_LAYERS_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "cuda/gemm.h"
#include "cuda/kernels/update_args.h" /* fh_bf16_padded */
#include "foxhunt/nn.h"

/* The matmul engines of one stream. */
typedef struct {
    fh_gemm lt;          /* forward (bias and ReLU in the epilogue) and backward matmuls */
    cublasHandle_t blas; /* what cublasLt refuses: a layer's forward + bias_act, a
                            backward matmul */
    void *workspace;     /* cuBLAS's, set explicitly (graph capture allocates nothing) */
    cudaKernel_t bias_grad, bias_act;
    cudaKernel_t hidden_fwd, hidden_bwd; /* the Q-networks' (q_update.cu), or NULL */
    cudaKernel_t to_bf16, bias_grad16, bias_grad16_wide; /* the bf16 networks'
                                                            (fh_update_blas_set_bf16) */
    cudaStream_t stream;
    cublasComputeType_t compute; /* the run's precision's (fh_gemm_compute_type) */
    cudaDataType_t operand;      /* the matmuls' A and B: bf16 at FH_PRECISION_BF16 */
    int pdl;                     /* our kernels' launches programmatic (pdl_launch.h) */
    cudaKernel_t relu_mask;      /* relu_mask_kernel, with split_bias */
    int split_bias;              /* 1: a backward with a weight-gradient stream masks on
                                    the chain and sums the biases beside the weight
                                    gradients (update_plan.h) */
} fh_update_blas;

fh_status fh_update_blas_init(fh_update_blas *b, cudaStream_t stream, int precision,
                              cudaKernel_t bias_grad, cudaKernel_t bias_act, fh_error *err);
void fh_update_blas_free(fh_update_blas *b);
/* The Q-networks' hidden-layer kernels: q_hidden_forward_kernel, q_hidden_backward_kernel. */
void fh_update_blas_set_hidden(fh_update_blas *b, cudaKernel_t forward, cudaKernel_t backward);
/* Our kernels launched with programmatic dependent launch (the update plan's pdl; 0
 * after init): every kernel they launch begins with fh_pdl_wait (kernels/pdl.cuh). */
void fh_update_blas_set_pdl(fh_update_blas *b, int pdl);
/* The bf16 networks' kernels: to_bf16_kernel (bf16_convert.cu), bias_grad_bf16_kernel and
 * bias_grad_bf16_wide_kernel (layer_elementwise.cu). */
void fh_update_blas_set_bf16(fh_update_blas *b, cudaKernel_t to_bf16, cudaKernel_t bias_grad16,
                             cudaKernel_t bias_grad16_wide);
/* The update plan's split_bias (0 after init) and its kernel, relu_mask_kernel
 * (layer_elementwise.cu); set on the engine of the chain (fh_device_mlp_backward's b). */
void fh_update_blas_set_split_bias(fh_update_blas *b, cudaKernel_t relu_mask, int split);

/* A network's device view: its parameters and gradients (flat, nn.h's layout, owned
 * by the caller) and the activations of up to max_rows rows (owned here). grads NULL:
 * forward only (no backward buffers). */
typedef struct {
    const fh_net_desc *desc;
    int q_hidden;                        /* 1: LeakyReLU (and LayerNorm) hidden layers
                                            through the Q kernels; 0: ReLU epilogues */
    fh_tensor_desc tensors[FH_NN_MAX_TENSORS];
    float *params, *grads;
    int max_rows;
    const float *input;                  /* act[0]: the last forward's input */
    float *act[FH_NN_MAX_LAYERS + 1];    /* act[l + 1] (max_rows, dims[l + 1]) */
    float *dz[FH_NN_MAX_LAYERS];         /* dz[l] (max_rows, dims[l + 1]): the gradient at
                                            hidden layer l's pre-activation; one buffer a
                                            layer, as a weight gradient on another stream
                                            may still read it */
    cudaEvent_t ev[FH_NN_MAX_LAYERS + 1];/* ev[l]: dz of layer l ready; ev[L]: all done */
    int any_width[FH_NN_MAX_LAYERS];     /* 1: layer l's forward through cuBLAS +
                                            bias_act_kernel (cublasLt refused its shape) */
    double *bias_partials[FH_NN_MAX_LAYERS]; /* bias_grad_kernel's, layer l's bias */
    unsigned *bias_counters[FH_NN_MAX_LAYERS];
    /* LayerNorm nets, hidden layer l (NULL otherwise): */
    float *norm_in[FH_NN_MAX_LAYERS];    /* (max_rows, dims[l + 1]) the linear output */
    float *norm_mean[FH_NN_MAX_LAYERS];  /* (max_rows) */
    float *norm_rstd[FH_NN_MAX_LAYERS];  /* (max_rows) */
    float *dxhat[FH_NN_MAX_LAYERS];      /* (max_rows, dims[l + 1]) dy * xhat (gamma's) */
    float *dnorm_in[FH_NN_MAX_LAYERS];   /* (max_rows, dims[l + 1]) the gradient at the
                                            linear output */
    double *norm_partials[FH_NN_MAX_LAYERS][2]; /* the column sums of beta's, gamma's */
    unsigned *norm_counters[FH_NN_MAX_LAYERS][2];
    /* bf16 (params16 not NULL; act[l + 1] and dz[l] of the hidden layers then unused): */
    unsigned short *params16;            /* params' bf16 copy, the same layout (the caller's) */
    int ld16;                            /* FH_BF16_LD(dims[0]): input16's and w0_16's rows */
    unsigned short *input16;             /* (max_rows, ld16) the input's copy, padding 0 */
    const unsigned short *input16_ext;   /* the caller's copy instead (set_input16), or NULL */
    const unsigned short *x16;           /* the last forward's bf16 input (one of the two) */
    unsigned short *w0_16;               /* (dims[1], ld16) layer 0's weights, padding 0,
                                            where ld16 > dims[0] (NULL: params16's own);
                                            kept current by the caller (padded_w0) */
    unsigned short *act16[FH_NN_MAX_LAYERS + 1]; /* act16[l + 1]: hidden layer l's output */
    unsigned short *g16[FH_NN_MAX_LAYERS]; /* (max_rows, dims[l + 1]) the gradient at layer
                                              l's pre-activation (the output layer's: the
                                              loss's gradient's copy) */
} fh_device_mlp;

/* params16: the bf16 copy of params for a bf16 network (kept current by the caller: Adam
 * writes it), NULL otherwise. */
fh_status fh_device_mlp_init(fh_device_mlp *m, fh_net_kind kind, float *params, float *grads,
                             unsigned short *params16, int max_rows, fh_error *err);
void fh_device_mlp_free(fh_device_mlp *m);
/* The output (rows, dims[L]) of the network on x (rows, dims[0]): m->act[L]. */
static inline float *fh_device_mlp_output(const fh_device_mlp *m)
{
    return m->act[m->desc->n_layers];
}

/* bf16: the next forwards read x16 ((rows, m->ld16), the padding zero; the caller's
 * and kept valid until the backward pass: the PPO gather writes it) instead of converting
 * their fp32 input; NULL: convert again. */
void fh_device_mlp_set_input16(fh_device_mlp *m, const unsigned short *x16);
/* A bf16 network whose first layer is kept padded (m->w0_16): 1 and *out, where its
 * weights sit in the caller's flat buffer `base` (which holds m->params), for adam_kernel
 * and a refresh to copy them there too; else 0. */
int fh_device_mlp_padded_w0(const fh_device_mlp *m, const float *base, fh_bf16_padded *out);

/* act[L] = net(x); x must stay valid until the backward pass. */
fh_status fh_device_mlp_forward(fh_update_blas *b, fh_device_mlp *m, const float *x, int rows,
                                fh_error *err);
/* The output layer left to the caller (the PPO critic's value head, fused into
 * ppo_loss_kernel): act[L - 1] = the hidden layers of the network on x. */
fh_status fh_device_mlp_forward_hidden(fh_update_blas *b, fh_device_mlp *m, const float *x,
                                       int rows, fh_error *err);
/* What the caller of fh_device_mlp_forward_hidden needs for the output layer: its input
 * (the last hidden layer's ReLU output: `in`, or `in16` for a bf16 network; the other
 * NULL), weights and bias (fp32), and where the backward starts: the gradients of the
 * output layer's weights and bias, the gradient at the last hidden layer's
 * pre-activation (ReLU-masked; hidden_dz or hidden_dz16, as in) and that layer's bias
 * gradient; values (rows) where the output goes (fh_device_mlp_output). */
typedef struct {
    const float *in;
    const unsigned short *in16;
    const float *w, *b;
    float *dw, *db;
    float *hidden_dz;
    unsigned short *hidden_dz16;
    float *hidden_db;
    float *values;
} fh_device_mlp_head;
fh_device_mlp_head fh_device_mlp_head_view(const fh_device_mlp *m);

/* m->grads = d loss / d params from dout (rows, dims[L]), the gradient with respect to
 * the output of the last forward (no input gradient: the inputs are data). The chain of
 * input gradients runs on b's stream; with dw (another stream's engines) the weight
 * gradients run there, each as soon as its layer's gradient is ready, and b's stream
 * waits for them before returning (in a graph capture: parallel branches). */
fh_status fh_device_mlp_backward(fh_update_blas *b, fh_update_blas *dw, fh_device_mlp *m,
                                 float *dout, int rows, fh_error *err);
/* The same below the output layer, after fh_device_mlp_forward_hidden: the caller has
 * written the output layer's gradients, the last hidden layer's bias gradient and its
 * masked pre-activation gradient (fh_device_mlp_head). */
fh_status fh_device_mlp_backward_hidden(fh_update_blas *b, fh_update_blas *dw,
                                        fh_device_mlp *m, int rows, fh_error *err);

#endif
