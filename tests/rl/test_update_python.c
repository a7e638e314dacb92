/* test_update_python.c — `foxhunt update` checked by an independent implementation:
 * makes the fixture's files (tests/rl/update_fixture.h: a tiny run, collections B with
 * the update's own weights and Bo with the previous checkpoint's, the updates C2 and
 * C2o) and runs tests/rl/check_update.py on both, which re-implements in numpy the
 * actor and critic forward passes and CleanRL's PPO loss for the first minibatch, the
 * sample orders' re-draw from the update stream, and the record's bookkeeping (1e-5
 * relative; the script's docstring explains the float32/float64 tolerance). Skips (77)
 * without python3, numpy or the safetensors package. */
#include "test_proc.h" /* first: it sets _GNU_SOURCE */

#include <string.h>

#include "test_util.h"
#include "update_fixture.h"

static int run_check(const char *c, const char *b, const char *c2, const char *flag)
{
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/rl/check_update.py' '%s' '%s' '%s' %s",
             FH_SOURCE_DIR, c, b, c2, flag);
    fflush(stdout);
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int main(void)
{
    if (system("python3 -c 'import numpy, safetensors.numpy' >/dev/null 2>&1") != 0)
        fh_test_skip("python3 with the safetensors and numpy packages is not available "
                     "(pip install safetensors numpy)");
    double t0 = fh_now_seconds();
    update_fixture fx;
    if (!update_fixture_make(&fx, "fh_update_py")) {
        CHECK_MSG(0, "the fixture (train, collect, update) failed in %s", fx.dir);
        return fh_test_finish();
    }
    printf("fixture: %.2f s\n-- B collected with C's networks (the trainer's case):\n",
           fh_now_seconds() - t0);
    int code = run_check(fx.c, fx.b, fx.c2, "--same-weights");
    if (code == 77)
        fh_test_skip("python could not import safetensors");
    CHECK_MSG(code == 0, "check_update.py on C2 exited %d", code);
    printf("-- Bo collected with the previous checkpoint's networks (ratios far from 1):\n");
    code = run_check(fx.c, fx.bo, fx.c2o, "");
    CHECK_MSG(code == 0, "check_update.py on C2o exited %d", code);
    printf("total %.2f s\n", fh_now_seconds() - t0);
    fh_test_tidy(fx.dir);
    return fh_test_finish();
}
