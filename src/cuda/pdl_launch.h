/* pdl_launch.h — a kernel launch that may overlap the end of the kernel before it in
 * its stream (programmatic dependent launch, kernels/pdl.cuh: the kernel waits at its
 * top). `pdl` 0: a plain launch. Stream capture turns the attribute into a
 * programmatic edge of the graph. */
#ifndef FOXHUNT_CUDA_PDL_LAUNCH_H
#define FOXHUNT_CUDA_PDL_LAUNCH_H

#include <cuda_runtime_api.h>

static inline cudaError_t fh_pdl_launch(const void *kernel, dim3 grid, dim3 block,
                                        void **params, cudaStream_t stream, int pdl)
{
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {.gridDim = grid, .blockDim = block, .dynamicSmemBytes = 0,
                                 .stream = stream, .attrs = &attr, .numAttrs = pdl ? 1 : 0};
    return cudaLaunchKernelExC(&config, kernel, params);
}

#endif
