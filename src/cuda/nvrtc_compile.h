/* nvrtc_compile.h — compiles an embedded kernel with NVRTC (SPEC §8).
 *
 * The program text is the common header followed by the kernel source, concatenated
 * (the design note's layout); "foxhunt/shapes.h" is handed to NVRTC as a named header.
 * Used at run time for the device present, and by the CI test that compiles every
 * kernel to PTX on a machine with no GPU. Available only when FH_HAVE_CUDA. */
#ifndef FOXHUNT_NVRTC_COMPILE_H
#define FOXHUNT_NVRTC_COMPILE_H

#include <stddef.h>

#include "foxhunt/error.h"

typedef struct {
    char *image;      /* PTX text (NUL-terminated) or CUBIN bytes */
    size_t size;      /* bytes of image */
    char *log;        /* NVRTC program log (may be empty), NUL-terminated */
    int is_cubin;     /* 1 when image is CUBIN (arch "sm_XX"), 0 for PTX ("compute_XX") */
} fh_nvrtc_output;

/* Compiles the embedded kernel `kernel_file` (e.g. "ppo_experience_kernel.cu") for
 * `arch` ("compute_90" gives PTX, "sm_90" gives CUBIN) with extra NVRTC options
 * (e.g. "-DFH_N_EPISODES=128"). On failure the error message holds the program log. */
fh_status fh_nvrtc_compile(const char *kernel_file, const char *arch,
                           const char *const *options, int n_options,
                           fh_nvrtc_output *out, fh_error *err);
void fh_nvrtc_output_free(fh_nvrtc_output *out);

/* The full program text (common header + kernel), malloc'd; NULL if not embedded. */
char *fh_nvrtc_program_text(const char *kernel_file);

/* NVRTC's version as major*1000 + minor*10, or 0. */
int fh_nvrtc_version(void);

#endif
