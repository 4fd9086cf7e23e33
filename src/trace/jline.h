/*
 * jline.h — one JSON line built in a caller's buffer: printf-style pieces
 * and escaped strings, shared by the dump's JSON (json.c) and the metrics'
 * (metrics_out.c). A line longer than the buffer is cut, never overrun.
 */
#ifndef PT_TRACE_JLINE_H
#define PT_TRACE_JLINE_H

#include <stddef.h>

#include "proxytrace/trace.h"

typedef struct {
  char* b;
  size_t cap, len;
} pt_jline;

void pt_jput(pt_jline* j, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string, or null for NULL: at most `max` bytes of `s` are read;
 * bytes that are not UTF-8 become U+FFFD. */
void pt_jput_str(pt_jline* j, const char* s, size_t max);
/* Hands the line to `emit` and empties it; returns 1 (a line). */
int pt_jline_emit(pt_jline* j, pt_line_fn emit, void* arg);

#endif
