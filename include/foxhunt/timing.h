/* timing.h — wall-clock time and the median, for progress lines and benchmarks
 * (every figure in docs/BENCHMARKS.md is a median of several runs). */
#ifndef FOXHUNT_TIMING_H
#define FOXHUNT_TIMING_H

/* Monotonic clock in seconds. */
double fh_clock_seconds(void);
/* Median of n > 0 values; sorts them in place. */
double fh_median_inplace(double *values, int n);

#endif
