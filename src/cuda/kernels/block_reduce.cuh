/* block_reduce.cuh — sums in a fixed order (the update's reductions must not depend on
 * scheduling: the same inputs give the same bits, run after run): within a block, and
 * across blocks by "the last block to finish adds the partial sums in block order" (an
 * atomic counter only decides which block does it, never the order). */
#ifndef FOXHUNT_BLOCK_REDUCE_CUH
#define FOXHUNT_BLOCK_REDUCE_CUH

/* The sum of every thread's v, returned to every thread: each warp by a fixed shuffle
 * tree, then warp 0 over the warps' sums in warp order. blockDim.x is a multiple of 32
 * (at most 1024), blockDim.y = 1; shm holds 33 doubles; all threads of the block call it. */
__device__ double fh_block_sum(double v, double *shm)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads(); /* shm may still be read from the previous call */
    if (lane == 0)
        shm[warp] = v;
    __syncthreads();
    if (warp == 0) {
        double s = lane < warps ? shm[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0)
            shm[32] = s;
    }
    __syncthreads();
    return shm[32];
}

/* The sum over a warp's lanes, returned to every lane (a fixed butterfly). */
__device__ __forceinline__ double fh_warp_sum(double v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float fh_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Called by the 32 lanes of one warp: the sum of p[i * stride] for i in [0, n), lane j
 * adding i = j, j + 32, ... in order, then the lanes by the fixed butterfly; every lane
 * gets it. The loads of a lane are independent, so they overlap: a serial loop in one
 * thread waits for each in turn (~0.3 us from L2: 10-20 us for 64 blocks' partials). */
__device__ double fh_warp_sum_strided(const double *p, int n, int stride)
{
    double s = 0.0;
    for (int i = threadIdx.x & 31; i < n; i += 32)
        s += p[(long long)i * stride];
    return fh_warp_sum(s);
}

/* Called by every thread of a block after it wrote its partial results: 1 in the
 * block that finished last (of `blocks` sharing *counter), which then sees every
 * block's partials; the counter is reset for the next launch. */
__device__ int fh_last_block(unsigned *counter, unsigned blocks)
{
    __shared__ int last;
    __threadfence(); /* this block's partials before its count */
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned done = atomicAdd(counter, 1u);
        last = done == blocks - 1;
        if (last)
            *counter = 0;
    }
    __syncthreads();
    if (last)
        __threadfence(); /* the others' partials before reading them */
    return last;
}

#endif
