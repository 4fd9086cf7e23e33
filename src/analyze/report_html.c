/*
 * report_html.c — the analysis as one self-contained HTML page (`analyze
 * --html FILE`): inline CSS and SVG only, no script, no font, no image, no
 * link to load, and a Content-Security-Policy that forbids all of them, so
 * the page opens from a laptop, a shared folder or an e-mail the same way.
 *
 *   verdict      the text report's headline, coloured by verdict, then the
 *                culprits
 *   wait graph   of the communicator that holds the most stuck ops: the
 *                chain of waits to each culprit (a row of boxes, straight
 *                arrows between them), the culprit's node up close (its
 *                ranks and their stuck ops, no arrow), and the rest as
 *                counts and a strip of one cell per node; bounded at any
 *                scale (below, "the wait graph").
 *   heatmap      with step metrics files among the inputs: sender × receiver
 *                of each edge's p50 step time over the median of comparable
 *                edges; the slow edges outlined. Past HEAT_RANKS ranks, node
 *                × node (the largest ratio of the pairs), the nodes grouped
 *                as the wait graph groups them.
 *   table        the stuck edges (the origins first), at most TABLE_ROWS
 *   text         the whole text report, folded
 *   Perfetto     how to open the timeline of `--chrome`
 *
 * Every string taken from a dump or a file name goes through pt_html_str
 * (src/escape/); data-* attributes carry the ranks and causes for tools
 * that read the page.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/render.h"
#include "escape/escape.h"

#define HEAT_RANKS 64   /* more ranks: node × node */
#define HEAT_NODES 256  /* more nodes: no heatmap */
#define TABLE_ROWS 200

/* One colour per an_wait (the legend names them). */
static const char* const wait_color[AN_W_COUNT] = {
    "#888888", /* none */
    "#d62728", /* gpu */
    "#ff7f0e", /* credit */
    "#1f77b4", /* network */
    "#17becf", /* data */
    "#9467bd", /* consume */
    "#8c564b", /* not posting */
    "#7f7f7f", /* peer missing */
    "#bcbd22", /* peer behind */
    "#e377c2", /* peer no op */
    "#c7c7c7", /* peer cut */
};

static const char* const wait_words[AN_W_COUNT] = {
    "-",
    "its GPU to produce data",
    "the receiver to post a buffer",
    "the network",
    "the sender's data",
    "its GPU to consume data",
    "its proxy to post receives",
    "a peer that wrote no dump",
    "a peer whose records stop before",
    "a peer with no matching op",
    "a peer whose dump is cut",
};

/* The page's scratch memory, counted like the analysis's and freed at once. */
typedef struct {
  an_mem mem;
  void* p[64];
  int n;
} scratch;

static void* grab(scratch* m, size_t n) {
  if (m->n == (int)(sizeof m->p / sizeof m->p[0])) return NULL;
  void* p = an_alloc(&m->mem, n ? n : 1);
  if (p) m->p[m->n++] = p;
  return p;
}

static void scratch_free(scratch* m) {
  while (m->n) an_free(&m->mem, m->p[--m->n]);
}

static const char* verdict_word(pt_verdict v) {
  return v == PT_VERDICT_HANG ? "HANG" : v == PT_VERDICT_SLOW ? "SLOW" : v == PT_VERDICT_OK ? "OK"
         : v == PT_VERDICT_INCOMPLETE ? "INCOMPLETE" : "NO DUMP";
}

static void css(FILE* f) {
  fputs("<style>\n"
        "body{font:14px/1.4 sans-serif;margin:1.5em;color:#222;max-width:1400px}\n"
        "h1{font-size:1.3em;margin:.2em 0}h2{font-size:1.1em;margin-top:1.6em;border-bottom:1px solid #ccc}\n"
        "h3{font-size:1em;margin:1em 0 .2em}h3+p{margin-top:.2em}\n"
        ".verdict{padding:.6em 1em;border-radius:6px;font-weight:bold;font-size:1.1em}\n"
        ".v-hang{background:#fde0e0;border:2px solid #d62728}.v-slow{background:#fff1d6;border:2px solid #ff7f0e}\n"
        ".v-ok{background:#e2f5e2;border:2px solid #2ca02c}.v-incomplete{background:#eee;border:2px solid #888}\n"
        ".v-unusable{background:#eee;border:2px dashed #888}\n"
        ".culprit{margin:.5em 0;padding:.4em .8em;border-left:5px solid #d62728;background:#fafafa}\n"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}\n"
        "th{background:#f2f2f2}tr.origin td{font-weight:bold;background:#fff3f3}\n"
        ".legend span{display:inline-block;margin-right:1em}.sw{display:inline-block;width:1.4em;height:.6em;"
        "margin-right:.3em;vertical-align:middle}\n"
        "svg{max-width:100%;height:auto}svg text{font:10px sans-serif}pre{background:#f7f7f7;padding:.8em;overflow:auto;font-size:12px}\n"
        "code{background:#f2f2f2;padding:0 .2em}\n"
        "</style>\n",
        f);
}

/* The text report, whole, in memory: its headline leads the page. */
static char* text_report(const pt_analysis* a, size_t* len) {
  char* buf = NULL;
  FILE* m = open_memstream(&buf, len);
  if (!m) return NULL;
  int rc = pt_analysis_write_text(a, m, 0);
  if (fclose(m) != 0 || rc != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* The communicator the graph shows: the one with the most stuck ops. */
static const an_comm* graph_comm(const pt_analysis* a) {
  const an_comm* best = a->n_comms ? &a->comms[0] : NULL;
  size_t most = 0;
  for (size_t ci = 0; ci < a->n_comms; ci++) {
    const an_comm* c = &a->comms[ci];
    size_t n = 0;
    for (size_t i = c->first_item; i < c->first_item + c->n_items && i < a->n_items; i++) n += a->items[i].stuck;
    if (n > most) {
      most = n;
      best = c;
    }
  }
  return best;
}

static const char* host_name(const pt_analysis* a, int node) {
  return node >= 0 && (size_t)node < a->hosts.n ? a->hosts.names[node] : NULL;
}

/* ---- the wait graph ------------------------------------------------------
 *
 * At any scale a person needs three things from it, in this order: the
 * chain of waits that ends at each culprit, the culprit's node with its
 * ranks and their stuck ops, and how the rest of the job waits. Each is
 * drawn so that no arrow can cross a label: the chain is a row of boxes
 * with straight arrows in the gaps between them (long chains elided in the
 * middle), the node is a row of ranks with their ops written under them
 * (no arrow at all), and the rest is a strip of one cell per node coloured
 * by what its stuck ops wait for, with counts in words. Every size is
 * bounded: the page of 16 384 ranks is as large as that of 64, but for the
 * strip (at most STRIP_CELLS cells). */

/* The graph's communicator grouped by node: each rank's node as the
 * analysis has it (its host, or the node it numbered the rank on), one
 * group per node; a rank whose node is unknown is a group of its own. The
 * heatmap groups its ranks with the same routine. */
typedef struct {
  int nr, ng;
  int* group; /* rank -> group */
  int* host;  /* group -> host id, -1 */
  int* first; /* group -> its first rank */
  int* count; /* group -> its ranks */
} groups;

static int node_groups(const pt_analysis* a, const an_comm* c, int nr, scratch* m, groups* g) {
  g->nr = nr;
  g->ng = 0;
  g->group = grab(m, (size_t)nr * sizeof *g->group);
  g->host = grab(m, (size_t)nr * sizeof *g->host);
  g->first = grab(m, (size_t)nr * sizeof *g->first);
  g->count = grab(m, (size_t)nr * sizeof *g->count);
  int* of_host = grab(m, (a->hosts.n + 1) * sizeof *of_host);
  if (!g->group || !g->host || !g->first || !g->count || !of_host) return PT_AN_ENOMEM;
  for (size_t h = 0; h < a->hosts.n; h++) of_host[h] = -1;
  for (int r = 0; r < nr; r++) {
    const int node = c && r < c->nranks ? c->ranks[r].node : -1;
    const int known = node >= 0 && (size_t)node < a->hosts.n;
    int k = known ? of_host[node] : -1;
    if (k < 0) {
      k = g->ng++;
      g->host[k] = known ? node : -1;
      g->first[k] = r;
      if (known) of_host[node] = k;
    }
    g->count[k]++;
    g->group[r] = k;
  }
  return 0;
}

#define CHAINS 4       /* culprits drawn with their chain and node */
#define CHAIN_NEAR 5   /* a long chain's boxes nearest its origin (the origin included) */
#define BOX_W 140      /* a box of the chain, a column of the node */
#define BOX_GAP 20
#define LINE_CHARS 19  /* characters of a line in a box (10px, DejaVu's widest digits: 120px) */
#define CLOSE_RANKS 64 /* ranks of a culprit's node drawn */
#define CLOSE_PER_ROW 8
#define CLOSE_OPS 4    /* stuck ops listed under a rank */
#define STRIP_CELLS 2048 /* 16 384 ranks of 8 a node: one cell each */

/* `s` as SVG text of at most `max` characters (bytes, never cutting a
 * UTF-8 sequence), "…" where cut: a label stays inside its box. */
static void text_cut(FILE* f, const char* s, size_t max) {
  char buf[128];
  size_t n = strlen(s);
  if (max >= sizeof buf) max = sizeof buf - 1;
  if (n <= max) {
    pt_html_str(f, s);
    return;
  }
  n = max - 1;
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
  memcpy(buf, s, n);
  buf[n] = 0;
  pt_html_str(f, buf);
  fputs("…", f);
}

/* One line of a box: text at (x, y), formatted and cut to LINE_CHARS. */
static void box_line(FILE* f, double x, double y, const char* style, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void box_line(FILE* f, double x, double y, const char* style, const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\"%s>", x, y, style);
  text_cut(f, buf, LINE_CHARS);
  fputs("</text>", f);
}

static const char* host_or(const pt_analysis* a, int host, const char* none) {
  const char* h = host_name(a, host);
  return h && h[0] ? h : none;
}

/* Each stuck item's hops along `next` to culprit k's origin `target` (any
 * of its origins when -1): 0 for the origin, -1 for an item that does not
 * lead there (not stuck, another culprit's, another origin). A cycle's
 * walk ends where it meets itself. */
static void chain_depths(const pt_analysis* a, size_t lo, size_t hi, int k, int32_t target, int32_t* d,
                         int32_t* stack) {
  for (size_t i = lo; i < hi; i++) d[i - lo] = -1;
  for (size_t i = lo; i < hi; i++) {
    if (!a->items[i].stuck || a->items[i].culprit != k || d[i - lo] != -1) continue;
    size_t n = 0;
    int32_t base = -3; /* -3: the walk does not reach the target */
    for (int32_t j = (int32_t)i;;) {
      if (j < (int32_t)lo || (size_t)j >= hi || !a->items[j].stuck || d[j - lo] == -3) break;
      if (d[j - lo] >= 0) {
        base = d[j - lo];
        break;
      }
      if (d[j - lo] == -2) break; /* a cycle */
      if (a->items[j].origin || a->items[j].next < 0) {
        if (target < 0 || j == target) d[j - lo] = base = 0;
        else d[j - lo] = -3;
        break;
      }
      d[j - lo] = -2;
      stack[n++] = j;
      j = a->items[j].next;
    }
    while (n) d[stack[--n] - lo] = base == -3 ? -3 : ++base;
  }
}

/* A box of the chain: one stuck op. */
static void chain_box(FILE* f, const pt_analysis* a, const an_comm* c, const an_item* it, double x, double y,
                      double h) {
  const an_op* op = it->op;
  const int w = it->wait >= 0 && it->wait < AN_W_COUNT ? it->wait : 0;
  const int node = op->rank >= 0 && op->rank < c->nranks ? c->ranks[op->rank].node : -1;
  fprintf(f, "<g class=\"hop%s\" data-rank=\"%d\" data-channel=\"%d\" data-op-count=\"%" PRId64 "\" data-wait=\"%s\">"
             "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" rx=\"4\" fill=\"%s\" stroke=\"%s\" "
             "stroke-width=\"%s\"/>",
          it->origin ? " origin" : "", op->rank, op->channel, op->op_count, an_wait_name((an_wait)w), x, y, BOX_W, h,
          it->origin ? "#fff3f3" : "#f4f6fa", it->origin ? "#d62728" : "#99a", it->origin ? "2.5" : "1");
  const double tx = x + 6;
  box_line(f, tx, y + 14, " font-weight=\"bold\"", "rank %d", op->rank);
  box_line(f, tx, y + 26, "", "%s", host_or(a, node, "node ?"));
  box_line(f, tx, y + 38, "", "%s %d ch %d", op->is_send ? "send →" : "recv ←", op->peer, op->channel);
  box_line(f, tx, y + 50, "", "step %" PRId64 "/%" PRId64, an_op_progress(op), op->n_steps);
  if (it->origin) box_line(f, tx, y + 62, " fill=\"#d62728\" font-weight=\"bold\"", "origin: %s", an_wait_name((an_wait)w));
  else box_line(f, tx, y + 62, "", "waits: %s", an_wait_name((an_wait)w));
  fprintf(f, "<title>rank %d %s %d, channel %d, opCount %" PRId64 ": waits for %s%s</title></g>\n", op->rank,
          op->is_send ? "send to" : "recv from", op->peer, op->channel, op->op_count, wait_words[w],
          it->origin ? " (origin)" : "");
}

/* A straight arrow across the gap before the box at x2: `from` waits on `to`. */
static void chain_arrow(FILE* f, const an_item* from, const an_item* to, double x2, double y) {
  const an_op* op = from->op;
  const int w = from->wait >= 0 && from->wait < AN_W_COUNT ? from->wait : 0;
  fprintf(f, "<path class=\"edge chain%s\" data-from=\"%d\" data-to=\"%d\" data-channel=\"%d\" data-op-count=\"%" PRId64
             "\" data-cause=\"%s\" d=\"M%.1f,%.1fH%.1f\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" "
             "marker-end=\"url(#m%d)\"><title>rank %d waits on rank %d: %s</title></path>\n",
          to->origin ? " origin" : "", op->rank, to->op->rank, op->channel, op->op_count, an_wait_name((an_wait)w),
          x2 - BOX_GAP + 3, y, x2 - 3, wait_color[w], to->origin ? "3.5" : "2.5", w, op->rank, to->op->rank,
          wait_words[w]);
}

/* Culprit k's chain: the longest run of waits that ends at its origin (the
 * op its line names: of several origins grouped in one culprit), as
 * a row of boxes read left to right (the furthest waiter first, the origin
 * last); past CHAIN_NEAR + 2 ops its middle is one box that counts the
 * ops and nodes left out. 0, or PT_AN_ENOMEM. */
static int wait_chain(FILE* f, const pt_analysis* a, const an_comm* c, const groups* g, size_t lo, size_t hi, int k,
                      int32_t* d, int32_t* stack, unsigned char* seen_group) {
  const int32_t target = a->culprits[k].origin;
  int32_t deepest = -1;
  for (int any = 0; any < 2 && deepest < 0; any++) { /* its named origin, else any of its origins */
    chain_depths(a, lo, hi, k, !any && target >= (int32_t)lo && (size_t)target < hi ? target : -1, d, stack);
    for (size_t i = lo; i < hi; i++)
      if (d[i - lo] >= 0 && (deepest < 0 || d[i - lo] > d[deepest - lo])) deepest = (int32_t)i;
  }
  if (deepest < 0) return 0;
  const int len = d[deepest - lo] + 1;
  int32_t* chain = stack; /* the walk is over: its stack holds the chain */
  int n = 0;
  for (int32_t j = deepest; j >= 0 && n < len; j = a->items[j].next) {
    chain[n++] = j;
    if (a->items[j].origin || (size_t)a->items[j].next < lo || (size_t)a->items[j].next >= hi) break;
  }
  const int elide = n > CHAIN_NEAR + 2; /* the furthest waiter, "…", then the nearest */
  const int boxes = elide ? CHAIN_NEAR + 2 : n;
  const double H = 70, Y = 4, W = boxes * BOX_W + (boxes - 1) * BOX_GAP + 8;
  fprintf(f, "<h3>Chain to culprit %d</h3>\n<p>%d stuck op%s in a row, read left to right: each waits on the next;"
             " the last is where the waiting starts.</p>\n",
          k + 1, n, n == 1 ? "" : "s");
  fprintf(f, "<svg %sclass=\"wait-chain\" data-culprit=\"%d\" data-ops=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" "
             "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
          k == 0 ? "id=\"wait-chain\" " : "", k + 1, n, W, H + 2 * Y, W, H + 2 * Y);
  double x = 4;
  for (int b = 0; b < boxes; b++) {
    if (elide && b == 1) {
      /* the ops left out: chain[1 .. n - CHAIN_NEAR - 1] */
      const int from = 1, to = n - CHAIN_NEAR;
      int nodes = 0;
      for (int q = from; q < to; q++) {
        const int r = a->items[chain[q]].op->rank;
        const int gr = r >= 0 && r < g->nr ? g->group[r] : -1;
        if (gr >= 0 && !seen_group[gr]) {
          seen_group[gr] = 1;
          nodes++;
        }
      }
      for (int q = from; q < to; q++) {
        const int r = a->items[chain[q]].op->rank;
        if (r >= 0 && r < g->nr) seen_group[g->group[r]] = 0;
      }
      chain_arrow(f, &a->items[chain[0]], &a->items[chain[1]], x, Y + H / 2);
      fprintf(f, "<g class=\"ops-left-out\" data-ops=\"%d\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
                 "rx=\"4\" fill=\"#fff\" stroke=\"#99a\" stroke-dasharray=\"4,3\"/>",
              to - from, x, Y, BOX_W, H);
      box_line(f, x + 6, Y + 26, " font-weight=\"bold\"", "… %d more op%s", to - from, to - from == 1 ? "" : "s");
      box_line(f, x + 6, Y + 38, "", "on %d node%s", nodes, nodes == 1 ? "" : "s");
      box_line(f, x + 6, Y + 50, "", "(in the table)");
      fputs("</g>\n", f);
      x += BOX_W + BOX_GAP;
      continue;
    }
    const int q = elide && b > 1 ? n - (boxes - b) : b;
    if (b > 0) {
      const int p = elide && b == 2 ? n - CHAIN_NEAR - 1 : q - 1; /* the op before it in the chain */
      chain_arrow(f, &a->items[chain[p]], &a->items[chain[q]], x, Y + H / 2);
    }
    chain_box(f, a, c, &a->items[chain[q]], x, Y, H);
    x += BOX_W + BOX_GAP;
  }
  fputs("</svg>\n", f);
  return 0;
}

/* Culprit k's node up close: its ranks in rows, each with its stuck ops
 * written under it (the origin's first), the culprit rank ringed. */
static int culprit_node(FILE* f, const pt_analysis* a, const an_comm* c, const groups* g, size_t lo, size_t hi,
                        int k, int first_close, scratch* m) {
  const an_culprit* q = &a->culprits[k];
  const int cr = q->pub.rank;
  if (cr < 0 || cr >= g->nr) return 0;
  const int gr = g->group[cr];
  const int shown = g->count[gr] < CLOSE_RANKS ? g->count[gr] : CLOSE_RANKS;
  int32_t(*ops)[CLOSE_OPS] = grab(m, (size_t)shown * sizeof *ops);
  int* n_ops = grab(m, (size_t)shown * sizeof *n_ops);
  int* ranks = grab(m, (size_t)shown * sizeof *ranks); /* ascending */
  if (!ops || !n_ops || !ranks) return PT_AN_ENOMEM;
  for (int r = g->first[gr], i = 0; r < g->nr && i < shown; r++)
    if (g->group[r] == gr) ranks[i++] = r;
  for (int pass = 0; pass < 2; pass++) /* origins first */
    for (size_t i = lo; i < hi; i++) {
      const an_item* it = &a->items[i];
      const int r = it->op->rank;
      if (!it->stuck || r < 0 || r >= g->nr || g->group[r] != gr || (it->origin != 0) != (pass == 0)) continue;
      int col = 0;
      while (col < shown && ranks[col] != r) col++;
      if (col == shown) continue; /* past the ranks drawn */
      if (n_ops[col] < CLOSE_OPS) ops[col][n_ops[col]] = (int32_t)i;
      n_ops[col]++;
    }
  const char* hn = host_or(a, g->host[gr], NULL);
  fprintf(f, "<h3>Culprit %d's node up close: ", k + 1);
  if (hn) pt_html_str(f, hn);
  else fprintf(f, "rank %d (its node is not known)", cr);
  fprintf(f, "</h3>\n<p>%d rank%s", g->count[gr], g->count[gr] == 1 ? "" : "s");
  if (shown < g->count[gr]) fprintf(f, ", the first %d drawn", shown);
  if (q->pub.scope_node)
    fprintf(f, "; the records place the fault on this node but cannot tell which of its GPUs: rank %d shows it,"
               " any of the ranks ringed may hold it", cr);
  else fprintf(f, "; the culprit is rank %d", cr);
  fputs(". Under each rank, its stuck ops: peer, channel, step, what it waits for.</p>\n", f);
  const int per_row = shown < CLOSE_PER_ROW ? shown : CLOSE_PER_ROW;
  const int rows = (shown + per_row - 1) / per_row;
  /* A row is as tall as the most ops one of its ranks lists: two lines
   * each, and one for "+N more" or "nothing stuck". */
  const double PILL = 20, LINE = 12;
  double* row_y = grab(m, (size_t)(rows + 1) * sizeof *row_y);
  if (!row_y) return PT_AN_ENOMEM;
  row_y[0] = 4;
  for (int row = 0; row < rows; row++) {
    int most = 0;
    for (int i = row * per_row; i < (row + 1) * per_row && i < shown; i++) {
      const int lines = 2 * (n_ops[i] < CLOSE_OPS ? n_ops[i] : CLOSE_OPS) + (n_ops[i] > CLOSE_OPS || !n_ops[i]);
      if (lines > most) most = lines;
    }
    row_y[row + 1] = row_y[row] + PILL + 6 + most * LINE + 10;
  }
  const double W = per_row * BOX_W + 8, H = row_y[rows];
  fprintf(f, "<svg %sclass=\"culprit-node\" data-culprit=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
             "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n",
          first_close ? "id=\"culprit-node\" " : "", k + 1, W, H, W, H);
  for (int i = 0; i < shown; i++) {
    const int r = ranks[i];
    const an_rank* rk = &c->ranks[r];
    int cand = r == cr;
    for (int j = 0; !cand && q->pub.scope_node && j < q->pub.n_candidates; j++) cand = q->pub.candidates[j] == r;
    const double x = 4 + (i % per_row) * BOX_W, y = row_y[i / per_row];
    fprintf(f, "<g class=\"rank%s\" data-rank=\"%d\"%s><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.0f\" rx=\"10\" "
               "fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"%s/>",
            r == cr ? " culprit" : "", r, r == cr ? " data-culprit=\"1\"" : "", x, y, BOX_W - 12, PILL,
            r == cr ? "#ffd6d6" : rk->dump ? "#fff" : "#ddd", cand ? "#d62728" : "#556",
            r == cr ? "3" : cand ? "1.5" : "1", rk->dump ? "" : " stroke-dasharray=\"3,2\"");
    box_line(f, x + 8, y + 14, r == cr ? " font-weight=\"bold\"" : "", "rank %d", r);
    fprintf(f, "<title>rank %d%s%s</title></g>\n", r, r == cr ? ": culprit" : cand ? ": may hold the fault" : "",
            rk->dump ? "" : " (no dump)");
    for (int j = 0; j < n_ops[i] && j < CLOSE_OPS; j++) {
      const an_item* it = &a->items[ops[i][j]];
      const an_op* op = it->op;
      const int w = it->wait >= 0 && it->wait < AN_W_COUNT ? it->wait : 0;
      const double ly = y + PILL + 6 + 2 * j * LINE;
      fprintf(f, "<g class=\"op%s\"><rect x=\"%.1f\" y=\"%.1f\" width=\"6\" height=\"%.0f\" fill=\"%s\"/>",
              it->origin ? " origin" : "", x + 2, ly + 2, 2 * LINE - 4, wait_color[w]);
      const char* bold = it->origin ? " font-weight=\"bold\"" : "";
      box_line(f, x + 12, ly + 10, bold, "%s %d ch %d", op->is_send ? "send →" : "recv ←", op->peer, op->channel);
      box_line(f, x + 12, ly + 10 + LINE, bold, "%" PRId64 "/%" PRId64 " %s", an_op_progress(op), op->n_steps,
               an_wait_name((an_wait)w));
      fprintf(f, "<title>%s %d, channel %d, opCount %" PRId64 ": waits for %s%s</title></g>\n",
              op->is_send ? "send to" : "recv from", op->peer, op->channel, op->op_count, wait_words[w],
              it->origin ? " (origin)" : "");
    }
    if (n_ops[i] > CLOSE_OPS)
      box_line(f, x + 12, y + PILL + 6 + 2 * CLOSE_OPS * LINE + 10, "", "+%d more", n_ops[i] - CLOSE_OPS);
    else if (n_ops[i] == 0)
      box_line(f, x + 12, y + PILL + 6 + 10, " fill=\"#888\"", "%s", rk->dump ? "nothing stuck" : "no dump");
  }
  fputs("</svg>\n", f);
  return 0;
}

/* The rest in counts and a strip: one cell per node (per run of nodes past
 * STRIP_CELLS), split in the colours of what its stuck ops wait for, each
 * as wide as its share. */
static int wait_summary(FILE* f, const pt_analysis* a, const an_comm* c, const groups* g, size_t lo, size_t hi,
                        const unsigned char* culprit_group, scratch* m) {
  int(*per)[AN_W_COUNT] = grab(m, (size_t)g->ng * sizeof *per);
  int* dumps = grab(m, (size_t)g->ng * sizeof *dumps);
  if (!per || !dumps) return PT_AN_ENOMEM;
  size_t total[AN_W_COUNT] = {0};
  for (size_t i = lo; i < hi; i++) {
    const an_item* it = &a->items[i];
    const int r = it->op->rank;
    if (!it->stuck || r < 0 || r >= g->nr) continue;
    const int w = it->wait > 0 && it->wait < AN_W_COUNT ? it->wait : 0;
    per[g->group[r]][w]++;
    total[w]++;
  }
  int stuck_groups = 0, stuck_ranks = 0, no_dump = 0;
  for (int r = 0; r < g->nr; r++) {
    if (c->ranks[r].dump) dumps[g->group[r]]++;
    else no_dump++;
  }
  for (int k = 0; k < g->ng; k++) {
    int n = 0;
    for (int w = 0; w < AN_W_COUNT; w++) n += per[k][w];
    stuck_groups += n > 0;
  }
  {
    unsigned char* seen = grab(m, (size_t)g->nr);
    if (!seen) return PT_AN_ENOMEM;
    for (size_t i = lo; i < hi; i++) {
      const int r = a->items[i].op->rank;
      if (a->items[i].stuck && r >= 0 && r < g->nr && !seen[r]) {
        seen[r] = 1;
        stuck_ranks++;
      }
    }
  }
  fprintf(f, "<h3>Where the rest wait</h3>\n<p id=\"wait-counts\" data-nodes=\"%d\" data-stuck-nodes=\"%d\" "
             "data-stuck-ranks=\"%d\">%d of %d node%s hold stuck ops (%d of %d ranks)",
          g->ng, stuck_groups, stuck_ranks, stuck_groups, g->ng, g->ng == 1 ? "" : "s", stuck_ranks, g->nr);
  if (no_dump) fprintf(f, "; %d rank%s wrote no dump", no_dump, no_dump == 1 ? "" : "s");
  int said = 0;
  for (int w = 1; w < AN_W_COUNT; w++)
    if (total[w])
      fprintf(f, "%s<i class=\"sw\" style=\"background:%s\"></i>%zu %s (%s)", said++ ? ", " : ". Their stuck ops wait for: ",
              wait_color[w], total[w], wait_words[w], an_wait_name((an_wait)w));
  fputs(".</p>\n", f);
  /* The strip: per cell its counts, summed over its nodes. */
  const int per_cell = (g->ng + STRIP_CELLS - 1) / STRIP_CELLS;
  const int cells = (g->ng + per_cell - 1) / per_cell;
  int(*cn)[AN_W_COUNT + 3] = grab(m, (size_t)cells * sizeof *cn); /* waits, then ranks, with a dump, culprit */
  if (!cn) return PT_AN_ENOMEM;
  enum { RANKS = AN_W_COUNT, WITH_DUMP, CULPRIT };
  for (int k = 0; k < g->ng; k++) {
    int* x = cn[k / per_cell];
    for (int w = 0; w < AN_W_COUNT; w++) x[w] += per[k][w];
    x[RANKS] += g->count[k];
    x[WITH_DUMP] += dumps[k];
    x[CULPRIT] |= culprit_group[k];
  }
  const int S = cells <= 64 ? 24 : cells <= 512 ? 14 : 8;
  const int per_row = cells <= 64 ? 32 : cells <= 512 ? 64 : 128;
  const int rows = (cells + per_row - 1) / per_row;
  const int L = 84, W = L + (cells < per_row ? cells : per_row) * S + 4, H = rows * S + 4;
  fprintf(f, "<p>One cell per node%s in rank order, in the colours of what its stuck ops wait for, each as wide as its"
             " share; white: nothing stuck, grey: no dump; a culprit's node outlined in black.</p>\n",
          per_cell > 1 ? " (per run of nodes: too many to draw one by one)" : "");
  fprintf(f, "<svg id=\"wait-summary\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" data-cells=\"%d\" data-nodes-per-cell=\"%d\">\n",
          W, H, W, H, cells, per_cell);
  const int label_every = S >= 12 ? 1 : 2; /* rows apart enough for a 10px label */
  for (int row = 0; row < rows; row += label_every) {
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", L - 6, 2 + row * S + S / 2.0 + 3.5);
    const int gfirst = row * per_row * per_cell;
    if (per_cell == 1 && gfirst < g->ng && g->host[gfirst] >= 0) text_cut(f, host_or(a, g->host[gfirst], "?"), 12);
    else fprintf(f, "rank %d", gfirst < g->ng ? g->first[gfirst] : 0);
    fputs("</text>\n", f);
  }
  /* Each cell's stuck ops' waits side by side, each as wide as its share:
   * one path per colour for the whole strip, so that a page of 16 384
   * ranks stays small. */
  for (int w = 1; w <= AN_W_COUNT; w++) {
    const int ww = w % AN_W_COUNT; /* "none" last */
    int open = 0;
    for (int cell = 0; cell < cells; cell++) {
      const int* x = cn[cell];
      int stuck = 0, before = 0;
      for (int v = 1; v <= AN_W_COUNT; v++) {
        stuck += x[v % AN_W_COUNT];
        if (v < w) before += x[v % AN_W_COUNT];
      }
      if (!x[ww]) continue;
      if (!open++) fprintf(f, "<path fill=\"%s\" d=\"", wait_color[ww]);
      const double sw = (S - 1.0) * x[ww] / stuck, sx = L + (cell % per_row) * S + 0.5 + (S - 1.0) * before / stuck;
      fprintf(f, "M%.1f %.1fh%.1fv%dh-%.1fz", sx, 2 + (cell / per_row) * S + 0.5, sw, S - 1, sw);
    }
    if (open) fputs("\"/>\n", f);
  }
  fprintf(f, "<g fill=\"none\" stroke=\"#ccd\" stroke-width=\"0.5\">\n");
  for (int cell = 0; cell < cells; cell++) {
    const int* x = cn[cell];
    int stuck = 0;
    for (int w = 0; w < AN_W_COUNT; w++) stuck += x[w];
    fprintf(f, "<rect class=\"cell%s\" x=\"%d.5\" y=\"%d.5\" width=\"%d\" height=\"%d\"%s%s", x[CULPRIT] ? " culprit" : "",
            L + (cell % per_row) * S, 2 + (cell / per_row) * S, S - 1, S - 1,
            x[CULPRIT] ? " stroke=\"#000\" stroke-width=\"2\"" : "",
            !stuck && x[WITH_DUMP] < x[RANKS] ? " fill=\"#ddd\"" : "");
    if (!stuck && !x[CULPRIT] && x[WITH_DUMP] == x[RANKS]) { /* the plain cell: no title */
      fputs("/>\n", f);
      continue;
    }
    fputs("><title>", f);
    const int k0 = cell * per_cell;
    if (per_cell == 1) pt_html_str(f, host_or(a, g->host[k0], "node ?"));
    else fprintf(f, "nodes of ranks %d…", g->first[k0]);
    fprintf(f, ": %d rank%s, %d stuck", x[RANKS], x[RANKS] == 1 ? "" : "s", stuck);
    for (int w = 1; w <= AN_W_COUNT; w++)
      if (x[w % AN_W_COUNT]) fprintf(f, ", %d %s", x[w % AN_W_COUNT], an_wait_name((an_wait)(w % AN_W_COUNT)));
    if (x[WITH_DUMP] < x[RANKS]) fprintf(f, ", %d without a dump", x[RANKS] - x[WITH_DUMP]);
    if (x[CULPRIT]) fputs(" (a culprit's node)", f);
    fputs("</title></rect>\n", f);
  }
  fputs("</g>\n", f);
  fputs("</svg>\n", f);
  return 0;
}

/* The wait graph: chains, the culprits' nodes, the rest. 0, or PT_AN_ENOMEM. */
static int wait_graph(FILE* f, const pt_analysis* a, scratch* m) {
  const an_comm* c = graph_comm(a);
  if (!c || c->nranks <= 0) return 0;
  groups g;
  if (node_groups(a, c, c->nranks, m, &g) != 0) return PT_AN_ENOMEM;
  const size_t lo = c->first_item, hi = c->first_item + c->n_items < a->n_items ? c->first_item + c->n_items : a->n_items;
  size_t stuck = 0;
  for (size_t i = lo; i < hi; i++) stuck += a->items[i].stuck;
  fprintf(f, "<h2>Wait graph</h2>\n<p>Communicator %" PRIu64 ", %d ranks on %d node%s. ", c->comm, g.nr, g.ng,
          g.ng == 1 ? "" : "s");
  if (!stuck) {
    fputs("No op is stuck.</p>\n", f);
    return 0;
  }
  fputs("The chain of waits that leads to each culprit, the culprit's node, then where the other ranks wait; the"
        " table below lists every stuck op.</p>\n",
        f);
  /* Markers for the chains' arrows, in an SVG of their own. */
  fputs("<svg width=\"0\" height=\"0\" style=\"position:absolute\" xmlns=\"http://www.w3.org/2000/svg\"><defs>", f);
  for (int w = 0; w < AN_W_COUNT; w++)
    fprintf(f, "<marker id=\"m%d\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"4\" markerHeight=\"4\" "
               "orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"%s\"/></marker>",
            w, wait_color[w]);
  fputs("</defs></svg>\n", f);
  int32_t* d = grab(m, (hi - lo + 1) * sizeof *d);
  int32_t* stack = grab(m, (hi - lo + 1) * sizeof *stack);
  unsigned char* seen_group = grab(m, (size_t)g.ng + 1);
  unsigned char* culprit_group = grab(m, (size_t)g.ng + 1);
  if (!d || !stack || !seen_group || !culprit_group) return PT_AN_ENOMEM;
  int drawn = 0, more = 0, first_close = 1;
  for (size_t k = 0; k < a->n_culprits; k++) {
    const an_culprit* q = &a->culprits[k];
    if (q->pub.comm_hash != c->comm) continue;
    if (q->pub.rank >= 0 && q->pub.rank < g.nr) culprit_group[g.group[q->pub.rank]] = 1;
    if (drawn == CHAINS) {
      more++;
      continue;
    }
    drawn++;
    if (wait_chain(f, a, c, &g, lo, hi, (int)k, d, stack, seen_group) != 0) return PT_AN_ENOMEM;
    /* one close-up per node */
    int dup = 0;
    for (size_t j = 0; j < k && !dup; j++)
      dup = a->culprits[j].pub.comm_hash == c->comm && a->culprits[j].pub.rank >= 0 && a->culprits[j].pub.rank < g.nr &&
            q->pub.rank >= 0 && q->pub.rank < g.nr && g.group[a->culprits[j].pub.rank] == g.group[q->pub.rank];
    if (!dup) {
      if (culprit_node(f, a, c, &g, lo, hi, (int)k, first_close, m) != 0) return PT_AN_ENOMEM;
      first_close = 0;
    }
  }
  if (more) fprintf(f, "<p>%d more culprit%s of this communicator: their lines are above, their ops in the table.</p>\n",
                    more, more == 1 ? "" : "s");
  fputs("<p class=\"legend\">What a stuck op waits for: ", f);
  for (int w = 1; w < AN_W_COUNT; w++)
    fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s (%s)</span>", wait_color[w], wait_words[w],
            an_wait_name((an_wait)w));
  fputs("</p>\n", f);
  return wait_summary(f, a, c, &g, lo, hi, culprit_group, m);
}

/* Heat colour of a ratio to the median: white at 1, red at the slow factor. */
static void heat(char* out, size_t n, double ratio, double factor) {
  double t = ratio <= 1 ? 0 : log(ratio) / log(factor > 1.01 ? factor : 1.01);
  if (t > 1) t = 1;
  if (t < 0) t = 0;
  snprintf(out, n, "rgb(%d,%d,%d)", 255, (int)(245 - 200 * t), (int)(240 - 220 * t));
}

/* Row or column j of the heatmap: a rank, or a node by the metrics' host
 * names (`hosts`) or the analysis's groups. */
static void node_label(FILE* f, const pt_analysis* a, int by_node, const char** hosts, const groups* g, int j) {
  if (!by_node) fprintf(f, "%d", j);
  else if (hosts) pt_html_str(f, hosts[j]);
  else if (g->host[j] >= 0) pt_html_str(f, host_or(a, g->host[j], "?"));
  else fprintf(f, "rank %d", g->first[j]);
}

/* Rank × peer (or node × node) of the step metrics. */
static int heatmap(FILE* f, const pt_analysis* a, scratch* m) {
  const pt_mset* s = &a->mset;
  if (!s->n) return 0;
  double* ratio = grab(m, s->n * sizeof *ratio);
  if (!ratio || pt_mset_ratios(s, PT_MS_STEP, ratio) != 0) return PT_AN_ENOMEM;
  const uint64_t comm = s->e[0].comm;
  int maxr = -1;
  for (size_t i = 0; i < s->n; i++)
    if (s->e[i].comm == comm && s->e[i].channel < 0) {
      if (s->e[i].rank > maxr) maxr = s->e[i].rank;
      if (s->e[i].peer > maxr) maxr = s->e[i].peer;
    }
  if (maxr < 0 || maxr >= AN_MAX_RANK) return 0;
  const int nr = maxr + 1;
  /* The ranks' nodes: as the wait graph groups them (the analysis's nodes
   * of the communicator, by host name or rank numbering) where the dumps
   * hold the communicator; else by the host names of the metrics lines. */
  const an_comm* hc = NULL;
  for (size_t ci = 0; ci < a->n_comms && !hc; ci++)
    if (a->comms[ci].comm == comm) hc = &a->comms[ci];
  groups g = {0};
  int* hid;
  const char** hosts = NULL;
  int nh = 0;
  if (hc) {
    if (node_groups(a, hc, nr, m, &g) != 0) return PT_AN_ENOMEM;
    hid = g.group;
    nh = g.ng;
  } else {
    hid = grab(m, (size_t)nr * sizeof *hid);
    hosts = grab(m, (size_t)nr * sizeof *hosts);
    if (!hid || !hosts) return PT_AN_ENOMEM;
    for (int r = 0; r < nr; r++) hid[r] = -1;
    for (size_t i = 0; i < s->n; i++) {
      const pt_ms_edge* e = &s->e[i];
      if (e->comm != comm || e->rank < 0 || hid[e->rank] >= 0) continue;
      int h = -1;
      for (int j = 0; j < nh && h < 0; j++)
        if (!strcmp(hosts[j], e->host)) h = j;
      if (h < 0) hosts[h = nh++] = e->host;
      hid[e->rank] = h;
    }
  }
  const int by_node = nr > HEAT_RANKS;
  const int n = by_node ? nh : nr;
  if (by_node && (nh > HEAT_NODES || nh == 0)) {
    fprintf(f, "<h2>Step time, rank × peer</h2>\n<p>%d nodes: too many for a heatmap; the slow edges are in the text"
               " report below.</p>\n", nh);
    return 0;
  }
  double* cell = grab(m, (size_t)n * n * sizeof *cell);
  uint64_t* p50 = grab(m, (size_t)n * n * sizeof *p50);
  char* slow = grab(m, (size_t)n * n);
  if (!cell || !p50 || !slow) return PT_AN_ENOMEM;
  for (size_t i = 0; i < s->n; i++) {
    const pt_ms_edge* e = &s->e[i];
    if (e->comm != comm || e->channel >= 0 || e->rank < 0 || e->peer < 0) continue;
    int snd = e->send ? e->rank : e->peer, rcv = e->send ? e->peer : e->rank;
    int row = by_node ? hid[snd] : snd, col = by_node ? hid[rcv] : rcv;
    if (row < 0 || col < 0) continue;
    size_t k = (size_t)row * n + col;
    if (ratio[i] > cell[k]) {
      cell[k] = ratio[i];
      p50[k] = e->p50_ns[PT_MS_STEP];
    }
  }
  for (size_t i = 0; i < a->mslow.n_edges; i++) {
    const pt_ms_slow_edge* e = &a->mslow.edges[i];
    if (e->comm != comm || e->rank < 0 || e->peer < 0 || e->rank >= nr || e->peer >= nr) continue;
    int snd = e->send ? e->rank : e->peer, rcv = e->send ? e->peer : e->rank;
    int row = by_node ? hid[snd] : snd, col = by_node ? hid[rcv] : rcv;
    if (row >= 0 && col >= 0) slow[(size_t)row * n + col] = 1;
  }
  const double C = n <= 16 ? 28 : n <= 64 ? 12 : 5, L = 70;
  fprintf(f, "<h2>Step time, %s</h2>\n<p>From the step metrics files: each cell is the p50 time of one proxy step"
             " from the sender (row) to the receiver (column), over the median of the comparable edges; white is the"
             " median, dark red %.1f× or more. Slow edges are outlined.</p>\n",
          by_node ? "node × node (the slowest pair of ranks)" : "rank × peer", a->slow_factor);
  fprintf(f, "<svg id=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" data-mode=\"%s\">\n",
          L + n * C + 10, L + n * C + 10, by_node ? "nodes" : "ranks");
  for (int j = 0; j < n; j++) {
    if (n > 64 && j % 8) continue;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", L - 4, L + j * C + C / 2 + 3);
    node_label(f, a, by_node, hosts, &g, j);
    fprintf(f, "</text><text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-60 %.1f %.1f)\">", L + j * C + C / 2,
            L - 4, L + j * C + C / 2, L - 4);
    node_label(f, a, by_node, hosts, &g, j);
    fputs("</text>\n", f);
  }
  for (int r = 0; r < n; r++)
    for (int q = 0; q < n; q++) {
      size_t k = (size_t)r * n + q;
      if (cell[k] <= 0) continue;
      char col[32];
      heat(col, sizeof col, cell[k], a->slow_factor);
      fprintf(f, "<rect class=\"cell%s\" data-from=\"%d\" data-to=\"%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                 "height=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%s\"><title>",
              slow[k] ? " slow" : "", r, q, L + q * C, L + r * C, C, C, col, slow[k] ? "#000" : "#eee",
              slow[k] ? "2" : "0.5");
      if (by_node) {
        node_label(f, a, 1, hosts, &g, r);
        fputs(" → ", f);
        node_label(f, a, 1, hosts, &g, q);
      } else {
        fprintf(f, "rank %d → rank %d", r, q);
      }
      fprintf(f, ": p50 step %.3f ms, %.2f× the median%s</title></rect>\n", (double)p50[k] / 1e6, cell[k],
              slow[k] ? " (slow)" : "");
    }
  fputs("</svg>\n", f);
  return 0;
}

static void side_cells(FILE* f, const pt_analysis* a, int32_t i) {
  if (i < 0) {
    fputs("<td>-</td><td>(no record)</td>", f);
    return;
  }
  const an_op* op = a->items[i].op;
  const an_dump* d = a->items[i].dump;
  /* in network transfers, one unit for every host; the host's own count
   * (raw steps on NCCL 2.23 and RCCL) where sliceSteps is not known */
  const int64_t p = an_value_transfers(d, op, an_op_progress(op)), n = an_value_transfers(d, op, op->n_steps);
  if (p >= 0 && n >= 0) fprintf(f, "<td>%" PRId64 "/%" PRId64 "</td>", p, n);
  else fprintf(f, "<td>%" PRId64 "/%" PRId64 " raw</td>", an_op_progress(op), op->n_steps);
  fprintf(f, "<td>%s</td>", op->status >= 0 ? an_status_names[op->status] : "?");
}

static void edge_table(FILE* f, const pt_analysis* a) {
  if (!a->n_stuck) return;
  fputs("<h2>Stuck edges</h2>\n<table id=\"stuck-edges\"><tr><th>ch</th><th>opCount</th><th>sender → receiver</th>"
        "<th>send step (transfers)</th><th>send status</th><th>recv step (transfers)</th><th>recv status</th>"
        "<th>waits for</th>"
        "<th>culprit</th></tr>\n",
        f);
  size_t rows = 0, more = 0;
  for (int pass = 0; pass < 2; pass++) /* edges holding an origin first */
    for (size_t i = 0; i < a->n_items; i++) {
      const an_item* x = &a->items[i];
      if (!x->stuck) continue;
      if (x->partner >= 0 && a->items[x->partner].stuck && (size_t)x->partner < i) continue;
      const an_item* y = x->partner >= 0 ? &a->items[x->partner] : NULL;
      int origin = x->origin || (y && y->stuck && y->origin);
      if (origin != (pass == 0)) continue;
      if (rows >= TABLE_ROWS) {
        more++;
        continue;
      }
      rows++;
      const an_op* op = x->op;
      int32_t s = op->is_send ? (int32_t)i : x->partner, r = op->is_send ? x->partner : (int32_t)i;
      const an_item* w = x->origin || !y || !y->stuck ? x : y; /* the side that shows the cause */
      int k = x->culprit >= 0 ? x->culprit : y ? y->culprit : -1;
      fprintf(f, "<tr class=\"edge%s\" data-from=\"%d\" data-to=\"%d\"><td>%d</td><td>%" PRId64 "</td><td>%d → %d</td>",
              origin ? " origin" : "", op->is_send ? op->rank : op->peer, op->is_send ? op->peer : op->rank,
              op->channel, op->op_count, op->is_send ? op->rank : op->peer, op->is_send ? op->peer : op->rank);
      side_cells(f, a, s);
      side_cells(f, a, r);
      int wt = w->wait >= 0 && w->wait < AN_W_COUNT ? w->wait : 0;
      fprintf(f, "<td><i class=\"sw\" style=\"background:%s\"></i>rank %d: %s</td><td>", wait_color[wt], w->op->rank,
              wait_words[wt]);
      if (k >= 0) fprintf(f, "[%d%s]", k + 1, origin ? ", origin" : "");
      fputs("</td></tr>\n", f);
    }
  fputs("</table>\n", f);
  if (more) fprintf(f, "<p>… %zu more stuck edges: <code>proxytrace analyze -v</code> lists them all.</p>\n", more);
}

int pt_analysis_write_html(const pt_analysis* a, FILE* f) {
  if (!a || !f) return PT_AN_EINVAL;
  if (an_failed(a)) return PT_AN_ENOMEM;
  size_t tlen = 0;
  char* text = text_report(a, &tlen);
  if (!text) return PT_AN_ENOMEM;
  const char* v = verdict_word(a->verdict);
  const char* vc = a->verdict == PT_VERDICT_HANG ? "v-hang" : a->verdict == PT_VERDICT_SLOW ? "v-slow"
                   : a->verdict == PT_VERDICT_OK ? "v-ok" : a->verdict == PT_VERDICT_INCOMPLETE ? "v-incomplete"
                                                           : "v-unusable";
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
             "<title>proxytrace analyze: %s</title>\n",
          v);
  css(f);
  fputs("</head><body>\n<h1>proxytrace analyze</h1>\n", f);
  /* The headline is the text report's first line, without its "proxytrace analyze: " lead. */
  char* nl = memchr(text, '\n', tlen);
  if (nl) *nl = 0;
  const char* head = strncmp(text, "proxytrace analyze: ", 20) ? text : text + 20;
  fprintf(f, "<p id=\"verdict\" class=\"verdict %s\" data-verdict=\"%s\">", vc, v);
  pt_html_str(f, head);
  fputs("</p>\n", f);
  if (nl) *nl = '\n';
  for (size_t k = 0; k < a->n_culprits; k++) {
    const an_culprit* q = &a->culprits[k];
    if (q->pub.consequence_of >= 0) { /* another communicator's wait on it, with the chain */
      fprintf(f, "<div class=\"consequence\" data-culprit-rank=\"%d\" data-follows=\"%d\"><b>follows %d:</b> ",
              q->pub.rank, q->pub.consequence_of + 1, q->pub.consequence_of + 1);
      pt_html_str(f, q->summary);
      fputs("<br><small>because ", f);
      pt_html_str(f, q->chain);
      fputs("</small></div>\n", f);
      continue;
    }
    fprintf(f, "<div class=\"culprit\" data-culprit-rank=\"%d\" data-cause=\"%s\" data-scope=\"%s\"><b>%s %zu:</b> ",
            q->pub.rank, q->pub.cause_name ? q->pub.cause_name : "", q->pub.scope_node ? "node" : "rank",
            k ? "also" : "culprit", k + 1);
    pt_html_str(f, q->summary);
    if (q->pub.possible) fputs(" <i>(possible only: its evidence touches ranks whose dumps are not all there)</i>", f);
    fputs("</div>\n", f);
  }
  scratch mem = {0};
  int rc = wait_graph(f, a, &mem);
  scratch_free(&mem);
  if (rc == 0) rc = heatmap(f, a, &mem);
  scratch_free(&mem);
  if (rc == 0) {
    edge_table(f, a);
    fputs("<h2>Timeline</h2>\n<p>Every op of every rank on a timeline, sends linked to their receives: ", f);
    if (a->timeline_file[0]) { /* written by the same run */
      fputs("this run wrote it, <code>", f);
      pt_html_str(f, a->timeline_file);
      fputs("</code>; open <code>https://ui.perfetto.dev</code> and drop it on it", f);
    } else {
      fputs("write it with <code>proxytrace analyze --chrome trace.json DUMPS…</code>, then open"
            " <code>https://ui.perfetto.dev</code> and drop <code>trace.json</code> on it",
            f);
    }
    fputs(" (\"Open trace file\"; the file is read in the browser, not uploaded), or load it in"
          " <code>chrome://tracing</code>. Stuck ops are named STUCK and coloured.</p>\n",
          f);
    fputs("<h2>Text report</h2>\n<details><summary>the report of <code>proxytrace analyze</code></summary><pre>", f);
    for (char* line = text; *line;) { /* line by line: a line end is no control byte here */
      char* end = strchr(line, '\n');
      if (end) *end = 0;
      pt_html_str(f, line);
      fputc('\n', f);
      if (!end) break;
      line = end + 1;
    }
    fputs("</pre></details>\n</body></html>\n", f);
  }
  free(text);
  if (rc) return rc;
  return ferror(f) ? PT_AN_EIO : 0;
}

int pt_analysis_write_html_path(const pt_analysis* a, const char* path) {
  return an_write_output(a, path, pt_analysis_write_html);
}
