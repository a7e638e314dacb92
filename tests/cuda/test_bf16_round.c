/* test_bf16_round.c — float <-> bf16 (src/env/bf16_round.cuh, the text the bf16 update's
 * kernels run: to_bf16_kernel, bias_grad_bf16_kernel, adam_kernel's weight copies), on
 * the CPU:
 *  - hand-computed values: exact ones, both kinds of tie (to even: 1 + 2^-8 down to 1,
 *    1 + 3 * 2^-8 up to 1 + 2^-6), just past a tie, negative numbers, FLT_MAX (to
 *    infinity), the largest float that stays finite, infinities, NaN (a quiet NaN of
 *    its sign), the smallest subnormals;
 *  - 2,000,000 random bit patterns (every exponent) against an independent reference:
 *    the two bf16 neighbours of the float (its top 16 bits, and the next one up in
 *    magnitude), the nearer in double arithmetic, the even one on a tie; and the
 *    round trip of every one of the 65,536 bf16 values is exact. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "env/common_device_functions.cuh"
#include "env/bf16_round.cuh"
#include "test_util.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_hand_computed(void)
{
    struct { float in; unsigned short want; const char *what; } cases[] = {
        {1.0f, 0x3f80, "one"},
        {-2.0f, 0xc000, "minus two"},
        {0.0f, 0x0000, "zero"},
        {-0.0f, 0x8000, "minus zero"},
        {1.0078125f, 0x3f81, "1 + 2^-7, exact"},
        {1.00390625f, 0x3f80, "1 + 2^-8: a tie, to the even 1"},
        {1.01171875f, 0x3f82, "1 + 3 * 2^-8: a tie, to the even 1 + 2^-6"},
        {1.00390637f, 0x3f81, "just past the tie 1 + 2^-8: up"},
        {-1.00390637f, 0xbf81, "its negative: down"},
        {3.38953139e38f, 0x7f7f, "the largest bf16, exact"},
        {3.40282347e38f, 0x7f80, "FLT_MAX: to infinity"},
        {INFINITY, 0x7f80, "infinity"},
        {-INFINITY, 0xff80, "minus infinity"},
        {9.18354962e-41f, 0x0001, "the smallest bf16 subnormal, exact"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned short got = fh_float_to_bf16(cases[i].in);
        CHECK_MSG(got == cases[i].want, "%s: %.9g -> 0x%04x, want 0x%04x", cases[i].what,
                  (double)cases[i].in, got, cases[i].want);
    }
    /* the largest float below the rounding point to infinity stays finite */
    unsigned short below = fh_float_to_bf16(from_bits(0x7f7f7fffu));
    CHECK_MSG(below == 0x7f7f, "0x7f7f7fff -> 0x%04x, want 0x7f7f", below);
    unsigned short nan = fh_float_to_bf16(NAN), neg_nan = fh_float_to_bf16(-NAN);
    CHECK_MSG(isnan(fh_bf16_to_float(nan)) && (nan & 0x0040) && !(nan & 0x8000),
              "NaN -> 0x%04x: not a quiet positive NaN", nan);
    CHECK_MSG(isnan(fh_bf16_to_float(neg_nan)) && (neg_nan & 0x8000), "-NaN -> 0x%04x", neg_nan);
    /* a signalling NaN whose payload is all in the low bits: rounding must not make it
     * an infinity */
    unsigned short snan = fh_float_to_bf16(from_bits(0x7f800001u));
    CHECK_MSG(isnan(fh_bf16_to_float(snan)), "0x7f800001 -> 0x%04x: not a NaN", snan);
    CHECK(fh_bf16_to_float(0x3f80) == 1.0f && fh_bf16_to_float(0xc040) == -3.0f);
}

/* The reference: of the float's two bf16 neighbours the nearer, the even on a tie. */
static unsigned short reference(float f)
{
    uint32_t u = to_bits(f);
    unsigned short lo = (unsigned short)(u >> 16), hi = (unsigned short)(lo + 1);
    if ((u & 0xffffu) == 0)
        return lo;
    double l = (double)from_bits((uint32_t)lo << 16), h = (double)from_bits((uint32_t)hi << 16);
    if (isinf(h)) {
        /* hi is an infinity: f rounds to it from the midpoint of the largest bf16 and
         * the next value the exponent would reach (its half ulp, 2^119, past it) */
        double mid = fabs(l) + ldexp(1.0, 119);
        return fabs((double)f) >= mid ? hi : lo;
    }
    double dl = fabs((double)f - l), dh = fabs((double)f - h);
    if (dl < dh)
        return lo;
    if (dh < dl)
        return hi;
    return (lo & 1) ? hi : lo;
}

static void test_random(void)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    long bad = 0, tested = 0;
    for (long i = 0; i < 2000000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(s >> 32);
        float f = from_bits(u);
        if (isnan(f))
            continue;
        tested++;
        unsigned short got = fh_float_to_bf16(f), want = reference(f);
        if (got != want && bad++ < 5)
            CHECK_MSG(0, "0x%08x (%.9g): 0x%04x, reference 0x%04x", u, (double)f, got, want);
    }
    CHECK_MSG(bad == 0, "%ld of %ld random floats rounded otherwise than the reference", bad,
              tested);
    printf("random: %ld floats, %ld differ from the reference\n", tested, bad);
    long trips = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = fh_bf16_to_float((unsigned short)h);
        if (isnan(f))
            continue;
        trips += fh_float_to_bf16(f) == h;
        CHECK_MSG(fh_float_to_bf16(f) == h, "bf16 0x%04x does not round-trip", h);
    }
    printf("round trip: %ld bf16 values exact\n", trips);
}

int main(void)
{
    test_hand_computed();
    test_random();
    return fh_test_finish();
}
