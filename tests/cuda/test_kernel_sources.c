/* test_kernel_sources.c — runs in CI with no GPU (issue 6):
 * 1. every embedded source equals the file in the tree, byte for byte;
 * 2. NVRTC compiles each kernel (common header + kernel, concatenated as at run time)
 *    to PTX for compute_90, and every entry point the collectors launch is in the PTX;
 * 3. the program text starts with the common header and ends with the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedded_sources.h"
#include "cuda/nvrtc_compile.h"
#include "test_util.h"


static void test_embedded_equal_tree(void)
{
    int count = 0;
    for (const fh_embedded_source *s = fh_embedded_sources; s->path; s++, count++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", FH_SOURCE_DIR, s->path);
        size_t size = 0;
        char *disk = fh_test_read_file(path, &size);
        CHECK_MSG(disk != NULL, "cannot read %s", path);
        if (!disk)
            continue;
        CHECK_MSG(size == s->size && memcmp(disk, s->text, size) == 0,
                  "embedded %s differs from the tree (%zu vs %zu bytes)", s->path, s->size, size);
        CHECK(strlen(s->text) == s->size); /* NUL-terminated, no embedded NUL */
        free(disk);
    }
    CHECK_MSG(count >= 3, "expected shapes.h, the common header and a kernel, found %d", count);
    CHECK(fh_embedded_source_find("common_device_functions.cuh") != NULL);
    CHECK(fh_embedded_source_find("ppo_experience_kernel.cu") != NULL);
    CHECK(fh_embedded_source_find("ppo_fast_kernels.cu") != NULL);
    CHECK(fh_embedded_source_find("no_such_kernel.cu") == NULL);
}

static void test_program_text(void)
{
    const fh_embedded_source *common = fh_embedded_source_find("common_device_functions.cuh");
    const fh_embedded_source *kernel = fh_embedded_source_find("ppo_experience_kernel.cu");
    char *text = fh_nvrtc_program_text("ppo_experience_kernel.cu");
    CHECK(text != NULL);
    if (!text || !common || !kernel)
        return;
    CHECK(strncmp(text, common->text, common->size) == 0);
    CHECK(strcmp(text + strlen(text) - kernel->size, kernel->text) == 0);
    free(text);
}

typedef struct {
    const char *kernel_file;
    const char *entries[16];
} kernel_case;

static void test_compiles_to_ptx(void)
{
    const kernel_case cases[] = {
        {"ppo_experience_kernel.cu", {"ppo_full_experience_kernel", NULL}},
        {"ppo_fast_kernels.cu", {"ppo_rollout_fast_kernel", "ppo_rollout_pair_kernel", "ppo_rollout_block_kernel",
                                 "ppo_rollout_lane_kernel",
                                 "critic_layer0_factored_kernel", "curiosity_fused_kernel",
                                 "scatter_trunc_values_kernel", "gae_kernel", "segment_wait_kernel",
                                 "gather_segment_rows_kernel", "scatter_segment_values_kernel",
                                 "actor_table_kernel", NULL}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        /* as the reference collector, as the fast path, the fast path's clock build, its
         * racecheck build, its build with two episodes per warp, with the curiosity
         * kernel's other hidden-unit blocks and with the actor table */
        const char *const opts_variants[][2] = {{"--fmad=false", "-lineinfo"}, {"-lineinfo", NULL},
                                                {"-lineinfo", "-DFH_ROLLOUT_CLOCKS=1"},
                                                {"-lineinfo", "-DFH_BLOCK_SHARED_BARRIERS=1"},
                                                {"-lineinfo", "-DFH_WARP_EPISODES=2"},
                                                {"-lineinfo", "-DFH_CUR_HIDDEN_BLOCK=32"},
                                                {"-lineinfo", "-DFH_CUR_HIDDEN_BLOCK=64"},
                                                {"-DFH_CUR_PER_THREAD=1", "-DFH_CUR_HIDDEN_BLOCK=16"},
                                                {"-lineinfo", "-DFH_ACTOR_TABLE=1"},
                                                {"-DFH_WARP_EPISODES=2", "-DFH_ACTOR_TABLE=1"},
                                                {"-DFH_PAIR_SPLIT=1", "-DFH_ACTOR_TABLE=1"},
                                                {"-lineinfo", "-DFH_PAIR_SPLIT=1"}};
        for (size_t v = 0; v < sizeof opts_variants / sizeof opts_variants[0]; v++) {
            fh_nvrtc_output out;
            fh_error err;
            fh_error_clear(&err);
            int n_opts = opts_variants[v][1] ? 2 : 1;
            fh_status st = fh_nvrtc_compile(cases[k].kernel_file, "compute_90", opts_variants[v],
                                            n_opts, &out, &err);
            CHECK_MSG(st == FH_OK, "%s: %s", cases[k].kernel_file, err.message);
            if (st != FH_OK)
                continue;
            CHECK(!out.is_cubin && out.size > 0);
            CHECK_MSG(strstr(out.image, ".target sm_90") != NULL, "PTX target is not sm_90");
            for (int e = 0; cases[k].entries[e]; e++) {
                char needle[256];
                snprintf(needle, sizeof needle, ".entry %s(", cases[k].entries[e]);
                CHECK_MSG(strstr(out.image, needle) != NULL, "%s: no entry %s in the PTX",
                          cases[k].kernel_file, cases[k].entries[e]);
            }
            CHECK_MSG(out.log[0] == '\0' || strstr(out.log, "warning") == NULL,
                      "NVRTC warnings for %s:\n%s", cases[k].kernel_file, out.log);
            fh_nvrtc_output_free(&out);
        }
    }
}

/* The actor table's rows reach shared memory by cp.async from sm_80 on, by a plain
 * copy before (the fast kernels are compiled for the device's own architecture). */
static void test_actor_table_copies(void)
{
    const char *const arch[2] = {"compute_90", "compute_75"};
    for (int a = 0; a < 2; a++) {
        fh_nvrtc_output out;
        fh_error err;
        fh_error_clear(&err);
        const char *opts[1] = {"-DFH_ACTOR_TABLE=1"};
        fh_status st = fh_nvrtc_compile("ppo_fast_kernels.cu", arch[a], opts, 1, &out, &err);
        CHECK_MSG(st == FH_OK, "%s: %s", arch[a], err.message);
        if (st != FH_OK)
            continue;
        int async = strstr(out.image, "cp.async.cg.shared.global") != NULL;
        CHECK_MSG(async == (a == 0), "%s: cp.async %s in the PTX", arch[a],
                  async ? "found" : "missing");
        fh_nvrtc_output_free(&out);
    }
}

static void test_compile_error_reports_log(void)
{
    fh_nvrtc_output out;
    fh_error err;
    fh_error_clear(&err);
    const char *bad[1] = {"-Dfh_rng=int"}; /* breaks the header: a real compile error */
    fh_status st = fh_nvrtc_compile("ppo_experience_kernel.cu", "compute_90", bad, 1, &out, &err);
    CHECK(st != FH_OK);
    CHECK_MSG(strstr(err.message, "program log") != NULL, "message lacks the log: %s", err.message);
    fh_status st2 = fh_nvrtc_compile("missing_kernel.cu", "compute_90", NULL, 0, &out, &err);
    CHECK(st2 != FH_OK && strstr(err.message, "not embedded") != NULL);
}

int main(void)
{
    test_embedded_equal_tree();
    test_program_text();
    test_compiles_to_ptx();
    test_actor_table_copies();
    test_compile_error_reports_log();
    return fh_test_finish();
}
