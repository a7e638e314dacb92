/* actor_table.cu — the actor's first layer factored through the market: a per-bar table
 * of its sums over the 51 market features, made before each rollout (FH_ACTOR_TABLE). */
#ifndef FOXHUNT_ACTOR_TABLE_CU
#define FOXHUNT_ACTOR_TABLE_CU

/* The actor table (FH_ACTOR_TABLE), made before each rollout from that collection's
 * actor: row `bar` holds the first layer's sums over the bar's 51 market features, in
 * the order the rollout's mapping sums them, so that adding the 3 portfolio inputs gives
 * the same bits as the whole sum. split (fast_actor, block_actor, pair_split_actor): the
 * even inputs' sum from the bias, then the odd inputs' from 0 (FH_ACTOR_TABLE_SPLIT_ROW);
 * else one sum from the bias, inputs ascending (lane_dense; FH_ACTOR_TABLE_SEQ_ROW). A block of
 * FH_ACTOR_H1 threads (thread o: output o, its 51 weights in registers) makes
 * FH_ACTOR_TABLE_BARS rows, their features staged in shared memory (read as
 * broadcasts). The first layer's weights come in through shared memory too: read by
 * rows straight from global memory, each warp-wide load touched 32 rows 216 bytes
 * apart (ncu: 25 us for 20,000 bars). */
static_assert((FH_ACTOR_TABLE_BARS * FH_N_MARKET_FEATURES + FH_ACTOR_H1 * FH_STATE_DIM) *
                      sizeof(float) <= 48 * 1024,
              "actor_table_kernel: the bars' features and W0 exceed 48 KiB of static shared "
              "memory");
__device__ __forceinline__ void actor_table_kernel_body(
    float *table, const float *__restrict__ features, const float *__restrict__ actor_w,
    int n_bars, int split)
{
    __shared__ float f_sm[FH_ACTOR_TABLE_BARS * FH_N_MARKET_FEATURES];
    __shared__ float w_sm[FH_ACTOR_H1 * FH_STATE_DIM]; /* W0 as stored: (128, 54) */
    int o = threadIdx.x;
    long long bar0 = (long long)blockIdx.x * FH_ACTOR_TABLE_BARS;
    int bars = n_bars - bar0 < FH_ACTOR_TABLE_BARS ? (int)(n_bars - bar0) : FH_ACTOR_TABLE_BARS;
    for (int i = o; i < bars * FH_N_MARKET_FEATURES; i += FH_ACTOR_H1)
        f_sm[i] = features[bar0 * FH_N_MARKET_FEATURES + i];
    for (int i = o; i < FH_ACTOR_H1 * FH_STATE_DIM; i += FH_ACTOR_H1)
        w_sm[i] = actor_w[FH_ACTOR_OFF_W0 + i];
    float bias = actor_w[FH_ACTOR_OFF_B0 + o];
    __syncthreads();
    float w[FH_N_MARKET_FEATURES];
#pragma unroll
    for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
        w[k] = w_sm[o * FH_STATE_DIM + k];
    for (int b = 0; b < bars; b++) {
        const float *f = f_sm + b * FH_N_MARKET_FEATURES;
        if (split) {
            float even = bias, odd = 0.0f;
#pragma unroll
            for (int k = 0; k < FH_N_MARKET_FEATURES; k += 2) {
                even = fmaf(w[k], f[k], even);
                if (k + 1 < FH_N_MARKET_FEATURES)
                    odd = fmaf(w[k + 1], f[k + 1], odd);
            }
            table[(bar0 + b) * FH_ACTOR_TABLE_SPLIT_ROW + o] = even;
            table[(bar0 + b) * FH_ACTOR_TABLE_SPLIT_ROW + FH_ACTOR_H1 + o] = odd;
        } else {
            float acc = bias;
#pragma unroll
            for (int k = 0; k < FH_N_MARKET_FEATURES; k++)
                acc = fmaf(w[k], f[k], acc);
            table[(bar0 + b) * FH_ACTOR_TABLE_SEQ_ROW + o] = acc;
        }
    }
}

extern "C" __global__ void __launch_bounds__(FH_ACTOR_H1)
actor_table_kernel(const fh_actor_table_args a)
{
    actor_table_kernel_body(a.table, a.features, a.actor_w, a.n_bars, a.split);
}

#endif
