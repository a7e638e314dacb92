/* nvrtc_compile.c — NVRTC compilation of the embedded kernels (nvrtc_compile.h). */
#include "cuda/nvrtc_compile.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/embedded_sources.h"

#define COMMON_HEADER "common_device_functions.cuh"
/* Embedded sources under this directory are public headers, included as "foxhunt/..." */
#define PUBLIC_INCLUDE_DIR "include/"
/* Every embedded source is a header NVRTC can resolve: the public headers NVRTC needs,
 * the .cuh files of src/env and the kernel directory's files (CMakeLists.txt globs
 * them). */
#define FH_NVRTC_MAX_HEADERS 64

#define NVRTC_CHECK(call, err)                                                          \
    do {                                                                                \
        nvrtcResult r_ = (call);                                                        \
        if (r_ != NVRTC_SUCCESS) {                                                      \
            fh_error_set((err), FH_ERR_FAILURE, "%s:%d: %s failed: %s", __FILE__,        \
                         __LINE__, #call, nvrtcGetErrorString(r_));                      \
            goto fail;                                                                  \
        }                                                                               \
    } while (0)

char *fh_nvrtc_program_text(const char *kernel_file)
{
    const fh_embedded_source *common = fh_embedded_source_find(COMMON_HEADER);
    const fh_embedded_source *kernel = fh_embedded_source_find(kernel_file);
    if (!common || !kernel)
        return NULL;
    char *text = malloc(common->size + kernel->size + 2);
    if (!text)
        return NULL;
    memcpy(text, common->text, common->size);
    text[common->size] = '\n';
    memcpy(text + common->size + 1, kernel->text, kernel->size);
    text[common->size + 1 + kernel->size] = '\0';
    return text;
}

/* The name an embedded source is included by: a public header by its path under
 * include/ ("foxhunt/env_types.h", as the C compiler finds it), every other source by
 * its base name ("ppo_device_functions.cuh"), as NVRTC has no directories. */
static const char *nvrtc_header_name(const char *path)
{
    size_t n = strlen(PUBLIC_INCLUDE_DIR);
    if (strncmp(path, PUBLIC_INCLUDE_DIR, n) == 0)
        return path + n;
    const char *base = strrchr(path, '/');
    return base ? base + 1 : path;
}

int fh_nvrtc_version(void)
{
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return 0;
    return major * 1000 + minor * 10;
}

fh_status fh_nvrtc_compile(const char *kernel_file, const char *arch,
                           const char *const *options, int n_options,
                           fh_nvrtc_output *out, fh_error *err)
{
    memset(out, 0, sizeof *out);
    nvrtcProgram prog = NULL;
    const char **all_options = NULL;
    char arch_option[64];
    char *text = fh_nvrtc_program_text(kernel_file);
    if (!text)
        return fh_error_set(err, FH_ERR_FAILURE,
                            "%s:%d: kernel source '%s' is not embedded in this binary",
                            __FILE__, __LINE__, kernel_file);
    /* every embedded source as a named header (nvrtc_header_name), so a kernel file can
     * include another (fast_kernels.cu includes its concern files and
     * ppo_device_functions.cuh) and the shared headers find "foxhunt/shapes.h" and
     * "foxhunt/env_types.h" */
    const char *header_text[FH_NVRTC_MAX_HEADERS];
    const char *header_name[FH_NVRTC_MAX_HEADERS];
    int n_headers = 0;
    for (const fh_embedded_source *s = fh_embedded_sources; s->path; s++) {
        const char *name = nvrtc_header_name(s->path);
        for (int i = 0; i < n_headers; i++) {
            if (strcmp(header_name[i], name) == 0) {
                free(text);
                return fh_error_set(err, FH_ERR_FAILURE,
                                    "%s:%d: two embedded sources are both NVRTC header '%s' "
                                    "(base names of sources outside include/ must differ)",
                                    __FILE__, __LINE__, name);
            }
        }
        if (n_headers == FH_NVRTC_MAX_HEADERS) {
            free(text);
            return fh_error_set(err, FH_ERR_FAILURE,
                                "%s:%d: more than FH_NVRTC_MAX_HEADERS (%d) embedded sources",
                                __FILE__, __LINE__, FH_NVRTC_MAX_HEADERS);
        }
        header_text[n_headers] = s->text;
        header_name[n_headers++] = name;
    }
    NVRTC_CHECK(nvrtcCreateProgram(&prog, text, kernel_file, n_headers, header_text,
                                   header_name), err);

    all_options = calloc((size_t)n_options + 2, sizeof *all_options);
    if (!all_options) {
        fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto fail;
    }
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", arch);
    all_options[0] = arch_option;
    all_options[1] = "--std=c++17";
    for (int i = 0; i < n_options; i++)
        all_options[i + 2] = options[i];

    nvrtcResult compiled = nvrtcCompileProgram(prog, n_options + 2, all_options);
    size_t log_size = 0;
    NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &log_size), err);
    out->log = malloc(log_size + 1);
    if (!out->log) {
        fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
        goto fail;
    }
    NVRTC_CHECK(nvrtcGetProgramLog(prog, out->log), err);
    out->log[log_size] = '\0';
    if (compiled != NVRTC_SUCCESS) {
        fh_error_set(err, FH_ERR_FAILURE,
                     "%s:%d: NVRTC could not compile %s for %s: %s\n--- program log ---\n%s",
                     __FILE__, __LINE__, kernel_file, arch, nvrtcGetErrorString(compiled),
                     out->log);
        goto fail;
    }

    out->is_cubin = strncmp(arch, "sm_", 3) == 0;
    if (out->is_cubin) {
        NVRTC_CHECK(nvrtcGetCUBINSize(prog, &out->size), err);
        out->image = malloc(out->size + 1);
        if (!out->image)
            goto oom;
        NVRTC_CHECK(nvrtcGetCUBIN(prog, out->image), err);
    } else {
        NVRTC_CHECK(nvrtcGetPTXSize(prog, &out->size), err);
        out->image = malloc(out->size + 1);
        if (!out->image)
            goto oom;
        NVRTC_CHECK(nvrtcGetPTX(prog, out->image), err);
    }
    out->image[out->size] = '\0';
    nvrtcDestroyProgram(&prog);
    free(all_options);
    free(text);
    return FH_OK;

oom:
    fh_error_set(err, FH_ERR_FAILURE, "%s:%d: out of memory", __FILE__, __LINE__);
fail:
    if (prog)
        nvrtcDestroyProgram(&prog);
    free(all_options);
    free(text);
    fh_nvrtc_output_free(out);
    return err ? err->status : FH_ERR_FAILURE;
}

void fh_nvrtc_output_free(fh_nvrtc_output *out)
{
    free(out->image);
    free(out->log);
    memset(out, 0, sizeof *out);
}
