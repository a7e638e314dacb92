/* test_norms.h — how far one float vector is from another, in double: the measures the
 * GPU-against-CPU tests state their tolerances in (relative norms of values and of
 * changes from a common start, the cosine between two changes, the first element off). */
#ifndef FOXHUNT_TEST_NORMS_H
#define FOXHUNT_TEST_NORMS_H

#include <math.h>
#include <stddef.h>

#include "test_util.h"

/* ||a - b|| / ||b|| (||a - b|| when b is 0). */
static inline double fh_rel_norm(const float *a, const float *b, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)a[i] - b[i];
        d += e * e;
        s += (double)b[i] * b[i];
    }
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

/* The relative norm of two changes from start: x - start against ref - start. */
static inline double fh_delta_rel(const float *x, const float *ref, const float *start, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double a = (double)x[i] - start[i], b = (double)ref[i] - start[i];
        d += (a - b) * (a - b);
        s += b * b;
    }
    return s > 0 ? sqrt(d / s) : sqrt(d);
}

/* The cosine between two changes from start (0 when either is none). */
static inline double fh_delta_cosine(const float *x, const float *ref, const float *start,
                                     size_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) {
        double a = (double)x[i] - start[i], b = (double)ref[i] - start[i];
        ab += a * b;
        aa += a * a;
        bb += b * b;
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0.0;
}

/* |a - b| / |b| (b at least 1e-30). */
static inline double fh_rel(double a, double b)
{
    return fabs(a - b) / fmax(fabs(b), 1e-30);
}

/* The first index where |a - b| > tol + tol |b| (or a NaN), or -1. */
static inline long fh_first_mismatch(const float *a, const float *b, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (!fh_close(a[i], b[i], tol, tol))
            return (long)i;
    return -1;
}

#endif
