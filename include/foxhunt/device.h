/* device.h — choosing where foxhunt runs: `--device auto|cpu|cuda` (issue 6).
 *
 * auto: the GPU when a CUDA driver and device exist (and the binary was built with the
 * CUDA toolkit), otherwise the CPU, with one line saying why. cuda: a GPU or an error.
 * cpu: the CPU. The binary links cudart statically, so it starts on machines without
 * a CUDA driver. */
#ifndef FOXHUNT_DEVICE_H
#define FOXHUNT_DEVICE_H

#include <stddef.h>

#include "foxhunt/error.h"

typedef struct {
    int use_gpu;            /* 1: run on the GPU below */
    int device_index;
    char name[256];         /* "NVIDIA H200" */
    int cc_major, cc_minor; /* compute capability */
    int sm_count;
    size_t global_mem;      /* bytes */
    size_t shared_mem_per_block_optin;
    char reason[256];       /* why the CPU was chosen (auto), or "" */
} fh_device_info;

/* choice: "auto", "cpu" or "cuda". Returns FH_ERR_INPUT for "cuda" with no usable GPU
 * (message says why) or an unknown choice. */
fh_status fh_device_select(const char *choice, fh_device_info *info, fh_error *err);

/* GPU `index`'s name and limits into info (use_gpu 1); 0 with info->reason saying why
 * when its properties cannot be read or the build has no CUDA. */
int fh_device_info_fill(fh_device_info *info, int index);

/* One line for the user: "device: NVIDIA H200 (sm_90, 132 SMs, 141 GB)" or
 * "device: CPU (no CUDA device: ...)". */
void fh_device_describe(const fh_device_info *info, char *out, size_t out_size);

#endif
