/* tfevents.h — TensorBoard event files (issue 36): what `tensorboard --logdir runs`
 * reads, written without TensorFlow. A file is a sequence of TFRecords (length as
 * uint64 LE, masked CRC32C of those 8 bytes, the data, masked CRC32C of the data), each
 * holding one Event protobuf (tensorflow/core/util/event.proto): wall_time, step, and a
 * file_version, a Summary of one value (a float scalar, or a string tensor for the
 * text plugin) or a SessionLog START (a restart: TensorBoard drops the events at or after
 * its step that an earlier file holds).
 *
 * No well-kept C library does this encoding (protobuf-c would need TensorBoard's .proto
 * vendored and compiled), so the few fields are encoded by hand here. Records collect in
 * a buffer and reach the file at fh_tfevents_flush, in one write per flush: once per
 * training iteration. A failed write is not an error of the run (metrics.csv is the
 * record): the writer stops, cuts the file back to its last whole record and keeps a
 * warning saying why. */
#ifndef FOXHUNT_TFEVENTS_H
#define FOXHUNT_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "foxhunt/error.h"

#define FH_TFEVENTS_PATH_MAX 1400

typedef struct {
    int open;                   /* 1 while fd is the event file (a zeroed writer is closed) */
    int fd;
    char path[FH_TFEVENTS_PATH_MAX];
    uint8_t *buf;               /* framed records not yet written (buf_len bytes) */
    size_t buf_len, buf_cap;
    off_t written;              /* the file's size after the last whole flush */
    int failed;                 /* a write failed: nothing more is written */
    char warning[FH_TFEVENTS_PATH_MAX + 512]; /* why, once failed */
} fh_tfevents;

/* CRC32C (Castagnoli, reflected 0x82F63B78) of n bytes, continuing from crc (0 to
 * start); "123456789" gives 0xE3069283. */
uint32_t fh_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord's masked CRC: rotate the CRC32C right by 15, add 0xa282ead8. */
uint32_t fh_crc32c_masked(const void *data, size_t n);

/* Creates dir/events.out.tfevents.<unix time>.<host>.foxhunt (a new file, never one
 * that exists; the host name kept to [A-Za-z0-9._-]) and buffers its first record
 * (file_version "brain.Event:2"). On failure w stays closed and err says why. */
fh_status fh_tfevents_open(fh_tfevents *w, const char *dir, double wall_time, fh_error *err);
/* Appends one Event to the buffer (nothing on a closed or failed writer). tag: UTF-8,
 * e.g. "charts/mean_episode_return". */
void fh_tfevents_scalar(fh_tfevents *w, double wall_time, int64_t step, const char *tag,
                        float value);
/* A text summary (TensorBoard's text plugin renders it as Markdown). */
void fh_tfevents_text(fh_tfevents *w, double wall_time, int64_t step, const char *tag,
                      const char *text);
/* A SessionLog START at step: TensorBoard's reader drops the events of steps >= step
 * that it read before (a resumed run's later history). */
void fh_tfevents_session_start(fh_tfevents *w, double wall_time, int64_t step);
/* Writes the buffered records (dropped on a closed writer). Returns 0, or -1 when the
 * write failed: the file is cut back to its last whole record, w->warning says why and
 * the writer writes nothing more. */
int fh_tfevents_flush(fh_tfevents *w);
/* Flushes and closes (safe on a zeroed or closed writer); the warning stays readable. */
void fh_tfevents_close(fh_tfevents *w);

#endif
