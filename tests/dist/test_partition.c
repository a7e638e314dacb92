/* test_partition.c — dist/partition.h against hand-computed shares: K ranks of a run
 * with N episodes and minibatch M each take N/K episodes starting at r N/K and M/K rows
 * of every step, so that together they are exactly the one-GPU run's episodes, each
 * once; sizes that do not split evenly are refused with the nearest ones that do. */
#include <string.h>

#include "dist/partition.h"
#include "test_util.h"

static void check_share(int K, int r, int N, int M, int want_n, int want_first, int want_m)
{
    fh_partition p;
    fh_error err;
    fh_status st = fh_partition_make(K, r, N, M, &p, &err);
    CHECK_MSG(st == FH_OK, "K %d r %d N %d M %d: %s", K, r, N, M, err.message);
    CHECK_MSG(p.episodes == want_n && p.first_episode == want_first && p.minibatch == want_m,
              "K %d r %d N %d M %d: %d episodes from %d, minibatch %d; expected %d from %d, %d",
              K, r, N, M, p.episodes, p.first_episode, p.minibatch, want_n, want_first, want_m);
    CHECK(p.world == K && p.rank == r && p.total_episodes == N && p.total_minibatch == M);
}

static void check_refused(int K, int r, int N, int M, const char *needle1, const char *needle2)
{
    fh_partition p;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_partition_make(K, r, N, M, &p, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "K %d r %d N %d M %d: status %d, expected a refusal", K, r,
              N, M, (int)st);
    CHECK_MSG(strstr(err.message, needle1) && (!needle2 || strstr(err.message, needle2)),
              "K %d r %d N %d M %d: message '%s' lacks '%s' / '%s'", K, r, N, M, err.message,
              needle1, needle2 ? needle2 : "");
}

/* Every rank's share of a run: disjoint, in rank order, covering 0..N-1 once. */
static void check_cover(int K, int N, int M)
{
    int next = 0, rows = 0;
    for (int r = 0; r < K; r++) {
        fh_partition p;
        fh_error err;
        if (fh_partition_make(K, r, N, M, &p, &err) != FH_OK) {
            CHECK_MSG(0, "K %d N %d M %d rank %d: %s", K, N, M, r, err.message);
            return;
        }
        CHECK_MSG(p.first_episode == next, "K %d rank %d starts at %d, expected %d", K, r,
                  p.first_episode, next);
        next = p.first_episode + p.episodes;
        rows += p.minibatch;
    }
    CHECK_MSG(next == N && rows == M, "K %d: the shares cover %d of %d episodes, %d of %d rows",
              K, next, N, rows, M);
}

int main(void)
{
    /* hand-computed: 128 episodes, minibatch 512 */
    check_share(1, 0, 128, 512, 128, 0, 512);
    check_share(2, 0, 128, 512, 64, 0, 256);
    check_share(2, 1, 128, 512, 64, 64, 256);
    check_share(4, 3, 128, 512, 32, 96, 128);
    check_share(8, 5, 16384, 4096, 2048, 10240, 512);
    check_share(3, 2, 6, 9, 2, 4, 3);
    check_share(7, 6, 7, 7, 1, 6, 1); /* one episode and one row a rank */
    for (int K = 1; K <= 16; K *= 2)
        check_cover(K, 1024, 2048);
    check_cover(3, 999, 333);

    /* refused, naming the setting and the multiples around it */
    check_refused(3, 0, 128, 512, "--episodes 128 is not a multiple of the 3 ranks",
                  "126 or 129");
    check_refused(2, 1, 128, 511, "--minibatch 511 is not a multiple of the 2 ranks",
                  "510 or 512");
    check_refused(4, 0, 2, 8, "--episodes 2 is fewer than the 4 ranks", "4 or more");
    check_refused(8, 0, 64, 4, "--minibatch 4 is fewer than the 8 ranks", "8 or more");
    check_refused(0, 0, 128, 512, "world size 0", NULL);
    check_refused(-2, 0, 128, 512, "world size -2", NULL);
    check_refused(2, 2, 128, 512, "rank 2 is outside 0..1", NULL);
    check_refused(2, -1, 128, 512, "rank -1 is outside 0..1", NULL);
    return fh_test_finish();
}
