/* cmd_eval.c — `foxhunt eval`: backtest a checkpoint on the test split against
 * buy-and-hold, flat and random (and the oracle on the synthetic market). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/config_flags.h"
#include "cli/commands.h"
#include "foxhunt/checkpoint.h"
#include "foxhunt/device.h"
#include "foxhunt/learner.h"
#include "foxhunt/trainer.h"
#include "report/eval_report.h"
#include "report/tear_sheet.h"

/* The tear sheet, with the training curves of the metrics.csv beside the checkpoint (its
 * run directory) when there is one. */
static fh_status write_report(const char *path, const fh_eval_report *r, const char *checkpoint,
                              const char *data, const char *config_json, fh_error *err)
{
    char metrics[4200], title[4200];
    const char *slash = strrchr(checkpoint, '/');
    snprintf(metrics, sizeof metrics, "%.*smetrics.csv",
             slash ? (int)(slash - checkpoint + 1) : 0, checkpoint);
    snprintf(title, sizeof title, "foxhunt tear sheet: %s", checkpoint);
    fh_tear_sheet_info info = {title, checkpoint, data,
                               access(metrics, R_OK) == 0 ? metrics : NULL, config_json};
    return fh_tear_sheet_write(path, r, &info, err);
}

int fh_cmd_eval(int argc, char **argv)
{
    const char *checkpoint = NULL, *json = NULL, *returns = NULL;
    const char *split_name = "test";
    const char *report_html = NULL;
    fh_arg args[] = {
        {"--checkpoint", FH_ARG_STRING, &checkpoint, "FILE", "checkpoint (.safetensors) to evaluate", NULL, 0, 0, 0},
        {"--json", FH_ARG_STRING, &json, "FILE", "also write the results as JSON", NULL, 0, 0, 0},
        {"--returns", FH_ARG_STRING, &returns, "FILE.csv", "also write every policy's path bar by bar: time, equity, return, exposure, cost, turnover (pandas: read_csv(FILE, index_col='time', parse_dates=True); docs/EVALUATION.md)", NULL, 0, 0, 0},
        {"--report", FH_ARG_STRING, &report_html, "FILE.html", "also write a tear sheet: one self-contained HTML page with the tables, equity, drawdown, rolling Sharpe, exposure, return distribution, monthly returns, the run's training curves and its settings (docs/EVALUATION.md)", NULL, 0, 0, 0},
        {"--split", FH_ARG_CHOICE, &split_name, NULL, "which split to backtest (the checkpoint's config places them; docs/EVALUATION.md)", "test|validation|train|all", 0, 0, 0},
    };
    /* settings: the table's flags (config_flags.h) */
    fh_key_flag settings[] = {
        {.key = "data", .note = "here: to evaluate on (default: the data the checkpoint trained on)"},
        {.key = "device", .note = "backtests step one bar at a time on the CPU"},
        {.key = "seed", .note = "here: of the sampled and random policies"},
        {.key = "periods_per_year", .note = "0 here: the checkpoint's setting, else from the bar spacing"},
    };
    const int n_keys = (int)(sizeof settings / sizeof settings[0]);
    fh_train_config fl; /* the flags' values */
    fh_error err;
    fh_error_clear(&err);
    int help = 0;
    if (fh_key_flags_parse(&fl, "eval", "Backtest a checkpoint's policy (greedy and sampled) against baselines.",
                           settings, n_keys, args, (int)(sizeof args / sizeof args[0]), argc, argv,
                           &help, &err) != FH_OK)
        return fh_cli_report("eval", &err);
    if (help)
        return 0;
    const char *data = fh_key_flag_of(settings, n_keys, "data")->seen ? fl.data : NULL;
    const char *device = fl.device;
    const uint64_t seed = fl.seed;
    const double periods = fl.periods_per_year;
    if (!checkpoint) {
        fh_error_set(&err, FH_ERR_INPUT, "--checkpoint FILE is required");
        return fh_cli_report("eval", &err);
    }
    if (report_html && fh_tear_sheet_available(&err) != FH_OK) /* before the backtests */
        return fh_cli_report("eval", &err);
    fh_device_info dev;
    if (fh_device_select(device, &dev, &err) != FH_OK)
        return fh_cli_report("eval", &err);

    fh_train_config cfg;
    fh_train_config_default(&cfg);
    if (fh_checkpoint_read_config(checkpoint, &cfg, &err) != FH_OK)
        return fh_cli_report("eval", &err);
    if (data)
        snprintf(cfg.data, sizeof cfg.data, "%s", data);
    if (periods > 0)
        cfg.periods_per_year = periods;
    fh_mlp actor;
    fh_feature_norm norm;
    int rc = 0, actor_only = 0;
    fh_run_data rd;
    memset(&rd, 0, sizeof rd);
    fh_eval_report report;
    memset(&report, 0, sizeof report);
    fh_split split = !strcmp(split_name, "train")        ? FH_SPLIT_TRAIN
                     : !strcmp(split_name, "validation") ? FH_SPLIT_VALIDATION
                     : !strcmp(split_name, "all")        ? FH_SPLIT_ALL
                                                         : FH_SPLIT_TEST;
    char *config_json = NULL; /* for the tear sheet's settings */
    /* the policy network the checkpoint's learner trained: PPO's actor, or the Q-network
     * of DQN/PQN (greedy = argmax Q, sampled = softmax(Q)) */
    fh_status st = fh_learner_policy_load(checkpoint, cfg.algo, &actor, &norm,
                                          report_html ? &config_json : NULL, &actor_only,
                                          &err);
    if (st == FH_OK)
        st = fh_run_data_load(&rd, &cfg, &norm, &err);
    /* a backtest failure (a network whose outputs overflow) names the checkpoint; nothing
     * is printed or written after it */
    if (st == FH_OK && (st = fh_eval_report_run(&report, &actor, &cfg, &rd, split, seed,
                                                json || returns || report_html,
                                                &err)) != FH_OK)
        fh_error_prefix(&err, "evaluating %s: ", checkpoint);
    if (st != FH_OK ||
        (json && fh_eval_report_write_json(&report, checkpoint, json, &err) != FH_OK) ||
        (returns && fh_eval_report_write_returns(&report, returns, &err) != FH_OK) ||
        (report_html && write_report(report_html, &report, checkpoint, rd.description,
                                     config_json, &err) != FH_OK)) {
        rc = fh_cli_report("eval", &err);
    } else {
        printf("checkpoint: %s%s\ndata: %s\n", checkpoint, actor_only ? " (actor-only)" : "", rd.description);
        if (dev.use_gpu)
            printf("note: backtests run on the CPU (one bar at a time); the GPU is for training\n");
        fh_eval_report_print(&report, "evaluation", stdout);
        if (json)
            printf("(written to %s)\n", json);
        if (returns)
            printf("(returns per bar written to %s)\n", returns);
        if (report_html)
            printf("(report written to %s)\n", report_html);
    }
    free(config_json);
    fh_eval_report_free(&report);
    fh_run_data_free(&rd);
    fh_mlp_free(&actor);
    return rc;
}
