/*
 * legacy.c — legacy ProxyTrace text into dumps: the plugin's text files,
 * RCCL's log, or a whole job's captured output.
 *
 * A line is classified by what it holds, wherever it starts, so any host
 * log prefix may come before it (`node0:1234:1240 [3] file.cc:12 NCCL WARN `,
 * RCCL's `[2025-01-01 10:00:00] ` before that, or nothing):
 *
 *   "proxytrace dump seq=…"        the plugin's header of one dump (its
 *                                  text files): seq, trigger, time, host,
 *                                  pid, rank, nRanks, commHash, hostLib
 *   "commDump for all active ops"  the legacy header: a dump starts
 *   "commDump for commHash:N"      the same, for one communicator
 *   "proxytrace host: …"           what the host did (a mask with the
 *                                  proxy events off at this dump)
 *   "proxytrace dropped or refused events …"   the drop counts
 *   "createT:… done:N"             a record (format: rccl-proxytrace §3.7 in
 *                                  the docs; RCCL's src/misc/proxy_trace)
 *   "ncclCommDump()", "commFree() ProxyTrace"  what triggers the next dump
 *
 * Everything else is an ordinary log line and is passed over; one without
 * a host log prefix before any dump line is prose, after which the input's
 * unprefixed dump-like lines are not a dump (an_parser_among_text). Lines of
 * different processes or devices may interleave in one log: each prefix
 * (host, pid, device) is its own stream with its own open dump. A line with
 * no prefix continues the stream of the line before it (RCCL's in-core
 * ProxyTrace logged a whole dump as one message, so only its first line
 * carries the prefix). Times are milliseconds: they are kept as ns.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/inputs.h"

/* ---- one record line ---------------------------------------------------- */

typedef struct {
  const char* s;
  size_t len, pos;
  char* why;
  size_t why_len;
} cur;

static int miss(cur* c, const char* what) {
  if (c->pos >= c->len)
    snprintf(c->why, c->why_len, "record line cut after %zu bytes (expected %s)", c->len, what);
  else
    snprintf(c->why, c->why_len, "malformed record line: expected %s at column %zu", what, c->pos + 1);
  return -1;
}

static int lit(cur* c, const char* w) {
  size_t n = strlen(w);
  if (c->pos + n > c->len && !memcmp(c->s + c->pos, w, c->len - c->pos)) c->pos = c->len; /* cut inside it */
  if (c->pos + n > c->len || memcmp(c->s + c->pos, w, n) != 0) {
    char q[48];
    snprintf(q, sizeof q, "'%s'", w);
    return miss(c, q);
  }
  c->pos += n;
  return 0;
}

/* A decimal integer, parsed in place (this runs for every field of every
 * record line). `what` names it in the error. */
static int i64(cur* c, int64_t* out, const char* what) {
  size_t p = c->pos;
  int neg = p < c->len && c->s[p] == '-';
  p += (size_t)neg;
  uint64_t v = 0;
  size_t start = p;
  while (p < c->len && c->s[p] >= '0' && c->s[p] <= '9' && p - start < 19) v = v * 10 + (uint64_t)(c->s[p++] - '0');
  if (p == start || (p < c->len && c->s[p] >= '0' && c->s[p] <= '9') || v > (uint64_t)INT64_MAX)
    return what ? miss(c, what) : -1;
  c->pos = p;
  *out = neg ? -(int64_t)v : (int64_t)v;
  return 0;
}

static int u64(cur* c, uint64_t* out, const char* what) {
  size_t p = c->pos;
  uint64_t v = 0;
  while (p < c->len && c->s[p] >= '0' && c->s[p] <= '9') {
    uint64_t d = (uint64_t)(c->s[p] - '0');
    if (v > (UINT64_MAX - d) / 10) return miss(c, what);
    v = v * 10 + d;
    p++;
  }
  if (p == c->pos) return miss(c, what);
  c->pos = p;
  *out = v;
  return 0;
}

/* "label:NUMBER" after ", ". */
static int field(cur* c, const char* label, int64_t* out) {
  if (lit(c, ", ") || lit(c, label)) return -1;
  if (i64(c, out, NULL) == 0) return 0;
  char what[40];
  snprintf(what, sizeof what, "a number after '%s'", label);
  return miss(c, what);
}

/* Milliseconds to nanoseconds; 0 (unknown) for none, and for a time the
 * nanosecond clock cannot hold (past the year 2262: a corrupt line). */
static int64_t ms_to_ns(int64_t ms) { return ms > 0 && ms <= INT64_MAX / 1000000 ? ms * 1000000 : 0; }

int an_legacy_record(const char* s, size_t len, an_op* op, char* why, size_t why_len) {
  cur c = {s, len, 0, why, why_len};
  int64_t t[4], cnt, v[5], ch, ns, nb;
  uint64_t comm, u[2];
  an_op_init(op);
  if (lit(&c, "createT:") || i64(&c, &t[0], "createT")) return -1;
  if (field(&c, "lastT:", &t[1])) return -1;
  /* Meta's rcclx variant prints "pot:" for postT. */
  if (lit(&c, ", ")) return -1;
  if (c.pos + 4 <= c.len && !memcmp(c.s + c.pos, "pot:", 4)) c.pos += 4;
  else if (lit(&c, "postT:")) return -1;
  if (i64(&c, &t[2], "postT") || field(&c, "sendT:", &t[3])) return -1;
  if (lit(&c, ", ") || lit(&c, "cntNm:")) return -1;
  if (i64(&c, &cnt, "cntNm") != 0) {
    /* rcclx: the counter's name, cut to three letters */
    while (c.pos < c.len && c.s[c.pos] != ',') c.pos++;
    cnt = 100;
  }
  if (lit(&c, ", <") || u64(&c, &comm, "the commHash") || lit(&c, ":") || i64(&c, &op->op_count, "the opCount") ||
      lit(&c, ":") || i64(&c, &op->op_id, "the proxyOpId") || lit(&c, ">"))
    return -1;
  if (lit(&c, ", [fu,pr,pa,tb,ck]:") || i64(&c, &v[0], "func") || lit(&c, ",") || i64(&c, &v[1], "proto") ||
      lit(&c, ",") || i64(&c, &v[2], "pattern") || lit(&c, ",") || u64(&c, &u[0], "totalBytes") ||
      lit(&c, ",") || u64(&c, &u[1], "chunkSize"))
    return -1;
  if (lit(&c, ", ") || i64(&c, &v[3], "the rank") || lit(&c, "->") || i64(&c, &v[4], "the peer") || lit(&c, "("))
    return -1;
  if (c.pos < c.len && (c.s[c.pos] == 'S' || c.s[c.pos] == 'R')) op->is_send = c.s[c.pos++] == 'S';
  else return miss(&c, "S or R");
  if (lit(&c, ")") || field(&c, "chan:", &ch)) return -1;
  if (lit(&c, ", ") || lit(&c, "status:")) return -1;
  size_t st = c.pos;
  while (c.pos < c.len && c.s[c.pos] != ',') c.pos++;
  op->status = (int8_t)an_status_parse(c.s + st, c.pos - st);
  if (field(&c, "ns:", &ns) || field(&c, "nb:", &nb)) return -1;
  static const struct {
    const char* label;
    int kind;
  } counters[] = {{"po:", AN_C_POSTED},       {"ke:", AN_C_KERNEL_COPY_READY}, {"tail/h:", AN_C_TAIL_OR_HEAD},
                  {"recvT:", AN_C_RECV_TAIL}, {"connSz/h:", AN_C_FIFO},        {"trans:", AN_C_TRANSMITTED},
                  {"flushed:", AN_C_FLUSHED}, {"recvd:", AN_C_RECEIVED},       {"done:", AN_C_DONE}};
  for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
    if (field(&c, counters[i].label, &op->cnt[counters[i].kind])) return -1;
  while (c.pos < c.len && (c.s[c.pos] == ' ' || c.s[c.pos] == '\t')) c.pos++;
  if (c.pos != c.len) {
    snprintf(why, why_len, "malformed record line: unexpected text at column %zu", c.pos + 1);
    return -1;
  }
  if (v[3] < 0 || v[3] > AN_MAX_RANK || v[4] < 0 || v[4] > AN_MAX_RANK || ch < 0 || ch > 1 << 16) {
    snprintf(why, why_len, "record line with rank, peer or channel out of range");
    return -1;
  }
  op->comm = comm;
  op->create_ns = ms_to_ns(t[0]);
  op->last_ns = ms_to_ns(t[1]);
  op->posted_ns = ms_to_ns(t[2]);
  op->send_ns = ms_to_ns(t[3]);
  op->last_counter = (int8_t)(cnt >= 0 && cnt < AN_C_COUNT ? cnt : -1);
  op->func = (int32_t)v[0];
  op->proto = (int32_t)v[1];
  op->pattern = (int32_t)v[2];
  op->total_bytes = u[0];
  op->chunk = u[1];
  op->rank = (int32_t)v[3];
  op->peer = (int32_t)v[4];
  op->channel = (int32_t)ch;
  op->n_steps = ns;
  op->nbytes = nb > 0 ? (uint64_t)nb : 0;
  op->state = ns > 0 && op->cnt[AN_C_DONE] >= ns ? AN_ST_FINISHED : AN_ST_ACTIVE;
  return 0;
}

/* ---- the host log prefix -------------------------------------------------- */

typedef struct {
  char host[64];
  int pid, dev;
  int found;
} prefix;

/* Finds "host:pid:tid" then "[dev]" among the space-separated words before
 * the message. */
static void parse_prefix(const char* s, size_t n, prefix* px) {
  memset(px, 0, sizeof *px);
  px->dev = -1;
  size_t i = 0;
  while (i < n) {
    while (i < n && s[i] == ' ') i++;
    size_t w = i;
    while (i < n && s[i] != ' ') i++;
    size_t wl = i - w;
    if (!px->found) {
      /* host:pid:tid — the host has no ':' or ' ', pid and tid are digits */
      const char* c1 = memchr(s + w, ':', wl);
      if (!c1 || c1 == s + w) continue;
      const char* c2 = memchr(c1 + 1, ':', (size_t)(s + i - (c1 + 1)));
      if (!c2 || c2 == c1 + 1 || c2 + 1 >= s + i) continue;
      int ok = 1;
      for (const char* d = c1 + 1; d < s + i && ok; d++)
        if (d != c2 && (*d < '0' || *d > '9')) ok = 0;
      if (!ok) continue;
      size_t hl = (size_t)(c1 - (s + w));
      if (hl >= sizeof px->host) hl = sizeof px->host - 1;
      memcpy(px->host, s + w, hl);
      px->host[hl] = 0;
      px->pid = atoi(c1 + 1);
      px->found = 1;
    } else {
      if (wl >= 3 && s[w] == '[' && s[i - 1] == ']') px->dev = atoi(s + w + 1);
      return;
    }
  }
}

static uint64_t stream_key(const prefix* px) {
  if (!px->found) return 0;
  uint64_t h = 0x7072;
  for (const char* c = px->host; *c; c++) h = an_mix(h, (unsigned char)*c);
  return an_mix(an_mix(h, (uint64_t)px->pid), (uint64_t)(px->dev + 2)) | 1; /* never 0 */
}

/* The stream a line belongs to, and the dump open in it (NULL if none). */
static an_open* stream(an_parser* p, const prefix* px) {
  uint64_t key = stream_key(px);
  if (!key && p->last) return p->last; /* a continuation line */
  an_open* o = an_parser_find(p, key);
  if (o) p->last = o;
  return o;
}

/* One of the lines its banner announced came for the dump open in o. */
static void counted(an_open* o) {
  if (o && o->d && o->announced && o->lines_left > 0) o->lines_left--;
}

static void set_origin(an_dump* d, const prefix* px) {
  if (!px->found) return;
  if (!d->host[0]) snprintf(d->host, sizeof d->host, "%s", px->host);
  if (!d->pid) d->pid = px->pid;
  if (d->dev < 0) d->dev = px->dev;
}

/* Opens a new dump in the line's stream, committing the one open there. */
static an_open* open_dump(an_parser* p, const prefix* px, uint32_t lineno) {
  uint64_t key = stream_key(px);
  an_open* o = key ? an_parser_find(p, key) : (p->last ? p->last : an_parser_find(p, 0));
  int trig = AN_TRIG_UNKNOWN;
  if (o) {
    trig = o->pending_trigger;
    an_parser_commit(p, o);
  }
  an_dump* d = an_dump_new(p->a, p->input, lineno, AN_FMT_TEXT);
  if (!d) return NULL;
  d->trigger = trig ? trig : AN_TRIG_HOOK;
  set_origin(d, px);
  if (!o) o = an_parser_open(p, key, NULL);
  if (!o) {
    an_dump_free(p->a, d);
    return NULL;
  }
  o->d = d;
  o->pending_trigger = 0;
  o->contract_header = 0;
  p->last = o;
  return o;
}

/* "proxytrace dump seq=7 trigger=stall time_ns=… host=… pid=… rank=…
 * nRanks=… commHash=… hostLib=…" */
static void contract_header(an_parser* p, const prefix* px, const char* s, uint32_t lineno) {
  an_open* o = open_dump(p, px, lineno);
  if (!o) return;
  an_dump* d = o->d;
  o->contract_header = 1;
  for (const char* w = s; *w;) {
    while (*w == ' ') w++;
    const char* e = w;
    while (*e && *e != ' ') e++;
    const char* eq = memchr(w, '=', (size_t)(e - w));
    if (eq) {
      char key[32], val[96];
      size_t kl = (size_t)(eq - w), vl = (size_t)(e - eq - 1);
      if (kl < sizeof key && vl < sizeof val) {
        memcpy(key, w, kl);
        key[kl] = 0;
        memcpy(val, eq + 1, vl);
        val[vl] = 0;
        if (!strcmp(key, "seq")) d->seq = strtoll(val, NULL, 10);
        else if (!strcmp(key, "trigger")) d->trigger = an_trigger_parse(val);
        else if (!strcmp(key, "time_ns")) d->time_ns = strtoll(val, NULL, 10);
        /* a log prefix, when there is one, said where first: the host's
         * logger names the node as the job sees it */
        else if (!strcmp(key, "host")) { if (!d->host[0]) an_copy(d->host, sizeof d->host, val); }
        else if (!strcmp(key, "pid")) { if (!d->pid) d->pid = atoi(val); }
        else if (!strcmp(key, "rank")) d->rank = atoi(val);
        else if (!strcmp(key, "nRanks")) d->nranks = atoi(val);
        else if (!strcmp(key, "nNodes")) d->nnodes = atoi(val);
        else if (!strcmp(key, "commHash")) {
          d->comm = strtoull(val, NULL, 10);
          d->has_comm = 1;
        } else if (!strcmp(key, "hostLib")) an_copy(d->host_lib, sizeof d->host_lib, val);
        else if (!strcmp(key, "stepUnit")) d->step_unit = an_unit_parse(val, strlen(val));
        else if (!strcmp(key, "stallMs")) d->stall_ms = strtoll(val, NULL, 10);
        else if (!strcmp(key, "lines")) {
          o->announced = 1;
          o->lines_left = strtoll(val, NULL, 10);
        }
      }
    }
    w = e;
  }
}

static void drop_line(an_dump* d, const char* s) {
  for (int i = 0; i < AN_DROP_COUNT; i++) {
    char key[40];
    snprintf(key, sizeof key, " %s:", an_drop_names[i]);
    const char* at = strstr(s, key);
    if (!at) continue;
    d->drops[i] = strtoll(at + strlen(key), NULL, 10);
    d->has_drops = 1;
  }
}

void an_legacy_line(an_parser* p, const char* line, size_t len, uint32_t lineno) {
  const char* rec = strstr(line, "createT:");
  const char* hit;
  prefix px;
  if (rec) {
    parse_prefix(line, (size_t)(rec - line), &px);
    if (an_parser_among_text(p, px.found, lineno)) return;
    an_op op;
    char why[160];
    if (p->unterminated) {
      /* The input ends inside this line: its last number may be cut short,
       * so the record is not taken, and its dump is incomplete. */
      an_open* o = stream(p, &px);
      if (o && o->d) o->d->cut = 1;
      an_input_error(p->a, p->input, lineno, "the input ends inside this record line (no line end): cut; skipped");
      return;
    }
    if (an_legacy_record(rec, len - (size_t)(rec - line), &op, why, sizeof why) != 0) {
      if (len >= 1000 && strstr(why, "cut"))
        snprintf(why + strlen(why), sizeof why - strlen(why), "; host loggers cut messages at 1 KiB");
      an_input_error(p->a, p->input, lineno, "%s", why);
      an_open* o = stream(p, &px);
      if (o && o->d) o->d->lost++;
      counted(o);
      return;
    }
    op.line = lineno;
    op.input = p->input;
    an_open* o = stream(p, &px);
    if (!o || !o->d) {
      if (!p->warned_headless++)
        an_input_error(p->a, p->input, lineno, "record lines without a 'commDump' header line: read as one dump");
      o = open_dump(p, &px, lineno);
      if (!o) return;
    }
    set_origin(o->d, &px);
    an_op* slot = an_dump_add_op(p->a, o->d);
    if (slot) *slot = op;
    counted(o);
    return;
  }
  int dump_line = 1; /* a line of a dump, not other text of a log */
  const char *type, *rest;
  if ((hit = strstr(line, "proxytrace dump seq=")) != NULL) {
    parse_prefix(line, (size_t)(hit - line), &px);
    if (an_parser_among_text(p, px.found, lineno)) return;
    contract_header(p, &px, hit + strlen("proxytrace dump "), lineno);
  } else if ((hit = strstr(line, "commDump for ")) != NULL) {
    parse_prefix(line, (size_t)(hit - line), &px);
    if (an_parser_among_text(p, px.found, lineno)) return;
    an_open* o = stream(p, &px);
    /* The plugin's own header line comes just before the legacy one. */
    if (o && o->d && o->contract_header == 1 && o->d->n_ops == 0) {
      o->contract_header = 2;
      counted(o);
    } else {
      o = open_dump(p, &px, lineno);
    }
    const char* ch = strstr(hit, "commDump for commHash:");
    if (o && o->d && ch) {
      o->d->comm = strtoull(ch + strlen("commDump for commHash:"), NULL, 10);
      o->d->has_comm = 1;
    }
  } else if ((hit = strstr(line, "proxytrace host:")) != NULL) {
    /* what the host did that the records cannot show: the mask it left
     * the proxy events out of, at this dump */
    parse_prefix(line, (size_t)(hit - line), &px);
    an_open* o = stream(p, &px);
    if (o && o->d && strstr(hit, "proxy events off")) o->d->mask_off = 1;
    if (o && o->d && strstr(hit, "mask: changed by the host")) o->d->mask_changed = 1;
    counted(o);
  } else if ((hit = strstr(line, "proxytrace dropped or refused events")) != NULL) {
    parse_prefix(line, (size_t)(hit - line), &px);
    an_open* o = stream(p, &px);
    if (o && o->d) drop_line(o->d, hit);
    counted(o);
  } else if ((type = an_progress_text_type(line, &rest)) != NULL) {
    /* the plugin's progress lines after the records (docs/dump-json.md;
     * progress.c): lines of the dump, so that one the input ends inside
     * cuts it */
    hit = strstr(line, "proxytrace ");
    parse_prefix(line, (size_t)(hit - line), &px);
    an_open* o = stream(p, &px);
    if (o && o->d && !p->unterminated) {
      an_fields f;
      an_progress_text_fields(&f, rest);
      if (an_progress_line(p->a, o->d, type, &f, lineno) != 0)
        an_input_error(p->a, p->input, lineno, "out of memory: a progress line is lost");
      counted(o);
    }
  } else if ((hit = strstr(line, "proxytrace: ")) != NULL && strstr(hit, " copied while the proxy thread ")) {
    /* which records were copied mid-write (the JSON's midWrite): a line of the dump */
    parse_prefix(line, (size_t)(hit - line), &px);
    counted(stream(p, &px));
  } else if ((hit = strstr(line, "ncclCommDump()")) != NULL || (hit = strstr(line, "commFree() ProxyTrace")) != NULL) {
    parse_prefix(line, (size_t)(hit - line), &px);
    if (an_parser_among_text(p, px.found, lineno)) return;
    uint64_t key = stream_key(&px);
    an_open* o = an_parser_find(p, key);
    if (o) an_parser_commit(p, o); /* the dump before it is over */
    else o = an_parser_open(p, key, NULL);
    if (o) {
      o->pending_trigger = hit[0] == 'n' ? AN_TRIG_API : AN_TRIG_HOOK;
      p->last = o;
    }
  } else {
    dump_line = 0;
    if (!p->accepted && !p->after_text) { /* prose, or a log line of the host? */
      parse_prefix(line, len < 256 ? len : 256, &px);
      p->after_text = !px.found;
    }
  }
  /* The input ends inside a header or drop line of a dump: what follows
   * it is lost, so the dump it opens or belongs to is cut. So it is when
   * the input ends inside any other line after a dump (the plugin ends
   * every line): a record cut before "createT:", or the progress lines
   * that follow the records. */
  if (p->unterminated && p->last && p->last->d) {
    p->last->d->cut = 1;
    an_input_error(p->a, p->input, lineno,
                   dump_line ? "the input ends inside this dump line (no line end): cut"
                             : "the input ends inside this line (no line end): the dump before it is cut");
  }
  (void)len;
}
