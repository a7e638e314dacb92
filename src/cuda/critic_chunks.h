/* critic_chunks.h — the row chunks of the fast path's batched critic (issue 7).
 *
 * The pipeline (docs/ARCHITECTURE.md) runs the critic's first layer chunk by chunk on a
 * second stream ahead of the matmuls that read it; only the first chunk's first layer
 * is not hidden behind a matmul, so the chunks start small and grow. Pure C, no CUDA. */
#ifndef FOXHUNT_CRITIC_CHUNKS_H
#define FOXHUNT_CRITIC_CHUNKS_H

/* The chunks of `rows` rows: the first min(first, cap) rows, then each chunk `growth`
 * times the last, at most `cap`, the last one what is left. Writes the n + 1 offsets
 * (0, ..., rows) into begin when begin is not NULL (it must hold n + 1) and returns n;
 * 0 chunks for rows <= 0. first, cap >= 1 and growth >= 1. */
int fh_critic_chunk_schedule(long long rows, long long first, long long cap, int growth,
                             long long *begin);

#endif
