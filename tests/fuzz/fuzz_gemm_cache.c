/* fuzz_gemm_cache.c — libFuzzer harness: an arbitrary file in the place of the matmul
 * algorithm file (src/cuda/gemm_cache.c; ~/.cache/foxhunt/gemm-v2-<hash>.bin, read by every
 * GPU process at start, issue 32). The reader is plain C and built without CUDA, so it
 * is fuzzed on any machine.
 *
 * Each input is read twice with fh_gemm_cache_read: as it is, and with its header's
 * checksum recomputed over the bytes after the header (else nearly every mutation stops
 * at the checksum, and the count and per-entry checks behind it would be reached only
 * by the seeds). Beyond "no crash, no leak, no undefined behaviour" it checks what
 * gemm_cache.h promises:
 *  - the reason (why) names the file, accepted or not;
 *  - a file read as k > 0 entries is exactly the 24-byte header (magic "FHGEMMC\0",
 *    version 2, count k) and k records of 108 bytes, and every entry is one a matmul can
 *    have: n_in, n_out, rows > 0, relu, bias in {0, 1}, precision in {0, 1, 2}, y_bf16
 *    in {0, 1} and 1 only under precision 2 (bf16), each alignment a power of two up to
 *    256; the entries are the records' bytes field for field;
 *  - the entries written back (fh_gemm_cache_merge into a fresh file) read back as the
 *    same entries, the first of each shape (a merge keeps one entry per shape); with no
 *    shape twice the file written is the input byte for byte;
 *  - settling an entry's shape against that file returns the file's algorithm. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_cache.h"
#include "foxhunt/hash.h"
#include "fuzz_util.h"

#define HEADER_BYTES 24
#define RECORD_BYTES 108
#define MAX_ENTRIES 512 /* room for any input under fuzz.sh's -max_len */

static char g_lock[300];

static void remove_lock(void)
{
    unlink(g_lock);
}

static int32_t i32_at(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static int power_of_two_upto_256(uint32_t a)
{
    return a == 1 || a == 2 || a == 4 || a == 8 || a == 16 || a == 32 || a == 64 ||
           a == 128 || a == 256;
}

static int same_entry(const fh_gemm_cache_entry *a, const fh_gemm_cache_entry *b)
{
    return fh_gemm_cache_same_shape(a, b) && memcmp(a->algo, b->algo, sizeof a->algo) == 0;
}

/* The properties of one read of data (size bytes) at path. */
static void check_read(const char *path, const uint8_t *data, size_t size)
{
    static fh_gemm_cache_entry e[MAX_ENTRIES], back[MAX_ENTRIES], first[MAX_ENTRIES];
    char why[512] = "";
    int k = fh_gemm_cache_read(path, e, MAX_ENTRIES, why, sizeof why);
    FUZZ_REQUIRE(k >= 0 && k <= MAX_ENTRIES, "%d entries", k);
    FUZZ_REQUIRE(strstr(why, path) == why, "the reason does not name the file: %s", why);
    if (k == 0)
        return;
    FUZZ_REQUIRE(size == HEADER_BYTES + (size_t)k * RECORD_BYTES,
                 "%d entries read from %zu bytes", k, size);
    FUZZ_REQUIRE(memcmp(data, "FHGEMMC", 8) == 0 && i32_at(data + 8) == 2 &&
                     i32_at(data + 12) == k, "accepted with another magic, version or count");
    for (int i = 0; i < k; i++) {
        const fh_gemm_cache_entry *x = &e[i];
        const uint8_t *p = data + HEADER_BYTES + (size_t)i * RECORD_BYTES;
        FUZZ_REQUIRE(x->n_in > 0 && x->n_out > 0 && x->rows > 0, "entry %d: %d x %d x %lld", i,
                     x->n_in, x->n_out, (long long)x->rows);
        FUZZ_REQUIRE((x->relu == 0 || x->relu == 1) && (x->bias == 0 || x->bias == 1) &&
                         x->precision >= 0 && x->precision <= 2 &&
                         (x->y_bf16 == 0 || (x->y_bf16 == 1 && x->precision == 2)),
                     "entry %d: relu %d bias %d precision %d y_bf16 %d", i, x->relu, x->bias,
                     x->precision, x->y_bf16);
        FUZZ_REQUIRE(power_of_two_upto_256(x->align_w) && power_of_two_upto_256(x->align_x) &&
                         power_of_two_upto_256(x->align_y),
                     "entry %d: alignments %u %u %u", i, x->align_w, x->align_x, x->align_y);
        int64_t rows;
        memcpy(&rows, p + 24, 8);
        FUZZ_REQUIRE(x->n_in == i32_at(p) && x->n_out == i32_at(p + 4) &&
                         x->relu == i32_at(p + 8) && x->bias == i32_at(p + 12) &&
                         x->precision == i32_at(p + 16) && x->y_bf16 == i32_at(p + 20) &&
                         x->rows == rows && x->align_w == (uint32_t)i32_at(p + 32) &&
                         x->align_x == (uint32_t)i32_at(p + 36) &&
                         x->align_y == (uint32_t)i32_at(p + 40) &&
                         memcmp(x->algo, p + 44, sizeof x->algo) == 0,
                     "entry %d is not its record's bytes", i);
    }

    /* written back through the writer, into a fresh file */
    const char *out = fuzz_scratch_path("gemmout", ".bin");
    if (!g_lock[0]) {
        snprintf(g_lock, sizeof g_lock, "%s.lock", out);
        atexit(remove_lock);
    }
    unlink(out);
    FUZZ_REQUIRE(fh_gemm_cache_merge(out, e, k, 0) == 1, "merging %d accepted entries failed",
                 k);
    int n_first = 0;
    for (int i = 0; i < k; i++) {
        int seen = 0;
        for (int j = 0; j < n_first && !seen; j++)
            seen = fh_gemm_cache_same_shape(&first[j], &e[i]);
        if (!seen)
            first[n_first++] = e[i];
    }
    int k2 = fh_gemm_cache_read(out, back, MAX_ENTRIES, why, sizeof why);
    FUZZ_REQUIRE(k2 == n_first, "written back: %d entries, %d shapes (%s)", k2, n_first, why);
    for (int i = 0; i < k2; i++)
        FUZZ_REQUIRE(same_entry(&back[i], &first[i]), "entry %d differs written back", i);
    if (n_first == k) {
        FILE *f = fopen(out, "rb");
        FUZZ_REQUIRE(f != NULL, "cannot open %s", out);
        uint8_t *again = malloc(size + 1);
        size_t got = again ? fread(again, 1, size + 1, f) : 0;
        fclose(f);
        FUZZ_REQUIRE(got == size && memcmp(again, data, size) == 0,
                     "an accepted file of distinct shapes written back differs (%zu bytes of "
                     "%zu)", got, size);
        free(again);
    }
    /* a process that timed the first shape itself settles on the file's algorithm */
    fh_gemm_cache_entry mine = first[0];
    mine.algo[0] ^= 0x5a5a;
    FUZZ_REQUIRE(fh_gemm_cache_settle(out, &mine, NULL) == 1 && same_entry(&mine, &first[0]),
                 "settling a shape the file holds did not give the file's algorithm");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("gemm", ".bin", data, size);
    check_read(path, data, size);
    if (size >= HEADER_BYTES) { /* the same bytes under a checksum that matches them */
        uint8_t *fixed = malloc(size);
        FUZZ_REQUIRE(fixed != NULL, "out of memory");
        memcpy(fixed, data, size);
        uint64_t sum = fh_fnv1a(fixed + HEADER_BYTES, size - HEADER_BYTES, FH_FNV1A_OFFSET);
        memcpy(fixed + 16, &sum, 8);
        path = fuzz_write_scratch("gemm", ".bin", fixed, size);
        check_read(path, fixed, size);
        free(fixed);
    }
    return 0;
}
