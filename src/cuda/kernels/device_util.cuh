/* device_util.cuh — small device helpers of the fast kernels: the rollout's clock
 * counters, float4 multiply-adds, cp.async copies, named barriers. */
#ifndef FOXHUNT_DEVICE_UTIL_CUH
#define FOXHUNT_DEVICE_UTIL_CUH

#ifdef FH_ROLLOUT_CLOCKS
#define FH_CLOCK_DECL long long clk_acc[FH_CLOCK_PARTS] = {0, 0, 0, 0, 0}; long long clk_last = clock64()
#define FH_CLOCK_MARK(part) do { long long now_ = clock64(); clk_acc[part] += now_ - clk_last; clk_last = now_; } while (0)
#define FH_CLOCK_STORE(clocks, n, lane) do { if ((clocks) && (lane) == 0) for (int c_ = 0; c_ < FH_CLOCK_PARTS; c_++) (clocks)[(long long)(n) * FH_CLOCK_STRIDE + c_] = clk_acc[c_]; } while (0)
#else
#define FH_CLOCK_DECL do { } while (0)
#define FH_CLOCK_MARK(part) do { } while (0)
#define FH_CLOCK_STORE(clocks, n, lane) do { } while (0)
#endif

/* acc + w * x per component (four fmaf, in x, y, z, w order) */
__device__ __forceinline__ float4 fh_fma4(float4 w, float x, float4 acc)
{
    acc.x = fmaf(w.x, x, acc.x);
    acc.y = fmaf(w.y, x, acc.y);
    acc.z = fmaf(w.z, x, acc.z);
    acc.w = fmaf(w.w, x, acc.w);
    return acc;
}

/* 16 bytes from global to shared memory without passing through registers (cp.async,
 * sm_80 on; a plain copy before): the actor table's next row lands while the step
 * runs. fh_copy_async_wait waits for the thread's copies; a barrier then shares them. */
__device__ __forceinline__ void fh_copy16_async(float *dst, const float *src)
{
#if __CUDA_ARCH__ >= 800
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    size_t g = __cvta_generic_to_global(src);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(g) : "memory");
#else
    *(float4 *)dst = __ldg((const float4 *)src);
#endif
}

__device__ __forceinline__ void fh_copy_async_wait(void)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/* A named barrier for the `threads` threads of one episode or group (bar.sync id, n;
 * the intrinsic rather than inline asm with a "memory" clobber). */
__device__ __forceinline__ void episode_barrier(int id, int threads)
{
    __barrier_sync_count((unsigned)id, (unsigned)threads);
}

#endif
