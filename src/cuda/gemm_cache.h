/* gemm_cache.h — the matmul algorithms gemm.c timed, kept on disk per GPU model and
 * cuBLASLt version, so that every process on a machine runs each shape with the same
 * algorithm. Timing picks afresh in each process, and two algorithms sum in different
 * orders: two runs of one seed differed in the last bits of the critic's values
 * (session 13), and a resume in a new process could part from the run it continues.
 * The file is a cache: a missing, damaged or foreign one is ignored (the shapes are
 * timed again and the file rewritten), never an error. */
#ifndef FOXHUNT_CUDA_GEMM_CACHE_H
#define FOXHUNT_CUDA_GEMM_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define FH_GEMM_CACHE_MAX 1024 /* entries a file holds at most (the oldest go first) */
/* A writer waits at most this long for PATH.lock (a holder needs milliseconds), then
 * goes on without the file: a process stopped or hung while holding the lock must not
 * stop every other one (issue 32). */
#define FH_GEMM_CACHE_LOCK_SECONDS 3.0

/* One timed choice: the shape (gemm.h's fh_gemm_key fields), the precision (bf16: bf16
 * operands, y_bf16 its output's type), and cublasLtMatmulAlgo_t's 64 bytes (cuBLASLt
 * documents them as serialisable for the same library version). */
typedef struct {
    int32_t n_in, n_out, relu, bias, precision, y_bf16;
    int64_t rows;
    uint32_t align_w, align_x, align_y;
    uint64_t algo[8];
} fh_gemm_cache_entry;

/* DIR/gemm-v<format version>-<16 hex digits>.bin, the digits an FNV-1a of the device name
 * and the cuBLASLt version; 0 when it does not fit in n bytes. */
int fh_gemm_cache_path(char *out, size_t n, const char *dir, const char *device_name,
                       size_t cublaslt_version);

/* The entries of path (at most max) into e; the count, or 0 for a missing, damaged,
 * foreign or not regular file, with why (when not NULL, up to why_n bytes) saying which. */
int fh_gemm_cache_read(const char *path, fh_gemm_cache_entry *e, int max, char *why,
                       size_t why_n);

/* Writers hold an exclusive lock on PATH.lock for the whole read-change-write, and write
 * a temporary file (mkstemp) renamed over path, so that no update is lost and a reader
 * never sees half a file. A full file drops its oldest entry for a new one. A writer that
 * cannot have the lock within FH_GEMM_CACHE_LOCK_SECONDS returns 0 (nothing written);
 * readers take no lock. */

/* add's entries merged into the file; an entry of a shape already there wins over add's,
 * unless replace; 1 on success. (Tools and tests; a gemm settles one shape at a time.) */
int fh_gemm_cache_merge(const char *path, const fh_gemm_cache_entry *add, int n_add,
                        int replace);

/* The algorithm every process is to run for e's shape, agreed through the file: the
 * file's when it has one (copied into e->algo), else e's, added. refused (NULL: none) is
 * an algorithm this process's cuBLASLt refused: a file entry equal to it is replaced by
 * e's instead. 1 when the file holds e on return, 0 when it could not be read, locked or
 * written (e then unchanged). */
int fh_gemm_cache_settle(const char *path, fh_gemm_cache_entry *e, const uint64_t *refused);

/* 1 when a and b are the same shape and precision (the algorithm aside). */
int fh_gemm_cache_same_shape(const fh_gemm_cache_entry *a, const fh_gemm_cache_entry *b);

#endif
