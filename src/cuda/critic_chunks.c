/* critic_chunks.c — the row chunks of the fast path's batched critic (critic_chunks.h). */
#include "cuda/critic_chunks.h"

int fh_critic_chunk_schedule(long long rows, long long first, long long cap, int growth,
                             long long *begin)
{
    int n = 0;
    long long size = first < cap ? first : cap;
    for (long long r = 0; r < rows; n++) {
        if (begin)
            begin[n] = r;
        r += size < rows - r ? size : rows - r;
        size = size * growth < cap ? size * growth : cap;
    }
    if (begin)
        begin[n] = rows > 0 ? rows : 0;
    return n;
}
