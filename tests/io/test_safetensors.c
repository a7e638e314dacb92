/* test_safetensors.c — the generic safetensors writer/reader: a round trip of every
 * dtype (bit-exact, shapes, metadata, scalar and empty tensors), the header layout
 * (8-byte aligned, starts with '{'), and one malformed file per validation rule, each
 * of which must fail with FH_ERR_INPUT and a message naming the file and the fault.
 * Issue 19: the reader refuses a FIFO, a directory or a device without blocking; the
 * writer refuses names and metadata that are not UTF-8 (a run directory named with
 * byte 0xff made checkpoints Python's safetensors cannot read), and what it writes with
 * non-ASCII UTF-8 metadata Python reads back (when python3 with safetensors is here). */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "foxhunt/safetensors.h"
#include "foxhunt/text.h"
#include "io_test_helpers.h"
#include "test_util.h"

static char g_dir[64];

static const char *tpath(const char *name)
{
    static char buf[8][256];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

/* reads path, expects failure with both path and `needle` in the message */
static void expect_bad(const char *name, const char *header, const void *data, size_t n,
                       const char *needle)
{
    const char *p = tpath(name);
    CHECK(io_write_raw(p, header, data, n) == 0);
    fh_st_file f;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_st_read(&f, p, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "%s: status %d (message: %s)", name, (int)st, err.message);
    CHECK_MSG(strstr(err.message, p) && strstr(err.message, needle),
              "%s: message \"%s\" should name the file and say \"%s\"", name, err.message,
              needle);
    CHECK(f.n_tensors == 0 && f.file == NULL);
    fh_st_file_free(&f);
}

static void test_round_trip(void)
{
    float f32[6] = {1.5f, -2.25f, 3.0f, 1e-30f, -0.0f, 7.0f};
    double f64[4] = {3.141592653589793, -1e300, 0.1, 2.0};
    int32_t i32[4] = {-1, 2, INT32_MAX, INT32_MIN};
    int64_t i64 = INT64_MIN + 5;
    uint64_t u64[3] = {0, UINT64_MAX, 0x9E3779B97F4A7C15ull};
    uint8_t u8[5] = {0, 1, 127, 128, 255};
    int64_t s23[2] = {2, 3}, s4[1] = {4}, s22[2] = {2, 2}, s3[1] = {3}, s5[1] = {5},
            s0[2] = {0, 7};
    fh_st_writer w;
    fh_error err;
    fh_st_writer_init(&w);
    CHECK(fh_st_writer_add(&w, "a.f32", FH_DTYPE_F32, 2, s23, f32, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "b.u8", FH_DTYPE_U8, 1, s5, u8, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "c.f64", FH_DTYPE_F64, 1, s4, f64, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "d.i32", FH_DTYPE_I32, 2, s22, i32, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "e.i64", FH_DTYPE_I64, 0, NULL, &i64, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "f.u64", FH_DTYPE_U64, 1, s3, u64, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "g.empty", FH_DTYPE_F32, 2, s0, NULL, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "a.f32", FH_DTYPE_F32, 2, s23, f32, &err) == FH_ERR_FAILURE);
    CHECK(strstr(err.message, "twice") != NULL);
    CHECK(fh_st_writer_add(&w, "__metadata__", FH_DTYPE_F32, 2, s23, f32, &err) != FH_OK);
    CHECK(fh_st_writer_set_metadata(&w, "note", "hello \"world\"\n", &err) == FH_OK);
    CHECK(fh_st_writer_set_metadata(&w, "k", "1", &err) == FH_OK);
    CHECK(fh_st_writer_set_metadata(&w, "k", "2", &err) == FH_OK);
    const char *p = tpath("rt.safetensors");
    CHECK(fh_st_writer_write(&w, p, &err) == FH_OK);
    fh_st_writer_free(&w);
    fh_st_writer_free(&w);
    CHECK(access(tpath("rt.safetensors.tmp"), F_OK) != 0);

    size_t len;
    unsigned char *raw = io_read_all(p, &len);
    uint64_t h = 0;
    for (int i = 0; i < 8; i++)
        h |= (uint64_t)raw[i] << (8 * i);
    CHECK(h % 8 == 0 && raw[8] == '{');
    CHECK(len == 8 + h + 24 + 5 + 32 + 16 + 8 + 24);
    free(raw);

    fh_st_file f;
    CHECK(fh_st_read(&f, p, &err) == FH_OK);
    CHECK(f.n_tensors == 7);
    const fh_st_tensor *t;
    CHECK(fh_st_expect(&t, &f, "a.f32", FH_DTYPE_F32, 2, s23, &err) == FH_OK &&
          memcmp(t->data, f32, sizeof f32) == 0);
    CHECK(fh_st_expect(&t, &f, "b.u8", FH_DTYPE_U8, 1, s5, &err) == FH_OK &&
          memcmp(t->data, u8, sizeof u8) == 0);
    CHECK(fh_st_expect(&t, &f, "c.f64", FH_DTYPE_F64, 1, s4, &err) == FH_OK &&
          memcmp(t->data, f64, sizeof f64) == 0);
    CHECK(fh_st_expect(&t, &f, "d.i32", FH_DTYPE_I32, 2, s22, &err) == FH_OK &&
          memcmp(t->data, i32, sizeof i32) == 0);
    CHECK(fh_st_expect(&t, &f, "e.i64", FH_DTYPE_I64, 0, NULL, &err) == FH_OK &&
          memcmp(t->data, &i64, sizeof i64) == 0);
    CHECK(fh_st_expect(&t, &f, "f.u64", FH_DTYPE_U64, 1, s3, &err) == FH_OK &&
          memcmp(t->data, u64, sizeof u64) == 0);
    CHECK(fh_st_expect(&t, &f, "g.empty", FH_DTYPE_F32, 2, s0, &err) == FH_OK &&
          t->nbytes == 0);
    CHECK(fh_st_metadata(&f, "note") && strcmp(fh_st_metadata(&f, "note"), "hello \"world\"\n") == 0);
    CHECK(fh_st_metadata(&f, "k") && strcmp(fh_st_metadata(&f, "k"), "2") == 0);
    CHECK(fh_st_metadata(&f, "absent") == NULL);
    /* expectation failures say what is wrong */
    CHECK(fh_st_expect(&t, &f, "zzz", FH_DTYPE_F32, 1, s3, &err) == FH_ERR_INPUT &&
          strstr(err.message, "missing key \"zzz\""));
    CHECK(fh_st_expect(&t, &f, "a.f32", FH_DTYPE_F64, 2, s23, &err) == FH_ERR_INPUT &&
          strstr(err.message, "wrong dtype F32, expected F64"));
    int64_t s32[2] = {3, 2};
    CHECK(fh_st_expect(&t, &f, "a.f32", FH_DTYPE_F32, 2, s32, &err) == FH_ERR_INPUT &&
          strstr(err.message, "wrong shape [2, 3], expected [3, 2]"));
    fh_st_file_free(&f);
    fh_st_file_free(&f);
}

static void test_malformed(void)
{
    float d[4] = {1, 2, 3, 4};
    const char *ok = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
    /* sanity: the well-formed one reads */
    const char *p = tpath("ok.safetensors");
    CHECK(io_write_raw(p, ok, d, 16) == 0);
    fh_st_file f;
    fh_error err;
    CHECK_MSG(fh_st_read(&f, p, &err) == FH_OK, "%s", err.message);
    fh_st_file_free(&f);

    unsigned char tiny[4] = {1, 2, 3, 4};
    CHECK(io_write_all(tpath("short.safetensors"), tiny, 4) == 0);
    CHECK(fh_st_read(&f, tpath("short.safetensors"), &err) == FH_ERR_INPUT &&
          strstr(err.message, "too short"));
    /* truncated: header length claims more than the file has */
    size_t len;
    unsigned char *raw = io_read_all(p, &len);
    CHECK(io_write_all(tpath("trunc_hdr.safetensors"), raw, 30) == 0);
    CHECK(fh_st_read(&f, tpath("trunc_hdr.safetensors"), &err) == FH_ERR_INPUT &&
          strstr(err.message, "truncated"));
    CHECK(io_write_all(tpath("trunc_data.safetensors"), raw, len - 5) == 0);
    CHECK_MSG(fh_st_read(&f, tpath("trunc_data.safetensors"), &err) == FH_ERR_INPUT &&
              strstr(err.message, "truncated"), "%s", err.message);
    free(raw);
    CHECK(fh_st_read(&f, tpath("no_such_file"), &err) == FH_ERR_INPUT &&
          strstr(err.message, "cannot open"));

    expect_bad("json.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],", d, 16,
               "does not parse");
    expect_bad("notobj.safetensors", "[1, 2]", d, 16, "start with '{'");
    expect_bad("dtype.safetensors",
               "{\"x\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[0,16]}}", d, 16,
               "unsupported dtype \"BF16\"");
    expect_bad("range.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[0,20]}}", d, 16,
               "beyond");
    expect_bad("span.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", d, 16,
               "needs 12 bytes");
    expect_bad("overlap.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
               "\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]}}",
               d, 16, "overlaps");
    expect_bad("gap.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               d, 16, "gap");
    expect_bad("trailing.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}", d, 16,
               "trailing bytes");
    expect_bad("negoff.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[-4,12]}}", d, 16,
               "non-negative");
    expect_bad("meta.safetensors",
               "{\"__metadata__\":{\"a\":1},"
               "\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16,
               "not a string");
    expect_bad("dup.safetensors",
               "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               d, 16, "twice");
    expect_bad("fields.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[4]}}", d, 16,
               "data_offsets");
    /* issue 32: a NUL in a name or metadata string would cut it short ("a\u0000b" read
     * as "a"), so it is refused; an escaped backslash before u0000 is no NUL */
    expect_bad("nul_name.safetensors",
               "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d,
               16, "NUL character");
    expect_bad("nul_meta.safetensors",
               "{\"__metadata__\":{\"k\":\"v\\u0000w\"},"
               "\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 16,
               "NUL character");
    const char *escaped = "{\"a\\\\u0000b\":{\"dtype\":\"F32\",\"shape\":[4],"
                          "\"data_offsets\":[0,16]}}";
    p = tpath("backslash.safetensors");
    CHECK(io_write_raw(p, escaped, d, 16) == 0);
    CHECK_MSG(fh_st_read(&f, p, &err) == FH_OK, "%s", err.message);
    CHECK(f.n_tensors == 1 && strcmp(f.tensors[0].name, "a\\u0000b") == 0);
    fh_st_file_free(&f);
    static const struct {
        const char *json;
        int has;
        size_t at;
    } nul_cases[] = {
        {"{\"a\": \"b\"}", 0, 0},
        {"{\"a\\u0000\": 1}", 1, 3},
        {"{\"a\": \"x\\\\u0000\"}", 0, 0},  /* \\ then u0000: no NUL */
        {"{\"a\": \"x\\\\\\u0000\"}", 1, 10}, /* \\ then \u0000 */
        {"{\"a\": \"\\\"\\u0000\"}", 1, 9}, /* \" then \u0000 inside one string */
        {"{\"a\": \"\\u0001\"}", 0, 0},
        {"{\"a\": \"x\\u000", 0, 0},             /* cut short: no whole escape */
    };
    for (size_t k = 0; k < sizeof nul_cases / sizeof nul_cases[0]; k++) {
        size_t at = 99;
        int has = fh_json_string_has_nul(nul_cases[k].json, strlen(nul_cases[k].json), &at);
        CHECK_MSG(has == nul_cases[k].has && (!has || at == nul_cases[k].at),
                  "NUL case %zu (%s): %d at %zu, expected %d at %zu", k, nul_cases[k].json, has,
                  at, nul_cases[k].has, nul_cases[k].at);
    }
    /* a raw 0 byte inside a string is found too (strlen cannot see it) */
    static const char raw_nul[] = "{\"a\0b\": 1}";
    size_t at = 99;
    CHECK(fh_json_string_has_nul(raw_nul, sizeof raw_nul - 1, &at) == 1 && at == 3);
}

static void test_atomic_write(void)
{
    float d[2] = {1, 2};
    int64_t s2[1] = {2};
    fh_st_writer w;
    fh_error err;
    fh_st_writer_init(&w);
    CHECK(fh_st_writer_add(&w, "x", FH_DTYPE_F32, 1, s2, d, &err) == FH_OK);
    const char *p = tpath("atomic.safetensors");
    CHECK(fh_st_writer_write(&w, p, &err) == FH_OK);
    size_t len;
    unsigned char *before = io_read_all(p, &len);
    /* PATH.tmp blocked by a directory: the write fails, PATH is untouched */
    CHECK(mkdir(tpath("atomic.safetensors.tmp"), 0700) == 0);
    d[0] = 99;
    CHECK(fh_st_writer_write(&w, p, &err) == FH_ERR_FAILURE);
    CHECK_MSG(strstr(err.message, "untouched") || strstr(err.message, "cannot create"), "%s",
              err.message);
    CHECK(io_same_bytes(p, before, len));
    rmdir(tpath("atomic.safetensors.tmp"));
    /* a directory that does not exist */
    CHECK(fh_st_writer_write(&w, tpath("nodir/x.safetensors"), &err) == FH_ERR_FAILURE);
    free(before);
    fh_st_writer_free(&w);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: fh_st_read blocked on a FIFO (alarm after 30 s)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    _exit(1);
}

static void test_not_regular(void)
{
    const char *fifo = tpath("pipe.safetensors");
    CHECK(mkfifo(fifo, 0600) == 0);
    signal(SIGALRM, on_alarm);
    alarm(30);
    const char *paths[3] = {fifo, g_dir, "/dev/null"};
    const char *kinds[3] = {"a FIFO", "a directory", "a character device"};
    for (int k = 0; k < 3; k++) {
        fh_st_file f;
        fh_error err;
        fh_error_clear(&err);
        CHECK_MSG(fh_st_read(&f, paths[k], &err) == FH_ERR_INPUT &&
                      strstr(err.message, paths[k]) && strstr(err.message, kinds[k]),
                  "%s: %s", paths[k], err.message);
        CHECK(f.file == NULL && f.n_tensors == 0);
    }
    alarm(0);
}

static void test_utf8(void)
{
    static const struct {
        const char *s;
        int ok;
        size_t bad;
    } cases[] = {
        {"plain ascii", 1, 0},
        {"runs/\xc3\xa9t\xc3\xa9", 1, 0},          /* é */
        {"\xe2\x82\xac \xf0\x9d\x84\x9e", 1, 0},  /* € and U+1D11E */
        {"\xef\xbf\xbf", 1, 0},                    /* U+FFFF */
        {"\xf4\x8f\xbf\xbf", 1, 0},                /* U+10FFFF */
        {"runs/\xff", 0, 5},
        {"ab\x80", 0, 2},                            /* a lone continuation byte */
        {"\xc0\xaf", 0, 0},                          /* overlong '/' */
        {"\xe0\x80\xaf", 0, 0},                      /* overlong, 3 bytes */
        {"\xed\xa0\x80", 0, 0},                      /* a UTF-16 surrogate */
        {"\xf4\x90\x80\x80", 0, 0},                  /* above U+10FFFF */
        {"x\xe2\x82", 0, 1},                         /* cut short */
        {"\xc3", 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t bad = 99;
        int ok = fh_utf8_valid(cases[k].s, strlen(cases[k].s), &bad);
        CHECK_MSG(ok == cases[k].ok && (ok || bad == cases[k].bad),
                  "utf8 case %zu: valid %d (bad at %zu), expected %d (at %zu)", k, ok, bad,
                  cases[k].ok, cases[k].bad);
    }

    /* the writer refuses what is not UTF-8, naming the key */
    fh_st_writer w;
    fh_st_writer_init(&w);
    fh_error err;
    float v = 1.0f;
    int64_t one = 1;
    CHECK(fh_st_writer_set_metadata(&w, "config", "{\"out\": \"runs/\xff\"}", &err) ==
              FH_ERR_INPUT &&
          strstr(err.message, "\"config\" is not valid UTF-8 (byte 0xff at offset 14)"));
    CHECK(fh_st_writer_set_metadata(&w, "k\xfe", "v", &err) == FH_ERR_INPUT &&
          strstr(err.message, "metadata key is not valid UTF-8"));
    CHECK(fh_st_writer_add(&w, "w\xff", FH_DTYPE_F32, 1, &one, &v, &err) == FH_ERR_INPUT &&
          strstr(err.message, "tensor name is not valid UTF-8"));
    CHECK(w.n_meta == 0 && w.n_tensors == 0);

    /* non-ASCII UTF-8 is written, read back, and read by Python's safetensors */
    const char *value = "{\"out\": \"runs/\xc3\xa9t\xc3\xa9 \xe2\x82\xac\"}";
    CHECK(fh_st_writer_set_metadata(&w, "config", value, &err) == FH_OK);
    CHECK(fh_st_writer_add(&w, "w.\xc3\xa9", FH_DTYPE_F32, 1, &one, &v, &err) == FH_OK);
    const char *p = tpath("utf8.safetensors");
    CHECK_MSG(fh_st_writer_write(&w, p, &err) == FH_OK, "%s", err.message);
    fh_st_writer_free(&w);
    fh_st_file f;
    CHECK_MSG(fh_st_read(&f, p, &err) == FH_OK, "%s", err.message);
    CHECK(fh_st_metadata(&f, "config") && strcmp(fh_st_metadata(&f, "config"), value) == 0);
    fh_st_file_free(&f);
    if (system("python3 -c 'import safetensors' >/dev/null 2>&1") != 0) {
        printf("note: python3 with safetensors absent; the Python read is not checked\n");
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys; from safetensors import safe_open\n"
             "f = safe_open(sys.argv[1], \"numpy\")\n"
             "m = f.metadata()[\"config\"]\n"
             "sys.exit(0 if m == \"{\\\"out\\\": \\\"runs/\\u00e9t\\u00e9 \\u20ac\\\"}\" "
             "and list(f.keys()) == [\"w.\\u00e9\"] else 3)' '%s'",
             p);
    int rc = system(cmd);
    CHECK_MSG(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
              "python's safetensors did not read %s back (exit %d)", p,
              rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/fh_st_XXXXXX");
    if (!mkdtemp(g_dir))
        fh_test_skip("cannot create a temporary directory");
    test_round_trip();
    test_malformed();
    test_atomic_write();
    test_not_regular();
    test_utf8();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "note: could not remove %s\n", g_dir);
    return fh_test_finish();
}
