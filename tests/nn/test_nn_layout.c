/* test_nn_layout.c — parameter counts (SPEC §4: 18,221 / 364,929 / 4,384), the tensor
 * table against the FH_*_OFF_* macros the GPU kernels use, names, and the one-allocation
 * layout of fh_mlp. */
#include <string.h>

#include "foxhunt/nn.h"
#include "test_util.h"

typedef struct {
    const char *name;
    int rank, s0, s1;
    size_t offset;
} expect_t;

static void check_table(fh_net_kind kind, const expect_t *ex, int n, size_t n_params)
{
    fh_tensor_desc t[FH_NN_MAX_TENSORS];
    const fh_net_desc *d = fh_net_desc_get(kind);
    CHECK(d != NULL);
    int got = fh_net_tensors(t, d);
    CHECK_MSG(got == n, "%s: %d tensors, expected %d", d->name, got, n);
    size_t total = 0;
    for (int i = 0; i < n && i < got; i++) {
        CHECK_MSG(strcmp(t[i].name, ex[i].name) == 0, "%s tensor %d: %s, expected %s", d->name,
                  i, t[i].name, ex[i].name);
        CHECK_MSG(t[i].rank == ex[i].rank && t[i].shape[0] == ex[i].s0 &&
                      (ex[i].rank == 1 || t[i].shape[1] == ex[i].s1),
                  "%s: shape of %s", d->name, ex[i].name);
        CHECK_MSG(t[i].offset == ex[i].offset, "%s: offset of %s is %zu, shapes.h says %zu",
                  d->name, ex[i].name, t[i].offset, ex[i].offset);
        total += t[i].numel;
    }
    CHECK_MSG(total == n_params, "%s: %zu parameters, expected %zu", d->name, total, n_params);
    CHECK(d->n_params == n_params);
    fh_mlp m = {0};
    fh_error err;
    CHECK(fh_mlp_init(&m, kind, &err) == FH_OK);
    CHECK(m.n_params == n_params);
    CHECK(m.grads == m.params + n_params && m.adam_m == m.params + 2 * n_params &&
          m.adam_v == m.params + 3 * n_params && m.mem == m.params);
    fh_mlp_free(&m);
    CHECK(m.mem == NULL);
}

int main(void)
{
    /* SPEC §4 counts, as literal numbers (independent of shapes.h arithmetic) */
    CHECK(FH_ACTOR_N_PARAMS == 18221);
    CHECK(FH_CRITIC_N_PARAMS == 364929);
    CHECK(FH_CURIOSITY_N_PARAMS == 4384);
    CHECK(FH_QNET_N_PARAMS == 52781);

    const expect_t actor[] = {
        {"policy_layer_0.weight", 2, 128, 54, FH_ACTOR_OFF_W0},
        {"policy_layer_0.bias", 1, 128, 0, FH_ACTOR_OFF_B0},
        {"policy_layer_1.weight", 2, 64, 128, FH_ACTOR_OFF_W1},
        {"policy_layer_1.bias", 1, 64, 0, FH_ACTOR_OFF_B1},
        {"policy_output.weight", 2, 45, 64, FH_ACTOR_OFF_W2},
        {"policy_output.bias", 1, 45, 0, FH_ACTOR_OFF_B2},
    };
    check_table(FH_NET_ACTOR, actor, 6, 18221);
    const expect_t critic[] = {
        {"value_layer_0.weight", 2, 512, 54, FH_CRITIC_OFF_W0},
        {"value_layer_0.bias", 1, 512, 0, FH_CRITIC_OFF_B0},
        {"value_layer_1.weight", 2, 384, 512, FH_CRITIC_OFF_W1},
        {"value_layer_1.bias", 1, 384, 0, FH_CRITIC_OFF_B1},
        {"value_layer_2.weight", 2, 256, 384, FH_CRITIC_OFF_W2},
        {"value_layer_2.bias", 1, 256, 0, FH_CRITIC_OFF_B2},
        {"value_layer_3.weight", 2, 128, 256, FH_CRITIC_OFF_W3},
        {"value_layer_3.bias", 1, 128, 0, FH_CRITIC_OFF_B3},
        {"value_layer_4.weight", 2, 64, 128, FH_CRITIC_OFF_W4},
        {"value_layer_4.bias", 1, 64, 0, FH_CRITIC_OFF_B4},
        {"value_output.weight", 2, 1, 64, FH_CRITIC_OFF_W5},
        {"value_output.bias", 1, 1, 0, FH_CRITIC_OFF_B5},
    };
    check_table(FH_NET_CRITIC, critic, 12, 364929);
    const expect_t cur[] = {
        {"fc1.weight", 2, 64, 35, FH_CURIOSITY_OFF_W0},
        {"fc1.bias", 1, 64, 0, FH_CURIOSITY_OFF_B0},
        {"fc2.weight", 2, 32, 64, FH_CURIOSITY_OFF_W1},
        {"fc2.bias", 1, 32, 0, FH_CURIOSITY_OFF_B1},
    };
    check_table(FH_NET_CURIOSITY, cur, 4, 4384);
    const expect_t q[] = {
        {"q_layer_0.weight", 2, 256, 54, 0},
        {"q_layer_0.bias", 1, 256, 0, 13824},
        {"q_layer_1.weight", 2, 128, 256, 14080},
        {"q_layer_1.bias", 1, 128, 0, 46848},
        {"q_output.weight", 2, 45, 128, 46976},
        {"q_output.bias", 1, 45, 0, 52736},
    };
    check_table(FH_NET_QNET, q, 6, 52781);
    CHECK(fh_net_desc_get(FH_NET_QNET)->hidden_act == FH_ACT_LEAKY_RELU);
    CHECK(fh_net_desc_get(FH_NET_COUNT) == NULL);
    /* the GPU kernel reads the critic output at FH_CRITIC_OFF_B5 = N - 1 */
    CHECK(FH_CRITIC_OFF_B5 == 364928);
    CHECK(FH_ACTOR_OFF_B2 == 18221 - 45);
    return fh_test_finish();
}
