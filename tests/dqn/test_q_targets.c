/* test_q_targets.c — the shared Q-learning formulas of env/q_targets.cuh (the text the
 * CPU update and q_update.cu both run; issue 33) against float64 references written
 * here from the definitions, on random rows with terminals, truncations and rows that
 * end mid-episode:
 *   - fh_q_n_step_window: G = sum_j gamma^j r_{t+j} with pow(), d = gamma^k or 0, and
 *     the bootstrap step, all from a forward search for the window's end;
 *   - fh_q_lambda_row: the forward view (the lambda-weighted mix of the k-step returns),
 *     not the backward recursion under test;
 *   - fh_q_double_dqn_target: G + d Q_target(s', a*) with a* the first index of the max;
 *   - fh_q_huber: both branches and the gradient's clamp.
 * Tolerances: the double results (n-step G and d, Huber) within 1e-12 relative (pow()
 * against repeated products); the float outputs (Q(lambda), the double-DQN target)
 * within 1e-6 relative + 1e-6 absolute, a few float roundings of the double value. */
#include <math.h>
#include <stdint.h>

#include "env/q_targets.cuh"
#include "test_util.h"

#define ROWS 200
#define MAX_L 40
#define TOL_DOUBLE 1e-12
#define TOL_FLOAT 1e-6

/* splitmix64: the test's own generator, independent of the code under test. */
static uint64_t g_state = 0x5eed;

static double uniform01(void)
{
    uint64_t z = (g_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

typedef struct {
    int L;
    float r[MAX_L], q[MAX_L];
    unsigned char term[MAX_L], trunc[MAX_L];
} row;

/* A random row: rewards and Q-values in [-2, 2], about one terminal and one truncation
 * in ten steps (never both on a step). */
static void random_row(row *w)
{
    w->L = 1 + (int)(uniform01() * MAX_L);
    for (int t = 0; t < w->L; t++) {
        w->r[t] = (float)(4.0 * uniform01() - 2.0);
        w->q[t] = (float)(4.0 * uniform01() - 2.0);
        double u = uniform01();
        w->term[t] = u < 0.1;
        w->trunc[t] = u >= 0.1 && u < 0.2;
    }
}

/* The first step at or after t where the episode or the row ends. */
static int segment_end(const row *w, int t)
{
    int e = t;
    while (e < w->L - 1 && !w->term[e] && !w->trunc[e])
        e++;
    return e;
}

static void test_n_step_window(void)
{
    int bad = 0;
    for (int k = 0; k < ROWS; k++) {
        row w;
        random_row(&w);
        double gamma = 0.9 + 0.099 * uniform01();
        int n_step = 1 + (int)(uniform01() * 6);
        for (int t = 0; t < w.L; t++) {
            int e = segment_end(&w, t), last_ref = e < t + n_step - 1 ? e : t + n_step - 1;
            int taken = last_ref - t + 1;
            double g_ref = 0.0;
            for (int j = 0; j < taken; j++)
                g_ref += pow(gamma, j) * (double)w.r[t + j];
            double d_ref = w.term[last_ref] ? 0.0 : pow(gamma, taken);
            double d;
            int last;
            double g = fh_q_n_step_window(w.r, w.term, w.trunc, w.L, t, n_step, gamma, &d, &last);
            if (last != last_ref || !fh_close(g, g_ref, TOL_DOUBLE, TOL_DOUBLE) ||
                !fh_close(d, d_ref, TOL_DOUBLE, TOL_DOUBLE)) {
                if (bad++ < 5)
                    fprintf(stderr, "n-step t %d/%d n %d: G %.17g vs %.17g, d %.17g vs %.17g, "
                            "last %d vs %d\n", t, w.L, n_step, g, g_ref, d, d_ref, last,
                            last_ref);
            }
        }
    }
    CHECK_MSG(bad == 0, "%d n-step windows differ from the float64 reference", bad);
}

/* The forward view of G_t^lambda within t's segment [t, e] (m = e - t): the k-step
 * returns G^(k) = sum_{j<k} gamma^j r_{t+j} + gamma^k Q_max(s_{t+k}), for k = 1..m mixed
 * with weights (1 - lambda) lambda^{k-1}, plus lambda^m times the segment's full return
 * (bootstrapped from q_e unless e is terminal). */
static double q_lambda_forward(const row *w, int t, double gamma, double lambda)
{
    int e = segment_end(w, t), m = e - t;
    double mix = 0.0;
    for (int k = 1; k <= m; k++) {
        double gk = 0.0;
        for (int j = 0; j < k; j++)
            gk += pow(gamma, j) * (double)w->r[t + j];
        gk += pow(gamma, k) * (double)w->q[t + k - 1];
        mix += (1.0 - lambda) * pow(lambda, k - 1) * gk;
    }
    double full = 0.0;
    for (int j = 0; j <= m; j++)
        full += pow(gamma, j) * (double)w->r[t + j];
    if (!w->term[e])
        full += pow(gamma, m + 1) * (double)w->q[e];
    return mix + pow(lambda, m) * full;
}

static void test_q_lambda_row(void)
{
    int bad = 0;
    for (int k = 0; k < ROWS; k++) {
        row w;
        random_row(&w);
        float gamma = (float)(0.9 + 0.099 * uniform01());
        float lambda = k % 10 == 0 ? (float)(k % 20 == 0) : (float)uniform01(); /* 0, 1 too */
        float out[MAX_L];
        fh_q_lambda_row(out, w.r, w.term, w.trunc, w.q, w.L, gamma, lambda);
        for (int t = 0; t < w.L; t++) {
            double ref = q_lambda_forward(&w, t, (double)gamma, (double)lambda);
            if (!fh_close(out[t], ref, TOL_FLOAT, TOL_FLOAT) && bad++ < 5)
                fprintf(stderr, "Q(lambda) t %d/%d lambda %g: %.9g vs %.9g\n", t, w.L,
                        (double)lambda, (double)out[t], ref);
        }
    }
    CHECK_MSG(bad == 0, "Q(lambda) differs from the forward view at %d steps", bad);
}

static void test_double_dqn_target(void)
{
    int bad = 0;
    for (int k = 0; k < ROWS; k++) {
        float qo[FH_N_ACTIONS], qt[FH_N_ACTIONS];
        for (int a = 0; a < FH_N_ACTIONS; a++) {
            /* a coarse grid, so that ties between actions occur */
            qo[a] = (float)floor(8.0 * uniform01()) * 0.25f;
            qt[a] = (float)(4.0 * uniform01() - 2.0);
        }
        double top = -INFINITY;
        for (int a = 0; a < FH_N_ACTIONS; a++)
            top = fmax(top, (double)qo[a]);
        int star = 0;
        while ((double)qo[star] != top)
            star++;
        float G = (float)(10.0 * uniform01() - 5.0), d = (float)uniform01();
        double ref = (double)G + (double)d * (double)qt[star];
        int best = argmax_first(qo, FH_N_ACTIONS);
        float y = fh_q_double_dqn_target(G, d, qt[best]);
        if ((best != star || !fh_close(y, ref, TOL_FLOAT, TOL_FLOAT)) && bad++ < 5)
            fprintf(stderr, "double DQN: a* %d vs %d, y %.9g vs %.9g\n", best, star,
                    (double)y, ref);
    }
    CHECK_MSG(bad == 0, "%d double-DQN targets differ from the float64 reference", bad);
}

static void test_huber(void)
{
    int bad = 0;
    for (int k = 0; k < ROWS; k++) {
        double dl = 0.1 + 2.0 * uniform01(), x = 8.0 * uniform01() - 4.0;
        if (k == 0)
            x = dl; /* the boundary: the quadratic branch */
        double ref = fabs(x) <= dl ? 0.5 * x * x : dl * (fabs(x) - 0.5 * dl);
        double gref = x < -dl ? -dl : x > dl ? dl : x;
        double grad;
        double l = fh_q_huber(x, dl, &grad);
        if ((!fh_close(l, ref, TOL_DOUBLE, TOL_DOUBLE) || grad != gref) && bad++ < 5)
            fprintf(stderr, "huber x %g delta %g: %.17g vs %.17g, grad %.17g vs %.17g\n", x, dl,
                    l, ref, grad, gref);
    }
    CHECK_MSG(bad == 0, "%d Huber losses differ from the definition", bad);
}

int main(void)
{
    test_n_step_window();
    test_q_lambda_row();
    test_double_dqn_target();
    test_huber();
    return fh_test_finish();
}
