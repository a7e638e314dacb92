/* cmd_train.c — `foxhunt train`: resolve the config, train, checkpoint, evaluate; with
 * --gpus K, start K ranks of itself and wait for them (docs/SCALING.md); as one rank
 * (--world), train its share, rank 0 alone printing and writing the run directory. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "dist/dist_settings.h"
#include "dist/launch.h"
#include "dist/rendezvous.h"
#include "foxhunt/format.h"
#include "foxhunt/train_loop.h"
#include "report/eval_report.h"
#include "report/tear_sheet.h"
#include "rl/run_tensorboard.h"
static int write_run_report(const fh_learner *l, const fh_eval_report *report,
                            const char *source);

/* The chosen model on one asset's test split: printed, eval.json and returns.csv (and,
 * for a one-asset run, the tear sheet). Returns the exit status. */
static int evaluate_asset(const fh_learner *l, const fh_train_config *cfg,
                          const fh_mlp *chosen, const char *source, const fh_run_data *asset,
                          const char *title, const char *json, const char *returns,
                          int deploy, fh_train_loop *loop, const char *gate,
                          const char *tb_group)
{
    fh_error err;
    fh_eval_report report;
    fh_status st = fh_eval_report_run(&report, chosen, cfg, asset, FH_SPLIT_TEST, cfg->seed, 1,
                                      &err);
    if (st == FH_OK && cfg->eval_every > 0) { /* eval.json says whether it may trade */
        report.gated = 1;
        report.deploy = deploy;
        report.gate_psr = loop->has_best ? loop->best_psr : NAN;
        report.gate_min_psr = cfg->deploy_min_psr;
        snprintf(report.gate_why, sizeof report.gate_why, "%s", gate);
    }
    if (st == FH_OK) /* the headline numbers beside the training curves */
        fh_eval_report_log_tensorboard(&report, &loop->run, l->iteration * l->run_steps,
                                       tb_group);
    int rc = 0;
    if (st != FH_OK || fh_eval_report_write_json(&report, source, json, &err) != FH_OK ||
        fh_eval_report_write_returns(&report, returns, &err) != FH_OK) {
        rc = fh_cli_report("train", &err);
    } else {
        fh_eval_report_print(&report, title, stdout);
        printf("(written to %s and %s)\n", json, returns);
        if (!l->data->assets)
            rc = write_run_report(l, &report, source);
    }
    fh_eval_report_free(&report);
    return rc;
}

#if FH_HAVE_NCCL
#include "dist/dist.h"
#include "dist/nccl_loader.h"
#endif

/* After a failed rank, the others' time to stop (their watchdogs abort NCCL within
 * 0.1 s of the abort file) before the launcher kills them. */
#define LAUNCH_GRACE_SECONDS 30.0

/* The signal that asked the run to stop (SIGINT or SIGTERM), read between iterations.
 * A signal handler can reach nothing else, so this one flag is file-scope state by
 * necessity. */
static volatile sig_atomic_t g_stop_requested = 0;

/* The first SIGINT/SIGTERM asks for a stop after the current iteration (with
 * interrupted.safetensors); both signals go back to their default action, so a second
 * one ends the process at once (status 128 + signal; a save it cuts leaves only a
 * *.tmp, removed by the next run in the directory). */
static void on_stop_signal(int sig)
{
    g_stop_requested = sig;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
}

/* The handlers a run replaces, put back after it unless a signal came (then both are
 * SIG_DFL already, on purpose). */
typedef struct {
    struct sigaction old_int, old_term;
} stop_handlers;

static void stop_handlers_install(stop_handlers *h)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, &h->old_int);
    sigaction(SIGTERM, &sa, &h->old_term);
}

static void stop_handlers_restore(const stop_handlers *h)
{
    if (!g_stop_requested) {
        sigaction(SIGINT, &h->old_int, NULL);
        sigaction(SIGTERM, &h->old_term, NULL);
    }
}

typedef struct {
    int is_tty;
    double elapsed;   /* seconds of the iterations run in this process */
    int64_t first_iteration;
    int tb_warned;    /* the event file's failure was said */
} progress_state;

static void format_duration(char *out, size_t n, double seconds)
{
    if (!isfinite(seconds) || seconds < 0)
        snprintf(out, n, "?");
    else if (seconds < 60)
        snprintf(out, n, "%.0fs", seconds);
    else if (seconds < 3600)
        snprintf(out, n, "%dm%02ds", (int)seconds / 60, (int)seconds % 60);
    else
        snprintf(out, n, "%dh%02dm", (int)seconds / 3600, ((int)seconds % 3600) / 60);
}

static void on_iteration(const fh_train_loop *loop, const fh_iteration_metrics *m, void *user)
{
    progress_state *p = user;
    const fh_learner *l = &loop->learner;
    const char *tb_warning = fh_run_tensorboard_warning(&loop->run);
    if (tb_warning && !p->tb_warned) { /* once: the run goes on, metrics.csv has the rows */
        fprintf(stderr, "%swarning: %s\n", p->is_tty ? "\n" : "", tb_warning);
        p->tb_warned = 1;
    }
    p->elapsed += m->collect_seconds + m->update_seconds;
    double done = (double)(m->iteration - p->first_iteration + 1);
    double eta = p->elapsed / done * (double)(l->cfg.iterations - m->iteration);
    char eta_text[32], ret[32];
    format_duration(eta_text, sizeof eta_text, eta);
    if (isfinite(m->mean_episode_return))
        snprintf(ret, sizeof ret, "%.3f", m->mean_episode_return);
    else
        snprintf(ret, sizeof ret, "n/a");
    char line[512], own[256] = "", val[96] = "", extra[96] = "";
    for (int i = 0; i < l->ops->n_columns; i++) { /* the learner's columns it shows */
        const fh_metric_column *c = &l->ops->columns[i];
        if (!c->label)
            continue;
        char value[32];
        snprintf(value, sizeof value, c->format, m->own[i]);
        fh_format_append(own, sizeof own, "  %s %s", c->label, value);
    }
    if (loop->validated)
        snprintf(val, sizeof val, "  validation Sharpe %.2f (best %.2f at %lld)",
                 loop->validation.sharpe, loop->best_sharpe, (long long)loop->best_iteration);
    if (l->ops->ranks)
        l->ops->ranks->progress(l, m, extra, sizeof extra);
    snprintf(line, sizeof line, "iter %lld/%d  %.0f steps/s (collect %.0f)  return %s%s  ETA %s%s%s",
             (long long)m->iteration, l->cfg.iterations, m->steps_per_second,
             m->collect_steps_per_second, ret, own, eta_text, extra, val);
    if (p->is_tty) {
        printf("\r\033[K%s", line);
        if (m->iteration == l->cfg.iterations || loop->validated)
            printf("\n");
    } else {
        printf("%s\n", line);
    }
    fflush(stdout);
}

/* OUT/report.html, the tear sheet of the evaluation with the run's training curves; a
 * binary built without dygraphs says so and the run still succeeds. */
static int write_run_report(const fh_learner *l, const fh_eval_report *report,
                            const char *source)
{
    fh_error err;
    if (fh_tear_sheet_available(&err) != FH_OK) {
        printf("note: no report.html: %s\n", err.message);
        return 0;
    }
    char path[FH_CONFIG_STRING_MAX + 32], metrics[FH_CONFIG_STRING_MAX + 32], title[700];
    snprintf(path, sizeof path, "%s/report.html", l->cfg.out);
    snprintf(metrics, sizeof metrics, "%s/metrics.csv", l->cfg.out);
    snprintf(title, sizeof title, "foxhunt tear sheet: %.600s", l->cfg.out);
    fh_tear_sheet_info info = {title, source, l->data->description, metrics, l->config_json};
    if (fh_tear_sheet_write(path, report, &info, &err) != FH_OK)
        return fh_cli_report("train", &err);
    printf("(tear sheet: %s)\n", path);
    return 0;
}

#if FH_HAVE_NCCL
/* argv[1..argc) without `name` and its value (as args.c reads them: `--name value` or
 * `--name=value`), appended to out; returns the new count. */
static int copy_without(char **out, int n, int argc, char **argv, const char *const *names,
                        int n_names)
{
    for (int i = 1; i < argc; i++) {
        int drop = 0;
        for (int k = 0; k < n_names && !drop; k++) {
            size_t len = strlen(names[k]);
            if (strcmp(argv[i], names[k]) == 0) {
                drop = 1;
                if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                    i++; /* its value */
            } else if (strncmp(argv[i], names[k], len) == 0 && argv[i][len] == '=') {
                drop = 1;
            }
        }
        if (!drop)
            out[n++] = argv[i];
    }
    return n;
}
#endif

/* `foxhunt train --gpus K`: K ranks of this program on this host (dist/launch.h), each
 * `train` with the same flags, --gpus 0, the run directory resolved here, and the
 * launcher's --world K --rank r --rendezvous FILE (a fresh directory under /tmp). */
static int launch_gpus(const fh_train_config *cfg, int argc, char **argv)
{
    fh_error err;
    fh_error_clear(&err);
#if !FH_HAVE_NCCL
    (void)argc;
    (void)argv;
    fh_error_set(&err, FH_ERR_INPUT, "--gpus %d: this foxhunt was built without NCCL's header "
                 "(nccl.h), so data-parallel training is unavailable (docs/SCALING.md)",
                 cfg->gpus);
    return fh_cli_report("train", &err);
#else
    int K = cfg->gpus;
    int count = fh_dist_device_count(&err);
    if (count == 0) {
        fh_error_prefix(&err, "--gpus %d: ", K);
        return fh_cli_report("train", &err);
    }
    if (count < K) {
        fh_error_set(&err, FH_ERR_INPUT, "--gpus %d: this host has %d GPU%s (start at most "
                     "%d ranks; more hosts: --world, docs/SCALING.md)", K, count,
                     count == 1 ? "" : "s", count);
        return fh_cli_report("train", &err);
    }
    fh_nccl nccl; /* one clear message here, rather than one from every rank */
    fh_search_env search;
    fh_search_env_read(&search);
    if (fh_nccl_load(&nccl, cfg->nccl_library, &search, &err) != FH_OK)
        return fh_cli_report("train", &err);
    char version[32];
    fh_nccl_version_text(nccl.version, version, sizeof version);
    printf("foxhunt train --gpus %d: %d ranks, one a GPU, each %d of the %d episodes and %d "
           "rows of each %d-row minibatch; NCCL %s (%s); run directory %s\n", K, K,
           cfg->episodes / K, cfg->episodes, cfg->minibatch / K, cfg->minibatch, version,
           nccl.path, cfg->out);
    if (nccl.note[0])
        printf("note: %s\n", nccl.note);
    fh_nccl_unload(&nccl);

    char dir[] = "/tmp/foxhunt-gpus-XXXXXX";
    if (!mkdtemp(dir)) {
        fh_error_set(&err, FH_ERR_FAILURE, "--gpus: cannot make a rendezvous directory under "
                     "/tmp: %s", strerror(errno));
        return fh_cli_report("train", &err);
    }
    char rendezvous[sizeof dir + 16];
    snprintf(rendezvous, sizeof rendezvous, "%s/nccl-id", dir);
    char **args = calloc((size_t)argc + 8, sizeof *args);
    if (!args) {
        rmdir(dir);
        fh_error_set(&err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        return fh_cli_report("train", &err);
    }
    const char *const drop[] = {"--gpus", "--out"};
    int n = 0;
    args[n++] = "train";
    n = copy_without(args, n, argc, argv, drop, 2);
    args[n++] = "--gpus";
    args[n++] = "0";
    args[n++] = "--out";
    args[n++] = (char *)cfg->out;
    fh_launch_spec spec = {K, "/proc/self/exe", args, n, rendezvous, LAUNCH_GRACE_SECONDS};
    fh_launch_result res;
    fh_status st = fh_launch_ranks(&spec, &res, &err);
    char told[FH_ERROR_MESSAGE_MAX / 2] = "";
    int has_told = fh_rendezvous_abort_read(rendezvous, told, sizeof told);
    fh_rendezvous_remove(rendezvous, K);
    char abort_path[sizeof rendezvous + 8];
    snprintf(abort_path, sizeof abort_path, "%s.abort", rendezvous);
    unlink(abort_path);
    rmdir(dir);
    free(args);
    if (st != FH_OK)
        return fh_cli_report("train", &err);
    if (res.failed_rank >= 0) {
        fprintf(stderr, "error: foxhunt train --gpus %d: %s%s%s%s\n", K, res.message,
                has_told && strcmp(told, res.message) != 0 ? " (" : "",
                has_told && strcmp(told, res.message) != 0 ? told : "",
                has_told && strcmp(told, res.message) != 0 ? ")" : "");
        if (res.killed)
            fprintf(stderr, "note: %d rank%s did not stop within %.0f s and %s killed\n",
                    res.killed, res.killed == 1 ? "" : "s", LAUNCH_GRACE_SECONDS,
                    res.killed == 1 ? "was" : "were");
        return res.exit_code ? res.exit_code : 1;
    }
    return res.exit_code;
#endif
}

/* A rank's failure outside the training loop (its run directory, say): the other ranks
 * are told the reason before this one exits. */
static void tell_ranks(fh_train_loop *loop, fh_error *err)
{
    fh_learner *l = &loop->learner;
    if (l->ops && l->ops->ranks && l->state && l->ops->ranks->present(l))
        l->ops->ranks->failed(l, err);
}

int fh_cmd_train(int argc, char **argv)
{
    fh_train_config cfg;
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_config_from_flags(&cfg, "train",
                             "Train an agent (--algo: ppo, dqn, pqn or constant) on --data FILE or on the built-in synthetic market.\n"
                             "Writes config.json, metrics.csv/.jsonl and checkpoints to --out (locked while\n"
                             "the run lasts; a directory holding another run's files is refused unless\n"
                             "--force). Ctrl-C or SIGTERM stops after the current iteration with\n"
                             "interrupted.safetensors and exit status 130 (SIGINT) or 143 (SIGTERM); a\n"
                             "second one stops at once. Flags override --config, which overrides the config\n"
                             "saved in --resume's checkpoint.",
                             argc, argv, &help, &err) != FH_OK)
        return fh_cli_report("train", &err);
    if (help)
        return 0;
    if (fh_train_config_validate(&cfg, &err) != FH_OK)
        return fh_cli_report("train", &err);
    fh_dist_settings ds;
    if (fh_dist_settings_of_process(&cfg, &ds, &err) != FH_OK)
        return fh_cli_report("train", &err);
    if (!cfg.out[0] && fh_run_dir_new_name(cfg.out, sizeof cfg.out, &cfg, NULL, &err) != FH_OK)
        return fh_cli_report("train", &err);
    if (ds.mode == FH_DIST_LAUNCH)
        return launch_gpus(&cfg, argc, argv);
    /* one rank of a data-parallel run: rank 0 prints and writes the run directory; every
     * rank's errors name it */
    int lead = ds.mode != FH_DIST_RANK || ds.rank == 0;
    char who[64] = "train";
    if (ds.mode == FH_DIST_RANK)
        snprintf(who, sizeof who, "train (rank %d of %d)", ds.rank, ds.world);
    /* the data, checkpoint and run directory are checked first: an error comes alone,
     * not after a screen of configuration */
    fh_train_loop loop;
    fh_status made = fh_train_loop_init(&loop, &cfg, &err);
    if (made == FH_OK) /* the record of what made the run (config.json, checkpoints) */
        fh_run_record_set_command(&loop.record, "foxhunt", argc, argv);
    if (made != FH_OK || (lead && fh_train_loop_open_run(&loop, &err) != FH_OK)) {
        tell_ranks(&loop, &err);
        fh_train_loop_free(&loop);
        return fh_cli_report(who, &err);
    }
    const fh_learner *l = &loop.learner;
    if (!lead) { /* a rank other than 0: train its share, quietly */
        stop_handlers handlers;
        stop_handlers_install(&handlers);
        fh_status st = fh_train_loop_run(&loop, &g_stop_requested, NULL, NULL, &err);
        int stop_signal = g_stop_requested;
        stop_handlers_restore(&handlers);
        fh_train_loop_free(&loop);
        if (st != FH_OK)
            return fh_cli_report(who, &err);
        return stop_signal ? 128 + stop_signal : 0;
    }
    printf("foxhunt train: resolved configuration\n");
    fh_config_print(&cfg, stdout);
    if (loop.run.note[0])
        printf("note: %s\n", loop.run.note);
    if (l->data_identity_unchecked)
        fprintf(stderr, "warning: %s records no identity of its data (an older checkpoint): "
                "resuming on the data given now without checking it is the same\n",
                cfg.resume);
    if (l->data_other)
        printf("note: --allow-other-data: %s was trained on other data; its networks carry "
               "on, every episode restarts on this data\n", cfg.resume);
    if (l->note[0])
        printf("note: %s\n", l->note);
    char device[400], where[200];
    fh_device_describe(l->device, device, sizeof device);
    l->ops->describe(l, where, sizeof where);
    printf("%s; %s\n", device, where);
    char splits[1024];
    fh_run_data_describe_splits(l->data, splits, sizeof splits);
    printf("data: %s\nsplits: %s\n", l->data->description, splits);
    if (cfg.split_gap < FH_FEATURE_WARMUP)
        printf("note: split gap %d is below the %d-bar feature warm-up: the first features "
               "of each split are computed from the previous split's bars\n", cfg.split_gap,
               FH_FEATURE_WARMUP);
    if (l->iteration > 0)
        printf("resumed from %s at iteration %lld\n", cfg.resume, (long long)l->iteration);
    if (l->ops->ranks && l->ops->ranks->present(l)) {
        char ranks[1024];
        l->ops->ranks->describe(l, ranks, sizeof ranks);
        printf("%s\n", ranks);
    }

    stop_handlers handlers;
    stop_handlers_install(&handlers);
    progress_state progress = {isatty(STDOUT_FILENO), 0.0, l->iteration + 1, 0};
    fh_status st = fh_train_loop_run(&loop, &g_stop_requested, on_iteration, &progress, &err);
    int stop_signal = g_stop_requested;
    stop_handlers_restore(&handlers);
    if (progress.is_tty && l->iteration < cfg.iterations)
        printf("\n");
    if (st != FH_OK) {
        fh_train_loop_free(&loop);
        return fh_cli_report(who, &err);
    }
    if (stop_signal) {
        printf("interrupted by %s after iteration %lld: checkpoint %s (continue with --resume "
               "%s)\n",
               stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", (long long)l->iteration,
               loop.last_checkpoint, loop.last_checkpoint);
        fh_train_loop_free(&loop);
        return 128 + stop_signal; /* 130 after SIGINT, 143 after SIGTERM */
    }
    printf("done: %lld iterations; checkpoint %s; metrics in %s/metrics.csv\n",
           (long long)l->iteration, loop.last_checkpoint, cfg.out);

    int rc = 0;
    if (cfg.eval_at_end) {
        char json[FH_CONFIG_STRING_MAX + 96], returns[FH_CONFIG_STRING_MAX + 96];
        snprintf(json, sizeof json, "%s/eval.json", cfg.out);
        snprintf(returns, sizeof returns, "%s/returns.csv", cfg.out);
        /* the model the validation split chose, when there was a choice */
        const char *source;
        const fh_mlp *chosen = fh_train_loop_chosen(&loop, &source);
        if (loop.has_best)
            printf("model chosen on the validation split: %s (iteration %lld, validation "
                   "Sharpe %.2f%s); evaluated once on the test split\n", loop.best_checkpoint,
                   (long long)loop.best_iteration, loop.best_sharpe,
                   l->data->assets ? ", the assets' mean" : "");
        char warning[320], gate[320];
        if (cfg.eval_every > 0 &&
            fh_validation_choice_warning(loop.has_best, loop.best_sharpe, warning, sizeof warning))
            fprintf(stderr, "warning: %s\n", warning);
        int deploy = cfg.eval_every > 0 &&
                     fh_deploy_gate(loop.has_best, loop.best_psr, cfg.deploy_min_psr, gate,
                                    sizeof gate);
        if (cfg.eval_every > 0)
            printf("deployment gate: %s%s\n", gate, deploy ? "" : " (the deployed policy: "
                   "flat's row; the greedy rows below are the ungated model's)");
        if (l->ops->policy_net != FH_NET_ACTOR)
            printf("policies: greedy is argmax Q, sampled is softmax(Q)\n");
        /* several assets: each on its own test split, eval_NAME.json and returns_NAME.csv
         * (no tear sheet: it shows one market) */
        const int n_assets = l->data->assets ? l->data->n_assets : 1;
        for (int k = 0; k < n_assets && rc == 0; k++) {
            const fh_run_data *asset = fh_run_data_asset(l->data, k);
            char title[FH_CONFIG_STRING_MAX + 32] = "evaluation", tb_group[80] = "eval";
            if (l->data->assets) {
                char name[64];
                fh_run_data_asset_name(asset, name, sizeof name);
                snprintf(tb_group, sizeof tb_group, "eval_%s", name);
                snprintf(json, sizeof json, "%s/eval_%s.json", cfg.out, name);
                snprintf(returns, sizeof returns, "%s/returns_%s.csv", cfg.out, name);
                snprintf(title, sizeof title, "evaluation of %s", asset->path);
            }
            rc = evaluate_asset(l, &cfg, chosen, source, asset, title, json, returns, deploy,
                                &loop, gate, tb_group);
        }
    }
    fh_tfevents_close(&loop.run.tb); /* its last failure, if any, is said below */
    if (fh_run_tensorboard_warning(&loop.run) && !progress.tb_warned)
        fprintf(stderr, "warning: %s\n", fh_run_tensorboard_warning(&loop.run));
    fh_train_loop_free(&loop);
    return rc;
}
