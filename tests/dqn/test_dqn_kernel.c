/* test_dqn_kernel.c — dqn_experience_kernel.cu as NVRTC builds it at run time (issue
 * 18): the program text is common_device_functions.cuh followed by the kernel (source
 * concatenation), it compiles to PTX for sm_90 with the reference kernel's options and
 * without warnings, and its entry point dqn_experience_kernel is in the PTX. The same
 * for the update's program, q_update.cu, with gpu_q_update.c's options and every entry
 * point it launches. No GPU needed (CI runs it). One ctest entry per program
 * (test_dqn_kernel CASE; tests/dqn/test_cases.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedded_sources.h"
#include "cuda/gpu_q_update.h"
#include "cuda/nvrtc_compile.h"
#include "dqn/test_cases.h"
#include "test_util.h"

/* q_update.cu with gpu_q_update.c's options (FH_Q_UPDATE_OPTIONS): every entry point
 * the GPU Q update launches is in the PTX, and NVRTC warns about nothing. */
static void test_q_update_program(void)
{
    const char *const opts[] = FH_Q_UPDATE_OPTIONS;
    const char *const entries[] = FH_Q_UPDATE_ENTRIES;
    fh_nvrtc_output out;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_nvrtc_compile("q_update.cu", "compute_90", opts,
                                    (int)(sizeof opts / sizeof opts[0]), &out, &err);
    CHECK_MSG(st == FH_OK, "NVRTC, q_update.cu: %s", err.message);
    if (st != FH_OK)
        return;
    CHECK(!out.is_cubin && out.size > 0);
    CHECK_MSG(strstr(out.image, ".target sm_90") != NULL, "PTX target is not sm_90");
    int n = 0;
    for (size_t e = 0; e < sizeof entries / sizeof entries[0]; e++, n++) {
        char needle[128];
        snprintf(needle, sizeof needle, ".entry %s(", entries[e]);
        CHECK_MSG(strstr(out.image, needle) != NULL, "no entry %s in q_update.cu's PTX",
                  entries[e]);
    }
    CHECK(n >= 13);
    CHECK_MSG(out.log[0] == '\0' || strstr(out.log, "warning") == NULL,
              "NVRTC warnings for q_update.cu:\n%s", out.log);
    fh_nvrtc_output_free(&out);
}

/* common_device_functions.cuh + dqn_experience_kernel.cu, the program NVRTC builds: it
 * starts with the header and ends with the kernel, compiles for sm_90 without warnings,
 * and holds the entry point dqn_experience_kernel. */
static void test_experience_kernel(void)
{
    const fh_embedded_source *common = fh_embedded_source_find("common_device_functions.cuh");
    const fh_embedded_source *kernel = fh_embedded_source_find("dqn_experience_kernel.cu");
    CHECK_MSG(common && kernel, "the common header or the DQN kernel is not embedded");
    CHECK(fh_embedded_source_find("dqn_device_functions.cuh") != NULL);
    char *text = fh_nvrtc_program_text("dqn_experience_kernel.cu");
    CHECK(text != NULL);
    if (text && common && kernel) {
        CHECK_MSG(strncmp(text, common->text, common->size) == 0,
                  "the program does not start with the common header");
        CHECK_MSG(strcmp(text + strlen(text) - kernel->size, kernel->text) == 0,
                  "the program does not end with the kernel");
    }
    free(text);

    const char *const opts[] = {"--fmad=false", "-lineinfo"};
    fh_nvrtc_output out;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_nvrtc_compile("dqn_experience_kernel.cu", "compute_90", opts, 2, &out, &err);
    CHECK_MSG(st == FH_OK, "NVRTC: %s", err.message);
    if (st == FH_OK) {
        CHECK(!out.is_cubin && out.size > 0);
        CHECK_MSG(strstr(out.image, ".target sm_90") != NULL, "PTX target is not sm_90");
        CHECK_MSG(strstr(out.image, ".entry dqn_experience_kernel(") != NULL,
                  "no entry dqn_experience_kernel in the PTX");
        CHECK_MSG(out.log[0] == '\0' || strstr(out.log, "warning") == NULL,
                  "NVRTC warnings:\n%s", out.log);
        fh_nvrtc_output_free(&out);
    }
}

static const fh_test_case CASES[] = {
    {"experience_kernel", test_experience_kernel},
    {"q_update_program", test_q_update_program},
};
FH_TEST_CASES_MAIN(CASES)
