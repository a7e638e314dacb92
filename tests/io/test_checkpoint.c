/* test_checkpoint.c — training checkpoints: bit-exact round trip of every saved field;
 * truncated, corrupted (bad JSON, bad offsets), wrong-shape, wrong-dtype, wrong-key and
 * foreign files each fail with a message naming the file and the fault, leave the
 * caller's objects untouched and the good checkpoint file byte-identical; failed saves
 * (blocked temporary, invalid extra) leave the previous file byte-identical. */
#include <sys/stat.h>

#include "ckpt_fixture.h"
#include "foxhunt/checkpoint.h"
#include "io_test_helpers.h"
#include "test_util.h"

static char g_dir[64];
static unsigned char *g_good;
static size_t g_good_len;

static const char *tpath(const char *name)
{
    static char buf[8][256];
    static int k = 0;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

/* load `path` into a sentinel-filled fixture: must fail, mention path + needle, and
 * leave the fixture exactly as it was */
static void expect_load_fails(const char *path, const char *needle, fixture *sentinel,
                              const fixture *pristine)
{
    fh_error err;
    fh_error_clear(&err);
    char *cfg = (char *)"unchanged";
    fh_status st = fh_checkpoint_load(path, &sentinel->ck, &cfg, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "%s: load returned %d: %s", path, (int)st, err.message);
    CHECK_MSG(strstr(err.message, path) != NULL && strstr(err.message, needle) != NULL,
              "message \"%s\" should name %s and say \"%s\"", err.message, path, needle);
    CHECK_MSG(fixture_equal(sentinel, pristine), "failed load of %s changed the caller's "
              "objects", path);
    CHECK(cfg == NULL);
    CHECK_MSG(io_same_bytes(tpath("good.safetensors"), g_good, g_good_len),
              "good checkpoint changed while loading %s", path);
}

int main(void)
{
    fh_nn_set_threads(1);
    snprintf(g_dir, sizeof g_dir, "/tmp/fh_ck_XXXXXX");
    if (!mkdtemp(g_dir))
        fh_test_skip("cannot create a temporary directory");
    fixture src, dst, sentinel, pristine;
    CHECK(fixture_init(&src, 1) == 0);
    CHECK(fixture_init(&dst, 0) == 0);
    CHECK(fixture_init(&sentinel, 0) == 0);
    CHECK(fixture_init(&pristine, 0) == 0);
    fh_error err;
    char good[256];
    snprintf(good, sizeof good, "%s", tpath("good.safetensors"));
    CHECK_MSG(fh_checkpoint_save(good, &src.ck, FIX_CONFIG, &err) == FH_OK, "%s", err.message);
    CHECK(access(tpath("good.safetensors.tmp"), F_OK) != 0);
    g_good = io_read_all(good, &g_good_len);
    CHECK(g_good != NULL);

    /* round trip, bit-exact */
    char *cfg = NULL;
    CHECK(!fixture_equal(&src, &dst));
    CHECK_MSG(fh_checkpoint_load(good, &dst.ck, &cfg, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fixture_equal(&src, &dst), "round trip is not bit-exact");
    CHECK(dst.extra.present == 1);
    CHECK(cfg && strcmp(cfg, FIX_CONFIG) == 0);
    free(cfg);
    /* saving what was loaded gives the same bytes */
    CHECK(fh_checkpoint_save(tpath("again.safetensors"), &dst.ck, FIX_CONFIG, &err) == FH_OK);
    CHECK(io_same_bytes(tpath("again.safetensors"), g_good, g_good_len));
    /* a subset can be loaded (e.g. eval: actor + norm only); optional extras may be absent */
    {
        fixture part;
        fixture_init(&part, 0);
        fh_checkpoint ck = {0};
        ck.nets[FH_NET_ACTOR] = &part.nets[0];
        ck.norm = &part.norm;
        fh_checkpoint_extra opt = {.name = "not.there", .dtype = FH_DTYPE_F32, .rank = 1,
                                   .shape = {1}, .data = part.lr_frac, .optional = 1};
        ck.extras = &opt;
        ck.n_extras = 1;
        CHECK_MSG(fh_checkpoint_load(good, &ck, NULL, &err) == FH_OK, "%s", err.message);
        CHECK(memcmp(part.nets[0].mem, src.nets[0].mem, 4 * src.nets[0].n_params * 4) == 0);
        CHECK(opt.present == 0 && part.lr_frac[0] == -1);
        fixture_free(&part);
    }

    /* truncated: half the file; and the last byte missing */
    unsigned char *half = g_good;
    CHECK(io_write_all(tpath("trunc.safetensors"), half, g_good_len / 2) == 0);
    expect_load_fails(tpath("trunc.safetensors"), "truncated", &sentinel, &pristine);
    CHECK(io_write_all(tpath("trunc1.safetensors"), half, g_good_len - 1) == 0);
    expect_load_fails(tpath("trunc1.safetensors"), "truncated", &sentinel, &pristine);
    CHECK(io_write_all(tpath("trunc8.safetensors"), half, 5) == 0);
    expect_load_fails(tpath("trunc8.safetensors"), "too short", &sentinel, &pristine);

    /* bad JSON: a structural character replaced */
    CHECK(io_rewrite_header(tpath("json.safetensors"), good, "\"data_offsets\":[", "\"data_offsets\":{") == 0);
    expect_load_fails(tpath("json.safetensors"), "does not parse", &sentinel, &pristine);
    /* bad offsets: the first tensor's span shifted */
    CHECK(io_rewrite_header(tpath("offs.safetensors"), good, "\"data_offsets\":[0,", "\"data_offsets\":[4,") == 0);
    expect_load_fails(tpath("offs.safetensors"), "data_offsets", &sentinel, &pristine);
    /* wrong shape: the first layer transposed (same byte count) */
    CHECK(io_rewrite_header(tpath("shape.safetensors"), good, "\"shape\":[128,54]", "\"shape\":[54,128]") == 0);
    expect_load_fails(tpath("shape.safetensors"), "\"policy_layer_0.weight\": wrong shape [54, 128], expected [128, 54]", &sentinel, &pristine);
    /* wrong key: a critic layer renamed */
    CHECK(io_rewrite_header(tpath("key.safetensors"), good, "\"value_layer_3.bias\"", "\"value_layer_9.bias\"") == 0);
    expect_load_fails(tpath("key.safetensors"), "missing key \"value_layer_3.bias\"", &sentinel, &pristine);
    /* wrong dtype (same size) */
    CHECK(io_rewrite_header(tpath("dtype.safetensors"), good, "\"norm.mean\":{\"dtype\":\"F32\"", "\"norm.mean\":{\"dtype\":\"I32\"") == 0);
    expect_load_fails(tpath("dtype.safetensors"), "\"norm.mean\": wrong dtype I32, expected F32", &sentinel, &pristine);
    /* not a foxhunt checkpoint */
    CHECK(io_rewrite_header(tpath("foreign.safetensors"), good, "\"format\":\"foxhunt.checkpoint\"", "\"format\":\"other\"") == 0);
    expect_load_fails(tpath("foreign.safetensors"), "not a foxhunt checkpoint", &sentinel, &pristine);
    /* the caller expects another episode count */
    sentinel.ck.rng_rows = pristine.ck.rng_rows = 64;
    expect_load_fails(good, "\"rng.episodes\": wrong shape [128, 2], expected [64, 2]", &sentinel, &pristine);
    sentinel.ck.rng_rows = pristine.ck.rng_rows = FIX_RNG_ROWS;
    /* missing file */
    expect_load_fails(tpath("absent.safetensors"), "cannot open", &sentinel, &pristine);

    /* failed saves leave the previous file byte-identical */
    src.nets[0].params[0] = 12345.0f; /* a different state that must not land */
    CHECK(mkdir(tpath("good.safetensors.tmp"), 0700) == 0);
    CHECK(fh_checkpoint_save(good, &src.ck, FIX_CONFIG, &err) == FH_ERR_FAILURE);
    CHECK_MSG(strstr(err.message, good) != NULL, "%s", err.message);
    CHECK(io_same_bytes(good, g_good, g_good_len));
    rmdir(tpath("good.safetensors.tmp"));
    fh_checkpoint_extra clash = {.name = "policy_layer_0.bias", .dtype = FH_DTYPE_F32,
                                 .rank = 1, .shape = {1}, .data = src.lr_frac};
    src.ck.extras = &clash;
    CHECK(fh_checkpoint_save(good, &src.ck, FIX_CONFIG, &err) == FH_ERR_FAILURE);
    CHECK_MSG(strstr(err.message, "twice") != NULL, "%s", err.message);
    CHECK(io_same_bytes(good, g_good, g_good_len));
    /* a stale .tmp left by a crash is harmless: loads ignore it, saves replace it */
    CHECK(io_write_all(tpath("good.safetensors.tmp"), "junk", 4) == 0);
    CHECK(fh_checkpoint_load(good, &dst.ck, NULL, &err) == FH_OK);
    src.ck.extras = &src.extra;
    CHECK(fh_checkpoint_save(good, &src.ck, NULL, &err) == FH_OK);
    CHECK(access(tpath("good.safetensors.tmp"), F_OK) != 0);
    CHECK(fh_checkpoint_load(good, &dst.ck, &cfg, &err) == FH_OK);
    CHECK(dst.nets[0].params[0] == 12345.0f && cfg == NULL);

    free(g_good);
    fixture_free(&src);
    fixture_free(&dst);
    fixture_free(&sentinel);
    fixture_free(&pristine);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "note: could not remove %s\n", g_dir);
    return fh_test_finish();
}
