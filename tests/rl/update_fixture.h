/* update_fixture.h — the files `foxhunt update`'s tests share, made through the real
 * binary (FH_FOXHUNT_BIN) in a temporary directory:
 *   run/checkpoint_000001, run/checkpoint_000002, run/final (iteration 3 of 3): a tiny
 *     `foxhunt train` (8 x 32, 4 epochs x minibatch 64, lr 3e-3 so that consecutive
 *     checkpoints' policies differ clearly, --threads 1; with --anneal-ent 1 and
 *     --weight-decay 0.01, so that the update's annealed entropy coefficient and AdamW's
 *     decay are checked against the library's and check_update.py's too);
 *   B.safetensors:  `foxhunt collect --checkpoint checkpoint_000002` (the trainer's case:
 *     collected with the networks the update starts from);
 *   Bo.safetensors: `foxhunt collect --checkpoint checkpoint_000001` (other weights: the
 *     first minibatch's ratios are far from 1, so every loss term is non-trivial);
 *   C2.safetensors, C2o.safetensors: `foxhunt update --checkpoint checkpoint_000002` on B
 *     and on Bo (iteration 3, lr annealed to 1e-3).
 * Include test_proc.h first (it sets _GNU_SOURCE). */
#ifndef FOXHUNT_TESTS_UPDATE_FIXTURE_H
#define FOXHUNT_TESTS_UPDATE_FIXTURE_H

#include <stdarg.h>

#include "test_util.h"

typedef struct {
    char dir[256];
    char c1[400], c[400], final_ck[400]; /* checkpoints 1, 2 (the update's C), final */
    char b[400], bo[400];                /* collections with C's and with c1's weights */
    char c2[400], c2o[400];              /* updates of C on b and on bo */
} update_fixture;

typedef struct {
    int rc;
    char *out, *err; /* malloc'd stdout, stderr */
} fx_result;

static inline void fx_result_free(fx_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* foxhunt ARGS (NULL-terminated), stdout/stderr captured under fx->dir/log.out, .err */
static inline fx_result fx_vrun(const update_fixture *fx, const char *log, va_list ap)
{
    char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && n < FH_PROC_MAX_ARGS - 1)
        argv[n++] = (char *)a;
    argv[n] = NULL;
    char out[512], errp[512];
    snprintf(out, sizeof out, "%s/%s.out", fx->dir, log);
    snprintf(errp, sizeof errp, "%s/%s.err", fx->dir, log);
    fx_result r;
    r.rc = fh_proc_run(argv, out, errp);
    r.out = fh_read_text(out);
    r.err = fh_read_text(errp);
    if (!r.out)
        r.out = calloc(1, 1);
    if (!r.err)
        r.err = calloc(1, 1);
    return r;
}

static inline fx_result fx_run(const update_fixture *fx, const char *log, ...)
{
    va_list ap;
    va_start(ap, log);
    fx_result r = fx_vrun(fx, log, ap);
    va_end(ap);
    return r;
}

/* The same, expecting exit 0 (stderr printed otherwise); 1 on success. */
static inline int fx_run_ok(const update_fixture *fx, const char *log, ...)
{
    va_list ap;
    va_start(ap, log);
    fx_result r = fx_vrun(fx, log, ap);
    va_end(ap);
    if (r.rc != 0)
        fprintf(stderr, "foxhunt (%s) exited %d:\n%s\n", log, r.rc, r.err);
    int ok = r.rc == 0;
    fx_result_free(&r);
    return ok;
}

/* Makes every file above; 1 on success. */
static inline int update_fixture_make(update_fixture *fx, const char *name)
{
    memset(fx, 0, sizeof *fx);
    if (!fh_make_temp_dir(fx->dir, sizeof fx->dir, name))
        return 0;
    char run[300];
    snprintf(run, sizeof run, "%s/run", fx->dir);
    snprintf(fx->c1, sizeof fx->c1, "%s/checkpoint_000001.safetensors", run);
    snprintf(fx->c, sizeof fx->c, "%s/checkpoint_000002.safetensors", run);
    snprintf(fx->final_ck, sizeof fx->final_ck, "%s/final.safetensors", run);
    snprintf(fx->b, sizeof fx->b, "%s/B.safetensors", fx->dir);
    snprintf(fx->bo, sizeof fx->bo, "%s/Bo.safetensors", fx->dir);
    snprintf(fx->c2, sizeof fx->c2, "%s/C2.safetensors", fx->dir);
    snprintf(fx->c2o, sizeof fx->c2o, "%s/C2o.safetensors", fx->dir);
    return fx_run_ok(fx, "train", "train", "--device", "cpu", "--episodes", "8", "--steps",
                     "32", "--epochs", "4", "--minibatch", "64", "--lr", "0.003",
                     "--synthetic-bars", "3000", "--threads", "1", "--horizon", "40",
                     "--seed", "3", "--iterations", "3", "--checkpoint-every", "1",
                     "--anneal-ent", "1", "--weight-decay", "0.01", "--eval-at-end", "0",
                     "--out", run, NULL) &&
           /* no --episodes/--steps: collect takes the checkpoint's */
           fx_run_ok(fx, "collect_b", "collect", "--device", "cpu", "--checkpoint", fx->c,
                     "--out", fx->b, NULL) &&
           fx_run_ok(fx, "collect_bo", "collect", "--device", "cpu", "--checkpoint", fx->c1,
                     "--out", fx->bo, NULL) &&
           fx_run_ok(fx, "update", "update", "--checkpoint", fx->c, "--batch", fx->b, "--out",
                     fx->c2, NULL) &&
           fx_run_ok(fx, "update_o", "update", "--checkpoint", fx->c, "--batch", fx->bo,
                     "--out", fx->c2o, NULL);
}

#endif
