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
