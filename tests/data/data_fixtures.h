/* data_fixtures.h — helpers for the data tests: a temp directory, small CSV files
 * written from generated rows, and running the `foxhunt` binary (FH_FOXHUNT_BIN). */
#ifndef FOXHUNT_DATA_FIXTURES_H
#define FOXHUNT_DATA_FIXTURES_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"
#include <sys/wait.h>
#include <unistd.h>

static char fx_dir[256];

static inline void fx_make_dir(void)
{
    snprintf(fx_dir, sizeof fx_dir, "/tmp/foxhunt_data_test_XXXXXX");
    if (!mkdtemp(fx_dir)) {
        perror("mkdtemp");
        exit(1);
    }
}

/* Removes the temp directory and everything in it. */
static inline void fx_cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "warning: could not remove %s\n", fx_dir);
}

static inline void fx_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", fx_dir, name);
}

static inline void fx_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, strlen(text), f) != strlen(text) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static inline int fx_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Reads a whole file (NULL when absent); the caller frees. */
static inline char *fx_read(const char *path)
{
    return fh_test_read_file(path, NULL);
}

/* One generated bar, deterministic in i: a wavy price with valid OHLC. */
typedef struct {
    int64_t t;
    double o, h, l, c, v;
} fx_bar;

static inline fx_bar fx_bar_at(int i)
{
    fx_bar b;
    b.t = 1640995200 + (int64_t)i * 3600; /* 2022-01-01 00:00 UTC, hourly */
    b.o = 100.0 + 10.0 * sin(0.05 * i) + 0.25 * ((i * 37) % 11);
    b.c = 100.0 + 10.0 * sin(0.05 * (i + 1)) + 0.25 * (((i + 1) * 37) % 11);
    b.h = (b.o > b.c ? b.o : b.c) + 0.5 + 0.1 * (i % 3);
    b.l = (b.o < b.c ? b.o : b.c) - 0.5 - 0.1 * (i % 5);
    b.v = 1000.0 + 37.0 * (i % 17);
    return b;
}

static inline void fx_iso(int64_t t, char *out, size_t cap, char sep)
{
    int64_t days = t / 86400, sod = t % 86400;
    int64_t z = days + 719468, era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1), m = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t y = yoe + era * 400 + (m <= 2);
    snprintf(out, cap, "%04d-%02d-%02d%c%02d:%02d:%02d", (int)y, m, d, sep,
             (int)(sod / 3600), (int)(sod % 3600 / 60), (int)(sod % 60));
}

/* Appends printf text to a growing buffer. */
typedef struct {
    char *s;
    size_t n, cap;
} fx_buf;

static inline void fx_printf(fx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void fx_printf(fx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->n + (size_t)need + 1 > b->cap) {
        b->cap = (b->n + (size_t)need + 1) * 2;
        b->s = realloc(b->s, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)need;
}

/* Kline-style row text for bar i (no line end). */
static inline void fx_row(fx_buf *b, int i)
{
    fx_bar x = fx_bar_at(i);
    char ts[32];
    fx_iso(x.t, ts, sizeof ts, ' ');
    fx_printf(b, "%s,%.6f,%.6f,%.6f,%.6f,%.3f", ts, x.o, x.h, x.l, x.c, x.v);
}

/* Runs `foxhunt ARGS 2> stderr_path`; returns the exit status (-1 if it did not exit). */
static inline int fx_run_foxhunt(const char *args, const char *stderr_path)
{
    char cmd[8192];
    if (snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", FH_FOXHUNT_BIN, args,
                 stderr_path) >= (int)sizeof cmd)
        return -1; /* the command would be cut: not run */
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
