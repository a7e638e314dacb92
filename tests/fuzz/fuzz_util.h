/* fuzz_util.h — what the libFuzzer harnesses share (tests/fuzz/README.md).
 *
 * foxhunt's readers take a path (they stat, open and read the file themselves, which is
 * part of what is tested), so each input is written to a per-process scratch file on a
 * memory file system (/dev/shm when writable, else $TMPDIR or /tmp) and the reader is
 * called on that path. FUZZ_REQUIRE states a property the library promises; a broken one
 * aborts, which libFuzzer reports as a crash with the input saved (assert() is not used:
 * the fuzz build may define NDEBUG). */
#ifndef FOXHUNT_FUZZ_UTIL_H
#define FOXHUNT_FUZZ_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_REQUIRE(cond, ...)                                                          \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: property broken: %s: ", __FILE__, __LINE__, #cond);  \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#define FUZZ_MAX_SCRATCH 4
static char fuzz_scratch_paths[FUZZ_MAX_SCRATCH][256];
static int fuzz_n_scratch = 0;

static void fuzz_remove_scratch(void)
{
    for (int i = 0; i < fuzz_n_scratch; i++)
        unlink(fuzz_scratch_paths[i]);
}

/* A scratch path for this process: DIR/fh-fuzz-NAME-PID.SUFFIX, removed at exit. */
static inline const char *fuzz_scratch_path(const char *name, const char *suffix)
{
    for (int i = 0; i < fuzz_n_scratch; i++) {
        char want[64];
        snprintf(want, sizeof want, "fh-fuzz-%s-", name);
        if (strstr(fuzz_scratch_paths[i], want))
            return fuzz_scratch_paths[i];
    }
    if (fuzz_n_scratch == FUZZ_MAX_SCRATCH)
        abort();
    const char *dir = "/dev/shm";
    if (access(dir, W_OK) != 0) {
        dir = getenv("TMPDIR");
        if (!dir || !dir[0])
            dir = "/tmp";
    }
    char *p = fuzz_scratch_paths[fuzz_n_scratch];
    snprintf(p, sizeof fuzz_scratch_paths[0], "%s/fh-fuzz-%s-%ld%s", dir, name, (long)getpid(),
             suffix);
    if (fuzz_n_scratch++ == 0)
        atexit(fuzz_remove_scratch);
    return p;
}

/* Writes data to the scratch file NAME (replacing it) and returns its path. */
static inline const char *fuzz_write_scratch(const char *name, const char *suffix,
                                             const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch_path(name, suffix);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            perror(path);
            abort();
        }
        done += (size_t)w;
    }
    close(fd);
    return path;
}

/* A copy of data as a NUL-terminated string (inputs may hold NULs: cut there). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
