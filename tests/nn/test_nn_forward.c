/* test_nn_forward.c — batched forward of every network against an independent float64
 * reference (nn_ref.h) on random weights and inputs; tolerance |a - b| <= atol + rtol|b|
 * with atol = 1e-5 (1 + max|ref|), rtol 1e-4 (float32 through up to six layers).
 * Also: forward + backward on a 512 minibatch is bit-identical run to run for a fixed
 * OpenBLAS thread count (1 and 2), which bit-identical resume needs. */
#include <stdio.h>

#include "foxhunt/nn.h"
#include "nn_ref.h"
#include "test_util.h"

static void test_forward(ref_rng *rng, fh_net_kind kind, int B)
{
    fh_error err;
    fh_mlp m = {0};
    fh_mlp_ws ws = {0};
    CHECK(fh_mlp_init(&m, kind, &err) == FH_OK);
    CHECK(fh_mlp_ws_init(&ws, &m, B, &err) == FH_OK);
    fh_mlp_init_orthogonal(&m, 99 + kind);
    for (int t = 1; t < m.n_tensors; t += 2) /* random biases */
        for (size_t i = 0; i < m.tensors[t].numel; i++)
            m.params[m.tensors[t].offset + i] = (float)ref_uniform(rng, -0.5, 0.5);
    const fh_net_desc *d = m.desc;
    int in = d->dims[0], out = d->dims[d->n_layers];
    float *x = malloc(sizeof(float) * B * in), *y = malloc(sizeof(float) * B * out);
    double *xd = malloc(sizeof(double) * B * in), *yd = malloc(sizeof(double) * B * out);
    double *yr = malloc(sizeof(double) * B * out), *pd = malloc(sizeof(double) * m.n_params);
    double *scr = malloc(sizeof(double) * 2 * (size_t)B * 1024);
    ref_fill(rng, x, xd, (size_t)B * in, -2, 2);
    for (size_t i = 0; i < m.n_params; i++)
        pd[i] = m.params[i];
    CHECK(fh_mlp_forward(y, &ws, &m, x, B, &err) == FH_OK);
    ref_mlp_forward(yr, d, pd, xd, B, scr);
    double mx = 0;
    for (int i = 0; i < B * out; i++) {
        yd[i] = y[i];
        mx = fabs(yr[i]) > mx ? fabs(yr[i]) : mx;
    }
    char what[80];
    snprintf(what, sizeof what, "%s forward B=%d", d->name, B);
    CHECK_ARRAY_CLOSE(what, yd, yr, (size_t)B * out, 1e-5 * (1 + mx), 1e-4);
    /* the output is also left in the workspace */
    CHECK(memcmp(ws.act[d->n_layers], y, sizeof(float) * B * out) == 0);
    free(x); free(y); free(xd); free(yd); free(yr); free(pd); free(scr);
    fh_mlp_ws_free(&ws);
    fh_mlp_free(&m);
}

/* forward + backward of actor and critic on 512 rows; returns a malloc'd snapshot of
 * (actor logits, critic values, actor grads, critic grads) */
static float *run_once(int threads, size_t *n_out)
{
    enum { B = 512 };
    fh_nn_set_threads(threads);
    fh_error err;
    fh_mlp a = {0}, c = {0};
    fh_mlp_ws wa = {0}, wc = {0};
    fh_mlp_init(&a, FH_NET_ACTOR, &err);
    fh_mlp_init(&c, FH_NET_CRITIC, &err);
    fh_mlp_ws_init(&wa, &a, B, &err);
    fh_mlp_ws_init(&wc, &c, B, &err);
    fh_mlp_init_orthogonal(&a, 5);
    fh_mlp_init_orthogonal(&c, 6);
    ref_rng rng = {42};
    float *x = malloc(sizeof(float) * B * FH_STATE_DIM);
    float *g = malloc(sizeof(float) * B * FH_N_ACTIONS);
    ref_fill(&rng, x, NULL, (size_t)B * FH_STATE_DIM, -2, 2);
    ref_fill(&rng, g, NULL, (size_t)B * FH_N_ACTIONS, -1, 1);
    size_t n = (size_t)B * FH_N_ACTIONS + B + a.n_params + c.n_params;
    float *snap = malloc(sizeof(float) * n), *p = snap;
    fh_mlp_forward(p, &wa, &a, x, B, &err);
    p += (size_t)B * FH_N_ACTIONS;
    fh_mlp_forward(p, &wc, &c, x, B, &err);
    fh_mlp_backward(NULL, &a, &wa, g, B, &err);
    fh_mlp_backward(NULL, &c, &wc, g, B, &err); /* first B entries of g as dvalues */
    p += B;
    memcpy(p, a.grads, sizeof(float) * a.n_params);
    p += a.n_params;
    memcpy(p, c.grads, sizeof(float) * c.n_params);
    free(x);
    free(g);
    fh_mlp_ws_free(&wa);
    fh_mlp_ws_free(&wc);
    fh_mlp_free(&a);
    fh_mlp_free(&c);
    *n_out = n;
    return snap;
}

int main(void)
{
    ref_rng rng = {0xfeedface12345ull};
    for (int k = 0; k < FH_NET_COUNT; k++) {
        test_forward(&rng, (fh_net_kind)k, 1);
        test_forward(&rng, (fh_net_kind)k, 37);
    }
    size_t n1, n2;
    for (int threads = 1; threads <= 2; threads++) {
        float *s1 = run_once(threads, &n1), *s2 = run_once(threads, &n2);
        CHECK_MSG(n1 == n2 && memcmp(s1, s2, n1 * sizeof(float)) == 0,
                  "forward+backward not bit-identical run to run with %d OpenBLAS threads",
                  threads);
        free(s1);
        free(s2);
    }
    float *s1 = run_once(1, &n1), *s2 = run_once(2, &n2);
    printf("note: 1 vs 2 OpenBLAS threads: %s\n",
           memcmp(s1, s2, n1 * sizeof(float)) == 0 ? "bit-identical" : "differ (expected "
           "possible; keep the thread count fixed across a resume)");
    free(s1);
    free(s2);
    return fh_test_finish();
}
