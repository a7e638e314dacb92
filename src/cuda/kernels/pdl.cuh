/* pdl.cuh — programmatic dependent launch (compute capability 9.0 and later; update
 * plan's `pdl`): the PPO update's own kernels are launched with
 * cudaLaunchAttributeProgrammaticStreamSerialization (pdl_launch.h), so the GPU may
 * schedule one while the kernel before it in its stream is finishing, hiding the launch
 * latency between the step's dependent nodes. Every kernel such a launch may start
 * begins with fh_pdl_wait(): it returns once the kernel before it has completed and its
 * writes are visible, before anything is read or written; fh_pdl_wait then lets the
 * next kernel of the stream be scheduled (it waits in turn). Without the attribute, or
 * before sm_90, both are no-ops. */
#ifndef FOXHUNT_PDL_CUH
#define FOXHUNT_PDL_CUH

__device__ __forceinline__ void fh_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

#endif
