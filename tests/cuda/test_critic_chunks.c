/* test_critic_chunks.c — the batched critic's row chunks (fh_critic_chunk_schedule), with
 * hand-computed expectations: the default N 16384 x L 500 collection, a schedule that
 * reaches its cap, rows below the first chunk, first above the cap, and random sizes
 * checked for the schedule's rules (contiguous, growing by the factor, capped). */
#include <stdlib.h>

#include "cuda/critic_chunks.h"
#include "test_util.h"

#define MAX_CHUNKS 4096

static void expect(long long rows, long long first, long long cap, int growth,
                   const long long *want, int n_want)
{
    long long begin[MAX_CHUNKS + 1];
    int n = fh_critic_chunk_schedule(rows, first, cap, growth, NULL);
    CHECK_MSG(n == n_want, "rows %lld first %lld cap %lld: %d chunks, expected %d", rows, first,
              cap, n, n_want);
    if (n != n_want)
        return;
    CHECK(fh_critic_chunk_schedule(rows, first, cap, growth, begin) == n);
    for (int k = 0; k <= n; k++)
        CHECK_MSG(begin[k] == want[k], "rows %lld: offset %d is %lld, expected %lld", rows, k,
                  begin[k], want[k]);
}

static void test_hand_computed(void)
{
    /* N 16384 x L 500: 16384 x (500 + 3 final-observation slots + 1) = 8,257,536 rows;
     * 2^17, 2^19, 2^21, then the 2^22 cap, then the 1,310,720 left */
    const long long n16384[] = {0, 131072, 655360, 2752512, 6946816, 8257536};
    expect(8257536, 1 << 17, 1 << 22, 4, n16384, 5);
    /* 100 rows, 10 first, x4, cap 30: 10, 30, 30, 30 */
    const long long capped[] = {0, 10, 40, 70, 100};
    expect(100, 10, 30, 4, capped, 4);
    /* fewer rows than the first chunk: one chunk */
    const long long one[] = {0, 5000};
    expect(5000, 1 << 17, 1 << 22, 4, one, 1);
    /* first above the cap: every chunk the cap */
    const long long flat[] = {0, 8, 16, 20};
    expect(20, 100, 8, 4, flat, 3);
    /* one row; no rows */
    const long long single[] = {0, 1};
    expect(1, 4096, 4096, 4, single, 1);
    const long long none[] = {0};
    expect(0, 4096, 4096, 4, none, 0);
}

static void test_random_rules(void)
{
    srand(7);
    for (int trial = 0; trial < 2000; trial++) {
        long long rows = 1 + rand() % 200000, first = 1 + rand() % 5000;
        long long cap = first / 2 + 1 + rand() % 50000;
        int growth = 1 + rand() % 5;
        int n = fh_critic_chunk_schedule(rows, first, cap, growth, NULL);
        if (n > MAX_CHUNKS) /* too many to hold: only the count's bound is checked */
            continue;
        long long begin[MAX_CHUNKS + 1];
        CHECK(fh_critic_chunk_schedule(rows, first, cap, growth, begin) == n);
        int ok = n >= 1 && begin[0] == 0 && begin[n] == rows;
        long long expected = first < cap ? first : cap;
        for (int k = 0; ok && k < n; k++) {
            long long size = begin[k + 1] - begin[k];
            /* every chunk has its expected size but the last, which holds what is left */
            ok = size >= 1 && (k == n - 1 ? size <= expected : size == expected);
            expected = expected * growth < cap ? expected * growth : cap;
        }
        CHECK_MSG(ok, "rows %lld first %lld cap %lld growth %d: %d chunks break the rules",
                  rows, first, cap, growth, n);
    }
}

int main(void)
{
    test_hand_computed();
    test_random_rules();
    return fh_test_finish();
}
