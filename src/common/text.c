/* text.c — checks on text read from files (include/foxhunt/text.h). */
#include "foxhunt/text.h"

#include <string.h>

int fh_utf8_valid(const char *s, size_t n, size_t *bad_offset)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t k;         /* continuation bytes */
        unsigned lo = 0x80, hi = 0xBF; /* range of the first continuation byte */
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0; /* overlong */
            else if (c == 0xED)
                hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90; /* overlong */
            else if (c == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            if (bad_offset)
                *bad_offset = i;
            return 0;
        }
        for (size_t j = 1; j <= k; j++) {
            unsigned d = i + j < n ? p[i + j] : 0;
            unsigned dlo = j == 1 ? lo : 0x80, dhi = j == 1 ? hi : 0xBF;
            if (d < dlo || d > dhi) {
                if (bad_offset)
                    *bad_offset = i;
                return 0;
            }
        }
        i += k + 1;
    }
    return 1;
}

int fh_json_string_has_nul(const char *s, size_t n, size_t *offset)
{
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in_string) {
            in_string = s[i] == '"';
            continue;
        }
        if (s[i] == '"') {
            in_string = 0;
        } else if (s[i] == '\0' ||
                   (s[i] == '\\' && i + 5 < n && memcmp(s + i + 1, "u0000", 5) == 0)) {
            if (offset)
                *offset = i;
            return 1;
        } else if (s[i] == '\\') {
            i++; /* the escaped character: \\u0000 is a backslash and "u0000" */
        }
    }
    return 0;
}
