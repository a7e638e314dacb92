/* report_assets.h — the files the tear sheet embeds in its page, compiled into the
 * binary at build time (src/report/CMakeLists.txt, cmake/embed_sources.cmake): its
 * script and style (src/report/tear_sheet.js, tear_sheet.css) and, when Debian's
 * libjs-dygraphs was installed at configure time, dygraph.min.js, dygraph.min.css and the
 * package's copyright file. Entries are named by file name. */
#ifndef FOXHUNT_REPORT_ASSETS_H
#define FOXHUNT_REPORT_ASSETS_H

#include "cuda/embedded_sources.h" /* fh_embedded_source */

/* Terminated by an entry with path == NULL. */
extern const fh_embedded_source fh_report_assets[];

#endif
