/* test_dqn_resume.c — `foxhunt train --algo pqn|dqn --resume` is bit-identical on the CPU
 * (issue 18), through the binary (FH_FOXHUNT_BIN), and refuses what it cannot resume.
 *
 *  - mid-run checkpoint, PQN and DQN: run A trains 4 iterations with --checkpoint-every 2;
 *    run B is `--resume A/checkpoint_000002.safetensors --out B` (every setting from the
 *    checkpoint). B's rows 3-4 equal A's and every tensor of the final checkpoints is
 *    byte-identical (Q-network, Adam moments and step, curiosity, target network, replay
 *    ring, episodes, streams, running returns, grad_steps). DQN's ring (capacity 1000,
 *    512 transitions per iteration) has wrapped by the checkpoint, so head != size, and
 *    its target network is copied every 5 gradient steps (mid-iteration).
 *  - resume in place, PQN: run C trains 2 iterations, `--resume C/final.safetensors
 *    --iterations 4 --out C` continues it; its rows 1-4 equal run D's (4 uninterrupted),
 *    metrics.jsonl has 4 lines, the final tensors are equal. (Constant epsilon and lr:
 *    both schedules depend on --iterations.)
 *  - resume in place from a mid-run checkpoint, DQN: `--resume A/checkpoint_000002
 *    --out A` moves A's later history aside (OUT/superseded-*), keeps rows 1-2 and
 *    rewrites rows 3-4 equal to the first run's; the new final equals B's.
 *  - the same mid-run test with --device cuda (the GPU collector's episodes uploaded on
 *    resume) when a GPU is there; skipped, saying so, without one.
 *  - refusals, each exit 2 naming the file and the fault, with nothing created: a PPO
 *    checkpoint given to --algo pqn, pqn to dqn and dqn to pqn, an actor-only file, another
 *    N (wrong shape), another --replay-capacity or --seed, other data (accepted with
 *    --allow-other-data), and one edited value at a time (NaN weight, negative second
 *    moment, episode bar / diversity head out of range, a running length, the update
 *    stream, the ring's size, head, capacity, saved flag, an action 45 or -1, a discount
 *    2, a NaN target weight, a negative grad_steps).
 *  - library: a checkpoint whose ring exceeds ring_save_max holds none, and its resume
 *    starts an empty ring (ring_restarted); below it the resumed ring equals the saved one
 *    slot for slot. OpenBLAS runs with --threads 1 throughout (resume needs a fixed thread
 *    count, nn.h).
 * One ctest entry per case (test_dqn_resume CASE; tests/dqn/test_cases.h), each in a
 * directory of its own: a case that needs another's runs (the refusals, the in-place
 * resume from a mid-run checkpoint) trains them itself, without checking them again. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "dqn/test_cases.h"
#include "foxhunt/device.h"
#include "foxhunt/q_trainer.h"
#include "foxhunt/run_dir.h"
#include "foxhunt/safetensors.h"
#include "io/ckpt_fixture.h"
#include "test_run_compare.h"
#include "test_util.h"

static const char *COMMON[] = {"--episodes", "16", "--steps", "32", "--minibatch", "128",
                               "--epochs", "2", "--learning-starts", "256",
                               "--replay-ratio", "0.03125", "--replay-capacity", "1000",
                               "--target-update-every", "5", "--synthetic-bars", "3000",
                               "--threads", "1", "--horizon", "40", "--seed", "3",
                               "--eval-at-end", "0", NULL};

static char g_dir[256];

/* foxhunt train [--algo algo --device device COMMON...] extra...; the exit status. */
static int train(const char *log_name, const char *algo, const char *device,
                 const char *const *extra)
{
    const char *head[FH_PROC_MAX_ARGS];
    int n = 0;
    if (algo) {
        head[n++] = "--algo";
        head[n++] = algo;
        head[n++] = "--device";
        head[n++] = device;
        for (int i = 0; COMMON[i]; i++)
            head[n++] = COMMON[i];
    }
    head[n] = NULL;
    return fh_run_train(g_dir, log_name, head, extra);
}

/* foxhunt ARGS...; the exit status; *err_text gets stderr (malloc'd, never NULL). */
static int run_foxhunt(const char *log_name, const char *const *args, char **err_text)
{
    return fh_run_foxhunt_stderr(g_dir, log_name, args, err_text);
}

/* Every tensor of a and b: the same names, dtypes, shapes and bytes; want_keys must be
 * among them. */
static void compare_checkpoints(const char *what, const char *path_a, const char *path_b,
                                const char *const *want_keys)
{
    fh_st_file a;
    if (fh_compare_checkpoints(what, path_a, path_b, &a) >= 0)
        for (int k = 0; want_keys[k]; k++)
            CHECK_MSG(fh_st_find(&a, want_keys[k]) != NULL, "%s: %s lacks %s", what, path_a,
                      want_keys[k]);
    fh_st_file_free(&a);
}

static char *read_in(const char *sub, const char *file)
{
    return fh_read_in(g_dir, sub, file);
}

static const char *const PQN_KEYS[] = {"q_layer_0.weight", "q_norm_1.bias", "adam.m.q_output.weight",
                                       "adam.step.pqn", "fc1.weight", "adam.step.curiosity",
                                       "env.episodes", "q.update_rng", "q.grad_steps", NULL};
static const char *const DQN_KEYS[] = {"q_layer_0.weight", "adam.v.q_layer_1.weight",
                                       "adam.step.qnet", "fc2.bias", "q.target", "q.grad_steps",
                                       "q.replay.state", "q.replay.states", "q.replay.actions",
                                       "q.replay.returns", "q.replay.next_states",
                                       "q.replay.discounts", "env.episodes", NULL};

/* A: 4 iterations, checkpoints every 2; with_b: B, resumed from A's second into a new
 * directory. Their names and directories go to a, b, out_a, out_b and ck (A's second
 * checkpoint). Returns 1 when the runs were made. */
static int make_mid_run(const char *algo, const char *device, int with_b, char a[64],
                        char b[64], char out_a[400], char out_b[400], char ck[512])
{
    snprintf(a, 64, "A_%s_%s", algo, device);
    snprintf(b, 64, "B_%s_%s", algo, device);
    snprintf(out_a, 400, "%s/%s", g_dir, a);
    snprintf(out_b, 400, "%s/%s", g_dir, b);
    snprintf(ck, 512, "%s/checkpoint_000002.safetensors", out_a);
    const char *run_a[] = {"--iterations", "4", "--checkpoint-every", "2", "--out", out_a, NULL};
    if (train(a, algo, device, run_a) != 0) {
        CHECK_MSG(0, "%s: run A failed", a);
        return 0;
    }
    const char *run_b[] = {"--resume", ck, "--out", out_b, NULL};
    if (with_b && train(b, NULL, NULL, run_b) != 0) {
        CHECK_MSG(0, "%s: resumed run B failed", b);
        return 0;
    }
    return 1;
}

/* B's rows 3-4 and final checkpoint against A's. */
static void test_mid_run(const char *algo, const char *device)
{
    char a[64], b[64], out_a[400], out_b[400], ck[512];
    if (!make_mid_run(algo, device, 1, a, b, out_a, out_b, ck))
        return;
    char *csv_a = read_in(a, "metrics.csv");
    fh_check_resumed_metrics(b, csv_a, 5, out_b, 3, 2, 3, 4);
    free(csv_a);
    char fa[512], fb[512];
    snprintf(fa, sizeof fa, "%s/final.safetensors", out_a);
    snprintf(fb, sizeof fb, "%s/final.safetensors", out_b);
    compare_checkpoints(b, fa, fb, strcmp(algo, "pqn") == 0 ? PQN_KEYS : DQN_KEYS);
    /* the DQN ring wrapped before the checkpoint: head is not size */
    if (strcmp(algo, "dqn") == 0) {
        fh_st_file f;
        fh_error err;
        if (fh_st_read(&f, ck, &err) == FH_OK) {
            const fh_st_tensor *s = fh_st_find(&f, "q.replay.state");
            int64_t v[5] = {0};
            if (s && s->nbytes == sizeof v)
                memcpy(v, s->data, sizeof v);
            CHECK_MSG(v[0] == 1000 && v[1] == 1000 && v[2] == 24 && v[3] == 1024 && v[4] == 1,
                      "q.replay.state = [%lld %lld %lld %lld %lld], expected [1000 1000 24 1024 1]",
                      (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3],
                      (long long)v[4]);
            fh_st_file_free(&f);
        } else {
            CHECK_MSG(0, "%s", err.message);
        }
    }
}

/* C: 2 iterations, then resumed in place to 4; D: 4 straight. */
static void test_in_place(const char *algo)
{
    char c[64], d[64], out_c[400], out_d[400], ck[512];
    snprintf(c, sizeof c, "C_%s", algo);
    snprintf(d, sizeof d, "D_%s", algo);
    snprintf(out_c, sizeof out_c, "%s/%s", g_dir, c);
    snprintf(out_d, sizeof out_d, "%s/%s", g_dir, d);
    const char *run_c[] = {"--iterations", "2", "--anneal-lr", "0", "--epsilon-start", "0.2",
                           "--epsilon-end", "0.2", "--checkpoint-every", "0", "--out", out_c, NULL};
    const char *run_d[] = {"--iterations", "4", "--anneal-lr", "0", "--epsilon-start", "0.2",
                           "--epsilon-end", "0.2", "--checkpoint-every", "0", "--out", out_d, NULL};
    if (train(c, algo, "cpu", run_c) != 0 || train(d, algo, "cpu", run_d) != 0) {
        CHECK_MSG(0, "%s: run C or D failed", algo);
        return;
    }
    snprintf(ck, sizeof ck, "%s/final.safetensors", out_c);
    const char *resume_c[] = {"--resume", ck, "--iterations", "4", "--out", out_c, NULL};
    if (train("C-resumed", NULL, NULL, resume_c) != 0) {
        CHECK_MSG(0, "%s: resuming C failed", algo);
        return;
    }
    char *csv_d = read_in(d, "metrics.csv");
    fh_check_resumed_metrics("in-place resume", csv_d, -1, out_c, 5, 4, 1, 4);
    free(csv_d);
    char fc[512], fd[512];
    snprintf(fc, sizeof fc, "%s/final.safetensors", out_c);
    snprintf(fd, sizeof fd, "%s/final.safetensors", out_d);
    compare_checkpoints("final C (resumed in place) vs D", fc, fd,
                        strcmp(algo, "pqn") == 0 ? PQN_KEYS : DQN_KEYS);
}

/* A (finished, 4 rows) resumed in place from its checkpoint_000002. */
static void test_in_place_trim(const char *algo)
{
    char a[64], out_a[400], ck[512], fa[512], fb[512];
    snprintf(a, sizeof a, "A_%s_cpu", algo);
    snprintf(out_a, sizeof out_a, "%s/%s", g_dir, a);
    snprintf(ck, sizeof ck, "%s/checkpoint_000002.safetensors", out_a);
    char *before = read_in(a, "metrics.csv");
    const char *again[] = {"--resume", ck, "--out", out_a, NULL};
    if (!before || train("A-in-place", NULL, NULL, again) != 0) {
        CHECK_MSG(0, "%s: resuming in place failed", a);
        free(before);
        return;
    }
    fh_check_resumed_metrics("in place from checkpoint_000002", before, -1, out_a, 5, 4, 1, 4);
    free(before);
    int superseded = 0;
    DIR *d = opendir(out_a);
    for (struct dirent *e; d && (e = readdir(d));)
        superseded += strncmp(e->d_name, "superseded-", 11) == 0;
    if (d)
        closedir(d);
    CHECK_MSG(superseded == 1, "%s: %d superseded-* directories, expected 1", a, superseded);
    snprintf(fa, sizeof fa, "%s/final.safetensors", out_a);
    snprintf(fb, sizeof fb, "%s/B_%s_cpu/final.safetensors", g_dir, algo);
    compare_checkpoints("final after resuming in place vs B", fa, fb,
                        strcmp(algo, "pqn") == 0 ? PQN_KEYS : DQN_KEYS);
}

/* ---- refusals ---- */

/* `foxhunt ARGS... --out FRESH`: exit 2, stderr names the file and says want, FRESH never
 * created. */
static void expect_refused(const char *log, const char *file, const char *const *args,
                           const char *want)
{
    char out[400];
    snprintf(out, sizeof out, "%s/refused_%s", g_dir, log);
    const char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    for (int i = 0; args[i] && n < FH_PROC_MAX_ARGS - 3; i++)
        argv[n++] = args[i];
    argv[n++] = "--out";
    argv[n++] = out;
    argv[n] = NULL;
    char *text;
    int rc = run_foxhunt(log, argv, &text);
    CHECK_MSG(rc == 2 && strstr(text, file) && strstr(text, want),
              "%s: exit %d (2 expected; 128+ is a crash), stderr \"%s\" should name %s and "
              "say \"%s\"", log, rc, text, file, want);
    CHECK_MSG(!fh_file_exists(out), "%s: the refused resume created %s", log, out);
    free(text);
}

#define EP_ROW(n) ((size_t)(n) * sizeof(fh_episode_state))
#define EP_FIELD(n, field) (EP_ROW(n) + offsetof(fh_episode_state, field))
#define EP_DIV(n, field) (EP_FIELD(n, diversity) + offsetof(fh_diversity, field))

static void test_refusals(void)
{
    char pqn_ck[512], dqn_ck[512], ppo_dir[300], ppo_ck[512], actor[512];
    snprintf(pqn_ck, sizeof pqn_ck, "%s/A_pqn_cpu/checkpoint_000002.safetensors", g_dir);
    snprintf(dqn_ck, sizeof dqn_ck, "%s/A_dqn_cpu/checkpoint_000002.safetensors", g_dir);
    if (!fh_file_exists(pqn_ck) || !fh_file_exists(dqn_ck)) {
        CHECK_MSG(0, "the mid-run checkpoints are missing");
        return;
    }
    snprintf(ppo_dir, sizeof ppo_dir, "%s/ppo", g_dir);
    snprintf(ppo_ck, sizeof ppo_ck, "%s/final.safetensors", ppo_dir);
    snprintf(actor, sizeof actor, "%s/actor.safetensors", g_dir);
    const char *ppo[] = {"--algo", "ppo", "--device", "cpu", "--episodes", "8", "--steps", "16",
                         "--iterations", "1", "--epochs", "1", "--minibatch", "64",
                         "--synthetic-bars", "3000", "--threads", "1", "--eval-at-end", "0",
                         "--out", ppo_dir, NULL};
    CHECK_MSG(train("ppo", NULL, NULL, ppo) == 0, "the PPO run failed");
    const char *export[] = {"export", "--checkpoint", ppo_ck, "--actor", "--out", actor, NULL};
    char *text;
    CHECK_MSG(run_foxhunt("export", export, &text) == 0, "export: %s", text);
    free(text);

    const char *a1[] = {"train", "--resume", ppo_ck, "--algo", "pqn", NULL};
    expect_refused("ppo_as_pqn", ppo_ck, a1, "a ppo checkpoint (its config's algo); --algo pqn "
                   "cannot resume it");
    const char *a2[] = {"train", "--resume", pqn_ck, "--algo", "dqn", NULL};
    expect_refused("pqn_as_dqn", pqn_ck, a2, "a pqn checkpoint (its config's algo); --algo dqn");
    const char *a3[] = {"train", "--resume", dqn_ck, "--algo", "pqn", NULL};
    expect_refused("dqn_as_pqn", dqn_ck, a3, "a dqn checkpoint");
    const char *a4[] = {"train", "--resume", actor, "--algo", "pqn", NULL};
    expect_refused("actor_only", actor, a4, "actor-only checkpoint");
    const char *a5[] = {"train", "--resume", pqn_ck, "--episodes", "8", NULL};
    expect_refused("other_n", pqn_ck, a5, "wrong shape");
    const char *a6[] = {"train", "--resume", dqn_ck, "--replay-capacity", "2000", NULL};
    expect_refused("capacity", dqn_ck, a6, "holds up to 1000 transitions, --replay-capacity "
                   "is 2000");
    const char *a7[] = {"train", "--resume", pqn_ck, "--seed", "4", NULL};
    expect_refused("seed", pqn_ck, a7, "run seed 3 differs from --seed 4");
    const char *a8[] = {"train", "--resume", dqn_ck, "--synthetic-seed", "7", NULL};
    expect_refused("other_data", dqn_ck, a8, "trained on other data");
    char out[400];
    snprintf(out, sizeof out, "%s/other_data_allowed", g_dir);
    const char *a9[] = {"train", "--resume", dqn_ck, "--synthetic-seed", "7",
                        "--allow-other-data", "--out", out, NULL};
    CHECK_MSG(run_foxhunt("other_data_allowed", a9, &text) == 0, "--allow-other-data: %s", text);
    free(text);

    const int32_t bar_big = 1000000000, head_big = 1000000000, minus_one = -1, action_45 = 45;
    const float nan_f = NAN, minus_one_f = -1.0f, two_f = 2.0f;
    const uint64_t even = 2, other_state = 12345;
    const int64_t iteration_neg = -3, size_big = 1005, head_7 = 7, zero = 0, two = 2,
                  minus_one_64 = -1;
    struct {
        const char *base, *key;
        size_t byte;
        const void *bytes;
        size_t len;
        const char *want;
    } edits[] = {
        {pqn_ck, "q_layer_0.weight", 10 * 4, &nan_f, 4, "key \"q_layer_0.weight\": element 10 is nan"},
        {pqn_ck, "adam.v.q_norm_0.bias", 0, &minus_one_f, 4, "key \"adam.v.q_norm_0.bias\": element 0 is -1"},
        {pqn_ck, "env.episodes", EP_FIELD(15, bar), &bar_big, 4, "episode 15 of 16: bar = 1000000000 is outside"},
        {pqn_ck, "env.episodes", EP_DIV(3, head), &head_big, 4, "episode 3 of 16: diversity.head = 1000000000 is outside [0, 100)"},
        {pqn_ck, "trainer.episode_length", 3 * 4, &minus_one, 4, "trainer.episode_length[3] = -1, but episode 3 has taken"},
        {pqn_ck, "q.update_rng", 8, &even, 8, "q.update_rng's stream 2 is not the update's"},
        {pqn_ck, "rng.episodes", 10 * 8, &other_state, 8, "rng.episodes[5] = (12345, 11) differs"},
        {pqn_ck, "run.iteration", 0, &iteration_neg, 8, "run.iteration = -3 is negative"},
        {dqn_ck, "q.replay.state", 1 * 8, &size_big, 8, "q.replay.state: size 1005 and head 24"},
        {dqn_ck, "q.replay.state", 2 * 8, &head_7, 8, "size 1000 and head 7"},
        {dqn_ck, "q.replay.state", 0, &zero, 8, "capacity 0"},
        {dqn_ck, "q.replay.state", 4 * 8, &two, 8, "(saved) = 2 is not 0 or 1"},
        {dqn_ck, "q.replay.actions", 3 * 4, &action_45, 4, "\"q.replay.actions\": element 3 is 45"},
        {dqn_ck, "q.replay.actions", 999 * 4, &minus_one, 4, "\"q.replay.actions\": element 999 is -1"},
        {dqn_ck, "q.replay.discounts", 0, &two_f, 4, "\"q.replay.discounts\": element 0 is 2"},
        {dqn_ck, "q.target", 7 * 4, &nan_f, 4, "key \"q.target\": element 7 is nan"},
        {dqn_ck, "q.grad_steps", 0, &minus_one_64, 8, "q.grad_steps = -1 is negative"},
    };
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        char edited[512], log[32];
        snprintf(edited, sizeof edited, "%s/edited_%02zu.safetensors", g_dir, k);
        snprintf(log, sizeof log, "edited_%02zu", k);
        if (fh_poke_bytes(edited, edits[k].base, edits[k].key, edits[k].byte, edits[k].bytes,
                          edits[k].len) != 0) {
            CHECK_MSG(0, "edit %zu (%s) not made", k, edits[k].key);
            continue;
        }
        const char *args[] = {"train", "--resume", edited, NULL};
        expect_refused(log, edited, args, edits[k].want);
    }
}

/* ---- library: the ring's size cap ---- */

/* Iterations t->iteration+1 .. cfg.iterations, then final.safetensors in cfg.out: what
 * the training loop does, with the trainer's ring cap reachable. */
static fh_status run_q(fh_q_trainer *t, fh_error *err)
{
    fh_status st = fh_make_dirs(t->cfg.out, err);
    for (int64_t it = t->iteration + 1; st == FH_OK && it <= t->cfg.iterations; it++) {
        fh_iteration_metrics m;
        memset(&m, 0, sizeof m);
        m.lr = fh_train_config_lr(&t->cfg, it);
        fh_q_stats qs;
        st = fh_q_trainer_iterate(t, it, &m, &qs, err);
    }
    char path[FH_CONFIG_STRING_MAX + 32];
    snprintf(path, sizeof path, "%s/final.safetensors", t->cfg.out);
    if (st == FH_OK)
        st = fh_q_trainer_sync(t, err);
    return st == FH_OK ? fh_q_trainer_save(t, path, NULL, NULL, 0, err) : st;
}

static void test_ring_cap(void)
{
    char out[300], final_path[400];
    snprintf(out, sizeof out, "%s/lib", g_dir);
    snprintf(final_path, sizeof final_path, "%s/final.safetensors", out);
    fh_train_config cfg;
    fh_train_config_default(&cfg);
    snprintf(cfg.algo, sizeof cfg.algo, "dqn");
    snprintf(cfg.device, sizeof cfg.device, "cpu");
    snprintf(cfg.out, sizeof cfg.out, "%s", out);
    cfg.episodes = 8;
    cfg.steps = 16;
    cfg.iterations = 2;
    cfg.minibatch = 32;
    cfg.learning_starts = 64;
    cfg.replay_capacity = 500;
    cfg.synthetic_bars = 3000;
    cfg.threads = 1;
    cfg.eval_at_end = 0;
    fh_error err;
    for (int cap = 0; cap < 2; cap++) {
        fh_q_trainer t, r;
        fh_status st = fh_q_trainer_init(&t, &cfg, &err);
        /* 256 transitions: 113,664 bytes; cap 0 keeps the ring out of the checkpoint */
        t.ring_save_max = cap ? FH_Q_RING_SAVE_MAX_BYTES : 0;
        if (st == FH_OK)
            st = run_q(&t, &err);
        CHECK_MSG(st == FH_OK && t.ring.size == 256, "cap %d: %s", cap, err.message);
        fh_train_config rc = cfg;
        rc.iterations = 3;
        snprintf(rc.resume, sizeof rc.resume, "%s", final_path);
        if (st == FH_OK)
            st = fh_q_trainer_init(&r, &rc, &err);
        else
            memset(&r, 0, sizeof r);
        CHECK_MSG(st == FH_OK && r.iteration == 2 && r.grad_steps == t.grad_steps,
                  "cap %d: resume: %s", cap, err.message);
        if (st == FH_OK && cap == 0) {
            CHECK_MSG(r.ring_restarted && r.ring.size == 0 && r.ring.head == 0 &&
                      r.ring.n_pushed == 0, "above the cap the ring restarts empty (%d, %d)",
                      r.ring_restarted, r.ring.size);
        } else if (st == FH_OK) {
            size_t s = (size_t)t.ring.size;
            CHECK(!r.ring_restarted && r.ring.size == t.ring.size && r.ring.head == t.ring.head &&
                  r.ring.n_pushed == t.ring.n_pushed);
            CHECK(memcmp(r.ring.states, t.ring.states, s * FH_STATE_DIM * sizeof(float)) == 0 &&
                  memcmp(r.ring.next_states, t.ring.next_states,
                         s * FH_STATE_DIM * sizeof(float)) == 0 &&
                  memcmp(r.ring.actions, t.ring.actions, s * sizeof(int32_t)) == 0 &&
                  memcmp(r.ring.returns, t.ring.returns, s * sizeof(float)) == 0 &&
                  memcmp(r.ring.discounts, t.ring.discounts, s * sizeof(float)) == 0);
            CHECK(memcmp(r.target.params, t.target.params, t.target.n_params * sizeof(float)) == 0);
        }
        if (st == FH_OK) /* the resumed run goes on (the empty ring refills) */
            CHECK_MSG(run_q(&r, &err) == FH_OK && r.iteration == 3,
                      "cap %d: the resumed run: %s", cap, err.message);
        fh_q_trainer_free(&r);
        fh_q_trainer_free(&t);
    }
}

/* ---- the cases ---- */

static double g_t0;

/* A fresh directory for the case; 0 (a failed check) without one. */
static int case_begin(void)
{
    g_t0 = fh_now_seconds();
    int ok = fh_make_temp_dir(g_dir, sizeof g_dir, "fh_dqn_resume");
    CHECK_MSG(ok, "cannot make a temporary directory");
    return ok;
}

/* Removes the case's directory, or keeps it (saying where) when a check failed. */
static void case_end(void)
{
    printf("took %.1f s\n", fh_now_seconds() - g_t0);
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "outputs kept in %s\n", g_dir);
}

static void case_mid_run_pqn(void)
{
    if (case_begin())
        test_mid_run("pqn", "cpu");
    case_end();
}

static void case_mid_run_dqn(void)
{
    if (case_begin())
        test_mid_run("dqn", "cpu");
    case_end();
}

static void case_in_place_pqn(void)
{
    if (case_begin())
        test_in_place("pqn");
    case_end();
}

/* the refusals edit run A's mid-run checkpoints, PQN's and DQN's */
static void case_refusals(void)
{
    char a[64], b[64], out_a[400], out_b[400], ck[512];
    if (case_begin() && make_mid_run("pqn", "cpu", 0, a, b, out_a, out_b, ck) &&
        make_mid_run("dqn", "cpu", 0, a, b, out_a, out_b, ck))
        test_refusals();
    case_end();
}

/* A resumed in place from its checkpoint_000002 ends as B did */
static void case_in_place_trim_dqn(void)
{
    char a[64], b[64], out_a[400], out_b[400], ck[512];
    if (case_begin() && make_mid_run("dqn", "cpu", 1, a, b, out_a, out_b, ck))
        test_in_place_trim("dqn");
    case_end();
}

static void case_ring_cap(void)
{
    if (case_begin())
        test_ring_cap();
    case_end();
}

/* the mid-run resume with GPU collection (the collector's episodes uploaded on resume) */
static void mid_run_cuda(const char *algo)
{
    fh_device_info dev;
    fh_error err;
    fh_error_clear(&err);
    if (fh_device_select("cuda", &dev, &err) != FH_OK || !dev.use_gpu) {
        char why[sizeof err.message + 96];
        snprintf(why, sizeof why, "no CUDA device: the resume with GPU collection needs a GPU "
                 "(%s)", err.message);
        fh_test_case_skip(why);
        return;
    }
    if (case_begin())
        test_mid_run(algo, "cuda");
    case_end();
}

static void case_mid_run_pqn_cuda(void)
{
    mid_run_cuda("pqn");
}

static void case_mid_run_dqn_cuda(void)
{
    mid_run_cuda("dqn");
}

static const fh_test_case CASES[] = {
    {"mid_run_pqn", case_mid_run_pqn},
    {"mid_run_dqn", case_mid_run_dqn},
    {"in_place_pqn", case_in_place_pqn},
    {"refusals", case_refusals},
    {"in_place_trim_dqn", case_in_place_trim_dqn},
    {"ring_cap", case_ring_cap},
    {"mid_run_pqn_cuda", case_mid_run_pqn_cuda},
    {"mid_run_dqn_cuda", case_mid_run_dqn_cuda},
};
FH_TEST_CASES_MAIN(CASES)
