/* test_device_fallback.c — with no CUDA driver or device (CI), `--device auto` says so
 * in one line and runs on the CPU, and `--device cuda` is a usage error (exit 2) that
 * says why. On a machine with a GPU this test skips: there is nothing to fall back from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "foxhunt/device.h"
#include "test_util.h"

/* Runs cmd, captures stdout+stderr into out; returns the exit status. */
static int run(const char *cmd, char *out, size_t out_size)
{
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, out_size - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(void)
{
    fh_device_info info;
    fh_error err;
    if (fh_device_select("auto", &info, &err) != FH_OK) {
        fprintf(stderr, "fh_device_select(auto) failed: %s\n", err.message);
        return 1;
    }
    if (info.use_gpu)
        fh_test_skip("a CUDA device is present: the CPU fallback is not taken here");
    CHECK(strlen(info.reason) > 0);

    static char out[65536];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s bench --device auto --episodes 4 --steps 8 --cpu-repeats 1",
             FH_FOXHUNT_BIN);
    int rc = run(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "bench --device auto exited %d:\n%s", rc, out);
    CHECK_MSG(strstr(out, "device: CPU (no CUDA device") != NULL ||
                  strstr(out, "device: CPU (this foxhunt was built without") != NULL,
              "no fallback line in:\n%s", out);
    CHECK_MSG(strstr(out, "cpu    cpu") != NULL, "no CPU row in:\n%s", out);

    snprintf(cmd, sizeof cmd, "%s bench --device cuda --episodes 4 --steps 8", FH_FOXHUNT_BIN);
    rc = run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2, "bench --device cuda without a GPU exited %d (want 2):\n%s", rc, out);
    CHECK_MSG(strstr(out, "--device cuda") != NULL, "message does not name the flag:\n%s", out);

    snprintf(cmd, sizeof cmd, "%s train --device cuda --iterations 1 --episodes 2 --steps 4 "
             "--minibatch 8 --out /tmp/fh_fallback_never_written", FH_FOXHUNT_BIN);
    rc = run(cmd, out, sizeof out);
    CHECK_MSG(rc == 2, "train --device cuda without a GPU exited %d (want 2):\n%s", rc, out);
    FILE *f = fopen("/tmp/fh_fallback_never_written/config.json", "r");
    CHECK_MSG(f == NULL, "a failed train wrote its run directory");
    if (f)
        fclose(f);
    return fh_test_finish();
}
