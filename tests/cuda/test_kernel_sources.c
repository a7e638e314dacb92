/* test_kernel_sources.c — runs in CI with no GPU (issue 6):
 * 1. every embedded source equals the file in the tree, byte for byte;
 * 2. NVRTC compiles each kernel (common header + kernel, concatenated as at run time)
 *    to PTX for compute_90, and every entry point the collectors launch is in the PTX;
 * 3. the program text starts with the common header and ends with the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedded_sources.h"
#include "cuda/fast_plan.h"
#include "cuda/gpu_q_update.h" /* FH_Q_UPDATE_OPTIONS */
#include "cuda/nvrtc_compile.h"
#include "cuda/update_plan.h"
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
    CHECK(fh_embedded_source_find("fast_kernels.cu") != NULL);
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

/* NVRTC compiles `file` with `opts` to PTX for compute_90, without warnings, and every
 * entry point in `entries` (NULL-terminated) is in it. */
/* file compiled to compute_90 PTX with opts; 0 (the failure checked) when it does not. */
static int compile_ptx(const char *file, const char *const *opts, int n_opts,
                       fh_nvrtc_output *out)
{
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_nvrtc_compile(file, "compute_90", opts, n_opts, out, &err);
    CHECK_MSG(st == FH_OK, "%s: %s", file, err.message);
    return st == FH_OK;
}

static void check_compiles(const char *file, const char *const *opts, int n_opts,
                           const char *const *entries)
{
    fh_nvrtc_output out;
    if (!compile_ptx(file, opts, n_opts, &out))
        return;
    CHECK(!out.is_cubin && out.size > 0);
    CHECK_MSG(strstr(out.image, ".target sm_90") != NULL, "PTX target is not sm_90");
    for (int e = 0; entries[e]; e++) {
        char needle[256];
        snprintf(needle, sizeof needle, ".entry %s(", entries[e]);
        CHECK_MSG(strstr(out.image, needle) != NULL, "%s: no entry %s in the PTX", file,
                  entries[e]);
    }
    CHECK_MSG(out.log[0] == '\0' || strstr(out.log, "warning") == NULL,
              "NVRTC warnings for %s:\n%s", file, out.log);
    fh_nvrtc_output_free(&out);
}

/* The reference kernel as its collector compiles it, and the fast kernels with the
 * options of every plan fast_plan.c can make (each distinct option set once): mappings,
 * episodes per warp, the actor table, the clock and racecheck builds, on an H200 and a
 * 99 KB-shared-memory device. */
static void test_compiles_to_ptx(void)
{
    const char *const ref_opts[] = {"--fmad=false", "-lineinfo"};
    const char *const ref_entries[] = {"ppo_full_experience_kernel", NULL};
    check_compiles("ppo_experience_kernel.cu", ref_opts, 2, ref_entries);
    const char *const fast_entries[] = {"ppo_rollout_fast_kernel", "ppo_rollout_pair_kernel",
                                        "ppo_rollout_block_kernel", "ppo_rollout_lane_kernel",
                                        "actor_table_kernel", "critic_layer0_factored_kernel",
                                        "curiosity_fused_kernel", "scatter_trunc_values_kernel",
                                        "gae_kernel", NULL};
    char seen[64][FH_PLAN_MAX_OPTIONS * FH_PLAN_OPTION_CHARS];
    int n_seen = 0;
    const fh_plan_device devs[2] = {{"H200", 132, 232448, 100ull << 30},
                                    {"99 KB", 128, 101376, 20ull << 30}};
    const int episodes[] = {64, 1024, 4096, 16384};
    for (int d = 0; d < 2; d++)
        for (int n = 0; n < 4; n++)
            for (int m = 0; m < 4; m++)
                for (int v = 0; v < 36; v++) {
                    fh_gpu_overrides ov;
                    fh_gpu_overrides_default(&ov);
                    ov.warp_book = v % 3 - 1;
                    ov.warp_episodes = (v / 3) % 3 == 0 ? FH_AUTO : (v / 3) % 3;
                    ov.actor_table = (v / 9) % 2;
                    ov.rollout_clocks = v / 18 == 1 && n == 0;
                    ov.block_shared_barriers = v / 18 == 1 && n == 1;
                    fh_plan_problem prob = {episodes[n], 100, 5000, 40, 0,
                                            (fh_rollout_mapping)m, 0};
                    fh_fast_plan plan;
                    fh_error err;
                    if (fh_fast_plan_make(&devs[d], &prob, &ov, &plan, &err) != FH_OK)
                        continue; /* the lane mapping forced on the 99 KB device */
                    char key[sizeof seen[0]] = "";
                    for (int i = 0; i < plan.n_options; i++)
                        strcat(strcat(key, plan.options[i]), " ");
                    int known = 0;
                    for (int k = 0; k < n_seen; k++)
                        known |= strcmp(seen[k], key) == 0;
                    if (known || n_seen == 64)
                        continue;
                    strcpy(seen[n_seen++], key);
                    const char *opts[FH_PLAN_MAX_OPTIONS];
                    for (int i = 0; i < plan.n_options; i++)
                        opts[i] = plan.options[i];
                    printf("fast_kernels.cu with %s\n", key);
                    check_compiles("fast_kernels.cu", opts, plan.n_options, fast_entries);
                }
    CHECK_MSG(n_seen >= 8, "expected at least 8 distinct option sets, found %d", n_seen);
}

/* Every entry of an update module may be launched programmatically (pdl.cuh), so each
 * must wait for the kernel before it: in its compute_90 PTX, every .entry's body holds
 * griddepcontrol.wait before its first load or store (ld./st./atom./red.). Counts the
 * entries checked. */
static int check_entries_wait(const char *file, const char *const *opts, int n_opts)
{
    fh_nvrtc_output out;
    if (!compile_ptx(file, opts, n_opts, &out))
        return 0;
    int entries = 0;
    for (const char *e = strstr(out.image, ".entry "); e; e = strstr(e + 1, ".entry ")) {
        const char *next = strstr(e + 1, ".entry ");
        const char *body = strchr(e, '{');
        const char *wait = strstr(e, "griddepcontrol.wait");
        char name[128] = {0};
        sscanf(e + 7, "%127[A-Za-z0-9_]", name);
        CHECK_MSG(body && wait && (!next || wait < next), "%s: entry %s has no "
                  "griddepcontrol.wait", file, name);
        if (!body || !wait || (next && wait > next))
            continue;
        const char *memops[] = {"\tld.", "\tst.", "\tatom.", "\tred."};
        for (int m = 0; m < 4; m++) {
            const char *op = strstr(body, memops[m]);
            /* kernel parameters are read with ld.param before the wait: allowed */
            while (op && op < wait && strncmp(op + 1, "ld.param", 8) == 0)
                op = strstr(op + 1, memops[m]);
            CHECK_MSG(!op || (next && op > next) || op > wait,
                      "%s: entry %s touches memory (%.12s) before griddepcontrol.wait", file,
                      name, op ? op + 1 : "");
        }
        entries++;
    }
    fh_nvrtc_output_free(&out);
    return entries;
}

static void test_update_entries_wait(void)
{
    fh_update_problem q = {132, 64000, 512, 10, 1, 0, 9, 0};
    fh_update_plan plan;
    fh_error err;
    CHECK(fh_update_plan_make(&q, &plan, &err) == FH_OK);
    int n = check_entries_wait("update_kernels.cu", plan.options, plan.n_options);
    CHECK_MSG(n >= 10, "update_kernels.cu: %d entries checked", n);
    const char *const q_opts[] = FH_Q_UPDATE_OPTIONS;
    n = check_entries_wait("q_update.cu", q_opts, (int)(sizeof q_opts / sizeof q_opts[0]));
    CHECK_MSG(n >= 11, "q_update.cu: %d entries checked", n);
}

/* The update's program with its plan's options (update_plan.c: the same for every
 * problem). */
static void test_update_kernels(void)
{
    fh_update_problem q = {132, 64000, 512, 10, 1, 0, 0, 0};
    fh_update_plan plan;
    fh_error err;
    CHECK(fh_update_plan_make(&q, &plan, &err) == FH_OK);
    const char *const entries[] = {"ppo_gather_kernel", "curiosity_gather_kernel",
                                   "ppo_loss_kernel", "mse_loss_kernel", "bias_grad_kernel", "bias_act_kernel",
                                   "grad_sumsq_kernel", "adam_kernel",
                                   "explained_variance_kernel", "update_summary_kernel", NULL};
    check_compiles("update_kernels.cu", plan.options, plan.n_options, entries);
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
        fh_status st = fh_nvrtc_compile("fast_kernels.cu", arch[a], opts, 1, &out, &err);
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
    test_update_kernels();
    test_update_entries_wait();
    test_compile_error_reports_log();
    return fh_test_finish();
}
