/* rendezvous.c — see rendezvous.h. */
#include "dist/rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "foxhunt/hash.h"
#include "foxhunt/timing.h"

#define RDV_MAGIC "FHNCCLID"
#define RDV_VERSION 1u
#define RDV_HEADER 24 /* magic 8, version, world, id bytes, reserved: 4 each */
#define ARRIVAL_BYTES 17 /* 16 hex digits and a newline */


uint64_t fh_rendezvous_nonce(const void *id, size_t n)
{
    return fh_fnv1a(id, n, FH_FNV1A_OFFSET);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

size_t fh_rendezvous_encode(unsigned char *out, size_t out_size, int world, const void *id,
                            size_t n)
{
    size_t size = RDV_HEADER + n + 8;
    if (n > FH_RDV_ID_MAX || out_size < size || world < 1)
        return 0;
    memcpy(out, RDV_MAGIC, 8);
    put_u32(out + 8, RDV_VERSION);
    put_u32(out + 12, (uint32_t)world);
    put_u32(out + 16, (uint32_t)n);
    put_u32(out + 20, 0);
    memcpy(out + RDV_HEADER, id, n);
    uint64_t sum = fh_fnv1a(out, RDV_HEADER + n, FH_FNV1A_OFFSET);
    memcpy(out + RDV_HEADER + n, &sum, 8);
    return size;
}

fh_status fh_rendezvous_decode(const unsigned char *buf, size_t size, int world, void *id,
                               size_t n, const char *path, fh_error *err)
{
    const char *hint = "remove it and start every rank again with a new --rendezvous path";
    if (size < RDV_HEADER || memcmp(buf, RDV_MAGIC, 8) != 0)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s (%zu bytes) is not a foxhunt "
                            "rendezvous file: %s", path, size, hint);
    if (get_u32(buf + 8) != RDV_VERSION)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s has version %u, this foxhunt "
                            "reads %u: every rank must run the same foxhunt", path,
                            get_u32(buf + 8), RDV_VERSION);
    if (get_u32(buf + 16) != n || size != RDV_HEADER + n + 8)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s is %zu bytes holding a %u-byte "
                            "id; expected %zu bytes and a %zu-byte id: %s", path, size,
                            get_u32(buf + 16), RDV_HEADER + n + 8, n, hint);
    uint64_t sum;
    memcpy(&sum, buf + RDV_HEADER + n, 8);
    if (sum != fh_fnv1a(buf, RDV_HEADER + n, FH_FNV1A_OFFSET))
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s fails its checksum (damaged): "
                            "%s", path, hint);
    if (get_u32(buf + 20) != 0) /* written 0: another writer's file, whatever it means */
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s has %u in its reserved "
                            "field (foxhunt writes 0): not written by this foxhunt: %s", path,
                            get_u32(buf + 20), hint);
    if (get_u32(buf + 12) != (uint32_t)world)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s was written by rank 0 of a run "
                            "of %u ranks; this rank was started with world size %d: give every "
                            "rank the same --world", path, get_u32(buf + 12), world);
    memcpy(id, buf + RDV_HEADER, n);
    return FH_OK;
}

static void sleep_seconds(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* bytes into path through a temporary file beside it: rename (replace) or link (never
 * over an existing file: EEXIST is FH_ERR_INPUT). The temporary file is created afresh
 * (O_EXCL after removing whatever had its name): a FIFO left at that name would block an
 * open for writing until a reader came (issue 32). */
static fh_status write_atomic(const char *path, const void *bytes, size_t n, int no_replace,
                              fh_error *err)
{
    char tmp[FH_RDV_PATH_CHARS + 32];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous path is too long: %.200s...", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return fh_error_set(err, FH_ERR_INPUT, "cannot write %s: %s (the rendezvous file's "
                            "directory must exist and be writable)", tmp, strerror(e));
    }
    int ok = fwrite(bytes, 1, n, f) == n;
    ok &= fflush(f) == 0;
    ok &= fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok) {
        int e = errno;
        unlink(tmp);
        return fh_error_set(err, FH_ERR_FAILURE, "writing %s failed: %s", tmp, strerror(e));
    }
    int rc = no_replace ? link(tmp, path) : rename(tmp, path);
    int e = errno;
    if (no_replace || rc != 0)
        unlink(tmp);
    if (rc != 0 && no_replace && e == EEXIST)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s exists already (left by an "
                            "earlier run, or another run uses it): remove it, or give every "
                            "rank a new --rendezvous path", path);
    if (rc != 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s %s to %s failed: %s",
                            no_replace ? "linking" : "renaming", tmp, path, strerror(e));
    return FH_OK;
}

/* What is at a path that is not a regular file, for messages. */
static const char *kind_of(mode_t m)
{
    return S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISDIR(m) ? "a directory" : S_ISCHR(m) ?
           "a character device" : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" :
           "something else";
}

#define READ_ABSENT 0
#define READ_OK 1
#define READ_ERROR (-1)        /* errno says why */
#define READ_NOT_REGULAR (-2) /* *got holds the st_mode */

/* The whole file into buf (at most size bytes; *got: how many). Opened with O_NONBLOCK
 * and checked with fstat before a byte is read: a FIFO, device or directory in the file's
 * place must never block a rank past --dist-timeout (issue 32), and the check is on what
 * was opened, so a name swapped in between cannot slip through. READ_NOT_REGULAR leaves
 * the file's mode in *got. */
static int read_small(const char *path, unsigned char *buf, size_t size, size_t *got)
{
    *got = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? READ_ABSENT : READ_ERROR;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return READ_ERROR;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        *got = (size_t)sb.st_mode;
        return READ_NOT_REGULAR;
    }
    while (*got < size) {
        ssize_t r = read(fd, buf + *got, size - *got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return READ_ERROR;
        }
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    close(fd);
    return READ_OK;
}

static void side_path(char *out, size_t size, const char *path, const char *suffix, int rank)
{
    if (rank >= 0)
        snprintf(out, size, "%s.%s%d", path, suffix, rank);
    else
        snprintf(out, size, "%s.%s", path, suffix);
}

fh_status fh_rendezvous_publish(const char *path, int world, const void *id, size_t n,
                                fh_error *err)
{
    unsigned char buf[RDV_HEADER + FH_RDV_ID_MAX + 8];
    size_t size = fh_rendezvous_encode(buf, sizeof buf, world, id, n);
    if (!size)
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: an id of %zu bytes for world %d",
                            __FILE__, __LINE__, n, world);
    if (strlen(path) >= FH_RDV_PATH_CHARS)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous path is too long: %.200s...", path);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s exists already (left by an "
                            "earlier run, or another run uses it): remove it, or give every "
                            "rank a new --rendezvous path", path);
    char side[FH_RDV_PATH_CHARS + 32];
    side_path(side, sizeof side, path, "abort", -1);
    unlink(side); /* a stale failure must not stop this run */
    for (int r = 0; r < world; r++) {
        side_path(side, sizeof side, path, "rank", r);
        unlink(side);
    }
    return write_atomic(path, buf, size, 1, err);
}

fh_status fh_rendezvous_wait(const char *path, int world, void *id, size_t n,
                             double timeout_s, fh_error *err)
{
    unsigned char buf[RDV_HEADER + FH_RDV_ID_MAX + 8 + 1];
    double start = fh_clock_seconds();
    for (;;) {
        size_t got = 0;
        int rc = read_small(path, buf, sizeof buf, &got);
        if (rc == READ_NOT_REGULAR)
            return fh_error_set(err, FH_ERR_INPUT, "rendezvous file %s is %s, not a regular "
                                "file: remove it and start every rank again with a new "
                                "--rendezvous path", path, kind_of((mode_t)got));
        if (rc == READ_ERROR)
            return fh_error_set(err, FH_ERR_INPUT, "cannot read rendezvous file %s: %s", path,
                                strerror(errno));
        if (rc == READ_OK)
            return fh_rendezvous_decode(buf, got, world, id, n, path, err);
        char message[FH_ERROR_MESSAGE_MAX / 2];
        if (fh_rendezvous_abort_read(path, message, sizeof message))
            return fh_error_set(err, FH_ERR_FAILURE, "another rank failed before the run "
                                "started: %s (if that is an earlier run's, remove %s.abort or "
                                "give a new --rendezvous path)", message, path);
        double waited = fh_clock_seconds() - start;
        if (waited >= timeout_s)
            return fh_error_set(err, FH_ERR_FAILURE, "rank 0 wrote no rendezvous file %s within "
                                "%.0f s: is rank 0 running, with the same --rendezvous path on "
                                "a filesystem every rank sees? (--dist-timeout sets the wait)",
                                path, timeout_s);
        sleep_seconds(FH_RDV_POLL_SECONDS);
    }
}

fh_status fh_rendezvous_arrive(const char *path, int rank, uint64_t nonce, fh_error *err)
{
    char side[FH_RDV_PATH_CHARS + 32], text[ARRIVAL_BYTES + 1];
    if (strlen(path) >= FH_RDV_PATH_CHARS)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous path is too long: %.200s...", path);
    side_path(side, sizeof side, path, "rank", rank);
    snprintf(text, sizeof text, "%016llx\n", (unsigned long long)nonce);
    return write_atomic(side, text, ARRIVAL_BYTES, 0, err);
}

/* 1 when rank's arrival holds nonce; *odd (may be NULL) set to 1 when something that
 * is not a regular file stands in its place (no arrival: the rank's own rename replaces
 * it). */
static int arrived(const char *path, int rank, uint64_t nonce, int *odd)
{
    char side[FH_RDV_PATH_CHARS + 32], want[ARRIVAL_BYTES + 1];
    unsigned char buf[ARRIVAL_BYTES + 1];
    side_path(side, sizeof side, path, "rank", rank);
    snprintf(want, sizeof want, "%016llx\n", (unsigned long long)nonce);
    size_t got = 0;
    int rc = read_small(side, buf, sizeof buf, &got);
    if (odd && rc == READ_NOT_REGULAR)
        *odd = 1;
    return rc == READ_OK && got == ARRIVAL_BYTES && memcmp(buf, want, ARRIVAL_BYTES) == 0;
}

fh_status fh_rendezvous_barrier(const char *path, int world, uint64_t nonce,
                                double timeout_s, fh_error *err)
{
    double start = fh_clock_seconds();
    for (;;) {
        char message[FH_ERROR_MESSAGE_MAX / 2];
        if (fh_rendezvous_abort_read(path, message, sizeof message))
            return fh_error_set(err, FH_ERR_FAILURE, "another rank failed before the run "
                                "started: %s", message);
        int missing = 0, first = -1;
        for (int r = 0; r < world; r++)
            if (!arrived(path, r, nonce, NULL) && missing++ == 0)
                first = r;
        if (!missing)
            return FH_OK;
        if (fh_clock_seconds() - start >= timeout_s) {
            char list[256] = "";
            size_t used = 0;
            int odd = 0;
            for (int r = first; r < world && used + 16 < sizeof list; r++)
                if (!arrived(path, r, nonce, &odd))
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                             used ? ", " : "", r);
            return fh_error_set(err, FH_ERR_FAILURE, "%d of %d ranks did not arrive at %s "
                                "within %.0f s (missing: %s%s%s%s): were they started, with "
                                "the same --rendezvous and --world? (--dist-timeout sets the "
                                "wait)", missing, world, path, timeout_s, list,
                                odd ? "; an arrival file " : "", odd ? path : "",
                                odd ? ".rank<r> of a missing rank is not a regular file: "
                                      "remove it" : "");
        }
        sleep_seconds(FH_RDV_POLL_SECONDS);
    }
}

void fh_rendezvous_remove(const char *path, int world)
{
    char side[FH_RDV_PATH_CHARS + 32];
    unlink(path);
    for (int r = 0; r < world; r++) {
        side_path(side, sizeof side, path, "rank", r);
        unlink(side);
    }
}

fh_status fh_rendezvous_abort_write(const char *path, const char *message, fh_error *err)
{
    char side[FH_RDV_PATH_CHARS + 32];
    if (strlen(path) >= FH_RDV_PATH_CHARS)
        return fh_error_set(err, FH_ERR_INPUT, "rendezvous path is too long: %.200s...", path);
    side_path(side, sizeof side, path, "abort", -1);
    fh_status st = write_atomic(side, message, strlen(message), 1, err);
    if (st == FH_ERR_INPUT && access(side, F_OK) == 0) { /* an earlier failure: the cause */
        fh_error_clear(err);
        return FH_OK;
    }
    return st;
}

int fh_rendezvous_abort_read(const char *path, char *message, size_t size)
{
    char side[FH_RDV_PATH_CHARS + 32];
    side_path(side, sizeof side, path, "abort", -1);
    size_t got = 0;
    if (size == 0)
        return 0;
    int rc = read_small(side, (unsigned char *)message, size - 1, &got);
    if (rc == READ_NOT_REGULAR) { /* stop, as for an abort, rather than wait on it */
        snprintf(message, size, "%s is %s, not a regular file: remove it", side,
                 kind_of((mode_t)got));
        return 1;
    }
    if (rc != READ_OK)
        return 0;
    message[got] = '\0';
    return 1;
}
