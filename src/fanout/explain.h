/*
 * explain.h — `proxytrace probe --fanout` (explain.c).
 */
#ifndef PT_FANOUT_EXPLAIN_H
#define PT_FANOUT_EXPLAIN_H

#include <stdio.h>

#include "proxytrace/loader.h"

/* Prints, for each PROXYTRACE_FANOUT_PLUGINS entry, the file it resolves to
 * under `host`, the API version the fan-out would speak to it, or why it
 * would be refused (nothing printed when f is NULL). PT_OK when at least one child would be forwarded to,
 * PT_ENOTFOUND when none, PT_EINVAL for a value too long. */
int pt_fanout_explain(pt_host host, FILE* f);

#endif
