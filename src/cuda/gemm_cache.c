/* gemm_cache.c — the timed matmul algorithms on disk (gemm_cache.h). Plain C, no CUDA
 * call: tests/cuda/test_gemm_cache.c runs it on machines without a GPU. */
#include "cuda/gemm_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "foxhunt/hash.h"
#include "foxhunt/timing.h"
#include "foxhunt/precision.h"

/* File: MAGIC (8 bytes), the format version and the count (uint32 each), the FNV-1a of
 * the records (uint64), then count records of RECORD_BYTES, fields in the order of
 * fh_gemm_cache_entry, each little-endian as the host writes it (the file never leaves
 * the machine that wrote it: its name carries the GPU model). */
static const char MAGIC[8] = {'F', 'H', 'G', 'E', 'M', 'M', 'C', '\0'};
/* version 2 (session 23): y_bf16, and bf16 entries (the bf16 collection's critic) */
#define FORMAT_VERSION 2u
#define HEADER_BYTES 24
#define N_INTS 6
#define RECORD_BYTES (N_INTS * 4 + 8 + 3 * 4 + 8 * 8)
#define ROWS_AT (N_INTS * 4)
#define ALIGNS_AT (ROWS_AT + 8)
#define ALGO_AT (ALIGNS_AT + 3 * 4)

static void pack(unsigned char *p, const fh_gemm_cache_entry *e)
{
    int32_t ints[N_INTS] = {e->n_in, e->n_out, e->relu, e->bias, e->precision, e->y_bf16};
    uint32_t aligns[3] = {e->align_w, e->align_x, e->align_y};
    memcpy(p, ints, sizeof ints);
    memcpy(p + ROWS_AT, &e->rows, 8);
    memcpy(p + ALIGNS_AT, aligns, sizeof aligns);
    memcpy(p + ALGO_AT, e->algo, sizeof e->algo);
}

static void unpack(fh_gemm_cache_entry *e, const unsigned char *p)
{
    int32_t ints[N_INTS];
    uint32_t aligns[3];
    memcpy(ints, p, sizeof ints);
    memcpy(&e->rows, p + ROWS_AT, 8);
    memcpy(aligns, p + ALIGNS_AT, sizeof aligns);
    memcpy(e->algo, p + ALGO_AT, sizeof e->algo);
    e->n_in = ints[0];
    e->n_out = ints[1];
    e->relu = ints[2];
    e->bias = ints[3];
    e->precision = ints[4];
    e->y_bf16 = ints[5];
    e->align_w = aligns[0];
    e->align_x = aligns[1];
    e->align_y = aligns[2];
}

static int power_of_two_upto_256(uint32_t a)
{
    return a >= 1 && a <= 256 && (a & (a - 1)) == 0;
}

/* The fields a matmul could have (a record that passed the hash but not this was
 * written by another program). */
static int plausible(const fh_gemm_cache_entry *e)
{
    return e->n_in > 0 && e->n_out > 0 && e->rows > 0 && (e->relu == 0 || e->relu == 1) &&
           (e->bias == 0 || e->bias == 1) && e->precision >= FH_PRECISION_FP32 &&
           e->precision <= FH_PRECISION_BF16 && (e->y_bf16 == 0 || e->y_bf16 == 1) &&
           (!e->y_bf16 || e->precision == FH_PRECISION_BF16) &&
           power_of_two_upto_256(e->align_w) && power_of_two_upto_256(e->align_x) &&
           power_of_two_upto_256(e->align_y);
}

int fh_gemm_cache_same_shape(const fh_gemm_cache_entry *a, const fh_gemm_cache_entry *b)
{
    return a->n_in == b->n_in && a->n_out == b->n_out && a->rows == b->rows &&
           a->relu == b->relu && a->bias == b->bias && a->precision == b->precision &&
           a->y_bf16 == b->y_bf16 && a->align_w == b->align_w && a->align_x == b->align_x &&
           a->align_y == b->align_y;
}

int fh_gemm_cache_path(char *out, size_t n, const char *dir, const char *device_name,
                       size_t cublaslt_version)
{
    uint64_t h = fh_fnv1a(device_name, strlen(device_name), FH_FNV1A_OFFSET);
    uint64_t v = (uint64_t)cublaslt_version;
    h = fh_fnv1a(&v, sizeof v, h);
    /* the format version in the name: binaries of two formats on one machine keep a file
     * each, instead of each reading the other's as foreign and rewriting it */
    int k = snprintf(out, n, "%s/gemm-v%u-%016llx.bin", dir, FORMAT_VERSION,
                     (unsigned long long)h);
    return k > 0 && (size_t)k < n;
}

static int refuse(char *why, size_t why_n, const char *path, const char *what)
{
    if (why && why_n)
        snprintf(why, why_n, "%s: %s", path, what);
    return 0;
}

int fh_gemm_cache_read(const char *path, fh_gemm_cache_entry *e, int max, char *why,
                       size_t why_n)
{
    /* O_NONBLOCK: a FIFO put in the file's place must not hang the trainer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return refuse(why, why_n, path, "absent");
    struct stat st;
    FILE *f = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? fdopen(fd, "rb") : NULL;
    if (!f) {
        close(fd);
        return refuse(why, why_n, path, "not a regular file");
    }
    unsigned char head[HEADER_BYTES];
    int got = fread(head, 1, sizeof head, f) == sizeof head;
    uint32_t version = 0, count = 0;
    uint64_t want = 0;
    if (got) {
        memcpy(&version, head + 8, 4);
        memcpy(&count, head + 12, 4);
        memcpy(&want, head + 16, 8);
    }
    if (!got || memcmp(head, MAGIC, sizeof MAGIC) != 0) {
        fclose(f);
        return refuse(why, why_n, path, "not a gemm cache (magic)");
    }
    if (version != FORMAT_VERSION || count > FH_GEMM_CACHE_MAX || (int)count > max) {
        fclose(f);
        return refuse(why, why_n, path, "another format version, or too many entries");
    }
    size_t bytes = (size_t)count * RECORD_BYTES;
    unsigned char *body = malloc(bytes + 1);
    /* exactly count records: one byte more would be a longer (foreign) file */
    size_t read = body ? fread(body, 1, bytes + 1, f) : 0;
    fclose(f);
    if (!body || read != bytes || fh_fnv1a(body, bytes, FH_FNV1A_OFFSET) != want) {
        free(body);
        return refuse(why, why_n, path, "damaged (length or checksum)");
    }
    for (uint32_t i = 0; i < count; i++) {
        unpack(&e[i], body + (size_t)i * RECORD_BYTES);
        if (!plausible(&e[i])) {
            free(body);
            return refuse(why, why_n, path, "an entry no matmul could have");
        }
    }
    free(body);
    if (why && why_n)
        snprintf(why, why_n, "%s: %u entries", path, count);
    return (int)count;
}

/* ---- writers: under PATH.lock ---- */

/* The exclusive lock of path's writers (a file beside it); -1 when it cannot be had
 * within FH_GEMM_CACHE_LOCK_SECONDS. Polled with LOCK_NB, never a blocking flock: a
 * process stopped (SIGSTOP, a debugger) or hung while holding the lock made every other
 * process wait forever (issue 32); the caller goes on without the file instead. Opened
 * with O_NONBLOCK so that no FIFO in the lock's place can block the open either. */
static int lock_take(const char *path)
{
    char lock[1100];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
        return -1;
    int fd = open(lock, O_RDWR | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    double start = fh_clock_seconds(), pause_s = 0.001;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        double left = FH_GEMM_CACHE_LOCK_SECONDS - (fh_clock_seconds() - start);
        if (left <= 0)
            break;
        pause_s = pause_s * 2 < 0.05 ? pause_s * 2 : 0.05; /* 2, 4, ... 50 ms */
        double s = pause_s < left ? pause_s : left;
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&ts, NULL);
    }
    close(fd);
    return -1;
}

static void lock_drop(int fd)
{
    flock(fd, LOCK_UN);
    close(fd);
}

/* The n entries as the file, through a temporary file (mkstemp: a name no one else has)
 * renamed over path; 1 on success. */
static int write_entries(const char *path, const fh_gemm_cache_entry *all, int n)
{
    size_t bytes = (size_t)n * RECORD_BYTES;
    unsigned char *body = malloc(bytes + 1);
    char tmp[1100];
    if (!body || snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
        free(body);
        return 0;
    }
    for (int i = 0; i < n; i++)
        pack(body + (size_t)i * RECORD_BYTES, &all[i]);
    unsigned char head[HEADER_BYTES];
    uint32_t version = FORMAT_VERSION, count = (uint32_t)n;
    uint64_t sum = fh_fnv1a(body, bytes, FH_FNV1A_OFFSET);
    memcpy(head, MAGIC, sizeof MAGIC);
    memcpy(head + 8, &version, 4);
    memcpy(head + 12, &count, 4);
    memcpy(head + 16, &sum, 8);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    int ok = f != NULL;
    if (!f && fd >= 0)
        close(fd);
    if (f) {
        ok = fwrite(head, 1, sizeof head, f) == sizeof head &&
             fwrite(body, 1, bytes, f) == bytes;
        ok = (fclose(f) == 0) && ok;
        ok = ok && chmod(tmp, 0644) == 0 && rename(tmp, path) == 0;
    }
    if (fd >= 0 && !ok)
        remove(tmp);
    free(body);
    return ok;
}

/* e into all (n entries, room for FH_GEMM_CACHE_MAX): appended, the oldest dropped when
 * full. */
static void append(fh_gemm_cache_entry *all, int *n, const fh_gemm_cache_entry *e)
{
    if (*n == FH_GEMM_CACHE_MAX) {
        memmove(all, all + 1, (FH_GEMM_CACHE_MAX - 1) * sizeof *all);
        (*n)--;
    }
    all[(*n)++] = *e;
}

static int find_shape(const fh_gemm_cache_entry *all, int n, const fh_gemm_cache_entry *e)
{
    for (int j = 0; j < n; j++)
        if (fh_gemm_cache_same_shape(&all[j], e))
            return j;
    return -1;
}

/* path's writers' lock taken and its entries read into *all (room for
 * FH_GEMM_CACHE_MAX, the caller frees it), *n of them; the lock, or -1 (nothing to free). */
static int open_locked(const char *path, fh_gemm_cache_entry **all, int *n)
{
    *all = malloc(FH_GEMM_CACHE_MAX * sizeof **all);
    int lock = *all ? lock_take(path) : -1;
    if (lock < 0) {
        free(*all);
        *all = NULL;
        return -1;
    }
    *n = fh_gemm_cache_read(path, *all, FH_GEMM_CACHE_MAX, NULL, 0);
    return lock;
}

int fh_gemm_cache_merge(const char *path, const fh_gemm_cache_entry *add, int n_add,
                        int replace)
{
    fh_gemm_cache_entry *all;
    int n, lock = open_locked(path, &all, &n);
    if (lock < 0)
        return 0;
    for (int i = 0; i < n_add; i++) {
        if (!plausible(&add[i]))
            continue;
        int j = find_shape(all, n, &add[i]);
        if (j < 0)
            append(all, &n, &add[i]);
        else if (replace)
            all[j] = add[i];
    }
    int ok = write_entries(path, all, n);
    lock_drop(lock);
    free(all);
    return ok;
}

int fh_gemm_cache_settle(const char *path, fh_gemm_cache_entry *e, const uint64_t *refused)
{
    if (!plausible(e))
        return 0;
    fh_gemm_cache_entry *all;
    int n, lock = open_locked(path, &all, &n);
    if (lock < 0)
        return 0;
    int j = find_shape(all, n, e);
    int ok = 1;
    if (j >= 0 && !(refused && memcmp(all[j].algo, refused, sizeof all[j].algo) == 0)) {
        memcpy(e->algo, all[j].algo, sizeof e->algo); /* another process settled it first */
    } else {
        if (j >= 0)
            all[j] = *e;
        else
            append(all, &n, e);
        ok = write_entries(path, all, n);
    }
    lock_drop(lock);
    free(all);
    return ok;
}
