/* device_select.c — `--device auto|cpu|cuda` (include/foxhunt/device.h). */
#include "foxhunt/device.h"

#include <stdio.h>
#include <string.h>
#if FH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

int fh_device_info_fill(fh_device_info *info, int index)
{
#if FH_HAVE_CUDA
    struct cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, index);
    if (e != cudaSuccess) {
        snprintf(info->reason, sizeof info->reason, "cudaGetDeviceProperties(%d): %s", index,
                 cudaGetErrorString(e));
        return 0;
    }
    info->use_gpu = 1;
    info->device_index = index;
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->global_mem = prop.totalGlobalMem;
    info->shared_mem_per_block_optin = prop.sharedMemPerBlockOptin;
    return 1;
#else
    snprintf(info->reason, sizeof info->reason, "GPU %d: this foxhunt was built without the "
             "CUDA toolkit", index);
    return 0;
#endif
}

fh_status fh_device_select(const char *choice, fh_device_info *info, fh_error *err)
{
    memset(info, 0, sizeof *info);
    info->device_index = -1;
    int want_cuda = strcmp(choice, "cuda") == 0;
    if (strcmp(choice, "cpu") == 0) {
        snprintf(info->reason, sizeof info->reason, "--device cpu");
        return FH_OK;
    }
    if (!want_cuda && strcmp(choice, "auto") != 0)
        return fh_error_set(err, FH_ERR_INPUT, "--device '%s' is not one of auto|cpu|cuda",
                            choice);
#if FH_HAVE_CUDA
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(info->reason, sizeof info->reason, "no CUDA device: %s",
                 e == cudaErrorInsufficientDriver
                     ? "no CUDA driver is installed, or it is older than this build's CUDA runtime"
                 : e == cudaErrorNoDevice ? "the driver reports no GPU"
                 : e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports no GPU");
        cudaGetLastError(); /* clear the sticky "no driver" state */
    } else {
        fh_device_info_fill(info, 0); /* or the reason why not */
    }
#else
    snprintf(info->reason, sizeof info->reason,
             "this foxhunt was built without the CUDA toolkit");
#endif
    if (want_cuda && !info->use_gpu)
        return fh_error_set(err, FH_ERR_INPUT,
                            "--device cuda: %s (use --device cpu or auto to run on the CPU)",
                            info->reason);
    return FH_OK;
}

void fh_device_describe(const fh_device_info *info, char *out, size_t out_size)
{
    if (info->use_gpu)
        snprintf(out, out_size, "device: %s (sm_%d%d, %d SMs, %.0f GB)", info->name,
                 info->cc_major, info->cc_minor, info->sm_count,
                 (double)info->global_mem / 1e9);
    else
        snprintf(out, out_size, "device: CPU (%s)", info->reason);
}
