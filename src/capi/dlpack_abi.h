/* dlpack_abi.h — the DLPack structs libfoxhunt hands out (fh_api_gpu_tensor), declared
 * from the DLPack specification's unversioned ABI (dlpack.h 0.x, the layout
 * torch.from_dlpack, CuPy and JAX read from a "dltensor" capsule). Only what the
 * collector's tensors need: CUDA device memory of float32 and int32 elements. */
#ifndef FOXHUNT_DLPACK_ABI_H
#define FOXHUNT_DLPACK_ABI_H

#include <stdint.h>

#define FH_DL_CUDA 2   /* DLDeviceType kDLCUDA */
#define FH_DL_INT 0    /* DLDataTypeCode kDLInt */
#define FH_DL_FLOAT 2  /* DLDataTypeCode kDLFloat */

typedef struct {
    int32_t device_type; /* FH_DL_CUDA */
    int32_t device_id;   /* the CUDA ordinal */
} fh_dl_device;

typedef struct {
    uint8_t code;   /* FH_DL_INT, FH_DL_FLOAT */
    uint8_t bits;   /* 32 */
    uint16_t lanes; /* 1 */
} fh_dl_dtype;

typedef struct {
    void *data;
    fh_dl_device device;
    int32_t ndim;
    fh_dl_dtype dtype;
    int64_t *shape;   /* (ndim) */
    int64_t *strides; /* (ndim) in elements */
    uint64_t byte_offset;
} fh_dl_tensor;

typedef struct fh_dl_managed_tensor {
    fh_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct fh_dl_managed_tensor *self);
} fh_dl_managed_tensor;

#endif
