/* test_tfevents.c — TensorBoard's event encoding (src/common/tfevents.c) against
 * published and hand-computed bytes: CRC32C against its check value and RFC 3720's
 * vectors, the masked CRC against a hand rotation, a scalar Event byte by byte (protobuf
 * fields written out by hand from event.proto and summary.proto), every record's
 * framing re-checked by a reader written here, and the failures: a directory that
 * cannot hold the file, and a write cut by a file size limit (the file cut back to its
 * last whole record, a warning, nothing more written). The reading by TensorBoard itself
 * is tests/cli/test_tensorboard.c. */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "foxhunt/tfevents.h"
#include "test_util.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t read_file(const char *path, uint8_t *out, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(out, 1, cap, f);
    fclose(f);
    return n;
}

static uint64_t le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Walks the records of buf: each length's and data's masked CRC checked; returns the
 * number of whole records, or -1 at the first bad one (printed). start/len of record
 * `want` into *at / *at_len. */
static int walk_records(const uint8_t *buf, size_t n, int want, size_t *at, size_t *at_len)
{
    size_t pos = 0;
    int k = 0;
    while (pos < n) {
        if (n - pos < 12) {
            fprintf(stderr, "record %d: %zu bytes left, less than a header\n", k, n - pos);
            return -1;
        }
        uint64_t len = le(buf + pos, 8);
        if (le(buf + pos + 8, 4) != fh_crc32c_masked(buf + pos, 8) || n - pos - 12 < len + 4) {
            fprintf(stderr, "record %d at %zu: bad length or its CRC\n", k, pos);
            return -1;
        }
        if (le(buf + pos + 12 + len, 4) != fh_crc32c_masked(buf + pos + 12, len)) {
            fprintf(stderr, "record %d at %zu: bad data CRC\n", k, pos);
            return -1;
        }
        if (k == want) {
            *at = pos + 12;
            *at_len = (size_t)len;
        }
        pos += 12 + len + 4;
        k++;
    }
    return k;
}

static void test_crc32c(void)
{
    CHECK(fh_crc32c(0, "123456789", 9) == 0xE3069283u); /* the published check value */
    uint8_t zeros[32], ones[32], up[32];
    for (int i = 0; i < 32; i++) {
        zeros[i] = 0;
        ones[i] = 0xff;
        up[i] = (uint8_t)i;
    }
    CHECK(fh_crc32c(0, zeros, 32) == 0x8A9136AAu); /* RFC 3720, B.4 */
    CHECK(fh_crc32c(0, ones, 32) == 0x62A8AB43u);
    CHECK(fh_crc32c(0, up, 32) == 0x46DD794Eu);
    CHECK(fh_crc32c(fh_crc32c(0, "1234", 4), "56789", 5) == 0xE3069283u); /* continued */
    /* rotr(0xE3069283, 15) = 0x2507C60D by hand; + 0xa282ead8 */
    CHECK(fh_crc32c_masked("123456789", 9) == 0xC78AB0E5u);
}

static void test_scalar_bytes(const char *dir)
{
    fh_tfevents w;
    fh_error err;
    CHECK_MSG(fh_tfevents_open(&w, dir, 1.5, &err) == FH_OK, "%s", err.message);
    fh_tfevents_scalar(&w, 2.0, 300, "a/b", 0.25f);
    CHECK(fh_tfevents_flush(&w) == 0);
    char path[FH_TFEVENTS_PATH_MAX];
    snprintf(path, sizeof path, "%s", w.path);
    fh_tfevents_close(&w);
    const char *name = strrchr(path, '/') + 1;
    CHECK_MSG(strncmp(path, dir, strlen(dir)) == 0 && name == path + strlen(dir) + 1 &&
                  strncmp(name, "events.out.tfevents.", 20) == 0 &&
                  strcmp(path + strlen(path) - 8, ".foxhunt") == 0,
              "file %s", path);

    uint8_t buf[4096];
    size_t n = read_file(path, buf, sizeof buf), at = 0, len = 0;
    CHECK_MSG(walk_records(buf, n, 0, &at, &len) == 2, "%zu bytes", n);
    /* Event{wall_time 1.5 (field 1, fixed64), file_version "brain.Event:2" (field 3)} */
    const uint8_t version[] = {0x09, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0x1a, 13, 'b', 'r', 'a',
                               'i', 'n', '.', 'E', 'v', 'e', 'n', 't', ':', '2'};
    CHECK(len == sizeof version && memcmp(buf + at, version, len) == 0);
    walk_records(buf, n, 1, &at, &len);
    /* Event{wall_time 2.0, step 300 (field 2: varint 0xAC 0x02), summary (field 5) {
     *   value (field 1) {tag "a/b" (field 1), simple_value 0.25 (field 2, fixed32)}}} */
    const uint8_t scalar[] = {0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x10, 0xac, 0x02, 0x2a, 12,
                              0x0a, 10, 0x0a, 3, 'a', '/', 'b', 0x15, 0, 0, 0x80, 0x3e};
    CHECK_MSG(len == sizeof scalar && memcmp(buf + at, scalar, len) == 0, "scalar record: %zu "
              "bytes, expected %zu", len, sizeof scalar);
    for (size_t i = 0; i < len && i < sizeof scalar; i++)
        if (buf[at + i] != scalar[i]) {
            fprintf(stderr, "  first differing byte [%zu]: 0x%02x, expected 0x%02x\n", i,
                    buf[at + i], scalar[i]);
            break;
        }
    /* the length word: 26 as 8 little-endian bytes */
    CHECK(le(buf + at - 12, 8) == 26);
    unlink(path);
}

static void test_text_and_restart(const char *dir)
{
    fh_tfevents w;
    fh_error err;
    CHECK_MSG(fh_tfevents_open(&w, dir, 3.0, &err) == FH_OK, "%s", err.message);
    fh_tfevents_session_start(&w, 3.0, 7);
    fh_tfevents_text(&w, 3.0, 0, "config", "hi");
    CHECK(fh_tfevents_flush(&w) == 0);
    char path[FH_TFEVENTS_PATH_MAX];
    snprintf(path, sizeof path, "%s", w.path);
    fh_tfevents_close(&w);
    uint8_t buf[4096];
    size_t n = read_file(path, buf, sizeof buf), at = 0, len = 0;
    CHECK(walk_records(buf, n, 1, &at, &len) == 3);
    /* Event{wall_time 3.0, step 7, session_log (field 7) {status START (field 1: 1)}} */
    const uint8_t restart[] = {0x09, 0, 0, 0, 0, 0, 0, 0x08, 0x40, 0x10, 7, 0x3a, 2, 0x08, 1};
    CHECK(len == sizeof restart && memcmp(buf + at, restart, len) == 0);
    walk_records(buf, n, 2, &at, &len);
    /* Event{wall_time 3.0, summary {value {tag "config", tensor (field 8) {dtype DT_STRING
     * (7), tensor_shape (field 2) {dim (field 2) {size 1}}, string_val (field 8) "hi"},
     * metadata (field 9) {plugin_data (field 1) {plugin_name "text"}}}}} (step 0: left
     * out) */
    const uint8_t text[] = {0x09, 0, 0, 0, 0, 0, 0, 0x08, 0x40, 0x2a, 34, 0x0a, 32,
                            0x0a, 6, 'c', 'o', 'n', 'f', 'i', 'g',
                            0x42, 12, 0x08, 7, 0x12, 4, 0x12, 2, 0x08, 1, 0x42, 2, 'h', 'i',
                            0x4a, 8, 0x0a, 6, 0x0a, 4, 't', 'e', 'x', 't'};
    CHECK_MSG(len == sizeof text && memcmp(buf + at, text, len) == 0, "text record: %zu bytes, "
              "expected %zu", len, sizeof text);
    unlink(path);
}

static void test_failures(const char *dir)
{
    fh_tfevents w;
    fh_error err;
    char missing[256];
    snprintf(missing, sizeof missing, "%s/no/such/dir", dir);
    CHECK(fh_tfevents_open(&w, missing, 1.0, &err) != FH_OK);
    CHECK_MSG(strstr(err.message, missing) && strstr(err.message, "No such file"), "%s",
              err.message);
    fh_tfevents_scalar(&w, 1.0, 1, "x", 1.0f); /* a closed writer takes it and does nothing */
    CHECK(fh_tfevents_flush(&w) == 0 && !w.open);
    fh_tfevents_close(&w);

    /* a file size limit cuts the second flush part-way: the file goes back to its last
     * whole record, the writer says why and writes nothing more */
    CHECK_MSG(fh_tfevents_open(&w, dir, 1.0, &err) == FH_OK, "%s", err.message);
    fh_tfevents_scalar(&w, 1.0, 1, "x", 1.0f);
    CHECK(fh_tfevents_flush(&w) == 0);
    struct stat sb;
    CHECK(stat(w.path, &sb) == 0 && sb.st_size == w.written);
    off_t whole = sb.st_size;
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fh_tfevents_text(&w, 1.0, 2, "big", big);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)whole + 100;
    signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of the signal */
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int flushed = fh_tfevents_flush(&w);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(flushed == -1 && w.failed);
    CHECK_MSG(strstr(w.warning, w.path) && strstr(w.warning, "too large") &&
                  strstr(w.warning, "metrics.csv"), "%s", w.warning);
    CHECK(stat(w.path, &sb) == 0 && sb.st_size == whole);
    fh_tfevents_scalar(&w, 1.0, 3, "x", 3.0f);
    CHECK(fh_tfevents_flush(&w) == -1);
    char path[FH_TFEVENTS_PATH_MAX];
    snprintf(path, sizeof path, "%s", w.path);
    fh_tfevents_close(&w);
    CHECK(stat(path, &sb) == 0 && sb.st_size == whole);
    uint8_t buf[4096];
    size_t n = read_file(path, buf, sizeof buf), at, len;
    CHECK(walk_records(buf, n, 0, &at, &len) == 2); /* the version and the first scalar */
    unlink(path);

    /* two writers in one directory in one second: two files, never one shared */
    fh_tfevents a, b;
    CHECK(fh_tfevents_open(&a, dir, 1.0, &err) == FH_OK);
    CHECK(fh_tfevents_open(&b, dir, 1.0, &err) == FH_OK);
    CHECK(strcmp(a.path, b.path) != 0);
    unlink(a.path);
    unlink(b.path);
    fh_tfevents_close(&a);
    fh_tfevents_close(&b);
}

int main(void)
{
    char dir[] = "/tmp/fh_tfevents_XXXXXX";
    if (!mkdtemp(dir))
        fh_test_skip("cannot create a temporary directory");
    test_crc32c();
    test_scalar_bytes(dir);
    test_text_and_restart(dir);
    test_failures(dir);
    CHECK_MSG(rmdir(dir) == 0, "%s holds files it should not", dir);
    return fh_test_finish();
}
