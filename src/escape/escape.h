/*
 * escape.h — strings from untrusted input (dump files anybody on a cluster
 * can write, file names) made safe for each kind of output, by one rule:
 *
 *   every string is read as UTF-8 (utf8.h); a byte that starts no valid
 *   sequence is a bad byte. A control character is C0 (U+0000..U+001F),
 *   DEL (U+007F), C1 (U+0080..U+009F), the line and paragraph separators
 *   (U+2028, U+2029) and the bidirectional controls (U+202A..U+202E,
 *   U+2066..U+2069), which reorder what a terminal or a browser shows.
 *
 *   JSON   (pt_json_str) RFC 8259 text, always valid UTF-8: a bad byte
 *          becomes U+FFFD; '"', '\' and every control character escaped
 *          (\n \r \t \" \\, else \u00XX / \u20XX).
 *   text   (pt_text_str, pt_text_esc) for a terminal: no control byte at
 *          all; a control character shows visibly as \n \r \t or \x1b
 *          (C0, DEL) or \u0085 (C1 and the others), a bad byte as \xff,
 *          and '\' as \\ so that what is shown reads back unambiguously.
 *   HTML   (pt_html_str) text content or a quoted attribute value: '<', '>',
 *          '&', '"' and '\'' as entities; a bad byte becomes U+FFFD; a
 *          control character shows as in text.
 *
 * Built into each library that writes such output, with hidden visibility,
 * so none exports it.
 */
#ifndef PT_ESCAPE_ESCAPE_H
#define PT_ESCAPE_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* `s` as a JSON string, or null for NULL. */
void pt_json_str(FILE* f, const char* s);
/* `s` as terminal text (no quotes added); nothing for NULL. */
void pt_text_str(FILE* f, const char* s);
/* `s` as terminal text into out[n], cut at a whole character (then ending
 * in "..."), NUL-terminated; returns `out`, for a printf argument. */
const char* pt_text_esc(char* out, size_t n, const char* s);
/* `s` as HTML text; nothing for NULL. */
void pt_html_str(FILE* f, const char* s);

/* The room pt_text_esc needs for a string of `len` bytes (4 out per byte
 * at most, "\x1b"), and a printf argument that uses such a buffer on the
 * caller's stack: printf("%s", PT_TEXT(s, 256)) for strings of up to 256
 * bytes; a longer one is cut. */
#define PT_TEXT_ROOM(len) ((len) * 4 + 4)
#define PT_TEXT(s, len) pt_text_esc((char[PT_TEXT_ROOM(len)]){0}, PT_TEXT_ROOM(len), (s))

#endif
