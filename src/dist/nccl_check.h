/* nccl_check.h — the check macro for NCCL calls through the loaded table (STYLE habit
 * 6, as cuda_check.h for CUDA): the call's text, file:line, NCCL's name for the
 * result and, where the library has it, its last error message, into the fh_error;
 * then the function jumps to its `fail:` label. `n` is the fh_nccl table, `comm` the
 * communicator the last error is asked of (NULL: none). */
#ifndef FOXHUNT_DIST_NCCL_CHECK_H
#define FOXHUNT_DIST_NCCL_CHECK_H

#include "dist/nccl_loader.h"

#define NCCL_CHECK(call, n, comm, err)                                                   \
    do {                                                                                 \
        ncclResult_t r_ = (call);                                                        \
        if (r_ != ncclSuccess) {                                                         \
            const char *last_ = (n)->ncclGetLastError ? (n)->ncclGetLastError(comm) : ""; \
            fh_error_set((err), FH_ERR_FAILURE, "%s:%d: %s failed: %s%s%s", __FILE__,     \
                         __LINE__, #call, (n)->ncclGetErrorString(r_),                    \
                         last_ && *last_ ? ": " : "", last_ ? last_ : "");                \
            goto fail;                                                                   \
        }                                                                                \
    } while (0)

#endif
