/* cmd_collect.c — `foxhunt collect`: one experience collection written as a
 * safetensors file, for inspection in any tool and for `foxhunt update` (issues 6, 17).
 * Keys and metadata: include/foxhunt/batch_file.h. With a DQN/PQN checkpoint (its
 * config's algo) the collection is N x L epsilon-greedy transitions of its Q-network
 * (issue 18), written as a Q collection (docs/CHECKPOINTS.md, "Q collections"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "env/common_device_functions.cuh"
#include "foxhunt/batch_file.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/dqn.h"
#include "foxhunt/q_trainer.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/trainer.h"
#include "rl/ppo_backend.h"
#if FH_HAVE_CUDA
#include "cuda/gpu_dqn_collector.h"
#include "cuda/gpu_ppo_collector.h"
#endif

#define FH_Q_BATCH_FORMAT "foxhunt.q_collection"

/* The transition batch as a Q collection: the fh_transition_batch arrays, episode-major
 * (N, L, ...), and the metadata of a PPO collection plus algo and epsilon. Atomic. */
static fh_status write_q_collection(const fh_transition_batch *b, const char *path,
                                    const char *config_json, const char *algo, double epsilon,
                                    const fh_batch_file_info *info, fh_error *err)
{
    const int64_t N = b->n_episodes, L = b->n_steps;
    const int64_t s3[3] = {N, L, FH_STATE_DIM}, s2[2] = {N, L};
    const struct {
        const char *name;
        fh_dtype dtype;
        int rank;
        const void *data;
    } tensors[] = {
        {"states", FH_DTYPE_F32, 3, b->states},       {"next_states", FH_DTYPE_F32, 3, b->next_states},
        {"actions", FH_DTYPE_I32, 2, b->actions},     {"rewards", FH_DTYPE_F32, 2, b->rewards},
        {"terminal", FH_DTYPE_U8, 2, b->terminal},    {"truncated", FH_DTYPE_U8, 2, b->truncated},
        {"q_taken", FH_DTYPE_F32, 2, b->q_taken},     {"exposures", FH_DTYPE_F32, 2, b->exposures},
        {"bars", FH_DTYPE_I32, 2, b->bars},
    };
    fh_st_writer w;
    fh_st_writer_init(&w);
    fh_status st = FH_OK;
    for (size_t i = 0; st == FH_OK && i < sizeof tensors / sizeof tensors[0]; i++)
        st = fh_st_writer_add(&w, tensors[i].name, tensors[i].dtype, tensors[i].rank,
                              tensors[i].rank == 3 ? s3 : s2, tensors[i].data, err);
    char eps[32], hex[24];
    snprintf(eps, sizeof eps, "%.9g", epsilon);
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)info->weights_hash);
    const char *meta[][2] = {{"format", FH_Q_BATCH_FORMAT}, {"algo", algo}, {"epsilon", eps},
                             {"device", info->device},      {"weights", info->weights},
                             {"weights.hash", hex}};
    for (size_t i = 0; st == FH_OK && i < sizeof meta / sizeof meta[0]; i++)
        st = fh_st_writer_set_metadata(&w, meta[i][0], meta[i][1], err);
    if (st == FH_OK && config_json)
        st = fh_st_writer_set_metadata(&w, "config", config_json, err);
    if (st == FH_OK)
        st = fh_data_identity_write_metadata(&w, &info->data, err);
    if (st == FH_OK)
        st = fh_st_writer_write(&w, path, err);
    fh_st_writer_free(&w);
    return st;
}

/* `foxhunt collect --checkpoint Q` (cfg: the checkpoint's config with collect's flags):
 * the checkpoint's normalisation, Q-network and curiosity model; fresh episodes from
 * cfg->seed on the training split; one collection at epsilon on the device cfg->device
 * picks. */
static fh_status collect_q(const fh_train_config *cfg, const char *checkpoint, double epsilon,
                           const char *out, fh_error *err)
{
    const fh_net_kind net = (fh_net_kind)fh_q_net_of_algo(cfg->algo);
    const int N = cfg->episodes, L = cfg->steps;
    fh_run_data data;
    fh_mlp q, curiosity;
    fh_transition_batch batch;
    fh_device_info dev;
    memset(&data, 0, sizeof data);
    memset(&q, 0, sizeof q);
    memset(&curiosity, 0, sizeof curiosity);
    memset(&batch, 0, sizeof batch);
    fh_episode_state *episodes = NULL;
    char *config_json = NULL;
    struct fh_gpu_dqn_collector *gpu = NULL;
    fh_feature_norm norm;
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.norm = &norm;
    ck.nets[net] = &q;
    ck.nets[FH_NET_CURIOSITY] = &curiosity;
    fh_market_view view;
    fh_env_market market;
    fh_status st;
    if (!(epsilon >= 0.0 && epsilon <= 1.0)) {
        st = fh_error_set(err, FH_ERR_INPUT, "--epsilon %g is outside [0, 1]", epsilon);
        goto done;
    }
    if ((st = fh_mlp_init(&q, net, err)) != FH_OK ||
        (st = fh_mlp_init(&curiosity, FH_NET_CURIOSITY, err)) != FH_OK ||
        (st = fh_checkpoint_load(checkpoint, &ck, NULL, err)) != FH_OK ||
        (st = fh_run_data_load(&data, cfg, &norm, err)) != FH_OK ||
        (st = fh_run_data_train_split(&data, &view, &market, err)) != FH_OK ||
        (st = fh_transition_batch_alloc(&batch, N, L, err)) != FH_OK ||
        (st = fh_device_select(cfg->device, &dev, err)) != FH_OK)
        goto done;
    episodes = calloc((size_t)N, sizeof *episodes);
    config_json = fh_train_config_to_json(cfg);
    if (!episodes || !config_json) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto done;
    }
    char text[400];
    fh_device_describe(&dev, text, sizeof text);
    printf("%s\ndata: %s\n%s Q-network of %s, epsilon %g\n", text, data.description,
           cfg->algo, checkpoint, epsilon);
    if (dev.use_gpu) {
#if FH_HAVE_CUDA
        /* the Q collection's kernels: fast (the plan's mapping) or reference */
        const char *q_kernel = strcmp(cfg->kernel, "reference") == 0 ? "reference" : "fast";
        if ((st = fh_gpu_dqn_collector_create_kernel(&gpu, &dev, N, L, &cfg->env, &view,
                                                     cfg->seed, net == FH_NET_PQN, q_kernel,
                                                     err)) != FH_OK ||
            (st = fh_gpu_dqn_collect(gpu, q.params, q.n_params, curiosity.params, (float)epsilon,
                                     &batch, err)) != FH_OK)
            goto done;
#else
        st = fh_error_set(err, FH_ERR_FAILURE, "this build has no CUDA");
        goto done;
#endif
    } else {
        for (int n = 0; n < N; n++)
            env_episode_init(&cfg->env, &market, &episodes[n], cfg->seed, (unsigned long long)n);
        if ((st = fh_dqn_collect_cpu(q.params, net == FH_NET_PQN, curiosity.params, &cfg->env,
                                     &market, episodes, (float)epsilon, &batch, err)) != FH_OK)
            goto done;
    }
    fh_batch_file_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.device, sizeof info.device, "%s", dev.use_gpu ? dev.name : "cpu");
    snprintf(info.weights, sizeof info.weights, "checkpoint %.1000s", checkpoint);
    const fh_mlp *nets[1] = {&q};
    info.weights_hash = fh_weights_hash(nets, 1);
    info.weights_hash_present = 1;
    char source[FH_CONFIG_STRING_MAX + 64];
    fh_run_data_source(cfg, source, sizeof source);
    fh_run_data_identity(&data, source, &info.data);
    info.data_present = 1;
    if ((st = write_q_collection(&batch, out, config_json, cfg->algo, epsilon, &info, err)) == FH_OK)
        printf("collected %d x %d transitions -> %s\n", N, L, out);
done:
#if FH_HAVE_CUDA
    fh_gpu_dqn_collector_destroy(gpu);
#endif
    (void)gpu;
    free(episodes);
    free(config_json);
    fh_transition_batch_free(&batch);
    fh_mlp_free(&q);
    fh_mlp_free(&curiosity);
    fh_run_data_free(&data);
    return st;
}

int fh_cmd_collect(int argc, char **argv)
{
    const char *checkpoint = NULL;
    double epsilon = -1.0;
    fh_arg args[] = {
        {"--checkpoint", FH_ARG_STRING, &checkpoint, "FILE", "weights to collect with (default: fresh weights from --seed)", NULL, 0, 0, 0},
        {"--epsilon", FH_ARG_DOUBLE, &epsilon, "E", "with a DQN/PQN checkpoint: epsilon-greedy's epsilon, 0 greedy (default: the checkpoint's epsilon_end)", NULL, 0, 1, 0},
    };
    /* settings: the table's flags (config_flags.h) */
    fh_key_flag settings[] = {
        {.key = "data", .note = "(default: the checkpoint's data, else the synthetic market)"},
        {.key = "device"},
        {.key = "kernel"},
        {.key = "episodes", .note = "with --checkpoint, the checkpoint's unless given"},
        {.key = "steps", .note = "with --checkpoint, the checkpoint's unless given"},
        {.key = "seed", .note = "here: of the episodes (and of fresh weights)"},
        {.key = "out", .note = "here: FILE.safetensors of the collection (required)"},
    };
    const int n_keys = (int)(sizeof settings / sizeof settings[0]);
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "collect", "Run one experience collection and write it as a safetensors file.",
                           settings, n_keys, args, (int)(sizeof args / sizeof args[0]), argc, argv,
                           &help, &err) != FH_OK)
        return fh_cli_report("collect", &err);
    if (help)
        return 0;
    if (!fh_key_flag_of(settings, n_keys, "out")->seen) {
        fh_error_set(&err, FH_ERR_INPUT, "--out FILE.safetensors is required");
        return fh_cli_report("collect", &err);
    }
    const char *out = fl.out;
    const int epsilon_given = args[1].seen; /* --epsilon */
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    if (checkpoint && fh_checkpoint_read_config(checkpoint, &cfg, &err) != FH_OK)
        return fh_cli_report("collect", &err);
    if (fh_key_flag_of(settings, n_keys, "data")->seen)
        snprintf(cfg.data, sizeof cfg.data, "%s", fl.data);
    snprintf(cfg.device, sizeof cfg.device, "%s", fl.device);
    snprintf(cfg.kernel, sizeof cfg.kernel, "%s", fl.kernel);
    /* with a checkpoint its N x L unless given: the shape `foxhunt update` expects */
    if (!checkpoint || fh_key_flag_of(settings, n_keys, "episodes")->seen)
        cfg.episodes = fl.episodes;
    if (!checkpoint || fh_key_flag_of(settings, n_keys, "steps")->seen)
        cfg.steps = fl.steps;
    cfg.seed = fl.seed;
    cfg.minibatch = 1; /* no update: keep validation from asking for a batch size */
    cfg.resume[0] = '\0';
    cfg.checkpoint_every = 0;
    if (fh_q_net_of_algo(cfg.algo) >= 0) { /* a DQN/PQN checkpoint: its Q-network acts */
        if (collect_q(&cfg, checkpoint, epsilon_given ? epsilon : cfg.epsilon_end, out,
                      &err) != FH_OK)
            return fh_cli_report("collect", &err);
        return 0;
    }
    if (epsilon_given) {
        fh_error_set(&err, FH_ERR_INPUT, "--epsilon applies to a DQN/PQN checkpoint (its "
                     "Q-network acts epsilon-greedily); this collection's policy is a PPO actor "
                     "(%s), which samples its actions", checkpoint ? checkpoint : "fresh weights");
        return fh_cli_report("collect", &err);
    }

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
        /* the GPU collector acts with the device update's copy of the weights, which
         * fh_trainer_init_norm filled with the fresh initialisation: the checkpoint's
         * go up there too */
        if (fh_checkpoint_load(checkpoint, &ck, NULL, &err) != FH_OK ||
            fh_ppo_backend_set_networks(&t, &err) != FH_OK)
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
    if (fh_ppo_backend_collect(&t, &p, &err) != FH_OK ||
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
