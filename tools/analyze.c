/*
 * analyze.c — `proxytrace analyze PATH…`: every rank's dumps in, the
 * verdict and the culprit out (human text, JSON, a Perfetto timeline).
 *
 * The work is the analyzer library's (include/proxytrace/analyze.h); this
 * file reads the options, runs it, and maps the verdict to the exit status:
 * 0 nothing wrong, 1 a hang or a slow link, 2 unusable input, a bad
 * option, an output that cannot be written or no memory, 3 (with
 * --expect) the analysis differs from the ground truth, 4 incomplete
 * input (nothing found in what was read, but not the whole job). Out of memory anywhere, the report is not printed at all:
 * one line says so, and the exit status is 2.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "heap_tune.h"
#include "escape/escape.h"
#include "proxytrace/analyze.h"

static void usage(FILE* f) {
  fprintf(f,
          "usage: proxytrace analyze [options] PATH...\n"
          "\n"
          "Reads every rank's proxy dumps, pairs each send with its receive, and names\n"
          "the culprit of a hung or slow job: the rank, channel, peer and cause where\n"
          "the waiting starts, then the evidence.\n"
          "\n"
          "PATH is a dump file (JSON lines or legacy text), a log holding dump lines\n"
          "behind the host's prefix, or a directory of them, read recursively (8 levels\n"
          "deep at most; links followed, loops and files reached twice read once;\n"
          "hidden entries skipped; -v lists what was skipped and why).\n"
          "\n"
          "  --json              print the JSON document (schema %d, docs/analyze.md)\n"
          "  --records           print the records read instead, one JSON object per line:\n"
          "                      every op of the latest dump of each communicator and rank\n"
          "  --all-dumps         with --records: the ops of every dump, not only the latest\n"
          "  --chrome FILE       also write a Chrome-trace / Perfetto timeline to FILE,\n"
          "                      before the report (never over an input; written to a\n"
          "                      temporary file, then renamed; a link's target, a FIFO\n"
          "                      or a device written into as a shell redirect would)\n"
          "  --html FILE         also write one self-contained HTML page to FILE (verdict,\n"
          "                      chain of waits to each culprit, the culprit's node,\n"
          "                      every node's waits, step-time heatmap, stuck edges; no\n"
          "                      script, nothing loaded from the network), the same way\n"
          "  --summary FILE      write a summary of PATH's evidence to FILE instead of a\n"
          "                      report (each rank's latest dumps, the inputs' problems,\n"
          "                      the step metrics; never over an input): one per node,\n"
          "                      and `proxytrace analyze` of the summaries gives the\n"
          "                      verdict of all the dumps (docs/analyze.md, \"Past one\n"
          "                      machine\")\n"
          "  -v, --verbose       the evidence, every input and every problem found\n"
          "  --slow-factor F     an edge F times slower than its operation's median is\n"
          "                      slow (default 3; 1.5..1000)\n"
          "  --stall-ms MS       an active op of an on-demand or periodic dump that moved\n"
          "                      within MS before the dump is still moving (default: the\n"
          "                      dump's stallMs, else 1000)\n"
          "  --threads N         read a directory's files on N threads (default 0: one per\n"
          "                      processor; 1: in this thread); the report is the same\n"
          "  --expect FILE       compare with a ground truth (proxytrace sim --truth-json)\n"
          "                      and say whether the analysis agrees\n"
          "  --follow DIR        watch a running job's step metrics files in DIR: re-read\n"
          "                      them as the plugin rewrites them and print a line when an\n"
          "                      edge or a culprit becomes slow and when it recovers, with\n"
          "                      the time it was first seen, and when an edge becomes\n"
          "                      slower than its own history (changed; docs/analyze.md,\n"
          "                      \"Following\")\n"
          "  --interval MS       --follow: read every MS milliseconds (default 1000;\n"
          "                      100..3600000)\n"
          "  --window S          --follow: judge the steps of the last S seconds (default\n"
          "                      30; 1..86400)\n"
          "  --for S             --follow: stop after S seconds (default: at SIGINT)\n"
          "  -h, --help          this help\n"
          "  --                  the arguments after it are paths, even if they start with '-'\n"
          "\n"
          "Exit status: 0 nothing is stuck or slow, and the dumps show the whole job;\n"
          "1 a hang or a slow link was found (on the ranks whose dumps are there: the\n"
          "report lists what it could not see, and marks culprits that touch it as\n"
          "possible); 2 no input held a dump, an option is bad, an output cannot be\n"
          "written or memory ran out; 3 --expect: the analysis differs from the ground\n"
          "truth; 4 incomplete: nothing stuck or slow in what was read, but the input\n"
          "cannot show the whole job (a dump cut or short of records, ranks without a\n"
          "dump, a dump older than its peers' by more than the stall time, an\n"
          "unreadable input), each listed. With --records: 0 the records are printed\n"
          "(problems with the inputs on stderr), 2 an option is bad or memory ran out.\n"
          "With --summary: 0 the summary is written, 2 it is not (a bad option, an\n"
          "output that cannot be written or is an input, memory).\n"
          "With --follow: 0 nothing slow when it stops, 1 an edge slow (or changed)\n"
          "then, 2 DIR cannot be read, a bad option or no memory.\n",
          PT_ANALYZE_SCHEMA);
}

static char* read_small_file(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char* buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (n + 1 == cap) {
      char* nb = cap < (1u << 24) ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

/* --records: what could not be read goes to stderr, the records to stdout. */
static void report_input_problems(const pt_analysis* a) {
  pt_analysis_stats st;
  pt_analysis_get_stats(a, &st);
  for (size_t i = 0; i < pt_analysis_input_count(a); i++) {
    pt_analysis_input_info in;
    if (pt_analysis_input(a, i, &in) != 0) continue;
    if (in.error) fprintf(stderr, "proxytrace analyze: %s: %s\n", PT_TEXT(in.path, 1024), PT_TEXT(in.error, 512));
    else if (in.n_errors)
      fprintf(stderr, "proxytrace analyze: %s: %d malformed or cut line(s) skipped (-v without --records lists them)\n",
              PT_TEXT(in.path, 1024), in.n_errors);
  }
  if (!st.dumps) fprintf(stderr, "proxytrace analyze: no input held a dump\n");
}

static int out_of_memory(void) {
  fprintf(stderr, "proxytrace analyze: out of memory\n");
  return 2;
}

/* A number of --follow's within lo..hi, or -1. */
static double follow_number(const char* opt, const char* v, double lo, double hi) {
  char* end;
  errno = 0;
  const double x = strtod(v, &end);
  if (errno || end == v || *end || !(x >= lo && x <= hi)) {
    fprintf(stderr, "proxytrace analyze: bad value '%s' for %s: a number %.10g..%.10g\n", v, opt, lo, hi);
    return -1;
  }
  return x;
}

int pt_cmd_analyze(int argc, char** argv) {
  int json = 0, verbose = 0, records = 0, all_dumps = 0;
  const char* follow = NULL;
  double interval = 1000, window = 30, for_s = 0;
  const char* chrome = NULL;
  const char* html = NULL;
  const char* expect = NULL;
  const char* summary = NULL;
  pt_analysis* a;
  pt_heap_tune_for_analysis();
  if (pt_analysis_new(&a) != 0) return out_of_memory();
  int npaths = 0, rc = 0;
  char** paths = calloc((size_t)argc + 1, sizeof *paths);
  if (!paths) {
    pt_analysis_free(a);
    return out_of_memory();
  }
  int opts = 1; /* until "--": what follows are paths, whatever they look like */
  for (int i = 1; i < argc && rc == 0; i++) {
    const char* s = argv[i];
    if (!opts || (s[0] != '-' || !s[1])) {
      paths[npaths++] = argv[i];
    } else if (!strcmp(s, "--")) {
      opts = 0;
    } else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
      usage(stdout);
      rc = -1;
    } else if (!strcmp(s, "--json")) {
      json = 1;
    } else if (!strcmp(s, "--records")) {
      records = 1;
    } else if (!strcmp(s, "--all-dumps")) {
      all_dumps = 1;
    } else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) {
      verbose = 1;
    } else if (!strcmp(s, "--chrome") || !strcmp(s, "--html") || !strcmp(s, "--expect") || !strcmp(s, "--slow-factor") ||
               !strcmp(s, "--stall-ms") || !strcmp(s, "--threads") || !strcmp(s, "--summary") || !strcmp(s, "--follow") ||
               !strcmp(s, "--interval") || !strcmp(s, "--window") || !strcmp(s, "--for")) {
      if (i + 1 >= argc || !argv[i + 1][0]) {
        fprintf(stderr, "proxytrace analyze: %s needs a value\n", s);
        rc = 2;
        break;
      }
      const char* v = argv[++i];
      if (!strcmp(s, "--chrome")) chrome = v;
      else if (!strcmp(s, "--html")) html = v;
      else if (!strcmp(s, "--expect")) expect = v;
      else if (!strcmp(s, "--summary")) summary = v;
      else if (!strcmp(s, "--follow")) follow = v;
      else if (!strcmp(s, "--interval")) rc = (interval = follow_number(s, v, 100, 3600000)) < 0 ? 2 : 0;
      else if (!strcmp(s, "--window")) rc = (window = follow_number(s, v, 1, 86400)) < 0 ? 2 : 0;
      else if (!strcmp(s, "--for")) rc = (for_s = follow_number(s, v, 0.1, 31536000)) < 0 ? 2 : 0;
      else if (pt_analysis_set_option(a, s + 2, v) != 0) {
        fprintf(stderr, "proxytrace analyze: bad value '%s' for %s: %s\n", v, s,
                !strcmp(s, "--slow-factor") ? "a number 1.5..1000"
                : !strcmp(s, "--threads")   ? "a whole number 0..64"
                                            : "a whole number of milliseconds 0..86400000");
        rc = 2;
      }
    } else {
      fprintf(stderr, "proxytrace analyze: unknown option '%s' (see proxytrace analyze --help)\n", s);
      rc = 2;
    }
  }
  if (rc == 0 && records && (json || verbose || expect)) {
    fprintf(stderr, "proxytrace analyze: --records prints the records only: not with --json, -v or --expect\n");
    rc = 2;
  }
  if (rc == 0 && summary && (json || verbose || records || expect || chrome || html)) {
    fprintf(stderr, "proxytrace analyze: --summary writes the summary only: not with --json, --records, -v, --expect,"
                    " --chrome or --html\n");
    rc = 2;
  }
  if (rc == 0 && all_dumps && !records) {
    fprintf(stderr, "proxytrace analyze: --all-dumps goes with --records\n");
    rc = 2;
  }
  if (rc == 0 && follow && (npaths || json || records || verbose || expect || chrome || html)) {
    fprintf(stderr, "proxytrace analyze: --follow DIR watches DIR alone: no other PATH, --json, --records, -v, "
                    "--expect, --chrome or --html with it\n");
    rc = 2;
  }
  if (rc == 0 && !follow && (interval != 1000 || window != 30 || for_s != 0)) {
    fprintf(stderr, "proxytrace analyze: --interval, --window and --for go with --follow\n");
    rc = 2;
  }
  if (rc == 0 && follow) {
    free(paths);
    pt_analysis_free(a);
    return pt_follow(follow, (long)interval, window, for_s);
  }
  if (rc == 0 && all_dumps && pt_analysis_set_option(a, "all-dumps", "1") != 0) rc = out_of_memory();
  /* the page names the timeline this run writes */
  if (rc == 0 && chrome && html && pt_analysis_set_timeline_file(a, chrome) != 0) {
    fprintf(stderr, "proxytrace analyze: --chrome %s: the path is too long\n", chrome);
    rc = 2;
  }
  if (rc == 0 && npaths == 0) {
    fprintf(stderr, "proxytrace analyze: no PATH given (see proxytrace analyze --help)\n");
    rc = 2;
  }
  char* truth = NULL;
  if (rc == 0 && expect && !(truth = read_small_file(expect))) {
    fprintf(stderr, "proxytrace analyze: cannot read --expect %s: %s\n", expect, strerror(errno));
    rc = 2;
  }
  if (rc != 0) {
    free(paths);
    pt_analysis_free(a);
    return rc < 0 ? 0 : rc;
  }
  /* Adding and running fail only for memory (the arguments are good). */
  for (int i = 0; i < npaths && rc == 0; i++)
    if (pt_analysis_add_path(a, paths[i]) != 0) rc = 2;
  if (rc == 0 && summary) {
    int c = pt_analysis_write_summary_path(a, summary);
    if (c == PT_AN_ENOMEM) {
      rc = out_of_memory();
    } else if (c == PT_AN_EINPUT) {
      fprintf(stderr, "proxytrace analyze: --summary %s is one of the inputs: not overwritten; name another file\n",
              summary);
      rc = 2;
    } else if (c != 0) {
      fprintf(stderr, "proxytrace analyze: cannot write --summary %s: %s\n", summary, strerror(errno));
      rc = 2;
    } else {
      pt_analysis_stats st;
      pt_analysis_get_stats(a, &st);
      printf("proxytrace analyze: summary written to %s (of %llu dumps, %llu records)\n", PT_TEXT(summary, 1024),
             (unsigned long long)st.dumps, (unsigned long long)st.records);
    }
    free(paths);
    pt_analysis_free(a);
    return rc;
  }
  if (rc == 0 && pt_analysis_run(a) != 0) rc = 2;
  /* The output file first: one that cannot be written (or is one of the
   * inputs) fails the command before any report is printed. */
  const struct {
    const char* opt;
    const char* path;
    int (*write)(const pt_analysis*, const char*);
  } outputs[] = {{"--chrome", chrome, pt_analysis_write_chrome_path}, {"--html", html, pt_analysis_write_html_path}};
  for (size_t k = 0; k < sizeof outputs / sizeof outputs[0] && rc == 0; k++) {
    if (!outputs[k].path) continue;
    int c = outputs[k].write(a, outputs[k].path);
    if (c == PT_AN_ENOMEM) {
      rc = 2;
    } else if (c == PT_AN_EINPUT) {
      fprintf(stderr, "proxytrace analyze: %s %s is one of the inputs: not overwritten (the dumps are the evidence);"
                      " name another file\n", outputs[k].opt, outputs[k].path);
      rc = 2;
      goto done;
    } else if (c != 0) {
      fprintf(stderr, "proxytrace analyze: cannot write %s %s: %s\n", outputs[k].opt, outputs[k].path, strerror(errno));
      rc = 2;
      goto done;
    }
  }
  int w = 0;
  if (rc == 0)
    w = records ? pt_analysis_write_records(a, stdout)
        : json  ? pt_analysis_write_json(a, stdout)
                : pt_analysis_write_text(a, stdout, verbose);
  if (rc != 0 || w == PT_AN_ENOMEM) {
    rc = out_of_memory();
  } else {
    pt_verdict v = pt_analysis_verdict(a);
    if (w != 0) {
      fprintf(stderr, "proxytrace analyze: cannot write the report: %s\n", strerror(errno));
      rc = 2;
    }
    if (records) {
      report_input_problems(a);
      v = PT_VERDICT_OK; /* the verdict is not this mode's answer */
    }
    if (rc == 0)
      rc = v == PT_VERDICT_OK ? 0 : v == PT_VERDICT_UNUSABLE ? 2 : v == PT_VERDICT_INCOMPLETE ? 4 : 1;
    if (truth) {
      char why[512] = "out of memory";
      int m = pt_analysis_compare_truth(a, truth, why, sizeof why);
      if (m == PT_AN_ENOMEM) snprintf(why, sizeof why, "out of memory");
      fprintf(json ? stderr : stdout, "%sground truth (%s): %s\n", json ? "proxytrace analyze: " : "\n", expect,
              PT_TEXT(why, sizeof why));
      if (m < 0) rc = 2;
      else if (m == PT_TRUTH_DIFFERS) rc = 3;
    }
  }
done:
  free(truth);
  free(paths);
  pt_analysis_free(a);
  return rc;
}
