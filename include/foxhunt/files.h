/* files.h — opening, reading, replacing and appending to files so that a FIFO or a
 * device in a file's place never blocks a run or takes its data, and a crash never
 * leaves half a file or half a row (issue 32). Used by every layer that touches files:
 * it lives at the bottom (src/common), beside error.h. */
#ifndef FOXHUNT_FILES_H
#define FOXHUNT_FILES_H

#include <stddef.h>
#include <stdio.h> /* FILE */
#include <sys/types.h> /* off_t */

#include "foxhunt/error.h"

/* ---- reading an input file whole (the CSV loader, the INI reader, safetensors) ----
 * Reads PATH into a malloc'd buffer with a NUL after the last byte (*len bytes, not
 * counting it). Anything but a regular file is refused before a byte is read, so that
 * a FIFO never blocks: stat first, then open with O_NONBLOCK and fstat the open file
 * (the name may have been replaced in between). Files above max_bytes (0: no limit)
 * are refused too. Errors (FH_ERR_INPUT) are "PATH: what is wrong; what to do"; what
 * names the file's role ("data file", "checkpoint", "config file"). */
fh_status fh_read_regular_file(const char *path, const char *what, size_t max_bytes,
                               char **buf, size_t *len, fh_error *err);
/* Opens PATH with open(2) flags (O_RDONLY; O_WRONLY or O_RDWR with O_CREAT, O_TRUNC,
 * O_APPEND; mode 0666 less the umask) only when it is a regular file, so that a FIFO
 * or a device in its place never blocks or takes the data (issue 32): refused by stat
 * before the open, then opened with O_NONBLOCK, checked with fstat (the name may have
 * been replaced in between) and O_NONBLOCK cleared. Returns the fd (O_CLOEXEC), or -1
 * with err set (FH_ERR_INPUT "PATH: is a FIFO (named pipe), not a regular file; ...",
 * what naming the file's role) and errno the open's (ENOENT: no such file) or EINVAL
 * for a file that is not regular. */
int fh_open_regular(const char *path, const char *what, int flags, fh_error *err);
/* fh_open_regular as a stdio stream ("r", "a", "r+" or "w" after the flags). */
FILE *fh_fopen_regular(const char *path, const char *what, int flags, fh_error *err);
/* The end of writing PATH through its temporary TMP, open as f: when ok (the writes
 * succeeded), flushes and closes f (durable: fsyncs it first) and renames TMP over PATH
 * (durable: then fsyncs the directory); otherwise, or when any of that fails, closes f
 * and removes TMP, leaving PATH as it was. Returns 0, or the errno of the first failure
 * (of the writes when !ok: errno then, else EIO). */
int fh_replace_with_tmp(FILE *f, int ok, int durable, const char *tmp, const char *path);
/* fsyncs the directory that holds PATH (after a rename into it), so the rename survives a
 * crash; a file system that cannot fsync a directory (EINVAL) counts as done. */
fh_status fh_fsync_dir_of(const char *path, fh_error *err);

/* ---- appending a row whole ---- */
/* Appends text to fd (opened O_APPEND) in one write(2), so that a reader sees it whole
 * or not at all; a failed or short write (a full disk, a file size limit) is cut back to
 * the file's earlier length and returns an error naming path, the reason and what to do
 * (fh_write_error_hint). */
fh_status fh_append_whole(int fd, const char *path, const char *text, fh_error *err);
/* fh_append_whole, with *before the file's length before the write (a caller that
 * writes a pair of rows cuts the first back when the second fails). */
fh_status fh_append_whole_at(int fd, const char *path, const char *text, off_t *before,
                             fh_error *err);

#endif
