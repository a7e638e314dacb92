/* test_eval_nonfinite.c — issue 32, item 4: `foxhunt eval` of a checkpoint whose actor
 * weights are all finite but so large that the forward pass overflows float32 (the
 * first hidden layer's and the output layer's weights times 1e30: hidden outputs near
 * 1e30, logits far past 3.4e38) used to print a full table of meaningless numbers and
 * exit 0 (the argmax of inf/NaN logits still picks an action). Now it fails with exit 2,
 * naming the checkpoint, the step, the logit and the first layer that overflowed (the
 * output layer: the hidden outputs, near 1e30, are still finite), and
 * what to do; no table is printed and neither --json nor --returns is written. The
 * unmodified checkpoint evaluates normally (the control). */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <math.h>
#include <string.h>

#include "foxhunt/safetensors.h"
#include "io/io_test_helpers.h"
#include "test_util.h"

#define COMMAND_SECONDS 120.0
#define WEIGHT_SCALE 1e30f

static char g_dir[256];

typedef fh_cmd_result result;

/* foxhunt argv_tail..., bounded by COMMAND_SECONDS (rc -2: killed) */
static result foxhunt(const char *const *argv_tail)
{
    static int counter = 0;
    return fh_foxhunt_captured(argv_tail, g_dir, &counter, COMMAND_SECONDS);
}

#define result_free fh_cmd_result_free

/* dst = src with the actor's first and last weight matrices times WEIGHT_SCALE (every
 * value stays finite); returns how many tensors were scaled. */
static int write_huge(const char *src, const char *dst)
{
    fh_st_file f;
    fh_error err;
    memset(&f, 0, sizeof f);
    if (fh_st_read(&f, src, &err) != FH_OK) {
        CHECK_MSG(0, "%s: %s", src, err.message);
        return 0;
    }
    int scaled = 0;
    for (size_t i = 0; i < f.n_tensors; i++) {
        const fh_st_tensor *t = &f.tensors[i];
        if (t->dtype != FH_DTYPE_F32 || (strcmp(t->name, "policy_layer_0.weight") != 0 &&
                                         strcmp(t->name, "policy_output.weight") != 0))
            continue;
        unsigned char *bytes = f.file + ((const unsigned char *)t->data - f.file);
        size_t bad = 0;
        for (size_t k = 0; k + 4 <= t->nbytes; k += 4) {
            float v;
            memcpy(&v, bytes + k, 4);
            v *= WEIGHT_SCALE;
            bad += !isfinite(v);
            memcpy(bytes + k, &v, 4);
        }
        CHECK_MSG(bad == 0, "%s: %zu values not finite after scaling", t->name, bad);
        scaled++;
    }
    CHECK_MSG(io_write_all(dst, f.file, f.file_len) == 0, "cannot write %s", dst);
    fh_st_file_free(&f);
    return scaled;
}

int main(void)
{
    if (!fh_make_temp_dir(g_dir, sizeof g_dir, "fh_test_eval_nonfinite")) {
        perror("mkdtemp");
        return 1;
    }
    char run[300], final_path[512], huge[512], json[512], returns[512];
    snprintf(run, sizeof run, "%s/run", g_dir);
    snprintf(final_path, sizeof final_path, "%s/final.safetensors", run);
    snprintf(huge, sizeof huge, "%s/huge.safetensors", g_dir);
    snprintf(json, sizeof json, "%s/eval.json", g_dir);
    snprintf(returns, sizeof returns, "%s/returns.csv", g_dir);
    const char *train[] = {"train", "--device", "cpu", "--episodes", "4", "--steps", "8",
                           "--epochs", "1", "--minibatch", "32", "--synthetic-bars", "2000",
                           "--threads", "1", "--horizon", "20", "--eval-at-end", "0",
                           "--iterations", "1", "--out", run, NULL};
    result r = foxhunt(train);
    CHECK_MSG(r.rc == 0, "train exited %d: %s", r.rc, r.err);
    result_free(&r);

    /* the control: the checkpoint as trained evaluates, table and files */
    const char *control[] = {"eval", "--checkpoint", final_path, "--device", "cpu", "--json",
                             json, "--returns", returns, NULL};
    r = foxhunt(control);
    CHECK_MSG(r.rc == 0 && strstr(r.out, "greedy") && fh_file_exists(json) &&
                  fh_file_exists(returns),
              "eval of the trained checkpoint: exit %d: %s", r.rc, r.err);
    result_free(&r);
    unlink(json);
    unlink(returns);

    int scaled = write_huge(final_path, huge);
    CHECK_MSG(scaled == 2, "scaled %d of the actor's weight tensors, want 2", scaled);
    const char *eval[] = {"eval", "--checkpoint", huge, "--device", "cpu", "--json", json,
                          "--returns", returns, NULL};
    r = foxhunt(eval);
    CHECK_MSG(r.rc == 2, "eval of an actor whose logits overflow exited %d (want 2): %s",
              r.rc, r.err);
    CHECK_MSG(strstr(r.err, huge) && strstr(r.err, "greedy policy") && strstr(r.err, "step 0") &&
                  strstr(r.err, "logit") && strstr(r.err, "layer 2 (policy_output") &&
                  strstr(r.err, "overflows float32") && strstr(r.err, "earlier checkpoint"),
              "the message does not name the checkpoint, the step, the logit, the layer and "
              "what to do: %s", r.err);
    CHECK_MSG(!strstr(r.out, "greedy") && !strstr(r.out, "verdict"),
              "a table was printed:\n%s", r.out);
    CHECK_MSG(!fh_file_exists(json) && !fh_file_exists(returns),
              "eval wrote --json or --returns for a network whose outputs overflow");
    result_free(&r);

    fh_test_tidy(g_dir);
    return fh_test_finish();
}
