/* cmd_export.c — `foxhunt export --actor`: the actor-only checkpoint of a full one (the
 * actor's weights, the normalisation, the config and the data identity), what
 * `foxhunt eval` needs and nothing a resume needs (docs/CHECKPOINTS.md). The file is
 * written atomically by fh_checkpoint_save, then read back to list what it holds. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/learner.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/trainer.h"

/* 1 when a and b name the same existing file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Where --out may not be written: an existing file without --force, or anything that
 * is not a regular file. */
static fh_status check_out(const char *out, const char *checkpoint, int force, fh_error *err)
{
    struct stat st;
    if (stat(out, &st) != 0)
        return FH_OK;
    if (same_file(out, checkpoint))
        return fh_error_set(err, FH_ERR_INPUT, "--out %s is the --checkpoint; write the "
                            "actor-only file to another file", out);
    if (!S_ISREG(st.st_mode))
        return fh_error_set(err, FH_ERR_INPUT, "--out %s exists and is not a regular file; "
                            "choose another --out", out);
    if (!force)
        return fh_error_set(err, FH_ERR_INPUT, "--out %s exists; pass --force to replace it, "
                            "or choose another --out", out);
    return FH_OK;
}

/* Lists what path holds (read back and validated as any safetensors file). */
static fh_status print_contents(const char *path, fh_error *err)
{
    fh_st_file f;
    fh_status st = fh_st_read(&f, path, err);
    if (st != FH_OK)
        return st;
    size_t tensor_bytes = 0;
    for (size_t i = 0; i < f.n_tensors; i++) {
        const fh_st_tensor *t = &f.tensors[i];
        char shape[96] = "";
        for (int r = 0; r < t->rank; r++) {
            size_t used = strlen(shape);
            snprintf(shape + used, sizeof shape - used, "%s%" PRId64, r ? ", " : "",
                     t->shape[r]);
        }
        printf("  %-24s %s [%s] %zu bytes\n", t->name, fh_dtype_name(t->dtype), shape,
               t->nbytes);
        tensor_bytes += t->nbytes;
    }
    printf("  __metadata__:");
    for (size_t i = 0; i < f.n_meta; i++)
        printf("%s %s", i ? "," : "", f.meta_keys[i]);
    printf("\n%zu tensors, %zu bytes of tensors, %zu bytes in all\n", f.n_tensors,
           tensor_bytes, f.file_len);
    fh_st_file_free(&f);
    return FH_OK;
}

int fh_cmd_export(int argc, char **argv)
{
    const char *checkpoint = NULL, *out = NULL;
    int actor_flag = 0, force = 0;
    fh_arg args[] = {
        {"--checkpoint", FH_ARG_STRING, &checkpoint, "FILE", "full checkpoint to export from (required)", NULL, 0, 0, 0},
        {"--actor", FH_ARG_FLAG, &actor_flag, NULL, "write the actor-only checkpoint: the actor's weights, the normalisation, the config and the data identity; `foxhunt eval` reads it, a resume cannot (required: the only export so far)", NULL, 0, 0, 0},
        {"--force", FH_ARG_FLAG, &force, NULL, "replace --out when it exists", NULL, 0, 0, 0},
    };
    /* settings: the table's flags (config_flags.h) */
    fh_key_flag settings[] = {
        {.key = "out", .note = "here: the actor-only FILE.safetensors (required; written to FILE.tmp, then renamed)"},
    };
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "export", "Write the actor-only checkpoint of a full checkpoint, for evaluation and sharing.",
                           settings, (int)(sizeof settings / sizeof settings[0]), args,
                           (int)(sizeof args / sizeof args[0]), argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("export", &err);
    if (help)
        return 0;
    if (settings[0].seen)
        out = fl.out;
    if (!checkpoint || !out) {
        fh_error_set(&err, FH_ERR_INPUT, "%s is required",
                     !checkpoint ? "--checkpoint FILE" : "--out FILE.safetensors");
        return fh_cli_report("export", &err);
    }
    if (!actor_flag) {
        fh_error_set(&err, FH_ERR_INPUT, "say what to export: --actor (the actor-only "
                     "checkpoint, the only export so far)");
        return fh_cli_report("export", &err);
    }
    if (check_out(out, checkpoint, force, &err) != FH_OK)
        return fh_cli_report("export", &err);

    /* the config must be one eval can rebuild the data from: parse it now */
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    if (fh_checkpoint_read_config(checkpoint, &cfg, &err) != FH_OK)
        return fh_cli_report("export", &err);

    fh_mlp actor;
    memset(&actor, 0, sizeof actor);
    fh_feature_norm norm;
    fh_data_identity identity;
    int64_t iteration = -1;
    char *config = NULL;
    int rc = 0;
    /* run.iteration as an optional extra: only said in the metadata, never required */
    fh_checkpoint_extra iter = {"run.iteration", FH_DTYPE_I64, 1, {1}, &iteration, 1, 0};
    fh_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    /* the greedy policy's network: PPO's actor, a Q learner's Q-network (learner.h) */
    const fh_net_kind net = fh_learner_policy_net(cfg.algo);
    ck.nets[net] = &actor;
    ck.norm = &norm;
    ck.data = &identity;
    ck.extras = &iter;
    ck.n_extras = 1;
    if (fh_mlp_init(&actor, net, &err) != FH_OK ||
        fh_checkpoint_load(checkpoint, &ck, &config, &err) != FH_OK)
        goto fail;
    if (ck.actor_only) {
        fh_error_set(&err, FH_ERR_INPUT, "%s is already an actor-only checkpoint; copy it, or "
                     "export from the full checkpoint", checkpoint);
        goto fail;
    }

    char iteration_text[32];
    snprintf(iteration_text, sizeof iteration_text, "%" PRId64, iteration);
    const char *keys[2] = {"export.checkpoint", "export.iteration"};
    const char *values[2] = {checkpoint, iteration_text};
    fh_checkpoint ack;
    memset(&ack, 0, sizeof ack);
    ack.actor_only = 1;
    ack.nets[net] = &actor;
    ack.norm = &norm;
    ack.data = ck.data_present ? &identity : NULL;
    ack.meta_keys = keys;
    ack.meta_values = values;
    ack.n_meta = iter.present ? 2 : 1;
    if (fh_checkpoint_save(out, &ack, config, &err) != FH_OK)
        goto fail;

    if (iter.present)
        printf("exported the %s of %s (iteration %" PRId64 ") -> %s\n",
               fh_net_desc_get(net)->name, checkpoint, iteration, out);
    else
        printf("exported the %s of %s -> %s\n", fh_net_desc_get(net)->name, checkpoint, out);
    if (!ck.data_present)
        printf("note: %s records no data identity (written before it was recorded); "
               "neither does %s\n", checkpoint, out);
    if (print_contents(out, &err) != FH_OK)
        goto fail;
    printf("evaluate it with: foxhunt eval --checkpoint %s (an actor-only checkpoint cannot "
           "resume training)\n", out);
    goto done;
fail:
    rc = fh_cli_report("export", &err);
done:
    free(config);
    fh_mlp_free(&actor);
    return rc;
}
