/* cmd_info.c — `foxhunt info`: version, build options, CUDA toolkit/NVRTC, defaults, the
 * GPU overrides; with --device cuda, the fast path's plan on this GPU. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "cuda/fast_plan.h"
#include "cuda/overrides.h"
#include "foxhunt/device.h"
#include "foxhunt/run_data.h"
#include "foxhunt/shapes.h"
#if FH_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/nvrtc_compile.h"
#endif
#if FH_HAVE_NCCL
#include "dist/dist_env.h"
#include "dist/nccl_loader.h"
#include "foxhunt/precision.h"
#endif

#define MAX_SIZES 8

/* Whether NCCL (data-parallel training: train --gpus, docs/SCALING.md) is loadable here,
 * and from where. */
static void print_nccl(void)
{
#if FH_HAVE_NCCL
    fh_nccl n;
    fh_search_env search;
    fh_error err;
    fh_search_env_read(&search);
    if (fh_nccl_load(&n, NULL, &search, &err) == FH_OK) {
        char version[32];
        fh_nccl_version_text(n.version, version, sizeof version);
        printf("NCCL:            %s, loadable from %s (train --gpus K)\n", version, n.path);
        fh_nccl_unload(&n);
    } else {
        printf("NCCL:            not loadable: %s\n", err.message);
    }
#elif FH_HAVE_CUDA
    printf("NCCL:            nccl.h not found at build time: train --gpus unavailable\n");
#else
    printf("NCCL:            not built (no CUDA toolkit): train --gpus unavailable\n");
#endif
}

#if FH_HAVE_CUDA
/* The plan the fast path would make on `dev` for each N, on the default market. */
static int print_plans(const fh_device_info *dev, const int *sizes, int n_sizes, int steps,
                       const char *precision)
{
    fh_error err;
    fh_gpu_overrides ov;
    size_t free_bytes = 0, total_bytes = 0;
    if (fh_gpu_overrides_from_env(&ov, &err) != FH_OK)
        return fh_cli_report("info", &err);
    if (cudaSetDevice(dev->device_index) != cudaSuccess ||
        cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
        fh_error_set(&err, FH_ERR_FAILURE, "%s:%d: cannot read %s's free memory", __FILE__,
                     __LINE__, dev->name);
        return fh_cli_report("info", &err);
    }
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_run_data data;
    if (fh_run_data_load(&data, &cfg, NULL, &err) != FH_OK)
        return fh_cli_report("info", &err);
    fh_market_view view = fh_market_view_of(&data.market, FH_SPLIT_TRAIN);
    char described[256];
    fh_gpu_overrides_describe(&ov, described, sizeof described);
    printf("\nthe fast path's plan on the default synthetic market (overrides: %s):\n", described);
    int rc = 0;
    for (int s = 0; s < n_sizes && rc == 0; s++) {
        fh_plan_device pd = {dev->name, dev->sm_count, dev->shared_mem_per_block_optin,
                             free_bytes};
        fh_plan_problem prob = {sizes[s], steps, (int)view.n, cfg.env.horizon,
                                fh_precision_parse(precision), FH_ROLLOUT_AUTO,
                                cfg.env.obs_noise > 0.0f};
        fh_fast_plan plan;
        if (fh_fast_plan_make(&pd, &prob, &ov, &plan, &err) != FH_OK)
            rc = fh_cli_report("info", &err);
        else
            fh_fast_plan_print(stdout, &plan);
    }
    fh_run_data_free(&data);
    return rc;
}
#endif

int fh_cmd_info(int argc, char **argv)
{
    const char *episodes_text = NULL;
    /* settings: the table's flags (config_flags.h) */
    fh_key_flag settings[] = {
        {.key = "device", .value = "cpu", .note = "cuda here (auto: when there is a GPU): also print the fast path's plan on this machine's GPU"},
        {.key = "episodes", .value = "128,1024,16384", .list = &episodes_text, .note = "here: the episode counts to plan for (with --device cuda)"},
        {.key = "steps", .note = "here: to plan for"},
        {.key = "precision"},
    };
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "info",
                           "Print the version, build options, defaults and GPU overrides "
                           "(and, with --device cuda, the fast path's plan).",
                           settings, (int)(sizeof settings / sizeof settings[0]), NULL, 0,
                           argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("info", &err);
    if (help)
        return 0;
    const char *precision = fl.precision;
    const int steps = fl.steps;
    int sizes[MAX_SIZES];
    int n_sizes = fh_args_parse_int_list(episodes_text, sizes, MAX_SIZES);
    if (n_sizes <= 0) {
        fh_error_set(&err, FH_ERR_INPUT, "--episodes '%s': expected up to %d positive integers "
                     "separated by commas", episodes_text, MAX_SIZES);
        return fh_cli_report("info", &err);
    }
    printf("foxhunt %s\n", FH_VERSION);
    printf("build type:      %s%s\n", FH_BUILD_TYPE, FH_SANITIZE_BUILD ? " (ASan+UBSan)" : "");
    printf("compiler:        %s\n", __VERSION__);
#if FH_HAVE_CUDA
    int v = fh_nvrtc_version();
    printf("CUDA toolkit:    found at build time; NVRTC %d.%d\n", v / 1000, (v % 1000) / 10);
#else
    printf("CUDA toolkit:    not found at build time (CPU path only)\n");
#endif
    print_nccl();
    printf("state/actions:   %d features + %d portfolio = %d, %d actions (%d exposures x %d urgencies)\n",
           FH_N_MARKET_FEATURES, FH_N_PORTFOLIO_FEATURES, FH_STATE_DIM, FH_N_ACTIONS,
           FH_N_EXPOSURES, FH_N_URGENCIES);
    printf("networks:        actor %d, critic %d, curiosity %d parameters\n",
           FH_ACTOR_N_PARAMS, FH_CRITIC_N_PARAMS, FH_CURIOSITY_N_PARAMS);
    printf("collection:      N %d episodes x L %d steps\n", FH_DEFAULT_EPISODES,
           FH_DEFAULT_STEPS);
    printf("\n");
    fh_gpu_overrides_print_table(stdout);
    if (strcmp(fl.device, "cpu") == 0)
        return 0;
    fh_device_info dev;
    if (fh_device_select(fl.device, &dev, &err) != FH_OK)
        return fh_cli_report("info", &err);
    if (!dev.use_gpu) /* auto without a GPU */
        return 0;
#if FH_HAVE_CUDA
    return print_plans(&dev, sizes, n_sizes, steps, precision);
#else
    return 0;
#endif
}
