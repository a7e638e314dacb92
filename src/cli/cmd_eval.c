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

/* base with "_name" before its extension ("out/eval.json", "btc" -> "out/eval_btc.json");
 * "" for no base. */
static void per_asset_path(const char *base, const char *name, char *out, size_t size)
{
    if (!base) {
        snprintf(out, size, "%s", "");
        return;
    }
    const char *slash = strrchr(base, '/'), *dot = strrchr(base, '.');
    if (!dot || (slash && dot < slash))
        snprintf(out, size, "%s_%s", base, name);
    else
        snprintf(out, size, "%.*s_%s%s", (int)(dot - base), base, name, dot);
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
    /* trained on several assets, each normalised on its own training split: so is an
     * asset given with --data (the checkpoint's statistics are the first asset's) */
    char trained_on[FH_CONFIG_STRING_MAX];
    fh_train_config ck_cfg;
    fh_train_config_default(&ck_cfg);
    int several = st == FH_OK && fh_checkpoint_read_config(checkpoint, &ck_cfg, &err) == FH_OK &&
                  strchr(ck_cfg.data, ',') != NULL;
    snprintf(trained_on, sizeof trained_on, "%s", ck_cfg.data);
    if (st == FH_OK && strchr(cfg.data, ',') && report_html) {
        st = fh_error_set(&err, FH_ERR_INPUT, "--report: the tear sheet shows one market, and "
                          "--data names several assets; give one asset with --data");
    }
    if (st == FH_OK)
        st = fh_run_data_load(&rd, &cfg, several ? NULL : &norm, &err);
    const int n_assets = rd.assets ? rd.n_assets : 1;
    for (int k = 0; k < n_assets && st == FH_OK; k++) {
        const fh_run_data *asset = fh_run_data_asset(&rd, k);
        char json_k[FH_CONFIG_STRING_MAX + 96], returns_k[FH_CONFIG_STRING_MAX + 96];
        char title[FH_CONFIG_STRING_MAX + 32] = "evaluation";
        if (rd.assets) { /* one table and one file each: NAME.json -> NAME_ASSET.json */
            char name[64];
            fh_run_data_asset_name(asset, name, sizeof name);
            per_asset_path(json, name, json_k, sizeof json_k);
            per_asset_path(returns, name, returns_k, sizeof returns_k);
            snprintf(title, sizeof title, "evaluation of %s", asset->path);
        } else {
            snprintf(json_k, sizeof json_k, "%s", json ? json : "");
            snprintf(returns_k, sizeof returns_k, "%s", returns ? returns : "");
        }
        fh_eval_report_free(&report);
        memset(&report, 0, sizeof report);
        /* a backtest failure (a network whose outputs overflow) names the checkpoint;
         * nothing is printed or written after it */
        if ((st = fh_eval_report_run(&report, &actor, &cfg, asset, split, seed,
                                     json != NULL || returns != NULL || report_html != NULL,
                                     &err)) != FH_OK)
            fh_error_prefix(&err, "evaluating %s: ", checkpoint);
        if (st != FH_OK ||
            (json && (st = fh_eval_report_write_json(&report, checkpoint, json_k, &err)) != FH_OK) ||
            (returns &&
             (st = fh_eval_report_write_returns(&report, returns_k, &err)) != FH_OK) ||
            (report_html && (st = write_report(report_html, &report, checkpoint, rd.description,
                                               config_json, &err)) != FH_OK))
            break;
        if (k == 0) { /* once the first backtest stands */
            printf("checkpoint: %s%s\ndata: %s\n", checkpoint,
                   actor_only ? " (actor-only)" : "", rd.description);
            if (several)
                printf("note: the model was trained on several assets (%s), each normalised "
                       "on its own training split: %s\n", trained_on,
                       n_assets > 1 ? "so is each asset here"
                                    : "so is this one (on its own training split)");
            if (dev.use_gpu)
                printf("note: backtests run on the CPU (one bar at a time); the GPU is for "
                       "training\n");
        }
        fh_eval_report_print(&report, title, stdout);
        if (json)
            printf("(written to %s)\n", json_k);
        if (returns)
            printf("(returns per bar written to %s)\n", returns_k);
        if (report_html)
            printf("(report written to %s)\n", report_html);
    }
    if (st != FH_OK)
        rc = fh_cli_report("eval", &err);
    free(config_json);
    fh_eval_report_free(&report);
    fh_run_data_free(&rd);
    fh_mlp_free(&actor);
    return rc;
}
