/*
 * sim_helpers.h — what the emulator's tests share: a small job, the test
 * plugins' paths, capture of each rank's logger lines, and a parser for
 * legacy dump lines (spec rccl-proxytrace.md §3.7).
 */
#ifndef PT_TESTS_SIM_HELPERS_H
#define PT_TESTS_SIM_HELPERS_H

#include <stddef.h>

#include "sim.h"

/* Path of a file built into the tests' folder (libcount.so, …). */
const char* st_path(const char* file);

/* A small, quick job: 2 nodes x 2 ranks, 2 channels, allreduce 4M and
 * sendrecv 1M, 2 iterations, no jitter, no irecv retries, output captured. */
void st_config(pt_sim_config* c, pt_host host, const char* plugin);

/* Logger lines per rank (index nranks: lines without a rank). */
typedef struct {
  int nranks;
  char** lines[65];
  int n[65];
  int cap[65];
} st_capture;

void st_capture_init(st_capture* cap, pt_sim_config* c, int nranks);
void st_capture_free(st_capture* cap);
/* Lines of rank r that contain `needle`. */
int st_capture_count(const st_capture* cap, int r, const char* needle);

/* One record line of a dump. */
typedef struct {
  long long createT, lastT, postT, sendT;
  int cntNm;
  unsigned long long commHash;
  long long opCount, opId;
  int fu, pr, pa;
  unsigned tb, ck;
  int myRank, peer;
  char dir;
  int chan;
  char status[16];
  int ns;
  unsigned nb;
  long long po, ke, tailh, recvT, connSz, trans, flushed, recvd, done;
} st_line;

/* 0 when `line` (a whole logger line) holds a record. */
int st_parse_line(const char* line, st_line* out);

#endif
