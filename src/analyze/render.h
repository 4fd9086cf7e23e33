/*
 * render.h — the renderers: the verdict and its evidence said as a text
 * report (report_text.c), one JSON document (report_json.c), an HTML page
 * (report_html.c), a Chrome trace (chrome.c), the records read
 * (records.c), a summary for a later analysis (summary.c), the comparison
 * with a ground truth (compare.c); none decides anything. output.c writes
 * their files.
 */
#ifndef PT_ANALYZE_RENDER_H
#define PT_ANALYZE_RENDER_H

#include "analyze/verdict.h"

/* output.c: writes a report file with `write` (temporary file, then
 * rename); PT_AN_EINPUT when `path` is one of the inputs. */
int an_write_output(const pt_analysis* a, const char* path, int (*write)(const pt_analysis*, FILE*));

#endif
