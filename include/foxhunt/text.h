/* text.h — checks on text read from files: UTF-8 validity and NUL characters in JSON
 * strings (the safetensors header, the run's config, the rendezvous file). */
#ifndef FOXHUNT_TEXT_H
#define FOXHUNT_TEXT_H

#include <stddef.h>

/* 1 when s[0..n) is valid UTF-8 (no overlong forms, surrogates or values above
 * U+10FFFF); else 0 with *bad_offset the offset of the first byte that is not. */
int fh_utf8_valid(const char *s, size_t n, size_t *bad_offset);
/* 1 when a string of the JSON text s[0..n) holds a NUL character, written \u0000 or
 * as a raw 0 byte, with *offset where; else 0. A parser hands such a string on as a C
 * string that ends at the NUL: a tensor name "a\u0000b" would be read as "a", a path
 * cut short, so readers refuse the text instead (issue 32). Bytes outside strings are
 * the parser's to judge. */
int fh_json_string_has_nul(const char *s, size_t n, size_t *offset);

#endif
