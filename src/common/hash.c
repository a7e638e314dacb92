/* hash.c — FNV-1a 64 (hash.h). */
#include "foxhunt/hash.h"

uint64_t fh_fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}
