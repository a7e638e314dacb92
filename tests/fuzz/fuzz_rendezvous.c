/* fuzz_rendezvous.c — libFuzzer harness: an arbitrary file in the place of each file a
 * rank of a data-parallel run reads (src/dist/rendezvous.c, docs/SCALING.md; issue 32):
 * the id file `--rendezvous PATH` that rank 0 writes, PATH.abort (a failure's message)
 * and PATH.rank<r> (an arrival). A shared filesystem's files are untrusted input. The
 * same input is given as each, through the functions the ranks call:
 *  1. the id file: fh_rendezvous_wait (world 2, NCCL's 128-byte id; the file exists, so
 *     it reads at once), then fh_rendezvous_decode of the bytes with the world and id
 *     size the file's header claims, and both again on a copy whose checksum (its last 8
 *     bytes) is recomputed, so that the checks behind the checksum are fuzzed too;
 *  2. PATH.abort, no id file: fh_rendezvous_abort_read and fh_rendezvous_wait;
 *  3. PATH.rank0: fh_rendezvous_barrier of a world of 1 with a zero timeout.
 * Properties, beyond "no crash, no leak, no undefined behaviour":
 *  - an id accepted is the file's only possible meaning: fh_rendezvous_encode of that
 *    world and id gives back the file byte for byte; a refusal is FH_ERR_INPUT with a
 *    message naming the file;
 *  - an abort message is a NUL-terminated prefix of the file's bytes, within the buffer;
 *    a wait that meets it fails at once (FH_ERR_FAILURE), its message naming the path;
 *  - an arrival counts only when the file is the 17 bytes "<16 hex digits of the
 *    nonce>\n"; otherwise the barrier fails at its timeout naming the path and rank 0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist/rendezvous.h"
#include "foxhunt/hash.h"
#include "fuzz_util.h"

#define WORLD 2
#define ID_BYTES 128
#define NONCE 0x0123456789abcdefULL

static char g_side[2][300]; /* PATH.abort and PATH.rank0 of the side-file stages */

static void remove_sides(void)
{
    for (int i = 0; i < 2; i++)
        if (g_side[i][0])
            unlink(g_side[i]);
}

static uint32_t u32_at(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    FUZZ_REQUIRE(f && fwrite(data, 1, size, f) == size && fclose(f) == 0, "writing %s", path);
}

/* Stage 1 on bytes data (size) at path. */
static void check_id_file(const char *path, const uint8_t *data, size_t size)
{
    unsigned char id[FH_RDV_ID_MAX], again[24 + FH_RDV_ID_MAX + 8];
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_rendezvous_wait(path, WORLD, id, ID_BYTES, 0.0, &err);
    if (st == FH_OK) {
        size_t n = fh_rendezvous_encode(again, sizeof again, WORLD, id, ID_BYTES);
        FUZZ_REQUIRE(n == size && memcmp(again, data, size) == 0,
                     "an id file accepted (%zu bytes) is not what encode gives for its id",
                     size);
    } else {
        FUZZ_REQUIRE(st == FH_ERR_INPUT, "the wait: status %d: %s", (int)st, err.message);
        FUZZ_REQUIRE(strstr(err.message, path) != NULL,
                     "the message does not name the file: %s", err.message);
    }
    /* the world and id size the header claims, as a rank of another run would read it */
    if (size < 24)
        return;
    uint32_t world = u32_at(data + 12), n_id = u32_at(data + 16);
    if (world < 1 || world > 1u << 20 || n_id > FH_RDV_ID_MAX)
        return;
    fh_error_clear(&err);
    st = fh_rendezvous_decode(data, size, (int)world, id, n_id, path, &err);
    if (st == FH_OK) {
        size_t n = fh_rendezvous_encode(again, sizeof again, (int)world, id, n_id);
        FUZZ_REQUIRE(n == size && memcmp(again, data, size) == 0,
                     "decode accepted %zu bytes (world %u, %u-byte id) that encode does not "
                     "give", size, world, n_id);
    } else {
        FUZZ_REQUIRE(st == FH_ERR_INPUT && strstr(err.message, path),
                     "decode: status %d, '%s'", (int)st, err.message);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 1: the id file, as it is and with a checksum that matches its bytes */
    const char *path = fuzz_write_scratch("rdv", ".id", data, size);
    check_id_file(path, data, size);
    if (size >= 32) {
        uint8_t *fixed = malloc(size);
        FUZZ_REQUIRE(fixed != NULL, "out of memory");
        memcpy(fixed, data, size);
        uint64_t sum = fh_fnv1a(fixed, size - 8, FH_FNV1A_OFFSET);
        memcpy(fixed + size - 8, &sum, 8);
        path = fuzz_write_scratch("rdv", ".id", fixed, size);
        check_id_file(path, fixed, size);
        free(fixed);
    }

    /* 2 and 3: side files of a path whose id file does not exist */
    const char *base = fuzz_scratch_path("rdvside", ".id");
    if (!g_side[0][0]) {
        snprintf(g_side[0], sizeof g_side[0], "%s.abort", base);
        snprintf(g_side[1], sizeof g_side[1], "%s.rank0", base);
        atexit(remove_sides);
    }
    write_file(g_side[0], data, size);
    char message[200];
    memset(message, 'x', sizeof message);
    FUZZ_REQUIRE(fh_rendezvous_abort_read(base, message, sizeof message) == 1,
                 "an abort file not seen");
    size_t len = strnlen(message, sizeof message);
    FUZZ_REQUIRE(len < sizeof message, "the abort message is not NUL-terminated");
    FUZZ_REQUIRE(len <= size && memcmp(message, data, len) == 0,
                 "the abort message is not the file's bytes");
    unsigned char id[ID_BYTES];
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_rendezvous_wait(base, WORLD, id, ID_BYTES, 10.0, &err);
    FUZZ_REQUIRE(st == FH_ERR_FAILURE && strstr(err.message, base),
                 "a wait that met an abort file: status %d, '%s'", (int)st, err.message);
    unlink(g_side[0]);

    write_file(g_side[1], data, size);
    fh_error_clear(&err);
    st = fh_rendezvous_barrier(base, 1, NONCE, 0.0, &err);
    static const char want[] = "0123456789abcdef\n";
    int is_arrival = size == sizeof want - 1 && memcmp(data, want, size) == 0;
    if (st == FH_OK)
        FUZZ_REQUIRE(is_arrival, "an arrival of %zu bytes counted", size);
    else
        FUZZ_REQUIRE(!is_arrival && st == FH_ERR_FAILURE && strstr(err.message, base) &&
                         strstr(err.message, "missing: 0"),
                     "the barrier: status %d, '%s'", (int)st, err.message);
    unlink(g_side[1]);
    return 0;
}
