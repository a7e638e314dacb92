/* cuda_module.h — a compiled kernel module for the device present, cached on disk.
 *
 * The embedded kernel (common header + kernel source) is compiled by NVRTC to CUBIN for
 * the device's architecture, with the caller's options (shapes baked in as -D
 * constants). The CUBIN is cached in $FOXHUNT_CACHE_DIR, else $XDG_CACHE_HOME/foxhunt,
 * else $HOME/.cache/foxhunt, under a key that hashes the program text, the options, the
 * device name and compute capability and the NVRTC version, so a second start loads it
 * without compiling and any change of source, option, device or NVRTC recompiles.
 * Loaded through cudaLibraryLoadData (CUDA runtime, static), so no libcuda link. */
#ifndef FOXHUNT_CUDA_MODULE_H
#define FOXHUNT_CUDA_MODULE_H

#include <cuda_runtime_api.h>

#include "foxhunt/device.h"
#include "foxhunt/error.h"

typedef struct {
    cudaLibrary_t library;
    int from_cache;          /* 1 when loaded from the disk cache (no NVRTC run) */
    char cache_path[1100];   /* the cache file used ("" when caching was impossible) */
    double compile_seconds;  /* NVRTC time, 0 on a cache hit */
} fh_cuda_module;

fh_status fh_cuda_module_load(fh_cuda_module *mod, const fh_device_info *dev,
                              const char *kernel_file, const char *const *options,
                              int n_options, fh_error *err);
/* Looks up a __global__ entry point (extern "C" name). */
fh_status fh_cuda_module_kernel(const fh_cuda_module *mod, const char *name,
                                cudaKernel_t *kernel, fh_error *err);
void fh_cuda_module_free(fh_cuda_module *mod);

#endif
