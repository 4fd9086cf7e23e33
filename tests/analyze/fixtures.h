/*
 * fixtures.h — what the analyzer's tests share: scratch directories, files
 * written from strings, and an analysis run over files or text.
 */
#ifndef PT_TESTS_ANALYZE_FIXTURES_H
#define PT_TESTS_ANALYZE_FIXTURES_H

#include <stddef.h>

#include "proxytrace/analyze.h"

/* A fresh directory under $TMPDIR; at_rmdir() removes it and all it holds. */
char* at_mkdtemp(void);
void at_rmdir(char* dir);
/* Writes `text` to dir/name; returns the path (static buffer, 8 in turn). */
const char* at_write(const char* dir, const char* name, const char* text);
/* An analysis of one text (as a buffer named `name`), run. */
pt_analysis* at_analyze_text(const char* name, const char* text);
/* An analysis of a path (file or directory), run. */
pt_analysis* at_analyze_path(const char* path);
/* The first culprit, or NULL. */
const pt_culprit* at_culprit(const pt_analysis* a);
/* The JSON document of an analysis, or NULL. */
char* at_json(const pt_analysis* a);

#endif
