/* format.c — see include/foxhunt/format.h. */
#include "foxhunt/format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *fh_format_number(char *out, double v)
{
    if (isfinite(v) && v == floor(v) && fabs(v) < 1e15)
        snprintf(out, FH_NUMBER_CHARS, "%.0f", v);
    else
        snprintf(out, FH_NUMBER_CHARS, "%g", v);
    return out;
}

const char *fh_format_range(char *out, double lo, double hi)
{
    char a[FH_NUMBER_CHARS], b[FH_NUMBER_CHARS];
    snprintf(out, FH_RANGE_CHARS, "%s..%s", fh_format_number(a, lo), fh_format_number(b, hi));
    return out;
}

void fh_format_utc(char *out, size_t size, int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (gmtime_r(&tt, &tm))
        strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
    else
        snprintf(out, size, "%lld", (long long)t);
}

void fh_format_append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

void fh_time_format(int64_t t, char *out, size_t cap)
{
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
    int64_t sod = t - days * 86400;
    /* civil_from_days, the inverse of src/data/csv.c's days_from_civil */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int d = (int)(doy - (153 * mp + 2) / 5 + 1);
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t y = yoe + era * 400 + (m <= 2);
    snprintf(out, cap, "%04lld-%02d-%02d %02d:%02d:%02d", (long long)y, m, d,
             (int)(sod / 3600), (int)(sod % 3600 / 60), (int)(sod % 60));
}
