/*
 * format.h — the legacy ProxyTrace text (spec/rccl-proxytrace.md §3.2, §3.7,
 * §3.8): key string, extra-info string, record line, dump header. Kept apart
 * from the dump's snapshot/sort logic so other outputs can share it.
 */
#ifndef PT_TRACE_FORMAT_H
#define PT_TRACE_FORMAT_H

#include <stddef.h>

#include "trace/clock.h"
#include "trace/numfmt.h"
#include "trace/record.h"

#define PT_KEY_MAX 72   /* "<" 20 ":" 20 ":" 20 ">" + NUL */
#define PT_LINE_MAX 768 /* a record line is at most ~630 bytes (every field at its widest) */

/* The legacy status of a record, from its counters (§3.6). */
pt_status pt_rec_status(const pt_rec_view* v);
/* "<commHash:opCount:proxyOpId>" */
int pt_format_key(char* buf, size_t n, const pt_rec_view* v);
/* One record line, without the trailing newline; key NULL: v's key. */
int pt_format_record(char* buf, size_t n, const pt_rec_view* v, const char* key, int my_rank,
                     const pt_clock_cal* cal);

/* For a dump's loop: the digits successive lines share (numfmt.h), zeroed
 * before the first line. */
typedef struct {
  pt_num_memo hash, t[5];
  pt_size_memo size[3]; /* nBytes, totalBytes, chunkSize */
} pt_line_memo;
/* The key written at q, which has PT_KEY_MAX bytes of room (numfmt.h: bytes
 * past the returned end may be overwritten); returns its end. */
char* pt_put_key(char* q, const pt_rec_view* v, pt_line_memo* memo);
/* The record line (as pt_format_record) at q, which has PT_LINE_MAX bytes
 * of room; returns its end. */
char* pt_put_record(char* q, const pt_rec_view* v, const char* key, int my_rank, const pt_clock_cal* cal,
                    pt_line_memo* memo);
/* "commDump for all active ops mapSizeMB:%.2f" */
int pt_format_header(char* buf, size_t n, double map_size_mb);

#endif
