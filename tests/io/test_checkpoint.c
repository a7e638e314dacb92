/* test_checkpoint.c — training checkpoints: bit-exact round trip of every saved field;
 * truncated, corrupted (bad JSON, bad offsets), wrong-shape, wrong-dtype, wrong-key and
 * foreign files each fail with a message naming the file and the fault, leave the
 * caller's objects untouched and the good checkpoint file byte-identical; failed saves
 * (blocked temporary, invalid extra) leave the previous file byte-identical.
 * Non-finite floats (issue 19): a NaN or infinity poked into a weight, an Adam moment,
 * the normalisation or an F64 extra, asked for or not, and a norm.std <= 0, each refused
 * at load naming the key and element; a save with a NaN is refused and writes nothing.
 * Data identity: the FNV-1a hash of known bars equals the documented numpy formula's
 * value; one ulp or one bar less is a difference named in the message; the identity
 * round-trips through the data.* metadata; a file without it loads with data_present 0;
 * partial or malformed data.* metadata is refused; a path that is not UTF-8 is escaped.
 * Actor-only checkpoints: exactly the actor's params, norm.* and the metadata (kind,
 * config, data.*), bit-identical to the full file's; an eval-shaped load reads them and
 * zeroes the actor's Adam state, a resume-shaped one is refused saying the file is
 * actor-only and touches nothing; a missing actor key, a wrong shape, an unknown kind
 * are refused; saves that lack the actor, norm or config, or add anything, write
 * nothing; a file without Adam state and without "kind" names the fix. */
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

/* bars of 3 with known values (the hash below is numpy's, docs/CHECKPOINTS.md) */
static void make_bars(fh_bars *b, int64_t *time, double (*v)[3])
{
    static const double init[5][3] = {{1.5, 2.5, 3.5}, {2, 3, 4}, {1, 2, 3},
                                      {1.75, 2.25, 3.25}, {10, 0, 5.5}};
    memcpy(v, init, sizeof init);
    time[0] = 1000;
    time[1] = 2000;
    time[2] = 3000;
    memset(b, 0, sizeof *b);
    b->n = 3;
    b->time = time;
    b->open = v[0];
    b->high = v[1];
    b->low = v[2];
    b->close = v[3];
    b->volume = v[4];
}

static void test_data_identity(fixture *src)
{
    fh_error err;
    int64_t time[3];
    double v[5][3];
    fh_bars bars;
    make_bars(&bars, time, v);
    fh_data_identity a, b;
    fh_data_identity_of(&a, &bars, "data/spy.csv");
    /* b"".join(x.astype("<i8" or "<f8").tobytes() ...) through FNV-1a 64 in Python */
    CHECK_MSG(a.hash == 0xbd4a66cbc8e6f63bULL, "hash %016llx", (unsigned long long)a.hash);
    CHECK(a.n_bars == 3 && a.first_time == 1000 && a.last_time == 3000);
    CHECK(strcmp(a.source, "data/spy.csv") == 0);
    char why[2048];
    fh_data_identity_of(&b, &bars, "elsewhere/spy.csv");
    CHECK_MSG(fh_data_identity_same(&a, &b, why, sizeof why), "a moved file is the same data");
    v[3][2] = nextafter(v[3][2], 4.0); /* one ulp of one close */
    fh_data_identity_of(&b, &bars, "data/spy.csv");
    CHECK(!fh_data_identity_same(&a, &b, why, sizeof why) && strstr(why, "content hash") &&
          strstr(why, "bd4a66cbc8e6f63b") && !strstr(why, "bars,"));
    bars.n = 2; /* one bar less: count, last time and hash */
    fh_data_identity_of(&b, &bars, "data/btc.csv");
    CHECK_MSG(!fh_data_identity_same(&a, &b, why, sizeof why) &&
              strstr(why, "3 bars, now 2") && strstr(why, "last bar 1970-01-01 00:50:00, now "
              "1970-01-01 00:33:20") && strstr(why, "source data/spy.csv, now data/btc.csv"),
              "%s", why);
    /* a path that is not UTF-8 (and a control byte) is escaped; valid UTF-8 is kept */
    fh_data_identity_of(&b, &bars, "d\xff/\x01x\xc3\xa9.csv");
    CHECK_MSG(strcmp(b.source, "d\\xFF/\\x01x\xc3\xa9.csv") == 0, "%s", b.source);

    /* round trip through the data.* metadata */
    fh_checkpoint ck = src->ck;
    ck.data = &b;
    const char *with = tpath("identity.safetensors");
    CHECK_MSG(fh_checkpoint_save(with, &ck, NULL, &err) == FH_OK, "%s", err.message);
    fh_data_identity got;
    memset(&got, 0x5A, sizeof got);
    fh_checkpoint lk = {0};
    lk.data = &got;
    CHECK_MSG(fh_checkpoint_load(with, &lk, NULL, &err) == FH_OK, "%s", err.message);
    CHECK(lk.data_present == 1 && got.n_bars == b.n_bars && got.first_time == b.first_time &&
          got.last_time == b.last_time && got.hash == b.hash &&
          strcmp(got.source, b.source) == 0);
    /* a checkpoint from before the identity: present 0, the caller's struct untouched */
    memset(&got, 0x5A, sizeof got);
    fh_data_identity untouched = got;
    lk.data_present = 7;
    CHECK(fh_checkpoint_load(tpath("good.safetensors"), &lk, NULL, &err) == FH_OK);
    CHECK(lk.data_present == 0 && memcmp(&got, &untouched, sizeof got) == 0);
    /* partial or malformed identities are refused */
    CHECK(io_rewrite_header(tpath("id1.safetensors"), with, "\"data.hash\"", "\"data.hosh\"") == 0);
    fh_status st = fh_checkpoint_load(tpath("id1.safetensors"), &lk, NULL, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "\"data.hash\" is missing"), "%s",
              err.message);
    CHECK(io_rewrite_header(tpath("id2.safetensors"), with, "\"data.bars\":\"2\"",
                            "\"data.bars\":\"2x\"") == 0);
    st = fh_checkpoint_load(tpath("id2.safetensors"), &lk, NULL, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "\"data.bars\" is \"2x\""), "%s",
              err.message);
    /* loads that do not ask for the identity do not look at it */
    lk.data = NULL;
    CHECK(fh_checkpoint_load(tpath("id2.safetensors"), &lk, NULL, &err) == FH_OK);
}

/* an evaluation's request: the actor (with its Adam buffers) and the normalisation */
static void eval_request(fh_checkpoint *ck, fixture *fx)
{
    memset(ck, 0, sizeof *ck);
    ck->nets[FH_NET_ACTOR] = &fx->nets[FH_NET_ACTOR];
    ck->norm = &fx->norm;
}

/* an eval-shaped load of path must fail with needle in the message and change nothing */
static void expect_eval_load_fails(const char *path, const char *needle)
{
    fixture got, pristine;
    CHECK(fixture_init(&got, 0) == 0 && fixture_init(&pristine, 0) == 0);
    fh_checkpoint ck;
    eval_request(&ck, &got);
    fh_error err;
    fh_status st = fh_checkpoint_load(path, &ck, NULL, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, path) && strstr(err.message, needle),
              "%s: status %d, \"%s\" should say \"%s\"", path, (int)st, err.message, needle);
    CHECK_MSG(fixture_equal(&got, &pristine), "failed load of %s changed the caller's objects",
              path);
    fixture_free(&got);
    fixture_free(&pristine);
}

static void test_actor_only(fixture *src)
{
    fh_error err;
    char actor[256], bad[256]; /* tpath's buffers rotate */
    snprintf(actor, sizeof actor, "%s", tpath("actor.safetensors"));
    snprintf(bad, sizeof bad, "%s", tpath("bad_actor.safetensors"));
    fh_data_identity id = {.source = "synthetic seed=42 bars=3000", .n_bars = 3000,
                           .first_time = 1000, .last_time = 2000, .hash = 0x0123456789abcdefULL};
    const char *mk[1] = {"export.iteration"}, *mv[1] = {"42"};
    fh_checkpoint ack = {0};
    ack.actor_only = 1;
    ack.nets[FH_NET_ACTOR] = &src->nets[FH_NET_ACTOR];
    ack.norm = &src->norm;
    ack.data = &id;
    ack.meta_keys = mk;
    ack.meta_values = mv;
    ack.n_meta = 1;
    CHECK_MSG(fh_checkpoint_save(actor, &ack, FIX_CONFIG, &err) == FH_OK, "%s", err.message);

    /* exactly the actor's params and norm.*, bit-identical to the full file's */
    fh_st_file a, full;
    CHECK(fh_st_read(&a, actor, &err) == FH_OK);
    CHECK(fh_st_read(&full, tpath("good.safetensors"), &err) == FH_OK);
    const fh_mlp *m = &src->nets[FH_NET_ACTOR];
    CHECK_MSG(a.n_tensors == (size_t)m->n_tensors + 2, "%zu tensors", a.n_tensors);
    for (size_t i = 0; i < a.n_tensors; i++) {
        const fh_st_tensor *t = &a.tensors[i], *u = fh_st_find(&full, t->name);
        CHECK_MSG(u && u->dtype == t->dtype && u->rank == t->rank && u->nbytes == t->nbytes &&
                  memcmp(u->shape, t->shape, (size_t)t->rank * sizeof t->shape[0]) == 0 &&
                  memcmp(u->data, t->data, t->nbytes) == 0, "%s differs from the full file's",
                  t->name);
        CHECK_MSG(strncmp(t->name, "policy_", 7) == 0 || strncmp(t->name, "norm.", 5) == 0,
                  "unexpected key %s", t->name);
    }
    const char *kind = fh_st_metadata(&a, "kind"), *cfg_meta = fh_st_metadata(&a, "config");
    CHECK(kind && strcmp(kind, "actor") == 0 && cfg_meta && strcmp(cfg_meta, FIX_CONFIG) == 0);
    CHECK(fh_st_metadata(&a, "data.hash") && fh_st_metadata(&a, "export.iteration"));
    CHECK(fh_st_metadata(&full, "kind") == NULL); /* a full checkpoint says no kind */
    fh_st_file_free(&a);
    fh_st_file_free(&full);

    /* an evaluation's load: params and norm as saved; the Adam state a fresh one's */
    fixture got;
    CHECK(fixture_init(&got, 0) == 0);
    fh_checkpoint ck;
    eval_request(&ck, &got);
    fh_data_identity gid;
    ck.data = &gid;
    char *cfg = NULL;
    CHECK_MSG(fh_checkpoint_load(actor, &ck, &cfg, &err) == FH_OK, "%s", err.message);
    const fh_mlp *g = &got.nets[FH_NET_ACTOR];
    CHECK(ck.actor_only == 1 && ck.data_present == 1 && gid.hash == id.hash);
    CHECK(memcmp(g->params, m->params, m->n_params * sizeof(float)) == 0);
    CHECK(memcmp(&got.norm, &src->norm, sizeof got.norm) == 0);
    int zero = g->adam_step == 0;
    for (size_t k = 0; k < g->n_params; k++)
        zero &= g->adam_m[k] == 0.0f && g->adam_v[k] == 0.0f;
    CHECK_MSG(zero, "the actor's Adam state is not a fresh one after an actor-only load");
    CHECK(cfg && strcmp(cfg, FIX_CONFIG) == 0);
    free(cfg);
    /* a full file read afterwards through the same struct says it is not actor-only */
    CHECK(fh_checkpoint_load(tpath("good.safetensors"), &ck, NULL, &err) == FH_OK &&
          ck.actor_only == 0);
    fixture_free(&got);

    /* a resume's request (every network, seed, iteration, episodes) is refused, and so is
     * one for a required extra; nothing is touched */
    fixture sentinel, pristine;
    CHECK(fixture_init(&sentinel, 0) == 0 && fixture_init(&pristine, 0) == 0);
    expect_load_fails(actor, "this is an actor-only checkpoint (foxhunt export --actor); it "
                      "cannot resume training: resume from the full checkpoint", &sentinel,
                      &pristine);
    sentinel.ck.nets[FH_NET_CRITIC] = sentinel.ck.nets[FH_NET_CURIOSITY] = NULL;
    pristine.ck.nets[FH_NET_CRITIC] = pristine.ck.nets[FH_NET_CURIOSITY] = NULL;
    expect_load_fails(actor, "not run.seed", &sentinel, &pristine);
    sentinel.ck.seed = NULL;
    sentinel.ck.iteration = NULL;
    sentinel.ck.rng_state = NULL;
    expect_load_fails(actor, "not ppo.lr_frac", &sentinel, &pristine);
    fixture_free(&sentinel);
    fixture_free(&pristine);

    /* damaged actor-only files: a missing actor key, a wrong shape, an unknown kind */
    CHECK(io_rewrite_header(tpath("a_key.safetensors"), actor, "\"policy_output.bias\"",
                            "\"policy_outpot.bias\"") == 0);
    expect_eval_load_fails(tpath("a_key.safetensors"), "missing key \"policy_output.bias\"");
    CHECK(io_rewrite_header(tpath("a_shape.safetensors"), actor, "\"shape\":[64,128]",
                            "\"shape\":[128,64]") == 0);
    expect_eval_load_fails(tpath("a_shape.safetensors"), "\"policy_layer_1.weight\": wrong "
                           "shape [128, 64], expected [64, 128]");
    CHECK(io_rewrite_header(tpath("a_kind.safetensors"), actor, "\"kind\":\"actor\"",
                            "\"kind\":\"critic\"") == 0);
    expect_eval_load_fails(tpath("a_kind.safetensors"), "\"kind\" is \"critic\"");
    /* without its kind the file is a full checkpoint missing its Adam state: said so */
    CHECK(io_rewrite_header(tpath("a_nokind.safetensors"), actor, "\"kind\":\"actor\"",
                            "\"kinf\":\"actor\"") == 0);
    expect_eval_load_fails(tpath("a_nokind.safetensors"), "missing key \"adam.m.policy_layer_0"
                           ".weight\" (a checkpoint without Adam state must say __metadata__ "
                           "\"kind\": \"actor\"");
    /* a NaN in an actor-only file is refused like anywhere else */
    const float nan_f = NAN;
    CHECK(fix_poke(tpath("a_nan.safetensors"), actor, "policy_output.weight", 9, &nan_f, 4) == 0);
    expect_eval_load_fails(tpath("a_nan.safetensors"), "\"policy_output.weight\": element 9 "
                           "is nan");

    /* saves that lack what an evaluation needs, or hold more, write nothing */
    fh_checkpoint b = ack;
    CHECK(fh_checkpoint_save(bad, &b, NULL, &err) == FH_ERR_FAILURE &&
          strstr(err.message, "missing the config"));
    b.norm = NULL;
    CHECK(fh_checkpoint_save(bad, &b, FIX_CONFIG, &err) == FH_ERR_FAILURE &&
          strstr(err.message, "missing the normalisation"));
    b = ack;
    b.nets[FH_NET_CRITIC] = &src->nets[FH_NET_CRITIC];
    CHECK_MSG(fh_checkpoint_save(bad, &b, FIX_CONFIG, &err) == FH_ERR_FAILURE &&
              strstr(err.message, bad) && strstr(err.message, "also given the critic's weights"),
              "%s", err.message);
    b = ack;
    b.extras = &src->extra;
    b.n_extras = 1;
    CHECK(fh_checkpoint_save(bad, &b, FIX_CONFIG, &err) == FH_ERR_FAILURE &&
          strstr(err.message, "also given ppo.lr_frac"));
    fh_checkpoint_extra opt = src->extra;
    opt.optional = 1;
    b.extras = &opt;
    CHECK(fh_checkpoint_save(bad, &b, FIX_CONFIG, &err) == FH_ERR_FAILURE &&
          strstr(err.message, "also given extra tensors"));
    b = ack;
    const char *kk[1] = {"kind"}, *kv[1] = {"full"};
    b.meta_keys = kk;
    b.meta_values = kv;
    CHECK(fh_checkpoint_save(bad, &b, FIX_CONFIG, &err) == FH_ERR_FAILURE &&
          strstr(err.message, "\"kind\" is the checkpoint's own key"));
    CHECK(access(bad, F_OK) != 0 && access(tpath("bad_actor.safetensors.tmp"), F_OK) != 0);
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

    /* non-finite floats: refused at load wherever they are, with key and element */
    {
        const float nan_f = NAN, inf_f = INFINITY, zero_f = 0.0f, neg_f = -1.0f;
        const double nan_d = NAN;
        struct {
            const char *key;
            size_t index;
            const void *bytes;
            size_t len;
            const char *want;
        } pokes[] = {
            {"policy_layer_1.weight", 123, &nan_f, 4, "key \"policy_layer_1.weight\": element 123 is nan"},
            {"value_output.bias", 0, &inf_f, 4, "key \"value_output.bias\": element 0 is inf"},
            {"adam.m.value_layer_2.bias", 7, &inf_f, 4, "key \"adam.m.value_layer_2.bias\": element 7 is inf"},
            {"adam.v.fc2.weight", 2047, &nan_f, 4, "key \"adam.v.fc2.weight\": element 2047 is nan"},
            {"norm.mean", 50, &nan_f, 4, "key \"norm.mean\": element 50 is nan"},
            {"norm.std", 3, &zero_f, 4, "key \"norm.std\": element 3 is 0; a standard deviation is > 0"},
            {"norm.std", 0, &neg_f, 4, "key \"norm.std\": element 0 is -1"},
            {"ppo.lr_frac", 1, &nan_d, 8, "key \"ppo.lr_frac\": element 1 is nan"},
        };
        for (size_t i = 0; i < sizeof pokes / sizeof pokes[0]; i++) {
            CHECK(fix_poke(tpath("nan.safetensors"), good, pokes[i].key, pokes[i].index,
                           pokes[i].bytes, pokes[i].len) == 0);
            expect_load_fails(tpath("nan.safetensors"), pokes[i].want, &sentinel, &pristine);
        }
        /* a tensor the caller does not ask for (eval loads the actor and norm only) */
        CHECK(fix_poke(tpath("nan.safetensors"), good, "value_layer_0.weight", 5, &nan_f, 4) == 0);
        fixture part;
        fixture_init(&part, 0);
        fh_checkpoint ck = {0};
        ck.nets[FH_NET_ACTOR] = &part.nets[0];
        ck.norm = &part.norm;
        fh_status st = fh_checkpoint_load(tpath("nan.safetensors"), &ck, NULL, &err);
        CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "\"value_layer_0.weight\": element 5 is nan"),
                  "%d: %s", (int)st, err.message);
        CHECK(part.nets[0].params[0] == -7.0f && part.norm.std[0] == -1.0f);
        fixture_free(&part);
        /* a save with a NaN writes nothing */
        float keep = src.nets[1].adam_v[5];
        src.nets[1].adam_v[5] = NAN;
        st = fh_checkpoint_save(good, &src.ck, FIX_CONFIG, &err);
        CHECK_MSG(st == FH_ERR_FAILURE && strstr(err.message, good) &&
                  strstr(err.message, "not saved") &&
                  strstr(err.message, "\"adam.v.value_layer_0.weight\": element 5 is nan"),
                  "%d: %s", (int)st, err.message);
        CHECK(io_same_bytes(good, g_good, g_good_len));
        CHECK(access(tpath("good.safetensors.tmp"), F_OK) != 0);
        src.nets[1].adam_v[5] = keep;
    }

    test_actor_only(&src); /* while good.safetensors is src, byte for byte */

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

    test_data_identity(&src);

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
