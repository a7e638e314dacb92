/* net_desc.c — the five network descriptors (SPEC §4, §7) and the walk that turns one
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
    /* PQN (Gallici et al. 2024): the Q-network with LayerNorm before each hidden
     * activation, which is what keeps TD learning stable without a target network or
     * replay buffer. Keys as the Q-network's plus q_norm_0, q_norm_1 (.weight = gamma,
     * .bias = beta, torch.nn.LayerNorm's names). */
    [FH_NET_PQN] = {
        .kind = FH_NET_PQN, .name = "pqn", .n_layers = 3,
        .dims = {FH_STATE_DIM, FH_QNET_H1, FH_QNET_H2, FH_N_ACTIONS},
        .layer_names = {"q_layer_0", "q_layer_1", "q_output"},
        .hidden_act = FH_ACT_LEAKY_RELU, .leaky_slope = FH_QNET_LEAKY_SLOPE,
        .layer_norm = 1, .norm_eps = FH_PQN_LN_EPS, .norm_names = {"q_norm_0", "q_norm_1"},
        .hidden_gain = SQRT2, .output_gain = 1.0, .n_params = FH_PQN_N_PARAMS},
};

const fh_net_desc *fh_net_desc_get(fh_net_kind kind)
{
    if ((int)kind < 0 || kind >= FH_NET_COUNT)
        return NULL;
    return &k_descs[kind];
}

/* One table entry: [s0, s1] (rank 2) or [s0] (rank 1, s1 = 0) at *off, which advances. */
static void put_tensor(fh_tensor_desc *t, const char *owner, const char *suffix, int rank,
                       int s0, int s1, size_t *off)
{
    snprintf(t->name, sizeof t->name, "%s.%s", owner, suffix);
    t->rank = rank;
    t->shape[0] = s0;
    t->shape[1] = rank == 2 ? s1 : 0;
    t->offset = *off;
    t->numel = rank == 2 ? (size_t)s0 * (size_t)s1 : (size_t)s0;
    *off += t->numel;
}

int fh_net_tensors(fh_tensor_desc *out, const fh_net_desc *desc)
{
    size_t off = 0;
    int n = 0;
    for (int l = 0; l < desc->n_layers; l++) {
        int in = desc->dims[l], o = desc->dims[l + 1];
        put_tensor(&out[n++], desc->layer_names[l], "weight", 2, o, in, &off);
        put_tensor(&out[n++], desc->layer_names[l], "bias", 1, o, 0, &off);
        if (desc->layer_norm && l < desc->n_layers - 1) {
            put_tensor(&out[n++], desc->norm_names[l], "weight", 1, o, 0, &off); /* gamma */
            put_tensor(&out[n++], desc->norm_names[l], "bias", 1, o, 0, &off);   /* beta */
        }
    }
    return n;
}

int fh_net_layer_tensor(const fh_net_desc *desc, int layer)
{
    /* every layer before `layer` is a hidden one: 2 tensors, 4 with LayerNorm */
    return layer * (desc->layer_norm ? 4 : 2);
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
