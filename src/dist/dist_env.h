/* dist_env.h — what a data-parallel rank reads from its process environment, in one
 * place (issue 22): the rank, world size and local rank an MPI launcher or Slurm sets,
 * and the directories the NCCL loader searches (HOME, VIRTUAL_ENV, CONDA_PREFIX).
 * These are other programs' variables, read so that `mpirun ... foxhunt train --world
 * K` needs no per-rank flag; foxhunt's own settings stay in the train config (no
 * FOXHUNT_* switch). The parser takes a lookup function, so tests pass tables. */
#ifndef FOXHUNT_DIST_ENV_H
#define FOXHUNT_DIST_ENV_H

#include <stddef.h>

#include "foxhunt/error.h"

typedef const char *(*fh_env_lookup)(const char *name, void *ctx);

typedef struct {
    int rank, world, local_rank; /* -1 where the launcher sets none */
    char source[96];             /* "Open MPI (OMPI_COMM_WORLD_RANK)", ... or "" */
} fh_launcher_env;

/* The first launcher whose rank variable is set: Open MPI (OMPI_COMM_WORLD_RANK,
 * _SIZE, _LOCAL_RANK), PMI (MPICH, Intel MPI: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID),
 * Slurm (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID). A value that is not a
 * non-negative integer is FH_ERR_INPUT naming the variable. */
fh_status fh_launcher_env_parse(fh_launcher_env *e, fh_env_lookup get, void *ctx,
                                fh_error *err);
/* The same from this process's environment. */
fh_status fh_launcher_env_read(fh_launcher_env *e, fh_error *err);

/* This process's environment: the loader's search roots ("" when unset). */
typedef struct {
    const char *home, *virtual_env, *conda_prefix;
} fh_search_env;
void fh_search_env_read(fh_search_env *s);

/* NCCL's environment before it is loaded: NCCL_NVLS_ENABLE=0, always (NVLink multicast
 * off: a program that uses it can put a shared host's GPUs out of service; docs/
 * SCALING.md). note: "" or what was overridden, for the run to print. */
void fh_nccl_env_apply(char *note, size_t size);

#endif
