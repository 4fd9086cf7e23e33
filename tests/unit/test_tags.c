/*
 * test_tags.c — userTags (trace.h): the per-trace table of distinct tags,
 * the reference a task handle and an op record carry, what a dump says of
 * a lost one, and the host notes of the dump header.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "proxytrace/trace.h"

static pt_trace* trace(void) {
  pt_trace* t = NULL;
  assert_int_equal(pt_trace_create(&t, NULL, 0), 0);
  return t;
}

static void test_refs(void** state) {
  (void)state;
  pt_trace* t = trace();
  assert_int_equal(pt_trace_tag_ref(t, 0), 0); /* untagged: nothing allocated */
  uint64_t tag = 1;
  assert_int_equal(pt_trace_tag_of(t, 0, &tag), 0);
  const uint32_t a = pt_trace_tag_ref(t, 0xabc), b = pt_trace_tag_ref(t, 1ull << 62);
  assert_true(a >= 1 && a <= PT_TAG_MAX && b >= 1 && b <= PT_TAG_MAX);
  assert_int_not_equal(a, b);
  assert_int_equal(pt_trace_tag_ref(t, 0xabc), a); /* the same tag, the same reference */
  assert_int_equal(pt_trace_tag_of(t, a, &tag), 1);
  assert_int_equal(tag, 0xabc);
  assert_int_equal(pt_trace_tag_of(t, b, &tag), 1);
  assert_int_equal(tag, 1ull << 62);
  /* Fill the table: past PT_TAG_MAX distinct tags a task's tag is lost. */
  for (uint64_t i = 0; i < PT_TAG_MAX; i++) pt_trace_tag_ref(t, 0x10000 + i);
  assert_int_equal(pt_trace_tag_ref(t, 0xfeedull << 32), PT_TAG_REF_LOST);
  assert_int_equal(pt_trace_tag_of(t, PT_TAG_REF_LOST, &tag), -1);
  assert_int_equal(pt_trace_tag_ref(t, 0xabc), a); /* those seen keep theirs */
  assert_int_equal(pt_trace_tag_ref(NULL, 5), 0);
  pt_trace_destroy(t);
}

/* A task handle carries the reference beside its function and sequence. */
static void test_task_handle(void** state) {
  (void)state;
  void* h = pt_task_handle_tagged(0, 4, 7, 0x3ff);
  assert_true(pt_is_task_handle(h));
  int64_t oc;
  assert_int_equal(pt_task_op_count(h, &oc), PT_ORIGIN_COLL);
  assert_int_equal(oc, 7 * PT_FUNC_NUM + 4);
  assert_int_equal(pt_task_tag_ref(h), 0x3ff);
  assert_int_equal(pt_task_tag_ref(pt_task_handle(1, PT_FUNC_SEND, 9)), 0);
  assert_int_equal(pt_task_tag_ref((void*)0x1000), 0); /* not a task handle */
  const uint64_t big = (1ull << PT_TASK_SEQ_BITS) - 1; /* the sequence keeps its bits */
  assert_int_equal(pt_task_op_count(pt_task_handle_tagged(1, 5, big, PT_TAG_REF_LOST), &oc), PT_ORIGIN_P2P);
  assert_int_equal(oc, (int64_t)(big * PT_FUNC_NUM + PT_FUNC_SENDRECV));
}

/* The op's record keeps the reference; the JSON line says the tag. */
static void line(void* arg, const char* l, int len) {
  char* out = arg;
  if (strlen(out) + (size_t)len + 2 < 8192) {
    strncat(out, l, (size_t)len);
    strcat(out, "\n");
  }
}

static void test_record_and_json(void** state) {
  (void)state;
  pt_trace* t = trace();
  pt_op_info info = {.comm_hash = 9, .op_count = -1, .channel = 0, .peer = 1, .nsteps = 4, .is_send = 1,
                     .func_idx = -1, .protocol = -1, .pattern = -1, .step_driven = 1};
  info.tag_ref = pt_trace_tag_ref(t, 0x1234);
  pt_op_register(pt_op_start(t, &info));
  info.tag_ref = PT_TAG_REF_LOST;
  info.peer = 2;
  pt_op_register(pt_op_start(t, &info));
  info.tag_ref = 0;
  info.peer = 3;
  pt_op_register(pt_op_start(t, &info));
  pt_dump* d = pt_trace_snapshot(t);
  assert_non_null(d);
  static char out[8192];
  out[0] = 0;
  pt_dump_meta m = {.host = "h", .host_lib = "nccl", .trigger = "api"};
  pt_dump_json(d, &m, line, out);
  assert_non_null(strstr(out, "\"peer\":1,"));
  const char* one = strstr(out, "\"userTag\":\"0x1234\"");
  assert_non_null(one);
  assert_non_null(strstr(out, "\"userTag\":\"unknown\""));
  int tags = 0;
  for (const char* q = out; (q = strstr(q, "\"userTag\"")); q++) tags++;
  assert_int_equal(tags, 2); /* the untagged op has none */
  assert_non_null(strstr(out, "\"diag\":\"ok\",\"maskChangedByHost\":false"));
  pt_dump_free(d);
  pt_trace_destroy(t);
}

static void test_notes(void** state) {
  (void)state;
  pt_trace* t = trace();
  pt_trace* u = trace();
  char buf[256];
  assert_int_equal(pt_format_notes(buf, sizeof buf, pt_trace_notes(t)), 0);
  pt_trace_note(t, PT_NOTE_MASK_CHANGED);
  assert_int_equal(pt_trace_notes(u), 0); /* per trace */
  assert_true(pt_format_notes(buf, sizeof buf, pt_trace_notes(t)) > 0);
  assert_string_equal(buf, "proxytrace host: mask: changed by the host");
  pt_trace_note(t, PT_NOTE_DIAG_MISSING | PT_NOTE_DIAG_MISMATCH);
  pt_format_notes(buf, sizeof buf, pt_trace_notes(t));
  assert_non_null(strstr(buf, "diag: mismatch")); /* the stronger of the two */
  assert_null(strstr(buf, "missing"));
  assert_non_null(strstr(buf, " mask: changed by the host"));
  assert_true(pt_format_notes(buf, 8, pt_trace_notes(t)) == 7); /* cut, terminated */
  /* the text dump prints the line right after its header */
  static char out[8192];
  out[0] = 0;
  pt_trace_dump(t, line, out);
  const char* nl = strchr(out, '\n');
  assert_non_null(nl);
  assert_memory_equal(nl + 1, "proxytrace host: diag: mismatch", 31);
  pt_trace_destroy(t);
  pt_trace_destroy(u);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refs),
      cmocka_unit_test(test_task_handle),
      cmocka_unit_test(test_record_and_json),
      cmocka_unit_test(test_notes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
