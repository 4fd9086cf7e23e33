/*
 * test_seqlock.c — the record seqlock on real threads: one writer rewrites a
 * record as fast as it can, every field set to the version number, while
 * readers copy it with pt_rec_read; an accepted copy must have every field
 * equal to the version its sequence names (sequence / 2).
 *
 * On x86 (and under an emulator on x86) this cannot fail even with a fence
 * removed: the machine keeps loads and stores in order. It is the check for
 * aarch64 hardware, whose reordering is what the fences are for — there, run
 * it for longer: PT_SEQLOCK_STRESS_MS=60000 build/tests/unit/test_seqlock.
 * The orders themselves are proven by the model check
 * (tests/model/seqlock_model.cpp), which fails when any one is weakened.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "trace/record.h"

static pt_rec rec;
static atomic_int stop;

static void fill(pt_rec_view* v, int64_t x) {
  memset(v, 0, sizeof *v);
  v->op_type = (uint8_t)(x & 1);
  v->last_kind = (uint8_t)x;
  v->channel = v->nsteps = v->peer = v->func_idx = v->protocol = v->pattern = (int32_t)x;
  v->nbytes = v->total_bytes = v->chunk_size = (uint32_t)x;
  v->comm_hash = (uint64_t)x;
  v->op_count = v->op_id = x;
  for (int k = 0; k < PT_CNT_NUM; k++) v->counters[k] = x;
  v->t_create = v->t_last = v->t_posted = v->t_kernel = v->t_progress = (uint64_t)x;
}

/* Every field of the copy is version x. */
static int is_version(const pt_rec_view* v, int64_t x) {
  int ok = v->op_type == (uint8_t)(x & 1) && v->last_kind == (uint8_t)x &&
           v->channel == (int32_t)x && v->nsteps == (int32_t)x && v->peer == (int32_t)x &&
           v->func_idx == (int32_t)x && v->protocol == (int32_t)x && v->pattern == (int32_t)x &&
           v->nbytes == (uint32_t)x && v->total_bytes == (uint32_t)x &&
           v->chunk_size == (uint32_t)x && v->comm_hash == (uint64_t)x && v->op_count == x &&
           v->op_id == x && v->t_create == (uint64_t)x && v->t_last == (uint64_t)x &&
           v->t_posted == (uint64_t)x && v->t_kernel == (uint64_t)x &&
           v->t_progress == (uint64_t)x;
  for (int k = 0; k < PT_CNT_NUM; k++) ok = ok && v->counters[k] == x;
  return ok;
}

static void* writer(void* p) {
  long* writes = p;
  pt_rec_view v;
  int64_t x = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    fill(&v, ++x);
    const uint32_t w_ = pt_rec_write_begin(&rec);
    pt_rec_from_view(&rec, &v);
    pt_rec_write_end(&rec, w_);
  }
  *writes = (long)x;
  return NULL;
}

typedef struct {
  long accepted, torn;
} reader_result;

static void* reader(void* p) {
  reader_result* r = p;
  pt_rec_view v;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    uint32_t version;
    if (pt_rec_read(&rec, &v, NULL, NULL, &version) != 0) continue;
    r->accepted++;
    if (!is_version(&v, (int64_t)(version / 2))) r->torn++;
  }
  return NULL;
}

static void test_readers_never_accept_a_torn_copy(void** state) {
  (void)state;
  const char* e = getenv("PT_SEQLOCK_STRESS_MS");
  long ms = e ? atol(e) : 300;
  pt_rec_view v0;
  fill(&v0, 0);
  pt_rec_from_view(&rec, &v0);
  atomic_store(&stop, 0);
  enum { READERS = 2 };
  pthread_t w, r[READERS];
  reader_result res[READERS];
  memset(res, 0, sizeof res);
  long writes = 0;
  assert_int_equal(pthread_create(&w, NULL, writer, &writes), 0);
  for (int i = 0; i < READERS; i++) assert_int_equal(pthread_create(&r[i], NULL, reader, &res[i]), 0);
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&d, NULL);
  atomic_store(&stop, 1);
  pthread_join(w, NULL);
  long accepted = 0, torn = 0;
  for (int i = 0; i < READERS; i++) {
    pthread_join(r[i], NULL);
    accepted += res[i].accepted;
    torn += res[i].torn;
  }
  printf("# %ld ms: %ld writes, %ld copies accepted, %ld torn\n", ms, writes, accepted, torn);
  assert_int_equal(torn, 0);
  assert_true(writes > 0);
  assert_true(accepted > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_readers_never_accept_a_torn_copy),
  };
  return cmocka_run_group_tests_name("seqlock", tests, NULL, NULL);
}
