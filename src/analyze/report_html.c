/*
 * report_html.c — the analysis as one self-contained HTML page (`analyze
 * --html FILE`): inline CSS and SVG only, no script, no font, no image, no
 * link to load, and a Content-Security-Policy that forbids all of them, so
 * the page opens from a laptop, a shared folder or an e-mail the same way.
 *
 *   verdict      the text report's headline, coloured by verdict, then the
 *                culprits
 *   wait graph   the ranks of the communicator that holds the stuck ops,
 *                grouped in one box per node; an arrow from a rank to the
 *                peer a stuck op of it waits on (one per pair and weight),
 *                coloured by what it waits for; the arrows on a chain to a culprit bold, the origin's
 *                bolder; the culprit rank ringed. Past GRAPH_RANKS ranks (or
 *                GRAPH_NODES nodes) one box per node, arrows between nodes
 *                counted, so that the page stays small at any scale.
 *   heatmap      with step metrics files among the inputs: sender × receiver
 *                of each edge's p50 step time over the median of comparable
 *                edges; the slow edges outlined. Past HEAT_RANKS ranks, node
 *                × node (the largest ratio of the pairs).
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
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"
#include "escape/escape.h"

#define GRAPH_RANKS 128 /* more ranks: one box per node */
#define GRAPH_NODES 32
#define GRAPH_MAX_PAIRS 1024 /* more boxes: no arrows (their pairs would not fit) */
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
  void* p[16];
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

static int is_culprit_rank(const pt_analysis* a, uint64_t comm, int rank) {
  for (size_t k = 0; k < a->n_culprits; k++)
    if (a->culprits[k].pub.comm_hash == comm && a->culprits[k].pub.rank == rank) return (int)k + 1;
  return 0;
}

static const char* host_name(const pt_analysis* a, int node) {
  return node >= 0 && (size_t)node < a->hosts.n ? a->hosts.names[node] : NULL;
}

typedef struct {
  int node;       /* host id, -1 unknown */
  int first;      /* its first rank */
  int count;
  double x, y, w, h;
} box;

/* The wait graph (an SVG), ranks or nodes. 0, or PT_AN_ENOMEM. */
static int wait_graph(FILE* f, const pt_analysis* a, scratch* m) {
  const an_comm* c = graph_comm(a);
  if (!c || c->nranks <= 0) return 0;
  const int nr = c->nranks;
  int* bx = grab(m, (size_t)nr * sizeof *bx); /* rank -> box */
  box* boxes = grab(m, (size_t)nr * sizeof *boxes);
  if (!bx || !boxes) return PT_AN_ENOMEM;
  int nb = 0;
  for (int r = 0; r < nr; r++) {
    int node = c->ranks[r].node, b = -1;
    for (int j = nb - 1; j >= 0 && b < 0; j--)
      if (boxes[j].node == node && node >= 0) b = j;
    if (b < 0) {
      b = nb++;
      boxes[b].node = node;
      boxes[b].first = r;
    }
    boxes[b].count++;
    bx[r] = b;
  }
  const int agg = nr > GRAPH_RANKS || nb > GRAPH_NODES;
  /* Layout: boxes left to right, wrapped at WIDTH. */
  const double WIDTH = 1100, CELL = nr <= 64 ? 40 : 26, PAD = 8, LABEL = 16, RAD = CELL * 0.34;
  double x = PAD, y = PAD, row_h = 0;
  for (int b = 0; b < nb; b++) {
    int k = (int)ceil(sqrt((double)boxes[b].count));
    if (k < 1) k = 1;
    int rows = (boxes[b].count + k - 1) / k;
    boxes[b].w = agg ? 150 : k * CELL + 2 * PAD;
    boxes[b].h = agg ? 46 : rows * CELL + PAD + LABEL;
    if (x + boxes[b].w > WIDTH && x > PAD) {
      x = PAD;
      y += row_h + 3 * PAD;
      row_h = 0;
    }
    boxes[b].x = x;
    boxes[b].y = y;
    x += boxes[b].w + 5 * PAD;
    if (boxes[b].h > row_h) row_h = boxes[b].h;
  }
  const double H = y + row_h + PAD;
  double W = 0;
  for (int b = 0; b < nb; b++)
    if (boxes[b].x + boxes[b].w + PAD > W) W = boxes[b].x + boxes[b].w + PAD;
  /* Where rank r is drawn: its place among its box's ranks, in rank order
   * (a node's ranks need not be consecutive). */
  int* slot = grab(m, (size_t)nr * sizeof *slot);
  int* fill = grab(m, (size_t)nb * sizeof *fill);
  if (!slot || !fill) return PT_AN_ENOMEM;
  for (int r = 0; r < nr; r++) slot[r] = boxes[bx[r]].first + fill[bx[r]]++;
#define KOF(b) ((int)ceil(sqrt((double)boxes[b].count)) < 1 ? 1 : (int)ceil(sqrt((double)boxes[b].count)))
#define RX(r) (agg ? boxes[bx[r]].x + boxes[bx[r]].w / 2 \
               : boxes[bx[r]].x + PAD + CELL / 2 + (slot[r] - boxes[bx[r]].first) % KOF(bx[r]) * CELL)
#define RY(r) (agg ? boxes[bx[r]].y + boxes[bx[r]].h / 2 + 6 \
               : boxes[bx[r]].y + LABEL + CELL / 2 + (slot[r] - boxes[bx[r]].first) / KOF(bx[r]) * CELL)

  fprintf(f, "<h2>Wait graph</h2>\n<p>Communicator %" PRIu64 ", %d ranks on %d node%s%s. %s</p>\n", c->comm, nr, nb,
          nb == 1 ? "" : "s", agg ? " (one box per node: too many ranks to draw one by one)" : "",
          a->n_stuck ? "An arrow goes from a rank to the peer one of its stuck ops waits on, coloured by what it"
                       " waits for; bold arrows lead to a culprit, the boldest is where the waiting starts."
                     : "No op is stuck: no arrow.");
  fputs("<p class=\"legend\">", f);
  for (int w = 1; w < AN_W_COUNT; w++)
    fprintf(f, "<span><i class=\"sw\" style=\"background:%s\"></i>%s (%s)</span>", wait_color[w], wait_words[w],
            an_wait_name((an_wait)w));
  fputs("<span><i class=\"sw\" style=\"background:#fff;border:3px solid #d62728\"></i>culprit</span></p>\n", f);
  fprintf(f, "<svg id=\"wait-graph\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" data-mode=\"%s\">\n<defs>",
          W, H, W, H, agg ? "nodes" : "ranks");
  for (int w = 0; w < AN_W_COUNT; w++)
    fprintf(f, "<marker id=\"m%d\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"5\" markerHeight=\"5\" "
               "orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"%s\"/></marker>",
            w, wait_color[w]);
  fputs("</defs>\n", f);
  /* Node boxes. */
  for (int b = 0; b < nb; b++) {
    const char* hn = host_name(a, boxes[b].node);
    int culprit_here = 0;
    for (int r = 0; r < nr && !culprit_here; r++) culprit_here = bx[r] == b && is_culprit_rank(a, c->comm, r);
    fprintf(f, "<g class=\"node\" data-node=\"");
    pt_html_str(f, hn ? hn : "?");
    fprintf(f, "\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"5\" fill=\"#f4f6fa\" stroke=\"%s\" "
               "stroke-width=\"%d\"/><text x=\"%.1f\" y=\"%.1f\">",
            boxes[b].x, boxes[b].y, boxes[b].w, boxes[b].h, culprit_here ? "#d62728" : "#99a",
            culprit_here ? 3 : 1, boxes[b].x + 4, boxes[b].y + 11);
    pt_html_str(f, hn ? hn : "node ?");
    if (agg) fprintf(f, " (%d ranks from %d)", boxes[b].count, boxes[b].first);
    fputs("</text></g>\n", f);
  }
  /* Arrows: one per stuck op; in node mode one per (node, node, cause). */
  const size_t lo = c->first_item, hi = c->first_item + c->n_items < a->n_items ? c->first_item + c->n_items : a->n_items;
  /* One arrow per (rank or node pair, weight): the page's size follows the
   * pairs, not the stuck ops. Past GRAPH_MAX_PAIRS boxes no arrow at all. */
  const int ends = agg ? nb : nr;
  unsigned char* seen = ends <= GRAPH_MAX_PAIRS ? grab(m, (size_t)ends * ends) : NULL;
  if (ends <= GRAPH_MAX_PAIRS && !seen) return PT_AN_ENOMEM;
  for (int pass = 0; pass < 3 && seen; pass++) /* plain, then chain, then origins: the bold ones on top */
    for (size_t i = lo; i < hi; i++) {
      const an_item* it = &a->items[i];
      const an_op* op = it->op;
      if (!it->stuck || op->rank < 0 || op->rank >= nr || op->peer < 0 || op->peer >= nr) continue;
      int level = it->origin ? 2 : it->culprit >= 0 ? 1 : 0;
      if (level != pass) continue;
      int w = it->wait >= 0 && it->wait < AN_W_COUNT ? it->wait : 0;
      const int from = op->rank, to = op->peer;
      double x1 = RX(from), y1 = RY(from), x2 = RX(to), y2 = RY(to);
      if (agg && bx[from] == bx[to]) continue; /* inside a node: in the table */
      const size_t key = agg ? (size_t)bx[from] * nb + bx[to] : (size_t)from * nr + to;
      if (seen[key] & (1u << level)) continue;
      seen[key] |= (unsigned char)(1u << level);
      /* Stop short of the target's circle; bend a little so both
       * directions of a pair stay apart. */
      double dx = x2 - x1, dy = y2 - y1, len = sqrt(dx * dx + dy * dy);
      if (len < 1) continue;
      double ux = dx / len, uy = dy / len, r0 = agg ? 20 : RAD + 1;
      double sx = x1 + ux * r0, sy = y1 + uy * r0, ex = x2 - ux * r0, ey = y2 - uy * r0;
      double mx = (sx + ex) / 2 - uy * len * 0.12, my = (sy + ey) / 2 + ux * len * 0.12;
      fprintf(f, "<path class=\"edge%s%s\" data-from=\"%d\" data-to=\"%d\" data-channel=\"%d\" data-op-count=\"%" PRId64
                 "\" data-cause=\"%s\" d=\"M%.1f,%.1fQ%.1f,%.1f %.1f,%.1f\" fill=\"none\" stroke=\"%s\" "
                 "stroke-width=\"%s\" marker-end=\"url(#m%d)\"><title>rank %d %s %d, channel %d: waits for %s%s</title>"
                 "</path>\n",
              level ? " chain" : "", level == 2 ? " origin" : "", from, to, op->channel, op->op_count,
              an_wait_name((an_wait)w), sx, sy, mx, my, ex, ey, wait_color[w], level == 2 ? "4.5" : level ? "2.5" : "1.2",
              w, from, op->is_send ? "send to" : "recv from", to, op->channel, wait_words[w],
              it->origin ? " (origin)" : "");
    }
  /* Ranks on top of the arrows. */
  if (!agg)
    for (int r = 0; r < nr; r++) {
      int k = is_culprit_rank(a, c->comm, r);
      const an_rank* rk = &c->ranks[r];
      fprintf(f, "<g class=\"rank%s\" data-rank=\"%d\"%s><circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"%s\" "
                 "stroke-width=\"%d\"%s/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text><title>rank %d",
              k ? " culprit" : "", r, k ? " data-culprit=\"1\"" : "", RX(r), RY(r), RAD, k ? "#ffd6d6" : rk->dump ? "#fff" : "#ddd",
              k ? "#d62728" : "#556", k ? 3 : 1, rk->dump ? "" : " stroke-dasharray=\"2,2\"", RX(r), RY(r) + 3.5, r, r);
      if (k) fprintf(f, ": culprit %d", k);
      if (!rk->dump) fputs(" (no dump)", f);
      fputs("</title></g>\n", f);
    }
  else
    for (int b = 0; b < nb; b++) {
      int k = 0, q = 0;
      for (int r = boxes[b].first; r < nr && !k; r++)
        if (bx[r] == b && (q = is_culprit_rank(a, c->comm, r))) k = r + 1;
      /* A node-level culprit: the node, not the rank whose op shows it. */
      if (k)
        fprintf(f, "<g class=\"rank culprit\" data-rank=\"%d\" data-culprit=\"1\"><text x=\"%.1f\" y=\"%.1f\" "
                   "fill=\"#d62728\" font-weight=\"bold\">%s %d%s</text></g>\n",
                k - 1, boxes[b].x + 4, boxes[b].y + boxes[b].h - 6,
                a->culprits[q - 1].pub.scope_node ? "culprit: a GPU of this node (rank" : "culprit: rank", k - 1,
                a->culprits[q - 1].pub.scope_node ? " shows it)" : "");
    }
#undef RX
#undef RY
#undef KOF
  fputs("</svg>\n", f);
  if (!seen) fprintf(f, "<p>%d nodes: too many to draw the arrows; the stuck edges are in the table.</p>\n", nb);
  return 0;
}

/* Heat colour of a ratio to the median: white at 1, red at the slow factor. */
static void heat(char* out, size_t n, double ratio, double factor) {
  double t = ratio <= 1 ? 0 : log(ratio) / log(factor > 1.01 ? factor : 1.01);
  if (t > 1) t = 1;
  if (t < 0) t = 0;
  snprintf(out, n, "rgb(%d,%d,%d)", 255, (int)(245 - 200 * t), (int)(240 - 220 * t));
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
  /* Hosts of the ranks (their own lines name them), as indices. */
  int* hid = grab(m, (size_t)nr * sizeof *hid);
  const char** hosts = grab(m, (size_t)nr * sizeof *hosts);
  if (!hid || !hosts) return PT_AN_ENOMEM;
  int nh = 0;
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
    if (by_node) pt_html_str(f, hosts[j]);
    else fprintf(f, "%d", j);
    fprintf(f, "</text><text x=\"%.1f\" y=\"%.1f\" transform=\"rotate(-60 %.1f %.1f)\">", L + j * C + C / 2,
            L - 4, L + j * C + C / 2, L - 4);
    if (by_node) pt_html_str(f, hosts[j]);
    else fprintf(f, "%d", j);
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
        pt_html_str(f, hosts[r]);
        fputs(" → ", f);
        pt_html_str(f, hosts[q]);
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
  fprintf(f, "<td>%" PRId64 "/%" PRId64 "</td><td>%s</td>", an_op_progress(op), op->n_steps,
          op->status >= 0 ? an_status_names[op->status] : "?");
}

static void edge_table(FILE* f, const pt_analysis* a) {
  if (!a->n_stuck) return;
  fputs("<h2>Stuck edges</h2>\n<table id=\"stuck-edges\"><tr><th>ch</th><th>opCount</th><th>sender → receiver</th>"
        "<th>send step</th><th>send status</th><th>recv step</th><th>recv status</th><th>waits for</th>"
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
    fputs("<h2>Timeline</h2>\n<p>Every op of every rank on a timeline, sends linked to their receives: write it with"
          " <code>proxytrace analyze --chrome trace.json DUMPS…</code>, then open <code>https://ui.perfetto.dev</code>"
          " and drop <code>trace.json</code> on it (\"Open trace file\"; the file is read in the browser, not"
          " uploaded), or load it in <code>chrome://tracing</code>. Stuck ops are named STUCK and coloured.</p>\n",
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
