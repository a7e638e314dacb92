/* io_test_helpers.h — file helpers for the io tests: a scratch directory, reading and
 * comparing whole files, and rewriting a safetensors header with a string substitution
 * (to make corrupted-but-plausible files). */
#ifndef FOXHUNT_TESTS_IO_HELPERS_H
#define FOXHUNT_TESTS_IO_HELPERS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static inline unsigned char *io_read_all(const char *path, size_t *len)
{
    return (unsigned char *)fh_test_read_file(path, len);
}

static inline int io_write_all(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t put = fwrite(data, 1, len, f);
    fclose(f);
    return put == len ? 0 : -1;
}

/* 1 when the file at path has exactly these bytes */
static inline int io_same_bytes(const char *path, const unsigned char *want, size_t want_len)
{
    size_t len = 0;
    unsigned char *b = io_read_all(path, &len);
    int same = b && len == want_len && memcmp(b, want, len) == 0;
    free(b);
    return same;
}

/* Writes dst = src with the first occurrence of `from` in the JSON header replaced by
 * `to` (header re-padded, length prefix rewritten). Returns 0, or -1 when `from` is
 * not in the header. */
static inline int io_rewrite_header(const char *dst, const char *src, const char *from,
                                    const char *to)
{
    size_t len = 0;
    unsigned char *b = io_read_all(src, &len);
    if (!b || len < 8)
        return -1;
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h |= (uint64_t)b[i] << (8 * i);
    char *hdr = malloc(h + 1);
    memcpy(hdr, b + 8, h);
    hdr[h] = '\0';
    char *at = strstr(hdr, from);
    if (!at) {
        free(hdr);
        free(b);
        return -1;
    }
    size_t nf = strlen(from), nt = strlen(to);
    size_t nh = h - nf + nt;
    size_t padded = (nh + 7) / 8 * 8;
    unsigned char *out = malloc(8 + padded + (len - 8 - h));
    size_t pre = (size_t)(at - hdr);
    memcpy(out + 8, hdr, pre);
    memcpy(out + 8 + pre, to, nt);
    memcpy(out + 8 + pre + nt, at + nf, h - pre - nf);
    memset(out + 8 + nh, ' ', padded - nh);
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)((padded >> (8 * i)) & 0xFF);
    memcpy(out + 8 + padded, b + 8 + h, len - 8 - h);
    int rc = io_write_all(dst, out, 8 + padded + (len - 8 - h));
    free(out);
    free(hdr);
    free(b);
    return rc;
}

/* Writes a raw safetensors-shaped file: length prefix, header text as given (no
 * padding), then data. */
static inline int io_write_raw(const char *path, const char *header, const void *data,
                               size_t data_len)
{
    size_t h = strlen(header);
    unsigned char *out = malloc(8 + h + data_len + 1);
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(((uint64_t)h >> (8 * i)) & 0xFF);
    memcpy(out + 8, header, h);
    if (data_len)
        memcpy(out + 8 + h, data, data_len);
    int rc = io_write_all(path, out, 8 + h + data_len);
    free(out);
    return rc;
}

#endif
