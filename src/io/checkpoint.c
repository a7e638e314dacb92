/* checkpoint.c — training checkpoints (include/foxhunt/checkpoint.h, keys in
 * docs/CHECKPOINTS.md). Save is one pass over each network's tensor table (params,
 * then Adam m and v under prefixed keys, which lie in the same layout); load validates
 * every requested key into a copy plan and only then copies, so a bad file never
 * leaves the caller half-loaded. An actor-only checkpoint is the same with the params
 * pass alone, for the actor alone. */
#include "foxhunt/checkpoint.h"
#include "foxhunt/format.h" /* fh_time_format */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK_MAX_ITEMS (FH_NET_COUNT * (3 * FH_NN_MAX_TENSORS + 1) + 8 + FH_CHECKPOINT_MAX_EXTRAS)

static const char *const k_moment_prefix[2] = {"adam.m.", "adam.v."};

static float *moment_buffer(const fh_mlp *m, int which)
{
    return which == 0 ? m->adam_m : m->adam_v;
}

/* ---- non-finite floats: refused on save and on load ---- */

/* 1 when data (count values of dtype, maybe unaligned) holds a NaN or infinity: *index
 * and *value the first. Only F32 and F64 are looked at. */
static int first_nonfinite(const void *data, fh_dtype dtype, size_t count, size_t *index,
                           double *value)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < count; i++) {
        double v;
        if (dtype == FH_DTYPE_F32) {
            float f;
            memcpy(&f, p + i * sizeof f, sizeof f);
            v = f;
        } else if (dtype == FH_DTYPE_F64) {
            memcpy(&v, p + i * sizeof v, sizeof v);
        } else {
            return 0;
        }
        if (!isfinite(v)) {
            *index = i;
            *value = v;
            return 1;
        }
    }
    return 0;
}

static size_t shape_numel(int rank, const int64_t *shape)
{
    size_t n = 1;
    for (int r = 0; r < rank; r++)
        n *= (size_t)shape[r];
    return n;
}

/* ---- data identity ---- */

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t fnv1a_u64s(uint64_t h, const void *values, size_t n)
{
    const unsigned char *p = values;
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, p + i * 8, 8);
        for (int b = 0; b < 8; b++) { /* little-endian bytes whatever the host */
            h ^= (v >> (8 * b)) & 0xFF;
            h *= FNV_PRIME;
        }
    }
    return h;
}

/* Length of the UTF-8 sequence at s (1..4), or 0 when it is not one (overlong forms,
 * surrogates and values above U+10FFFF included). */
static int utf8_sequence(const unsigned char *s, size_t left)
{
    unsigned c = s[0];
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
            : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || (size_t)len > left)
        return 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* src into dst (cap bytes) with control bytes and bytes outside valid UTF-8 as \xNN,
 * so that the metadata is valid UTF-8 JSON whatever the path's bytes; truncated at a
 * character boundary. */
static void escape_source(char *dst, size_t cap, const char *src)
{
    size_t o = 0, n = strlen(src);
    for (size_t i = 0; i < n;) {
        const unsigned char *s = (const unsigned char *)src + i;
        int len = utf8_sequence(s, n - i);
        if (len == 1 && (s[0] < 0x20 || s[0] == 0x7F))
            len = 0;
        if (len == 0) {
            if (o + 4 >= cap)
                break;
            snprintf(dst + o, cap - o, "\\x%02X", s[0]);
            o += 4;
            i++;
        } else {
            if (o + (size_t)len >= cap)
                break;
            memcpy(dst + o, s, (size_t)len);
            o += (size_t)len;
            i += (size_t)len;
        }
    }
    dst[o] = '\0';
}

void fh_data_identity_of(fh_data_identity *id, const fh_bars *bars, const char *source)
{
    memset(id, 0, sizeof *id);
    escape_source(id->source, sizeof id->source, source ? source : "");
    size_t n = bars->n;
    id->n_bars = (int64_t)n;
    id->first_time = n ? bars->time[0] : 0;
    id->last_time = n ? bars->time[n - 1] : 0;
    uint64_t h = FNV_OFFSET;
    h = fnv1a_u64s(h, bars->time, n);
    const double *arrays[5] = {bars->open, bars->high, bars->low, bars->close, bars->volume};
    for (int k = 0; k < 5; k++)
        h = fnv1a_u64s(h, arrays[k], n);
    id->hash = h;
}

static void append(char *why, size_t n, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *why, size_t n, size_t *used, const char *fmt, ...)
{
    if (!why || *used >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(why + *used, n - *used, fmt, ap);
    va_end(ap);
    if (k > 0)
        *used += (size_t)k < n - *used ? (size_t)k : n - *used - 1;
}

int fh_data_identity_same(const fh_data_identity *saved, const fh_data_identity *now,
                          char *why, size_t n)
{
    if (saved->n_bars == now->n_bars && saved->first_time == now->first_time &&
        saved->last_time == now->last_time && saved->hash == now->hash)
        return 1;
    size_t used = 0;
    if (why && n)
        why[0] = '\0';
    const char *sep = "";
    if (saved->n_bars != now->n_bars) {
        append(why, n, &used, "%lld bars, now %lld", (long long)saved->n_bars,
               (long long)now->n_bars);
        sep = "; ";
    }
    const char *names[2] = {"first", "last"};
    const int64_t a[2] = {saved->first_time, saved->last_time};
    const int64_t b[2] = {now->first_time, now->last_time};
    for (int k = 0; k < 2; k++) {
        if (a[k] == b[k])
            continue;
        char ta[32], tb[32];
        fh_time_format(a[k], ta, sizeof ta);
        fh_time_format(b[k], tb, sizeof tb);
        append(why, n, &used, "%s%s bar %s, now %s", sep, names[k], ta, tb);
        sep = "; ";
    }
    append(why, n, &used, "%scontent hash %016llx, now %016llx", sep,
           (unsigned long long)saved->hash, (unsigned long long)now->hash);
    if (strcmp(saved->source, now->source) != 0)
        append(why, n, &used, "; source %s, now %s", saved->source, now->source);
    else
        append(why, n, &used, "; same source %s", now->source);
    return 0;
}

static const char *const k_data_keys[5] = {"data.source", "data.bars", "data.first_time",
                                           "data.last_time", "data.hash"};

fh_status fh_data_identity_write_metadata(fh_st_writer *w, const fh_data_identity *id,
                                          fh_error *err)
{
    char v[4][32];
    snprintf(v[0], sizeof v[0], "%lld", (long long)id->n_bars);
    snprintf(v[1], sizeof v[1], "%lld", (long long)id->first_time);
    snprintf(v[2], sizeof v[2], "%lld", (long long)id->last_time);
    snprintf(v[3], sizeof v[3], "%016llx", (unsigned long long)id->hash);
    fh_status st = fh_st_writer_set_metadata(w, k_data_keys[0], id->source, err);
    for (int k = 0; k < 4 && st == FH_OK; k++)
        st = fh_st_writer_set_metadata(w, k_data_keys[k + 1], v[k], err);
    return st;
}

/* the whole text as a decimal int64 (hex u64 when hex) */
static int parse_whole(const char *s, int hex, int64_t *out_i, uint64_t *out_u)
{
    if (!s || !*s || (hex && strlen(s) != 16))
        return 0;
    char *end = NULL;
    errno = 0;
    if (hex) {
        for (const char *p = s; *p; p++)
            if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                return 0;
        *out_u = strtoull(s, &end, 16);
    } else {
        *out_i = strtoll(s, &end, 10);
    }
    return errno == 0 && end && *end == '\0';
}

/* 0: absent (no data.* key), 1: read into *id; FH_ERR_INPUT through err when partial or
 * malformed (returned as -1). */
int fh_data_identity_read_metadata(const fh_st_file *f, fh_data_identity *id, fh_error *err)
{
    const char *v[5];
    int present = 0;
    for (int k = 0; k < 5; k++)
        present += (v[k] = fh_st_metadata(f, k_data_keys[k])) != NULL;
    if (present == 0)
        return 0;
    fh_data_identity got;
    memset(&got, 0, sizeof got);
    for (int k = 0; k < 5; k++) {
        int64_t i = 0;
        uint64_t u = 0;
        int ok = v[k] != NULL;
        if (ok && k == 0)
            ok = strlen(v[0]) < sizeof got.source;
        else if (ok)
            ok = parse_whole(v[k], k == 4, &i, &u);
        if (ok && k == 1)
            ok = i >= 0;
        if (!ok) {
            fh_error_set(err, FH_ERR_INPUT, "%s: __metadata__ \"%s\" is %s%s%s (the data "
                         "identity needs %s)", f->path, k_data_keys[k], v[k] ? "\"" : "",
                         v[k] ? v[k] : "missing", v[k] ? "\"" : "",
                         k == 0 ? "a source" : k == 4 ? "16 lowercase hex digits"
                         : k == 1 ? "a bar count >= 0" : "a decimal Unix time");
            return -1;
        }
        switch (k) {
        case 0: snprintf(got.source, sizeof got.source, "%s", v[0]); break;
        case 1: got.n_bars = i; break;
        case 2: got.first_time = i; break;
        case 3: got.last_time = i; break;
        default: got.hash = u; break;
        }
    }
    *id = got;
    return 1;
}

/* ---- actor-only checkpoints ---- */

static const char *const k_net_weights[] = {
    "the actor's weights", "the critic's weights", "the curiosity network's weights",
    "the Q-network's weights", "the PQN Q-network's weights"};
_Static_assert(sizeof k_net_weights / sizeof *k_net_weights == FH_NET_COUNT,
               "one description per network kind");

/* The one network an actor-only file holds: the greedy policy's (PPO's actor, or a Q
 * learner's Q-network: learner.h), the first asked for; -1 for none. */
static int policy_net_of(const fh_checkpoint *ck)
{
    for (int k = 0; k < FH_NET_COUNT; k++)
        if (ck->nets[k])
            return k;
    return -1;
}

/* What a load asks of an actor-only file that it does not hold (the first such thing),
 * or NULL when it asks only for one network (the policy), the normalisation, the data
 * identity, the config and optional extras. */
static const char *beyond_actor_only(const fh_checkpoint *ck)
{
    for (int k = policy_net_of(ck) + 1; k < FH_NET_COUNT; k++)
        if (ck->nets[k])
            return k_net_weights[k];
    if (ck->seed)
        return "run.seed";
    if (ck->iteration)
        return "run.iteration";
    if (ck->rng_state)
        return "rng.episodes";
    for (int i = 0; i < ck->n_extras; i++)
        if (!ck->extras[i].optional)
            return ck->extras[i].name;
    return NULL;
}

fh_status fh_checkpoint_save(const char *path, const fh_checkpoint *ck, const char *config_json,
                             fh_error *err)
{
    if (ck->n_extras < 0 || ck->n_extras > FH_CHECKPOINT_MAX_EXTRAS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: %d extra tensors (at most %d)", path,
                            ck->n_extras, FH_CHECKPOINT_MAX_EXTRAS);
    if (ck->actor_only) {
        const char *missing = policy_net_of(ck) < 0 ? "the policy's network"
                            : !ck->norm ? "the normalisation"
                            : !config_json ? "the config (an evaluation rebuilds its data from it)"
                            : NULL;
        const char *more = beyond_actor_only(ck);
        if (!more && ck->n_extras > 0)
            more = "extra tensors";
        if (missing || more)
            return fh_error_set(err, FH_ERR_FAILURE, "%s: not saved: an actor-only checkpoint "
                                "holds the actor's params, the normalisation and the config, "
                                "nothing else; %s %s", path, missing ? "missing" : "also given",
                                missing ? missing : more);
    }
    fh_st_writer w;
    fh_st_writer_init(&w);
    char key[FH_NN_MAX_NAME + 32];
    fh_status st = fh_st_writer_set_metadata(&w, "format", FH_CHECKPOINT_FORMAT, err);
    if (st == FH_OK)
        st = fh_st_writer_set_metadata(&w, "format_version", FH_CHECKPOINT_VERSION, err);
    if (st == FH_OK && ck->actor_only)
        st = fh_st_writer_set_metadata(&w, "kind", FH_CHECKPOINT_KIND_ACTOR, err);
    if (st == FH_OK && config_json)
        st = fh_st_writer_set_metadata(&w, "config", config_json, err);
    if (st == FH_OK && ck->data)
        st = fh_data_identity_write_metadata(&w, ck->data, err);
    for (int i = 0; i < ck->n_meta && st == FH_OK; i++) {
        const char *k = ck->meta_keys[i];
        if (!strcmp(k, "format") || !strcmp(k, "format_version") || !strcmp(k, "kind") ||
            !strcmp(k, "config") || !strncmp(k, "data.", 5))
            st = fh_error_set(err, FH_ERR_FAILURE, "__metadata__ \"%s\" is the "
                              "checkpoint's own key", k);
        else
            st = fh_st_writer_set_metadata(&w, k, ck->meta_values[i], err);
    }

    const int n_passes = ck->actor_only ? 1 : 3;
    for (int k = 0; k < FH_NET_COUNT && st == FH_OK; k++) {
        const fh_mlp *m = ck->nets[k];
        if (!m)
            continue;
        /* params, then Adam m, then Adam v: one pass over the table per buffer (an
         * actor-only file: params only) */
        for (int pass = 0; pass < n_passes && st == FH_OK; pass++) {
            const float *buf = pass == 0 ? m->params : moment_buffer(m, pass - 1);
            for (int t = 0; t < m->n_tensors && st == FH_OK; t++) {
                const fh_tensor_desc *td = &m->tensors[t];
                int64_t shape[2] = {td->shape[0], td->shape[1]};
                snprintf(key, sizeof key, "%s%s", pass == 0 ? "" : k_moment_prefix[pass - 1],
                         td->name);
                st = fh_st_writer_add(&w, key, FH_DTYPE_F32, td->rank, shape,
                                      buf + td->offset, err);
            }
        }
        if (st == FH_OK && !ck->actor_only) {
            int64_t one = 1;
            snprintf(key, sizeof key, "adam.step.%s", m->desc->name);
            st = fh_st_writer_add(&w, key, FH_DTYPE_I64, 1, &one, &m->adam_step, err);
        }
    }
    int64_t nf = FH_N_MARKET_FEATURES, one = 1;
    if (st == FH_OK && ck->norm)
        st = fh_st_writer_add(&w, "norm.mean", FH_DTYPE_F32, 1, &nf, ck->norm->mean, err);
    if (st == FH_OK && ck->norm)
        st = fh_st_writer_add(&w, "norm.std", FH_DTYPE_F32, 1, &nf, ck->norm->std, err);
    if (st == FH_OK && ck->seed)
        st = fh_st_writer_add(&w, "run.seed", FH_DTYPE_U64, 1, &one, ck->seed, err);
    if (st == FH_OK && ck->iteration)
        st = fh_st_writer_add(&w, "run.iteration", FH_DTYPE_I64, 1, &one, ck->iteration, err);
    if (st == FH_OK && ck->rng_state) {
        int64_t shape[2] = {(int64_t)ck->rng_rows, (int64_t)ck->rng_cols};
        st = fh_st_writer_add(&w, "rng.episodes", FH_DTYPE_U64, 2, shape, ck->rng_state, err);
    }
    for (int i = 0; i < ck->n_extras && st == FH_OK; i++) {
        const fh_checkpoint_extra *x = &ck->extras[i];
        st = fh_st_writer_add(&w, x->name, x->dtype, x->rank, x->shape, x->data, err);
    }
    /* a checkpoint never holds a non-finite float (the loader refuses one) */
    for (size_t i = 0; i < w.n_tensors && st == FH_OK; i++) {
        const fh_st_tensor *t = &w.tensors[i];
        size_t at;
        double v;
        if (first_nonfinite(t->data, t->dtype, shape_numel(t->rank, t->shape), &at, &v))
            st = fh_error_set(err, FH_ERR_FAILURE, "key \"%s\": element %zu is %g (a "
                              "checkpoint holds finite floats only)", t->name, at, v);
    }
    if (st == FH_OK)
        st = fh_st_writer_write(&w, path, err);
    else
        fh_error_prefix(err, "%s: not saved: ", path);
    fh_st_writer_free(&w);
    return st;
}

/* ---- load: validate into a plan, then copy ---- */
typedef struct {
    const fh_st_tensor *src;
    void *dst;
} ck_item;

typedef struct {
    ck_item items[CK_MAX_ITEMS];
    int n;
} ck_plan;

static fh_status plan_add(ck_plan *plan, const fh_st_file *f, const char *name, fh_dtype dtype,
                          int rank, const int64_t *shape, void *dst, fh_error *err)
{
    const fh_st_tensor *t = NULL;
    fh_status st = fh_st_expect(&t, f, name, dtype, rank, shape, err);
    if (st != FH_OK)
        return st;
    if (plan->n == CK_MAX_ITEMS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: too many checkpoint items", f->path);
    plan->items[plan->n].src = t;
    plan->items[plan->n].dst = dst;
    plan->n++;
    return FH_OK;
}

/* 1 when f holds any Adam tensor (a full checkpoint, maybe damaged). */
static int holds_adam_state(const fh_st_file *f)
{
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strncmp(f->tensors[i].name, "adam.", 5) == 0)
            return 1;
    return 0;
}

fh_status fh_checkpoint_load(const char *path, fh_checkpoint *ck, char **config_json_out,
                             fh_error *err)
{
    if (config_json_out)
        *config_json_out = NULL;
    if (ck->n_extras < 0 || ck->n_extras > FH_CHECKPOINT_MAX_EXTRAS)
        return fh_error_set(err, FH_ERR_FAILURE, "%s: %d extra tensors (at most %d)", path,
                            ck->n_extras, FH_CHECKPOINT_MAX_EXTRAS);
    fh_st_file f;
    fh_status st = fh_st_read(&f, path, err);
    if (st != FH_OK)
        return st;
    ck_plan *plan = calloc(1, sizeof *plan);
    char *config = NULL;
    if (!plan) {
        st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
        goto done;
    }
    const char *fmt = fh_st_metadata(&f, "format");
    const char *ver = fh_st_metadata(&f, "format_version");
    if (!fmt || strcmp(fmt, FH_CHECKPOINT_FORMAT) != 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: not a foxhunt checkpoint (__metadata__ "
                          "\"format\" is %s%s%s, expected \"%s\")", path, fmt ? "\"" : "",
                          fmt ? fmt : "missing", fmt ? "\"" : "", FH_CHECKPOINT_FORMAT);
        goto done;
    }
    if (!ver || strcmp(ver, FH_CHECKPOINT_VERSION) != 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: checkpoint format_version %s, this build "
                          "reads %s", path, ver ? ver : "(missing)", FH_CHECKPOINT_VERSION);
        goto done;
    }
    /* a full checkpoint has no "kind"; an actor-only one answers an evaluation only */
    const char *kind = fh_st_metadata(&f, "kind");
    const int actor_only = kind != NULL;
    if (kind && strcmp(kind, FH_CHECKPOINT_KIND_ACTOR) != 0) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: __metadata__ \"kind\" is \"%.64s\"; this "
                          "build reads full checkpoints (no \"kind\") and actor-only ones "
                          "(\"%s\", foxhunt export --actor)", path, kind,
                          FH_CHECKPOINT_KIND_ACTOR);
        goto done;
    }
    const char *beyond = actor_only ? beyond_actor_only(ck) : NULL;
    if (beyond) {
        st = fh_error_set(err, FH_ERR_INPUT, "%s: this is an actor-only checkpoint (foxhunt "
                          "export --actor); it cannot resume training: resume from the full "
                          "checkpoint (it holds the actor's weights and the normalisation, "
                          "not %s)", path, beyond);
        goto done;
    }
    /* every float of the file finite, asked for or not; norm.std > 0 */
    for (size_t i = 0; i < f.n_tensors; i++) {
        const fh_st_tensor *t = &f.tensors[i];
        size_t at;
        double v;
        if (first_nonfinite(t->data, t->dtype, shape_numel(t->rank, t->shape), &at, &v)) {
            st = fh_error_set(err, FH_ERR_INPUT, "%s: key \"%s\": element %zu is %g (a "
                              "checkpoint holds finite floats only: the file is damaged, or "
                              "was written by a run that diverged)", path, t->name, at, v);
            goto done;
        }
    }
    const fh_st_tensor *std_t = fh_st_find(&f, "norm.std");
    if (std_t && std_t->dtype == FH_DTYPE_F32) {
        size_t count = std_t->nbytes / sizeof(float);
        for (size_t i = 0; i < count; i++) {
            float s;
            memcpy(&s, (const unsigned char *)std_t->data + i * sizeof s, sizeof s);
            if (!(s > 0.0f)) {
                st = fh_error_set(err, FH_ERR_INPUT, "%s: key \"norm.std\": element %zu is "
                                  "%g; a standard deviation is > 0", path, i, (double)s);
                goto done;
            }
        }
    }
    fh_data_identity identity;
    int identity_state = 0;
    if (ck->data && (identity_state = fh_data_identity_read_metadata(&f, &identity, err)) < 0) {
        st = FH_ERR_INPUT;
        goto done;
    }
    char key[FH_NN_MAX_NAME + 32];
    int64_t one = 1, nf = FH_N_MARKET_FEATURES;
    const int n_passes = actor_only ? 1 : 3; /* an actor-only file: params only */
    for (int k = 0; k < FH_NET_COUNT && st == FH_OK; k++) {
        fh_mlp *m = ck->nets[k];
        if (!m)
            continue;
        for (int pass = 0; pass < n_passes && st == FH_OK; pass++) {
            float *buf = pass == 0 ? m->params : moment_buffer(m, pass - 1);
            for (int t = 0; t < m->n_tensors && st == FH_OK; t++) {
                const fh_tensor_desc *td = &m->tensors[t];
                int64_t shape[2] = {td->shape[0], td->shape[1]};
                snprintf(key, sizeof key, "%s%s", pass == 0 ? "" : k_moment_prefix[pass - 1],
                         td->name);
                st = plan_add(plan, &f, key, FH_DTYPE_F32, td->rank, shape, buf + td->offset,
                              err);
                if (st != FH_OK && pass > 0 && err && !holds_adam_state(&f)) {
                    /* a hand-made actor-only file without its "kind" lands here */
                    size_t used = strlen(err->message);
                    append(err->message, sizeof err->message, &used, " (a checkpoint "
                           "without Adam state must say __metadata__ \"kind\": \"%s\" to "
                           "be read as actor-only: write one with foxhunt export --actor)",
                           FH_CHECKPOINT_KIND_ACTOR);
                }
            }
        }
        if (st == FH_OK && !actor_only) {
            snprintf(key, sizeof key, "adam.step.%s", m->desc->name);
            st = plan_add(plan, &f, key, FH_DTYPE_I64, 1, &one, &m->adam_step, err);
            if (st == FH_OK) {
                int64_t step;
                memcpy(&step, plan->items[plan->n - 1].src->data, sizeof step);
                if (step < 0)
                    st = fh_error_set(err, FH_ERR_INPUT, "%s: key \"%s\": negative Adam step "
                                      "%lld", path, key, (long long)step);
            }
        }
    }
    if (st == FH_OK && ck->norm)
        st = plan_add(plan, &f, "norm.mean", FH_DTYPE_F32, 1, &nf, ck->norm->mean, err);
    if (st == FH_OK && ck->norm)
        st = plan_add(plan, &f, "norm.std", FH_DTYPE_F32, 1, &nf, ck->norm->std, err);
    if (st == FH_OK && ck->seed)
        st = plan_add(plan, &f, "run.seed", FH_DTYPE_U64, 1, &one, ck->seed, err);
    if (st == FH_OK && ck->iteration)
        st = plan_add(plan, &f, "run.iteration", FH_DTYPE_I64, 1, &one, ck->iteration, err);
    if (st == FH_OK && ck->rng_state) {
        int64_t shape[2] = {(int64_t)ck->rng_rows, (int64_t)ck->rng_cols};
        st = plan_add(plan, &f, "rng.episodes", FH_DTYPE_U64, 2, shape, ck->rng_state, err);
    }
    for (int i = 0; i < ck->n_extras && st == FH_OK; i++) {
        fh_checkpoint_extra *x = &ck->extras[i];
        if (x->optional && !fh_st_find(&f, x->name))
            continue;
        st = plan_add(plan, &f, x->name, x->dtype, x->rank, x->shape, x->data, err);
    }
    if (st == FH_OK && config_json_out) {
        const char *c = fh_st_metadata(&f, "config");
        if (c) {
            size_t n = strlen(c) + 1;
            config = malloc(n);
            if (!config)
                st = fh_error_set(err, FH_ERR_FAILURE, "%s: out of memory", path);
            else
                memcpy(config, c, n);
        }
    }
    if (st != FH_OK)
        goto done;
    /* every check passed: now, and only now, touch the caller's objects */
    for (int i = 0; i < plan->n; i++)
        memcpy(plan->items[i].dst, plan->items[i].src->data, plan->items[i].src->nbytes);
    /* an actor-only file holds no optimiser state: the actor's is a fresh one, so that
     * what a load leaves never depends on what the buffers held before */
    fh_mlp *actor = policy_net_of(ck) >= 0 ? ck->nets[policy_net_of(ck)] : NULL;
    if (actor_only && actor) {
        memset(actor->adam_m, 0, actor->n_params * sizeof *actor->adam_m);
        memset(actor->adam_v, 0, actor->n_params * sizeof *actor->adam_v);
        actor->adam_step = 0;
    }
    ck->actor_only = actor_only;
    for (int i = 0; i < ck->n_extras; i++)
        ck->extras[i].present = fh_st_find(&f, ck->extras[i].name) != NULL;
    if (ck->data) {
        ck->data_present = identity_state == 1;
        if (identity_state == 1)
            *ck->data = identity;
    }
    if (config_json_out) {
        *config_json_out = config;
        config = NULL;
    }
done:
    free(config);
    free(plan);
    fh_st_file_free(&f);
    return st;
}
