/* run_tensorboard.c — the run's TensorBoard event file (run_tensorboard.h): the metrics
 * row, validation and the final evaluation as scalars, the configuration as text. The
 * events of an iteration collect in the writer's buffer and reach the file in one write
 * at its end. */
#include "rl/run_tensorboard.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "foxhunt/files.h"

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* group/name = value, left out when not finite (the csv's empty cell). */
static void scalar(fh_run_dir *rd, double wall, int64_t step, const char *group,
                   const char *name, double value)
{
    if (!isfinite(value))
        return;
    char tag[192];
    snprintf(tag, sizeof tag, "%s/%s", group, name);
    fh_tfevents_scalar(&rd->tb, wall, step, tag, (float)value);
}

/* The configuration as a Markdown code block (each line indented by four spaces), so
 * TensorBoard's text tab shows the JSON as written. */
static char *config_markdown(const char *json)
{
    size_t lines = 1;
    for (const char *c = json; *c; c++)
        lines += *c == '\n';
    char *out = malloc(strlen(json) + 4 * lines + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *c = json; *c;) {
        const char *end = strchr(c, '\n');
        size_t n = end ? (size_t)(end - c) + 1 : strlen(c);
        memcpy(o, "    ", 4);
        memcpy(o + 4, c, n);
        o += 4 + n;
        c += n;
    }
    *o = '\0';
    return out;
}

void fh_run_tensorboard_open(fh_run_dir *rd, const fh_train_config *cfg, int64_t global_step)
{
    if (!cfg->tensorboard)
        return;
    fh_error err;
    double wall = wall_seconds();
    if (fh_tfevents_open(&rd->tb, cfg->out, wall, &err) != FH_OK) {
        rd->tb.failed = 1;
        snprintf(rd->tb.warning, sizeof rd->tb.warning, "%.1400s; the run goes on without a "
                 "TensorBoard event file (metrics.csv has every row; --tensorboard 0 turns it "
                 "off)", err.message);
        return;
    }
    /* a resume: TensorBoard drops the steps after the checkpoint's that an earlier file
     * holds (the history metrics.csv set aside), and keeps the ones before */
    if (global_step > 0)
        fh_tfevents_session_start(&rd->tb, wall, global_step + 1);
    char path[FH_RUN_DIR_PATH_MAX], *json = NULL, *text = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/config.json", cfg->out);
    if (fh_read_regular_file(path, "config file", 1 << 20, &json, &len, &err) == FH_OK)
        text = config_markdown(json);
    if (text) /* else no config text: the file is beside it */
        fh_tfevents_text(&rd->tb, wall, global_step, "config", text);
    free(text);
    free(json);
    fh_tfevents_flush(&rd->tb);
}

void fh_run_tensorboard_iteration(fh_run_dir *rd, const fh_iteration_metrics *m,
                                  const fh_backtest_metrics *validation, double validation_psr,
                                  double best_sharpe)
{
    if (!rd->tb.open)
        return;
    double wall = wall_seconds();
    int64_t step = m->global_step;
    const char *names[FH_RUN_DIR_MAX_COLUMNS];
    double values[FH_RUN_DIR_MAX_COLUMNS];
    int n = fh_run_dir_row(rd, m, names, values);
    for (int i = 0; i < n; i++)
        scalar(rd, wall, step, i < n - rd->n_own ? "charts" : "losses", names[i], values[i]);
    if (validation) {
        const fh_backtest_metrics *v = validation;
        scalar(rd, wall, step, "validation", "sharpe", v->sharpe);
        scalar(rd, wall, step, "validation", "sharpe_se", v->sharpe_se);
        scalar(rd, wall, step, "validation", "psr", validation_psr);
        scalar(rd, wall, step, "validation", "cumulative_return", v->cumulative_return);
        scalar(rd, wall, step, "validation", "max_drawdown", v->max_drawdown);
        scalar(rd, wall, step, "validation", "time_in_market", v->time_in_market);
        scalar(rd, wall, step, "validation", "turnover", v->turnover);
        scalar(rd, wall, step, "validation", "best_sharpe", best_sharpe);
    }
    fh_tfevents_flush(&rd->tb);
}

void fh_run_tensorboard_eval(fh_run_dir *rd, int64_t step, const char *group,
                             const fh_backtest_metrics *model, double psr,
                             const fh_backtest_metrics *buy_and_hold)
{
    if (!rd->tb.open)
        return;
    double wall = wall_seconds();
    scalar(rd, wall, step, group, "sharpe", model->sharpe);
    scalar(rd, wall, step, group, "sharpe_se", model->sharpe_se);
    scalar(rd, wall, step, group, "psr", psr);
    scalar(rd, wall, step, group, "cumulative_return", model->cumulative_return);
    scalar(rd, wall, step, group, "annualised_return", model->annualised_return);
    scalar(rd, wall, step, group, "max_drawdown", model->max_drawdown);
    scalar(rd, wall, step, group, "costs", model->costs);
    scalar(rd, wall, step, group, "time_in_market", model->time_in_market);
    if (buy_and_hold) {
        scalar(rd, wall, step, group, "buy_and_hold_sharpe", buy_and_hold->sharpe);
        scalar(rd, wall, step, group, "buy_and_hold_return", buy_and_hold->cumulative_return);
    }
    fh_tfevents_flush(&rd->tb);
}

const char *fh_run_tensorboard_warning(const fh_run_dir *rd)
{
    return rd->tb.failed && rd->tb.warning[0] ? rd->tb.warning : NULL;
}
