/* test_cli_export.c — `foxhunt export --actor` and actor-only checkpoints through the
 * binary (docs/CHECKPOINTS.md), on a tiny CPU run (8 x 32, 1 iteration, 3,000 synthetic
 * bars):
 *  - the export holds exactly the actor's six tensors and norm.*, each dtype, shape and
 *    byte equal to the full checkpoint's, with kind "actor" and the full file's config
 *    and data identity (and, with Python's safetensors, tests/io/check_checkpoint.py
 *    --actor-only checks the same independently);
 *  - an existing --out is refused without --force (left byte-identical) and replaced
 *    with it; exporting an actor-only file, or without --actor, is refused;
 *  - `foxhunt eval` of the actor-only file prints the same report and writes the same
 *    JSON and returns, byte for byte, as of the full file (but for the file's name);
 *  - `train --resume` and `collect --checkpoint` of it are refused (exit 2) saying it is
 *    actor-only, and the resume creates no run directory;
 *  - damaged actor-only files (an actor key renamed, a weight's shape transposed, an
 *    unknown kind) make eval exit 2 naming the file and the fault, never crash. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <string.h>

#include "foxhunt/safetensors.h"
#include "io/io_test_helpers.h"
#include "test_util.h"

static char g_dir[256];

typedef fh_cmd_result result;

#define result_free fh_cmd_result_free

/* foxhunt argv_tail... with stdout and stderr captured */
static result foxhunt(const char *const *argv_tail)
{
    static int counter = 0;
    return fh_foxhunt_captured(argv_tail, g_dir, &counter, 0);
}

/* text with every line that contains `drop` removed (malloc'd) */
static char *without_lines(const char *text, const char *drop)
{
    char *out = calloc(strlen(text) + 1, 1);
    size_t o = 0;
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) + 1 : strlen(p);
        char *line = strndup(p, len);
        if (!strstr(line, drop)) {
            memcpy(out + o, line, len);
            o += len;
        }
        free(line);
        p += len;
    }
    return out;
}

/* 1 when files a and b have the same text once the lines naming `drop_a` (in a) and
 * `drop_b` (in b) are removed, and at least `min_lines` lines are left */
static int same_but_name(const char *a, const char *b, const char *drop_a,
                         const char *drop_b, int min_lines)
{
    char *ta = fh_read_text(a), *tb = fh_read_text(b);
    int same = 0;
    if (ta && tb) {
        char *ca = without_lines(ta, drop_a), *cb = without_lines(tb, drop_b);
        same = strcmp(ca, cb) == 0 && fh_count_lines(ca) >= min_lines;
        if (!same)
            fprintf(stderr, "--- %s\n%s\n--- %s\n%s\n", a, ca, b, cb);
        free(ca);
        free(cb);
    }
    free(ta);
    free(tb);
    return same;
}

/* The actor-only file holds exactly the actor's tensors and norm.*, each equal to the
 * full file's bit for bit, and the metadata eval needs. */
static void check_layout(const char *actor, const char *full)
{
    static const struct {
        const char *name;
        int rank;
        int64_t shape[2];
    } want[8] = {
        {"policy_layer_0.weight", 2, {128, 54}}, {"policy_layer_0.bias", 1, {128}},
        {"policy_layer_1.weight", 2, {64, 128}}, {"policy_layer_1.bias", 1, {64}},
        {"policy_output.weight", 2, {45, 64}},   {"policy_output.bias", 1, {45}},
        {"norm.mean", 1, {51}},                  {"norm.std", 1, {51}},
    };
    fh_st_file a, f;
    fh_error err;
    CHECK_MSG(fh_st_read(&a, actor, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(fh_st_read(&f, full, &err) == FH_OK, "%s", err.message);
    CHECK_MSG(a.n_tensors == 8, "%s holds %zu tensors, expected 8", actor, a.n_tensors);
    for (int i = 0; i < 8; i++) {
        const fh_st_tensor *t = fh_st_find(&a, want[i].name), *u = fh_st_find(&f, want[i].name);
        int ok = t && u && t->dtype == FH_DTYPE_F32 && t->rank == want[i].rank;
        for (int r = 0; ok && r < t->rank; r++)
            ok = t->shape[r] == want[i].shape[r];
        CHECK_MSG(ok, "%s: %s missing or of the wrong dtype or shape", actor, want[i].name);
        CHECK_MSG(ok && t->nbytes == u->nbytes && memcmp(t->data, u->data, t->nbytes) == 0,
                  "%s differs from the full checkpoint's", want[i].name);
    }
    const char *kind = fh_st_metadata(&a, "kind");
    CHECK_MSG(kind && strcmp(kind, "actor") == 0, "kind %s", kind ? kind : "(missing)");
    const char *same_meta[] = {"format", "format_version", "config", "data.source", "data.bars",
                               "data.first_time", "data.last_time", "data.hash"};
    for (size_t i = 0; i < sizeof same_meta / sizeof same_meta[0]; i++) {
        const char *x = fh_st_metadata(&a, same_meta[i]), *y = fh_st_metadata(&f, same_meta[i]);
        CHECK_MSG(x && y && strcmp(x, y) == 0, "metadata %s differs from the full file's",
                  same_meta[i]);
    }
    const char *it = fh_st_metadata(&a, "export.iteration");
    CHECK_MSG(it && strcmp(it, "1") == 0, "export.iteration %s", it ? it : "(missing)");
    fh_st_file_free(&a);
    fh_st_file_free(&f);
}

/* eval of a damaged file: exit 2 naming the file and the fault (no crash: no signal) */
static void expect_eval_refuses(const char *path, const char *needle)
{
    const char *eval[] = {"eval", "--checkpoint", path, NULL};
    result r = foxhunt(eval);
    CHECK_MSG(r.rc == 2 && strstr(r.err, path) && strstr(r.err, needle),
              "eval %s: exit %d, stderr \"%s\" should say \"%s\"", path, r.rc, r.err, needle);
    result_free(&r);
}

int main(void)
{
    CHECK(fh_make_temp_dir(g_dir, sizeof g_dir, "fh_cli_export"));
    char run_dir[400], full[500], actor[500], path[600], fj[600], aj[600], fr[600], ar[600];
    snprintf(run_dir, sizeof run_dir, "%s/run", g_dir);
    snprintf(full, sizeof full, "%s/final.safetensors", run_dir);
    snprintf(actor, sizeof actor, "%s/actor.safetensors", g_dir);
    const char *train[] = {"train", "--device", "cpu", "--episodes", "8", "--steps", "32",
                           "--iterations", "1", "--epochs", "1", "--minibatch", "64",
                           "--synthetic-bars", "3000", "--threads", "1", "--eval-at-end", "0",
                           "--out", run_dir, NULL};
    result r = foxhunt(train);
    CHECK_MSG(r.rc == 0 && fh_file_exists(full), "the tiny run failed (%d): %s", r.rc, r.err);
    result_free(&r);

    /* export: the layout, the listing, and Python's reading of it */
    const char *export[] = {"export", "--checkpoint", full, "--actor", "--out", actor, NULL};
    r = foxhunt(export);
    CHECK_MSG(r.rc == 0, "export exited %d: %s", r.rc, r.err);
    CHECK_MSG(strstr(r.out, "policy_output.weight") && strstr(r.out, "F32 [45, 64]") &&
              strstr(r.out, "8 tensors") && strstr(r.out, "bytes in all") &&
              strstr(r.out, "(iteration 1)"), "export's listing: %s", r.out);
    result_free(&r);
    CHECK(access(actor, F_OK) == 0);
    snprintf(path, sizeof path, "%s.tmp", actor);
    CHECK_MSG(access(path, F_OK) != 0, "%s left behind", path);
    check_layout(actor, full);
    if (system("python3 -c 'import numpy, safetensors.numpy' >/dev/null 2>&1") == 0) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "python3 '%s/tests/io/check_checkpoint.py' --actor-only "
                 "'%s' '%s'", FH_SOURCE_DIR, actor, full);
        fflush(stdout);
        int rc = system(cmd);
        CHECK_MSG(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
                  "check_checkpoint.py --actor-only failed");
    } else {
        printf("note: python3 with safetensors and numpy is not available: the independent "
               "check of the actor-only file is skipped\n");
    }

    /* an existing --out: refused and untouched without --force, replaced with it */
    size_t len = 0;
    unsigned char *before = io_read_all(actor, &len);
    CHECK(io_write_all(path, "x", 1) == 0); /* a stale tmp from a crash does not matter */
    r = foxhunt(export);
    CHECK_MSG(r.rc == 2 && strstr(r.err, "exists; pass --force"), "%d: %s", r.rc, r.err);
    CHECK(io_same_bytes(actor, before, len));
    result_free(&r);
    const char *forced[] = {"export", "--checkpoint", full, "--actor", "--out", actor,
                            "--force", NULL};
    r = foxhunt(forced);
    CHECK_MSG(r.rc == 0 && io_same_bytes(actor, before, len) && access(path, F_OK) != 0,
              "export --force: %d: %s", r.rc, r.err);
    result_free(&r);
    free(before);
    snprintf(path, sizeof path, "%s/again.safetensors", g_dir);
    const char *twice[] = {"export", "--checkpoint", actor, "--actor", "--out", path, NULL};
    r = foxhunt(twice);
    CHECK_MSG(r.rc == 2 && strstr(r.err, "already an actor-only checkpoint") &&
              !fh_file_exists(path), "%d: %s", r.rc, r.err);
    result_free(&r);
    const char *no_kind[] = {"export", "--checkpoint", full, "--out", path, NULL};
    r = foxhunt(no_kind);
    CHECK_MSG(r.rc == 2 && strstr(r.err, "--actor") && !fh_file_exists(path), "%d: %s", r.rc,
              r.err);
    result_free(&r);

    /* eval: the same report, JSON and returns from either file */
    snprintf(fj, sizeof fj, "%s/full.json", g_dir);
    snprintf(aj, sizeof aj, "%s/actor.json", g_dir);
    snprintf(fr, sizeof fr, "%s/full.csv", g_dir);
    snprintf(ar, sizeof ar, "%s/actor.csv", g_dir);
    const char *eval_full[] = {"eval", "--checkpoint", full, "--json", fj, "--returns", fr, NULL};
    const char *eval_actor[] = {"eval", "--checkpoint", actor, "--json", aj, "--returns", ar,
                                NULL};
    result rf = foxhunt(eval_full), ra = foxhunt(eval_actor);
    CHECK_MSG(rf.rc == 0 && ra.rc == 0, "eval exited %d (full), %d (actor-only): %s %s", rf.rc,
              ra.rc, rf.err, ra.err);
    char *of = without_lines(rf.out, g_dir), *oa = without_lines(ra.out, g_dir);
    CHECK_MSG(strstr(of, "greedy") && strcmp(of, oa) == 0, "eval's reports differ:\n%s\n---\n%s",
              of, oa);
    free(of);
    free(oa);
    result_free(&rf);
    result_free(&ra);
    /* the JSON names its checkpoint in "source"; every number is the same */
    CHECK_MSG(same_but_name(fj, aj, "\"source\":", "\"source\":", 20),
              "eval --json differs between the full and the actor-only checkpoint");
    size_t nf = 0, na = 0;
    unsigned char *cf = io_read_all(fr, &nf), *ca = io_read_all(ar, &na);
    CHECK_MSG(cf && ca && nf > 1000 && nf == na && memcmp(cf, ca, nf) == 0,
              "eval --returns differs between the full and the actor-only checkpoint");
    free(cf);
    free(ca);

    /* a resume (and a collection) of the actor-only file is refused, saying why */
    snprintf(path, sizeof path, "%s/resumed", g_dir);
    const char *resume[] = {"train", "--resume", actor, "--out", path, "--iterations", "2", NULL};
    r = foxhunt(resume);
    CHECK_MSG(r.rc == 2 && strstr(r.err, actor) &&
              strstr(r.err, "this is an actor-only checkpoint (foxhunt export --actor); it "
                     "cannot resume training: resume from the full checkpoint"),
              "train --resume of the actor-only file: %d: %s", r.rc, r.err);
    CHECK_MSG(!fh_file_exists(path), "a refused resume created %s", path);
    result_free(&r);
    snprintf(path, sizeof path, "%s/batch.safetensors", g_dir);
    const char *collect[] = {"collect", "--checkpoint", actor, "--out", path, NULL};
    r = foxhunt(collect);
    CHECK_MSG(r.rc == 2 && strstr(r.err, "actor-only checkpoint") && !fh_file_exists(path),
              "collect of the actor-only file: %d: %s", r.rc, r.err);
    result_free(&r);

    /* damaged actor-only files */
    snprintf(path, sizeof path, "%s/no_key.safetensors", g_dir);
    CHECK(io_rewrite_header(path, actor, "\"policy_layer_1.bias\"", "\"policy_layer_7.bias\"") == 0);
    expect_eval_refuses(path, "missing key \"policy_layer_1.bias\"");
    snprintf(path, sizeof path, "%s/shape.safetensors", g_dir);
    CHECK(io_rewrite_header(path, actor, "\"shape\":[128,54]", "\"shape\":[54,128]") == 0);
    expect_eval_refuses(path, "\"policy_layer_0.weight\": wrong shape [54, 128], expected "
                        "[128, 54]");
    snprintf(path, sizeof path, "%s/kind.safetensors", g_dir);
    CHECK(io_rewrite_header(path, actor, "\"kind\":\"actor\"", "\"kind\":\"critic\"") == 0);
    expect_eval_refuses(path, "\"kind\" is \"critic\"");

    fh_test_tidy(g_dir);
    return fh_test_finish();
}
