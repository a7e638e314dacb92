/* test_update.c — `foxhunt update` (issue 17's CPU piece), through the real binary
 * (tests/rl/update_fixture.h makes a tiny run, two collections and two updates).
 *
 *  - the CLI's update is the library's: the same update done here by hand (the
 *    checkpoint resumed into a trainer, the collection read tensor by tensor with the
 *    safetensors reader, the trainer's annealed lr written out, fh_ppo_update with a
 *    record) gives a checkpoint whose every tensor equals C2's bit for bit (networks,
 *    Adam moments and steps, update stream, episodes, ...), and C2's update.* record
 *    equals the library's (orders, rows, stats);
 *  - the record changes nothing: the same update without one (as the trainer calls it)
 *    gives the same weights, moments and statistics bit for bit;
 *  - each epoch's order is a permutation of N*L and equals a re-draw from C's
 *    ppo.update_rng (every epoch's key, two PCG32 draws, drawn first; epoch e visits
 *    fh_minibatch_order(key[e], N*L, p)); the update's stream after is C's advanced by
 *    the epochs' and the curiosity fit's keys; rows = epochs_run * ceil(N*L / minibatch);
 *  - C2 is a checkpoint: `foxhunt train --resume C2` continues, `foxhunt eval` reads it;
 *  - inputs are checked (exit 2, a message naming the fault, no file written):
 *    --device cuda without a GPU (with one: the GPU update runs), a collection of another N x L (both sizes named), a missing tensor
 *    (named), a wrong shape, an action outside [0, 45), a bar outside the split, a NaN
 *    advantage, a file that is not a collection, a collection of other data, --out
 *    naming the checkpoint, a run's last checkpoint without --lr (annealed lr 0), and a
 *    collection with other weights runs but says so. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <stddef.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "foxhunt/device.h"
#include "foxhunt/safetensors.h"
#include "foxhunt/trainer.h"
#include "test_util.h"
#include "update_fixture.h"

static const char *const BATCH_KEYS[] = {"states", "actions", "log_probs", "values",
                                         "rewards", "dones", "terminals", "advantages",
                                         "returns", "trunc_values", "last_values",
                                         "exposures", "bars"};
#define N_BATCH_KEYS (sizeof BATCH_KEYS / sizeof BATCH_KEYS[0])

static void *batch_member(fh_trajectory_batch *b, const char *name)
{
    void *const p[N_BATCH_KEYS] = {b->states, b->actions, b->log_probs, b->values,
                                   b->rewards, b->dones, b->terminals, b->advantages,
                                   b->returns, b->trunc_values, b->last_values,
                                   b->exposures, b->bars};
    for (size_t i = 0; i < N_BATCH_KEYS; i++)
        if (!strcmp(BATCH_KEYS[i], name))
            return p[i];
    return NULL;
}

/* ---- the update done by hand with the library ---- */
typedef struct {
    fh_trainer t;
    fh_ppo_stats stats;
    fh_ppo_trace trace;
    double lr;
    int64_t iteration;
} library_update;

static void library_update_free(library_update *u)
{
    fh_ppo_trace_free(&u->trace);
    fh_trainer_free(&u->t);
}

static int library_update_run(library_update *u, const char *ck, const char *batch_path,
                              int with_trace)
{
    memset(u, 0, sizeof *u);
    fh_error err;
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_status st = fh_checkpoint_read_config(ck, &cfg, &err);
    if (st == FH_OK) {
        snprintf(cfg.resume, sizeof cfg.resume, "%s", ck);
        snprintf(cfg.device, sizeof cfg.device, "cpu");
        st = fh_trainer_init(&u->t, &cfg, &err);
    }
    if (st != FH_OK) {
        CHECK_MSG(0, "library: %s", err.message);
        return 0;
    }
    fh_st_file f;
    if (fh_st_read(&f, batch_path, &err) != FH_OK) {
        CHECK_MSG(0, "library: %s", err.message);
        return 0;
    }
    int ok = 1;
    for (size_t i = 0; i < N_BATCH_KEYS; i++) {
        const fh_st_tensor *x = fh_st_find(&f, BATCH_KEYS[i]);
        size_t want = (!strcmp(BATCH_KEYS[i], "states") ? FH_STATE_DIM : 1) * sizeof(float) *
                      (!strcmp(BATCH_KEYS[i], "last_values") ? (size_t)cfg.episodes
                                                              : (size_t)cfg.episodes * cfg.steps);
        CHECK_MSG(x && x->nbytes == want, "collection tensor %s", BATCH_KEYS[i]);
        if (!x || x->nbytes != want) {
            ok = 0;
            break;
        }
        memcpy(batch_member(&u->t.batch, BATCH_KEYS[i]), x->data, x->nbytes);
    }
    fh_st_file_free(&f);
    if (!ok)
        return 0;
    /* the trainer's schedule, written out: iteration K = the checkpoint's + 1 */
    u->iteration = u->t.iteration + 1;
    double frac = 1.0 - (double)(u->iteration - 1) / (double)cfg.iterations;
    u->lr = cfg.anneal_lr ? frac * cfg.lr : cfg.lr;
    double ent_coef = cfg.anneal_ent ? frac * cfg.ent_coef : cfg.ent_coef;
    int64_t nl = (int64_t)cfg.episodes * cfg.steps;
    if (with_trace && fh_ppo_trace_init(&u->trace, &u->t.cfg, nl, &err) != FH_OK) {
        CHECK_MSG(0, "trace: %s", err.message);
        return 0;
    }
    if (fh_ppo_update(&u->stats, &u->t.actor, &u->t.critic, &u->t.curiosity, &u->t.ws,
                      &u->t.batch, &u->t.train_market, &u->t.cfg, u->lr, ent_coef,
                      &u->t.update_rng, with_trace ? &u->trace : NULL, &err) != FH_OK) {
        CHECK_MSG(0, "library update: %s", err.message);
        return 0;
    }
    u->t.iteration = u->iteration;
    return 1;
}

/* Every tensor of want's file is in got's with the same dtype, shape and bytes. */
static void check_same_tensors(const char *want_path, const char *got_path)
{
    fh_st_file w, g;
    fh_error err;
    if (fh_st_read(&w, want_path, &err) != FH_OK || fh_st_read(&g, got_path, &err) != FH_OK) {
        CHECK_MSG(0, "%s", err.message);
        return;
    }
    int differ = 0;
    for (size_t i = 0; i < w.n_tensors; i++) {
        const fh_st_tensor *a = &w.tensors[i], *b = fh_st_find(&g, a->name);
        if (!b || b->dtype != a->dtype || b->rank != a->rank || b->nbytes != a->nbytes ||
            memcmp(a->shape, b->shape, sizeof a->shape) != 0 ||
            memcmp(a->data, b->data, a->nbytes) != 0) {
            if (differ++ < 5)
                fprintf(stderr, "tensor %s: C2 differs from the library's update\n", a->name);
        }
    }
    CHECK_MSG(differ == 0 && w.n_tensors > 40, "%d of %zu tensors differ", differ, w.n_tensors);
    fh_st_file_free(&w);
    fh_st_file_free(&g);
}

/* An epoch's order re-drawn: position p visits fh_minibatch_order(key, n, p), the key two
 * PCG32 draws of the update's stream (every epoch's key drawn before the first epoch). */
static void redraw(int64_t *perm, int64_t n, unsigned long long key)
{
    for (int64_t p = 0; p < n; p++)
        perm[p] = (int64_t)fh_minibatch_order(key, (long long)n, (long long)p);
}

static void test_cli_equals_library(const update_fixture *fx)
{
    library_update u, plain;
    if (!library_update_run(&u, fx->c, fx->b, 1)) {
        library_update_free(&u);
        return;
    }
    char lib_path[400];
    snprintf(lib_path, sizeof lib_path, "%s/library.safetensors", fx->dir);
    fh_error err;
    CHECK_MSG(fh_trainer_save(&u.t, lib_path, &err) == FH_OK, "%s", err.message);
    check_same_tensors(lib_path, fx->c2);

    fh_st_file f;
    if (fh_st_read(&f, fx->c2, &err) != FH_OK) {
        CHECK_MSG(0, "%s", err.message);
        library_update_free(&u);
        return;
    }
    int64_t nl = (int64_t)u.t.cfg.episodes * u.t.cfg.steps, M = u.t.cfg.minibatch;
    int epochs = u.stats.epochs_run, per_epoch = (int)((nl + M - 1) / M);
    const fh_st_tensor *order = NULL, *records = NULL, *stats = NULL;
    int64_t order_shape[2] = {epochs, nl}, rec_shape[2] = {(int64_t)epochs * per_epoch,
                                                           FH_PPO_TRACE_COLS};
    int64_t stats_shape[1] = {11};
    CHECK_MSG(fh_st_expect(&order, &f, "update.minibatch_order", FH_DTYPE_I64, 2, order_shape,
                           &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_st_expect(&records, &f, "update.minibatch_records", FH_DTYPE_F64, 2, rec_shape,
                           &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_st_expect(&stats, &f, "update.stats", FH_DTYPE_F64, 1, stats_shape, &err) ==
              FH_OK, "%s", err.message);
    printf("update: %d epochs x %d minibatches of %lld (N*L %lld), %d records\n", epochs,
           per_epoch, (long long)M, (long long)nl, u.trace.n_records);
    CHECK(epochs == u.t.cfg.epochs && u.stats.minibatches == epochs * per_epoch);
    CHECK(u.trace.n_records == epochs * per_epoch && u.trace.epochs == epochs);
    if (order && records && stats) {
        CHECK_MSG(memcmp(order->data, u.trace.order, order->nbytes) == 0,
                  "C2's orders differ from the library's");
        CHECK_MSG(memcmp(records->data, u.trace.records, records->nbytes) == 0,
                  "C2's records differ from the library's");
        double s[11];
        memcpy(s, stats->data, sizeof s);
        CHECK(s[0] == u.stats.policy_loss && s[1] == u.stats.value_loss &&
              s[2] == u.stats.entropy && s[3] == u.stats.approx_kl &&
              s[4] == u.stats.old_approx_kl && s[5] == u.stats.clip_fraction &&
              s[6] == u.stats.explained_variance && s[7] == u.stats.curiosity_loss &&
              s[8] == u.stats.grad_norm && s[9] == epochs && s[10] == u.stats.minibatches);
        /* each epoch a permutation, and C's stream re-drawn */
        const fh_st_tensor *rng_t = NULL;
        fh_st_file cf;
        int64_t two = 2;
        if (fh_st_read(&cf, fx->c, &err) == FH_OK &&
            fh_st_expect(&rng_t, &cf, "ppo.update_rng", FH_DTYPE_U64, 1, &two, &err) == FH_OK) {
            uint64_t sv[2];
            memcpy(sv, rng_t->data, sizeof sv);
            fh_rng rng = {sv[0], sv[1]};
            /* all the PPO epochs' keys first (an early stop draws them too), then the
             * curiosity fit's: C2's stream is C's after both */
            int n_keys = u.t.cfg.epochs + u.t.cfg.curiosity_epochs;
            unsigned long long *keys = malloc((size_t)(n_keys > 0 ? n_keys : 1) * sizeof *keys);
            for (int k = 0; k < n_keys; k++) {
                unsigned long long hi = pcg32(&rng), lo = pcg32(&rng);
                keys[k] = (hi << 32) | lo;
            }
            CHECK_MSG(rng.state == u.t.update_rng.state && rng.inc == u.t.update_rng.inc,
                      "the update's stream is not C's advanced by %d epoch keys", n_keys);
            int64_t *got = malloc((size_t)nl * sizeof *got), *want = malloc((size_t)nl * sizeof *want);
            char *seen = malloc((size_t)nl);
            for (int e = 0; e < epochs; e++) {
                memcpy(got, (const char *)order->data + (size_t)e * nl * sizeof *got,
                       (size_t)nl * sizeof *got);
                memset(seen, 0, (size_t)nl);
                int perm = 1;
                for (int64_t i = 0; i < nl; i++) {
                    if (got[i] < 0 || got[i] >= nl || seen[got[i]])
                        perm = 0;
                    else
                        seen[got[i]] = 1;
                }
                CHECK_MSG(perm, "epoch %d's order is not a permutation of %lld", e, (long long)nl);
                redraw(want, nl, keys[e]);
                CHECK_MSG(memcmp(want, got, (size_t)nl * sizeof *got) == 0,
                          "epoch %d's order is not a re-draw from C's ppo.update_rng", e);
            }
            free(got);
            free(want);
            free(seen);
            free(keys);
        } else {
            CHECK_MSG(0, "%s", err.message);
        }
        fh_st_file_free(&cf);
        const char *lr_text = fh_st_metadata(&f, "update.lr");
        CHECK_MSG(lr_text && strtod(lr_text, NULL) == u.lr, "update.lr %s, the trainer's %.17g",
                  lr_text ? lr_text : "(missing)", u.lr);
        const char *it = fh_st_metadata(&f, "update.iteration");
        CHECK(it && strtoll(it, NULL, 10) == 3);
    }
    fh_st_file_free(&f);

    /* the record changes nothing: the trainer's call (no record) gives the same bits */
    if (library_update_run(&plain, fx->c, fx->b, 0)) {
        const fh_mlp *a[3] = {&u.t.actor, &u.t.critic, &u.t.curiosity};
        const fh_mlp *b[3] = {&plain.t.actor, &plain.t.critic, &plain.t.curiosity};
        for (int k = 0; k < 3; k++)
            CHECK_MSG(memcmp(a[k]->mem, b[k]->mem, 4 * a[k]->n_params * sizeof(float)) == 0 &&
                      a[k]->adam_step == b[k]->adam_step,
                      "network %d: the update with a record differs from the one without", k);
        CHECK(memcmp(&u.stats, &plain.stats, sizeof u.stats) == 0);
        CHECK(u.t.update_rng.state == plain.t.update_rng.state);
    }
    library_update_free(&plain);
    library_update_free(&u);
}

/* C2 is a checkpoint foxhunt resumes and evaluates. */
static void test_c2_is_a_checkpoint(const update_fixture *fx)
{
    char out[400];
    snprintf(out, sizeof out, "%s/resumed", fx->dir);
    CHECK(fx_run_ok(fx, "resume_c2", "train", "--resume", fx->c2, "--iterations", "4", "--out",
                    out, "--eval-at-end", "0", NULL));
    char fin[500];
    snprintf(fin, sizeof fin, "%s/final.safetensors", out);
    CHECK(fh_file_exists(fin));
    CHECK(fx_run_ok(fx, "eval_c2", "eval", "--checkpoint", fx->c2, NULL));
}

/* ---- inputs ---- */

/* dst = src's collection, less `drop`, with `reshape`'s last dimension one shorter, one
 * element of `patch` set to value, and one metadata value replaced. */
typedef struct {
    const char *drop, *reshape, *patch;
    size_t index;
    double value;
    const char *meta_key, *meta_value;
} batch_edit;

static int write_edited(const char *src, const char *dst, const batch_edit *e)
{
    fh_st_file f;
    fh_error err;
    if (fh_st_read(&f, src, &err) != FH_OK)
        return 0;
    fh_st_writer w;
    fh_st_writer_init(&w);
    void *copies[32] = {0};
    int ok = 1;
    for (size_t i = 0; i < f.n_tensors && ok; i++) {
        const fh_st_tensor *t = &f.tensors[i];
        if (e->drop && !strcmp(t->name, e->drop))
            continue;
        copies[i] = malloc(t->nbytes);
        memcpy(copies[i], t->data, t->nbytes);
        int64_t shape[FH_ST_MAX_RANK];
        memcpy(shape, t->shape, sizeof shape);
        if (e->reshape && !strcmp(t->name, e->reshape))
            shape[t->rank - 1] -= 1; /* the leading part of the data */
        if (e->patch && !strcmp(t->name, e->patch)) {
            if (t->dtype == FH_DTYPE_I32)
                ((int32_t *)copies[i])[e->index] = (int32_t)e->value;
            else
                ((float *)copies[i])[e->index] = (float)e->value;
        }
        ok = fh_st_writer_add(&w, t->name, t->dtype, t->rank, shape, copies[i], &err) == FH_OK;
    }
    for (size_t k = 0; k < f.n_meta && ok; k++)
        ok = fh_st_writer_set_metadata(&w, f.meta_keys[k], e->meta_key && !strcmp(e->meta_key, f.meta_keys[k])
                                       ? e->meta_value : f.meta_values[k], &err) == FH_OK;
    ok = ok && fh_st_writer_write(&w, dst, &err) == FH_OK;
    fh_st_writer_free(&w);
    for (size_t i = 0; i < 32; i++)
        free(copies[i]);
    fh_st_file_free(&f);
    return ok;
}

/* update C on batch (extra flags after), expecting exit `rc` and each of want[] in
 * stderr, and no output file when it fails. */
static void expect_update(const update_fixture *fx, const char *label, const char *ck,
                          const char *batch, const char *out_path, const char *extra1,
                          const char *extra2, int rc, const char *const *want)
{
    char out[400];
    if (!out_path) {
        snprintf(out, sizeof out, "%s/%s.safetensors", fx->dir, label);
        out_path = out;
    }
    fx_result r = extra1 ? fx_run(fx, label, "update", "--checkpoint", ck, "--batch", batch,
                                  "--out", out_path, extra1, extra2, NULL)
                         : fx_run(fx, label, "update", "--checkpoint", ck, "--batch", batch,
                                  "--out", out_path, NULL);
    CHECK_MSG(r.rc == rc, "%s: exit %d, expected %d; stderr: %s", label, r.rc, rc, r.err);
    for (int i = 0; want[i]; i++)
        CHECK_MSG(strstr(r.err, want[i]) != NULL, "%s: stderr lacks \"%s\": %s", label, want[i],
                  r.err);
    if (rc != 0 && out_path == out)
        CHECK_MSG(!fh_file_exists(out_path), "%s: %s written by a failed update", label, out_path);
    if (rc != 0)
        printf("%s -> exit %d: %s", label, r.rc, r.err);
    fx_result_free(&r);
}

static void test_inputs(const update_fixture *fx)
{
    char path[400];
    /* --device cuda: the GPU update where there is a GPU (tests/cuda/test_gpu_update
     * compares it with this one), else refused, saying why */
    fh_device_info dev;
    fh_error derr;
    if (fh_device_select("auto", &dev, &derr) == FH_OK && dev.use_gpu) {
        const char *none[] = {NULL};
        char gpu_out[400];
        snprintf(gpu_out, sizeof gpu_out, "%s/C2gpu.safetensors", fx->dir);
        expect_update(fx, "cuda", fx->c, fx->b, gpu_out, "--device", "cuda", 0, none);
        CHECK_MSG(fh_file_exists(gpu_out), "--device cuda wrote no checkpoint");
    } else {
        const char *cuda[] = {"--device cuda: ", "use --device cpu", NULL};
        expect_update(fx, "cuda", fx->c, fx->b, NULL, "--device", "cuda", 2, cuda);
    }

    snprintf(path, sizeof path, "%s/B4.safetensors", fx->dir);
    CHECK(fx_run_ok(fx, "collect4", "collect", "--device", "cpu", "--checkpoint", fx->c,
                    "--episodes", "4", "--out", path, NULL));
    const char *size[] = {"the collection is 4 x 32", "configured for 8 x 32", fx->c, NULL};
    expect_update(fx, "other_size", fx->c, path, NULL, NULL, NULL, 2, size);

    struct {
        const char *label;
        batch_edit e;
        const char *want[3];
    } cases[] = {
        {"missing", {.drop = "advantages"}, {"missing tensor \"advantages\"", NULL}},
        {"missing_bars", {.drop = "bars"}, {"missing tensor \"bars\"", "collect again", NULL}},
        {"shape", {.reshape = "returns"}, {"\"returns\"", "wrong shape [8, 31], expected [8, 32]", NULL}},
        {"action", {.patch = "actions", .index = 5, .value = 45}, {"\"actions\": element 5 is 45", NULL}},
        {"bar", {.patch = "bars", .index = 3, .value = 100000}, {"\"bars\": element 3 is 100000", NULL}},
        /* INT32_MAX: bar + 1 overflowed in the check (fuzz_batch, issue 32) */
        {"bar_max", {.patch = "bars", .index = 3, .value = 2147483647.0},
         {"\"bars\": element 3 is 2147483647", NULL}},
        {"nan", {.patch = "advantages", .index = 7, .value = NAN}, {"\"advantages\": element 7 is nan", NULL}},
        {"data", {.meta_key = "data.hash", .meta_value = "0123456789abcdef"},
         {"collected on other data", "0123456789abcdef", NULL}},
        {"format", {.meta_key = "format", .meta_value = "foxhunt.checkpoint"},
         {"not a foxhunt collection", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/B_%s.safetensors", fx->dir, cases[i].label);
        CHECK_MSG(write_edited(fx->b, path, &cases[i].e), "cannot write %s", path);
        expect_update(fx, cases[i].label, fx->c, path, NULL, NULL, NULL, 2, cases[i].want);
    }
    const char *not_batch[] = {"not a foxhunt collection", NULL};
    expect_update(fx, "checkpoint_as_batch", fx->c, fx->c, NULL, NULL, NULL, 2, not_batch);
    const char *same[] = {"is the --checkpoint", NULL};
    expect_update(fx, "out_is_checkpoint", fx->c, fx->b, fx->c, NULL, NULL, 2, same);
    /* the run's last checkpoint: iteration 4 of 3 anneals to lr 0 unless --lr says */
    snprintf(path, sizeof path, "%s/Bf.safetensors", fx->dir);
    CHECK(fx_run_ok(fx, "collect_f", "collect", "--device", "cpu", "--checkpoint",
                    fx->final_ck, "--out", path, NULL));
    const char *lr0[] = {"iteration 4 of a run of 3 iterations", "pass --lr LR", NULL};
    expect_update(fx, "lr0", fx->final_ck, path, NULL, NULL, NULL, 2, lr0);
    const char *none[] = {NULL};
    expect_update(fx, "lr_given", fx->final_ck, path, NULL, "--lr", "1e-4", 0, none);
    /* other weights: runs, and says so */
    const char *other[] = {"was collected with checkpoint", "the first ratios are not 1", NULL};
    expect_update(fx, "other_weights", fx->c, fx->bo, NULL, NULL, NULL, 0, other);
}

int main(void)
{
    double t0 = fh_now_seconds();
    update_fixture fx;
    if (!update_fixture_make(&fx, "fh_update")) {
        CHECK_MSG(0, "the fixture (train, collect, update) failed in %s", fx.dir);
        return fh_test_finish();
    }
    printf("fixture (train 3 iterations, 2 collections, 2 updates): %.2f s\n", fh_now_seconds() - t0);
    test_cli_equals_library(&fx);
    test_c2_is_a_checkpoint(&fx);
    test_inputs(&fx);
    printf("total %.2f s\n", fh_now_seconds() - t0);
    fh_test_tidy(fx.dir);
    return fh_test_finish();
}
