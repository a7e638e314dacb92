/* bench_train.c — `foxhunt bench --train`: whole training iterations timed on each
 * device, side by side in one run (issue 17). An iteration is what `foxhunt train`
 * does per iteration: the collection (with the GPU update, the batch stays on the
 * device and only the metrics' rewards, actions and dones come back), then the PPO
 * update and the curiosity fit. Medians over the timed iterations after one warm-up
 * (which compiles, captures the graphs and tunes the matmuls). */
#include "cli/bench_train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "foxhunt/timing.h"
#include "foxhunt/trainer.h"
#include "rl/collector.h"
#if FH_HAVE_CUDA
#include "cuda/gpu_ppo_update.h"
#endif

#define MAX_TRAIN_REPEATS 64

/* One device's row; FH_OK with *ran = 0 when the device is not there. */
static fh_status bench_device(const char *device, const fh_bench_train_options *o,
                              fh_error *err)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.device, sizeof cfg.device, "%s", device);
    snprintf(cfg.precision, sizeof cfg.precision, "%s", o->precision);
    cfg.episodes = o->episodes;
    cfg.steps = o->steps;
    cfg.epochs = o->epochs;
    cfg.minibatch = o->minibatch;
    cfg.iterations = o->repeats + 1;
    cfg.threads = o->threads;
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
        st = fh_collector_collect_for_update(&t, &p, &sums, err);
        double t1 = fh_clock_seconds();
        if (st == FH_OK)
            st = fh_collector_update(&t, &stats, fh_train_config_lr(&cfg, r + 1), NULL, 0, err);
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
        printf("%-6s %-4s %7d %5d %6d %6d %4s %10.2f %10.2f %10.2f %10.2f %14.0f\n", device,
               fh_collector_update_device(&t), o->episodes, o->steps, o->epochs, o->minibatch,
               o->precision, it, c, u, ud, samples / (it * 1e-3));
        fflush(stdout);
    }
    fh_trainer_free(&t);
    return st;
}

fh_status fh_bench_train(const fh_bench_train_options *o, int use_gpu, int with_cpu,
                         fh_error *err)
{
    if (o->repeats < 1 || o->repeats >= MAX_TRAIN_REPEATS)
        return fh_error_set(err, FH_ERR_INPUT, "--repeats %d: 1 to %d for --train", o->repeats,
                            MAX_TRAIN_REPEATS - 1);
    printf("training iterations (collection + update), medians of %d after a warm-up:\n",
           o->repeats);
    printf("%-6s %-4s %7s %5s %6s %6s %4s %10s %10s %10s %10s %14s\n", "device", "upd", "N", "L",
           "epochs", "mb", "prec", "iter ms", "collect ms", "update ms", "upd dev ms",
           "train steps/s");
    fh_status st = FH_OK;
    if (use_gpu)
        st = bench_device("cuda", o, err);
    if (st == FH_OK && with_cpu)
        st = bench_device("cpu", o, err);
    return st;
}
