/* error.c — fh_error helpers (see include/foxhunt/error.h). */
#include "foxhunt/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

fh_status fh_error_set(fh_error *err, fh_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

void fh_error_clear(fh_error *err)
{
    if (err) {
        err->status = FH_OK;
        err->message[0] = '\0';
    }
}

void fh_error_prefix(fh_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[FH_ERROR_MESSAGE_MAX];
    char old[FH_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    size_t n = strlen(prefix);
    if (n >= sizeof err->message)
        n = sizeof err->message - 1;
    memcpy(err->message, prefix, n);
    size_t room = sizeof err->message - 1 - n;
    size_t m = strlen(old);
    if (m > room)
        m = room;
    memcpy(err->message + n, old, m);
    err->message[n + m] = '\0';
}

const char *fh_write_error_hint(int e)
{
    if (e == EFBIG)
        return " (file size limit reached: ulimit -f; raise it, e.g. `ulimit -f unlimited`, "
               "or write elsewhere)";
    if (e == ENOSPC)
        return " (the disk is full: free space or write elsewhere)";
    return "";
}
