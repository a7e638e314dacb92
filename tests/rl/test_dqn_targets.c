/* test_dqn_targets.c — DQN's and PQN's targets, the Huber loss and the epsilon schedule
 * (issue 18; SPEC §7), each against a reference written here from the definition:
 *   - Double DQN: argmax and target recomputed in float64, with hand cases where the
 *     online and the target networks disagree and where the online values tie;
 *   - Q(lambda): the forward view, each G_t^lambda the lambda-weighted mix of the k-step
 *     returns (not the backward recursion the library uses), on random 3 x 7 batches
 *     with terminals, truncations and rows ending mid-episode; lambda = 0 and 1 against
 *     one-step targets and Monte-Carlo sums; in place over the rewards;
 *   - Huber: values by hand and the gradient against central finite differences on
 *     both sides of delta;
 *   - epsilon: CleanRL's linear_schedule by hand.
 * One ctest entry per case (test_dqn_targets CASE; tests/dqn/test_cases.h). */
#include <stdint.h>
#include <string.h>

#include "dqn/test_cases.h"
#include "foxhunt/dqn.h"
#include "test_util.h"

/* splitmix64: the test's own generator, independent of the code under test. */
typedef struct {
    uint64_t s;
} test_rng;

static double uniform01(test_rng *g)
{
    uint64_t z = (g->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
static float uniform_pm(test_rng *g, double scale)
{
    return (float)((2.0 * uniform01(g) - 1.0) * scale);
}

/* ---- Double DQN ---- */

static double reference_double_dqn(double G, double d, const float *qo, const float *qt)
{
    double best = -INFINITY;
    for (int a = 0; a < FH_N_ACTIONS; a++)
        if ((double)qo[a] > best)
            best = (double)qo[a];
    int a_star = 0;
    while ((double)qo[a_star] != best) /* the first action that reaches the max */
        a_star++;
    return G + d * (double)qt[a_star];
}

static void test_double_dqn_random(void)
{
    enum { B = 256 };
    test_rng g = {0x243F6A8885A308D3ULL};
    static float qo[B * FH_N_ACTIONS], qt[B * FH_N_ACTIONS];
    float G[B], d[B], y[B];
    double want[B], got[B];
    int n_disagree = 0;
    for (int i = 0; i < B; i++) {
        for (int a = 0; a < FH_N_ACTIONS; a++) {
            qo[i * FH_N_ACTIONS + a] = uniform_pm(&g, 3.0);
            qt[i * FH_N_ACTIONS + a] = uniform_pm(&g, 3.0);
        }
        G[i] = uniform_pm(&g, 5.0);
        d[i] = i % 5 == 0 ? 0.0f : (float)uniform01(&g); /* some terminals: d = 0 */
    }
    fh_double_dqn_targets(G, d, qo, qt, B, y);
    for (int i = 0; i < B; i++) {
        want[i] = reference_double_dqn(G[i], d[i], qo + i * FH_N_ACTIONS, qt + i * FH_N_ACTIONS);
        got[i] = y[i];
        /* count rows where the target network's own max is elsewhere */
        double plain = -INFINITY;
        for (int a = 0; a < FH_N_ACTIONS; a++)
            if (qt[i * FH_N_ACTIONS + a] > plain)
                plain = qt[i * FH_N_ACTIONS + a];
        n_disagree += d[i] > 0.0f && fabs(G[i] + d[i] * plain - want[i]) > 1e-3;
    }
    CHECK_ARRAY_CLOSE("double dqn", got, want, B, 1e-6, 1e-6);
    CHECK_MSG(n_disagree > B / 2, "only %d rows where Double DQN differs from max Q_target",
              n_disagree);
}

static void test_double_dqn_by_hand(void)
{
    float qo[2 * FH_N_ACTIONS], qt[2 * FH_N_ACTIONS];
    memset(qo, 0, sizeof qo);
    memset(qt, 0, sizeof qt);
    /* row 0: online prefers action 3, the target network action 7 (4.0); Double DQN
     * values action 3 by the target network: y = 1 + 0.5 * 0.25 = 1.125 (not 1 + 0.5 * 4) */
    qo[3] = 2.0f;
    qo[7] = 1.0f;
    qt[3] = 0.25f;
    qt[7] = 4.0f;
    /* row 1: online ties at 5 and 9 (2.0 each, the rest -1): the lowest, 5, wins:
     * y = -1 + 0.9 * (-2) = -2.8 */
    for (int a = 0; a < FH_N_ACTIONS; a++)
        qo[FH_N_ACTIONS + a] = -1.0f;
    qo[FH_N_ACTIONS + 5] = 2.0f;
    qo[FH_N_ACTIONS + 9] = 2.0f;
    qt[FH_N_ACTIONS + 5] = -2.0f;
    qt[FH_N_ACTIONS + 9] = 10.0f;
    const float G[2] = {1.0f, -1.0f}, d[2] = {0.5f, 0.9f};
    float y[2];
    fh_double_dqn_targets(G, d, qo, qt, 2, y);
    CHECK(y[0] == 1.125f);
    CHECK_CLOSE(y[1], -2.8, 0.0, 1e-7);
}

/* ---- Q(lambda) ---- */

/* The forward view at (row, t): K steps to the episode's boundary b (terminal,
 * truncated or the row's last step, inclusive), the k-step returns
 *   G^(k) = sum_{j<k} gamma^j r_{t+j} + gamma^k * boot_k,
 *   boot_k = maxQ(next_states[t+k-1]) for k < K, at k = K 0 after a terminal, else
 *   maxQ(next_states[b]),
 * and G^lambda = (1 - lambda) sum_{k=1}^{K-1} lambda^(k-1) G^(k) + lambda^(K-1) G^(K). */
static double forward_lambda_return(const float *r, const uint8_t *term, const uint8_t *trunc,
                                    const float *q, int L, int t, double gamma, double lambda)
{
    int b = t;
    while (!(term[b] || trunc[b] || b == L - 1))
        b++;
    int K = b - t + 1;
    double mix = 0.0, sum = 0.0, gk = 1.0; /* sum of discounted rewards, gk = gamma^k */
    for (int k = 1; k <= K; k++) {
        sum += gk * (double)r[t + k - 1];
        gk *= gamma;
        if (k < K) {
            double Gk = sum + gk * (double)q[t + k - 1];
            mix += (1.0 - lambda) * pow(lambda, k - 1) * Gk;
        } else {
            double Gk = sum + (term[b] ? 0.0 : gk * (double)q[b]);
            mix += pow(lambda, K - 1) * Gk;
        }
    }
    return mix;
}

typedef struct {
    float r[3 * 7], q[3 * 7];
    uint8_t term[3 * 7], trunc[3 * 7];
} small_batch;

/* A random 3 x 7 batch with at least one terminal, one truncation, one step both, and
 * rows whose last step is inside an episode. */
static void random_small_batch(small_batch *s, test_rng *g)
{
    for (int i = 0; i < 21; i++) {
        s->r[i] = uniform_pm(g, 2.0);
        s->q[i] = uniform_pm(g, 10.0);
        double u = uniform01(g);
        s->term[i] = u < 0.12;
        s->trunc[i] = u > 0.88;
    }
    s->term[2] = 1;           /* row 0: a terminal mid-row */
    s->trunc[2] = 0;
    s->trunc[7 + 4] = 1;      /* row 1: a truncation mid-row */
    s->term[7 + 4] = 0;
    s->term[14 + 1] = 1;      /* row 2: both flags (counts as terminal) */
    s->trunc[14 + 1] = 1;
    s->term[6] = s->trunc[6] = 0; /* row 0 ends mid-episode */
    s->term[20] = s->trunc[20] = 0; /* row 2 too */
}

static void test_q_lambda_forward_view(void)
{
    test_rng g = {0x13198A2E03707344ULL};
    const double gammas[3] = {0.99, 0.9, 0.5}, lambdas[3] = {0.65, 0.95, 0.3};
    for (int trial = 0; trial < 30; trial++) {
        small_batch s;
        random_small_batch(&s, &g);
        double gamma = gammas[trial % 3], lambda = lambdas[(trial / 3) % 3];
        float out[21];
        fh_q_lambda_returns(s.r, s.term, s.trunc, s.q, 3, 7, (float)gamma, (float)lambda, out);
        double got[21], want[21];
        for (int n = 0; n < 3; n++)
            for (int t = 0; t < 7; t++) {
                int i = n * 7 + t;
                got[i] = out[i];
                want[i] = forward_lambda_return(s.r + n * 7, s.term + n * 7, s.trunc + n * 7,
                                                s.q + n * 7, 7, t, (double)(float)gamma,
                                                (double)(float)lambda);
            }
        if (!CHECK_ARRAY_CLOSE("Q(lambda) vs forward view", got, want, 21, 1e-5, 1e-5))
            fprintf(stderr, "  trial %d, gamma %g, lambda %g\n", trial, gamma, lambda);
    }
}

static void test_q_lambda_limits(void)
{
    test_rng g = {0xA4093822299F31D0ULL};
    const float gamma = 0.97f;
    for (int trial = 0; trial < 10; trial++) {
        small_batch s;
        random_small_batch(&s, &g);
        float out0[21], out1[21];
        fh_q_lambda_returns(s.r, s.term, s.trunc, s.q, 3, 7, gamma, 0.0f, out0);
        fh_q_lambda_returns(s.r, s.term, s.trunc, s.q, 3, 7, gamma, 1.0f, out1);
        double got0[21], want0[21], got1[21], want1[21];
        for (int n = 0; n < 3; n++)
            for (int t = 0; t < 7; t++) {
                int i = n * 7 + t;
                /* lambda = 0: one-step Q-learning, r + gamma max Q(s'), r after ruin */
                want0[i] = s.r[i] + (s.term[i] ? 0.0 : (double)gamma * s.q[i]);
                got0[i] = out0[i];
                /* lambda = 1: rewards to the episode's (or row's) end, then the bootstrap
                 * unless that end was a terminal */
                double sum = 0.0, gk = 1.0;
                int u = t;
                for (;; u++) {
                    sum += gk * s.r[n * 7 + u];
                    gk *= gamma;
                    if (s.term[n * 7 + u] || s.trunc[n * 7 + u] || u == 6)
                        break;
                }
                want1[i] = sum + (s.term[n * 7 + u] ? 0.0 : gk * s.q[n * 7 + u]);
                got1[i] = out1[i];
            }
        CHECK_ARRAY_CLOSE("Q(0) = one-step targets", got0, want0, 21, 1e-6, 1e-6);
        CHECK_ARRAY_CLOSE("Q(1) = Monte-Carlo returns", got1, want1, 21, 1e-5, 1e-6);

        /* in place over the rewards (and over q_next_max): the same numbers */
        float in_r[21], in_q[21], ref[21];
        memcpy(in_r, s.r, sizeof in_r);
        memcpy(in_q, s.q, sizeof in_q);
        fh_q_lambda_returns(s.r, s.term, s.trunc, s.q, 3, 7, gamma, 0.8f, ref);
        fh_q_lambda_returns(in_r, s.term, s.trunc, s.q, 3, 7, gamma, 0.8f, in_r);
        fh_q_lambda_returns(s.r, s.term, s.trunc, in_q, 3, 7, gamma, 0.8f, in_q);
        CHECK(memcmp(in_r, ref, sizeof ref) == 0);
        CHECK(memcmp(in_q, ref, sizeof ref) == 0);
    }
}

/* A terminal, a truncation and the row end by hand (gamma .5, lambda .5, L = 4):
 * r = 1 2 3 4, maxQ = 8 8 8 8, truncated at t = 1:
 *   G3 = 4 + .5*8 = 8 (row end)        G2 = 3 + .5*(.5*8 + .5*8) = 7
 *   G1 = 2 + .5*8 = 6 (truncated)      G0 = 1 + .5*(.5*8 + .5*6) = 4.5
 * and terminal at t = 2 instead: G2 = 3, G1 = 2 + .5*(.5*8 + .5*3) = 4.75,
 *   G0 = 1 + .5*(.5*8 + .5*4.75) = 4.1875 */
static void test_q_lambda_by_hand(void)
{
    const float r[4] = {1, 2, 3, 4}, q[4] = {8, 8, 8, 8};
    uint8_t term[4] = {0, 0, 0, 0}, trunc[4] = {0, 1, 0, 0};
    float out[4];
    fh_q_lambda_returns(r, term, trunc, q, 1, 4, 0.5f, 0.5f, out);
    CHECK(out[0] == 4.5f && out[1] == 6.0f && out[2] == 7.0f && out[3] == 8.0f);
    trunc[1] = 0;
    term[2] = 1;
    fh_q_lambda_returns(r, term, trunc, q, 1, 4, 0.5f, 0.5f, out);
    CHECK(out[0] == 4.1875f && out[1] == 4.75f && out[2] == 3.0f && out[3] == 8.0f);
}

/* ---- Huber ---- */

static void test_huber_by_hand(void)
{
    /* delta 1: x = -0.5 -> 0.5 * 0.25 = 0.125, grad -0.5 / 2; x = 3 -> 1 * (3 - 0.5) =
     * 2.5, grad 1 / 2; mean 1.3125 */
    const float pred[2] = {0.0f, 3.0f}, target[2] = {0.5f, 0.0f};
    float grad[2];
    CHECK(fh_huber_loss(pred, target, 2, FH_HUBER_DELTA_DEFAULT, grad) == 1.3125f);
    CHECK(grad[0] == -0.25f && grad[1] == 0.5f);
    /* delta 2: x = 3 -> 2 * (3 - 1) = 4; mean (0.125 + 4) / 2 = 2.0625 */
    CHECK(fh_huber_loss(pred, target, 2, 2.0f, NULL) == 2.0625f);
    CHECK(isnan(fh_huber_loss(pred, target, 0, 1.0f, grad)));
    CHECK(isnan(fh_huber_loss(pred, target, 2, 0.0f, grad)));
}

/* The gradient of the mean against central differences. Each x keeps at least 4h from
 * the kink |x| = delta, so both probes stay on one piece, where the loss is quadratic
 * or linear and the central difference exact up to float rounding of the loss
 * (~1e-7 / 2h). */
static void test_huber_gradient(void)
{
    enum { N = 12 };
    test_rng g = {0x082EFA98EC4E6C89ULL};
    const float deltas[3] = {1.0f, 0.5f, 2.0f};
    const float h = 1e-2f;
    int n_inside = 0, n_outside = 0;
    for (int trial = 0; trial < 30; trial++) {
        float delta = deltas[trial % 3];
        float pred[N], target[N], grad[N];
        double fd[N], an[N], want_loss = 0.0;
        for (int i = 0; i < N; i++) {
            double x;
            do {
                target[i] = uniform_pm(&g, 2.0);
                pred[i] = target[i] + uniform_pm(&g, 3.0 * delta);
                x = (double)pred[i] - (double)target[i];
            } while (fabs(fabs(x) - delta) < 4.0 * h);
            n_inside += fabs(x) <= delta;
            n_outside += fabs(x) > delta;
            want_loss += fabs(x) <= delta ? 0.5 * x * x : delta * (fabs(x) - 0.5 * delta);
        }
        float loss = fh_huber_loss(pred, target, N, delta, grad);
        CHECK_CLOSE(loss, want_loss / N, 1e-7, 1e-6);
        for (int i = 0; i < N; i++) {
            float keep = pred[i];
            float up = keep + h, down = keep - h;
            pred[i] = up;
            double lu = fh_huber_loss(pred, target, N, delta, NULL);
            pred[i] = down;
            double ld = fh_huber_loss(pred, target, N, delta, NULL);
            pred[i] = keep;
            fd[i] = (lu - ld) / ((double)up - (double)down);
            an[i] = grad[i];
        }
        if (!CHECK_ARRAY_CLOSE("huber grad vs finite differences", an, fd, N, 5e-5, 1e-3))
            fprintf(stderr, "  trial %d, delta %g\n", trial, (double)delta);
    }
    CHECK_MSG(n_inside > 50 && n_outside > 50, "inside %d, outside %d", n_inside, n_outside);
}

/* ---- epsilon ---- */

static void test_epsilon(void)
{
    /* CleanRL's DQN defaults: 1 -> 0.05 over half the run; total 1000, so over 500 steps:
     * eps(t) = 1 - 0.95 t / 500 */
    CHECK(fh_epsilon_at(0, 1000, 1.0f, 0.05f, 0.5f) == 1.0f);
    CHECK_CLOSE(fh_epsilon_at(100, 1000, 1.0f, 0.05f, 0.5f), 0.81, 0.0, 1e-6);
    CHECK_CLOSE(fh_epsilon_at(250, 1000, 1.0f, 0.05f, 0.5f), 0.525, 0.0, 1e-6);
    CHECK_CLOSE(fh_epsilon_at(499, 1000, 1.0f, 0.05f, 0.5f), 0.0519, 0.0, 1e-5);
    CHECK(fh_epsilon_at(500, 1000, 1.0f, 0.05f, 0.5f) == 0.05f);
    CHECK(fh_epsilon_at(100000, 1000, 1.0f, 0.05f, 0.5f) == 0.05f);
    /* fraction 0.1 of 10,000 steps: 0.5 -> 0.01 over 1,000; at 400: 0.5 - 0.49 * 0.4 = 0.304 */
    CHECK_CLOSE(fh_epsilon_at(400, 10000, 0.5f, 0.01f, 0.1f), 0.304, 0.0, 1e-6);
    /* a zero-length schedule is the end value throughout */
    CHECK(fh_epsilon_at(0, 1000, 1.0f, 0.05f, 0.0f) == 0.05f);
    CHECK(fh_epsilon_at(0, 0, 1.0f, 0.05f, 0.5f) == 0.05f);
}

static const fh_test_case CASES[] = {
    {"double_dqn_random", test_double_dqn_random},
    {"double_dqn_by_hand", test_double_dqn_by_hand},
    {"q_lambda_forward_view", test_q_lambda_forward_view},
    {"q_lambda_limits", test_q_lambda_limits},
    {"q_lambda_by_hand", test_q_lambda_by_hand},
    {"huber_by_hand", test_huber_by_hand},
    {"huber_gradient", test_huber_gradient},
    {"epsilon_schedule", test_epsilon},
};
FH_TEST_CASES_MAIN(CASES)
