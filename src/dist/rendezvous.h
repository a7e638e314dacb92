/* rendezvous.h — how the ranks of a data-parallel run find each other (issue 22): a
 * file that every rank can read (one host: /tmp; many hosts: a shared filesystem)
 * carries NCCL's unique id from rank 0 to the others. No NCCL here: the id is opaque
 * bytes, so this is unit-tested on any machine (tests/dist/test_rendezvous.c).
 *
 *   PATH           the id: written by rank 0 to a temporary file and linked into place
 *                  (atomic, and never over an existing file: a stale PATH from an earlier
 *                  run is refused, not reused); read by the others, who poll until it
 *                  appears or the timeout passes, and refuse a file whose size, magic,
 *                  version, world size or checksum is wrong
 *   PATH.rank<r>   rank r's arrival, holding the run's nonce (a hash of the id, so an
 *                  arrival left by another run never counts): every rank waits until all
 *                  have arrived before creating the communicator, so a missing rank is a
 *                  timeout naming it, not a hang inside NCCL
 *   PATH.abort     a failure's message: written by a failing rank or by `train --gpus`'s
 *                  launcher; every rank's watchdog (dist.c) polls it and aborts NCCL
 *
 * Rank 0 removes PATH and the arrivals once the communicator exists (fh_rendezvous_
 * remove), so the path can be given again to the next run. Byte order is the host's:
 * the ranks of one run share an architecture. */
#ifndef FOXHUNT_DIST_RENDEZVOUS_H
#define FOXHUNT_DIST_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "foxhunt/error.h"

#define FH_RDV_ID_MAX 256    /* bytes of id a file may carry (NCCL's is 128) */
#define FH_RDV_PATH_CHARS 1024 /* a rendezvous path's length at most, NUL included */
#define FH_RDV_POLL_SECONDS 0.05

/* The bytes of the id file for `id` (n bytes) and world (tests build bad ones from it):
 * magic "FHNCCLID", version, world, n, the id, an FNV-1a checksum of all before it.
 * Returns the size, or 0 when out is too small or n > FH_RDV_ID_MAX. */
size_t fh_rendezvous_encode(unsigned char *out, size_t out_size, int world, const void *id,
                            size_t n);
/* Checks a file's bytes and copies its id (exactly n bytes expected); FH_ERR_INPUT
 * naming `path` and what is wrong. A file is accepted only as exactly what
 * fh_rendezvous_encode writes for its world and id (the reserved field 0). */
fh_status fh_rendezvous_decode(const unsigned char *buf, size_t size, int world, void *id,
                               size_t n, const char *path, fh_error *err);

/* Rank 0: removes a stale PATH.abort and arrivals, then writes the id (refused, naming
 * the file, when PATH exists already). */
fh_status fh_rendezvous_publish(const char *path, int world, const void *id, size_t n,
                                fh_error *err);
/* The other ranks: polls until PATH appears (FH_ERR_FAILURE after timeout_s, saying
 * which file and for how long), then decodes it; a PATH.abort meanwhile (rank 0 failed)
 * fails at once with its message. */
fh_status fh_rendezvous_wait(const char *path, int world, void *id, size_t n,
                             double timeout_s, fh_error *err);
/* The run's nonce: FNV-1a 64 of the id. */
uint64_t fh_rendezvous_nonce(const void *id, size_t n);
/* Writes PATH.rank<rank> (atomically) holding nonce. */
fh_status fh_rendezvous_arrive(const char *path, int rank, uint64_t nonce, fh_error *err);
/* Polls until every rank 0..world-1 has arrived with nonce; on timeout_s FH_ERR_FAILURE
 * naming the ranks missing; a PATH.abort seen meanwhile fails at once with its message. */
fh_status fh_rendezvous_barrier(const char *path, int world, uint64_t nonce,
                                double timeout_s, fh_error *err);
/* Removes PATH and PATH.rank<0..world-1> (rank 0, once the communicator exists). */
void fh_rendezvous_remove(const char *path, int world);
/* PATH.abort: written (atomically; an existing one, the first failure, is kept) / read
 * (1 and the message when present, else 0). */
fh_status fh_rendezvous_abort_write(const char *path, const char *message, fh_error *err);
int fh_rendezvous_abort_read(const char *path, char *message, size_t size);

#endif
