/* files.c — opening, reading and replacing files safely (include/foxhunt/files.h). */
#include "foxhunt/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- reading an input file whole ---- */
static const char *file_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO (named pipe)";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

static fh_status not_regular(const char *path, const char *what, mode_t m, fh_error *err)
{
    return fh_error_set(err, FH_ERR_INPUT,
                        "%s: is %s, not a regular file; give the path of a %s (foxhunt reads "
                        "its inputs whole, never from a pipe or a device)",
                        path, file_kind(m), what);
}

fh_status fh_read_regular_file(const char *path, const char *what, size_t max_bytes,
                               char **buf, size_t *len, fh_error *err)
{
    *buf = NULL;
    *len = 0;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: cannot open: %s; check the path", path,
                            strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return not_regular(path, what, sb.st_mode, err);
    /* O_NONBLOCK: should a FIFO have taken the name since the stat, open returns at once
     * (a regular file ignores the flag) and the fstat below refuses it */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return fh_error_set(err, FH_ERR_INPUT, "%s: cannot open: %s; check the path", path,
                            strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int e = errno;
        close(fd);
        if (!S_ISREG(sb.st_mode))
            return not_regular(path, what, sb.st_mode, err);
        return fh_error_set(err, FH_ERR_INPUT, "%s: cannot stat: %s", path, strerror(e));
    }
    if (max_bytes && (uint64_t)sb.st_size > (uint64_t)max_bytes) {
        close(fd);
        return fh_error_set(err, FH_ERR_INPUT, "%s: %lld bytes, more than the %zu a %s may "
                            "hold; give the right file", path, (long long)sb.st_size,
                            max_bytes, what);
    }
    size_t cap = (size_t)sb.st_size + 1, n = 0; /* + 1: EOF seen without a second pass */
    char *b = malloc(cap + 1);
    fh_status st = FH_OK;
    while (b) {
        if (n == cap) { /* the file grew while we read it */
            if (max_bytes && n > max_bytes) {
                st = fh_error_set(err, FH_ERR_INPUT, "%s: more than the %zu bytes a %s may "
                                  "hold; give the right file", path, max_bytes, what);
                break;
            }
            char *nb = cap < SIZE_MAX / 4 ? realloc(b, 2 * cap + 1) : NULL;
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t got = read(fd, b + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            st = fh_error_set(err, FH_ERR_INPUT, "%s: read error after %zu bytes: %s; check "
                              "the file", path, n, strerror(errno));
            break;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (!b)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory reading the file", path);
    if (st != FH_OK) {
        free(b);
        return st;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return FH_OK;
}

/* ---- opening a file that must be regular (a run's files, outputs) ---- */
static fh_status not_regular_open(const char *path, const char *what, mode_t m, fh_error *err)
{
    return fh_error_set(err, FH_ERR_INPUT,
                        "%s: is %s, not a regular file; foxhunt opens a %s only as a regular "
                        "file (a pipe would block it, a device would swallow or feed it "
                        "data): move it away or choose another path",
                        path, file_kind(m), what);
}

int fh_open_regular(const char *path, const char *what, int flags, fh_error *err)
{
    struct stat sb;
    /* refused before the open where the name already holds something else: opening a
     * device may itself do something (a tape rewinds, a terminal becomes ours) */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        not_regular_open(path, what, sb.st_mode, err);
        errno = EINVAL;
        return -1;
    }
    /* O_NONBLOCK: a FIFO that took the name since the stat opens at once for reading,
     * fails with ENXIO for writing, and the fstat below refuses it */
    int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
            not_regular_open(path, what, sb.st_mode, err);
        else
            fh_error_set(err, (flags & O_ACCMODE) == O_RDONLY ? FH_ERR_INPUT : FH_ERR_FAILURE,
                         "cannot open %s: %s%s", path, strerror(e), fh_write_error_hint(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        close(fd);
        not_regular_open(path, what, sb.st_mode, err);
        errno = EINVAL;
        return -1;
    }
    int fl;
    if (fstat(fd, &sb) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        fh_error_set(err, FH_ERR_FAILURE, "cannot open %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    return fd;
}

FILE *fh_fopen_regular(const char *path, const char *what, int flags, fh_error *err)
{
    int fd = fh_open_regular(path, what, flags, err);
    if (fd < 0)
        return NULL;
    const char *mode = (flags & O_ACCMODE) == O_RDONLY ? "r"
                       : (flags & O_APPEND)            ? "a"
                       : (flags & O_ACCMODE) == O_RDWR ? "r+"
                                                       : "w";
    FILE *f = fdopen(fd, mode);
    if (!f) {
        int e = errno;
        close(fd);
        fh_error_set(err, FH_ERR_FAILURE, "cannot open %s: %s", path, strerror(e));
        errno = e;
    }
    return f;
}

int fh_replace_with_tmp(FILE *f, int ok, int durable, const char *tmp, const char *path)
{
    int e = ok ? 0 : (errno ? errno : EIO);
    if (ok && (fflush(f) != 0 || ferror(f) || (durable && fsync(fileno(f)) != 0))) {
        ok = 0;
        e = errno ? errno : EIO;
    }
    if (fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        remove(tmp);
        return e;
    }
    fh_error ignored; /* a directory some file systems cannot fsync: the rename stands */
    if (durable)
        (void)fh_fsync_dir_of(path, &ignored);
    return 0;
}

fh_status fh_fsync_dir_of(const char *path, fh_error *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == path) {
        strcpy(dir, "/");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir)
            return FH_OK; /* cannot name it; the rename itself has happened */
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: cannot open directory %s to fsync: %s",
                            path, dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) /* some file systems cannot fsync directories */
        return fh_error_set(err, FH_ERR_FAILURE, "%s: fsync of directory %s failed: %s",
                            path, dir, strerror(e));
    return FH_OK;
}

/* ---- appending a row whole ---- */
fh_status fh_append_whole_at(int fd, const char *path, const char *text, off_t *before,
                             fh_error *err)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return fh_error_set(err, FH_ERR_FAILURE, "cannot write %s: %s", path, strerror(errno));
    *before = sb.st_size;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* a short write is followed by the one that fails (EFBIG, ENOSPC): what it
             * wrote is cut back, so that no reader keeps half a line */
            int e = n < 0 ? errno : EIO;
            int cut = done == 0 || ftruncate(fd, *before) == 0;
            return fh_error_set(err, FH_ERR_FAILURE, "cannot write %s: %s%s%s", path,
                                strerror(e), fh_write_error_hint(e),
                                cut ? "" : " (and cannot cut its partial last line)");
        }
        done += (size_t)n;
    }
    return FH_OK;
}

fh_status fh_append_whole(int fd, const char *path, const char *text, fh_error *err)
{
    off_t before;
    return fh_append_whole_at(fd, path, text, &before, err);
}
