/* test_util.h — the checks every foxhunt test uses (STYLE habit 8).
 *
 * A failed check prints file:line, what was compared and the values, and counts; the
 * test's main returns fh_test_finish(), which prints "N passed, N failed" and exits
 * non-zero when anything failed. fh_test_skip() prints why and exits 77, which ctest
 * reports as skipped. */
#ifndef FOXHUNT_TEST_UTIL_H
#define FOXHUNT_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int fh_test_passed = 0;
static int fh_test_failed = 0;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) {                                                                      \
            fh_test_passed++;                                                            \
        } else {                                                                         \
            fh_test_failed++;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                                \
    } while (0)

#define CHECK_MSG(cond, ...)                                                             \
    do {                                                                                 \
        if (cond) {                                                                      \
            fh_test_passed++;                                                            \
        } else {                                                                         \
            fh_test_failed++;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
        }                                                                                \
    } while (0)

/* |a - b| <= atol + rtol * |b|, with NaN/Inf always failing. */
static inline int fh_close(double a, double b, double atol, double rtol)
{
    if (!isfinite(a) || !isfinite(b))
        return 0;
    return fabs(a - b) <= atol + rtol * fabs(b);
}

#define CHECK_CLOSE(a, b, atol, rtol)                                                    \
    do {                                                                                 \
        double a_ = (double)(a), b_ = (double)(b);                                       \
        if (fh_close(a_, b_, (atol), (rtol))) {                                          \
            fh_test_passed++;                                                            \
        } else {                                                                         \
            fh_test_failed++;                                                            \
            fprintf(stderr, "%s:%d: CHECK_CLOSE failed: %s = %.10g vs %s = %.10g "       \
                    "(atol %g, rtol %g)\n", __FILE__, __LINE__, #a, a_, #b, b_,           \
                    (double)(atol), (double)(rtol));                                     \
        }                                                                                \
    } while (0)

/* Compares arrays; prints only the first mismatch with its index. Returns 1 if equal. */
static inline int fh_check_array_close(const char *what, const double *a, const double *b,
                                       size_t n, double atol, double rtol,
                                       const char *file, int line)
{
    for (size_t i = 0; i < n; i++) {
        if (!fh_close(a[i], b[i], atol, rtol)) {
            fh_test_failed++;
            fprintf(stderr, "%s:%d: %s: first mismatch at [%zu]: %.10g vs %.10g "
                    "(atol %g, rtol %g)\n", file, line, what, i, a[i], b[i], atol, rtol);
            return 0;
        }
    }
    fh_test_passed++;
    return 1;
}
#define CHECK_ARRAY_CLOSE(what, a, b, n, atol, rtol)                                     \
    fh_check_array_close((what), (a), (b), (n), (atol), (rtol), __FILE__, __LINE__)

static inline int fh_test_finish(void)
{
    printf("%d passed, %d failed\n", fh_test_passed, fh_test_failed);
    return fh_test_failed == 0 && fh_test_passed > 0 ? 0 : 1;
}

/* Reads a whole file, NUL-terminated (NULL when absent); *size (may be NULL) gets the
 * byte count. The caller frees. */
static inline char *fh_test_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? (size_t)n + 1 : 1);
    size_t got = buf ? fread(buf, 1, n > 0 ? (size_t)n : 0, f) : 0;
    fclose(f);
    if (buf)
        buf[got] = '\0';
    if (size)
        *size = got;
    return buf;
}

static inline void fh_test_skip(const char *why)
{
    printf("SKIP: %s\n", why);
    exit(77);
}

#endif
