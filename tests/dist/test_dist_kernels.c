/* test_dist_kernels.c — runs on CI with no GPU: NVRTC compiles the update's program
 * (update_kernels.cu with its plan's options) to PTX for compute_90 without warnings,
 * and the data-parallel entry points the update launches (issue 22: adv_finish_kernel,
 * ppo_loss_finish_kernel, and the kernels whose arguments gained the sums' buffer) are
 * in it. */
#include <stdio.h>
#include <string.h>

#include "cuda/nvrtc_compile.h"
#include "cuda/update_plan.h"
#include "test_util.h"

int main(void)
{
    fh_update_problem q = {132, 64000, 512, 10, 1, 0, 0, 0};
    fh_update_plan plan;
    fh_error err;
    CHECK(fh_update_plan_make(&q, &plan, &err) == FH_OK);
    fh_nvrtc_output out;
    fh_status st = fh_nvrtc_compile("update_kernels.cu", "compute_90", plan.options,
                                    plan.n_options, &out, &err);
    CHECK_MSG(st == FH_OK, "update_kernels.cu: %s", err.message);
    if (st != FH_OK)
        return fh_test_finish();
    const char *entries[] = {"adv_finish_kernel", "ppo_loss_finish_kernel", "ppo_gather_kernel",
                             "ppo_loss_kernel", "explained_variance_kernel",
                             "update_summary_kernel"};
    for (size_t e = 0; e < sizeof entries / sizeof entries[0]; e++) {
        char needle[128];
        snprintf(needle, sizeof needle, ".entry %s(", entries[e]);
        CHECK_MSG(strstr(out.image, needle) != NULL, "no entry %s in the PTX", entries[e]);
    }
    CHECK_MSG(out.log[0] == '\0' || strstr(out.log, "warning") == NULL, "NVRTC warnings:\n%s",
              out.log);
    fh_nvrtc_output_free(&out);
    return fh_test_finish();
}
