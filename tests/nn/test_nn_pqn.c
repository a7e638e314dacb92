/* test_nn_pqn.c — the PQN Q-network (FH_NET_PQN: the Q-network with LayerNorm before
 * each hidden activation, issue 18) and its LayerNorm op.
 *
 * - LayerNorm forward against a float64 reference (nn_ref.h) on random rows of several
 *   widths, row means up to +-50 and spreads down to 0.5: |a - b| <= 2e-5 + 1e-4 |b|
 *   (float32 x - mean loses about |mean| / spread ulps of xhat); constant rows and
 *   one-feature rows give beta exactly; y aliasing x gives the same bits.
 * - LayerNorm backward (dx, dgamma, dbeta) against central finite differences of the
 *   float64 reference, h = 1e-6, atol 1e-6, rtol 1e-4 (gradients O(1); the observed
 *   error is under 5% of that); gradients pre-filled with noise, so accumulation is
 *   checked too.
 * - The whole network's gradient, every gamma, beta and bias, 64 weights per layer and
 *   the input, against central differences of the float64 network, tensor by tensor:
 *   atol 1e-4 max|fd| of the tensor, rtol 1e-3 (20 times tighter than test_nn_grad.c's
 *   network tolerance; the observed error is under 1% of it).
 * - The tensor table (names, shapes, offsets, count = FH_PQN_N_PARAMS = 53,549).
 * - The batched forward is exactly linear -> fh_layer_norm_forward -> LeakyReLU per
 *   hidden layer (bit for bit); one row at a time (B = 1, the GPU kernel's reference)
 *   agrees with the batch; a workspace of another kind is refused.
 * - A checkpoint round trip of nets[FH_NET_PQN] (params, Adam m, v, step bit for bit),
 *   its keys, and the refusals between Q-network and PQN files (and of a save of both:
 *   they share keys) and from actor-only files.
 * One ctest entry per case (test_nn_pqn CASE; tests/dqn/test_cases.h); a case with random
 * inputs seeds its own generator, OpenBLAS on one thread throughout. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "foxhunt/checkpoint.h"
#include "foxhunt/nn.h"
#include "foxhunt/safetensors.h"
#include "dqn/test_cases.h"
#include "nn_ref.h"
#include "test_util.h"

#define H 1e-6

static float *fdup(const float *x, size_t n)
{
    float *p = malloc(n * sizeof *p);
    memcpy(p, x, n * sizeof *p);
    return p;
}

/* Compares (after - before) with central differences of f over vars[idx[k]] (idx NULL:
 * 0..n-1). atol < 0: -atol times the largest |fd|. */
static void check_grad(const char *what, ref_scalar_fn f, void *ctx, double *vars,
                       const size_t *idx, size_t n, const float *after, const float *before,
                       double atol, double rtol)
{
    double *a = malloc(n * sizeof *a), *r = malloc(n * sizeof *r);
    double maxr = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = idx ? idx[k] : k;
        a[k] = (double)after[i] - (before ? (double)before[i] : 0.0);
        r[k] = ref_fd(f, ctx, vars, i, H);
        maxr = fabs(r[k]) > maxr ? fabs(r[k]) : maxr;
    }
    if (atol < 0)
        atol = -atol * maxr;
    if (!CHECK_ARRAY_CLOSE(what, a, r, n, atol, rtol))
        fprintf(stderr, "  (%s: %zu values, max |fd| %.3g)\n", what, n, maxr);
    free(a);
    free(r);
}

/* ---------------- the tensor table ---------------- */
static void test_table(void)
{
    static const struct {
        const char *name;
        int rank, s0, s1;
        size_t offset;
    } ex[] = {
        {"q_layer_0.weight", 2, 256, 54, 0},     {"q_layer_0.bias", 1, 256, 0, 13824},
        {"q_norm_0.weight", 1, 256, 0, 14080},   {"q_norm_0.bias", 1, 256, 0, 14336},
        {"q_layer_1.weight", 2, 128, 256, 14592}, {"q_layer_1.bias", 1, 128, 0, 47360},
        {"q_norm_1.weight", 1, 128, 0, 47488},   {"q_norm_1.bias", 1, 128, 0, 47616},
        {"q_output.weight", 2, 45, 128, 47744},  {"q_output.bias", 1, 45, 0, 53504},
    };
    CHECK(FH_PQN_N_PARAMS == 53549);
    CHECK(FH_PQN_N_PARAMS == FH_QNET_N_PARAMS + 2 * (256 + 128));
    const fh_net_desc *d = fh_net_desc_get(FH_NET_PQN);
    CHECK(d != NULL && d->kind == FH_NET_PQN && strcmp(d->name, "pqn") == 0);
    CHECK(d->layer_norm == 1 && d->norm_eps == 1e-5f && d->hidden_act == FH_ACT_LEAKY_RELU &&
          d->leaky_slope == 0.01f && d->n_params == FH_PQN_N_PARAMS);
    CHECK(fh_net_desc_get(FH_NET_QNET)->layer_norm == 0);
    fh_tensor_desc t[FH_NN_MAX_TENSORS];
    int n = fh_net_tensors(t, d);
    CHECK_MSG(n == 10, "%d tensors", n);
    for (int i = 0; i < n && i < 10; i++)
        CHECK_MSG(strcmp(t[i].name, ex[i].name) == 0 && t[i].rank == ex[i].rank &&
                      t[i].shape[0] == ex[i].s0 && t[i].shape[1] == ex[i].s1 &&
                      t[i].offset == ex[i].offset,
                  "tensor %d: %s rank %d [%d, %d] at %zu, expected %s [%d, %d] at %zu", i,
                  t[i].name, t[i].rank, t[i].shape[0], t[i].shape[1], t[i].offset, ex[i].name,
                  ex[i].s0, ex[i].s1, ex[i].offset);
    CHECK(t[9].offset + t[9].numel == FH_PQN_N_PARAMS);
    for (int l = 0; l < 3; l++)
        CHECK(fh_net_layer_tensor(d, l) == 4 * l);
    /* every descriptor's table is contiguous, fits FH_NN_MAX_TENSORS and its count */
    for (int k = 0; k < FH_NET_COUNT; k++) {
        const fh_net_desc *dk = fh_net_desc_get((fh_net_kind)k);
        int nk = fh_net_tensors(t, dk);
        size_t off = 0;
        for (int i = 0; i < nk; i++) {
            CHECK(t[i].offset == off);
            off += t[i].numel;
        }
        CHECK_MSG(nk <= FH_NN_MAX_TENSORS && off == dk->n_params, "%s: %d tensors, %zu "
                  "params", dk->name, nk, off);
    }
    fh_mlp m = {0};
    fh_error err;
    CHECK(fh_mlp_init(&m, FH_NET_PQN, &err) == FH_OK);
    CHECK(m.n_params == FH_PQN_N_PARAMS && m.n_tensors == 10);
    CHECK(fh_mlp_weight(&m, m.params, 1) == m.params + 14592);
    CHECK(fh_mlp_bias(&m, m.params, 2) == m.params + 53504);
    CHECK(fh_mlp_norm_gamma(&m, m.grads, 1) == m.grads + 47488);
    CHECK(fh_mlp_norm_beta(&m, m.adam_m, 0) == m.adam_m + 14336);
    CHECK(fh_mlp_norm_gamma(&m, m.params, 2) == NULL && fh_mlp_norm_beta(&m, m.params, 2) == NULL);
    fh_mlp_free(&m);
}

/* ---------------- LayerNorm forward ---------------- */
static void test_ln_forward(ref_rng *rng)
{
    enum { B = 7, NMAX = 256 };
    const int widths[] = {1, 2, 45, 128, 256};
    float x[B * NMAX], y[B * NMAX], y2[B * NMAX], gamma[NMAX], beta[NMAX], mean[B], rstd[B],
        mean2[B], rstd2[B];
    double xd[B * NMAX], gd[NMAX], bd[NMAX];
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        int n = widths[w];
        ref_fill(rng, gamma, gd, n, 0.5, 2.0);
        ref_fill(rng, beta, bd, n, -1, 1);
        for (int b = 0; b < B; b++) { /* row b: mean and spread of its own */
            double mu = ref_uniform(rng, -50, 50), sd = ref_uniform(rng, 0.5, 10);
            if (b == 0)
                mu = 0, sd = 1;
            for (int i = 0; i < n; i++) {
                x[b * n + i] = (float)(mu + sd * ref_uniform(rng, -1.7, 1.7));
                xd[b * n + i] = x[b * n + i];
            }
        }
        for (int i = 0; i < n; i++) /* the last row constant: var 0, y = beta */
            xd[(B - 1) * n + i] = x[(B - 1) * n + i] = 3.25f;
        fh_layer_norm_forward(y, mean, rstd, x, gamma, beta, B, n, FH_PQN_LN_EPS);
        double yd[B * NMAX], yr[B * NMAX], md[B], mr[B], rd[B], rr[B];
        for (int b = 0; b < B; b++) {
            memcpy(yr + b * n, xd + b * n, n * sizeof(double));
            ref_layer_norm(yr + b * n, n, gd, bd, (double)FH_PQN_LN_EPS);
            double mu = 0, var = 0;
            for (int i = 0; i < n; i++)
                mu += xd[b * n + i];
            mu /= n;
            for (int i = 0; i < n; i++)
                var += (xd[b * n + i] - mu) * (xd[b * n + i] - mu);
            mr[b] = mu;
            rr[b] = 1 / sqrt(var / n + (double)FH_PQN_LN_EPS);
            md[b] = mean[b];
            rd[b] = rstd[b];
        }
        for (int i = 0; i < B * n; i++)
            yd[i] = y[i];
        char what[64];
        snprintf(what, sizeof what, "layer_norm forward n=%d", n);
        CHECK_ARRAY_CLOSE(what, yd, yr, (size_t)B * n, 2e-5, 1e-4);
        snprintf(what, sizeof what, "layer_norm mean n=%d", n);
        CHECK_ARRAY_CLOSE(what, md, mr, B, 1e-6, 1e-6);
        snprintf(what, sizeof what, "layer_norm rstd n=%d", n);
        CHECK_ARRAY_CLOSE(what, rd, rr, B, 0, 1e-6);
        int is_beta = 1; /* constant row, and every row of a one-feature norm: y = beta */
        for (int i = 0; i < n; i++)
            is_beta &= y[(B - 1) * n + i] == beta[i];
        for (int b = 0; b < B && n == 1; b++)
            is_beta &= y[b] == beta[0];
        CHECK_MSG(is_beta, "n=%d: a constant row does not give beta", n);
        /* in place: the same bits */
        memcpy(y2, x, sizeof(float) * B * n);
        fh_layer_norm_forward(y2, mean2, rstd2, y2, gamma, beta, B, n, FH_PQN_LN_EPS);
        CHECK(memcmp(y2, y, sizeof(float) * B * n) == 0 && memcmp(mean2, mean, sizeof mean) == 0 &&
              memcmp(rstd2, rstd, sizeof rstd) == 0);
    }
}

/* ---------------- LayerNorm backward ---------------- */
enum { LB = 4, LN = 37 };
typedef struct {
    double *x, *gamma, *beta, *g; /* x, g (LB, LN) */
} ln_ctx;

static double ln_loss(void *c)
{
    ln_ctx *t = c;
    double s = 0, row[LN];
    for (int b = 0; b < LB; b++) {
        memcpy(row, t->x + b * LN, sizeof row);
        ref_layer_norm(row, LN, t->gamma, t->beta, (double)FH_PQN_LN_EPS);
        for (int i = 0; i < LN; i++)
            s += t->g[b * LN + i] * row[i];
    }
    return s;
}

static void test_ln_backward(ref_rng *rng)
{
    float x[LB * LN], gamma[LN], beta[LN], g[LB * LN], y[LB * LN], mean[LB], rstd[LB];
    double xd[LB * LN], gd[LN], bd[LN], gg[LB * LN];
    for (int b = 0; b < LB; b++) {
        double mu = ref_uniform(rng, -3, 3), sd = ref_uniform(rng, 0.3, 3);
        for (int i = 0; i < LN; i++) {
            x[b * LN + i] = (float)(mu + sd * ref_uniform(rng, -1.7, 1.7));
            xd[b * LN + i] = x[b * LN + i];
        }
    }
    ref_fill(rng, gamma, gd, LN, -1.5, 1.5);
    ref_fill(rng, beta, bd, LN, -1, 1);
    ref_fill(rng, g, gg, LB * LN, -1, 1);
    fh_layer_norm_forward(y, mean, rstd, x, gamma, beta, LB, LN, FH_PQN_LN_EPS);
    float dx0[LB * LN], dg0[LN], db0[LN];
    ref_fill(rng, dx0, NULL, LB * LN, -1, 1);
    ref_fill(rng, dg0, NULL, LN, -1, 1);
    ref_fill(rng, db0, NULL, LN, -1, 1);
    float *dx = fdup(dx0, LB * LN), *dg = fdup(dg0, LN), *db = fdup(db0, LN);
    fh_layer_norm_backward(dx, dg, db, g, x, mean, rstd, gamma, LB, LN);
    ln_ctx c = {xd, gd, bd, gg};
    check_grad("layer_norm dx", ln_loss, &c, xd, NULL, LB * LN, dx, dx0, 1e-6, 1e-4);
    check_grad("layer_norm dgamma", ln_loss, &c, gd, NULL, LN, dg, dg0, 1e-6, 1e-4);
    check_grad("layer_norm dbeta", ln_loss, &c, bd, NULL, LN, db, db0, 1e-6, 1e-4);
    /* dx NULL: dgamma, dbeta the same bits */
    float *dg2 = fdup(dg0, LN), *db2 = fdup(db0, LN);
    fh_layer_norm_backward(NULL, dg2, db2, g, x, mean, rstd, gamma, LB, LN);
    CHECK(memcmp(dg2, dg, sizeof(float) * LN) == 0 && memcmp(db2, db, sizeof(float) * LN) == 0);
    free(dx); free(dg); free(db); free(dg2); free(db2);
}

/* ---------------- the whole network ---------------- */
enum { NB = 3 };
typedef struct {
    const fh_net_desc *d;
    double *p, *x, *g, *out, *scratch;
} net_ctx;

static double net_loss(void *c)
{
    net_ctx *t = c;
    ref_mlp_forward(t->out, t->d, t->p, t->x, NB, t->scratch);
    double s = 0;
    for (int i = 0; i < NB * FH_N_ACTIONS; i++)
        s += t->g[i] * t->out[i];
    return s;
}

/* A PQN net with every parameter random-ish: orthogonal weights, gamma in [0.5, 1.5],
 * beta and biases in [-0.3, 0.3]. */
static void random_pqn(fh_mlp *m, ref_rng *rng, uint64_t seed)
{
    fh_mlp_init_orthogonal(m, seed);
    for (int l = 0; l < m->desc->n_layers; l++) {
        int o = m->desc->dims[l + 1];
        ref_fill(rng, fh_mlp_bias(m, m->params, l), NULL, o, -0.3, 0.3);
        float *gamma = fh_mlp_norm_gamma(m, m->params, l);
        if (gamma) {
            ref_fill(rng, gamma, NULL, o, 0.5, 1.5);
            ref_fill(rng, fh_mlp_norm_beta(m, m->params, l), NULL, o, -0.3, 0.3);
        }
    }
}

static void test_net_grad(ref_rng *rng)
{
    enum { IN = FH_STATE_DIM, OUT = FH_N_ACTIONS, NW = 64 };
    fh_error err;
    fh_mlp m = {0};
    fh_mlp_ws ws = {0};
    CHECK(fh_mlp_init(&m, FH_NET_PQN, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&ws, &m, NB, &err) == FH_OK);
    random_pqn(&m, rng, 31);
    float x[NB * IN], g[NB * OUT], y[NB * OUT], dx0[NB * IN];
    double xd[NB * IN], gd[NB * OUT], outd[NB * OUT];
    ref_fill(rng, x, xd, NB * IN, -1.5, 1.5);
    ref_fill(rng, g, gd, NB * OUT, -1, 1);
    ref_fill(rng, m.grads, NULL, m.n_params, -0.1, 0.1); /* backward must add */
    float *g0 = fdup(m.grads, m.n_params);
    ref_fill(rng, dx0, NULL, NB * IN, -0.1, 0.1);
    float *dx = fdup(dx0, NB * IN);
    CHECK(fh_mlp_forward(y, &ws, &m, x, NB, &err) == FH_OK);
    CHECK(fh_mlp_backward(dx, &m, &ws, g, NB, &err) == FH_OK);
    double *pd = malloc(sizeof(double) * m.n_params), *scr = malloc(sizeof(double) * 2 * NB * 1024);
    for (size_t i = 0; i < m.n_params; i++)
        pd[i] = m.params[i];
    net_ctx c = {m.desc, pd, xd, gd, outd, scr};
    /* forward against the float64 network too */
    net_loss(&c);
    double yd[NB * OUT], mx = 0;
    for (int i = 0; i < NB * OUT; i++) {
        yd[i] = y[i];
        mx = fabs(outd[i]) > mx ? fabs(outd[i]) : mx;
    }
    CHECK_ARRAY_CLOSE("pqn forward", yd, outd, NB * OUT, 1e-5 * (1 + mx), 1e-4);
    /* every gamma, beta and bias; NW weights per layer */
    size_t *idx = malloc(sizeof(size_t) * 256);
    for (int t = 0; t < m.n_tensors; t++) {
        const fh_tensor_desc *td = &m.tensors[t];
        size_t n = td->rank == 1 ? td->numel : NW;
        for (size_t k = 0; k < n; k++)
            idx[k] = td->offset + (td->rank == 1 ? k : ref_next(rng) % td->numel);
        char what[96];
        snprintf(what, sizeof what, "pqn backward d%s", td->name);
        check_grad(what, net_loss, &c, pd, idx, n, m.grads, g0, -1e-4, 1e-3);
    }
    check_grad("pqn backward dx", net_loss, &c, xd, NULL, NB * IN, dx, dx0, -1e-4, 1e-3);
    free(idx); free(pd); free(scr); free(g0); free(dx);
    fh_mlp_ws_free(&ws);
    fh_mlp_free(&m);
}

/* ---------------- the forward is the ops; one row at a time ---------------- */
static void test_forward_ops(ref_rng *rng)
{
    enum { B = 33, IN = FH_STATE_DIM, H1 = FH_QNET_H1, H2 = FH_QNET_H2, OUT = FH_N_ACTIONS };
    fh_error err;
    fh_mlp m = {0};
    fh_mlp_ws ws = {0}, ws1 = {0}, wq = {0};
    CHECK(fh_mlp_init(&m, FH_NET_PQN, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&ws, &m, B, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&ws1, &m, 1, &err) == FH_OK);
    random_pqn(&m, rng, 5);
    float *x = malloc(sizeof(float) * B * IN), *y = malloc(sizeof(float) * B * OUT);
    float *h1 = malloc(sizeof(float) * B * H1), *h2 = malloc(sizeof(float) * B * H2);
    float *q = malloc(sizeof(float) * B * OUT), mean[B], rstd[B];
    ref_fill(rng, x, NULL, (size_t)B * IN, -2, 2);
    CHECK(fh_mlp_forward(y, &ws, &m, x, B, &err) == FH_OK);
    const float s = FH_QNET_LEAKY_SLOPE;
    fh_linear_forward(h1, x, fh_mlp_weight(&m, m.params, 0), fh_mlp_bias(&m, m.params, 0), B,
                      IN, H1);
    fh_layer_norm_forward(h1, mean, rstd, h1, fh_mlp_norm_gamma(&m, m.params, 0),
                          fh_mlp_norm_beta(&m, m.params, 0), B, H1, FH_PQN_LN_EPS);
    fh_leaky_relu_forward(h1, h1, (size_t)B * H1, s);
    fh_linear_forward(h2, h1, fh_mlp_weight(&m, m.params, 1), fh_mlp_bias(&m, m.params, 1), B,
                      H1, H2);
    fh_layer_norm_forward(h2, mean, rstd, h2, fh_mlp_norm_gamma(&m, m.params, 1),
                          fh_mlp_norm_beta(&m, m.params, 1), B, H2, FH_PQN_LN_EPS);
    fh_leaky_relu_forward(h2, h2, (size_t)B * H2, s);
    fh_linear_forward(q, h2, fh_mlp_weight(&m, m.params, 2), fh_mlp_bias(&m, m.params, 2), B,
                      H2, OUT);
    CHECK_MSG(memcmp(q, y, sizeof(float) * B * OUT) == 0,
              "fh_mlp_forward is not linear -> layer_norm -> leaky_relu bit for bit");
    CHECK(memcmp(ws.norm_mean[1], mean, sizeof mean) == 0 &&
          memcmp(ws.norm_rstd[1], rstd, sizeof rstd) == 0);
    /* B = 1, row by row: the GPU kernel's reference, the same values to rounding */
    double a[OUT], r[OUT];
    int same_bits = 1, close = 1;
    for (int b = 0; b < B; b++) {
        float y1[OUT];
        CHECK(fh_mlp_forward(y1, &ws1, &m, x + (size_t)b * IN, 1, &err) == FH_OK);
        same_bits &= memcmp(y1, y + (size_t)b * OUT, sizeof y1) == 0;
        for (int k = 0; k < OUT; k++) {
            a[k] = y1[k];
            r[k] = y[(size_t)b * OUT + k];
        }
        close &= CHECK_ARRAY_CLOSE("pqn forward B=1 vs batch", a, r, OUT, 1e-5, 1e-5);
    }
    printf("note: PQN forward one row at a time vs the batch of %d: %s\n", B,
           same_bits ? "bit-identical" : "equal to rounding (sgemm kernels differ by shape)");
    /* a workspace of another kind (same layer count) is refused, not overrun */
    CHECK(fh_mlp_ws_init_kind(&wq, FH_NET_QNET, B, &err) == FH_OK);
    CHECK(fh_mlp_forward(y, &wq, &m, x, B, &err) != FH_OK);
    CHECK(strstr(err.message, "another net") != NULL);
    free(x); free(y); free(h1); free(h2); free(q);
    fh_mlp_ws_free(&ws);
    fh_mlp_ws_free(&ws1);
    fh_mlp_ws_free(&wq);
    fh_mlp_free(&m);
}

/* ---------------- checkpoint round trip ---------------- */
static char g_dir[64];
static const char *tpath(const char *name)
{
    static char p[2][128];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static void fill_exact(fh_mlp *m, int sentinel)
{
    for (size_t k = 0; k < 4 * m->n_params; k++) /* exact in float32 */
        m->mem[k] = sentinel ? -7.0f : (float)((double)(k % 4093) * 0.125 - 200.0);
    for (size_t k = 0; k < m->n_params; k++) /* Adam v >= 0 */
        m->adam_v[k] = sentinel ? -7.0f : (float)((double)(k % 509) * 0.25);
    m->adam_step = sentinel ? -1 : 123;
}

static void test_checkpoint(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/fh_pqn_XXXXXX");
    if (!mkdtemp(g_dir)) {
        CHECK_MSG(0, "mkdtemp");
        return;
    }
    fh_error err;
    fh_mlp a = {0}, b = {0}, qn = {0}, actor = {0};
    CHECK(fh_mlp_init(&a, FH_NET_PQN, &err) == FH_OK);
    CHECK(fh_mlp_init(&b, FH_NET_PQN, &err) == FH_OK);
    CHECK(fh_mlp_init(&qn, FH_NET_QNET, &err) == FH_OK);
    CHECK(fh_mlp_init(&actor, FH_NET_ACTOR, &err) == FH_OK);
    fill_exact(&a, 0);
    fill_exact(&b, 1);
    fh_checkpoint ck = {0};
    ck.nets[FH_NET_PQN] = &a;
    CHECK(fh_checkpoint_save(tpath("pqn.safetensors"), &ck, NULL, &err) == FH_OK);

    /* the keys: 10 tensors x (params, adam.m, adam.v) + adam.step.pqn */
    fh_st_file f;
    CHECK(fh_st_read(&f, tpath("pqn.safetensors"), &err) == FH_OK);
    CHECK_MSG(f.n_tensors == 31, "%zu tensors", f.n_tensors);
    int64_t s256[1] = {256}, s128[1] = {128}, one[1] = {1}, w0[2] = {256, 54};
    const fh_st_tensor *t = NULL;
    CHECK(fh_st_expect(&t, &f, "q_norm_0.weight", FH_DTYPE_F32, 1, s256, &err) == FH_OK);
    CHECK(t && memcmp(t->data, a.params + 14080, 256 * sizeof(float)) == 0);
    CHECK(fh_st_expect(&t, &f, "q_norm_0.bias", FH_DTYPE_F32, 1, s256, &err) == FH_OK);
    CHECK(fh_st_expect(&t, &f, "adam.m.q_norm_1.weight", FH_DTYPE_F32, 1, s128, &err) == FH_OK);
    CHECK(fh_st_expect(&t, &f, "adam.v.q_norm_1.bias", FH_DTYPE_F32, 1, s128, &err) == FH_OK);
    CHECK(t && memcmp(t->data, a.adam_v + 47616, 128 * sizeof(float)) == 0);
    CHECK(fh_st_expect(&t, &f, "q_layer_0.weight", FH_DTYPE_F32, 2, w0, &err) == FH_OK);
    CHECK(fh_st_expect(&t, &f, "adam.step.pqn", FH_DTYPE_I64, 1, one, &err) == FH_OK);
    fh_st_file_free(&f);

    /* round trip, bit for bit */
    fh_checkpoint in = {0};
    in.nets[FH_NET_PQN] = &b;
    CHECK(fh_checkpoint_load(tpath("pqn.safetensors"), &in, NULL, &err) == FH_OK);
    size_t np = a.n_params; /* params, Adam m and v (grads are not saved) */
    CHECK(memcmp(a.params, b.params, np * sizeof(float)) == 0 &&
          memcmp(a.adam_m, b.adam_m, np * sizeof(float)) == 0 &&
          memcmp(a.adam_v, b.adam_v, np * sizeof(float)) == 0);
    CHECK(b.adam_step == 123);

    /* a PQN file is not a Q-network's (no adam.step.qnet), and nothing lands */
    fill_exact(&qn, 1);
    fh_checkpoint asq = {0};
    asq.nets[FH_NET_QNET] = &qn;
    CHECK(fh_checkpoint_load(tpath("pqn.safetensors"), &asq, NULL, &err) != FH_OK);
    CHECK_MSG(strstr(err.message, "adam.step.qnet") != NULL, "%s", err.message);
    CHECK(qn.params[0] == -7.0f && qn.adam_step == -1);
    /* a Q-network's file is not a PQN's (no LayerNorm) */
    fill_exact(&qn, 0);
    fh_checkpoint sq = {0};
    sq.nets[FH_NET_QNET] = &qn;
    CHECK(fh_checkpoint_save(tpath("qnet.safetensors"), &sq, NULL, &err) == FH_OK);
    fill_exact(&b, 1);
    CHECK(fh_checkpoint_load(tpath("qnet.safetensors"), &in, NULL, &err) != FH_OK);
    CHECK_MSG(strstr(err.message, "q_norm_0.weight") != NULL, "%s", err.message);
    CHECK(b.params[0] == -7.0f);
    /* they share the q_layer_* keys: one checkpoint holds one of them */
    fh_checkpoint both = {0};
    both.nets[FH_NET_QNET] = &qn;
    both.nets[FH_NET_PQN] = &a;
    CHECK(fh_checkpoint_save(tpath("both.safetensors"), &both, NULL, &err) != FH_OK);
    CHECK_MSG(strstr(err.message, "added twice") != NULL, "%s", err.message);
    CHECK(access(tpath("both.safetensors"), F_OK) != 0);

    /* an actor-only file does not answer a load that asks for the PQN net */
    fh_feature_norm norm;
    for (int i = 0; i < FH_N_MARKET_FEATURES; i++) {
        norm.mean[i] = 0.0f;
        norm.std[i] = 1.0f;
    }
    fill_exact(&actor, 0);
    fh_checkpoint ao = {0};
    ao.nets[FH_NET_ACTOR] = &actor;
    ao.norm = &norm;
    ao.actor_only = 1;
    CHECK(fh_checkpoint_save(tpath("actor.safetensors"), &ao, "{}", &err) == FH_OK);
    fh_checkpoint lo = {0};
    lo.nets[FH_NET_ACTOR] = &actor;
    lo.nets[FH_NET_PQN] = &b;
    CHECK(fh_checkpoint_load(tpath("actor.safetensors"), &lo, NULL, &err) == FH_ERR_INPUT);
    CHECK_MSG(strstr(err.message, "the PQN Q-network's weights") != NULL, "%s", err.message);
    /* nor may an actor-only save carry it */
    ao.nets[FH_NET_PQN] = &a;
    CHECK(fh_checkpoint_save(tpath("actor2.safetensors"), &ao, "{}", &err) != FH_OK);
    CHECK(access(tpath("actor2.safetensors"), F_OK) != 0);

    const char *files[] = {"pqn.safetensors", "qnet.safetensors", "actor.safetensors"};
    for (int i = 0; i < 3; i++)
        unlink(tpath(files[i]));
    rmdir(g_dir);
    fh_mlp_free(&a);
    fh_mlp_free(&b);
    fh_mlp_free(&qn);
    fh_mlp_free(&actor);
}

/* ---------------- the cases ---------------- */
static void case_table(void)
{
    fh_nn_set_threads(1);
    test_table();
}
static void case_ln_forward(void)
{
    fh_nn_set_threads(1);
    ref_rng rng = {0x9a3c5e7f10325476ull};
    test_ln_forward(&rng);
}
static void case_ln_backward(void)
{
    fh_nn_set_threads(1);
    ref_rng rng = {0x3b1d6f2e84c07a95ull};
    test_ln_backward(&rng);
}
static void case_net_grad(void)
{
    fh_nn_set_threads(1);
    ref_rng rng = {0xc4e2a8170f93d65bull};
    test_net_grad(&rng);
}
static void case_forward_ops(void)
{
    fh_nn_set_threads(1);
    ref_rng rng = {0x5f81b3d9e2a6c047ull};
    test_forward_ops(&rng);
}
static void case_checkpoint(void)
{
    fh_nn_set_threads(1);
    test_checkpoint();
}

static const fh_test_case CASES[] = {
    {"table", case_table},
    {"layer_norm_forward", case_ln_forward},
    {"layer_norm_backward", case_ln_backward},
    {"net_grad", case_net_grad},
    {"forward_ops", case_forward_ops},
    {"checkpoint", case_checkpoint},
};
FH_TEST_CASES_MAIN(CASES)
