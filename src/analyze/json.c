/*
 * json.c — one JSON object per line, without a library.
 *
 * The dump lines are flat objects with two nested ones ("counters",
 * "drops"), so a full document model would be waste: the parser walks the
 * text once, checks it against the JSON grammar (RFC 8259), and keeps every
 * scalar as a field named by its path ("counters.posted"). Numbers keep
 * their text, so 64-bit integers are read exactly (strtoll/strtoull), never
 * through a double. Strings are decoded (escapes, \u surrogate pairs) into
 * the object's own buffer. Array elements are named by index
 * ("faults.0.rank"). A path longer than 47 characters is cut. Nesting deeper
 * than 8 levels, more than AN_JSON_FIELDS fields, or strings beyond the
 * buffer are reported as errors rather than read halfway.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/internal.h"

typedef struct {
  const char* s;
  size_t len, pos;
  an_jobj* o;
  char* err;
  size_t errlen;
  int failed;
} jp;

static int fail(jp* p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(jp* p, const char* fmt, ...) {
  if (p->failed) return -1;
  p->failed = 1;
  char msg[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(p->err, p->errlen, "%s at column %zu", msg, p->pos + 1);
  return -1;
}

static void ws(jp* p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
    p->pos++;
  }
}

static int peek(jp* p) { return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1; }

static int put(jp* p, char c) {
  if (p->o->used + 1 >= sizeof p->o->buf) return fail(p, "strings too long");
  p->o->buf[p->o->used++] = c;
  return 0;
}

static int put_utf8(jp* p, unsigned cp) {
  if (cp < 0x80) return put(p, (char)cp);
  if (cp < 0x800) return put(p, (char)(0xC0 | (cp >> 6))) || put(p, (char)(0x80 | (cp & 0x3F)));
  if (cp < 0x10000)
    return put(p, (char)(0xE0 | (cp >> 12))) || put(p, (char)(0x80 | ((cp >> 6) & 0x3F))) ||
           put(p, (char)(0x80 | (cp & 0x3F)));
  return put(p, (char)(0xF0 | (cp >> 18))) || put(p, (char)(0x80 | ((cp >> 12) & 0x3F))) ||
         put(p, (char)(0x80 | ((cp >> 6) & 0x3F))) || put(p, (char)(0x80 | (cp & 0x3F)));
}

static int hex4(jp* p, unsigned* out) {
  if (p->pos + 4 > p->len) return fail(p, "cut \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return fail(p, "bad \\u escape");
  }
  *out = v;
  return 0;
}

/* Decodes a string at p->pos (on the quote) into the buffer; *out points
 * at it. */
static int string(jp* p, const char** out, size_t* n) {
  p->pos++; /* " */
  size_t start = p->o->used;
  for (;;) {
    /* a run of plain characters at once: most strings are nothing else */
    size_t run = p->pos;
    while (run < p->len && p->s[run] != '"' && p->s[run] != '\\' && (unsigned char)p->s[run] >= 0x20) run++;
    if (run > p->pos) {
      if (p->o->used + (run - p->pos) + 1 >= sizeof p->o->buf) return fail(p, "strings too long");
      memcpy(p->o->buf + p->o->used, p->s + p->pos, run - p->pos);
      p->o->used += run - p->pos;
      p->pos = run;
    }
    if (p->pos >= p->len) return fail(p, "unterminated string");
    unsigned char c = (unsigned char)p->s[p->pos++];
    if (c == '"') break;
    if (c < 0x20) return fail(p, "control character in string");
    if (c != '\\') {
      if (put(p, (char)c)) return -1;
      continue;
    }
    if (p->pos >= p->len) return fail(p, "unterminated string");
    char e = p->s[p->pos++];
    unsigned cp;
    switch (e) {
      case '"': case '\\': case '/': if (put(p, e)) return -1; break;
      case 'b': if (put(p, '\b')) return -1; break;
      case 'f': if (put(p, '\f')) return -1; break;
      case 'n': if (put(p, '\n')) return -1; break;
      case 'r': if (put(p, '\r')) return -1; break;
      case 't': if (put(p, '\t')) return -1; break;
      case 'u':
        if (hex4(p, &cp)) return -1;
        if (cp >= 0xD800 && cp < 0xDC00) {
          unsigned lo;
          if (p->pos + 2 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
            return fail(p, "lone surrogate in \\u escape");
          p->pos += 2;
          if (hex4(p, &lo)) return -1;
          if (lo < 0xDC00 || lo > 0xDFFF) return fail(p, "bad surrogate pair");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail(p, "lone surrogate in \\u escape");
        }
        if (put_utf8(p, cp)) return -1;
        break;
      default: return fail(p, "bad escape \\%c", e);
    }
  }
  if (put(p, 0)) return -1;
  *out = p->o->buf + start;
  *n = p->o->used - start - 1;
  return 0;
}

static int digits(jp* p) {
  size_t s = p->pos;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  return p->pos > s ? 0 : -1;
}

static int number(jp* p, const char** out, size_t* n) {
  size_t start = p->pos;
  if (peek(p) == '-') p->pos++;
  if (peek(p) == '0') p->pos++;
  else if (digits(p)) return fail(p, "bad number");
  if (peek(p) == '.') {
    p->pos++;
    if (digits(p)) return fail(p, "bad number");
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    p->pos++;
    if (peek(p) == '+' || peek(p) == '-') p->pos++;
    if (digits(p)) return fail(p, "bad number");
  }
  *out = p->s + start;
  *n = p->pos - start;
  return 0;
}

static int literal(jp* p, const char* word) {
  size_t n = strlen(word);
  if (p->pos + n > p->len || memcmp(p->s + p->pos, word, n) != 0) return fail(p, "unexpected character");
  p->pos += n;
  return 0;
}

static an_jfield* field(jp* p, const char* path) {
  if (p->o->n >= AN_JSON_FIELDS) {
    fail(p, "more than %d fields", AN_JSON_FIELDS);
    return NULL;
  }
  an_jfield* f = &p->o->f[p->o->n++];
  memset(f, 0, sizeof *f);
  an_copy(f->path, sizeof f->path, path);
  return f;
}

static int value(jp* p, const char* path, int depth);

/* "parent.key" (or "key" at the top) into out[n], cut to fit: this runs for
 * every key of every line. */
static void join(char* out, size_t n, const char* parent, const char* key, size_t kn) {
  size_t o = 0;
  for (; parent[o] && o + 1 < n; o++) out[o] = parent[o];
  if (o && o + 1 < n) out[o++] = '.';
  for (size_t i = 0; i < kn && o + 1 < n; i++) out[o++] = key[i];
  out[o] = 0;
}

static int object(jp* p, const char* path, int depth) {
  p->pos++; /* { */
  ws(p);
  if (peek(p) == '}') {
    p->pos++;
    return 0;
  }
  for (;;) {
    ws(p);
    if (peek(p) != '"') return fail(p, "expected a key");
    const char* key;
    size_t kn;
    if (string(p, &key, &kn)) return -1;
    char sub[48];
    join(sub, sizeof sub, path, key, kn);
    ws(p);
    if (peek(p) != ':') return fail(p, "expected ':'");
    p->pos++;
    ws(p);
    if (value(p, sub, depth + 1)) return -1;
    ws(p);
    int c = peek(p);
    p->pos++;
    if (c == '}') return 0;
    if (c != ',') {
      p->pos--;
      return fail(p, c < 0 ? "cut object (no closing brace)" : "expected ',' or '}'");
    }
  }
}

/* Elements are named by index: "faults.0", "faults.0.rank". */
static int array(jp* p, const char* path, int depth) {
  p->pos++; /* [ */
  ws(p);
  if (peek(p) == ']') {
    p->pos++;
    return 0;
  }
  for (int i = 0;; i++) {
    ws(p);
    char sub[48], idx[12];
    if (path) join(sub, sizeof sub, path, idx, (size_t)snprintf(idx, sizeof idx, "%d", i));
    if (value(p, path ? sub : NULL, depth + 1)) return -1;
    ws(p);
    int c = peek(p);
    p->pos++;
    if (c == ']') return 0;
    if (c != ',') {
      p->pos--;
      return fail(p, c < 0 ? "cut array" : "expected ',' or ']'");
    }
  }
}

/* path NULL: checked but not kept. */
static int value(jp* p, const char* path, int depth) {
  if (depth > 8) return fail(p, "nested too deeply");
  int c = peek(p);
  const char* s = NULL;
  size_t n = 0;
  an_jtype t;
  int truth = 0;
  if (c == '{') {
    if (path && !field(p, path)) return -1;
    if (path) p->o->f[p->o->n - 1].type = AN_JV_OBJ;
    return object(p, path ? path : "", depth);
  }
  if (c == '[') {
    if (path && !field(p, path)) return -1;
    if (path) p->o->f[p->o->n - 1].type = AN_JV_ARR;
    return array(p, path, depth);
  }
  if (c == '"') {
    if (string(p, &s, &n)) return -1;
    t = AN_JV_STR;
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    if (number(p, &s, &n)) return -1;
    t = AN_JV_NUM;
  } else if (c == 't') {
    if (literal(p, "true")) return -1;
    t = AN_JV_BOOL;
    truth = 1;
  } else if (c == 'f') {
    if (literal(p, "false")) return -1;
    t = AN_JV_BOOL;
  } else if (c == 'n') {
    if (literal(p, "null")) return -1;
    t = AN_JV_NULL;
  } else {
    return fail(p, c < 0 ? "cut line (value missing)" : "unexpected character");
  }
  if (!path) return 0;
  an_jfield* f = field(p, path);
  if (!f) return -1;
  f->type = t;
  f->s = s;
  f->n = n;
  f->truth = truth;
  return 0;
}

/* Is s one whole object: '{' first, its matching '}' last (blanks and a
 * "\r" around them aside)? Strings and escapes are skipped, nothing else is
 * checked: a line cut short, or one line of an object that a document
 * spreads over several, is not whole. */
int an_json_whole(const char* s, size_t len) {
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r')) len--;
  size_t i = 0;
  while (i < len && (s[i] == ' ' || s[i] == '\t')) i++;
  if (i == len || s[i] != '{') return 0;
  int depth = 0;
  for (; i < len; i++) {
    const char c = s[i];
    if (c == '"') {
      for (i++; i < len && s[i] != '"'; i++)
        if (s[i] == '\\') i++;
      if (i >= len) return 0;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i == len - 1;
    }
  }
  return 0;
}

int an_json_parse(const char* s, size_t len, an_jobj* o, char* err, size_t errlen) {
  jp p = {s, len, 0, o, err, errlen, 0};
  o->n = 0;
  o->used = 0;
  o->hint = 0;
  ws(&p);
  if (peek(&p) != '{') return fail(&p, "not a JSON object");
  if (object(&p, "", 0)) return -1;
  ws(&p);
  if (p.pos != len) return fail(&p, "text after the object");
  return 0;
}

/* Readers ask for fields mostly in the order they were written: the search
 * starts where the last one was found. */
const an_jfield* an_json_get(const an_jobj* o, const char* path) {
  an_jobj* m = (an_jobj*)o; /* the hint only */
  for (int k = 0; k < o->n; k++) {
    int i = (m->hint + k) % o->n;
    if (!strcmp(o->f[i].path, path)) {
      m->hint = i + 1 < o->n ? i + 1 : 0;
      return &o->f[i];
    }
  }
  return NULL;
}

int an_json_is_null(const an_jobj* o, const char* path) {
  const an_jfield* f = an_json_get(o, path);
  return f && f->type == AN_JV_NULL;
}

const char* an_json_str(const an_jobj* o, const char* path) {
  const an_jfield* f = an_json_get(o, path);
  return f && f->type == AN_JV_STR ? f->s : NULL;
}

/* An integer's text (no fraction or exponent) into a buffer. */
static int int_text(const an_jfield* f, char* buf, size_t n) {
  if (!f || f->n == 0 || f->n >= n) return -1;
  if (f->type != AN_JV_NUM && f->type != AN_JV_STR) return -1;
  for (size_t i = 0; i < f->n; i++) {
    char c = f->s[i];
    if (!(c >= '0' && c <= '9') && !(i == 0 && c == '-')) return -1;
  }
  memcpy(buf, f->s, f->n);
  buf[f->n] = 0;
  return 0;
}

int an_json_i64(const an_jobj* o, const char* path, int64_t* out) {
  const an_jfield* f = an_json_get(o, path);
  if (!f || f->type != AN_JV_NUM || f->n == 0 || f->n > 20) return -1;
  size_t i = f->s[0] == '-';
  if (i == f->n) return -1;
  uint64_t v = 0;
  for (; i < f->n; i++) {
    char c = f->s[i];
    if (c < '0' || c > '9') return -1; /* a fraction or an exponent: not an integer */
    uint64_t d = (uint64_t)(c - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  if (f->s[0] == '-') {
    if (v > (uint64_t)INT64_MAX + 1) return -1;
    *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
  } else {
    if (v > (uint64_t)INT64_MAX) return -1;
    *out = (int64_t)v;
  }
  return 0;
}

int an_json_u64(const an_jobj* o, const char* path, uint64_t* out) {
  const an_jfield* f = an_json_get(o, path);
  char buf[32];
  if (int_text(f, buf, sizeof buf) || buf[0] == '-') return -1;
  errno = 0;
  unsigned long long v = strtoull(buf, NULL, 10);
  if (errno) return -1;
  *out = v;
  return 0;
}

int an_json_f64(const an_jobj* o, const char* path, double* out) {
  const an_jfield* f = an_json_get(o, path);
  if (!f || f->type != AN_JV_NUM || f->n >= 64) return -1;
  char buf[64];
  memcpy(buf, f->s, f->n);
  buf[f->n] = 0;
  *out = strtod(buf, NULL);
  return 0;
}
