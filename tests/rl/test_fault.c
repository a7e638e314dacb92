/* test_fault.c — training survives being killed and a full disk (issue 19), through the
 * real `foxhunt train` (FH_FOXHUNT_BIN).
 *
 * 1. Kill -9 at random moments. A reference run trains K iterations uninterrupted with a
 *    checkpoint every iteration into a fresh directory. Then a chain: the same command
 *    into another fresh directory is killed with SIGKILL, resumed with `--resume
 *    <its last checkpoint> --out <the same directory>`, killed again, and so on, at least
 *    KILLS times, about half of them while a checkpoint's .tmp file exists (the kill lands
 *    inside a save: between the file's creation and its rename), the rest after a random
 *    sub-second delay; when a chain finishes before enough kills, another starts. After
 *    every kill each checkpoint in the directory must read and validate (saves are
 *    atomic). When a chain finishes: its final.safetensors and every
 *    checkpoint_NNNNNN.safetensors are byte-identical, tensor by tensor, to the
 *    reference's (metadata too, but for the run directory and resume path inside the
 *    config and the command line in record.command_line), its metrics.csv rows equal the reference's in every non-timing column,
 *    metrics.jsonl has K lines, and no *.tmp file is left.
 * 2. A full disk (only where the test can mount a tmpfs: root with CAP_SYS_ADMIN; else
 *    skipped, saying so). On a 40 MB tmpfs with a filler file leaving 16 MB:
 *    a. a fresh run fills it with checkpoints: it must exit non-zero with a message that
 *       names the file it could not write, leave no .tmp file, and its last checkpoint
 *       must load (`foxhunt eval --checkpoint`);
 *    b. resumes from that last checkpoint with --checkpoint-every 0 (so that only the run
 *       directory's files are written): with 24 KB free (room for config.json and the
 *       kept rows, not for many more) it must stop at the failed metrics write, exit
 *       non-zero naming metrics.csv or metrics.jsonl (not carry on to fail at the final
 *       checkpoint); with the disk full to the byte it must exit non-zero naming a run
 *       directory file; each time the last checkpoint must still load and no final or
 *       .tmp appear;
 *    c. the filler removed, a resume from the same checkpoint (--checkpoint-every 0, for
 *       room) finishes, and its final checkpoint (config up to checkpoint_every) and its
 *       metrics.csv, rows 1..K, equal the uninterrupted reference's: failed attempts
 *       leave nothing that a later resume loses or repeats.
 * FH_FAULT_SEED=N repeats a run's kill schedule choices (timing still varies). OpenBLAS
 * runs with --threads 1, as bit-identical resume requires (nn.h). */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <cjson/cJSON.h>
#include <dirent.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include "foxhunt/safetensors.h"
#include "test_util.h"

#define K 40     /* iterations of every run */
#define KILLS 12 /* SIGKILLs, at least */
#define MIN_MID_SAVE 4

static const char *COMMON[] = {"--device", "cpu", "--episodes", "8", "--steps", "32",
                               "--epochs", "1", "--minibatch", "128", "--synthetic-bars",
                               "2000", "--threads", "1", "--horizon", "20", "--seed", "11",
                               "--eval-at-end", "0", "--iterations", "40",
                               "--checkpoint-every", "1", NULL};

static char g_dir[256];
static int g_log = 0;
static unsigned long long g_rng;

static double uniform01(void)
{
    g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(g_rng >> 11) * (1.0 / 9007199254740992.0);
}

static void sleep_seconds(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- running foxhunt ---- */

typedef struct {
    char out[512], err[512];
} logs;

/* foxhunt train [COMMON...] extra... in the background; logs named after a counter. */
static pid_t spawn_train(int with_common, const char *const *extra, logs *lg)
{
    char *argv[FH_PROC_MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)FH_FOXHUNT_BIN;
    argv[n++] = (char *)"train";
    for (int i = 0; with_common && COMMON[i]; i++)
        argv[n++] = (char *)COMMON[i];
    for (int i = 0; extra[i] && n < FH_PROC_MAX_ARGS - 1; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    int id = g_log++;
    snprintf(lg->out, sizeof lg->out, "%s/log%03d.out", g_dir, id);
    snprintf(lg->err, sizeof lg->err, "%s/log%03d.err", g_dir, id);
    return fh_proc_spawn(argv, lg->out, lg->err);
}

static int run_train(int with_common, const char *const *extra, logs *lg)
{
    pid_t pid = spawn_train(with_common, extra, lg);
    return pid < 0 ? -1 : fh_proc_wait(pid);
}

static void print_log(const char *what, const char *path)
{
    char *text = fh_read_text(path);
    fprintf(stderr, "---- %s (%s) ----\n%s\n", what, path, text ? text : "(unreadable)");
    free(text);
}

/* ---- the run directory ---- */

typedef struct {
    int last;       /* highest N of checkpoint_N.safetensors, 0 when none */
    int final;      /* final.safetensors exists */
    int tmp;        /* *.tmp files */
    char tmp_name[256];
} dir_state;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static dir_state scan_dir(const char *dir)
{
    dir_state s;
    memset(&s, 0, sizeof s);
    DIR *d = opendir(dir);
    if (!d)
        return s;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int n;
        char tail[64];
        if (ends_with(e->d_name, ".tmp")) {
            if (!s.tmp++)
                snprintf(s.tmp_name, sizeof s.tmp_name, "%s", e->d_name);
        } else if (strcmp(e->d_name, "final.safetensors") == 0) {
            s.final = 1;
        } else if (sscanf(e->d_name, "checkpoint_%d.%63s", &n, tail) == 2 &&
                   strcmp(tail, "safetensors") == 0 && n > s.last) {
            s.last = n;
        }
    }
    closedir(d);
    return s;
}

static void checkpoint_path(char *out, size_t size, const char *dir, int n)
{
    if (n < 0)
        snprintf(out, size, "%s/final.safetensors", dir);
    else
        snprintf(out, size, "%s/checkpoint_%06d.safetensors", dir, n);
}

/* Every checkpoint file in dir reads and validates; returns how many. */
static int check_all_checkpoints_read(const char *dir, const char *when)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, ".safetensors"))
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        fh_st_file f;
        fh_error err;
        int ok = fh_st_read(&f, path, &err) == FH_OK;
        CHECK_MSG(ok, "%s: %s does not read: %s", when, path, err.message);
        if (ok)
            fh_st_file_free(&f);
        count++;
    }
    closedir(d);
    return count;
}

/* ---- comparisons ---- */

/* 1 while comparing runs one of which overrode --checkpoint-every on resume. */
static int g_ignore_checkpoint_every = 0;

/* The config JSON without the fields that name where a run lives (and, when told, how
 * often it saved). */
static char *config_without_paths(const char *json)
{
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    if (!j)
        return NULL;
    cJSON *run = cJSON_GetObjectItemCaseSensitive(j, "run");
    cJSON_DeleteItemFromObjectCaseSensitive(run, "out");
    cJSON_DeleteItemFromObjectCaseSensitive(run, "resume");
    if (g_ignore_checkpoint_every)
        cJSON_DeleteItemFromObjectCaseSensitive(run, "checkpoint_every");
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

/* Same tensors (names, dtypes, shapes, bytes), same metadata (config up to its paths).
 * Returns 1 when identical. */
static int compare_checkpoints(const char *what, const char *path_a, const char *path_b)
{
    fh_st_file a, b;
    fh_error err;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (fh_st_read(&a, path_a, &err) != FH_OK || fh_st_read(&b, path_b, &err) != FH_OK) {
        CHECK_MSG(0, "%s: %s", what, err.message);
        fh_st_file_free(&a);
        fh_st_file_free(&b);
        return 0;
    }
    int bad = 0;
    if (a.n_tensors != b.n_tensors || a.n_meta != b.n_meta) {
        CHECK_MSG(0, "%s: %zu vs %zu tensors, %zu vs %zu metadata keys", what, a.n_tensors,
                  b.n_tensors, a.n_meta, b.n_meta);
        bad = 1;
    }
    for (size_t i = 0; i < a.n_tensors && !bad; i++) {
        const fh_st_tensor *ta = &a.tensors[i];
        const fh_st_tensor *tb = fh_st_find(&b, ta->name);
        if (!tb || tb->dtype != ta->dtype || tb->nbytes != ta->nbytes || tb->rank != ta->rank ||
            memcmp(tb->shape, ta->shape, sizeof ta->shape) != 0) {
            CHECK_MSG(0, "%s: tensor %s missing or of another dtype/shape", what, ta->name);
            bad = 1;
            break;
        }
        const unsigned char *pa = ta->data, *pb = tb->data;
        for (size_t k = 0; k < ta->nbytes; k++) {
            if (pa[k] != pb[k]) {
                CHECK_MSG(0, "%s: tensor %s: first differing byte at offset %zu (element %zu)",
                          what, ta->name, k, k / fh_dtype_size(ta->dtype));
                bad = 1;
                break;
            }
        }
    }
    for (size_t i = 0; i < a.n_meta && !bad; i++) {
        const char *key = a.meta_keys[i];
        const char *va = a.meta_values[i], *vb = fh_st_metadata(&b, key);
        if (strcmp(key, "record.command_line") == 0) {
            /* the command that wrote the file: a resume's differs from the reference's by
             * design (include/foxhunt/run_record.h); present in both is what counts */
            CHECK_MSG(vb != NULL, "%s: metadata %s is missing", what, key);
            bad |= vb == NULL;
        } else if (strcmp(key, "config") == 0) {
            char *ca = config_without_paths(va), *cb = config_without_paths(vb);
            int same = ca && cb && strcmp(ca, cb) == 0;
            CHECK_MSG(same, "%s: the configs differ (beyond out and resume):\n%s\n%s", what,
                      ca ? ca : "(none)", cb ? cb : "(none)");
            bad |= !same;
            free(ca);
            free(cb);
        } else {
            int same = vb && strcmp(va, vb) == 0;
            CHECK_MSG(same, "%s: metadata %s: \"%.200s\" vs \"%.200s\"", what, key, va,
                      vb ? vb : "(absent)");
            bad |= !same;
        }
    }
    fh_st_file_free(&a);
    fh_st_file_free(&b);
    if (!bad)
        fh_test_passed++;
    return !bad;
}

static int is_timing_column(const char *name)
{
    return ends_with(name, "_seconds") || ends_with(name, "steps_per_second");
}

/* Lines of a text, split in place (the text is modified). */
static int split_lines(char *text, char **lines, int max)
{
    int n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < max;
         l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    return n;
}

static int split_fields(char *line, char **fields, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        fields[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    return n;
}

/* metrics.csv of dir against the reference's: header and K rows, non-timing columns
 * equal as text; metrics.jsonl K lines. */
static void compare_metrics(const char *what, const char *ref_dir, const char *dir)
{
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/metrics.csv", ref_dir);
    snprintf(pb, sizeof pb, "%s/metrics.csv", dir);
    char *ta = fh_read_text(pa), *tb = fh_read_text(pb);
    CHECK_MSG(ta && tb, "%s: metrics.csv unreadable", what);
    if (ta && tb) {
        static char *la[K + 8], *lb[K + 8];
        int na = split_lines(ta, la, K + 8), nb = split_lines(tb, lb, K + 8);
        CHECK_MSG(na == K + 1 && nb == K + 1, "%s: metrics.csv has %d lines, the reference %d, "
                  "expected %d", what, nb, na, K + 1);
        char *names[128], *fa[128], *fb[128];
        CHECK_MSG(strcmp(la[0], lb[0]) == 0, "%s: metrics.csv headers differ", what);
        int nc = split_fields(la[0], names, 128);
        for (int row = 1; row < na && row < nb; row++) {
            int ca = split_fields(la[row], fa, 128), cb = split_fields(lb[row], fb, 128);
            if (ca != nc || cb != nc) {
                CHECK_MSG(0, "%s: metrics.csv row %d has %d / %d fields, header %d", what, row,
                          ca, cb, nc);
                break;
            }
            int mismatch = -1;
            for (int c = 0; c < nc && mismatch < 0; c++)
                if (!is_timing_column(names[c]) && strcmp(fa[c], fb[c]) != 0)
                    mismatch = c;
            if (mismatch >= 0) {
                CHECK_MSG(0, "%s: metrics.csv row %d column %s: reference %s, this run %s", what,
                          row, names[mismatch], fa[mismatch], fb[mismatch]);
                break;
            }
        }
    }
    free(ta);
    free(tb);
    snprintf(pb, sizeof pb, "%s/metrics.jsonl", dir);
    char *jl = fh_read_text(pb);
    CHECK_MSG(jl && fh_count_lines(jl) == K, "%s: metrics.jsonl has %d lines, expected %d", what,
              jl ? fh_count_lines(jl) : -1, K);
    free(jl);
}

/* A finished directory against the reference: final, every checkpoint, metrics, no .tmp. */
static void compare_with_reference(const char *what, const char *ref, const char *dir)
{
    char a[600], b[600], label[700];
    checkpoint_path(a, sizeof a, ref, -1);
    checkpoint_path(b, sizeof b, dir, -1);
    snprintf(label, sizeof label, "%s final", what);
    compare_checkpoints(label, a, b);
    int compared = 0;
    for (int n = 1; n < K; n++) {
        checkpoint_path(b, sizeof b, dir, n);
        if (!fh_file_exists(b))
            continue;
        checkpoint_path(a, sizeof a, ref, n);
        snprintf(label, sizeof label, "%s checkpoint %d", what, n);
        if (!compare_checkpoints(label, a, b))
            break;
        compared++;
    }
    CHECK_MSG(compared == K - 1, "%s: %d of the %d checkpoints present", what, compared, K - 1);
    compare_metrics(what, ref, dir);
    dir_state s = scan_dir(dir);
    CHECK_MSG(s.tmp == 0, "%s: %d .tmp file(s) left (%s)", what, s.tmp, s.tmp_name);
}

/* ---- 1. kill -9 at random moments ---- */

typedef struct {
    int kills, mid_save, chains;
} kill_stats;

/* Starts the next process of a chain: fresh when dir has no checkpoint, else a resume of
 * the last one into dir. */
static pid_t start_chain_process(const char *dir, int last, logs *lg, char *resume_path,
                                 size_t size)
{
    if (last == 0) {
        const char *extra[] = {"--out", dir, NULL};
        resume_path[0] = '\0';
        return spawn_train(1, extra, lg);
    }
    checkpoint_path(resume_path, size, dir, last);
    const char *extra[] = {"--resume", resume_path, "--out", dir, NULL};
    return spawn_train(0, extra, lg);
}

/* Kills pid at a moment chosen by mode (1: while a .tmp exists in dir, after a random
 * 0-2 ms; 0: after a random delay). Never before dir holds a checkpoint to resume from.
 * A .tmp left by the previous kill does not count until the run has removed it (it does
 * so when it opens the directory). Returns the exit status; *during_save 1 when a new
 * .tmp was still there after the kill. */
static int kill_at_random(pid_t pid, const char *dir, int mid_save_mode, int *during_save)
{
    *during_save = 0;
    int stale = scan_dir(dir).tmp > 0;
    double start = fh_now_seconds();
    double delay = 0.02 + 1.2 * uniform01();
    double jitter = 0.002 * uniform01();
    int status;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (fh_now_seconds() - start > 120) {
            kill(pid, SIGKILL);
            CHECK_MSG(0, "a run took over 120 s");
            return fh_proc_wait(pid);
        }
        dir_state s = scan_dir(dir);
        if (stale && s.tmp == 0)
            stale = 0;
        int resumable = s.last > 0;
        int now;
        if (mid_save_mode)
            now = resumable && !stale && s.tmp > 0;
        else
            now = resumable && fh_now_seconds() - start >= delay;
        if (now) {
            if (mid_save_mode)
                sleep_seconds(jitter);
            kill(pid, SIGKILL);
            int rc = fh_proc_wait(pid);
            *during_save = !stale && scan_dir(dir).tmp > 0;
            return rc;
        }
        sleep_seconds(mid_save_mode ? 0.0001 : 0.001);
    }
}

static void test_kills(const char *ref)
{
    kill_stats st = {0, 0, 0};
    int attempts = 0;
    double t0 = fh_now_seconds();
    while ((st.kills < KILLS || st.mid_save < MIN_MID_SAVE) && attempts < 80) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/chain%d", g_dir, ++st.chains);
        int finished = 0;
        while (!finished && attempts < 80) {
            attempts++;
            dir_state s = scan_dir(dir);
            logs lg;
            char resume[600];
            int enough = st.kills >= KILLS && st.mid_save >= MIN_MID_SAVE;
            pid_t pid = start_chain_process(dir, s.last, &lg, resume, sizeof resume);
            if (pid < 0) {
                CHECK_MSG(0, "cannot start foxhunt");
                return;
            }
            if (enough) { /* enough kills: let it finish */
                int rc = fh_proc_wait(pid);
                CHECK_MSG(rc == 0, "chain %d: the last resume (%s) exited %d", st.chains,
                          resume[0] ? resume : "fresh", rc);
                if (rc != 0)
                    print_log("its stderr", lg.err);
                finished = 1;
                break;
            }
            /* mid-save kills until there are enough of them, then alternate */
            int mode = st.mid_save < MIN_MID_SAVE ? (attempts % 3 != 0) : (attempts % 2);
            int during_save;
            int rc = kill_at_random(pid, dir, mode, &during_save);
            if (rc == 0) { /* finished before the kill came */
                finished = 1;
                break;
            }
            if (rc != 128 + SIGKILL) {
                CHECK_MSG(0, "chain %d: %s exited %d before it was killed", st.chains,
                          resume[0] ? resume : "the fresh run", rc);
                print_log("its stderr", lg.err);
                return;
            }
            st.kills++;
            st.mid_save += during_save;
            char when[sizeof resume + 64]; /* the resume's text, the count and the kind */
            snprintf(when, sizeof when, "after kill %d (%s, %s)", st.kills,
                     resume[0] ? resume : "fresh run", during_save ? "during a save" : "random");
            check_all_checkpoints_read(dir, when);
            if (scan_dir(dir).final) { /* killed after its final save: done */
                finished = 1;
                break;
            }
        }
        if (finished) {
            char what[400];
            snprintf(what, sizeof what, "chain %d (%d kills so far)", st.chains, st.kills);
            compare_with_reference(what, ref, dir);
        }
        if (fh_test_failed)
            break;
    }
    CHECK_MSG(st.kills >= KILLS, "only %d kills in %d attempts", st.kills, attempts);
    CHECK_MSG(st.mid_save >= MIN_MID_SAVE, "only %d kills landed during a save", st.mid_save);
    printf("kills: %d SIGKILLs (%d during a save, a .tmp present), %d chains resumed to the "
           "end and identical to the uninterrupted run, %.1f s\n",
           st.kills, st.mid_save, st.chains, fh_now_seconds() - t0);
}

/* ---- 2. a full disk ---- */

static int eval_loads(const char *checkpoint, const char *what)
{
    char *argv[] = {(char *)FH_FOXHUNT_BIN, (char *)"eval", (char *)"--checkpoint",
                    (char *)checkpoint, (char *)"--device", (char *)"cpu", NULL};
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/eval%03d.out", g_dir, g_log);
    snprintf(err, sizeof err, "%s/eval%03d.err", g_dir, g_log++);
    int rc = fh_proc_run(argv, out, err);
    CHECK_MSG(rc == 0, "%s: foxhunt eval --checkpoint %s exited %d", what, checkpoint, rc);
    if (rc != 0)
        print_log("eval's stderr", err);
    return rc == 0;
}

/* Appends to path until the file system is full; returns bytes written. */
static long long fill_up(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0)
        return -1;
    static char block[1 << 16];
    long long total = 0;
    for (size_t chunk = sizeof block; chunk >= 1; chunk /= 2) {
        ssize_t w;
        while ((w = write(fd, block, chunk)) > 0)
            total += w;
    }
    fsync(fd);
    close(fd);
    return total;
}

static int mentions_run_file(const char *text, const char *dir)
{
    /* a message naming a metrics or run-directory file other than a checkpoint */
    const char *names[] = {"metrics.csv", "metrics.jsonl", "config.json", NULL};
    for (int i = 0; names[i]; i++)
        if (strstr(text, names[i]))
            return 1;
    (void)dir;
    return 0;
}

static void test_full_disk(const char *ref)
{
    char mnt[300];
    snprintf(mnt, sizeof mnt, "%s/disk", g_dir);
    if (mkdir(mnt, 0755) != 0 || mount("tmpfs", mnt, "tmpfs", 0, "size=40m") != 0) {
        printf("full disk: skipped: cannot mount a tmpfs at %s (%s); it needs root with "
               "CAP_SYS_ADMIN\n", mnt, strerror(errno));
        return;
    }
    char filler[400], run[400], last_path[600];
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    snprintf(run, sizeof run, "%s/run", mnt);
    struct statvfs vfs;
    statvfs(mnt, &vfs);
    long long free_bytes = (long long)vfs.f_bavail * (long long)vfs.f_frsize;
    /* leave 16 MB: three checkpoints (4.6 MB each) and change */
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    static char block[1 << 20];
    for (long long left = free_bytes - (16LL << 20); fd >= 0 && left > 0; left -= sizeof block)
        if (write(fd, block, left < (long long)sizeof block ? (size_t)left : sizeof block) < 0)
            break;
    if (fd >= 0)
        close(fd);

    /* a: checkpoints fill the disk */
    logs lg;
    const char *extra_a[] = {"--out", run, NULL};
    int rc = run_train(1, extra_a, &lg);
    char *err = fh_read_text(lg.err);
    CHECK_MSG(rc != 0 && rc < 128, "full disk (a): the run exited %d, expected a clean non-zero "
              "exit", rc);
    CHECK_MSG(err && strstr(err, run) && strstr(err, ".safetensors"),
              "full disk (a): the message does not name the checkpoint it could not write: %s",
              err ? err : "(none)");
    free(err);
    dir_state s = scan_dir(run);
    CHECK_MSG(s.tmp == 0, "full disk (a): %s left", s.tmp_name);
    CHECK_MSG(s.last >= 1 && !s.final, "full disk (a): last checkpoint %d, final %d", s.last,
              s.final);
    check_all_checkpoints_read(run, "full disk (a)");
    int last = s.last;
    checkpoint_path(last_path, sizeof last_path, run, last);
    if (last >= 1)
        eval_loads(last_path, "full disk (a)");

    /* b: resumes (--checkpoint-every 0: no checkpoint to write) on a disk with a few
     * pages free, then on one full to the byte */
    for (int pass = 0; pass < 2 && last >= 1; pass++) {
        const char *what = pass == 0 ? "full disk (b, 24 KB free)" : "full disk (b, 0 bytes free)";
        fill_up(filler);
        if (pass == 0) {
            struct stat st;
            if (stat(filler, &st) == 0 && truncate(filler, st.st_size - 24 * 1024) != 0)
                CHECK_MSG(0, "cannot truncate %s", filler);
        }
        const char *extra_b[] = {"--resume", last_path, "--out", run, "--checkpoint-every", "0",
                                 NULL};
        rc = run_train(0, extra_b, &lg);
        err = fh_read_text(lg.err);
        CHECK_MSG(rc != 0 && rc < 128, "%s: the resume exited %d, expected a clean non-zero exit",
                  what, rc);
        /* with room for the run directory's files, the first failure is a metrics row */
        int named = err && (pass == 0 ? strstr(err, "metrics.csv") || strstr(err, "metrics.jsonl")
                                      : mentions_run_file(err, run));
        CHECK_MSG(named, "%s: the message does not name the %s file it could not write (the "
                  "run should stop at the first failed write, not go on to fail at the final "
                  "checkpoint): %s", what, pass == 0 ? "metrics" : "metrics or run-directory",
                  err ? err : "(none)");
        if (rc == 0 || !named)
            print_log("its stdout", lg.out);
        free(err);
        s = scan_dir(run);
        CHECK_MSG(s.tmp == 0 && !s.final, "%s: %s left, final %d", what, s.tmp_name, s.final);
        check_all_checkpoints_read(run, what);
        eval_loads(last_path, what);
    }

    /* c: room again: the resume finishes as if nothing had happened */
    unlink(filler);
    if (last >= 1) {
        const char *extra_c[] = {"--resume", last_path, "--out", run, "--checkpoint-every", "0",
                                 NULL};
        rc = run_train(0, extra_c, &lg);
        CHECK_MSG(rc == 0, "full disk (c): the resume with room again exited %d", rc);
        if (rc != 0)
            print_log("its stderr", lg.err);
        char a[600], b[600];
        checkpoint_path(a, sizeof a, ref, -1);
        checkpoint_path(b, sizeof b, run, -1);
        if (rc == 0) {
            g_ignore_checkpoint_every = 1;
            compare_checkpoints("full disk (c) final", a, b);
            g_ignore_checkpoint_every = 0;
            compare_metrics("full disk (c)", ref, run);
        }
    }
    if (umount2(mnt, MNT_DETACH) != 0)
        fprintf(stderr, "warning: cannot unmount %s: %s\n", mnt, strerror(errno));
    printf("full disk: checkpoint save and metrics write on a full tmpfs checked, then resumed "
           "to the reference\n");
}

int main(void)
{
    const char *seed_text = getenv("FH_FAULT_SEED");
    g_rng = seed_text ? strtoull(seed_text, NULL, 10) : (unsigned long long)time(NULL) ^
                                                            ((unsigned long long)getpid() << 20);
    printf("test_fault: FH_FAULT_SEED=%llu\n", g_rng);
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "foxhunt_test_fault")) {
        fprintf(stderr, "cannot create a temporary directory\n");
        return 1;
    }
    char ref[300];
    snprintf(ref, sizeof ref, "%s/reference", g_dir);
    logs lg;
    const char *extra[] = {"--out", ref, NULL};
    double t0 = fh_now_seconds();
    int rc = run_train(1, extra, &lg);
    CHECK_MSG(rc == 0, "the uninterrupted run exited %d", rc);
    if (rc != 0) {
        print_log("its stderr", lg.err);
    } else {
        printf("reference: %d iterations uninterrupted in %.1f s\n", K, fh_now_seconds() - t0);
        test_kills(ref);
        test_full_disk(ref);
    }
    if (fh_test_failed == 0)
        fh_remove_tree(g_dir);
    else
        fprintf(stderr, "kept %s\n", g_dir);
    return fh_test_finish();
}
