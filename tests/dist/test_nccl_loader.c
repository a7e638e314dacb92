/* test_nccl_loader.c — dist/nccl_loader.h on the CPU (built with nccl.h; no GPU needed):
 * a --nccl-library that does not exist, or is not NCCL, refused with a message naming the
 * file and saying what to do, nothing left loaded; the wheel locations searched under
 * HOME, VIRTUAL_ENV and CONDA_PREFIX; NCCL_NVLS_ENABLE forced to 0 with a note when it
 * was set otherwise; and where this machine has an NCCL the loader's search finds, the
 * table complete, the version new enough and a unique id made (the CPU's part of
 * NCCL). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/nccl_loader.h"
#include "test_util.h"

static void test_unload(void)
{
    fh_nccl n;
    fh_error err;
    fh_search_env env;
    fh_search_env_read(&env);
    if (fh_nccl_load(&n, NULL, &env, &err) != FH_OK)
        return; /* test_found says so */
    fh_nccl_unload(&n); /* no NCCL thread started: `foxhunt info`'s use */
    CHECK(n.handle == NULL && n.version == 0 && n.ncclAllReduce == NULL);
}

static void test_missing_file(void)
{
    fh_nccl n;
    fh_error err;
    fh_error_clear(&err);
    fh_search_env env = {"", "", ""};
    fh_status st = fh_nccl_load(&n, "/nonexistent/dir/libnccl.so.2", &env, &err);
    CHECK_MSG(st == FH_ERR_INPUT, "status %d", (int)st);
    CHECK_MSG(strstr(err.message, "--nccl-library /nonexistent/dir/libnccl.so.2 cannot be used") &&
              strstr(err.message, "No such file") && strstr(err.message, "leave the flag out"),
              "message: %s", err.message);
    CHECK(n.handle == NULL && n.ncclAllReduce == NULL);
}

static void test_not_nccl(void)
{
    /* a shared library that loads but is not NCCL */
    const char *candidates[] = {"libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6", NULL};
    const char *lib = NULL;
    for (int i = 0; candidates[i] && !lib; i++) {
        void *h = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            lib = candidates[i];
            dlclose(h);
        }
    }
    if (!lib) {
        printf("note: no libm.so.6 to load: the not-NCCL case is not checked\n");
        return;
    }
    fh_nccl n;
    fh_error err;
    fh_search_env env = {"", "", ""};
    fh_status st = fh_nccl_load(&n, lib, &env, &err);
    CHECK_MSG(st == FH_ERR_INPUT && strstr(err.message, "it has no ncclGetVersion") &&
              strstr(err.message, lib), "%s as NCCL: status %d, '%s'", lib, (int)st, err.message);
    CHECK(n.handle == NULL);
}

static void test_patterns(void)
{
    char p[FH_NCCL_MAX_PATTERNS][FH_NCCL_PATH_MAX];
    fh_search_env env = {"/home/u", "/venv", ""};
    int n = fh_nccl_search_patterns(&env, p, FH_NCCL_MAX_PATTERNS);
    CHECK_MSG(n == 8, "%d patterns with HOME and VIRTUAL_ENV set, expected 8", n);
    const char *want[] = {
        "/venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/home/u/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found |= strcmp(p[i], want[k]) == 0;
        CHECK_MSG(found, "pattern %s missing", want[k]);
    }
    CHECK_MSG(strcmp(p[0], want[0]) == 0, "the active virtual environment first, not %s", p[0]);
    fh_search_env conda = {"", "", "/conda"};
    n = fh_nccl_search_patterns(&conda, p, FH_NCCL_MAX_PATTERNS);
    CHECK_MSG(n == 8 && strcmp(p[1], "/conda/lib/libnccl.so.2") == 0,
              "conda: %d patterns, second %s", n, p[1]);
    CHECK(fh_nccl_search_patterns(&env, p, 2) == 2); /* never past max */
}

static void test_nvls(void)
{
    char note[256];
    setenv("NCCL_NVLS_ENABLE", "1", 1);
    fh_nccl_env_apply(note, sizeof note);
    CHECK_MSG(strstr(note, "NCCL_NVLS_ENABLE=1 overridden to 0"), "note '%s'", note);
    const char *v = getenv("NCCL_NVLS_ENABLE");
    CHECK(v && strcmp(v, "0") == 0);
    unsetenv("NCCL_NVLS_ENABLE");
    fh_nccl_env_apply(note, sizeof note);
    v = getenv("NCCL_NVLS_ENABLE");
    CHECK(note[0] == '\0' && v && strcmp(v, "0") == 0);
    fh_nccl_env_apply(note, sizeof note); /* 0 already: no note */
    CHECK(note[0] == '\0');
}

static void test_version_text(void)
{
    char t[32];
    fh_nccl_version_text(23203, t, sizeof t);
    CHECK(strcmp(t, "2.32.3") == 0);
    fh_nccl_version_text(21200, t, sizeof t);
    CHECK(strcmp(t, "2.12.0") == 0);
    fh_nccl_version_text(2804, t, sizeof t); /* before 2.9: X*1000 + Y*100 + Z */
    CHECK(strcmp(t, "2.8.4") == 0);
}

/* Where the search finds an NCCL: everything foxhunt calls is there. */
static void test_found(void)
{
    fh_nccl n;
    fh_error err;
    fh_search_env env;
    fh_search_env_read(&env);
    setenv("NCCL_NVLS_ENABLE", "1", 1);
    if (fh_nccl_load(&n, NULL, &env, &err) != FH_OK) {
        CHECK_MSG(strstr(err.message, "cannot be loaded") &&
                  strstr(err.message, "pip install nvidia-nccl-cu13") &&
                  strstr(err.message, "--nccl-library PATH"), "not found: %s", err.message);
        printf("note: no NCCL on this machine (%s): the loaded table is not checked\n",
               err.message);
        return;
    }
    char version[32];
    fh_nccl_version_text(n.version, version, sizeof version);
    printf("found NCCL %s at %s\n", version, n.path);
    CHECK(n.version >= FH_NCCL_MIN_VERSION);
    CHECK_MSG(n.path[0] == '/' && access(n.path, R_OK) == 0, "path '%s'", n.path);
    CHECK(n.ncclGetUniqueId && n.ncclCommInitRank && n.ncclCommDestroy && n.ncclCommAbort &&
          n.ncclCommGetAsyncError && n.ncclAllReduce && n.ncclAllGather && n.ncclGroupStart &&
          n.ncclGroupEnd && n.ncclGetErrorString);
    CHECK_MSG(strstr(n.note, "NCCL_NVLS_ENABLE=1 overridden"), "note '%s'", n.note);
    ncclUniqueId a, b;
    CHECK(n.ncclGetUniqueId(&a) == ncclSuccess && n.ncclGetUniqueId(&b) == ncclSuccess);
    CHECK(memcmp(&a, &b, sizeof a) != 0); /* a fresh id each time */
    CHECK(strlen(n.ncclGetErrorString(ncclInvalidArgument)) > 0);
    /* not unloaded: a unique id starts NCCL's bootstrap thread, whose code dlclose would
     * unmap (dist.c keeps NCCL loaded for the same reason) */
}

int main(void)
{
    test_missing_file();
    test_not_nccl();
    test_patterns();
    test_nvls();
    test_version_text();
    test_unload();
    test_found();
    return fh_test_finish();
}
