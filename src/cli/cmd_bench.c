/* cmd_bench.c — `foxhunt bench`: transitions per second of experience collection,
 * GPU kernels (timed with device events) and the CPU path, median of several
 * collections after a warm-up (issue 6/7). FLOPs per transition count the three
 * networks' multiply-adds (actor 17,984 + critic 363,584 + curiosity 4,288) x 2. */
#include <errno.h>
#include "foxhunt/precision.h"
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/bench_train.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "foxhunt/device.h"
#include "foxhunt/rollout.h"
#include "foxhunt/run_data.h"
#include "foxhunt/files.h"
#include "foxhunt/timing.h"
#if FH_HAVE_CUDA
#include "cuda/gpu_ppo_collector.h"
#endif

#ifndef FH_ROLLOUT_CLOCK_PARTS /* cuda/gpu_ppo_collector.h's, when built without CUDA */
#define FH_ROLLOUT_CLOCK_PARTS 5
#endif
#define FLOPS_PER_TRANSITION (2.0 * (17984.0 + 363584.0 + 4288.0))
#define FP32_GEMM_CEILING_TFLOPS 50.9 /* measured on the H200 (cuBLAS SGEMM) */
#define MAX_SIZES 16
#define MAX_REPEATS 64

typedef struct {
    char device[16], kernel[24];
    int n, l, repeats;
    double median_ms, kernel_ms; /* kernel_ms: device-event time of the kernels alone */
    double phase_ms[3];          /* fast path, one profiled collection: rollout, networks, GAE */
    int clock_parts;             /* FOXHUNT_ROLLOUT_CLOCKS: cycles per step in the rollout */
    double cycles[FH_ROLLOUT_CLOCK_PARTS];
} bench_row;

#define MAX_KERNELS 5
static const char *const GPU_KERNELS[] = {"reference", "fast", "fast/warp", "fast/block", "fast/lane"};

static fh_status bench_cpu(bench_row *row, const fh_market_view *view, const fh_env_config *env,
                           const fh_collect_params *p, int n, int l, int repeats, fh_error *err)
{
    fh_cpu_collector c;
    fh_trajectory_batch b;
    memset(&b, 0, sizeof b);
    fh_status st = fh_cpu_collector_init(&c, n, l, env, view, 1, err);
    if (st == FH_OK)
        st = fh_trajectory_batch_alloc(&b, n, l, err);
    double times[MAX_REPEATS];
    for (int r = -1; st == FH_OK && r < repeats; r++) { /* r = -1: warm-up */
        double t0 = (1e3 * fh_clock_seconds());
        st = fh_cpu_collect_rollouts(&c, p, &b, err);
        if (r >= 0)
            times[r] = (1e3 * fh_clock_seconds()) - t0;
    }
    if (st == FH_OK) {
        snprintf(row->device, sizeof row->device, "cpu");
        snprintf(row->kernel, sizeof row->kernel, "cpu");
        row->n = n;
        row->l = l;
        row->repeats = repeats;
        row->median_ms = fh_median_inplace(times, repeats);
        row->kernel_ms = NAN;
        row->phase_ms[0] = row->phase_ms[1] = row->phase_ms[2] = NAN;
    }
    fh_trajectory_batch_free(&b);
    fh_cpu_collector_free(&c);
    return st;
}

#if FH_HAVE_CUDA
static fh_status bench_gpu(bench_row *row, const fh_device_info *dev, const char *kernel,
                           const char *precision, const fh_market_view *view,
                           const fh_env_config *env, const fh_collect_params *p, int n, int l,
                           int repeats, fh_error *err)
{
    fh_gpu_ppo_collector *c = NULL;
    fh_trajectory_batch b;
    memset(&b, 0, sizeof b);
    fh_status st = fh_gpu_ppo_collector_create(&c, dev, n, l, env, view, 1, kernel, precision, NULL,
                                               err);
    if (st == FH_OK && fh_gpu_ppo_collector_plan(c))
        fh_fast_plan_print(stdout, fh_gpu_ppo_collector_plan(c));
    if (st == FH_OK)
        st = fh_trajectory_batch_alloc(&b, n, l, err);
    double total[MAX_REPEATS], kern[MAX_REPEATS];
    for (int r = -1; st == FH_OK && r < repeats; r++) {
        st = fh_gpu_ppo_collector_collect(c, p, &b, err);
        if (st == FH_OK && r >= 0) {
            fh_gpu_collect_timing tm = fh_gpu_ppo_collector_timing(c);
            total[r] = tm.total_ms;
            kern[r] = tm.rollout_ms;
        }
    }
    row->phase_ms[0] = row->phase_ms[1] = row->phase_ms[2] = NAN;
    row->clock_parts = 0;
    if (st == FH_OK && strncmp(kernel, "fast", 4) == 0) {
        /* the phases, from eager (un-graphed) collections with events between them */
        fh_gpu_ppo_collector_set_profile(c, 1);
        for (int r = 0; st == FH_OK && r < 2; r++)
            st = fh_gpu_ppo_collector_collect(c, p, &b, err);
        fh_gpu_collect_timing tm = fh_gpu_ppo_collector_timing(c);
        row->phase_ms[0] = tm.phase_rollout_ms;
        row->phase_ms[1] = tm.phase_networks_ms;
        row->phase_ms[2] = tm.phase_gae_ms;
        row->clock_parts = tm.rollout_clock_parts;
        for (int i = 0; i < tm.rollout_clock_parts; i++)
            row->cycles[i] = tm.rollout_cycles[i];
    }
    if (st == FH_OK) {
        snprintf(row->device, sizeof row->device, "cuda");
        /* the reference kernel is fp32 whatever the precision */
        int collect = strncmp(kernel, "fast", 4) == 0 ? fh_precision_parse(precision) : 0;
        snprintf(row->kernel, sizeof row->kernel, "%s%s%s", kernel, collect > 0 ? "/" : "",
                 collect > 0 ? fh_precision_name(collect) : "");
        row->n = n;
        row->l = l;
        row->repeats = repeats;
        row->median_ms = fh_median_inplace(total, repeats);
        row->kernel_ms = fh_median_inplace(kern, repeats);
    }
    fh_gpu_ppo_collector_destroy(c); /* unregisters the page-locked batch first */
    fh_trajectory_batch_free(&b);
    return st;
}
#endif

/* "fast,fast/block" -> its known kernel names (at most MAX_KERNELS). */
static fh_status parse_kernels(const char *text, const char **out, int *n, fh_error *err)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int k = 0; k < (int)(sizeof GPU_KERNELS / sizeof GPU_KERNELS[0]); k++)
            if (strlen(GPU_KERNELS[k]) == len && strncmp(p, GPU_KERNELS[k], len) == 0)
                found = k;
        if (found < 0 || *n == MAX_KERNELS)
            return fh_error_set(err, FH_ERR_INPUT, "--kernel '%s': expected both, or up to %d of "
                                "reference, fast, fast/warp, fast/block, fast/lane separated by commas",
                                text, MAX_KERNELS);
        out[(*n)++] = GPU_KERNELS[found];
        p += len;
        if (*p == ',')
            p++;
    }
    if (*n == 0)
        return fh_error_set(err, FH_ERR_INPUT, "--kernel '%s': names no kernel", text);
    return FH_OK;
}

static void print_row(const bench_row *r)
{
    double transitions = (double)r->n * r->l;
    double ms = isfinite(r->kernel_ms) ? r->kernel_ms : r->median_ms;
    double tflops = transitions * FLOPS_PER_TRANSITION / (ms * 1e-3) / 1e12;
    printf("%-6s %-14s %7d %5d %12.3f %12.3f %14.0f %9.3f %8.2f%%", r->device, r->kernel,
           r->n, r->l, r->median_ms, r->kernel_ms, transitions / (r->median_ms * 1e-3), tflops,
           100.0 * tflops / FP32_GEMM_CEILING_TFLOPS);
    if (isfinite(r->phase_ms[0]))
        printf("   phases: rollout %.3f, networks %.3f, GAE %.3f ms", r->phase_ms[0],
               r->phase_ms[1], r->phase_ms[2]);
    printf("\n");
    if (r->clock_parts == FH_ROLLOUT_CLOCK_PARTS)
        printf("       rollout cycles per step (first lane): observe %.0f, actor %.0f, sample %.0f, "
               "env %.0f, tail %.0f\n", r->cycles[0], r->cycles[1], r->cycles[2], r->cycles[3],
               r->cycles[4]);
}

int fh_cmd_bench(int argc, char **argv)
{
    const char *episodes_text = NULL, *kernel = NULL, *json = NULL;
    int repeats = 5, cpu_max = 1024, cpu_repeats = 3;
    int train = 0, train_cpu_max = 64000;
    const char *algos_text = "ppo,pqn,dqn";
    fh_arg args[] = {
        {"--repeats", FH_ARG_INT, &repeats, "R", "timed GPU collections per size (after one warm-up)", NULL, 1, MAX_REPEATS, 0},
        {"--cpu-repeats", FH_ARG_INT, &cpu_repeats, "R", "timed CPU collections per size", NULL, 1, MAX_REPEATS, 0},
        {"--cpu-max-episodes", FH_ARG_INT, &cpu_max, "N", "skip the CPU path above this N (it is slow)", NULL, 0, 1 << 20, 0},
        {"--json", FH_ARG_STRING, &json, "FILE", "also write the rows as JSON", NULL, 0, 0, 0},
        {"--train", FH_ARG_FLAG, &train, NULL, "time whole training iterations (collection + update + curiosity fit) instead, GPU and CPU side by side; training steps/s", NULL, 0, 0, 0},
        {"--algos", FH_ARG_STRING, &algos_text, "A[,A...]", "--train: the algorithms timed, rows in this order: ppo, pqn, dqn", NULL, 0, 0, 0},
        {"--cpu-max-samples", FH_ARG_INT, &train_cpu_max, "S", "--train: skip the CPU above this N*L (its update is slow)", NULL, 0, 1 << 30, 0},
    };
    /* settings: the table's flags (config_flags.h) */
    fh_key_flag settings[] = {
        {.key = "device", .note = "auto here: GPU (if any) and CPU; cpu or cuda: that one only"},
        {.key = "episodes", .value = "128,1024,16384", .list = &episodes_text, .note = "here: the episode counts measured"},
        {.key = "steps"},
        {.key = "kernel", .value = "both", .list = &kernel, .also = "both", .note = "here: the kernels timed side by side: both (= reference,fast) or a list (a fast/<mapping> forces the fast path's rollout mapping); --train: the PQN/DQN rows with the collection's fast and/or reference kernel"},
        {.key = "precision"},
        {.key = "epochs", .note = "--train: PPO's and PQN's"},
        {.key = "replay_ratio", .note = "--train: DQN's"},
        {.key = "minibatch", .note = "--train"},
        {.key = "threads", .note = "--train"},
    };
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "bench",
                           "Measure experience-collection throughput (median of several "
                           "collections).",
                           settings, (int)(sizeof settings / sizeof settings[0]), args,
                           (int)(sizeof args / sizeof args[0]), argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("bench", &err);
    if (help)
        return 0;
    const char *device = fl.device, *precision = fl.precision;
    const int steps = fl.steps;
    int sizes[MAX_SIZES];
    int n_sizes = fh_args_parse_int_list(episodes_text, sizes, MAX_SIZES);
    if (n_sizes < 0) {
        fh_error_set(&err, FH_ERR_INPUT, "--episodes '%s': expected positive integers separated by commas",
                     episodes_text);
        return fh_cli_report("bench", &err);
    }
    const char *kernels[MAX_KERNELS];
    int n_kernels = 0;
    if (parse_kernels(strcmp(kernel, "both") == 0 ? "reference,fast" : kernel, kernels, &n_kernels,
                      &err) != FH_OK)
        return fh_cli_report("bench", &err);
    /* --train: the DQN/PQN collection takes fast and reference (a fast/<mapping> is fast) */
    unsigned q_kernels = 0;
    for (int k = 0; k < n_kernels; k++)
        q_kernels |= strcmp(kernels[k], "reference") == 0 ? FH_BENCH_KERNEL_REFERENCE
                                                          : FH_BENCH_KERNEL_FAST;
    unsigned algos = 0;
    if (train && fh_bench_parse_algos(algos_text, &algos, &err) != FH_OK)
        return fh_cli_report("bench", &err);
    fh_device_info dev;
    if (fh_device_select(device, &dev, &err) != FH_OK)
        return fh_cli_report("bench", &err);
    char line[400];
    fh_device_describe(&dev, line, sizeof line);
    printf("%s\n", line);
    if (train) {
        int rc_train = 0;
        for (int s = 0; s < n_sizes && rc_train == 0; s++) {
            fh_bench_train_options o = {sizes[s],   steps,     fl.epochs, fl.minibatch,
                                        repeats,    fl.threads, precision, algos,
                                        fl.replay_ratio, q_kernels};
            int with_cpu = (!dev.use_gpu || strcmp(device, "auto") == 0) &&
                           (long long)sizes[s] * steps <= train_cpu_max;
            if (fh_bench_train(&o, dev.use_gpu, with_cpu, &err) != FH_OK)
                rc_train = fh_cli_report("bench", &err);
        }
        return rc_train;
    }

    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_run_data data;
    fh_mlp nets[3];
    memset(nets, 0, sizeof nets);
    int rc = 0, n_rows = 0;
    bench_row rows[MAX_SIZES * (MAX_KERNELS + 1)];
    if (fh_run_data_load(&data, &cfg, NULL, &err) != FH_OK)
        return fh_cli_report("bench", &err);
    const fh_net_kind kinds[3] = {FH_NET_ACTOR, FH_NET_CRITIC, FH_NET_CURIOSITY};
    for (int k = 0; k < 3; k++) {
        if (fh_mlp_init(&nets[k], kinds[k], &err) != FH_OK) {
            rc = fh_cli_report("bench", &err);
            goto done;
        }
        fh_mlp_init_orthogonal(&nets[k], 1000 + (uint64_t)k);
    }
    fh_market_view view = fh_market_view_of(&data.market, FH_SPLIT_TRAIN);
    fh_collect_params p = {&nets[0], &nets[1], &nets[2], (float)cfg.gamma, (float)cfg.gae_lambda};
    printf("%-6s %-14s %7s %5s %12s %12s %14s %9s %9s\n", "device", "kernel", "N", "L",
           "median ms", "kernel ms", "transitions/s", "TFLOP/s", "of fp32");
    for (int s = 0; s < n_sizes; s++) {
#if FH_HAVE_CUDA
        if (dev.use_gpu) {
            for (int k = 0; k < n_kernels; k++) {
                if (bench_gpu(&rows[n_rows], &dev, kernels[k], precision, &view, &cfg.env, &p,
                              sizes[s], steps, repeats, &err) != FH_OK) {
                    rc = fh_cli_report("bench", &err);
                    goto done;
                }
                print_row(&rows[n_rows++]);
                fflush(stdout);
            }
        }
#endif
        if ((!dev.use_gpu || strcmp(device, "auto") == 0) && sizes[s] <= cpu_max) {
            if (bench_cpu(&rows[n_rows], &view, &cfg.env, &p, sizes[s], steps, cpu_repeats,
                          &err) != FH_OK) {
                rc = fh_cli_report("bench", &err);
                goto done;
            }
            print_row(&rows[n_rows++]);
            fflush(stdout);
        }
    }
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "device", line);
        cJSON_AddNumberToObject(root, "flops_per_transition", FLOPS_PER_TRANSITION);
        cJSON *arr = cJSON_AddArrayToObject(root, "rows");
        for (int i = 0; i < n_rows; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "device", rows[i].device);
            cJSON_AddStringToObject(o, "kernel", rows[i].kernel);
            cJSON_AddNumberToObject(o, "episodes", rows[i].n);
            cJSON_AddNumberToObject(o, "steps", rows[i].l);
            cJSON_AddNumberToObject(o, "repeats", rows[i].repeats);
            cJSON_AddNumberToObject(o, "median_ms", rows[i].median_ms);
            if (isfinite(rows[i].kernel_ms))
                cJSON_AddNumberToObject(o, "kernel_ms", rows[i].kernel_ms);
            if (isfinite(rows[i].phase_ms[0])) {
                cJSON_AddNumberToObject(o, "phase_rollout_ms", rows[i].phase_ms[0]);
                cJSON_AddNumberToObject(o, "phase_networks_ms", rows[i].phase_ms[1]);
                cJSON_AddNumberToObject(o, "phase_gae_ms", rows[i].phase_ms[2]);
            }
            if (rows[i].clock_parts == FH_ROLLOUT_CLOCK_PARTS) {
                static const char *const parts[FH_ROLLOUT_CLOCK_PARTS] = {"observe", "actor",
                                                                          "sample", "env", "tail"};
                cJSON *cy = cJSON_AddObjectToObject(o, "rollout_cycles_per_step");
                for (int j = 0; j < FH_ROLLOUT_CLOCK_PARTS; j++)
                    cJSON_AddNumberToObject(cy, parts[j], rows[i].cycles[j]);
            }
            cJSON_AddNumberToObject(o, "transitions_per_second",
                                    (double)rows[i].n * rows[i].l / (rows[i].median_ms * 1e-3));
            cJSON_AddItemToArray(arr, o);
        }
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%.1000s.tmp", json);
        /* a FIFO or a device named JSON.tmp is refused, not written into (issue 32) */
        FILE *f = text ? fh_fopen_regular(tmp, "--json's temporary file",
                                          O_WRONLY | O_CREAT | O_TRUNC, &err)
                       : NULL;
        int e = !text ? ENOMEM : !f ? 0 : fh_replace_with_tmp(f, fputs(text, f) >= 0, 0, tmp, json);
        if (!f || e) { /* never a partial file under the real name */
            if (e)
                fh_error_set(&err, FH_ERR_INPUT, "cannot write %s: %s%s", json, strerror(e),
                             fh_write_error_hint(e));
            err.status = FH_ERR_INPUT; /* a path the user gave: exit 2 */
            rc = fh_cli_report("bench", &err);
        }
        cJSON_free(text);
    }
done:
    for (int k = 0; k < 3; k++)
        fh_mlp_free(&nets[k]);
    fh_run_data_free(&data);
    return rc;
}
