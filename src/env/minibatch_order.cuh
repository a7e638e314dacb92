/* minibatch_order.cuh — the order in which an update visits the batch's samples: a
 * keyed pseudo-random permutation of [0, n) that gives any position's sample on its
 * own, so the GPU computes each minibatch row independently and the CPU the same
 * order (issue 17: the two updates compared step by step).
 *
 * fh_minibatch_order(key, n, i) is a balanced Feistel network over the smallest
 * even-bit domain 2^(2h) >= n (8 rounds, each a splitmix64 finaliser of the right half
 * and a round key), walked until it lands in [0, n) ("cycle walking": a permutation of
 * the domain restricted to [0, n) is a permutation of [0, n)). The domain is < 4n, so
 * under 4 rounds of the network per sample on average. Integer arithmetic only: the
 * host and the device give the same bits.
 *
 * An epoch's key is two draws of the update's PCG stream (fh_minibatch_key); the
 * update draws every epoch's key before the first (target-KL early stop does not change
 * how much of the stream it uses), then the curiosity fit's keys.
 *
 * Included after common_device_functions.cuh (FH_DEVICE, fh_rng, pcg32). */
#ifndef FOXHUNT_MINIBATCH_ORDER_CUH
#define FOXHUNT_MINIBATCH_ORDER_CUH

#define FH_ORDER_ROUNDS 8

FH_DEVICE unsigned long long fh_order_mix(unsigned long long z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* An epoch's key: two 32-bit draws, high word first. */
FH_DEVICE unsigned long long fh_minibatch_key(fh_rng *rng)
{
    unsigned long long hi = pcg32(rng);
    unsigned long long lo = pcg32(rng);
    return (hi << 32) | lo;
}

/* The sample at position i (0 <= i < n, n >= 1) of the order keyed by key. */
FH_DEVICE long long fh_minibatch_order(unsigned long long key, long long n, long long i)
{
    int half = 1;
    while ((1ULL << (2 * half)) < (unsigned long long)n)
        half++;
    unsigned long long mask = (1ULL << half) - 1ULL;
    unsigned long long x = (unsigned long long)i;
    do {
        unsigned long long left = x >> half, right = x & mask;
        for (int r = 0; r < FH_ORDER_ROUNDS; r++) {
            unsigned long long round_key = key + 0x9E3779B97F4A7C15ULL * (unsigned long long)(r + 1);
            unsigned long long f = fh_order_mix(right ^ fh_order_mix(round_key)) & mask;
            unsigned long long next = left ^ f;
            left = right;
            right = next;
        }
        x = (left << half) | right;
    } while (x >= (unsigned long long)n);
    return (long long)x;
}

#endif
