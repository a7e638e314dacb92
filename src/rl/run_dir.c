/* run_dir.c — the run directory of `foxhunt train` (include/foxhunt/run_dir.h):
 * config.json, metrics.csv and metrics.jsonl. */
#include "foxhunt/run_dir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

fh_status fh_make_dirs(const char *path, fh_error *err)
{
    char buf[FH_CONFIG_STRING_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return fh_error_set(err, FH_ERR_INPUT, "cannot create directory %s: %s", buf,
                                    strerror(errno));
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return fh_error_set(err, FH_ERR_INPUT, "cannot create run directory %s: %s", buf,
                            strerror(errno));
    return FH_OK;
}

static const char *METRIC_COLUMNS =
    "iteration,global_step,lr,collect_seconds,update_seconds,steps_per_second,"
    "collect_steps_per_second,episodes_finished,mean_episode_return,mean_episode_length,"
    "mean_reward,costs,turnover,reversals,barrier_profit_take,barrier_stop_loss,"
    "barrier_time_limit,action_entropy,policy_loss,value_loss,entropy,approx_kl,"
    "old_approx_kl,clip_fraction,explained_variance,curiosity_loss,grad_norm,epochs_run";

fh_status fh_run_dir_write_metrics(fh_run_dir *rd, const fh_iteration_metrics *m, fh_error *err)
{
    if (!rd->metrics_csv)
        return FH_OK; /* no run directory opened: no metrics */
    const fh_ppo_stats *p = &m->ppo;
    double values[] = {(double)m->iteration, (double)m->global_step, m->lr,
                       m->collect_seconds, m->update_seconds, m->steps_per_second,
                       m->collect_steps_per_second, (double)m->episodes_finished,
                       m->mean_episode_return, m->mean_episode_length, m->mean_reward,
                       m->costs, m->turnover, (double)m->reversals,
                       (double)m->barrier_profit_take, (double)m->barrier_stop_loss,
                       (double)m->barrier_time_limit, m->action_entropy, p->policy_loss,
                       p->value_loss, p->entropy, p->approx_kl, p->old_approx_kl,
                       p->clip_fraction, p->explained_variance, p->curiosity_loss,
                       p->grad_norm, (double)p->epochs_run};
    int n = (int)(sizeof values / sizeof values[0]);
    const char *col = METRIC_COLUMNS;
    fputc('{', rd->metrics_jsonl);
    for (int i = 0; i < n; i++) {
        const char *comma = strchr(col, ',');
        int len = comma ? (int)(comma - col) : (int)strlen(col);
        if (isfinite(values[i])) {
            fprintf(rd->metrics_csv, "%s%.9g", i ? "," : "", values[i]);
            fprintf(rd->metrics_jsonl, "%s\"%.*s\":%.9g", i ? "," : "", len, col, values[i]);
        } else {
            fprintf(rd->metrics_csv, "%s", i ? "," : "");
            fprintf(rd->metrics_jsonl, "%s\"%.*s\":null", i ? "," : "", len, col);
        }
        col = comma ? comma + 1 : col + len;
    }
    fputc('\n', rd->metrics_csv);
    fputs("}\n", rd->metrics_jsonl);
    fflush(rd->metrics_csv);
    fflush(rd->metrics_jsonl);
    (void)err;
    return FH_OK;
}

/* On resume, keep only the rows of iterations <= the checkpoint's. */
static fh_status open_metrics(fh_run_dir *rd, const char *out, int64_t iteration, fh_error *err)
{
    char csv_path[FH_CONFIG_STRING_MAX + 32], jsonl_path[FH_CONFIG_STRING_MAX + 32];
    snprintf(csv_path, sizeof csv_path, "%s/metrics.csv", out);
    snprintf(jsonl_path, sizeof jsonl_path, "%s/metrics.jsonl", out);
    const char *paths[2] = {csv_path, jsonl_path};
    FILE **files[2] = {&rd->metrics_csv, &rd->metrics_jsonl};
    for (int k = 0; k < 2; k++) {
        char *kept = NULL;
        size_t kept_len = 0;
        if (iteration > 0) { /* resume: read the rows to keep */
            FILE *old = fopen(paths[k], "r");
            FILE *mem = open_memstream(&kept, &kept_len);
            char line[8192];
            long row = 0;
            while (old && mem && fgets(line, sizeof line, old)) {
                if (k == 0 && row++ == 0)
                    continue; /* the header is rewritten */
                double it = k == 0 ? atof(line) : atof(strchr(line, ':') ? strchr(line, ':') + 1 : "0");
                if (it >= 1 && it <= (double)iteration)
                    fputs(line, mem);
            }
            if (old)
                fclose(old);
            if (mem)
                fclose(mem);
        }
        *files[k] = fopen(paths[k], "w");
        if (!*files[k]) {
            free(kept);
            return fh_error_set(err, FH_ERR_INPUT, "cannot write %s: %s", paths[k], strerror(errno));
        }
        if (k == 0)
            fprintf(*files[k], "%s\n", METRIC_COLUMNS);
        if (kept)
            fputs(kept, *files[k]);
        free(kept);
        fflush(*files[k]);
    }
    return FH_OK;
}

fh_status fh_run_dir_open(fh_run_dir *rd, const fh_train_config *cfg, const char *config_json,
                          int64_t iteration, fh_error *err)
{
    fh_status st = fh_make_dirs(cfg->out, err);
    if (st != FH_OK)
        return st;
    char path[FH_CONFIG_STRING_MAX + 32];
    snprintf(path, sizeof path, "%s/config.json", cfg->out);
    FILE *f = fopen(path, "w");
    if (!f || fputs(config_json, f) < 0 || fclose(f) != 0)
        return fh_error_set(err, FH_ERR_INPUT, "cannot write %s: %s", path, strerror(errno));
    return open_metrics(rd, cfg->out, iteration, err);
}

void fh_run_dir_close(fh_run_dir *rd)
{
    if (rd->metrics_csv)
        fclose(rd->metrics_csv);
    if (rd->metrics_jsonl)
        fclose(rd->metrics_jsonl);
    memset(rd, 0, sizeof *rd);
}
