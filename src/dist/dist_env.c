/* dist_env.c — see dist_env.h. The only reads of the environment in src/dist. */
#include "dist/dist_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name, *rank, *size, *local;
} launcher_vars;

static const launcher_vars launchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI (MPICH, Intel MPI)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

/* *out from variable `name` (-1 when unset). */
static fh_status read_int(fh_env_lookup get, void *ctx, const char *name, int *out,
                          fh_error *err)
{
    const char *v = get(name, ctx);
    *out = -1;
    if (!v)
        return FH_OK;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 0 || x > 1 << 24)
        return fh_error_set(err, FH_ERR_INPUT, "the launcher's %s = '%s' is not a rank number",
                            name, v);
    *out = (int)x;
    return FH_OK;
}

fh_status fh_launcher_env_parse(fh_launcher_env *e, fh_env_lookup get, void *ctx,
                                fh_error *err)
{
    memset(e, 0, sizeof *e);
    e->rank = e->world = e->local_rank = -1;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        const launcher_vars *l = &launchers[i];
        if (!get(l->rank, ctx))
            continue;
        fh_status st;
        if ((st = read_int(get, ctx, l->rank, &e->rank, err)) != FH_OK ||
            (st = read_int(get, ctx, l->size, &e->world, err)) != FH_OK ||
            (st = read_int(get, ctx, l->local, &e->local_rank, err)) != FH_OK)
            return st;
        snprintf(e->source, sizeof e->source, "%s (%s)", l->name, l->rank);
        return FH_OK;
    }
    return FH_OK;
}

static const char *process_env(const char *name, void *ctx)
{
    (void)ctx;
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

fh_status fh_launcher_env_read(fh_launcher_env *e, fh_error *err)
{
    return fh_launcher_env_parse(e, process_env, NULL, err);
}

void fh_search_env_read(fh_search_env *s)
{
    const char *v;
    s->home = (v = process_env("HOME", NULL)) ? v : "";
    s->virtual_env = (v = process_env("VIRTUAL_ENV", NULL)) ? v : "";
    s->conda_prefix = (v = process_env("CONDA_PREFIX", NULL)) ? v : "";
}

void fh_nccl_env_apply(char *note, size_t size)
{
    const char *was = getenv("NCCL_NVLS_ENABLE");
    if (was && strcmp(was, "0") != 0)
        snprintf(note, size, "NCCL_NVLS_ENABLE=%.64s overridden to 0: foxhunt keeps NVLink "
                 "multicast off (docs/SCALING.md)", was);
    else if (size)
        note[0] = '\0';
    setenv("NCCL_NVLS_ENABLE", "0", 1);
}
