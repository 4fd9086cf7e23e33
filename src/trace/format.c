/*
 * format.c — legacy ProxyTrace text, byte for byte (format.h).
 *
 * The key and the record line are written by hand (numfmt.h) into one
 * buffer: the same bytes as the printf formats quoted above each routine,
 * several times faster (a dump prints one line per record). A caller's
 * buffer shorter than the longest line gets a truncated copy, as snprintf
 * would give; the return value is the full length either way.
 */
#include "trace/format.h"

#include <stdio.h>
#include <string.h>

#include "trace/numfmt.h"

/* Copies what fits of src[0..len) into buf (NUL-terminated, as snprintf). */
static int finish(char* buf, size_t n, const char* src, size_t len) {
  if (n) {
    size_t k = len < n ? len : n - 1;
    memmove(buf, src, k);
    buf[k] = 0;
  }
  return (int)len;
}

/* "<%llu:%lld:%lld>" */
char* pt_put_key(char* q, const pt_rec_view* v, pt_line_memo* memo) {
  *q++ = '<';
  q = pt_put_u64_memo(q, v->comm_hash, &memo->hash);
  *q++ = ':';
  q = pt_put_i64(q, v->op_count);
  *q++ = ':';
  q = pt_put_i64(q, v->op_id);
  *q++ = '>';
  return q;
}

int pt_format_key(char* buf, size_t n, const pt_rec_view* v) {
  char tmp[PT_KEY_MAX];
  char* p = n >= PT_KEY_MAX ? buf : tmp;
  pt_line_memo memo = {0};
  char* q = pt_put_key(p, v, &memo);
  *q = 0;
  return p == buf ? (int)(q - p) : finish(buf, n, tmp, (size_t)(q - p));
}

pt_status pt_rec_status(const pt_rec_view* v) {
  const int64_t* c = v->counters;
  return pt_status_of((pt_op_type)v->op_type, c[PT_CNT_POSTED], c[PT_CNT_RECEIVED],
                      c[PT_CNT_TRANSMITTED], c[PT_CNT_DONE], v->nsteps, v->window);
}

/* "createT:%lld, lastT:%lld, postT:%lld, sendT:%lld, cntNm:%d, %s, "
 * "[fu,pr,pa,tb,ck]:%d,%d,%d,%u,%u, %d->%d(%s), chan:%d, status:%s, ns:%d, nb:%u, "
 * "po:%lld, ke:%lld, tail/h:%lld, recvT:%lld, connSz/h:%lld, trans:%lld, flushed:%lld, "
 * "recvd:%lld, done:%lld" — the line legacy prints (RCCL src/misc/proxytrace.cc). */
char* pt_put_record(char* q, const pt_rec_view* v, const char* key, int my_rank, const pt_clock_cal* cal,
                    pt_line_memo* memo) {
  const int64_t* c = v->counters;
#define LIT(s) (memcpy(q, s, sizeof s - 1), q += sizeof s - 1)
  LIT("createT:");
  q = pt_put_i64_memo(q, pt_ticks_to_unix_ms(cal, v->t_create), &memo->t[0]);
  LIT(", lastT:");
  q = pt_put_i64_memo(q, pt_ticks_to_unix_ms(cal, v->t_last), &memo->t[1]);
  LIT(", postT:");
  q = pt_put_i64_memo(q, pt_ticks_to_unix_ms(cal, v->t_posted), &memo->t[2]);
  LIT(", sendT:");
  q = pt_put_i64_memo(q, pt_ticks_to_unix_ms(cal, v->t_kernel), &memo->t[3]);
  LIT(", cntNm:");
  q = pt_put_i64(q, v->last_kind);
  LIT(", ");
  if (key) {
    for (const char* k = key; *k && k < key + PT_KEY_MAX - 1; k++) *q++ = *k;
  } else {
    q = pt_put_key(q, v, memo);
  }
  LIT(", [fu,pr,pa,tb,ck]:");
  q = pt_put_i64(q, v->func_idx);
  *q++ = ',';
  q = pt_put_i64(q, v->protocol);
  *q++ = ',';
  q = pt_put_i64(q, v->pattern);
  *q++ = ',';
  q = pt_put_u64_same(q, v->total_bytes, &memo->size[1]);
  *q++ = ',';
  q = pt_put_u64_same(q, v->chunk_size, &memo->size[2]);
  LIT(", ");
  q = pt_put_i64(q, my_rank);
  LIT("->");
  q = pt_put_i64(q, v->peer);
  *q++ = '(';
  *q++ = v->op_type == PT_OP_SEND ? 'S' : 'R';
  LIT("), chan:");
  q = pt_put_i64(q, v->channel);
  LIT(", status:");
  q = pt_put_str(q, pt_status_name(pt_rec_status(v)));
  LIT(", ns:");
  q = pt_put_i64(q, v->nsteps);
  LIT(", nb:");
  q = pt_put_u64_same(q, v->nbytes, &memo->size[0]);
  LIT(", po:");
  q = pt_put_i64(q, c[PT_CNT_POSTED]);
  LIT(", ke:");
  q = pt_put_i64(q, c[PT_CNT_KERNEL_COPY_READY]);
  LIT(", tail/h:");
  q = pt_put_i64(q, c[PT_CNT_TAIL_OR_HEAD]);
  LIT(", recvT:");
  q = pt_put_i64(q, c[PT_CNT_RECV_TAIL]);
  LIT(", connSz/h:");
  q = pt_put_i64(q, c[PT_CNT_FIFO_SZ_OR_HEAD_CACHE]);
  LIT(", trans:");
  q = pt_put_i64(q, c[PT_CNT_TRANSMITTED]);
  LIT(", flushed:");
  q = pt_put_i64(q, c[PT_CNT_FLUSHED]);
  LIT(", recvd:");
  q = pt_put_i64(q, c[PT_CNT_RECEIVED]);
  LIT(", done:");
  q = pt_put_i64(q, c[PT_CNT_DONE]);
#undef LIT
  return q;
}

int pt_format_record(char* buf, size_t n, const pt_rec_view* v, const char* key, int my_rank,
                     const pt_clock_cal* cal) {
  char tmp[PT_LINE_MAX];
  char* p = n >= PT_LINE_MAX ? buf : tmp;
  pt_line_memo memo = {0};
  char* q = pt_put_record(p, v, key, my_rank, cal, &memo);
  *q = 0;
  return p == buf ? (int)(q - p) : finish(buf, n, tmp, (size_t)(q - p));
}

int pt_format_header(char* buf, size_t n, double map_size_mb) {
  return snprintf(buf, n, "commDump for all active ops mapSizeMB:%.2f", map_size_mb);
}
