/* test_minibatch_order.c — the keyed minibatch order (src/env/minibatch_order.cuh), the
 * order in which the PPO update (CPU now, GPU per row) visits a batch's samples:
 *
 *  - for n in {1, 2, 3, 7, 64, 511, 512, 513, 4096, 64000, 100003} (domain edges 4^h
 *    and 4^h +- 1 included) and several keys, positions 0..n-1 give a permutation of
 *    [0, n);
 *  - values at n = 64000, key 0x0123456789abcdef, positions 0, 1, 2 equal a plain
 *    reimplementation written here from the header's comment (Feistel, 8 rounds, round
 *    key = key + 0x9E3779B97F4A7C15 (r + 1), f = mix(right ^ mix(round key)) & mask,
 *    half = the smallest h with 2^(2h) >= n, cycle walking) — weak (same reading of
 *    the same comment), but it pins the construction;
 *  - uniformity: for n = 64 over 20,000 keys from a seeded PCG stream, the sample at
 *    position 0 and at position 17 pass a chi-square test (63 dof, fail above the 0.999
 *    quantile 108.8), and order(0) < order(1) for 0.5 +- 0.02 of the keys;
 *  - different keys give different orders (n = 512, 100 keys, all orders distinct);
 *  - fh_minibatch_key is two PCG32 draws, the first the high word. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/minibatch_order.cuh"
#include "test_util.h"

/* ---- an independent, plain reading of the header's comment ---- */

static uint64_t ref_mix(uint64_t z) /* the splitmix64 finaliser */
{
    z ^= z >> 30;
    z *= UINT64_C(0xBF58476D1CE4E5B9);
    z ^= z >> 27;
    z *= UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return z;
}

static int64_t ref_order(uint64_t key, int64_t n, int64_t i)
{
    int h = 0;
    do
        h++;
    while ((UINT64_C(1) << (2 * h)) < (uint64_t)n);
    uint64_t mask = (UINT64_C(1) << h) - 1;
    uint64_t x = (uint64_t)i;
    for (;;) {
        uint64_t l = (x >> h) & mask, r = x & mask;
        for (int round = 0; round < 8; round++) {
            uint64_t rk = key + UINT64_C(0x9E3779B97F4A7C15) * (uint64_t)(round + 1);
            uint64_t f = ref_mix(r ^ ref_mix(rk)) & mask;
            uint64_t new_r = l ^ f;
            l = r;
            r = new_r;
        }
        x = (l << h) | r;
        if (x < (uint64_t)n)
            return (int64_t)x;
    }
}

/* ---- the checks ---- */

static int is_permutation(uint64_t key, int64_t n, char *seen)
{
    memset(seen, 0, (size_t)n);
    for (int64_t p = 0; p < n; p++) {
        long long s = fh_minibatch_order(key, n, p);
        if (s < 0 || s >= n || seen[s])
            return 0;
        seen[s] = 1;
    }
    return 1;
}

static void test_permutations(void)
{
    const int64_t ns[] = {1, 2, 3, 7, 64, 511, 512, 513, 4096, 64000, 100003};
    const uint64_t keys[] = {0, 1, UINT64_C(0x0123456789abcdef), UINT64_C(0xffffffffffffffff),
                             UINT64_C(0x8000000000000000), UINT64_C(0x9E3779B97F4A7C15)};
    char *seen = malloc(100003);
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        int ok = 1;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (!is_permutation(keys[k], ns[a], seen)) {
                ok = 0;
                CHECK_MSG(0, "n %lld, key %016llx: not a permutation of [0, n)",
                          (long long)ns[a], (unsigned long long)keys[k]);
            }
        if (ok)
            CHECK(ok);
    }
    /* and keys from the update's kind of stream */
    fh_rng rng;
    rng_seed(&rng, 20240517ULL, 3ULL);
    for (int k = 0; k < 8; k++) {
        uint64_t key = fh_minibatch_key(&rng);
        CHECK_MSG(is_permutation(key, 100003, seen) && is_permutation(key, 4097, seen),
                  "stream key %d (%016llx): not a permutation", k, (unsigned long long)key);
    }
    free(seen);
}

static void test_reference_values(void)
{
    const uint64_t key = UINT64_C(0x0123456789abcdef);
    const int64_t n = 64000;
    for (int64_t p = 0; p < 3; p++) {
        long long got = fh_minibatch_order(key, n, p);
        int64_t want = ref_order(key, n, p);
        printf("order(key 0x0123456789abcdef, n 64000, position %lld) = %lld\n", (long long)p,
               got);
        CHECK_MSG(got == want, "position %lld: header %lld, reimplementation %lld",
                  (long long)p, got, (long long)want);
    }
    /* the same agreement over a whole smaller order and a cycle-walked one */
    int same = 1;
    for (int64_t p = 0; p < 513; p++)
        same &= fh_minibatch_order(key ^ 0x55, 513, p) == ref_order(key ^ 0x55, 513, p);
    for (int64_t p = 0; p < 64; p++)
        same &= fh_minibatch_order(7, 64, p) == ref_order(7, 64, p);
    CHECK_MSG(same, "the header and the reimplementation disagree at n 513 or 64");
}

static double chi_square(const int *counts, int bins, double expected)
{
    double c = 0;
    for (int b = 0; b < bins; b++) {
        double d = counts[b] - expected;
        c += d * d / expected;
    }
    return c;
}

#define UNI_N 64
#define UNI_KEYS 20000
#define CHI2_63_999 108.8 /* the 0.999 quantile of chi-square with 63 dof */

static void test_uniformity(void)
{
    fh_rng rng;
    rng_seed(&rng, 0xC0FFEEULL, 11ULL);
    int at0[UNI_N] = {0}, at17[UNI_N] = {0}, less = 0;
    for (int k = 0; k < UNI_KEYS; k++) {
        uint64_t key = fh_minibatch_key(&rng);
        long long s0 = fh_minibatch_order(key, UNI_N, 0);
        long long s1 = fh_minibatch_order(key, UNI_N, 1);
        long long s17 = fh_minibatch_order(key, UNI_N, 17);
        at0[s0]++;
        at17[s17]++;
        less += s0 < s1;
    }
    double expected = (double)UNI_KEYS / UNI_N;
    double c0 = chi_square(at0, UNI_N, expected), c17 = chi_square(at17, UNI_N, expected);
    double frac = (double)less / UNI_KEYS;
    printf("n %d, %d keys: chi-square (63 dof) %.1f at position 0, %.1f at 17 (limit %.1f); "
           "order(0) < order(1) for %.4f\n", UNI_N, UNI_KEYS, c0, c17, CHI2_63_999, frac);
    CHECK_MSG(c0 <= CHI2_63_999, "position 0's sample is not uniform: chi-square %.1f", c0);
    CHECK_MSG(c17 <= CHI2_63_999, "position 17's sample is not uniform: chi-square %.1f", c17);
    CHECK_MSG(frac >= 0.48 && frac <= 0.52, "order(0) < order(1) for %.4f of the keys", frac);
}

#define DIST_N 512
#define DIST_KEYS 100

static void test_keys_differ(void)
{
    fh_rng rng;
    rng_seed(&rng, 99ULL, 5ULL);
    int64_t *orders = malloc((size_t)DIST_KEYS * DIST_N * sizeof *orders);
    for (int k = 0; k < DIST_KEYS; k++) {
        uint64_t key = fh_minibatch_key(&rng);
        for (int p = 0; p < DIST_N; p++)
            orders[(size_t)k * DIST_N + p] = fh_minibatch_order(key, DIST_N, p);
    }
    int same = 0;
    for (int a = 0; a < DIST_KEYS; a++)
        for (int b = a + 1; b < DIST_KEYS; b++)
            same += memcmp(orders + (size_t)a * DIST_N, orders + (size_t)b * DIST_N,
                           DIST_N * sizeof *orders) == 0;
    CHECK_MSG(same == 0, "%d pairs of the %d keys give the same order of %d", same, DIST_KEYS,
              DIST_N);
    int identity = 0;
    for (int k = 0; k < DIST_KEYS; k++) {
        int id = 1;
        for (int p = 0; p < DIST_N; p++)
            id &= orders[(size_t)k * DIST_N + p] == p;
        identity += id;
    }
    CHECK_MSG(identity == 0, "%d keys give the identity order", identity);
    free(orders);
}

static void test_key_draws(void)
{
    fh_rng a, b;
    rng_seed(&a, 12345ULL, 2ULL);
    b = a;
    uint64_t key = fh_minibatch_key(&a);
    uint64_t hi = pcg32(&b), lo = pcg32(&b);
    CHECK(key == ((hi << 32) | lo));
    CHECK(a.state == b.state && a.inc == b.inc);
}

int main(void)
{
    test_permutations();
    test_reference_values();
    test_uniformity();
    test_keys_differ();
    test_key_draws();
    return fh_test_finish();
}
