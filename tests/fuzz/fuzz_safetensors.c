/* fuzz_safetensors.c — libFuzzer harness: an arbitrary file given to the safetensors
 * reader (every checkpoint and `foxhunt collect` file goes through it; issue 19).
 *
 * The input is written to a scratch file and read with fh_st_read. Beyond "no crash, no
 * leak, no undefined behaviour" it checks what safetensors.h promises:
 *  - a rejected file: FH_ERR_INPUT (FH_ERR_FAILURE only for memory), a message naming
 *    the file, and an empty fh_st_file;
 *  - an accepted file: every tensor's bytes lie inside the buffer, equal its shape's
 *    element count times the dtype size, and the spans, sorted, tile the buffer exactly;
 *    fh_st_find finds each name, fh_st_expect accepts each tensor's own dtype and shape;
 *  - a round trip: what was read, written back with the writer (when the writer accepts
 *    the names) and read again, has the same tensors, bytes and metadata. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "foxhunt/safetensors.h"
#include "fuzz_util.h"

static int cmp_begin(const void *a, const void *b)
{
    const fh_st_tensor *x = *(const fh_st_tensor *const *)a;
    const fh_st_tensor *y = *(const fh_st_tensor *const *)b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : (x->nbytes > y->nbytes);
}

static void check_layout(const fh_st_file *f)
{
    FUZZ_REQUIRE(f->buffer >= f->file && f->buffer + f->buffer_len == f->file + f->file_len,
                 "buffer [%p, +%zu) is not the end of the file", (const void *)f->buffer,
                 f->buffer_len);
    const fh_st_tensor **order = malloc((f->n_tensors + 1) * sizeof *order);
    FUZZ_REQUIRE(order != NULL, "out of memory");
    for (size_t i = 0; i < f->n_tensors; i++) {
        const fh_st_tensor *t = &f->tensors[i];
        FUZZ_REQUIRE(t->name != NULL, "tensor %zu has no name", i);
        FUZZ_REQUIRE((int)t->dtype >= 0 && t->dtype < FH_DTYPE_COUNT, "dtype %d", (int)t->dtype);
        FUZZ_REQUIRE(t->rank >= 0 && t->rank <= FH_ST_MAX_RANK, "rank %d", t->rank);
        size_t elems = 1;
        for (int d = 0; d < t->rank; d++) {
            FUZZ_REQUIRE(t->shape[d] >= 0, "negative dimension");
            elems *= (size_t)t->shape[d];
        }
        FUZZ_REQUIRE(t->nbytes == elems * fh_dtype_size(t->dtype),
                     "tensor %s: %zu bytes for %zu elements of %s", t->name, t->nbytes, elems,
                     fh_dtype_name(t->dtype));
        FUZZ_REQUIRE(t->begin <= f->buffer_len && t->nbytes <= f->buffer_len - t->begin,
                     "tensor %s: [%zu, +%zu) outside the %zu-byte buffer", t->name, t->begin,
                     t->nbytes, f->buffer_len);
        FUZZ_REQUIRE((const unsigned char *)t->data == f->buffer + t->begin,
                     "tensor %s: data does not point at its span", t->name);
        const fh_st_tensor *found = fh_st_find(f, t->name);
        FUZZ_REQUIRE(found != NULL, "fh_st_find does not find %s", t->name);
        const fh_st_tensor *same = NULL;
        fh_error err;
        FUZZ_REQUIRE(fh_st_expect(&same, f, t->name, found->dtype, found->rank, found->shape,
                                  &err) == FH_OK,
                     "fh_st_expect refuses %s's own dtype and shape: %s", t->name, err.message);
        order[i] = t;
    }
    qsort(order, f->n_tensors, sizeof *order, cmp_begin);
    size_t at = 0;
    for (size_t i = 0; i < f->n_tensors; i++) {
        FUZZ_REQUIRE(order[i]->begin == at, "tensor %s begins at %zu, expected %zu (gap or "
                     "overlap)", order[i]->name, order[i]->begin, at);
        at += order[i]->nbytes;
    }
    FUZZ_REQUIRE(at == f->buffer_len, "tensors cover %zu of the %zu-byte buffer", at,
                 f->buffer_len);
    free(order);
    for (size_t i = 0; i < f->n_meta; i++) {
        FUZZ_REQUIRE(f->meta_keys[i] && f->meta_values[i], "metadata %zu is NULL", i);
        FUZZ_REQUIRE(fh_st_metadata(f, f->meta_keys[i]) != NULL, "metadata %s not found",
                     f->meta_keys[i]);
    }
}

/* Writes f back and reads it again; the two must agree. */
static void round_trip(const fh_st_file *f)
{
    fh_st_writer w;
    fh_error err;
    fh_st_writer_init(&w);
    int writable = 1;
    for (size_t i = 0; writable && i < f->n_tensors; i++) {
        const fh_st_tensor *t = &f->tensors[i];
        writable = fh_st_writer_add(&w, t->name, t->dtype, t->rank, t->shape, t->data, &err) ==
                   FH_OK;
    }
    for (size_t i = 0; writable && i < f->n_meta; i++) /* a repeated key: the writer keeps
                                                          the last value, the reader the first */
        for (size_t j = 0; writable && j < i; j++)
            writable = strcmp(f->meta_keys[i], f->meta_keys[j]) != 0;
    for (size_t i = 0; writable && i < f->n_meta; i++)
        writable = fh_st_writer_set_metadata(&w, f->meta_keys[i], f->meta_values[i], &err) ==
                   FH_OK;
    if (!writable) { /* names the writer refuses or repeated keys: nothing to compare */
        fh_st_writer_free(&w);
        return;
    }
    const char *path = fuzz_scratch_path("st-again", ".safetensors");
    FUZZ_REQUIRE(fh_st_writer_write(&w, path, &err) == FH_OK, "writing back failed: %s",
                 err.message);
    fh_st_writer_free(&w);
    fh_st_file g;
    FUZZ_REQUIRE(fh_st_read(&g, path, &err) == FH_OK, "what the writer wrote does not read "
                 "back: %s", err.message);
    FUZZ_REQUIRE(g.n_tensors == f->n_tensors, "%zu tensors read back, %zu written",
                 g.n_tensors, f->n_tensors);
    for (size_t i = 0; i < f->n_tensors; i++) {
        const fh_st_tensor *a = &f->tensors[i];
        const fh_st_tensor *b = fh_st_find(&g, a->name);
        FUZZ_REQUIRE(b != NULL, "tensor %s lost in the round trip", a->name);
        FUZZ_REQUIRE(b->dtype == a->dtype && b->rank == a->rank && b->nbytes == a->nbytes &&
                         memcmp(b->shape, a->shape, (size_t)a->rank * sizeof a->shape[0]) == 0,
                     "tensor %s changed its dtype or shape in the round trip", a->name);
        FUZZ_REQUIRE(a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0,
                     "tensor %s changed its bytes in the round trip", a->name);
    }
    for (size_t i = 0; i < f->n_meta; i++) {
        const char *v = fh_st_metadata(&g, f->meta_keys[i]);
        const char *want = fh_st_metadata(f, f->meta_keys[i]);
        FUZZ_REQUIRE(v && strcmp(v, want) == 0, "metadata %s changed in the round trip",
                     f->meta_keys[i]);
    }
    fh_st_file_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_scratch("st", ".safetensors", data, size);
    fh_st_file f;
    fh_error err;
    fh_error_clear(&err);
    fh_status st = fh_st_read(&f, path, &err);
    if (st != FH_OK) {
        FUZZ_REQUIRE(st == FH_ERR_INPUT || st == FH_ERR_FAILURE, "status %d", (int)st);
        FUZZ_REQUIRE(strstr(err.message, path) != NULL, "the message does not name the file: %s",
                     err.message);
        FUZZ_REQUIRE(f.n_tensors == 0 && f.file == NULL && f.tensors == NULL,
                     "a rejected file left a half-filled fh_st_file");
        fh_st_file_free(&f);
        return 0;
    }
    check_layout(&f);
    round_trip(&f);
    fh_st_file_free(&f);
    return 0;
}
