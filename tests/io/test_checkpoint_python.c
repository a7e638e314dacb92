/* test_checkpoint_python.c — writes the fixture checkpoint (ckpt_fixture.h) and has
 * Python's `safetensors` package (numpy) load it: tests/io/check_checkpoint.py checks
 * every key, dtype, shape, value and the metadata. Skips (77) without python3 or the
 * package. */
#include "ckpt_fixture.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

int main(void)
{
    if (system("python3 -c 'import numpy, safetensors.numpy' >/dev/null 2>&1") != 0)
        fh_test_skip("python3 with the safetensors and numpy packages is not available "
                     "(pip install safetensors numpy)");
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/fh_py_XXXXXX");
    if (!mkdtemp(dir))
        fh_test_skip("cannot create a temporary directory");
    char path[128], cmd[512];
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    fixture fx;
    CHECK(fixture_init(&fx, 1) == 0);
    fh_error err;
    CHECK_MSG(fh_checkpoint_save(path, &fx.ck, FIX_CONFIG, &err) == FH_OK, "%s", err.message);
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/io/check_checkpoint.py' '%s'", FH_SOURCE_DIR,
             path);
    int rc = system(cmd);
    int code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (code == 77)
        fh_test_skip("python could not import safetensors");
    CHECK_MSG(code == 0, "python check exited with %d", code);
    fixture_free(&fx);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "note: could not remove %s\n", dir);
    return fh_test_finish();
}
