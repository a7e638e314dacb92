/* test_dist_world1.c — the data-parallel path with one rank, on one GPU through NCCL
 * (issue 22; labels gpu, dist): `train --gpus 1` launches one rank that meets itself
 * through the rendezvous file, makes a communicator of one and all-reduces every step's
 * sums and gradients, the metric sums and the explained variance over it. An all-reduce
 * over one rank changes no bit, so its run must equal the one-process run byte for byte:
 * every tensor of the checkpoints (the update's graphs holding the all-reduces, and with
 * --dist-graphs 0 its steps one by one) and every metrics column but the timings; and a
 * checkpoint of either resumes in the other (resume at any world size) to the same final
 * file. Skips, saying why, without a GPU or without a loadable NCCL. The two-GPU
 * comparisons are scripts/gpu-dist-check.sh's. */
#include "test_proc.h" /* first: _GNU_SOURCE */

#include "dist/dist_env.h"
#include "dist/nccl_loader.h"
#include "foxhunt/device.h"
#include "test_run_compare.h"
#include "test_util.h"

static const char *COMMON[] = {"--device", "cuda", "--episodes", "64", "--steps", "48",
                               "--epochs", "2", "--minibatch", "512", "--synthetic-bars",
                               "4000", "--horizon", "40", "--seed", "11", "--eval-at-end", "0",
                               "--iterations", "3", "--checkpoint-every", "2", NULL};

static int train(const char *dir, const char *log, const char *const *extra)
{
    return fh_run_train(dir, log, COMMON, extra);
}

static void compare_runs(const char *what, const char *a, const char *b, const char *file)
{
    char pa[700], pb[700];
    snprintf(pa, sizeof pa, "%s/%s", a, file);
    snprintf(pb, sizeof pb, "%s/%s", b, file);
    fh_st_file f;
    fh_compare_checkpoints(what, pa, pb, &f);
    fh_st_file_free(&f);
}

int main(void)
{
    fh_device_info dev;
    fh_error err;
    if (fh_device_select("auto", &dev, &err) != FH_OK || !dev.use_gpu)
        fh_test_skip("no CUDA device: data-parallel training needs a GPU (run this on one)");
    fh_nccl nccl;
    fh_search_env search;
    fh_search_env_read(&search);
    if (fh_nccl_load(&nccl, NULL, &search, &err) != FH_OK) {
        printf("%s\n", err.message);
        fh_test_skip("NCCL is not loadable here (pip install nvidia-nccl-cu13, or put "
                     "libnccl.so.2 on LD_LIBRARY_PATH)");
    }
    fh_nccl_unload(&nccl);
    char dir[512];
    if (!fh_make_temp_dir(dir, sizeof dir, "test_dist_world1"))
        fh_test_skip("cannot make a temporary directory");
    char one[600], rank1[600], eager[600], resumed_rank[600], resumed_one[600], ck[700];
    snprintf(one, sizeof one, "%s/one", dir);
    snprintf(rank1, sizeof rank1, "%s/gpus1", dir);
    snprintf(eager, sizeof eager, "%s/gpus1_eager", dir);
    snprintf(resumed_rank, sizeof resumed_rank, "%s/resumed_gpus1", dir);
    snprintf(resumed_one, sizeof resumed_one, "%s/resumed_one", dir);

    const char *run_one[] = {"--out", one, NULL};
    const char *run_rank[] = {"--gpus", "1", "--out", rank1, NULL};
    const char *run_eager[] = {"--gpus", "1", "--dist-graphs", "0", "--out", eager, NULL};
    CHECK(train(dir, "one", run_one) == 0);
    CHECK(train(dir, "gpus1", run_rank) == 0);
    CHECK(train(dir, "gpus1_eager", run_eager) == 0);
    compare_runs("--gpus 1 against one process, checkpoint 2", one, rank1,
                 "checkpoint_000002.safetensors");
    compare_runs("--gpus 1 against one process, final", one, rank1, "final.safetensors");
    compare_runs("--gpus 1 --dist-graphs 0 against one process, final", one, eager,
                 "final.safetensors");
    char *csv_one = fh_read_in(dir, "one", "metrics.csv");
    char *csv_rank = fh_read_in(dir, "gpus1", "metrics.csv");
    CHECK_MSG(csv_one && csv_rank, "metrics.csv missing");
    if (csv_one && csv_rank)
        fh_compare_metrics("--gpus 1 metrics", csv_one, 1, csv_rank, 1, 1, 3);
    free(csv_one);
    free(csv_rank);
    char *out = fh_read_in(dir, "", "gpus1.out");
    CHECK_MSG(out && strstr(out, "data-parallel: rank 0 of 1") && strstr(out, "NCCL "),
              "the rank's output does not say it is data-parallel:\n%s", out ? out : "");
    free(out);
    char *out_eager = fh_read_in(dir, "", "gpus1_eager.out");
    CHECK_MSG(out_eager && strstr(out_eager, "all-reduce "), "--dist-graphs 0 prints no "
              "all-reduce time:\n%s", out_eager ? out_eager : "");
    free(out_eager);

    /* resume across world sizes: one process's checkpoint in a rank, and back */
    snprintf(ck, sizeof ck, "%s/checkpoint_000002.safetensors", one);
    const char *resume_rank[] = {"--resume", ck, "--gpus", "1", "--out", resumed_rank, NULL};
    CHECK(fh_run_train(dir, "resumed_gpus1", NULL, resume_rank) == 0);
    compare_runs("one process's checkpoint resumed by --gpus 1", one, resumed_rank,
                 "final.safetensors");
    snprintf(ck, sizeof ck, "%s/checkpoint_000002.safetensors", rank1);
    const char *resume_one[] = {"--resume", ck, "--out", resumed_one, NULL};
    CHECK(fh_run_train(dir, "resumed_one", NULL, resume_one) == 0);
    compare_runs("--gpus 1's checkpoint resumed by one process", one, resumed_one,
                 "final.safetensors");

    int rc = fh_test_finish();
    if (rc == 0)
        fh_remove_tree(dir);
    else
        fprintf(stderr, "runs kept in %s\n", dir);
    return rc;
}
