/*
 * write.h — JSON text for the libraries that write JSON (the loader's
 * report, the analyzer's documents): one escaping routine for all of them.
 */
#ifndef PT_JSON_WRITE_H
#define PT_JSON_WRITE_H

#include <stdio.h>

/* `s` as a JSON string (RFC 8259: quotes, backslash and control characters
 * escaped; bytes above 0x7F as they are, the text being UTF-8), or null. */
void pt_json_str(FILE* f, const char* s);

#endif
