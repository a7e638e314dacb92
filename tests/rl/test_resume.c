/* test_resume.c — resume is bit-identical on the CPU (issue 5), through the real
 * `foxhunt train --resume` (FH_FOXHUNT_BIN).
 *
 * Two ways of stopping at iteration 2 of a 4-iteration run:
 *  A. the mid-run checkpoint: run A trains 4 iterations with --checkpoint-every 2;
 *     run B is a new process `--resume A/checkpoint_000002.safetensors` (every setting
 *     comes from the checkpoint) into a fresh directory: its rows 3 and 4 must equal A's.
 *     A runs with --anneal-ent 1, --weight-decay 0.01 and --obs-noise 0.1 (issue 34), so
 *     the resumed run
 *     must also continue the entropy schedule and AdamW's decay from iteration 3.
 *  B. a run that ended: run C trains --iterations 2 (final.safetensors at iteration 2);
 *     then `--resume C/final.safetensors --iterations 4 --out C` continues it in place;
 *     its metrics rows 1..4 must equal those of run D, 4 iterations uninterrupted.
 *     (--anneal-lr 0 here: with annealing the lr schedule depends on --iterations, so a
 *     2-iteration run is not the first half of a 4-iteration one.)
 * "Equal": every non-timing column of metrics.csv as written (%.9g text; timing columns
 * end in _seconds or steps_per_second), the same number of metrics.jsonl lines, and
 * every tensor of the two final checkpoints byte-identical (networks, Adam moments and
 * steps, normalisation, episode states, random streams). OpenBLAS runs with --threads 1
 * in every process, as resume requires a fixed thread count (nn.h).
 *
 * A checkpoint is untrusted input (issue 19):
 *  - edited checkpoints: one value of a real checkpoint changed (an episode's diversity
 *    head to 1e9 or -100000, a ring value to 200, NaN equity, bar 1e9, ...; a NaN weight,
 *    a negative Adam second moment, a running length of -1, a foreign stream) and each
 *    `foxhunt train --resume` exits 2 with a message naming the file, the episode and the
 *    field, never a crash; `foxhunt eval` refuses a NaN weight with exit 2;
 *  - NaN during training (library): a NaN cash or critic weight injected after iteration
 *    3 of 6 (checkpoints every 2) stops the run at iteration 4 with FH_ERR_FAILURE and a
 *    message naming the iteration and the quantity; checkpoint_000002 stays, loads and is
 *    named as the last good one; no checkpoint_000004, final or interrupted is written;
 *  - data identity: a resume on another synthetic seed or an edited CSV is refused (exit
 *    2, saying what differs), accepted with --allow-other-data (the new checkpoint records
 *    the new data; the episodes restart exactly as a fresh run's), and a moved but equal
 *    CSV is accepted; a checkpoint without the identity resumes with
 *    data_identity_unchecked set. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <stddef.h>
#include <string.h>

#include "foxhunt/safetensors.h"
#include "foxhunt/train_loop.h"
#include "foxhunt/trainer.h"
#include "rl/learners.h"
#include "io/ckpt_fixture.h"
#include "io/io_test_helpers.h"
#include "test_run_compare.h"
#include "test_util.h"

static const char *COMMON[] = {"--device", "cpu", "--episodes", "16", "--steps", "64",
                               "--epochs", "2", "--minibatch", "128", "--synthetic-bars",
                               "3000", "--threads", "1", "--horizon", "40", "--seed", "3",
                               "--eval-at-end", "0", NULL};

static char g_dir[256];

/* foxhunt train COMMON... extra... ; returns the exit status. */
static int train(const char *log_name, const char *const *extra, int with_common)
{
    return fh_run_train(g_dir, log_name, with_common ? COMMON : NULL, extra);
}

/* Every tensor of a and b: same names, dtypes, shapes, bytes; the networks among them. */
static void compare_checkpoints(const char *what, const char *path_a, const char *path_b)
{
    fh_st_file a;
    if (fh_compare_checkpoints(what, path_a, path_b, &a) == 1) {
        int networks = 0;
        for (size_t i = 0; i < a.n_tensors; i++) {
            const char *name = a.tensors[i].name;
            if (strstr(name, "policy_") || strstr(name, "value_") || strstr(name, "fc"))
                networks++;
        }
        /* actor 6 + critic 12 + curiosity 4 tensors, plus their Adam moments */
        CHECK_MSG(networks >= 22, "%s: only %d network tensors found", what, networks);
    }
    fh_st_file_free(&a);
}

static char *read_in(const char *sub, const char *file)
{
    return fh_read_in(g_dir, sub, file);
}

static void path_in(char *out, size_t size, const char *sub, const char *file)
{
    snprintf(out, size, "%s/%s/%s", g_dir, sub, file);
}

static void test_resume_mid_run_checkpoint(void)
{
    char out_a[300], out_b[300], ck[512];
    snprintf(out_a, sizeof out_a, "%s/A", g_dir);
    snprintf(out_b, sizeof out_b, "%s/B", g_dir);
    const char *run_a[] = {"--iterations", "4", "--checkpoint-every", "2", "--anneal-ent", "1",
                           "--weight-decay", "0.01", "--obs-noise", "0.1", "--out", out_a,
                           NULL};
    if (train("A", run_a, 1) != 0) {
        CHECK_MSG(0, "run A failed");
        return;
    }
    path_in(ck, sizeof ck, "A", "checkpoint_000002.safetensors");
    CHECK_MSG(fh_file_exists(ck), "%s missing", ck);
    /* settings from the checkpoint alone; only the output directory is new */
    const char *run_b[] = {"--resume", ck, "--out", out_b, NULL};
    if (train("B", run_b, 0) != 0) {
        CHECK_MSG(0, "resumed run B failed");
        return;
    }
    /* a fresh directory: the resumed run writes rows 3 and 4 only */
    char *csv_a = read_in("A", "metrics.csv");
    fh_check_resumed_metrics("mid-run checkpoint resume", csv_a, 5, out_b, 3, 2, 3, 4);
    free(csv_a);
    char fa[512], fb[512];
    path_in(fa, sizeof fa, "A", "final.safetensors");
    path_in(fb, sizeof fb, "B", "final.safetensors");
    compare_checkpoints("final checkpoints A vs B", fa, fb);
}

static void test_resume_finished_run(void)
{
    char out_c[300], out_d[300], ck[512];
    snprintf(out_c, sizeof out_c, "%s/C", g_dir);
    snprintf(out_d, sizeof out_d, "%s/D", g_dir);
    const char *run_c[] = {"--iterations", "2", "--anneal-lr", "0", "--checkpoint-every",
                           "0", "--out", out_c, NULL};
    const char *run_d[] = {"--iterations", "4", "--anneal-lr", "0", "--checkpoint-every",
                           "0", "--out", out_d, NULL};
    if (train("C", run_c, 1) != 0 || train("D", run_d, 1) != 0) {
        CHECK_MSG(0, "run C or D failed");
        return;
    }
    path_in(ck, sizeof ck, "C", "final.safetensors");
    const char *resume_c[] = {"--resume", ck, "--iterations", "4", "--out", out_c, NULL};
    if (train("C-resumed", resume_c, 0) != 0) {
        CHECK_MSG(0, "resuming C failed");
        return;
    }
    /* in place: rows 1-2 kept from the first process, 3-4 appended */
    char *csv_d = read_in("D", "metrics.csv");
    fh_check_resumed_metrics("stopped-run resume", csv_d, -1, out_c, 5, 4, 1, 4);
    free(csv_d);
    char fc[512], fd[512];
    path_in(fc, sizeof fc, "C", "final.safetensors");
    path_in(fd, sizeof fd, "D", "final.safetensors");
    compare_checkpoints("final checkpoints C (resumed) vs D", fc, fd);
}

/* ---- untrusted checkpoints ---- */

/* foxhunt ARGS...; returns the exit status; *err_text gets stderr (malloc'd). */
static int run_foxhunt(const char *log_name, const char *const *args, char **err_text)
{
    return fh_run_foxhunt_stderr(g_dir, log_name, args, err_text);
}

/* The finished 2-iteration run E every test below edits or resumes (made once). */
static const char *run_e_final(void)
{
    static char path[512];
    static int made = -1;
    if (made < 0) {
        char out_e[300];
        snprintf(out_e, sizeof out_e, "%s/E", g_dir);
        const char *run_e[] = {"--iterations", "2", "--checkpoint-every", "0", "--out", out_e,
                               NULL};
        made = train("E", run_e, 1) == 0;
        path_in(path, sizeof path, "E", "final.safetensors");
        CHECK_MSG(made, "run E failed");
    }
    return made ? path : NULL;
}

#define EP_ROW(n) ((size_t)(n) * sizeof(fh_episode_state))
#define EP_FIELD(n, field) (EP_ROW(n) + offsetof(fh_episode_state, field))
#define EP_DIV(n, field) (EP_FIELD(n, diversity) + offsetof(fh_diversity, field))

static void test_edited_checkpoints(void)
{
    const char *base = run_e_final();
    if (!base)
        return;
    const int32_t head_big = 1000000000, head_neg = -100000, fill_big = 101, bar_big = 1000000000;
    const int32_t minus_one = -1;
    const unsigned char ring_bad = 200;
    const double nan_d = NAN;
    const float nan_f = NAN, minus_one_f = -1.0f, entry_step_big = 1e9f;
    const uint64_t even = 2, other_state = 12345;
    const int64_t iteration_neg = -3;
    struct {
        const char *key;
        size_t byte;     /* offset in bytes into the tensor */
        const void *bytes;
        size_t len;
        const char *want;
    } edits[] = {
        {"env.episodes", EP_DIV(3, head), &head_big, 4, "episode 3 of 16: diversity.head = 1000000000 is outside [0, 100)"},
        {"env.episodes", EP_DIV(3, head), &head_neg, 4, "episode 3 of 16: diversity.head = -100000 is outside"},
        {"env.episodes", EP_DIV(5, ring) + 17, &ring_bad, 1, "episode 5 of 16: diversity.ring[17] = 200 is not an action"},
        {"env.episodes", EP_DIV(0, fill), &fill_big, 4, "episode 0 of 16: diversity.fill = 101"},
        {"env.episodes", EP_FIELD(3, equity), &nan_d, 8, "episode 3 of 16: equity = nan is not a positive finite number"},
        {"env.episodes", EP_FIELD(15, bar), &bar_big, 4, "episode 15 of 16: bar = 1000000000 is outside"},
        {"env.episodes", EP_FIELD(2, barrier) + offsetof(fh_barrier, entry_step), &entry_step_big, 4, "episode 2 of 16: barrier."},
        {"env.episodes", EP_FIELD(4, rng) + offsetof(fh_rng, inc), &even, 8, "episode 4 of 16: rng.inc = 2 is even"},
        {"env.episodes", EP_FIELD(6, episodes_done), &minus_one, 4, "episode 6 of 16: episodes_done = -1"},
        {"trainer.episode_length", 3 * 4, &minus_one, 4, "trainer.episode_length[3] = -1, but episode 3 has taken"},
        {"trainer.episode_return", 2 * 8, &nan_d, 8, "key \"trainer.episode_return\": element 2 is nan"},
        {"ppo.update_rng", 8, &even, 8, "ppo.update_rng's stream 2 is not the update's"},
        {"rng.episodes", 10 * 8, &other_state, 8, "rng.episodes[5] = (12345, 11) differs from env.episodes[5]"},
        {"policy_layer_0.weight", 10 * 4, &nan_f, 4, "key \"policy_layer_0.weight\": element 10 is nan"},
        {"adam.v.value_layer_1.bias", 0, &minus_one_f, 4, "key \"adam.v.value_layer_1.bias\": element 0 is -1"},
        {"run.iteration", 0, &iteration_neg, 8, "run.iteration = -3 is negative"},
    };
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        char edited[512], out[512], log[32];
        snprintf(edited, sizeof edited, "%s/edited_%02zu.safetensors", g_dir, k);
        snprintf(out, sizeof out, "%s/edited_run_%02zu", g_dir, k);
        snprintf(log, sizeof log, "edited_%02zu", k);
        CHECK_MSG(fh_poke_bytes(edited, base, edits[k].key, edits[k].byte, edits[k].bytes,
                                edits[k].len) == 0, "edit %zu (%s) not made", k, edits[k].key);
        const char *args[] = {"train", "--resume", edited, "--out", out, NULL};
        char *text;
        int rc = run_foxhunt(log, args, &text);
        CHECK_MSG(rc == 2 && strstr(text, edited) && strstr(text, edits[k].want),
                  "edit %zu: exit %d (2 expected; 128+ is a crash), stderr \"%s\" should "
                  "name the file and say \"%s\"", k, rc, text, edits[k].want);
        if (strcmp(edits[k].key, "policy_layer_0.weight") == 0) {
            const char *eval_args[] = {"eval", "--checkpoint", edited, NULL};
            char *eval_text;
            rc = run_foxhunt("eval_nan", eval_args, &eval_text);
            CHECK_MSG(rc == 2 && strstr(eval_text, edits[k].want),
                      "eval of a NaN weight: exit %d, \"%s\"", rc, eval_text);
            free(eval_text);
        }
        free(text);
    }
}

/* ---- NaN during training (library) ---- */

typedef struct {
    int what; /* 0: an episode's cash, 1: a critic weight */
} poison_plan;

static void poison_after_3(const fh_train_loop *t_const, const fh_iteration_metrics *m,
                           void *user)
{
    const poison_plan *p = user;
    fh_trainer *t = fh_learner_ppo_trainer(&t_const->learner); /* the test's own trainer */
    if (m->iteration != 3)
        return;
    if (p->what == 0)
        t->episodes[0].cash = NAN;
    else
        t->critic.params[FH_CRITIC_OFF_W1 + 5] = NAN;
}

static void small_config(fh_train_config *cfg, const char *out)
{
    fh_train_config_default(cfg);
    snprintf(cfg->device, sizeof cfg->device, "cpu");
    snprintf(cfg->out, sizeof cfg->out, "%s", out);
    cfg->episodes = 8;
    cfg->steps = 32;
    cfg->minibatch = 64;
    cfg->epochs = 1;
    cfg->iterations = 6;
    cfg->checkpoint_every = 2;
    cfg->synthetic_bars = 3000;
    cfg->threads = 1;
    cfg->env.horizon = 40;
    cfg->eval_at_end = 0;
}

static void test_nan_during_training(void)
{
    const char *want[2] = {"iteration 4: the collected batch's mean reward is NaN",
                           "iteration 4: the "};
    for (int what = 0; what < 2; what++) {
        char out[300], path[400];
        snprintf(out, sizeof out, "%s/nan_%d", g_dir, what);
        fh_train_config cfg;
        small_config(&cfg, out);
        fh_train_loop loop;
        fh_error err;
        fh_error_clear(&err);
        if (fh_train_loop_init(&loop, &cfg, &err) != FH_OK) {
            CHECK_MSG(0, "init: %s", err.message);
            fh_train_loop_free(&loop);
            continue;
        }
        poison_plan plan = {what};
        fh_status st = fh_train_loop_run(&loop, NULL, poison_after_3, &plan, &err);
        snprintf(path, sizeof path, "%s/checkpoint_000002.safetensors", out);
        CHECK_MSG(st == FH_ERR_FAILURE && strncmp(err.message, want[what], strlen(want[what])) == 0 &&
                  strstr(err.message, " is NaN") && strstr(err.message, path),
                  "case %d: status %d, \"%s\" should start \"%s\", say NaN and name %s", what,
                  (int)st, err.message, want[what], path);
        CHECK_MSG(loop.learner.iteration == 3, "case %d: stopped at iteration %lld", what,
                  (long long)loop.learner.iteration);
        fh_train_loop_free(&loop);
        const char *absent[3] = {"checkpoint_000004.safetensors", "final.safetensors",
                                 "interrupted.safetensors"};
        for (int k = 0; k < 3; k++) {
            char p[600];
            snprintf(p, sizeof p, "%s/%s", out, absent[k]);
            CHECK_MSG(!fh_file_exists(p), "case %d: %s was written", what, p);
        }
        /* the last good checkpoint is intact: it resumes */
        fh_train_config rc;
        fh_train_config_default(&rc);
        CHECK(fh_checkpoint_read_config(path, &rc, &err) == FH_OK);
        snprintf(rc.resume, sizeof rc.resume, "%s", path);
        rc.threads = 1;
        fh_trainer t;
        st = fh_trainer_init(&t, &rc, &err);
        CHECK_MSG(st == FH_OK && t.iteration == 2, "case %d: resuming %s: %s", what, path,
                  err.message);
        fh_trainer_free(&t);
    }
}

/* ---- the data's identity ---- */

static char *metadata_of(const char *path, const char *key)
{
    fh_st_file f;
    fh_error err;
    if (fh_st_read(&f, path, &err) != FH_OK)
        return NULL;
    const char *v = fh_st_metadata(&f, key);
    char *copy = v ? strdup(v) : NULL;
    fh_st_file_free(&f);
    return copy;
}

static void test_other_data(void)
{
    const char *base = run_e_final();
    if (!base)
        return;
    char *src = metadata_of(base, "data.source");
    CHECK_MSG(src && strcmp(src, "synthetic seed=42 bars=3000") == 0, "data.source %s",
              src ? src : "(none)");
    free(src);
    /* another synthetic seed: refused, then accepted when told */
    char out[400], final_path[500];
    snprintf(out, sizeof out, "%s/other_seed", g_dir);
    const char *refused[] = {"train", "--resume", base, "--synthetic-seed", "7", "--iterations",
                             "3", "--out", out, NULL};
    char *text;
    int rc = run_foxhunt("other_seed", refused, &text);
    CHECK_MSG(rc == 2 && strstr(text, base) && strstr(text, "trained on other data") &&
              strstr(text, "content hash") &&
              strstr(text, "source synthetic seed=42 bars=3000, now synthetic seed=7 bars=3000") &&
              strstr(text, "--allow-other-data"), "exit %d: %s", rc, text);
    free(text);
    const char *allowed[] = {"train", "--resume", base, "--synthetic-seed", "7", "--iterations",
                             "3", "--out", out, "--allow-other-data", NULL};
    rc = run_foxhunt("other_seed_allowed", allowed, &text);
    CHECK_MSG(rc == 0, "--allow-other-data: exit %d: %s", rc, text);
    free(text);
    snprintf(final_path, sizeof final_path, "%s/final.safetensors", out);
    src = metadata_of(final_path, "data.source");
    CHECK_MSG(src && strcmp(src, "synthetic seed=7 bars=3000") == 0,
              "the resumed run's checkpoint records %s", src ? src : "(none)");
    free(src);

    /* library: the flags, and the restarted episodes equal a fresh run's */
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    fh_error err;
    CHECK(fh_checkpoint_read_config(base, &cfg, &err) == FH_OK);
    cfg.threads = 1;
    snprintf(cfg.resume, sizeof cfg.resume, "%s", base);
    fh_trainer same, other, fresh;
    fh_status st = fh_trainer_init(&same, &cfg, &err);
    CHECK_MSG(st == FH_OK && !same.data_identity_unchecked && !same.data_other, "%s",
              err.message);
    fh_trainer_free(&same);
    cfg.synthetic_seed = 7;
    cfg.allow_other_data = 1;
    st = fh_trainer_init(&other, &cfg, &err);
    CHECK_MSG(st == FH_OK && other.data_other && other.iteration == 2, "%s", err.message);
    fh_train_config fresh_cfg = cfg;
    fresh_cfg.resume[0] = '\0';
    if (st == FH_OK && fh_trainer_init(&fresh, &fresh_cfg, &err) == FH_OK) {
        CHECK(memcmp(other.episodes, fresh.episodes,
                     (size_t)cfg.episodes * sizeof(fh_episode_state)) == 0);
        for (int n = 0; n < cfg.episodes; n++)
            CHECK(other.episode_return[n] == 0.0 && other.episode_length[n] == 0);
        /* the networks are the checkpoint's, not fresh ones */
        CHECK(memcmp(other.actor.params, fresh.actor.params,
                     other.actor.n_params * sizeof(float)) != 0);
    } else {
        CHECK_MSG(0, "fresh: %s", err.message);
    }
    fh_trainer_free(&fresh);
    fh_trainer_free(&other);

    /* a checkpoint from before the identity: accepted, flagged unchecked */
    char old1[500], old2[500];
    snprintf(old1, sizeof old1, "%s/old_a.safetensors", g_dir);
    snprintf(old2, sizeof old2, "%s/old_b.safetensors", g_dir);
    const char *keys[5] = {"data.source", "data.bars", "data.first_time", "data.last_time",
                           "data.hash"};
    const char *from = base;
    for (int k = 0; k < 5; k++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "\"%s\"", keys[k]);
        snprintf(b, sizeof b, "\"old_%s\"", keys[k]);
        const char *to = k % 2 ? old2 : old1;
        CHECK(io_rewrite_header(to, from, a, b) == 0);
        from = to;
    }
    fh_train_config_default(&cfg);
    CHECK(fh_checkpoint_read_config(from, &cfg, &err) == FH_OK);
    cfg.threads = 1;
    snprintf(cfg.resume, sizeof cfg.resume, "%s", from);
    st = fh_trainer_init(&same, &cfg, &err);
    CHECK_MSG(st == FH_OK && same.data_identity_unchecked && !same.data_other, "%s",
              err.message);
    fh_trainer_free(&same);
}

/* a CSV edited in place is other data; the same bytes elsewhere are not */
static void test_other_csv(void)
{
    char src_csv[600], a_csv[400], b_csv[400], out[400], ck[500];
    snprintf(src_csv, sizeof src_csv, "%s/spy_daily.csv", FH_SHARED_DATA_DIR);
    char *text = fh_read_text(src_csv);
    if (!text) {
        printf("note: %s not readable, the CSV identity test is skipped\n", src_csv);
        return;
    }
    snprintf(a_csv, sizeof a_csv, "%s/a.csv", g_dir);
    snprintf(b_csv, sizeof b_csv, "%s/b.csv", g_dir);
    snprintf(out, sizeof out, "%s/csv_run", g_dir);
    CHECK(fh_write_text(a_csv, text) && fh_write_text(b_csv, text));
    const char *run[] = {"--data", a_csv, "--iterations", "1", "--checkpoint-every", "0",
                         "--out", out, NULL};
    if (train("csv", run, 1) != 0) {
        CHECK_MSG(0, "training on %s failed", a_csv);
        free(text);
        return;
    }
    snprintf(ck, sizeof ck, "%s/final.safetensors", out);
    /* one volume of the last bar changed in place: a digit of its last field */
    size_t len = strlen(text);
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    CHECK(len > 0 && text[len - 1] >= '0' && text[len - 1] <= '9');
    text[len - 1] = text[len - 1] == '9' ? '8' : (char)(text[len - 1] + 1);
    CHECK(fh_write_text(a_csv, text));
    char out2[400];
    snprintf(out2, sizeof out2, "%s/csv_edited", g_dir);
    const char *edited[] = {"train", "--resume", ck, "--iterations", "2", "--threads", "1",
                            "--out", out2, NULL};
    char *err_text;
    int rc = run_foxhunt("csv_edited", edited, &err_text);
    CHECK_MSG(rc == 2 && strstr(err_text, "trained on other data") &&
              strstr(err_text, "content hash") && strstr(err_text, "same source") &&
              !strstr(err_text, "bars, now"), "exit %d: %s", rc, err_text);
    free(err_text);
    snprintf(out2, sizeof out2, "%s/csv_moved", g_dir);
    const char *moved[] = {"train", "--resume", ck, "--data", b_csv, "--iterations", "2",
                           "--threads", "1", "--out", out2, NULL};
    rc = run_foxhunt("csv_moved", moved, &err_text);
    CHECK_MSG(rc == 0, "the same bytes at another path: exit %d: %s", rc, err_text);
    free(err_text);
    free(text);
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_resume")) {
        perror("mkdtemp");
        return 1;
    }
    double t0 = fh_now_seconds();
    test_resume_mid_run_checkpoint();
    test_resume_finished_run();
    test_edited_checkpoints();
    test_nan_during_training();
    test_other_data();
    test_other_csv();
    printf("resume runs took %.1f s\n", fh_now_seconds() - t0);
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "run directories kept in %s\n", g_dir);
    return fh_test_finish();
}
