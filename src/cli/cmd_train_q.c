/* cmd_train_q.c — `foxhunt train --algo dqn|pqn` (issue 18): the Q-learning trainer
 * (include/foxhunt/q_trainer.h) with train's run directory, progress lines and
 * end-of-run evaluation of the greedy Q-policy (argmax Q; the "sampled" row is the
 * Boltzmann policy softmax(Q)). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "foxhunt/q_trainer.h"
#include "report/eval_report.h"
#include "report/tear_sheet.h"

static void on_iteration(const fh_q_trainer *t, const fh_iteration_metrics *m, void *user)
{
    (void)user;
    char ret[32];
    if (isfinite(m->mean_episode_return))
        snprintf(ret, sizeof ret, "%.3f", m->mean_episode_return);
    else
        snprintf(ret, sizeof ret, "n/a");
    printf("iter %lld/%d  %.0f steps/s (collect %.0f)  return %s  epsilon %.3f  TD loss %.4g  "
           "grad steps %d  action entropy %.2f\n",
           (long long)m->iteration, t->cfg.iterations, m->steps_per_second,
           m->collect_steps_per_second, ret, t->epsilon, m->ppo.value_loss, m->ppo.minibatches,
           m->action_entropy);
    fflush(stdout);
}

int fh_train_q(fh_train_config *cfg, volatile sig_atomic_t *stop)
{
    fh_error err;
    fh_error_clear(&err);
    fh_q_trainer t;
    if (fh_q_trainer_init(&t, cfg, &err) != FH_OK || fh_q_trainer_open_run(&t, &err) != FH_OK) {
        fh_q_trainer_free(&t);
        return fh_cli_report("train", &err);
    }
    printf("foxhunt train: resolved configuration\n");
    fh_config_print(cfg, stdout);
    if (t.run.note[0])
        printf("note: %s\n", t.run.note);
    if (t.data_identity_unchecked)
        fprintf(stderr, "warning: %s records no identity of its data (an older checkpoint): "
                "resuming on the data given now without checking it is the same\n",
                cfg->resume);
    if (t.data_other)
        printf("note: --allow-other-data: %s was trained on other data; its networks carry "
               "on, every episode restarts on this data%s\n", cfg->resume,
               t.pqn ? "" : " and the replay ring starts empty");
    if (t.ring_restarted)
        printf("note: %s holds no replay ring (it was above the checkpoint's ring limit): the "
               "ring starts empty and learning_starts applies again, so this run is not "
               "identical to an uninterrupted one\n", cfg->resume);
    char device[400], splits[1024];
    fh_device_describe(&t.device, device, sizeof device);
    printf("%s%s; %s update on the %s\n", device, t.gpu ? "; collection on the GPU" : "",
           cfg->algo, t.gpu_update ? "GPU" : "CPU");
    fh_run_data_describe_splits(&t.data, splits, sizeof splits);
    printf("data: %s\nsplits: %s\n", t.data.description, splits);
    if (t.iteration > 0)
        printf("resumed from %s at iteration %lld\n", cfg->resume, (long long)t.iteration);
    fh_status st = fh_q_trainer_run(&t, stop, on_iteration, NULL, &err);
    if (st != FH_OK) {
        fh_q_trainer_free(&t);
        return fh_cli_report("train", &err);
    }
    if (stop && *stop) {
        printf("interrupted after iteration %lld: checkpoint %s\n", (long long)t.iteration,
               t.last_checkpoint);
        int sig = *stop;
        fh_q_trainer_free(&t);
        return 128 + sig;
    }
    printf("done: %lld iterations; checkpoint %s; metrics in %s/metrics.csv\n",
           (long long)t.iteration, t.last_checkpoint, cfg->out);
    int rc = 0;
    if (cfg->eval_at_end) {
        fh_eval_report report;
        char json[FH_CONFIG_STRING_MAX + 32], returns[FH_CONFIG_STRING_MAX + 32];
        snprintf(json, sizeof json, "%s/eval.json", cfg->out);
        snprintf(returns, sizeof returns, "%s/returns.csv", cfg->out);
        if (fh_eval_report_run(&report, &t.q, cfg, &t.data, FH_SPLIT_TEST, cfg->seed, 1, &err) != FH_OK ||
            fh_eval_report_write_json(&report, t.last_checkpoint, json, &err) != FH_OK ||
            fh_eval_report_write_returns(&report, returns, &err) != FH_OK) {
            rc = fh_cli_report("train", &err);
        } else {
            printf("policies: greedy is argmax Q, sampled is softmax(Q)\n");
            fh_eval_report_print(&report, "evaluation", stdout);
            printf("(written to %s and %s)\n", json, returns);
        }
        fh_eval_report_free(&report);
    }
    fh_q_trainer_free(&t);
    return rc;
}
