/* format.h — numbers as messages show them: whole numbers in full ("1048576", not
 * "1.04858e+06"), others in %g. */
#ifndef FOXHUNT_FORMAT_H
#define FOXHUNT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define FH_NUMBER_CHARS 32
#define FH_RANGE_CHARS 72

/* out holds FH_NUMBER_CHARS. */
const char *fh_format_number(char *out, double v);
/* "lo..hi"; out holds FH_RANGE_CHARS. */
const char *fh_format_range(char *out, double lo, double hi);

/* Appends printf text to the NUL-terminated text in buf (size bytes), cutting quietly
 * at the end of the buffer: for messages built in parts. */
void fh_format_append(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Unix seconds as UTC "2024-01-31T16:00:00Z" (the number itself where gmtime cannot). */
void fh_format_utc(char *out, size_t size, int64_t t);
/* Writes t as "YYYY-MM-DD HH:MM:SS" (UTC) into out (cap >= 20). */
void fh_time_format(int64_t unix_seconds, char *out, size_t cap);

#endif
