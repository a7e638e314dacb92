/* cmd_collect.c — `foxhunt collect`: one experience collection written as a
 * safetensors file, for inspection in any tool and for `foxhunt update` (issues 6, 17).
 * Keys and metadata: include/foxhunt/batch_file.h. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "foxhunt/batch_file.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/trainer.h"
#include "rl/collector.h"
#if FH_HAVE_CUDA
#include "cuda/gpu_ppo_collector.h"
#endif

int fh_cmd_collect(int argc, char **argv)
{
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    const char *checkpoint = NULL, *data = NULL, *device = "auto", *out = NULL;
    const char *kernel = "fast";
    int episodes = cfg.episodes, steps = cfg.steps;
    uint64_t seed = cfg.seed;
    fh_arg args[] = {
        {"--checkpoint", FH_ARG_STRING, &checkpoint, "FILE", "weights to collect with (default: fresh weights from --seed)", NULL, 0, 0, 0},
        {"--data", FH_ARG_STRING, &data, "FILE", "CSV (default: the checkpoint's data, else the synthetic market)", NULL, 0, 0, 0},
        {"--device", FH_ARG_CHOICE, &device, NULL, "where to collect", "auto|cpu|cuda", 0, 0, 0},
        {"--kernel", FH_ARG_CHOICE, &kernel, NULL, "GPU collection kernel", "fast|reference|fast/warp|fast/block|fast/lane", 0, 0, 0},
        {"--episodes", FH_ARG_INT, &episodes, "N", "parallel episodes (with --checkpoint: the checkpoint's)", NULL, 1, 1 << 20, 0},
        {"--steps", FH_ARG_INT, &steps, "L", "steps per episode (with --checkpoint: the checkpoint's)", NULL, 1, 1 << 16, 0},
        {"--seed", FH_ARG_U64, &seed, "S", "seed of the episodes (and of fresh weights)", NULL, 0, 0, 0},
        {"--out", FH_ARG_STRING, &out, "FILE.safetensors", "where to write the collection (required)", NULL, 0, 0, 0},
    };
    fh_arg_spec spec = {"collect", "Run one experience collection and write it as a safetensors file.",
                        args, (int)(sizeof args / sizeof args[0])};
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_args_parse(&spec, argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("collect", &err);
    if (help)
        return 0;
    if (!out) {
        fh_error_set(&err, FH_ERR_INPUT, "--out FILE.safetensors is required");
        return fh_cli_report("collect", &err);
    }
    if (checkpoint && fh_checkpoint_read_config(checkpoint, &cfg, &err) != FH_OK)
        return fh_cli_report("collect", &err);
    if (data)
        snprintf(cfg.data, sizeof cfg.data, "%s", data);
    snprintf(cfg.device, sizeof cfg.device, "%s", device);
    snprintf(cfg.kernel, sizeof cfg.kernel, "%s", kernel);
    /* with a checkpoint its N x L unless given: the shape `foxhunt update` expects */
    if (!checkpoint || fh_args_find(&spec, "--episodes")->seen)
        cfg.episodes = episodes;
    if (!checkpoint || fh_args_find(&spec, "--steps")->seen)
        cfg.steps = steps;
    cfg.seed = seed;
    cfg.minibatch = 1; /* no update: keep validation from asking for a batch size */
    cfg.resume[0] = '\0';
    cfg.checkpoint_every = 0;

    fh_trainer t;
    memset(&t, 0, sizeof t);
    int rc = 0;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    /* with a checkpoint: its normalisation statistics, then its weights (SPEC §2) */
    fh_feature_norm norm;
    if (checkpoint) {
        fh_checkpoint norm_only;
        memset(&norm_only, 0, sizeof norm_only);
        norm_only.norm = &norm;
        if (fh_checkpoint_load(checkpoint, &norm_only, NULL, &err) != FH_OK)
            goto fail;
    }
    if (fh_trainer_init_norm(&t, &cfg, checkpoint ? &norm : NULL, &err) != FH_OK)
        goto fail;
    if (checkpoint) {
        ck.nets[FH_NET_ACTOR] = &t.actor;
        ck.nets[FH_NET_CRITIC] = &t.critic;
        ck.nets[FH_NET_CURIOSITY] = &t.curiosity;
        if (fh_checkpoint_load(checkpoint, &ck, NULL, &err) != FH_OK)
            goto fail;
    }
    char dev[400];
    fh_device_describe(&t.device, dev, sizeof dev);
    printf("%s\ndata: %s\n", dev, t.data.description);
    fh_collect_params p = {&t.actor, &t.critic, &t.curiosity, (float)cfg.gamma,
                           (float)cfg.gae_lambda};
    fh_batch_file_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.device, sizeof info.device, "%s", t.gpu ? t.device.name : "cpu");
    if (checkpoint)
        snprintf(info.weights, sizeof info.weights, "checkpoint %.1000s", checkpoint);
    else
        snprintf(info.weights, sizeof info.weights, "fresh seed=%llu",
                 (unsigned long long)cfg.seed);
    const fh_mlp *nets[2] = {&t.actor, &t.critic};
    info.weights_hash = fh_weights_hash(nets, 2);
    info.weights_hash_present = 1;
    info.data = t.data_identity;
    info.data_present = 1;
    if (fh_collector_collect(&t, &p, &err) != FH_OK ||
        fh_batch_file_write(&t.batch, out, t.config_json, &info, &err) != FH_OK)
        goto fail;
    printf("collected %d x %d transitions -> %s\n", cfg.episodes, cfg.steps, out);
#if FH_HAVE_CUDA
    if (t.gpu) {
        fh_gpu_collect_timing tm = fh_gpu_ppo_collector_timing(t.gpu);
        if (tm.from_cache)
            printf("kernel module: loaded from the disk cache (no NVRTC compile)\n");
        else
            printf("kernel module: compiled by NVRTC in %.2f s (now cached)\n", tm.compile_seconds);
        printf("collection: %.3f ms on the device (kernel %.3f ms)\n", tm.total_ms, tm.rollout_ms);
    }
#endif
    fh_trainer_free(&t);
    return 0;
fail:
    rc = fh_cli_report("collect", &err);
    fh_trainer_free(&t);
    return rc;
}
