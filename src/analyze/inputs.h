/*
 * inputs.h — the inputs stage: files, folders, streams and buffers read as
 * lines, each line to the reader of its format, each finished dump handed
 * to the evidence (evidence.h).
 *
 *   lines.c         inputs read as streams of lines (files, directories,
 *                   streams, buffers); a directory's files parsed on
 *                   several threads, merged in the order of a serial reading
 *   parse.c         one input's lines, each to the reader of its format
 *   jsonl.c         the dump JSON lines (docs/dump-json.md) into dumps
 *   legacy.c        legacy ProxyTrace text, bare or behind a host log prefix
 *   summary_read.c  a summary's own lines (jsonl.c hands them over)
 *   stream.c        the parser's open streams; a finished dump to the merge
 */
#ifndef PT_ANALYZE_INPUTS_H
#define PT_ANALYZE_INPUTS_H

#include "analyze/evidence.h"

/* lines.c */
int an_read_stream(pt_analysis* a, uint32_t input, FILE* f);
int an_read_buffer(pt_analysis* a, uint32_t input, const char* data, size_t len);

/* The parser's state, shared by jsonl.c and legacy.c. */
#define AN_MAX_OPEN 64
typedef struct {
  an_dump* d;
  uint64_t key; /* stream key: JSON dumpSeq, text prefix (host, pid, dev) */
  int pending_trigger; /* text: a "ncclCommDump()"-like line came first */
  int contract_header; /* text: a "proxytrace dump seq=" line opened it */
  int announced;       /* text: that line said how many lines follow (lines=) */
  int64_t lines_left;  /* text: of those, the lines not read yet */
} an_open;

struct an_parser {
  pt_analysis* a;
  uint32_t input;
  an_open open[AN_MAX_OPEN];
  int n_open;
  an_open* last;       /* text: the stream a line without a prefix continues */
  int saw_json, saw_text;
  int unterminated;    /* the line being read is the input's last and has no
                          line end: the input may be cut inside it */
  int warned_schema, warned_headless;
  /* a line with neither a dump's text nor a host log prefix came before
   * any dump line of this input was read (prose: a document, a script's
   * output): the input's dump-like lines since are not a dump
   * (an_parser_among_text); how many of them */
  int after_text, accepted;
  uint32_t refused;
  int metrics_header; /* a whole metrics header line was read (jsonl.c) */
  int summary;         /* the input is a summary (summary_read.c) */
  an_jobj json;        /* scratch for one JSON line */
};

/* parse.c: feed one input's lines to the parser. */
typedef struct an_parser an_parser;
an_parser* an_parser_new(pt_analysis* a, uint32_t input);
void an_parser_line(an_parser* p, char* line, size_t len, uint32_t lineno);
void an_parser_finish(an_parser* p); /* commits open dumps, frees */

/* stream.c */
/* Ends a dump: splits it by (communicator, rank) and hands each part to
 * the merge, which keeps or frees it. */
void an_dump_commit(an_parser* p, an_dump* d);
an_open* an_parser_find(an_parser* p, uint64_t key);
an_open* an_parser_open(an_parser* p, uint64_t key, an_dump* d);
/* Commits the stream's dump (if any); the stream stays open. */
void an_parser_commit(an_parser* p, an_open* o);
/* Commits and forgets the stream; `o` is invalid after. */
void an_parser_close(an_parser* p, an_open* o);
int an_parser_among_text(an_parser* p, int prefixed, uint32_t lineno);

/* jsonl.c / legacy.c: one line each. */
void an_jsonl_line(an_parser* p, const char* line, size_t len, uint32_t lineno);
void an_legacy_line(an_parser* p, const char* line, size_t len, uint32_t lineno);
/* Parses one legacy record (from "createT:" on). 0, or -1 with a message. */
int an_legacy_record(const char* s, size_t len, an_op* op, char* why, size_t why_len);

/* summary_read.c: reading a summary's lines (jsonl.c hands them over). */
void an_summary_line(an_parser* p, const an_jobj* o);
void an_summary_input(an_parser* p, const an_jobj* o);
void an_summary_dump(an_parser* p, const an_jobj* o, an_dump* d);
int an_summary_source(an_parser* p, const char* path);

#endif
