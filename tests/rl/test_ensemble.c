/* test_ensemble.c — the seed ensemble's policy (issue 34 item 3; evaluate.h):
 *  - fh_ensemble_action against hand-worked votes: the mean exposure to the nearest
 *    grid exposure (ties away from zero), the mean urgency to the nearest (ties to the
 *    faster), unanimous votes unchanged;
 *  - fh_backtest_run_ensemble against single-network backtests: networks that always
 *    choose one action (only the last bias set), so that the ensemble of "long" and
 *    "flat" must be, bar for bar, the network that always chooses "half long"; one
 *    network, and three copies of one random network, must be that network's greedy
 *    backtest to the bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "foxhunt/evaluate.h"
#include "foxhunt/nn.h"
#include "foxhunt/run_data.h"
#include "test_util.h"

/* action of exposure index e (0: -1 .. FH_N_EXPOSURES - 1: +1) and urgency index k */
#define ACT(e, k) (FH_N_URGENCIES * (e) + (k))
#define FULL (FH_N_URGENCIES - 1)
#define E_FLAT (FH_N_EXPOSURES / 2)
#define E_LONG (FH_N_EXPOSURES - 1)

static void test_votes(void)
{
    /* exposure grid -1, -0.75, .., 1 (9 levels, E_FLAT 4); urgencies 5 levels */
    CHECK(FH_N_EXPOSURES == 9 && FH_N_URGENCIES >= 3);
    int same[3] = {ACT(E_LONG, FULL), ACT(E_LONG, FULL), ACT(E_LONG, FULL)};
    CHECK(fh_ensemble_action(same, 3) == ACT(E_LONG, FULL));
    int one[1] = {ACT(2, 1)};
    CHECK(fh_ensemble_action(one, 1) == ACT(2, 1));
    /* long (1) and flat (0): mean 0.5, index 6 */
    int half[2] = {ACT(E_LONG, FULL), ACT(E_FLAT, FULL)};
    CHECK(fh_ensemble_action(half, 2) == ACT(6, FULL));
    /* urgency indices 0 and FULL: mean FULL / 2 */
    int mixed[2] = {ACT(E_LONG, 0), ACT(E_FLAT, FULL)};
    CHECK(fh_ensemble_action(mixed, 2) == ACT(6, (int)floor(FULL / 2.0 + 0.5)));
    /* 0.25 and 0: mean 0.125, half a step: away from zero, 0.25; mirrored -0.25 */
    int up[2] = {ACT(5, FULL), ACT(E_FLAT, FULL)};
    CHECK(fh_ensemble_action(up, 2) == ACT(5, FULL));
    int down[2] = {ACT(3, FULL), ACT(E_FLAT, FULL)};
    CHECK(fh_ensemble_action(down, 2) == ACT(3, FULL));
    /* urgency indices 1 and 2: mean 1.5, the faster: 2 */
    int urg[2] = {ACT(E_FLAT, 1), ACT(E_FLAT, 2)};
    CHECK(fh_ensemble_action(urg, 2) == ACT(E_FLAT, 2));
    /* long, short, flat: mean 0 */
    int three[3] = {ACT(E_LONG, FULL), ACT(0, FULL), ACT(E_FLAT, FULL)};
    CHECK(fh_ensemble_action(three, 3) == ACT(E_FLAT, FULL));
    /* long, long, short: mean 1/3, nearest 0.25 */
    int lls[3] = {ACT(E_LONG, FULL), ACT(E_LONG, FULL), ACT(0, FULL)};
    CHECK(fh_ensemble_action(lls, 3) == ACT(5, FULL));
}

/* An actor that always chooses `action`: zero weights, its last bias 10 there. */
static void constant_actor(fh_mlp *m, int action)
{
    fh_error err;
    CHECK(fh_mlp_init(m, FH_NET_ACTOR, &err) == FH_OK);
    const fh_tensor_desc *bias = &m->tensors[fh_net_layer_tensor(m->desc, m->desc->n_layers - 1) + 1];
    m->params[bias->offset + (size_t)action] = 10.0f;
}

typedef struct {
    fh_backtest_metrics m;
    double equity[4096], exposure[4096], cost[4096], turnover[4096];
} run_out;

static int same_run(const run_out *a, const run_out *b, size_t n)
{
    return memcmp(&a->m, &b->m, sizeof a->m) == 0 &&
           memcmp(a->equity, b->equity, n * sizeof(double)) == 0 &&
           memcmp(a->exposure, b->exposure, (n - 1) * sizeof(double)) == 0 &&
           memcmp(a->cost, b->cost, (n - 1) * sizeof(double)) == 0 &&
           memcmp(a->turnover, b->turnover, (n - 1) * sizeof(double)) == 0;
}

static fh_backtest_path path_of(run_out *r)
{
    memset(r, 0, sizeof *r);
    return (fh_backtest_path){.equity = r->equity, .exposure = r->exposure, .cost = r->cost,
                              .turnover = r->turnover};
}

static void test_backtests(void)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    cfg.synthetic_bars = 4000;
    fh_run_data data;
    fh_error err;
    CHECK(fh_run_data_load(&data, &cfg, NULL, &err) == FH_OK);
    fh_market_view view = fh_market_view_of(&data.market, FH_SPLIT_TEST);
    CHECK(view.n >= 100 && view.n <= 4096);
    const double ppy = 252;
    static run_out single, ens;

    fh_mlp longs, flat, half, random;
    constant_actor(&longs, ACT(E_LONG, FULL));
    constant_actor(&flat, ACT(E_FLAT, FULL));
    constant_actor(&half, ACT(6, FULL));
    CHECK(fh_mlp_init(&random, FH_NET_ACTOR, &err) == FH_OK);
    fh_mlp_init_orthogonal(&random, 7);

    /* long + flat = half long, bar for bar (the barriers act on the half position) */
    fh_backtest_path p1 = path_of(&single), p2 = path_of(&ens);
    CHECK(fh_backtest_run_path(&single.m, FH_POLICY_GREEDY, &half, &cfg.env, &view, NULL, ppy,
                               3, &p1, &err) == FH_OK);
    const fh_mlp *pair[2] = {&longs, &flat};
    CHECK(fh_backtest_run_ensemble(&ens.m, pair, 2, &cfg.env, &view, ppy, 3, &p2, &err) ==
          FH_OK);
    CHECK(same_run(&single, &ens, view.n));
    CHECK(single.m.time_in_market > 0.5); /* it did hold the half position */

    /* one network, and three copies of a random one: that network's greedy backtest */
    p1 = path_of(&single), p2 = path_of(&ens);
    CHECK(fh_backtest_run_path(&single.m, FH_POLICY_GREEDY, &random, &cfg.env, &view, NULL,
                               ppy, 3, &p1, &err) == FH_OK);
    const fh_mlp *three[3] = {&random, &random, &random};
    CHECK(fh_backtest_run_ensemble(&ens.m, three, 3, &cfg.env, &view, ppy, 3, &p2, &err) ==
          FH_OK);
    CHECK(same_run(&single, &ens, view.n));
    p2 = path_of(&ens);
    CHECK(fh_backtest_run_ensemble(&ens.m, three, 1, &cfg.env, &view, ppy, 3, &p2, &err) ==
          FH_OK);
    CHECK(same_run(&single, &ens, view.n));

    /* too many or no networks: an error, not a read past the array */
    CHECK(fh_backtest_run_ensemble(&ens.m, three, 0, &cfg.env, &view, ppy, 3, NULL, &err) ==
          FH_ERR_INPUT);
    CHECK(fh_backtest_run_ensemble(&ens.m, three, FH_ENSEMBLE_MAX + 1, &cfg.env, &view, ppy,
                                   3, NULL, &err) == FH_ERR_INPUT);
    fh_mlp_free(&longs);
    fh_mlp_free(&flat);
    fh_mlp_free(&half);
    fh_mlp_free(&random);
    fh_run_data_free(&data);
}

int main(void)
{
    test_votes();
    test_backtests();
    return fh_test_finish();
}
