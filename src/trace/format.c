/*
 * format.c — legacy ProxyTrace text, byte for byte (format.h).
 */
#include "trace/format.h"

#include <stdio.h>

int pt_format_key(char* buf, size_t n, const pt_rec_view* v) {
  return snprintf(buf, n, "<%llu:%lld:%lld>", (unsigned long long)v->comm_hash,
                  (long long)v->op_count, (long long)v->op_id);
}

pt_status pt_rec_status(const pt_rec_view* v) {
  const int64_t* c = v->counters;
  return pt_status_of((pt_op_type)v->op_type, c[PT_CNT_POSTED], c[PT_CNT_RECEIVED],
                      c[PT_CNT_TRANSMITTED], c[PT_CNT_DONE], v->nsteps, v->window);
}

int pt_format_record(char* buf, size_t n, const pt_rec_view* v, const char* key, int my_rank,
                     const pt_clock_cal* cal) {
  const int64_t* c = v->counters;
  pt_status st = pt_rec_status(v);
  return snprintf(
      buf, n,
      "createT:%lld, lastT:%lld, postT:%lld, sendT:%lld, cntNm:%d, %s, "
      "[fu,pr,pa,tb,ck]:%d,%d,%d,%u,%u, %d->%d(%s), chan:%d, status:%s, ns:%d, nb:%u, "
      "po:%lld, ke:%lld, tail/h:%lld, recvT:%lld, connSz/h:%lld, trans:%lld, flushed:%lld, "
      "recvd:%lld, done:%lld",
      (long long)pt_ticks_to_unix_ms(cal, v->t_create), (long long)pt_ticks_to_unix_ms(cal, v->t_last),
      (long long)pt_ticks_to_unix_ms(cal, v->t_posted), (long long)pt_ticks_to_unix_ms(cal, v->t_kernel),
      (int)v->last_kind, key, v->func_idx, v->protocol, v->pattern, v->total_bytes, v->chunk_size,
      my_rank, v->peer, v->op_type == PT_OP_SEND ? "S" : "R", v->channel, pt_status_name(st),
      v->nsteps, v->nbytes, (long long)c[PT_CNT_POSTED], (long long)c[PT_CNT_KERNEL_COPY_READY],
      (long long)c[PT_CNT_TAIL_OR_HEAD], (long long)c[PT_CNT_RECV_TAIL],
      (long long)c[PT_CNT_FIFO_SZ_OR_HEAD_CACHE], (long long)c[PT_CNT_TRANSMITTED],
      (long long)c[PT_CNT_FLUSHED], (long long)c[PT_CNT_RECEIVED], (long long)c[PT_CNT_DONE]);
}

int pt_format_header(char* buf, size_t n, double map_size_mb) {
  return snprintf(buf, n, "commDump for all active ops mapSizeMB:%.2f", map_size_mb);
}
