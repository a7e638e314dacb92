/* net_desc.c — the four network descriptors (SPEC §4, §7) and the walk that turns one
 * into its tensor table. Names are the design note's VarMap keys; the offsets the walk
 * produces must equal the FH_*_OFF_* macros of shapes.h (tests/nn/test_nn_layout.c). */
#include "foxhunt/nn.h"

#include <math.h>
#include <stdio.h>

#include <cblas.h>

#define SQRT2 1.4142135623730951

static const fh_net_desc k_descs[FH_NET_COUNT] = {
    [FH_NET_ACTOR] = {
        .kind = FH_NET_ACTOR, .name = "actor", .n_layers = FH_ACTOR_N_LAYERS,
        .dims = {FH_STATE_DIM, FH_ACTOR_H1, FH_ACTOR_H2, FH_N_ACTIONS},
        .layer_names = {"policy_layer_0", "policy_layer_1", "policy_output"},
        .hidden_act = FH_ACT_RELU, .leaky_slope = 0.0f,
        .hidden_gain = SQRT2, .output_gain = 0.01, .n_params = FH_ACTOR_N_PARAMS},
    [FH_NET_CRITIC] = {
        .kind = FH_NET_CRITIC, .name = "critic", .n_layers = FH_CRITIC_N_LAYERS,
        .dims = {FH_STATE_DIM, FH_CRITIC_H1, FH_CRITIC_H2, FH_CRITIC_H3, FH_CRITIC_H4,
                 FH_CRITIC_H5, 1},
        .layer_names = {"value_layer_0", "value_layer_1", "value_layer_2", "value_layer_3",
                        "value_layer_4", "value_output"},
        .hidden_act = FH_ACT_RELU, .leaky_slope = 0.0f,
        .hidden_gain = SQRT2, .output_gain = 1.0, .n_params = FH_CRITIC_N_PARAMS},
    [FH_NET_CURIOSITY] = {
        .kind = FH_NET_CURIOSITY, .name = "curiosity", .n_layers = FH_CURIOSITY_N_LAYERS,
        .dims = {FH_CURIOSITY_INPUT_DIM, FH_CURIOSITY_HIDDEN, FH_CURIOSITY_TARGET_DIM},
        .layer_names = {"fc1", "fc2"},
        .hidden_act = FH_ACT_RELU, .leaky_slope = 0.0f,
        .hidden_gain = SQRT2, .output_gain = 1.0, .n_params = FH_CURIOSITY_N_PARAMS},
    /* DQN (SPEC §7): LeakyReLU hidden; output gain 1.0 (Q-values are on the reward
     * scale). Keys q_layer_0, q_layer_1, q_output. */
    [FH_NET_QNET] = {
        .kind = FH_NET_QNET, .name = "qnet", .n_layers = 3,
        .dims = {FH_STATE_DIM, FH_QNET_H1, FH_QNET_H2, FH_N_ACTIONS},
        .layer_names = {"q_layer_0", "q_layer_1", "q_output"},
        .hidden_act = FH_ACT_LEAKY_RELU, .leaky_slope = FH_QNET_LEAKY_SLOPE,
        .hidden_gain = SQRT2, .output_gain = 1.0, .n_params = FH_QNET_N_PARAMS},
};

const fh_net_desc *fh_net_desc_get(fh_net_kind kind)
{
    if ((int)kind < 0 || kind >= FH_NET_COUNT)
        return NULL;
    return &k_descs[kind];
}

int fh_net_tensors(fh_tensor_desc *out, const fh_net_desc *desc)
{
    size_t off = 0;
    int n = 0;
    for (int l = 0; l < desc->n_layers; l++) {
        int in = desc->dims[l], o = desc->dims[l + 1];
        fh_tensor_desc *w = &out[n++];
        snprintf(w->name, sizeof w->name, "%s.weight", desc->layer_names[l]);
        w->rank = 2;
        w->shape[0] = o;
        w->shape[1] = in;
        w->offset = off;
        w->numel = (size_t)o * (size_t)in;
        off += w->numel;
        fh_tensor_desc *b = &out[n++];
        snprintf(b->name, sizeof b->name, "%s.bias", desc->layer_names[l]);
        b->rank = 1;
        b->shape[0] = o;
        b->shape[1] = 0;
        b->offset = off;
        b->numel = (size_t)o;
        off += b->numel;
    }
    return n;
}

void fh_nn_set_threads(int n_threads)
{
    if (n_threads > 0)
        openblas_set_num_threads(n_threads);
}

int fh_nn_get_threads(void)
{
    return openblas_get_num_threads();
}
