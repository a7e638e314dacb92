/* bench_train.c — `foxhunt bench --train`: whole training iterations timed on each
 * device, side by side in one run (issue 17). An iteration is what `foxhunt train`
 * does per iteration: the collection (with the GPU update, the batch stays on the
 * device and only the metrics' rewards, actions and dones come back), then the PPO
 * update and the curiosity fit. Medians over the timed iterations after one warm-up
 * (which compiles, captures the graphs and tunes the matmuls).
 *
 * PQN and DQN rows (issue 18) time fh_q_trainer_iterate's iterations the same way, at the
 * same N x L: the epsilon-greedy collection, then PQN's epochs over the collection or
 * DQN's push into the ring and replay_ratio x N x L gradient steps, then the curiosity
 * fit. DQN's learning_starts is capped at N x L, so the warm-up iteration fills the ring
 * past it and every timed iteration updates. No checkpoint is written. */
#include "cli/bench_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/nn.h"
#include "foxhunt/q_trainer.h"
#include "foxhunt/timing.h"
#include "foxhunt/trainer.h"
#include "rl/ppo_backend.h"
#if FH_HAVE_CUDA
#include "cuda/gemm_ceiling.h"
#include "cuda/gpu_ppo_update.h"
#include "foxhunt/precision.h"
#endif

#define MAX_TRAIN_REPEATS 64
#define CEILING_REPEATS 5

/* Multiply-accumulates of one forward pass of a network for one sample. */
static double net_macs(fh_net_kind kind)
{
    const fh_net_desc *d = fh_net_desc_get(kind);
    double macs = 0.0;
    for (int i = 0; i < d->n_layers; i++)
        macs += (double)d->dims[i] * d->dims[i + 1];
    return macs;
}

/* The matmul work of an update, the usual 6 FLOP per MAC and sample (forward 2, the
 * backward's input and weight gradients 2 each), over its epochs x N x L samples: PPO's
 * actor and critic, PQN's Q-network. What it leaves out (the element-wise passes, the
 * curiosity fit, LayerNorm) is small beside it. */
static double update_flop(const char *algo, int epochs, long long samples)
{
    double macs = strcmp(algo, "ppo") == 0 ? net_macs(FH_NET_ACTOR) + net_macs(FH_NET_CRITIC)
                                           : net_macs(FH_NET_PQN);
    return 6.0 * macs * epochs * (double)samples;
}

/* "  12.34   24.2%": the update's achieved TFLOP/s and its share of the device's measured
 * ceiling at that precision (ceiling <= 0: unknown, the CPU). */
static void format_flops(char *out, size_t size, double flop, double update_ms, double ceiling)
{
    double tflops = flop / (update_ms * 1e-3) / 1e12;
    if (ceiling > 0.0)
        snprintf(out, size, "%11.4g %6.1f%%", tflops, 100.0 * tflops / ceiling);
    else
        snprintf(out, size, "%11.4g %7s", tflops, "-");
}

/* The defaults with the bench's shape, device and precision: a warm-up iteration and
 * `repeats` timed ones. */
static void bench_config(fh_train_config *cfg, const char *algo, const char *device,
                         const fh_bench_train_options *o)
{
    fh_train_config_default(cfg);
    snprintf(cfg->algo, sizeof cfg->algo, "%s", algo);
    snprintf(cfg->device, sizeof cfg->device, "%s", device);
    snprintf(cfg->precision, sizeof cfg->precision, "%s", o->precision);
    cfg->episodes = o->episodes;
    cfg->steps = o->steps;
    cfg->epochs = o->epochs;
    cfg->minibatch = o->minibatch;
    cfg->iterations = o->repeats + 1;
    cfg->threads = o->threads;
}

/* One device's row; FH_OK with *ran = 0 when the device is not there. */
static fh_status bench_device(const char *device, const fh_bench_train_options *o,
                              double ceiling, fh_error *err)
{
    fh_train_config cfg;
    bench_config(&cfg, "ppo", device, o);
    fh_trainer t;
    fh_status st = fh_trainer_init(&t, &cfg, err);
    if (st != FH_OK) {
        fh_trainer_free(&t);
        return st;
    }
    double iter[MAX_TRAIN_REPEATS], col[MAX_TRAIN_REPEATS], upd[MAX_TRAIN_REPEATS];
    double upd_dev[MAX_TRAIN_REPEATS];
    int n = 0;
    fh_ppo_stats stats;
    for (int r = 0; r <= o->repeats && st == FH_OK; r++) {
        fh_collect_params p = {&t.actor, &t.critic, &t.curiosity, (float)cfg.gamma,
                               (float)cfg.gae_lambda};
        double t0 = fh_clock_seconds();
        fh_iteration_sums sums;
        st = fh_ppo_backend_collect_for_update(&t, &p, &sums, err);
        double t1 = fh_clock_seconds();
        if (st == FH_OK)
            st = fh_ppo_backend_update(&t, &stats, fh_train_config_lr(&cfg, r + 1),
                                       fh_train_config_ent_coef(&cfg, r + 1), NULL, 0, err);
        double t2 = fh_clock_seconds();
        if (st != FH_OK || r == 0)
            continue;
        iter[n] = (t2 - t0) * 1e3;
        col[n] = (t1 - t0) * 1e3;
        upd[n] = (t2 - t1) * 1e3;
        upd_dev[n] = NAN;
#if FH_HAVE_CUDA
        if (t.gpu_update)
            upd_dev[n] = fh_gpu_ppo_update_last_ms(t.gpu_update);
#endif
        n++;
    }
    if (st == FH_OK) {
        double it = fh_median_inplace(iter, n), c = fh_median_inplace(col, n);
        double u = fh_median_inplace(upd, n), ud = fh_median_inplace(upd_dev, n);
        long long samples = (long long)o->episodes * o->steps;
        char flops[40];
        format_flops(flops, sizeof flops, update_flop("ppo", o->epochs, samples),
                     isfinite(ud) ? ud : u, t.gpu_update ? ceiling : 0.0);
        /* the update's device time exists only for the GPU update: "-" otherwise */
        char dev_ms[16];
        if (isfinite(ud))
            snprintf(dev_ms, sizeof dev_ms, "%10.2f", ud);
        else
            snprintf(dev_ms, sizeof dev_ms, "%10s", "-");
        printf("%-4s %-8s %-4s %7d %5d %9d %6d %4s %10.2f %10.2f %10.2f %s %s %14.0f\n",
               "ppo", device, fh_ppo_backend_update_device(&t), o->episodes, o->steps,
               o->epochs, o->minibatch, o->precision, it, c, u, dev_ms, flops,
               samples / (it * 1e-3));
        fflush(stdout);
    }
    fh_trainer_free(&t);
    return st;
}

/* ---- PQN and DQN ---- */

/* One PQN or DQN row on device (cuda or cpu), the GPU collection by kernel (fast or
 * reference). */
static fh_status bench_q(const char *algo, const char *device, const char *kernel,
                         const fh_bench_train_options *o, double ceiling, fh_error *err)
{
    fh_train_config cfg;
    bench_config(&cfg, algo, device, o);
    snprintf(cfg.kernel, sizeof cfg.kernel, "%s", kernel);
    if (o->replay_ratio > 0)
        cfg.replay_ratio = o->replay_ratio;
    const long long samples = (long long)o->episodes * o->steps;
    if (cfg.learning_starts > samples)
        cfg.learning_starts = (int)samples; /* the warm-up fills the ring past it */
    fh_q_trainer t;
    double collect_ms[MAX_TRAIN_REPEATS], update_ms[MAX_TRAIN_REPEATS];
    int n = 0;
    fh_status st = fh_q_trainer_init(&t, &cfg, err);
    for (int it = 1; it <= cfg.iterations && st == FH_OK; it++) {
        fh_iteration_metrics m;
        memset(&m, 0, sizeof m);
        m.lr = fh_train_config_lr(&cfg, it);
        fh_q_stats qs;
        double t0 = fh_clock_seconds();
        st = fh_q_trainer_iterate(&t, it, &m, &qs, err);
        double t1 = fh_clock_seconds();
        if (st == FH_OK && it > 1 && n < MAX_TRAIN_REPEATS) { /* the first is the warm-up */
            collect_ms[n] = m.collect_seconds * 1e3;
            update_ms[n] = (t1 - t0 - m.collect_seconds) * 1e3;
            n++;
        }
    }
    if (st == FH_OK && n > 0) {
        double c = fh_median_inplace(collect_ms, n), u = fh_median_inplace(update_ms, n);
        double it = c + u;
        char ratio[32];
        if (strcmp(algo, "pqn") == 0)
            snprintf(ratio, sizeof ratio, "%d", cfg.epochs);
        else
            snprintf(ratio, sizeof ratio, "rr %.4g", cfg.replay_ratio);
        /* the update runs where the trainer put it: the GPU with the collection there */
        const int gpu_update = t.gpu_update != NULL;
        char where[16];
        snprintf(where, sizeof where, "%s%s", device,
                 t.gpu && strcmp(kernel, "reference") == 0 ? ":ref" : "");
        /* DQN's work is its replayed minibatches, not epochs over the collection: no figure */
        char flops[40];
        if (strcmp(algo, "pqn") == 0)
            format_flops(flops, sizeof flops, update_flop(algo, cfg.epochs, samples), u,
                         gpu_update ? ceiling : 0.0);
        else
            snprintf(flops, sizeof flops, "%11s %7s", "-", "-");
        printf("%-4s %-8s %-4s %7d %5d %9s %6d %4s %10.2f %10.2f %10.2f %10s %s %14.0f\n", algo,
               where, gpu_update ? "gpu" : "cpu", o->episodes, o->steps, ratio, o->minibatch,
               gpu_update ? cfg.precision : "fp32", it, c, u, "-", flops, samples / (it * 1e-3));
        fflush(stdout);
    }
    fh_q_trainer_free(&t);
    return st;
}

fh_status fh_bench_parse_algos(const char *text, unsigned *algos, fh_error *err)
{
    static const char *const names[3] = {"ppo", "pqn", "dqn"};
    *algos = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int k = 0; k < 3; k++)
            if (strlen(names[k]) == len && strncmp(p, names[k], len) == 0)
                found = k;
        if (found < 0)
            return fh_error_set(err, FH_ERR_INPUT, "--algos '%s': expected one or more of ppo, "
                                "pqn, dqn separated by commas", text);
        *algos |= 1u << found;
        p += len;
        if (*p == ',')
            p++;
    }
    if (*algos == 0)
        return fh_error_set(err, FH_ERR_INPUT, "--algos '%s': names no algorithm (ppo, pqn, "
                            "dqn)", text);
    return FH_OK;
}

fh_status fh_bench_train(const fh_bench_train_options *o, int use_gpu, int with_cpu,
                         fh_error *err)
{
    if (o->repeats < 1 || o->repeats >= MAX_TRAIN_REPEATS)
        return fh_error_set(err, FH_ERR_INPUT, "--repeats %d: 1 to %d for --train", o->repeats,
                            MAX_TRAIN_REPEATS - 1);
    const unsigned algos = o->algos ? o->algos : FH_BENCH_PPO;
    printf("training iterations (collection + update), medians of %d after a warm-up:\n",
           o->repeats);
    if (algos & (FH_BENCH_PQN | FH_BENCH_DQN))
        printf("(pqn, dqn: epsilon-greedy collection, Q update and curiosity fit on the device "
               "(host with --device cpu); "
               "epochs|rr: PQN's epochs, DQN's replay ratio, gradient steps per transition; "
               "cuda:ref: the collection's reference kernel)\n");
    fh_status st = FH_OK;
    double ceiling = 0.0; /* TFLOP/s of one large matmul at the update's precision */
#if FH_HAVE_CUDA
    if (use_gpu) {
        st = fh_gemm_ceiling_tflops(fh_precision_parse(o->precision), CEILING_REPEATS,
                                    &ceiling, err);
        if (st != FH_OK)
            return st;
        printf("the device's ceiling at %s: %.1f TFLOP/s (a %d^3 matmul through cublasLt, "
               "median of %d)\n", o->precision, ceiling, FH_GEMM_CEILING_SIDE,
               CEILING_REPEATS);
    }
#endif
    printf("(upd TFLOP/s: the update's matmul work, 6 FLOP per multiply-accumulate of the "
           "networks per sample and epoch, over its device time; %% ceil: of that ceiling)\n");
    printf("%-4s %-8s %-4s %7s %5s %9s %6s %4s %10s %10s %10s %10s %11s %7s %14s\n", "algo",
           "device", "upd", "N", "L", "epochs|rr", "mb", "prec", "iter ms", "collect ms",
           "update ms", "upd dev ms", "upd TFLOP/s", "% ceil", "train steps/s");
    const char *devices[2] = {"cuda", "cpu"};
    const int on[2] = {use_gpu, with_cpu};
    for (int a = 0; a < 3 && st == FH_OK; a++) {
        if (!(algos & (1u << a)))
            continue;
        for (int d = 0; d < 2 && st == FH_OK; d++) {
            if (!on[d])
                continue;
            const unsigned kernels = d == 0 && o->q_kernels ? o->q_kernels : FH_BENCH_KERNEL_FAST;
            if (a == 0)
                st = bench_device(devices[d], o, ceiling, err);
            for (unsigned k = 1; a != 0 && k <= FH_BENCH_KERNEL_REFERENCE && st == FH_OK; k <<= 1)
                if (kernels & k)
                    st = bench_q(a == 1 ? "pqn" : "dqn", devices[d],
                                 k == FH_BENCH_KERNEL_FAST ? "fast" : "reference", o, ceiling,
                                 err);
            if (st != FH_OK)
                fh_error_prefix(err, "%s on %s: ", a == 0 ? "ppo" : a == 1 ? "pqn" : "dqn",
                                devices[d]);
        }
    }
    return st;
}
