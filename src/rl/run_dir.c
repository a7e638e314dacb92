/* run_dir.c — the run directory of `foxhunt train` (include/foxhunt/run_dir.h):
 * the lock, stale temporary files, refusing or moving aside another run's files,
 * config.json, metrics.csv and metrics.jsonl. Every file here is opened only as a regular
 * file (fh_open_regular: a FIFO in its place would block the run, issue 32), and every
 * metrics row is appended whole or not at all (fh_append_whole). */
#define _DEFAULT_SOURCE /* flock, realpath */
#include "foxhunt/format.h"
#include "foxhunt/run_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "foxhunt/files.h"
#include "foxhunt/safetensors.h"

/* The data's part of a run name: "synthetic", or the CSV's file name without its
 * directory and extension, kept to [A-Za-z0-9._-] (others become '-'). */
static void data_label(const fh_train_config *cfg, char *out, size_t size)
{
    if (!cfg->data[0]) {
        snprintf(out, size, "synthetic");
        return;
    }
    const char *base = strrchr(cfg->data, '/');
    base = base ? base + 1 : cfg->data;
    size_t len = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base)
        len = (size_t)(dot - base);
    if (len > 64)
        len = 64;
    size_t k = 0;
    for (; k < len && k + 1 < size; k++) {
        char c = base[k];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[k] = ok ? c : '-';
    }
    out[k] = '\0';
    if (k == 0)
        snprintf(out, size, "data");
}

fh_status fh_run_dir_new_name(char *out, size_t n, const fh_train_config *cfg, const char *tag,
                              fh_error *err)
{
    time_t now = time(NULL);
    struct tm utc;
    char stamp[32], label[72];
    if (!gmtime_r(&now, &utc) || strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc) == 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: cannot format the time", __FILE__,
                            __LINE__);
    data_label(cfg, label, sizeof label);
    char base[200];
    if (tag)
        snprintf(base, sizeof base, "runs/%s__%s__%s__%s", label, cfg->algo, tag, stamp);
    else
        snprintf(base, sizeof base, "runs/%s__%s__%llu__%s", label, cfg->algo,
                 (unsigned long long)cfg->seed, stamp);
    for (int k = 1; k < 1000; k++) {
        struct stat sb;
        if (k == 1)
            snprintf(out, n, "%s", base);
        else
            snprintf(out, n, "%s-%d", base, k);
        if (stat(out, &sb) != 0 && errno == ENOENT)
            return FH_OK;
    }
    return fh_error_set(err, FH_ERR_INPUT, "%s-*: no free run directory name; give --out",
                        base);
}

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

/* The columns every learner's rows have, then the learner's own (learner.h). */
static const char *const COMMON_COLUMNS[] = {
    "iteration", "global_step", "lr", "collect_seconds", "update_seconds", "steps_per_second",
    "collect_steps_per_second", "episodes_finished", "mean_episode_return",
    "mean_episode_length", "mean_reward", "costs", "turnover", "reversals",
    "barrier_profit_take", "barrier_stop_loss", "barrier_time_limit", "action_entropy"};
enum { N_COMMON = sizeof COMMON_COLUMNS / sizeof COMMON_COLUMNS[0] }; /* then the learner's own (learner.h) */

/* ---- small helpers ---- */


static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int is_regular(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* A file a run writes at the top of its directory. */
static int is_run_file(const char *name)
{
    return strcmp(name, "config.json") == 0 || strcmp(name, "metrics.csv") == 0 ||
           strcmp(name, "metrics.jsonl") == 0 || strcmp(name, "eval.json") == 0 ||
           strcmp(name, "returns.csv") == 0 || strcmp(name, "validation.csv") == 0 ||
           strcmp(name, "report.html") == 0 || strcmp(name, FH_RUN_DIR_FOLD_RECORD) == 0 ||
           ends_with(name, ".safetensors") || strncmp(name, "events.out.tfevents.", 20) == 0;
}

/* A temporary file a save of a run's file leaves behind when it is killed. */
static int is_stale_tmp(const char *name)
{
    return (ends_with(name, ".safetensors.tmp") || strcmp(name, "config.json.tmp") == 0 ||
            strcmp(name, "metrics.csv.tmp") == 0 || strcmp(name, "metrics.jsonl.tmp") == 0 ||
            strcmp(name, "eval.json.tmp") == 0 || strcmp(name, "returns.csv.tmp") == 0 ||
            strcmp(name, "validation.csv.tmp") == 0 || strcmp(name, "report.html.tmp") == 0 ||
            strcmp(name, FH_RUN_DIR_FOLD_RECORD ".tmp") == 0);
}

/* checkpoint_NNNNNN.safetensors -> NNNNNN, else -1. */
static long long checkpoint_number(const char *name)
{
    const char *prefix = "checkpoint_";
    size_t k = strlen(prefix);
    if (strncmp(name, prefix, k) != 0 || !ends_with(name, ".safetensors"))
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(name + k, &end, 10);
    if (end == name + k || errno || strcmp(end, ".safetensors") != 0 || v < 0)
        return -1;
    return v;
}

/* The run.iteration of a checkpoint; -1 when unreadable. */
static long long checkpoint_iteration(const char *path)
{
    fh_st_file f;
    fh_error err;
    memset(&f, 0, sizeof f);
    long long it = -1;
    if (fh_st_read(&f, path, &err) == FH_OK) {
        const fh_st_tensor *x = fh_st_find(&f, "run.iteration");
        if (x && x->dtype == FH_DTYPE_I64 && x->nbytes == sizeof(int64_t)) {
            int64_t v;
            memcpy(&v, x->data, sizeof v);
            it = v;
        }
    }
    fh_st_file_free(&f);
    return it;
}

/* ---- the lock ---- */

static fh_status take_lock(fh_run_dir *rd, const char *out, fh_error *err)
{
    char path[FH_RUN_DIR_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", out, FH_RUN_DIR_LOCK_FILE);
    int fd = fh_open_regular(path, "run directory's lock file", O_RDWR | O_CREAT, err);
    if (fd < 0)
        return err ? err->status : FH_ERR_FAILURE;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            char pid[32] = "";
            ssize_t got = read(fd, pid, sizeof pid - 1);
            pid[got > 0 ? got : 0] = '\0';
            pid[strcspn(pid, "\n")] = '\0';
            close(fd);
            return fh_error_set(err, FH_ERR_FAILURE,
                                "run directory %s is in use: another foxhunt process%s%s%s "
                                "holds its lock (%s); wait for it to finish, or choose another "
                                "--out",
                                out, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "", path);
        }
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS) {
            /* a file system without locks (some network mounts): run, and say so */
            close(fd);
            fh_format_append(rd->note, sizeof rd->note, "%s%s: the file system does not support "
                   "locks (%s); nothing stops another run from writing into this directory",
                   rd->note[0] ? "; " : "", path, strerror(e));
            return FH_OK;
        }
        close(fd);
        return fh_error_set(err, FH_ERR_FAILURE, "cannot lock %s: %s", path, strerror(e));
    }
    /* the holder's pid, for the message of a run refused */
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        int e = errno;
        close(fd);
        return fh_error_set(err, FH_ERR_FAILURE, "cannot write the lock file %s: %s%s", path,
                            strerror(e), fh_write_error_hint(e));
    }
    rd->lock_fd = fd;
    rd->locked = 1;
    return FH_OK;
}

fh_status fh_run_dir_lock(fh_run_dir *rd, const char *dir, fh_error *err)
{
    memset(rd, 0, sizeof *rd);
    rd->lock_fd = -1;
    return take_lock(rd, dir, err);
}

/* ---- stale temporary files ---- */

static fh_status remove_stale_tmp(const char *out, char *note, size_t note_size, fh_error *err)
{
    DIR *d = opendir(out);
    if (!d)
        return fh_error_set(err, FH_ERR_INPUT, "cannot read run directory %s: %s", out,
                            strerror(errno));
    char names[512] = "";
    int removed = 0;
    struct dirent *e;
    fh_status st = FH_OK;
    while ((e = readdir(d))) {
        if (!is_stale_tmp(e->d_name))
            continue;
        char path[FH_RUN_DIR_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        if (!is_regular(path))
            continue;
        if (unlink(path) != 0) {
            st = fh_error_set(err, FH_ERR_FAILURE, "cannot remove the stale %s: %s", path,
                              strerror(errno));
            break;
        }
        fh_format_append(names, sizeof names, "%s%s", removed ? ", " : "", e->d_name);
        removed++;
    }
    closedir(d);
    if (removed)
        fh_format_append(note, note_size, "%sremoved %d stale temporary file%s left by an interrupted "
               "save (%s)", note[0] ? "; " : "", removed, removed == 1 ? "" : "s", names);
    return st;
}

/* ---- moving files aside ---- */

typedef struct {
    const char *out;
    char dir[FH_RUN_DIR_PATH_MAX]; /* "" until created */
    char names[768];
    int n;
} aside;

static fh_status move_aside(aside *a, const char *name, fh_error *err)
{
    if (!a->dir[0]) {
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        for (int k = 1;; k++) {
            if (k == 1)
                snprintf(a->dir, sizeof a->dir, "%s/superseded-%s", a->out, stamp);
            else
                snprintf(a->dir, sizeof a->dir, "%s/superseded-%s-%d", a->out, stamp, k);
            if (mkdir(a->dir, 0755) == 0)
                break;
            if (errno != EEXIST || k > 1000) {
                int e = errno;
                char dir[FH_RUN_DIR_PATH_MAX];
                snprintf(dir, sizeof dir, "%s", a->dir);
                a->dir[0] = '\0';
                return fh_error_set(err, FH_ERR_FAILURE, "cannot create %s: %s", dir,
                                    strerror(e));
            }
        }
    }
    char from[FH_RUN_DIR_PATH_MAX], to[FH_RUN_DIR_PATH_MAX + 64];
    snprintf(from, sizeof from, "%s/%s", a->out, name);
    snprintf(to, sizeof to, "%s/%s", a->dir, name);
    /* config.json and the metrics are replaced by their prepared .tmp right after: the
     * old file is linked aside and stays in place until that rename, so a kill in
     * between never leaves the directory without them (the .tmp would then be removed
     * as stale and the kept rows lost). Where hard links fail, it is moved. */
    int replaced = strcmp(name, "config.json") == 0 || strcmp(name, "metrics.csv") == 0 ||
                   strcmp(name, "metrics.jsonl") == 0;
    if (!(replaced && link(from, to) == 0) && rename(from, to) != 0)
        return fh_error_set(err, FH_ERR_FAILURE, "cannot move %s to %s: %s", from, to,
                            strerror(errno));
    fh_format_append(a->names, sizeof a->names, "%s%s", a->n ? ", " : "", name);
    a->n++;
    return FH_OK;
}

/* The run files of the directory, sorted (names separated by '\n'). */
static int list_run_files(const char *out, char ***names_out)
{
    *names_out = NULL;
    DIR *d = opendir(out);
    if (!d)
        return -1;
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_run_file(e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(names, (size_t)cap * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of names */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    *names_out = names;
    return n;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- metrics rows ---- */

/* The iteration a row names (csv: the first field; jsonl: "iteration":N), or -1. A
 * row without its newline (cut by a kill or a full disk) is -1. */
static long long row_iteration(const char *line, int jsonl)
{
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n')
        return -1;
    const char *p = line;
    if (jsonl) {
        const char *key = "{\"iteration\":";
        if (strncmp(line, key, strlen(key)) != 0)
            return -1;
        p = line + strlen(key);
    }
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 1 || *end != ',')
        return -1;
    return v;
}

/* Reads path's rows: *kept (malloc'd, may be NULL) gets the complete rows of
 * iterations 1..iteration in order; returns 1 when anything else is there (later rows,
 * a cut or unreadable row), 0 when the rows are exactly kept (or there is no file), -1
 * with err set when unreadable (or not a regular file: a FIFO would block the read). */
static int scan_rows(const char *path, int jsonl, int64_t iteration, char **kept,
                     size_t *kept_len, fh_error *err)
{
    *kept = NULL;
    *kept_len = 0;
    fh_error open_err;
    FILE *f = fh_fopen_regular(path, "metrics file", O_RDONLY, &open_err);
    if (!f) {
        if (errno == ENOENT)
            return 0;
        if (err)
            *err = open_err;
        return -1;
    }
    FILE *mem = open_memstream(kept, kept_len);
    if (!mem) {
        fclose(f);
        fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int other = 0, first = 1;
    long long last = 0;
    while (getline(&line, &cap, f) > 0) {
        if (!jsonl && first && strncmp(line, "iteration,", 10) == 0) {
            first = 0;
            continue; /* the header is rewritten */
        }
        first = 0;
        long long it = row_iteration(line, jsonl);
        if (it >= 1 && it <= iteration && it > last) {
            fputs(line, mem);
            last = it;
        } else {
            other = 1;
        }
    }
    int failed = ferror(f);
    free(line);
    fclose(f);
    if (fclose(mem) != 0 || failed) {
        int e = errno;
        free(*kept);
        *kept = NULL;
        *kept_len = 0;
        fh_error_set(err, FH_ERR_FAILURE, "cannot read %s: %s", path, strerror(e));
        return -1;
    }
    return other;
}

/* Removes path.tmp when it is a regular file (ours; anything else there was refused). */
static void remove_tmp(const char *path)
{
    char tmp[FH_RUN_DIR_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (is_regular(tmp))
        unlink(tmp);
}

/* Writes text1 then text2 (either may be NULL) to path.tmp, complete and closed; a
 * failure (a full disk, a file size limit) leaves no .tmp behind. */
static fh_status prepare_tmp(const char *path, const char *text1, const char *text2,
                             fh_error *err)
{
    char tmp[FH_RUN_DIR_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = fh_open_regular(tmp, "run directory's temporary file", O_WRONLY | O_CREAT |
                             O_TRUNC, err);
    if (fd < 0)
        return err ? err->status : FH_ERR_FAILURE;
    fh_status st = FH_OK;
    if (text1)
        st = fh_append_whole(fd, tmp, text1, err);
    if (st == FH_OK && text2)
        st = fh_append_whole(fd, tmp, text2, err);
    if (close(fd) != 0 && st == FH_OK) {
        int e = errno;
        st = fh_error_set(err, FH_ERR_FAILURE, "cannot write %s: %s%s", tmp, strerror(e),
                          fh_write_error_hint(e));
    }
    if (st != FH_OK)
        unlink(tmp);
    return st;
}

/* path.tmp becomes path. */
static fh_status commit_tmp(const char *path, fh_error *err)
{
    char tmp[FH_RUN_DIR_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove_tmp(path);
        return fh_error_set(err, FH_ERR_FAILURE, "cannot rename %s to %s: %s", tmp, path,
                            strerror(e));
    }
    return FH_OK;
}

/* ---- open ---- */

/* Whether the checkpoint path lies in the directory out. */
static int resume_is_in(const char *resume, const char *out)
{
    char dir[FH_CONFIG_STRING_MAX];
    snprintf(dir, sizeof dir, "%s", resume);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    char a[PATH_MAX], b[PATH_MAX];
    return realpath(dir, a) && realpath(out, b) && strcmp(a, b) == 0;
}

/* A fresh run (or a resume from elsewhere) into a directory with a run's files: with a
 * NULL, refused unless force; with a, moved aside (force). */
static fh_status clear_for_new_run(const fh_train_config *cfg, aside *a, char *note,
                                   size_t note_size, fh_error *err)
{
    char **names;
    int n = list_run_files(cfg->out, &names);
    if (n < 0)
        return fh_error_set(err, FH_ERR_INPUT, "cannot read run directory %s: %s", cfg->out,
                            strerror(errno));
    fh_status st = FH_OK;
    if (n > 0 && !cfg->force && !a) {
        char list[512] = "";
        for (int i = 0; i < n && i < 6; i++)
            fh_format_append(list, sizeof list, "%s%s", i ? ", " : "", names[i]);
        if (n > 6)
            fh_format_append(list, sizeof list, ", ... (%d files)", n);
        st = fh_error_set(err, FH_ERR_INPUT,
                          "run directory %s already holds %s run's files (%s); choose a new "
                          "--out, or pass --force to move them into %s/superseded-<time>/ and "
                          "%s there",
                          cfg->out, cfg->resume[0] ? "another" : "a", list, cfg->out,
                          cfg->resume[0] ? "resume" : "start over");
    }
    for (int i = 0; st == FH_OK && a && i < n; i++)
        st = move_aside(a, names[i], err);
    free_names(names, n);
    if (st == FH_OK && a && a->n)
        fh_format_append(note, note_size, "%s--force: moved the earlier run's files (%s) into %s/",
               note[0] ? "; " : "", a->names, a->dir);
    return st;
}

/* Resume in place: moves the history after iteration aside (later_rows[k]: the metrics
 * file k holds rows past it, scan_rows). */
static fh_status set_aside_later(const char *out, int64_t iteration, aside *a,
                                 const int later_rows[2], char *note, size_t note_size,
                                 fh_error *err)
{
    const char *files[2] = {"metrics.csv", "metrics.jsonl"};
    char **names;
    int n = list_run_files(out, &names);
    if (n < 0)
        return fh_error_set(err, FH_ERR_INPUT, "cannot read run directory %s: %s", out,
                            strerror(errno));
    /* which checkpoints lie past the iteration */
    int *later = calloc((size_t)(n ? n : 1), sizeof *later);
    if (!later) {
        free_names(names, n);
        return fh_error_set(err, FH_ERR_FAILURE, "out of memory");
    }
    int any = later_rows[0] || later_rows[1], end_moved = 0;
    for (int i = 0; i < n; i++) {
        long long c = checkpoint_number(names[i]);
        if (c >= 0) {
            later[i] = c > iteration;
        } else if (strcmp(names[i], "final.safetensors") == 0 ||
                   strcmp(names[i], "interrupted.safetensors") == 0 ||
                   strcmp(names[i], "best.safetensors") == 0) {
            char path[FH_RUN_DIR_PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", out, names[i]);
            long long ci = checkpoint_iteration(path);
            later[i] = ci < 0 || ci > iteration; /* unreadable: set aside, not overwritten */
            end_moved |= later[i] && names[i][0] == 'f';
        }
        any |= later[i];
    }
    fh_status st = FH_OK;
    if (any) {
        for (int i = 0; st == FH_OK && i < n; i++) {
            int is_metrics = strcmp(names[i], files[0]) == 0 || strcmp(names[i], files[1]) == 0;
            int move = later[i] || (is_metrics && (later_rows[0] || later_rows[1])) ||
                       strcmp(names[i], "config.json") == 0 ||
                       (end_moved && (strcmp(names[i], "eval.json") == 0 ||
                                      strcmp(names[i], "returns.csv") == 0 ||
                                      strcmp(names[i], "report.html") == 0));
            if (move)
                st = move_aside(a, names[i], err);
        }
        if (st == FH_OK)
            fh_format_append(note, note_size, "%sresuming at iteration %lld: moved the later history "
                   "(%s) into %s/; the metrics keep the rows up to iteration %lld",
                   note[0] ? "; " : "", (long long)iteration, a->names, a->dir,
                   (long long)iteration);
    }
    free(later);
    free_names(names, n);
    return st;
}

fh_status fh_run_dir_open(fh_run_dir *rd, const fh_train_config *cfg, const char *config_json,
                          int64_t iteration, const char *const *own, int n_own, fh_error *err)
{
    memset(rd, 0, sizeof *rd);
    rd->lock_fd = -1;
    if (n_own < 0 || n_own > FH_METRICS_MAX_OWN)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: %d metrics columns of the learner's "
                            "(at most %d)", __FILE__, __LINE__, n_own, FH_METRICS_MAX_OWN);
    for (int i = 0; i < n_own; i++)
        rd->own[i] = own[i];
    rd->n_own = n_own;
    rd->metrics_fd[0] = rd->metrics_fd[1] = -1;
    fh_status st = fh_make_dirs(cfg->out, err);
    if (st != FH_OK)
        return st;
    if ((st = take_lock(rd, cfg->out, err)) != FH_OK)
        return st;
    st = remove_stale_tmp(cfg->out, rd->note, sizeof rd->note, err);

    /* What stays is decided and the new files written as .tmp first: nothing is moved
     * aside unless they could be written (a full disk leaves the directory as it was). */
    aside a;
    memset(&a, 0, sizeof a);
    a.out = cfg->out;
    char *kept[2] = {NULL, NULL};
    size_t kept_len[2] = {0, 0};
    int later_rows[2] = {0, 0};
    int in_place = cfg->resume[0] && resume_is_in(cfg->resume, cfg->out);
    char config_path[FH_RUN_DIR_PATH_MAX];
    snprintf(config_path, sizeof config_path, "%s/config.json", cfg->out);
    snprintf(rd->csv_path, sizeof rd->csv_path, "%s/metrics.csv", cfg->out);
    snprintf(rd->jsonl_path, sizeof rd->jsonl_path, "%s/metrics.jsonl", cfg->out);
    const char *paths[3] = {config_path, rd->csv_path, rd->jsonl_path};
    for (int k = 0; st == FH_OK && in_place && k < 2; k++) {
        later_rows[k] = scan_rows(paths[1 + k], k, iteration, &kept[k], &kept_len[k], err);
        if (later_rows[k] < 0)
            st = err ? err->status : FH_ERR_FAILURE;
    }
    if (st == FH_OK && !in_place) /* refused before anything is written */
        st = clear_for_new_run(cfg, NULL, rd->note, sizeof rd->note, err);
    char header[1024] = "";
    for (int i = 0; i < N_COMMON + n_own; i++)
        fh_format_append(header, sizeof header, "%s%s", i ? "," : "",
                         i < N_COMMON ? COMMON_COLUMNS[i] : own[i - N_COMMON]);
    fh_format_append(header, sizeof header, "\n");
    if (st == FH_OK)
        st = prepare_tmp(config_path, config_json ? config_json : "{}\n", NULL, err);
    if (st == FH_OK)
        st = prepare_tmp(rd->csv_path, header, kept[0], err);
    if (st == FH_OK)
        st = prepare_tmp(rd->jsonl_path, kept[1], NULL, err);
    free(kept[0]);
    free(kept[1]);
    if (st == FH_OK)
        st = in_place ? set_aside_later(cfg->out, iteration, &a, later_rows, rd->note,
                                        sizeof rd->note, err)
                      : clear_for_new_run(cfg, &a, rd->note, sizeof rd->note, err);
    for (int k = 0; st == FH_OK && k < 3; k++)
        st = commit_tmp(paths[k], err);
    /* O_APPEND: each row lands at the end in one write (fh_append_whole) */
    rd->metrics_open = 1; /* from here fh_run_dir_close closes what opened */
    for (int k = 0; st == FH_OK && k < 2; k++) {
        rd->metrics_fd[k] = fh_open_regular(paths[1 + k], "metrics file", O_WRONLY | O_APPEND,
                                            err);
        if (rd->metrics_fd[k] < 0)
            st = err ? err->status : FH_ERR_FAILURE;
    }
    if (st != FH_OK) {
        for (int k = 0; k < 3; k++) /* the .tmp files not committed */
            remove_tmp(paths[k]);
        /* what was moved aside stays there, and the message must say so */
        if (a.n)
            fh_error_prefix(err, "(%s were moved into %s/) ", a.names, a.dir);
        fh_run_dir_close(rd);
    }
    return st;
}

/* ---- rows ---- */

int fh_run_dir_row(const fh_run_dir *rd, const fh_iteration_metrics *m, const char **names,
                   double *values)
{
    const double common[N_COMMON] = {
        (double)m->iteration, (double)m->global_step, m->lr, m->collect_seconds,
        m->update_seconds, m->steps_per_second, m->collect_steps_per_second,
        (double)m->episodes_finished, m->mean_episode_return, m->mean_episode_length,
        m->mean_reward, m->costs, m->turnover, (double)m->reversals,
        (double)m->barrier_profit_take, (double)m->barrier_stop_loss,
        (double)m->barrier_time_limit, m->action_entropy};
    _Static_assert(N_COMMON == 18, "common[] lists every common column");
    _Static_assert(N_COMMON + FH_METRICS_MAX_OWN == FH_RUN_DIR_MAX_COLUMNS,
                   "run_dir.h's column bound counts the common columns");
    for (int i = 0; i < N_COMMON; i++) {
        names[i] = COMMON_COLUMNS[i];
        values[i] = common[i];
    }
    for (int i = 0; i < rd->n_own; i++) {
        names[N_COMMON + i] = rd->own[i];
        values[N_COMMON + i] = m->own[i];
    }
    return N_COMMON + rd->n_own;
}

fh_status fh_run_dir_write_metrics(fh_run_dir *rd, const fh_iteration_metrics *m, fh_error *err)
{
    if (!rd->metrics_open)
        return FH_OK; /* no run directory opened: no metrics */
    const char *names[FH_RUN_DIR_MAX_COLUMNS];
    double values[FH_RUN_DIR_MAX_COLUMNS];
    int n = fh_run_dir_row(rd, m, names, values);
    char csv[4096] = "", jsonl[8192] = "{";
    for (int i = 0; i < n; i++) {
        const char *col = names[i];
        if (isfinite(values[i])) {
            fh_format_append(csv, sizeof csv, "%s%.9g", i ? "," : "", values[i]);
            fh_format_append(jsonl, sizeof jsonl, "%s\"%s\":%.9g", i ? "," : "", col, values[i]);
        } else {
            fh_format_append(csv, sizeof csv, "%s", i ? "," : "");
            fh_format_append(jsonl, sizeof jsonl, "%s\"%s\":null", i ? "," : "", col);
        }
    }
    fh_format_append(csv, sizeof csv, "\n");
    fh_format_append(jsonl, sizeof jsonl, "}\n");
    /* both files or neither: the csv row is cut back when the jsonl one fails */
    off_t csv_before, jsonl_before;
    fh_status st = fh_append_whole_at(rd->metrics_fd[0], rd->csv_path, csv, &csv_before, err);
    if (st == FH_OK &&
        (st = fh_append_whole_at(rd->metrics_fd[1], rd->jsonl_path, jsonl, &jsonl_before,
                                 err)) != FH_OK &&
        ftruncate(rd->metrics_fd[0], csv_before) != 0)
        fh_error_prefix(err, "(%s keeps this iteration's row) ", rd->csv_path);
    if (st != FH_OK)
        fh_error_prefix(err, "the run stops: ");
    return st;
}

/* ---- close ---- */

fh_status fh_run_dir_finish(fh_run_dir *rd, fh_error *err)
{
    const char *paths[2] = {rd->csv_path, rd->jsonl_path};
    fh_status st = FH_OK;
    for (int k = 0; rd->metrics_open && k < 2; k++) {
        if (rd->metrics_fd[k] < 0)
            continue;
        if (close(rd->metrics_fd[k]) != 0 && st == FH_OK)
            st = fh_error_set(err, FH_ERR_FAILURE, "cannot write %s: %s%s", paths[k],
                              strerror(errno), fh_write_error_hint(errno));
        rd->metrics_fd[k] = -1;
    }
    rd->metrics_open = 0;
    return st;
}

void fh_run_dir_note_last_checkpoint(fh_error *err, const char *last, const char *resume)
{
    if (!err)
        return;
    size_t used = strlen(err->message);
    if (used + 1 >= sizeof err->message)
        return;
    const char *good = last && last[0] ? last : resume;
    if (good && good[0])
        snprintf(err->message + used, sizeof err->message - used,
                 "; no checkpoint written for it, the last good one is %.400s (intact)", good);
    else
        snprintf(err->message + used, sizeof err->message - used,
                 "; no checkpoint yet: this run has written none, so there is nothing to "
                 "resume from (start it again once the cause is fixed)");
}

void fh_run_dir_close(fh_run_dir *rd)
{
    fh_tfevents_close(&rd->tb);
    for (int k = 0; rd->metrics_open && k < 2; k++)
        if (rd->metrics_fd[k] >= 0)
            close(rd->metrics_fd[k]);
    if (rd->locked && rd->lock_fd >= 0)
        close(rd->lock_fd); /* releases the flock */
    memset(rd, 0, sizeof *rd);
    rd->lock_fd = -1;
    rd->metrics_fd[0] = rd->metrics_fd[1] = -1;
}
