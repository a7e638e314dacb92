/* cmd_update.c — `foxhunt update`: one PPO update (fh_ppo_update, as an iteration of
 * `foxhunt train` runs it) on a collection that `foxhunt collect` saved, from a
 * checkpoint's networks, Adam state, config and update stream; writes the new
 * checkpoint together with the update's record (each epoch's sample order, one row per
 * minibatch, the update's statistics), so that an independent implementation can check
 * the update step by step (issue 17; keys in docs/CHECKPOINTS.md). --device cpu runs
 * the reference update, --device cuda the GPU's (gpu_ppo_update.c) on the batch
 * uploaded; both draw the same sample order from the checkpoint's update stream. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "foxhunt/batch_file.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/ppo.h"
#include "foxhunt/trainer.h"
#include "rl/ppo_backend.h"

/* The statistics fh_ppo_update returns, in the order of update.stats. */
static const char *const k_stats_columns =
    "policy_loss,value_loss,entropy,approx_kl,old_approx_kl,clip_fraction,"
    "explained_variance,curiosity_loss,grad_norm,epochs_run,minibatches";
#define N_STATS 11

static void stats_row(double *out, const fh_ppo_stats *s)
{
    const double v[N_STATS] = {s->policy_loss, s->value_loss, s->entropy, s->approx_kl,
                               s->old_approx_kl, s->clip_fraction, s->explained_variance,
                               s->curiosity_loss, s->grad_norm, s->epochs_run,
                               s->minibatches};
    memcpy(out, v, sizeof v);
}

/* 1 when a and b name the same existing file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int fh_cmd_update(int argc, char **argv)
{
    const char *checkpoint = NULL, *batch = NULL, *out = NULL;
    int iteration_flag = 1;
    fh_arg args[] = {
        {"--checkpoint", FH_ARG_STRING, &checkpoint, "FILE", "checkpoint to update from: networks, Adam state, config, update stream (required)", NULL, 0, 0, 0},
        {"--batch", FH_ARG_STRING, &batch, "FILE.safetensors", "the collection (`foxhunt collect --checkpoint FILE`) to update on (required)", NULL, 0, 0, 0},
        {"--iteration", FH_ARG_INT, &iteration_flag, "K", "which iteration this update is, 1-based: sets the annealed rates (lr, ent_coef) and the new run.iteration (default: the checkpoint's + 1)", NULL, 1, 2147483647, 0},
    };
    /* settings: the table's flags (config_flags.h) */
    fh_key_flag settings[] = {
        {.key = "out", .note = "here: FILE.safetensors of the new checkpoint and the update's record (required)"},
        {.key = "device", .value = "cpu", .note = "here: where the update runs: cpu (the reference), cuda (the GPU update the trainer uses under --device cuda) or auto (cuda when there is a GPU)"},
        {.key = "lr", .note = "(default: the run's for this iteration, annealed as train does)"},
        {.key = "data", .note = "it must be the data the checkpoint trained on (default: that data)"},
    };
    const int n_keys = (int)(sizeof settings / sizeof settings[0]);
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "update", "Run one PPO update on a saved collection and write the new checkpoint with the update's record.",
                           settings, n_keys, args, (int)(sizeof args / sizeof args[0]), argc, argv,
                           &help, &err) != FH_OK)
        return fh_cli_report("update", &err);
    if (help)
        return 0;
    if (fh_key_flag_of(settings, n_keys, "out")->seen)
        out = fl.out;
    const char *data = fh_key_flag_of(settings, n_keys, "data")->seen ? fl.data : NULL;
    const int lr_given = fh_key_flag_of(settings, n_keys, "lr")->seen;
    const int iteration_given = args[2].seen; /* --iteration */
    if (!checkpoint || !batch || !out) {
        fh_error_set(&err, FH_ERR_INPUT, "%s is required", !checkpoint ? "--checkpoint FILE"
                     : !batch ? "--batch FILE.safetensors" : "--out FILE.safetensors");
        return fh_cli_report("update", &err);
    }
    if (same_file(out, checkpoint) || same_file(out, batch)) {
        fh_error_set(&err, FH_ERR_INPUT, "--out %s is the %s; write the new checkpoint to "
                     "another file", out, same_file(out, checkpoint) ? "--checkpoint" : "--batch");
        return fh_cli_report("update", &err);
    }

    /* the checkpoint's run, resumed: every check of `train --resume` applies */
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    if (fh_checkpoint_read_config(checkpoint, &cfg, &err) != FH_OK)
        return fh_cli_report("update", &err);
    if (data)
        snprintf(cfg.data, sizeof cfg.data, "%s", data);
    snprintf(cfg.resume, sizeof cfg.resume, "%s", checkpoint);
    snprintf(cfg.device, sizeof cfg.device, "%s", fl.device);
    snprintf(cfg.update_device, sizeof cfg.update_device, "same");
    cfg.checkpoint_every = 0;
    cfg.allow_other_data = 0;

    fh_trainer t;
    memset(&t, 0, sizeof t);
    fh_ppo_trace trace;
    memset(&trace, 0, sizeof trace);
    fh_trajectory_batch b;
    memset(&b, 0, sizeof b);
    int rc = 0;
    char whose[1200];
    snprintf(whose, sizeof whose, "the checkpoint %.1100s", checkpoint);
    fh_batch_file_info info;
    if (fh_trainer_init(&t, &cfg, &err) != FH_OK)
        goto fail;
    if (t.data_identity_unchecked)
        fprintf(stderr, "note: %s records no data identity (written before it was "
                "recorded): its data could not be compared with this one\n", checkpoint);
    if (fh_batch_file_read(&b, &info, batch, cfg.episodes, cfg.steps, whose, &t.train_market,
                           &err) != FH_OK)
        goto fail;
    fh_trajectory_batch_free(&t.batch);
    t.batch = b;
    memset(&b, 0, sizeof b);

    /* the collection's data must be the checkpoint's (the curiosity targets are read at
     * its bars); other weights are allowed, and said */
    char why[FH_DATA_SOURCE_MAX * 2 + 256];
    if (info.data_present && !fh_data_identity_same(&info.data, &t.data_identity, why, sizeof why)) {
        fh_error_set(&err, FH_ERR_INPUT, "%s was collected on other data than %s (%s); "
                     "collect with --checkpoint %s", batch, checkpoint, why, checkpoint);
        goto fail;
    }
    if (!info.data_present)
        fprintf(stderr, "note: %s records no data identity: its bars are only checked to lie "
                "in this training split\n", batch);
    const fh_mlp *nets[2] = {&t.actor, &t.critic};
    uint64_t mine = fh_weights_hash(nets, 2);
    if (!info.weights_hash_present || info.weights_hash != mine)
        fprintf(stderr, "note: %s was collected with %s (%s%s), not with %s's networks: the "
                "update starts from %s's networks on its samples, so the first ratios are "
                "not 1\n", batch, info.weights[0] ? info.weights : "unrecorded weights",
                info.weights_hash_present ? "weights hash " : "no weights hash",
                info.weights_hash_present ? "differs" : "", checkpoint, checkpoint);

    int64_t from_iteration = t.iteration;
    int64_t iteration = iteration_given ? iteration_flag : t.iteration + 1;
    double lr = lr_given ? fl.lr : fh_train_config_lr(&cfg, iteration);
    if (!(lr > 0) && !lr_given) {
        fh_error_set(&err, FH_ERR_INPUT, "iteration %lld of a run of %d iterations: the "
                     "annealed learning rate is %g; pass --lr LR, or --iteration K with K <= "
                     "%d", (long long)iteration, cfg.iterations, lr, cfg.iterations);
        goto fail;
    }
    if (fh_train_config_check_decay(lr, cfg.weight_decay, &err) != FH_OK) {
        fh_error_prefix(&err, "--lr %g: ", lr);
        goto fail;
    }

    fh_ppo_stats stats;
    if (fh_ppo_trace_init(&trace, &cfg, (int64_t)cfg.episodes * cfg.steps, &err) != FH_OK)
        goto fail;
    if (fh_ppo_backend_update(&t, &stats, lr, fh_train_config_ent_coef(&cfg, iteration), &trace,
                              1, &err) != FH_OK ||
        fh_ppo_backend_sync_host(&t, &err) != FH_OK) {
        fh_error_prefix(&err, "the update: ");
        size_t used = strlen(err.message);
        snprintf(err.message + used, sizeof err.message - used, "; %s not written", out);
        goto fail;
    }
    t.iteration = iteration;

    double stats_values[N_STATS];
    stats_row(stats_values, &stats);
    int64_t nl = (int64_t)cfg.episodes * cfg.steps;
    fh_checkpoint_extra more[3] = {
        {"update.minibatch_order", FH_DTYPE_I64, 2, {trace.epochs, nl}, trace.order, 0, 0},
        {"update.minibatch_records", FH_DTYPE_F64, 2, {trace.n_records, FH_PPO_TRACE_COLS},
         trace.records, 0, 0},
        {"update.stats", FH_DTYPE_F64, 1, {N_STATS}, stats_values, 0, 0},
    };
    char columns[512] = "", lr_text[40], iteration_text[32];
    for (int c = 0; c < FH_PPO_TRACE_COLS; c++) {
        size_t used = strlen(columns);
        snprintf(columns + used, sizeof columns - used, "%s%s", c ? "," : "",
                 fh_ppo_trace_columns[c]);
    }
    snprintf(lr_text, sizeof lr_text, "%.17g", lr);
    snprintf(iteration_text, sizeof iteration_text, "%lld", (long long)iteration);
    const char *keys[] = {"update.minibatch_records.columns", "update.stats.columns",
                          "update.lr", "update.iteration", "update.device",
                          "update.checkpoint", "update.batch", "update.batch_weights"};
    const char *values[] = {columns, k_stats_columns, lr_text, iteration_text,
                            fh_ppo_backend_update_device(&t),
                            checkpoint, batch, info.weights};
    if (fh_trainer_save_with(&t, out, more, 3, keys, values, (int)(sizeof keys / sizeof keys[0]),
                             &err) != FH_OK)
        goto fail;

    printf("checkpoint: %s (iteration %lld)\nbatch: %s (%d x %d)\n", checkpoint,
           (long long)from_iteration, batch, cfg.episodes, cfg.steps);
    printf("update %lld on the %s: lr %.6g, %d epochs x %d minibatches of %d: policy loss "
           "%.6f, value loss %.6f, entropy %.4f, approx kl %.3g, clip fraction %.3f, grad "
           "norm %.4f, explained variance %.3f\n", (long long)iteration,
           fh_ppo_backend_update_device(&t), lr, stats.epochs_run,
           trace.minibatches_per_epoch, cfg.minibatch, stats.policy_loss, stats.value_loss,
           stats.entropy, stats.approx_kl, stats.clip_fraction, stats.grad_norm,
           stats.explained_variance);
    printf("-> %s (resumable; the record under update.*)\n", out);
    goto done;
fail:
    rc = fh_cli_report("update", &err);
done:
    fh_ppo_trace_free(&trace);
    fh_trajectory_batch_free(&b);
    fh_trainer_free(&t);
    return rc;
}
