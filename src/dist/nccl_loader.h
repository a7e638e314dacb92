/* nccl_loader.h — NCCL loaded at run time with dlopen, never linked (issue 22): the
 * binary starts, and trains on one GPU, where NCCL is absent; `foxhunt info` says
 * whether it is loadable and from where. The table holds the entry points foxhunt
 * calls, named as NCCL names them, so a call reads `n->ncclAllReduce(...)`; the caller
 * owns the table (no global state). Types come from NCCL's own nccl.h (found at build
 * time: CMakeLists.txt, FH_HAVE_NCCL); without it this file is not compiled.
 *
 * Where libnccl.so.2 is looked for, in order:
 *   1. --nccl-library PATH, when given (then nothing else: the user named the file);
 *   2. the dynamic loader's search: LD_LIBRARY_PATH, the binary's run path, ldconfig;
 *   3. NVIDIA's Python wheels (nvidia-nccl-cu12/-cu13: nvidia/nccl/lib/libnccl.so.2
 *      under a Python's site-packages or dist-packages): $VIRTUAL_ENV, $CONDA_PREFIX,
 *      ~/.local, /usr/local/lib, /usr/lib, /opt/<x> and /opt/<x>/.venv, each python3*;
 *      and $CONDA_PREFIX/lib (conda's nccl).
 * Loading also sets NCCL_NVLS_ENABLE=0 in the process, always: NVLink multicast stays
 * off (the GPU machines' rule: docs/SCALING.md), before NCCL reads its settings. */
#ifndef FOXHUNT_DIST_NCCL_LOADER_H
#define FOXHUNT_DIST_NCCL_LOADER_H

#include <nccl.h>

#include "dist/dist_env.h"
#include "foxhunt/error.h"

/* The oldest NCCL foxhunt accepts: ncclAvg (2.10), collectives in CUDA graphs (2.9),
 * ncclGetLastError (2.13 optional). */
#define FH_NCCL_MIN_VERSION 21200
#define FH_NCCL_PATH_MAX 1024
#define FH_NCCL_MAX_PATTERNS 16

typedef struct {
    void *handle;                  /* dlopen's; NULL: not loaded */
    char path[FH_NCCL_PATH_MAX];   /* the file loaded */
    int version;                   /* ncclGetVersion's code: 2.32.3 is 23203 */
    char note[256];                /* NCCL_NVLS_ENABLE overridden, or "" */
    ncclResult_t (*ncclGetVersion)(int *version);
    ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*ncclCommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*ncclCommDestroy)(ncclComm_t comm);
    ncclResult_t (*ncclCommAbort)(ncclComm_t comm);
    ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t comm, ncclResult_t *async_error);
    ncclResult_t (*ncclAllReduce)(const void *send, void *recv, size_t count,
                                  ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream);
    ncclResult_t (*ncclAllGather)(const void *send, void *recv, size_t send_count,
                                  ncclDataType_t type, ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*ncclGroupStart)(void);
    ncclResult_t (*ncclGroupEnd)(void);
    const char *(*ncclGetErrorString)(ncclResult_t result);
    const char *(*ncclGetLastError)(ncclComm_t comm); /* NULL before 2.13 */
} fh_nccl;

/* The wheel locations of step 3 as glob patterns (env's roots expanded; a root that
 * is unset is left out); returns how many. */
int fh_nccl_search_patterns(const fh_search_env *env, char (*out)[FH_NCCL_PATH_MAX], int max);

/* Loads NCCL (explicit_path: --nccl-library, or NULL/"" to search) into n. On failure
 * FH_ERR_INPUT (a named file that does not load) or FH_ERR_FAILURE (none found), the
 * message saying what was tried and what to do; n is left unloaded. */
fh_status fh_nccl_load(fh_nccl *n, const char *explicit_path, const fh_search_env *env,
                       fh_error *err);
void fh_nccl_unload(fh_nccl *n);

/* "2.32.3" */
void fh_nccl_version_text(int version, char *out, size_t size);

#endif
