/* test_gemm_cache.c — the timed matmul algorithms kept on disk (src/cuda/gemm_cache.c,
 * gemm.c). Cases (tests/dqn/test_cases.h; one ctest entry each):
 *   settle, concurrent (no GPU): the first process to settle a shape decides it; a refused
 *     entry replaced only while still the refused one; a full file drops its oldest; a FIFO
 *     refused; eight processes at once lose no shape and all run the file's choice.
 *   file_format (no GPU): random entries written and read back field for field; a merge
 *     keeps the file's entry of a shape and adds the new ones; the file's name follows
 *     the GPU model and the cuBLASLt version; a missing, truncated, lengthened,
 *     bit-flipped, foreign (magic, version) or over-full file, and one whose checksum is
 *     right but whose entry no matmul could have, all read as no entries with the reason;
 *     a merge over a damaged file writes a valid one; no temporary file is left behind.
 *   locked (no GPU): a process that holds the writers' lock and never lets go (stopped,
 *     hung) costs another process a bounded wait, after which its settle gives up (0: the
 *     caller runs its own timing) and reading still works; a lock held briefly is waited
 *     for (issue 32: the lock was taken with a blocking flock, and every other process
 *     waited forever). An alarm fails the case should a call block.
 *   gpu_reuse (GPU): fh_gemm with tuning on an empty file times every shape and writes
 *     it; a second fh_gemm (a later process's view) takes every shape from the file,
 *     times none, and computes the same bytes; both agree with a float64 reference
 *     within fp32 rounding; an entry whose algorithm bytes are garbage is refused by
 *     cublasLtMatmulAlgoCheck and the shape timed again. */
#include "test_proc.h" /* first: _GNU_SOURCE */

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cuda/gemm.h"
#include "cuda/gemm_cache.h"
#include "dqn/test_cases.h"
#include "foxhunt/device.h"
#include "foxhunt/precision.h"
#include "foxhunt/dqn.h"
#include "foxhunt/hash.h"
#include "test_util.h"

/* ---- file_format ---- */

/* A record's bytes in format version 2: six int32 (n_in, n_out, relu, bias, precision,
 * y_bf16), the int64 rows, three uint32 alignments, the algorithm's 64 bytes. */
#define RECORD (6 * 4 + 8 + 3 * 4 + 64)

static fh_gemm_cache_entry random_entry(fh_rng *r)
{
    fh_gemm_cache_entry e;
    memset(&e, 0, sizeof e);
    e.n_in = 1 + fh_pcg32_uniform_int(r, 512);
    e.n_out = 1 + fh_pcg32_uniform_int(r, 512);
    e.rows = 1 + (int64_t)fh_pcg32_next(r) * 4;
    e.relu = fh_pcg32_uniform_int(r, 2);
    e.bias = fh_pcg32_uniform_int(r, 2);
    e.precision = fh_pcg32_uniform_int(r, 3); /* fp32, tf32, bf16 */
    e.y_bf16 = e.precision == FH_PRECISION_BF16 ? fh_pcg32_uniform_int(r, 2) : 0;
    e.align_w = 1u << (2 + fh_pcg32_uniform_int(r, 7));
    e.align_x = 1u << (2 + fh_pcg32_uniform_int(r, 7));
    e.align_y = 1u << (2 + fh_pcg32_uniform_int(r, 7));
    for (int k = 0; k < 8; k++)
        e.algo[k] = ((uint64_t)fh_pcg32_next(r) << 32) | fh_pcg32_next(r);
    return e;
}

static int same_entry(const fh_gemm_cache_entry *a, const fh_gemm_cache_entry *b)
{
    return fh_gemm_cache_same_shape(a, b) && memcmp(a->algo, b->algo, sizeof a->algo) == 0;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    return (unsigned char *)fh_test_read_file(path, n);
}

static void spit(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f)
        fclose(f);
}

/* path rewritten as bytes (n of them) and read: expect no entries and a reason with
 * `word` in it. */
static void check_refused(const char *path, const unsigned char *bytes, size_t n,
                          const char *word, const char *what)
{
    spit(path, bytes, n);
    fh_gemm_cache_entry got[64];
    char why[256] = "";
    int k = fh_gemm_cache_read(path, got, 64, why, sizeof why);
    CHECK_MSG(k == 0 && strstr(why, word), "%s: %d entries read, reason '%s' (want '%s')",
              what, k, why, word);
}

static void case_file_format(void)
{
    char dir[256], path[600], why[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "test_gemm_cache"));
    CHECK(fh_gemm_cache_path(path, sizeof path, dir, "NVIDIA H200", 130001));

    /* the name follows the GPU model and the library version, and fits or is refused */
    char other[600], tiny[8];
    CHECK(fh_gemm_cache_path(other, sizeof other, dir, "NVIDIA H100", 130001) &&
          strcmp(other, path) != 0);
    CHECK(fh_gemm_cache_path(other, sizeof other, dir, "NVIDIA H200", 130002) &&
          strcmp(other, path) != 0);
    CHECK(fh_gemm_cache_path(other, sizeof other, dir, "NVIDIA H200", 130001) &&
          strcmp(other, path) == 0);
    CHECK(!fh_gemm_cache_path(tiny, sizeof tiny, dir, "NVIDIA H200", 130001));
    /* the format version is in the name (a binary of format 1 keeps its own file) */
    CHECK_MSG(strstr(path, "/gemm-v2-") != NULL, "%s", path);

    fh_gemm_cache_entry got[64];
    CHECK(fh_gemm_cache_read(path, got, 64, why, sizeof why) == 0 && strstr(why, "absent"));

    /* round trip of 40 random entries */
    enum { N = 40 };
    fh_rng r;
    fh_pcg32_seed(&r, 2026, 12);
    fh_gemm_cache_entry e[N];
    for (int i = 0; i < N; i++)
        e[i] = random_entry(&r);
    CHECK(fh_gemm_cache_merge(path, e, N, 0));
    int k = fh_gemm_cache_read(path, got, 64, why, sizeof why);
    CHECK_MSG(k == N, "read %d of %d entries (%s)", k, N, why);
    for (int i = 0; i < k && i < N; i++)
        CHECK_MSG(same_entry(&got[i], &e[i]), "entry %d differs after the round trip", i);
    CHECK_MSG(fh_gemm_cache_read(path, got, N - 1, why, sizeof why) == 0,
              "a file of %d entries read into room for %d", N, N - 1);

    /* the output's type is part of a bf16 shape: y_bf16 0 and 1 are two shapes */
    fh_gemm_cache_entry y32 = e[0], y16 = e[0];
    y32.precision = y16.precision = FH_PRECISION_BF16;
    y32.y_bf16 = 0;
    y16.y_bf16 = 1;
    CHECK(!fh_gemm_cache_same_shape(&y32, &y16) && fh_gemm_cache_same_shape(&y16, &y16));

    /* a merge keeps the file's algorithm of a known shape and appends new shapes */
    fh_gemm_cache_entry add[2] = {e[7], random_entry(&r)};
    add[0].algo[0] ^= 1; /* same shape, another algorithm: the file's stays */
    CHECK(fh_gemm_cache_merge(path, add, 2, 0));
    k = fh_gemm_cache_read(path, got, 64, why, sizeof why);
    CHECK_MSG(k == N + 1 && same_entry(&got[7], &e[7]) && same_entry(&got[N], &add[1]),
              "merge: %d entries, the known shape %s, the new one %s", k,
              k > 7 && same_entry(&got[7], &e[7]) ? "kept" : "replaced",
              k > N && same_entry(&got[N], &add[1]) ? "appended" : "missing");
    /* with replace, the new algorithm of a known shape takes its place */
    CHECK(fh_gemm_cache_merge(path, add, 1, 1));
    k = fh_gemm_cache_read(path, got, 64, why, sizeof why);
    CHECK_MSG(k == N + 1 && same_entry(&got[7], &add[0]), "replace: %d entries, entry 7 %s",
              k, k > 7 && same_entry(&got[7], &add[0]) ? "replaced" : "kept");
    CHECK(fh_gemm_cache_merge(path, e + 7, 1, 1)); /* back, for the checks below */

    /* damaged and foreign files read as none, with the reason */
    size_t n = 0;
    unsigned char *good = slurp(path, &n);
    CHECK(good && n == 24 + (size_t)(N + 1) * RECORD);
    if (good && n > 100) {
        unsigned char *bad = malloc(n + 1);
        memcpy(bad, good, n);
        check_refused(path, bad, n - 1, "damaged", "one byte short");
        bad[n] = 0;
        check_refused(path, bad, n + 1, "damaged", "one byte longer");
        memcpy(bad, good, n);
        bad[24 + RECORD * 3 + 50] ^= 0x10;
        check_refused(path, bad, n, "damaged", "a flipped bit in an algorithm");
        memcpy(bad, good, n);
        bad[0] = 'X';
        check_refused(path, bad, n, "magic", "another magic");
        memcpy(bad, good, n);
        bad[8] = 9;
        check_refused(path, bad, n, "version", "another format version");
        memcpy(bad, good, n);
        uint32_t many = FH_GEMM_CACHE_MAX + 1;
        memcpy(bad + 12, &many, 4);
        check_refused(path, bad, n, "too many", "a count above the limit");
        /* a checksum that matches an entry no matmul has (relu 2) */
        memcpy(bad, good, n);
        int32_t two = 2;
        memcpy(bad + 24 + 8, &two, 4);
        uint64_t sum = fh_fnv1a(bad + 24, n - 24, FH_FNV1A_OFFSET);
        memcpy(bad + 16, &sum, 8);
        check_refused(path, bad, n, "no matmul", "relu 2 under a valid checksum");
        /* a bf16 output under fp32 operands (y_bf16, the sixth int, of the first record) */
        memcpy(bad, good, n);
        int32_t fp32 = FH_PRECISION_FP32, one = 1;
        memcpy(bad + 24 + 16, &fp32, 4);
        memcpy(bad + 24 + 20, &one, 4);
        sum = fh_fnv1a(bad + 24, n - 24, FH_FNV1A_OFFSET);
        memcpy(bad + 16, &sum, 8);
        check_refused(path, bad, n, "no matmul", "y_bf16 under fp32 under a valid checksum");
        check_refused(path, bad, 10, "magic", "ten bytes");
        /* a merge over a damaged file leaves a valid one with the new entries */
        check_refused(path, good, n / 2, "damaged", "half a file");
        CHECK(fh_gemm_cache_merge(path, e, 3, 0));
        k = fh_gemm_cache_read(path, got, 64, why, sizeof why);
        CHECK_MSG(k == 3 && same_entry(&got[2], &e[2]), "merge over a damaged file: %d (%s)",
                  k, why);
        free(bad);
    }
    free(good);
    /* nothing but the file and its lock: the temporary files were renamed */
    char cmd[700];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s' | tr '\\n' ' ')\" = \"%s %s.lock \"", dir,
             strrchr(path, '/') + 1, strrchr(path, '/') + 1);
    CHECK_MSG(system(cmd) == 0, "files besides the cache and its lock in %s", dir);
    fh_remove_tree(dir);
}

/* settle: the first process to settle a shape decides it for every later one; a refused
 * entry is replaced only while it is still the refused one; a full file drops its oldest
 * entry; a FIFO in the file's place is refused at once, not waited on. */
static void case_settle(void)
{
    char dir[256], path[600], why[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "test_gemm_settle"));
    CHECK(fh_gemm_cache_path(path, sizeof path, dir, "NVIDIA H200", 130001));
    fh_rng r;
    fh_pcg32_seed(&r, 11, 5);
    fh_gemm_cache_entry a = random_entry(&r), mine = a, theirs = a, other = random_entry(&r);
    mine.algo[3] ^= 0xff;
    theirs.algo[5] ^= 0xff;
    fh_gemm_cache_entry e = a;
    CHECK(fh_gemm_cache_settle(path, &e, NULL) && same_entry(&e, &a)); /* first: added */
    e = mine;
    CHECK(fh_gemm_cache_settle(path, &e, NULL));
    CHECK_MSG(same_entry(&e, &a), "a later process's choice replaced the first one's");
    e = mine; /* refused: a's algorithm is replaced by mine */
    CHECK(fh_gemm_cache_settle(path, &e, a.algo) && same_entry(&e, &mine));
    e = theirs; /* refused a again, but the file has mine now: mine stays */
    CHECK(fh_gemm_cache_settle(path, &e, a.algo));
    CHECK_MSG(same_entry(&e, &mine), "a stale refusal replaced another process's fix");
    e = other;
    CHECK(fh_gemm_cache_settle(path, &e, NULL) && same_entry(&e, &other));
    fh_gemm_cache_entry *all = malloc(FH_GEMM_CACHE_MAX * sizeof *all);
    int k = fh_gemm_cache_read(path, all, FH_GEMM_CACHE_MAX, why, sizeof why);
    CHECK_MSG(k == 2 && same_entry(&all[0], &mine) && same_entry(&all[1], &other),
              "after settling: %d entries (%s)", k, why);

    /* a full file drops its oldest entry for a new one */
    fh_gemm_cache_entry *many = malloc(FH_GEMM_CACHE_MAX * sizeof *many);
    for (int i = 0; i < FH_GEMM_CACHE_MAX; i++) {
        many[i] = random_entry(&r);
        many[i].n_in = 1000 + i; /* distinct shapes */
    }
    CHECK(fh_gemm_cache_merge(path, many, FH_GEMM_CACHE_MAX, 0));
    k = fh_gemm_cache_read(path, all, FH_GEMM_CACHE_MAX, why, sizeof why);
    CHECK_MSG(k == FH_GEMM_CACHE_MAX && same_entry(&all[0], &many[0]) &&
                  same_entry(&all[k - 1], &many[FH_GEMM_CACHE_MAX - 1]),
              "a full file: %d entries, the two oldest (settled above) %s", k,
              k > 0 && same_entry(&all[0], &many[0]) ? "dropped" : "kept");

    /* a FIFO in the file's place */
    remove(path);
    CHECK(mkfifo(path, 0644) == 0);
    CHECK_MSG(fh_gemm_cache_read(path, all, FH_GEMM_CACHE_MAX, why, sizeof why) == 0 &&
                  strstr(why, "regular"), "a FIFO: %s", why);
    free(all);
    free(many);
    fh_remove_tree(dir);
}

/* Eight processes at once, as `train --gpus 8` or a sweep's jobs start: each merges 50
 * shapes of its own (none is lost: the lock), then each settles one shared shape with an
 * algorithm of its own; all eight must come back with the same one, the file's. */
static void case_concurrent(void)
{
    enum { PROCS = 8, EACH = 50 };
    char dir[256], path[600], why[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "test_gemm_concurrent"));
    CHECK(fh_gemm_cache_path(path, sizeof path, dir, "NVIDIA H200", 130001));
    char agreed[PROCS][600];
    pid_t pid[PROCS];
    for (int p = 0; p < PROCS; p++) {
        snprintf(agreed[p], sizeof agreed[p], "%s/agreed.%d", dir, p);
        pid[p] = fork();
        if (pid[p] == 0) {
            fh_rng r;
            fh_pcg32_seed(&r, 100 + (uint64_t)p, 1);
            fh_gemm_cache_entry e[EACH];
            for (int i = 0; i < EACH; i++) {
                e[i] = random_entry(&r);
                e[i].n_in = 1 + p;   /* shapes of this process only */
                e[i].n_out = 1 + i;
            }
            int ok = 1;
            for (int i = 0; i < EACH; i++)
                ok &= fh_gemm_cache_merge(path, &e[i], 1, 0);
            fh_gemm_cache_entry s = e[0]; /* the shared shape, this process's algorithm */
            s.n_in = 777;
            s.n_out = 777;
            s.rows = 4096;
            s.relu = s.bias = 1;
            s.precision = 0;
            s.y_bf16 = 0;
            s.align_w = s.align_x = s.align_y = 256;
            ok &= fh_gemm_cache_settle(path, &s, NULL);
            FILE *f = fopen(agreed[p], "wb");
            ok &= f && fwrite(s.algo, sizeof s.algo, 1, f) == 1;
            if (f)
                fclose(f);
            _exit(ok ? 0 : 1);
        }
    }
    for (int p = 0; p < PROCS; p++) {
        int status = 0;
        CHECK(pid[p] > 0 && waitpid(pid[p], &status, 0) == pid[p] && WIFEXITED(status) &&
              WEXITSTATUS(status) == 0);
    }
    fh_gemm_cache_entry *all = malloc(FH_GEMM_CACHE_MAX * sizeof *all);
    int k = fh_gemm_cache_read(path, all, FH_GEMM_CACHE_MAX, why, sizeof why);
    CHECK_MSG(k == PROCS * EACH + 1, "%d processes x %d shapes + 1 shared: %d entries (%s)",
              PROCS, EACH, k, why);
    int shared = -1;
    for (int i = 0; i < k; i++)
        if (all[i].n_in == 777)
            shared = i;
    CHECK(shared >= 0);
    for (int p = 0; p < PROCS && shared >= 0; p++) {
        size_t n = 0;
        unsigned char *got = slurp(agreed[p], &n);
        CHECK_MSG(got && n == sizeof all[shared].algo &&
                      memcmp(got, all[shared].algo, n) == 0,
                  "process %d runs another algorithm than the file's for the shared shape", p);
        free(got);
    }
    free(all);
    fh_remove_tree(dir);
}

/* ---- locked ---- */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: a gemm cache call waited on the lock past 30 s\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

/* A child that takes path's writers' lock (PATH.lock, as gemm_cache.c does), says so on
 * a pipe and keeps it for hold_s seconds, or (hold_s < 0) until *release is closed or
 * this process ends (so that a failed case leaves no holder behind). Returns its pid
 * once the lock is held, or -1. */
static pid_t hold_lock(const char *path, double hold_s, int *release)
{
    int ready[2], keep[2];
    if (pipe(ready) != 0)
        return -1;
    if (pipe(keep) != 0) {
        close(ready[0]);
        close(ready[1]);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        close(keep[1]);
        char lock[700];
        snprintf(lock, sizeof lock, "%s.lock", path);
        int fd = open(lock, O_RDWR | O_CREAT, 0644);
        if (fd < 0 || flock(fd, LOCK_EX) != 0)
            _exit(2);
        if (write(ready[1], "L", 1) != 1)
            _exit(3);
        if (hold_s < 0) {
            char c;
            while (read(keep[0], &c, 1) < 0 && errno == EINTR)
                ; /* EOF: released, or the test ended */
        } else {
            struct timespec ts = {(time_t)hold_s,
                                  (long)((hold_s - (double)(time_t)hold_s) * 1e9)};
            nanosleep(&ts, NULL);
        }
        _exit(0);
    }
    close(ready[1]);
    close(keep[0]);
    char c = 0;
    ssize_t got = pid > 0 ? read(ready[0], &c, 1) : -1;
    close(ready[0]);
    *release = keep[1];
    if (got != 1) {
        close(keep[1]);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static void case_locked(void)
{
    signal(SIGALRM, on_alarm);
    alarm(30);
    char dir[256], path[600], why[256];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "test_gemm_locked"));
    CHECK(fh_gemm_cache_path(path, sizeof path, dir, "NVIDIA H200", 130001));
    fh_rng r;
    fh_pcg32_seed(&r, 32, 3);
    fh_gemm_cache_entry a = random_entry(&r), b = random_entry(&r), e;
    b.n_in = a.n_in + 1; /* another shape */
    CHECK(fh_gemm_cache_merge(path, &a, 1, 0));

    /* held for good: the settle gives up after the bounded wait, e unchanged */
    int release = -1;
    pid_t pid = hold_lock(path, -1, &release);
    CHECK_MSG(pid > 0, "the child could not take %s.lock", path);
    e = b;
    double t0 = fh_now_seconds();
    int ok = fh_gemm_cache_settle(path, &e, NULL);
    double waited = fh_now_seconds() - t0;
    CHECK_MSG(!ok && same_entry(&e, &b), "settle under another process's lock: %d", ok);
    CHECK_MSG(waited >= FH_GEMM_CACHE_LOCK_SECONDS - 0.1 &&
                  waited < FH_GEMM_CACHE_LOCK_SECONDS + 2.0,
              "settle under a held lock returned after %.2f s (bound %.1f s)", waited,
              (double)FH_GEMM_CACHE_LOCK_SECONDS);
    fh_gemm_cache_entry got[4];
    int k = fh_gemm_cache_read(path, got, 4, why, sizeof why); /* readers take no lock */
    CHECK_MSG(k == 1 && same_entry(&got[0], &a), "reading under the lock: %d (%s)", k, why);
    if (pid > 0) {
        close(release);
        CHECK(fh_proc_wait(pid) == 0);
    }

    /* held for a moment (1 s, so that a parent descheduled for most of a second on a
     * loaded machine still sees a wait): waited for, then settled */
    pid = hold_lock(path, 1.0, &release);
    CHECK(pid > 0);
    e = b;
    t0 = fh_now_seconds();
    ok = fh_gemm_cache_settle(path, &e, NULL);
    waited = fh_now_seconds() - t0;
    CHECK_MSG(ok && same_entry(&e, &b) && waited >= 0.2,
              "settle after a lock held 1 s: %d after %.2f s", ok, waited);
    if (pid > 0) {
        close(release);
        CHECK(fh_proc_wait(pid) == 0);
    }
    k = fh_gemm_cache_read(path, got, 4, why, sizeof why);
    CHECK_MSG(k == 2 && same_entry(&got[1], &b), "after settling: %d (%s)", k, why);
    alarm(0);
    fh_test_tidy(dir);
}

/* ---- gpu_reuse ---- */

typedef struct {
    int n_in, n_out, relu, bias;
} shape;

static const shape SHAPES[] = {{54, 256, 1, 1}, {256, 128, 1, 1}, {128, 1, 0, 1}, {64, 45, 0, 0}};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define ROWS 40000LL

typedef struct {
    float *x, *w, *b, *y; /* device */
    float *hx, *hw, *hb;  /* host */
} operands;

static void operands_make(operands *o, fh_rng *r)
{
    size_t nx = (size_t)ROWS * 256, nw = 256 * 256, nb = 256;
    o->hx = malloc(nx * sizeof(float));
    o->hw = malloc(nw * sizeof(float));
    o->hb = malloc(nb * sizeof(float));
    for (size_t i = 0; i < nx; i++)
        o->hx[i] = (float)fh_pcg32_next(r) / 4294967296.0f - 0.5f;
    for (size_t i = 0; i < nw; i++)
        o->hw[i] = ((float)fh_pcg32_next(r) / 4294967296.0f - 0.5f) * 0.2f;
    for (size_t i = 0; i < nb; i++)
        o->hb[i] = (float)fh_pcg32_next(r) / 4294967296.0f - 0.5f;
    CHECK(cudaMalloc((void **)&o->x, nx * sizeof(float)) == cudaSuccess);
    CHECK(cudaMalloc((void **)&o->w, nw * sizeof(float)) == cudaSuccess);
    CHECK(cudaMalloc((void **)&o->b, nb * sizeof(float)) == cudaSuccess);
    CHECK(cudaMalloc((void **)&o->y, (size_t)ROWS * 256 * sizeof(float)) == cudaSuccess);
    CHECK(cudaMemcpy(o->x, o->hx, nx * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemcpy(o->w, o->hw, nw * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemcpy(o->b, o->hb, nb * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);
}

static void operands_free(operands *o)
{
    cudaFree(o->x);
    cudaFree(o->w);
    cudaFree(o->b);
    cudaFree(o->y);
    free(o->hx);
    free(o->hw);
    free(o->hb);
}

/* Every shape through a fresh fh_gemm on the file at path; outputs (host, the caller
 * frees them) and the gemm's counts. */
static void run_shapes(const char *path, const operands *o, float **out, int *from_disk,
                       int *timed)
{
    fh_gemm g;
    fh_error err;
    CHECK_MSG(fh_gemm_init(&g, 0, 1, 8, path, &err) == FH_OK, "%s", err.message);
    for (int s = 0; s < N_SHAPES; s++) {
        const shape *sh = &SHAPES[s];
        CHECK_MSG(fh_gemm_dense(&g, 0, o->y, o->x, o->w, sh->bias ? o->b : NULL, sh->n_in,
                                sh->n_out, ROWS, sh->relu, &err) == FH_OK, "shape %d: %s", s,
                  err.message);
        size_t n = (size_t)ROWS * sh->n_out;
        out[s] = malloc(n * sizeof(float));
        CHECK(cudaMemcpy(out[s], o->y, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    *from_disk = g.n_from_disk;
    *timed = g.n_timed;
    fh_gemm_free(&g);
}

/* The largest |y - ref| / (1 + |ref|) of shape s against float64 on the host, over a
 * spread of rows. */
static double worst_error(const operands *o, int s, const float *y)
{
    const shape *sh = &SHAPES[s];
    double worst = 0;
    for (long long row = 0; row < ROWS; row += 997)
        for (int j = 0; j < sh->n_out; j++) {
            double acc = sh->bias ? o->hb[j] : 0.0;
            for (int i = 0; i < sh->n_in; i++)
                acc += (double)o->hx[row * sh->n_in + i] * o->hw[(size_t)j * sh->n_in + i];
            if (sh->bias && sh->relu && acc < 0)
                acc = 0;
            double e = fabs(y[row * sh->n_out + j] - acc) / (1.0 + fabs(acc));
            worst = e > worst ? e : worst;
        }
    return worst;
}

static void case_gpu_reuse(void)
{
    fh_device_info dev;
    fh_error err;
    if (fh_device_select("auto", &dev, &err) != FH_OK || !dev.use_gpu) {
        fh_test_case_skip("no CUDA device: the algorithm file's reuse needs a GPU (runs in "
                          "scripts/gpu-check.sh)");
        return;
    }
    char dir[256], path[600];
    CHECK(fh_make_temp_dir(dir, sizeof dir, "test_gemm_cache_gpu"));
    CHECK(fh_gemm_cache_path(path, sizeof path, dir, dev.name, cublasLtGetVersion()));
    fh_rng r;
    fh_pcg32_seed(&r, 7, 3);
    operands o;
    operands_make(&o, &r);
    float *first[N_SHAPES], *second[N_SHAPES], *third[N_SHAPES];
    int from_disk = -1, timed = -1;
    run_shapes(path, &o, first, &from_disk, &timed);
    CHECK_MSG(from_disk == 0 && timed == N_SHAPES, "empty file: %d shapes from it, %d timed",
              from_disk, timed);
    fh_gemm_cache_entry e[FH_GEMM_CACHE_MAX];
    char why[300];
    int k = fh_gemm_cache_read(path, e, FH_GEMM_CACHE_MAX, why, sizeof why);
    CHECK_MSG(k == N_SHAPES, "the file holds %d entries (%s)", k, why);
    run_shapes(path, &o, second, &from_disk, &timed);
    CHECK_MSG(from_disk == N_SHAPES && timed == 0, "second gemm: %d shapes from the file, %d "
              "timed", from_disk, timed);
    for (int s = 0; s < N_SHAPES; s++) {
        size_t n = (size_t)ROWS * SHAPES[s].n_out;
        CHECK_MSG(memcmp(first[s], second[s], n * sizeof(float)) == 0,
                  "shape %d: the file's algorithm gave other bytes than the timed one", s);
        double w = worst_error(&o, s, second[s]);
        CHECK_MSG(w <= 1e-5, "shape %d: %.3g from float64", s, w);
        printf("shape %d x %d (relu %d, bias %d): %.2g from float64, bytes equal across the "
               "two gemms\n", SHAPES[s].n_in, SHAPES[s].n_out, SHAPES[s].relu, SHAPES[s].bias,
               w);
    }
    /* garbage algorithm bytes under a valid checksum: refused by cublasLt, timed again */
    if (k == N_SHAPES) {
        for (int q = 0; q < 8; q++)
            e[1].algo[q] = 0x5a5a5a5a5a5a5a5aULL * (uint64_t)(q + 1);
        remove(path);
        CHECK(fh_gemm_cache_merge(path, e, k, 0));
        run_shapes(path, &o, third, &from_disk, &timed);
        CHECK_MSG(from_disk == N_SHAPES - 1 && timed == 1, "a garbage entry: %d shapes from "
                  "the file, %d timed", from_disk, timed);
        for (int s = 0; s < N_SHAPES; s++)
            CHECK_MSG(worst_error(&o, s, third[s]) <= 1e-5, "shape %d after the garbage entry",
                      s);
        /* the refused entry was replaced by the one timed: the next gemm times nothing */
        fh_gemm_cache_entry now[FH_GEMM_CACHE_MAX];
        int k2 = fh_gemm_cache_read(path, now, FH_GEMM_CACHE_MAX, why, sizeof why);
        CHECK_MSG(k2 == N_SHAPES && memcmp(now[1].algo, e[1].algo, sizeof e[1].algo) != 0,
                  "after the refusal: %d entries, the garbage one %s", k2,
                  k2 > 1 && memcmp(now[1].algo, e[1].algo, sizeof e[1].algo) == 0 ? "still there"
                                                                                  : "replaced");
        for (int s = 0; s < N_SHAPES; s++)
            free(third[s]);
        run_shapes(path, &o, third, &from_disk, &timed);
        CHECK_MSG(from_disk == N_SHAPES && timed == 0, "after the replacement: %d from the "
                  "file, %d timed", from_disk, timed);
        for (int s = 0; s < N_SHAPES; s++)
            free(third[s]);
    }
    for (int s = 0; s < N_SHAPES; s++) {
        free(first[s]);
        free(second[s]);
    }
    operands_free(&o);
    fh_remove_tree(dir);
}

static const fh_test_case CASES[] = {
    {"file_format", case_file_format},
    {"settle", case_settle},
    {"concurrent", case_concurrent},
    {"locked", case_locked},
    {"gpu_reuse", case_gpu_reuse},
};
FH_TEST_CASES_MAIN(CASES)
