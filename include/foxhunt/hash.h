/* hash.h — FNV-1a 64, the one non-cryptographic hash foxhunt uses to fingerprint bytes
 * (a trainer's weights across ranks, the rendezvous file's contents). */
#ifndef FOXHUNT_HASH_H
#define FOXHUNT_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FH_FNV1A_OFFSET 0xcbf29ce484222325ULL

/* h folded over the n bytes at p (start with FH_FNV1A_OFFSET). */
uint64_t fh_fnv1a(const void *p, size_t n, uint64_t h);

#endif
