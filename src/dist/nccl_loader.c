/* nccl_loader.c — see nccl_loader.h. */
#define _GNU_SOURCE /* dladdr: the file a library found by its soname came from */
#include "dist/nccl_loader.h"

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>

#define SONAME "libnccl.so.2"
#define WHEEL_LIB "nvidia/nccl/lib/" SONAME

void fh_nccl_version_text(int version, char *out, size_t size)
{
    /* NCCL_VERSION: X*10000 + Y*100 + Z from 2.9; X*1000 + Y*100 + Z before */
    if (version >= 20900)
        snprintf(out, size, "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
    else
        snprintf(out, size, "%d.%d.%d", version / 1000, version / 100 % 10, version % 100);
}

int fh_nccl_search_patterns(const fh_search_env *env, char (*out)[FH_NCCL_PATH_MAX], int max)
{
    struct {
        const char *root, *fmt;
    } rows[] = {
        {env->virtual_env, "%s/lib/python3*/site-packages/" WHEEL_LIB},
        {env->conda_prefix, "%s/lib/python3*/site-packages/" WHEEL_LIB},
        {env->conda_prefix, "%s/lib/" SONAME},
        {env->home, "%s/.local/lib/python3*/site-packages/" WHEEL_LIB},
        {"/usr/local", "%s/lib/python3*/dist-packages/" WHEEL_LIB},
        {"/usr/local", "%s/lib/python3*/site-packages/" WHEEL_LIB},
        {"/usr", "%s/lib/python3*/dist-packages/" WHEEL_LIB},
        {"/usr", "%s/lib/python3*/site-packages/" WHEEL_LIB},
        {"/opt", "%s/*/lib/python3*/site-packages/" WHEEL_LIB},
        {"/opt", "%s/*/.venv/lib/python3*/site-packages/" WHEEL_LIB},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0] && n < max; i++) {
        if (!rows[i].root || !rows[i].root[0])
            continue;
        if (snprintf(out[n], FH_NCCL_PATH_MAX, rows[i].fmt, rows[i].root) < FH_NCCL_PATH_MAX)
            n++;
    }
    return n;
}

void fh_nccl_unload(fh_nccl *n)
{
    if (n->handle)
        dlclose(n->handle);
    memset(n, 0, sizeof *n);
}

/* The entry points and the version out of an open handle; on failure the reason in
 * why (the handle is left for the caller to close). */
static int bind_table(fh_nccl *n, char *why, size_t why_size)
{
    struct {
        void **slot;
        const char *name;
        int optional;
    } syms[] = {
        {(void **)&n->ncclGetVersion, "ncclGetVersion", 0},
        {(void **)&n->ncclGetUniqueId, "ncclGetUniqueId", 0},
        {(void **)&n->ncclCommInitRank, "ncclCommInitRank", 0},
        {(void **)&n->ncclCommDestroy, "ncclCommDestroy", 0},
        {(void **)&n->ncclCommAbort, "ncclCommAbort", 0},
        {(void **)&n->ncclCommGetAsyncError, "ncclCommGetAsyncError", 0},
        {(void **)&n->ncclAllReduce, "ncclAllReduce", 0},
        {(void **)&n->ncclAllGather, "ncclAllGather", 0},
        {(void **)&n->ncclGroupStart, "ncclGroupStart", 0},
        {(void **)&n->ncclGroupEnd, "ncclGroupEnd", 0},
        {(void **)&n->ncclGetErrorString, "ncclGetErrorString", 0},
        {(void **)&n->ncclGetLastError, "ncclGetLastError", 1},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        /* POSIX's way from a data pointer to a function pointer */
        *syms[i].slot = dlsym(n->handle, syms[i].name);
        if (!*syms[i].slot && !syms[i].optional) {
            snprintf(why, why_size, "it has no %s (not NCCL 2, or damaged)", syms[i].name);
            return 0;
        }
    }
    int version = 0;
    if (n->ncclGetVersion(&version) != ncclSuccess || version < FH_NCCL_MIN_VERSION) {
        char have[32], need[32];
        fh_nccl_version_text(version, have, sizeof have);
        fh_nccl_version_text(FH_NCCL_MIN_VERSION, need, sizeof need);
        snprintf(why, why_size, "it is NCCL %s; foxhunt needs %s or newer", have, need);
        return 0;
    }
    n->version = version;
    Dl_info info;
    if (dladdr((void *)n->ncclGetVersion, &info) && info.dli_fname)
        snprintf(n->path, sizeof n->path, "%s", info.dli_fname);
    return 1;
}

/* 1 when `path` loads as a usable NCCL; else why (dlerror's text, or bind_table's). */
static int try_load(fh_nccl *n, const char *path, char *why, size_t why_size)
{
    dlerror();
    n->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!n->handle) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "dlopen failed");
        return 0;
    }
    snprintf(n->path, sizeof n->path, "%s", path);
    if (bind_table(n, why, why_size))
        return 1;
    dlclose(n->handle);
    n->handle = NULL;
    return 0;
}

fh_status fh_nccl_load(fh_nccl *n, const char *explicit_path, const fh_search_env *env,
                       fh_error *err)
{
    char note[sizeof n->note];
    memset(n, 0, sizeof *n);
    fh_nccl_env_apply(note, sizeof note); /* before NCCL reads its settings */
    char why[400];
    if (explicit_path && explicit_path[0]) {
        if (try_load(n, explicit_path, why, sizeof why))
            goto loaded;
        return fh_error_set(err, FH_ERR_INPUT, "--nccl-library %s cannot be used: %s (give the "
                            "path of libnccl.so.2, e.g. .../site-packages/" WHEEL_LIB ", or leave "
                            "the flag out to search)", explicit_path, why);
    }
    if (try_load(n, SONAME, why, sizeof why))
        goto loaded;
    char loader_why[sizeof why];
    snprintf(loader_why, sizeof loader_why, "%s", why);
    char patterns[FH_NCCL_MAX_PATTERNS][FH_NCCL_PATH_MAX];
    int n_patterns = fh_nccl_search_patterns(env, patterns, FH_NCCL_MAX_PATTERNS);
    char wheel_why[sizeof why + FH_NCCL_PATH_MAX] = "";
    int found = 0;
    for (int i = 0; i < n_patterns; i++) {
        glob_t g;
        if (glob(patterns[i], 0, NULL, &g) != 0)
            continue;
        for (size_t k = 0; k < g.gl_pathc; k++) {
            found++;
            if (try_load(n, g.gl_pathv[k], why, sizeof why)) {
                globfree(&g);
                goto loaded;
            }
            if (!wheel_why[0]) /* the first failure says the most */
                snprintf(wheel_why, sizeof wheel_why, "%s: %s", g.gl_pathv[k], why);
        }
        globfree(&g);
    }
    return fh_error_set(err, FH_ERR_FAILURE,
                        "NCCL (" SONAME ") cannot be loaded, so data-parallel training is "
                        "unavailable. Tried: the dynamic loader (LD_LIBRARY_PATH, the run path, "
                        "ldconfig): %.300s; NVIDIA's Python wheels (%d places, e.g. "
                        "/usr/local/lib/python3*/dist-packages/" WHEEL_LIB "): %.300s. Install "
                        "it (pip install nvidia-nccl-cu13, or your distribution's libnccl2) or "
                        "name the file with --nccl-library PATH",
                        loader_why, n_patterns, found ? wheel_why : "none found");
loaded:
    snprintf(n->note, sizeof n->note, "%s", note);
    return FH_OK;
}
