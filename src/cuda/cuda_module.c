/* cuda_module.c — NVRTC compile + disk cache + load (cuda_module.h). */
#include "cuda/cuda_module.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda_check.h"
#include "cuda/embedded_sources.h"
#include "cuda/nvrtc_compile.h"
#include "cuda/overrides.h"
#include "foxhunt/files.h"

#define CACHE_FORMAT_VERSION "foxhunt-cubin-2"

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t fnv1a_str(uint64_t h, const char *s)
{
    return fnv1a(h, s, strlen(s) + 1); /* the NUL separates fields */
}

/* The cached image at path, or NULL (absent, unreadable, or not a regular file: a FIFO
 * there must not hang every GPU process, issue 32); the caller compiles then. */
static char *read_file(const char *path, size_t *size)
{
    char *buf = NULL;
    fh_error ignored;
    if (fh_read_regular_file(path, "kernel cache entry", 0, &buf, size, &ignored) != FH_OK)
        return NULL;
    if (*size == 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Atomic: a crash never leaves a half-written cache entry under the real name. */
static void write_cache(const char *path, const void *data, size_t size)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    fh_error ignored;
    FILE *f = fh_fopen_regular(tmp, "kernel cache entry", O_WRONLY | O_CREAT | O_TRUNC, &ignored);
    if (f)
        (void)fh_replace_with_tmp(f, fwrite(data, 1, size, f) == size, 0, tmp, path);
}

static fh_status load_image(fh_cuda_module *mod, const void *image, fh_error *err)
{
    CUDA_CHECK(cudaLibraryLoadData(&mod->library, image, NULL, NULL, 0, NULL, NULL, 0), err);
    return FH_OK;
fail:
    mod->library = NULL;
    return err->status;
}

fh_status fh_cuda_module_load(fh_cuda_module *mod, const fh_device_info *dev,
                              const char *kernel_file, const char *const *options,
                              int n_options, fh_error *err)
{
    memset(mod, 0, sizeof *mod);
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", dev->cc_major, dev->cc_minor);

    char *text = fh_nvrtc_program_text(kernel_file);
    const fh_embedded_source *shapes = fh_embedded_source_find("foxhunt/shapes.h");
    if (!text || !shapes) {
        free(text);
        return fh_error_set(err, FH_ERR_FAILURE, "%s:%d: kernel '%s' is not embedded",
                            __FILE__, __LINE__, kernel_file);
    }
    uint64_t h = 1469598103934665603ULL;
    h = fnv1a_str(h, CACHE_FORMAT_VERSION);
    h = fnv1a_str(h, text);
    /* every embedded source: a kernel may include another (fast_kernels.cu includes its
     * concern files and the PPO device functions), and any change must recompile */
    for (const fh_embedded_source *e = fh_embedded_sources; e->path; e++) {
        h = fnv1a_str(h, e->path);
        h = fnv1a_str(h, e->text);
    }
    for (int i = 0; i < n_options; i++)
        h = fnv1a_str(h, options[i]);
    h = fnv1a_str(h, arch);
    h = fnv1a_str(h, dev->name);
    int nvrtc_version = fh_nvrtc_version();
    h = fnv1a(h, &nvrtc_version, sizeof nvrtc_version);
    free(text);

    char dir[900];
    if (fh_kernel_cache_dir(dir, sizeof dir))
        snprintf(mod->cache_path, sizeof mod->cache_path, "%s/%016llx.cubin", dir,
                 (unsigned long long)h);

    if (mod->cache_path[0]) {
        size_t size = 0;
        char *cached = read_file(mod->cache_path, &size);
        if (cached) {
            fh_error ignored;
            fh_status st = load_image(mod, cached, &ignored);
            free(cached);
            if (st == FH_OK) {
                mod->from_cache = 1;
                return FH_OK;
            }
            cudaGetLastError(); /* a stale or damaged entry: recompile below */
        }
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fh_nvrtc_output out;
    fh_status st = fh_nvrtc_compile(kernel_file, arch, options, n_options, &out, err);
    if (st != FH_OK)
        return st;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    mod->compile_seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    st = load_image(mod, out.image, err);
    if (st == FH_OK && mod->cache_path[0])
        write_cache(mod->cache_path, out.image, out.size);
    fh_nvrtc_output_free(&out);
    return st;
}

fh_status fh_cuda_module_kernel(const fh_cuda_module *mod, const char *name,
                                cudaKernel_t *kernel, fh_error *err)
{
    CUDA_CHECK(cudaLibraryGetKernel(kernel, mod->library, name), err);
    return FH_OK;
fail:
    return err->status;
}

void fh_cuda_module_free(fh_cuda_module *mod)
{
    if (mod->library)
        cudaLibraryUnload(mod->library);
    mod->library = NULL;
}
