/*
 * children.h — the fan-out's children as both the fan-out (fanout.c) and
 * `proxytrace probe --fanout` (tools/probe.c) see them: one parser for
 * PROXYTRACE_FANOUT_PLUGINS, one request per child for the loader, and one
 * rule for refusing a child that is a fan-out itself.
 */
#ifndef PT_FANOUT_CHILDREN_H
#define PT_FANOUT_CHILDREN_H

#include "proxytrace/loader.h"

#define FO_MAX_CHILDREN 8
#define FO_ENTRY_MAX 256  /* one entry, with its terminating NUL */
#define FO_LIST_MAX 4096  /* the whole value, with its NUL */
#define FO_NAME "proxytrace-fanout"
/* A data symbol only the fan-out exports: a child that exports it is a
 * fan-out (seen in the file by the probe, with dlsym by the fan-out). */
#define FO_MARKER "proxytraceFanout"

typedef struct {
  char entry[FO_MAX_CHILDREN][FO_ENTRY_MAX];
  int n;
  int too_long;      /* the value is FO_LIST_MAX bytes or more: nothing taken */
  int entry_too_long; /* entries cut (not taken) because they are too long */
  const char* ignored; /* the first entry past FO_MAX_CHILDREN, or NULL */
  char rest[FO_ENTRY_MAX];
} fo_list;

/* Splits `value` at commas; blanks around an entry and empty entries are
 * dropped. NULL or "" gives no entries. */
void fo_list_parse(const char* value, fo_list* out);

/* The loader request for one child: the entry as the NCCL_PROFILER_PLUGIN
 * value, nothing from the environment (the host's own NCCL_PROFILER_PLUGIN
 * names the fan-out; no auto-load, no net-plugin fallback). */
void fo_child_request(pt_request* req, const char* entry);

#endif
