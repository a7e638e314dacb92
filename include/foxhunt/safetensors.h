/* safetensors.h — a generic safetensors writer and validating reader (issue 4).
 *
 * Format (https://github.com/huggingface/safetensors, as the Python package reads it):
 *   8 bytes   little-endian u64 N, the header length
 *   N bytes   UTF-8 JSON: {"NAME": {"dtype": "F32", "shape": [a, b],
 *                                   "data_offsets": [begin, end]}, ...,
 *                          "__metadata__": {"key": "string value", ...}}
 *             padded with spaces to a multiple of 8 (the Rust writer does the same)
 *   the byte buffer: tensors contiguous, little-endian, row-major; data_offsets are
 *   relative to the buffer's start.
 *
 * Names and metadata must be valid UTF-8 (the header is JSON, and the reference reader,
 * Python's `safetensors`, refuses a header that is not UTF-8): the writer refuses any
 * other bytes (FH_ERR_INPUT, naming the key and the byte) rather than write a file that
 * only foxhunt could read.
 *
 * Writing is atomic: PATH.tmp is written, flushed and fsynced, renamed over PATH, and
 * the directory fsynced. A crash leaves either the old file or the new one, and a
 * failed write leaves PATH untouched (PATH.tmp is removed).
 *
 * The reader refuses anything that is not a regular file (a FIFO, a directory, a device)
 * before reading from it, so that `--checkpoint` given a named pipe fails at once
 * instead of waiting forever (fh_read_regular_file, foxhunt/files.h). It loads the whole file and validates it before returning: header length
 * within the file, JSON parses, every entry has a known dtype, a shape and two
 * offsets, shape product x dtype size == byte span, and the spans, sorted, are
 * non-overlapping and exactly cover the buffer. Errors name the file and what is wrong
 * (FH_ERR_INPUT). */
#ifndef FOXHUNT_SAFETENSORS_H
#define FOXHUNT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/error.h"

typedef enum {
    FH_DTYPE_F32 = 0,
    FH_DTYPE_F64 = 1,
    FH_DTYPE_I32 = 2,
    FH_DTYPE_I64 = 3,
    FH_DTYPE_U64 = 4,
    FH_DTYPE_U8 = 5,
    FH_DTYPE_COUNT = 6
} fh_dtype;

#define FH_ST_MAX_RANK 8

const char *fh_dtype_name(fh_dtype dtype); /* "F32", ... */
size_t fh_dtype_size(fh_dtype dtype);      /* bytes per element */

typedef struct {
    char *name;                     /* owned */
    fh_dtype dtype;
    int rank;                       /* 0 .. FH_ST_MAX_RANK (0: a scalar, one element) */
    int64_t shape[FH_ST_MAX_RANK];
    size_t nbytes;
    const void *data;               /* writer: borrowed until the write;
                                       reader: into the file buffer, maybe unaligned
                                       (memcpy it out) */
    size_t begin;                   /* reader: data_offsets[0] */
} fh_st_tensor;

/* ---- writer ---- */
typedef struct {
    size_t n_tensors, cap_tensors;
    fh_st_tensor *tensors;
    size_t n_meta, cap_meta;
    char **meta_keys;               /* owned */
    char **meta_values;             /* owned */
} fh_st_writer;

void fh_st_writer_init(fh_st_writer *w);
void fh_st_writer_free(fh_st_writer *w); /* safe on a zeroed or freed writer */
/* Adds a tensor (written in the order added). data is borrowed: it must stay valid
 * until fh_st_writer_write. Duplicate names, "__metadata__", empty names and ranks
 * outside [0, FH_ST_MAX_RANK] are errors. */
fh_status fh_st_writer_add(fh_st_writer *w, const char *name, fh_dtype dtype, int rank,
                           const int64_t *shape, const void *data, fh_error *err);
/* Sets a "__metadata__" string (copied; a repeated key replaces the value). */
fh_status fh_st_writer_set_metadata(fh_st_writer *w, const char *key, const char *value,
                                    fh_error *err);
/* Writes PATH atomically (see above). */
fh_status fh_st_writer_write(const fh_st_writer *w, const char *path, fh_error *err);

/* ---- reader ---- */
typedef struct {
    char *path;                     /* owned copy, for messages */
    unsigned char *file;            /* the whole file */
    size_t file_len;
    const unsigned char *buffer;    /* file + 8 + header length */
    size_t buffer_len;
    size_t n_tensors;
    fh_st_tensor *tensors;          /* in header order */
    size_t n_meta;
    char **meta_keys;
    char **meta_values;
} fh_st_file;

/* Reads and validates PATH. On error *f is left empty (fh_st_file_free is still safe). */
fh_status fh_st_read(fh_st_file *f, const char *path, fh_error *err);
void fh_st_file_free(fh_st_file *f);
const fh_st_tensor *fh_st_find(const fh_st_file *f, const char *name);
const char *fh_st_metadata(const fh_st_file *f, const char *key); /* NULL when absent */

/* Finds NAME and checks it has dtype and exactly the given shape; on error says which
 * (missing key, wrong dtype X expected Y, wrong shape [..] expected [..]), naming the
 * file. */
fh_status fh_st_expect(const fh_st_tensor **out, const fh_st_file *f, const char *name,
                       fh_dtype dtype, int rank, const int64_t *shape, fh_error *err);

#endif
