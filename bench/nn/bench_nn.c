/* bench_nn.c — CPU forward + backward throughput of the actor and the critic on PPO
 * minibatches of 512 (issue 4), against the raw OpenBLAS sgemm rate for 512^3 and the
 * critic's biggest layer (512 x 384 x 512) in its three orientations. Median of 5 runs.
 *
 * FLOPs counted: forward 2 B sum(in*out); backward 2 B sum(in*out) for dW plus
 * 2 B sum(in*out) for dX except the first layer (the trainer asks no input gradient).
 * Bias adds, activations and the bias-gradient sums are left out (< 1%).
 *
 * usage: bench_nn [threads ...]   (default: 1 and the OpenBLAS default) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "foxhunt/nn.h"
#include "foxhunt/timing.h"

#define B 512
#define RUNS 5

static void fill(float *p, size_t n, unsigned s)
{
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (float)((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
    }
}

/* C (M, N) = A (M, K) op B; ta/tb as cblas; returns GFLOP/s median */
static double bench_gemm(int M, int N, int K, int ta, int tb)
{
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N),
          *c = malloc(sizeof(float) * M * N);
    fill(a, (size_t)M * K, 1);
    fill(b, (size_t)K * N, 2);
    int lda = ta ? M : K, ldb = tb ? K : N;
    double t[RUNS];
    int reps = 0;
    double flop = 2.0 * M * N * K;
    reps = (int)(2e9 / flop) + 1;
    for (int r = 0; r < RUNS; r++) {
        double t0 = fh_clock_seconds();
        for (int i = 0; i < reps; i++)
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                        tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, a, lda, b, ldb, 0.0f,
                        c, N);
        t[r] = (fh_clock_seconds() - t0) / reps;
    }
    free(a);
    free(b);
    free(c);
    return flop / fh_median_inplace(t, RUNS) / 1e9;
}

static void bench_net(fh_net_kind kind)
{
    fh_error err;
    fh_mlp m = {0};
    fh_mlp_ws ws = {0};
    if (fh_mlp_init(&m, kind, &err) != FH_OK || fh_mlp_ws_init(&ws, &m, B, &err) != FH_OK) {
        fprintf(stderr, "bench_nn: %s\n", err.message);
        exit(1);
    }
    fh_mlp_init_orthogonal(&m, 1);
    const fh_net_desc *d = m.desc;
    double macs = 0;
    for (int l = 0; l < d->n_layers; l++)
        macs += (double)d->dims[l] * d->dims[l + 1];
    double fwd = 2.0 * B * macs;
    double bwd = 4.0 * B * macs - 2.0 * B * d->dims[0] * d->dims[1];
    int out = d->dims[d->n_layers];
    float *x = malloc(sizeof(float) * B * d->dims[0]), *g = malloc(sizeof(float) * B * out);
    fill(x, (size_t)B * d->dims[0], 3);
    fill(g, (size_t)B * out, 4);
    int reps = (int)(3e9 / (fwd + bwd)) + 1;
    double tf[RUNS], tb[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double f = 0, bk = 0;
        for (int i = 0; i < reps; i++) {
            double t0 = fh_clock_seconds();
            fh_mlp_forward(NULL, &ws, &m, x, B, &err);
            double t1 = fh_clock_seconds();
            fh_mlp_zero_grad(&m);
            fh_mlp_backward(NULL, &m, &ws, g, B, &err);
            double t2 = fh_clock_seconds();
            f += t1 - t0;
            bk += t2 - t1;
        }
        tf[r] = f / reps;
        tb[r] = bk / reps;
    }
    double mf = fh_median_inplace(tf, RUNS), mb = fh_median_inplace(tb, RUNS);
    double tot[RUNS];
    for (int r = 0; r < RUNS; r++)
        tot[r] = tf[r] + tb[r];
    double mt = fh_median_inplace(tot, RUNS);
    printf("  %-7s fwd %7.3f ms (%6.1f GFLOP/s)  bwd %7.3f ms (%6.1f GFLOP/s)  "
           "fwd+bwd %7.3f ms = %9.0f samples/s, %6.1f GFLOP/s\n",
           d->name, mf * 1e3, fwd / mf / 1e9, mb * 1e3, bwd / mb / 1e9, mt * 1e3, B / mt,
           (fwd + bwd) / mt / 1e9);
    free(x);
    free(g);
    fh_mlp_ws_free(&ws);
    fh_mlp_free(&m);
}

int main(int argc, char **argv)
{
    int threads[8], n = 0;
    for (int i = 1; i < argc && n < 8; i++)
        threads[n++] = atoi(argv[i]);
    if (n == 0) {
        threads[n++] = 1;
        if (fh_nn_get_threads() > 1)
            threads[n++] = fh_nn_get_threads();
    }
    printf("bench_nn: minibatch %d, median of %d runs\n", B, RUNS);
    for (int k = 0; k < n; k++) {
        fh_nn_set_threads(threads[k]);
        printf("OpenBLAS threads %d\n", fh_nn_get_threads());
        printf("  sgemm 512x512x512 NN            %6.1f GFLOP/s\n", bench_gemm(512, 512, 512, 0, 0));
        printf("  sgemm critic L1 fwd  (512x384x512, x W^T)  %6.1f GFLOP/s\n",
               bench_gemm(512, 384, 512, 0, 1));
        printf("  sgemm critic L1 dW   (384x512x512, dy^T x) %6.1f GFLOP/s\n",
               bench_gemm(384, 512, 512, 1, 0));
        printf("  sgemm critic L1 dX   (512x512x384, dy W)   %6.1f GFLOP/s\n",
               bench_gemm(512, 512, 384, 0, 0));
        bench_net(FH_NET_ACTOR);
        bench_net(FH_NET_CRITIC);
    }
    return 0;
}
