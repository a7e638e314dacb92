/* embedded_sources.h — kernel sources compiled into the binary at build time
 * (cmake/embed_sources.cmake) so that NVRTC compiles exactly what was built, with no
 * files to find at run time. */
#ifndef FOXHUNT_EMBEDDED_SOURCES_H
#define FOXHUNT_EMBEDDED_SOURCES_H

#include <stddef.h>

typedef struct {
    const char *path; /* relative to the source root, e.g. "src/env/common_device_functions.cuh" */
    const char *text; /* NUL-terminated contents */
    size_t size;      /* bytes, without the NUL */
} fh_embedded_source;

/* Terminated by an entry with path == NULL. */
extern const fh_embedded_source fh_embedded_sources[];

/* The entry whose path ends with name, whole path components only
 * ("ppo_experience_kernel.cu", "foxhunt/shapes.h"), or NULL. */
const fh_embedded_source *fh_embedded_source_find(const char *name);

#endif
