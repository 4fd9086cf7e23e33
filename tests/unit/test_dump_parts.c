/*
 * test_dump_parts.c — the pieces of a dump on their own: task handles and
 * the opCounts they give stock NCCL ops, the p2p sequences, the stall
 * watchdog's inputs, the JSON and the banner of a snapshot, the parsing of
 * the new variables, and a dump file that hits a full disk (/dev/full).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/plugin.h"
#include "proxytrace/trace.h"
#include "trace/clock.h"

/* ---- task handles ---- */

static void test_task_handles(void** state) {
  (void)state;
  int on_stack;
  void* heap = malloc(16);
  const void* real[] = {NULL, &on_stack, heap, pt_group_handle(), (void*)(uintptr_t)0x7fffffffffffull};
  for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
    assert_false(pt_is_task_handle(real[i]));
    int64_t oc = 7;
    assert_int_equal(pt_task_op_count(real[i], &oc), PT_ORIGIN_NONE);
    assert_int_equal(oc, -1);
  }
  free(heap);
  int64_t oc;
  void* coll = pt_task_handle(0, 4, 3); /* AllReduce, seqNumber 3 */
  assert_true(pt_is_task_handle(coll));
  assert_int_equal(pt_handle_kind(coll), PT_HANDLE_TASK);
  assert_int_equal(pt_task_op_count(coll, &oc), PT_ORIGIN_COLL);
  assert_int_equal(oc, 3 * 16 + 4);
  /* p2p: Send and Recv give the same opCount for the same sequence */
  int64_t a, b;
  assert_int_equal(pt_task_op_count(pt_task_handle(1, PT_FUNC_SEND, 9), &a), PT_ORIGIN_P2P);
  assert_int_equal(pt_task_op_count(pt_task_handle(1, PT_FUNC_RECV, 9), &b), PT_ORIGIN_P2P);
  assert_int_equal(a, 9 * 16 + PT_FUNC_SENDRECV);
  assert_int_equal(a, b);
  /* the largest sequence fits; functions keep apart */
  const uint64_t big = (1ull << PT_TASK_SEQ_BITS) - 1;
  assert_int_equal(pt_task_op_count(pt_task_handle(0, 2, big), &oc), PT_ORIGIN_COLL);
  assert_int_equal(oc, (int64_t)(big * 16 + 2));
  assert_int_equal(pt_func_code("AllReduce"), 4);
  assert_int_equal(pt_func_code("WaitSignal"), 14);
  assert_int_equal(pt_func_code("Nope"), PT_FUNC_UNKNOWN);
  assert_int_equal(pt_func_code(NULL), PT_FUNC_UNKNOWN);
  assert_string_equal(pt_func_name(4), "AllReduce");
  assert_string_equal(pt_func_name(PT_FUNC_UNKNOWN), "?");
  /* stopping a task handle is nothing; a state on it is refused, counted */
  pt_handle_stop(coll);
  pt_handle_count(coll, PT_DROP_BAD_STATE);
}

/* The names of a task resolve exactly, as strcmp would, also where the
 * host hands the same address again with other text in it (a reused
 * buffer: the lookups remember addresses), a name that is a prefix or an
 * extension of a known one, and a name that ends at the last byte of a
 * readable page (the comparison reads words, never past the page). */
static void test_task_names_exact(void** state) {
  (void)state;
  char buf[32];
  strcpy(buf, "ncclFloat32");
  assert_int_equal(pt_dtype_code(buf), 7);
  assert_int_equal(pt_dtype_code(buf), 7); /* the remembered address */
  strcpy(buf, "ncclFloat16"); /* the same address, other text (byte 9) */
  assert_int_equal(pt_dtype_code(buf), 6);
  strcpy(buf, "ncclFloat1");
  assert_int_equal(pt_dtype_code(buf), PT_CODE_NONE);
  strcpy(buf, "ncclFloat16x");
  assert_int_equal(pt_dtype_code(buf), PT_CODE_NONE);
  strcpy(buf, "COLLNET_DIRECT"); /* 15 bytes with its terminator: both words */
  assert_int_equal(pt_algo_code(buf), 2);
  strcpy(buf, "COLLNET_DIRECU");
  assert_int_equal(pt_algo_code(buf), PT_CODE_NONE);
  strcpy(buf, "COLLNET_DIRECT");
  assert_int_equal(pt_algo_code(buf), 2);
  strcpy(buf, "LL128");
  assert_int_equal(pt_proto_code(buf), 1);
  buf[2] = 0; /* "LL" at the same address */
  assert_int_equal(pt_proto_code(buf), 0);
  /* all four in one call, as the Coll and P2p events take them */
  assert_int_equal(pt_task_codes("AllGather", "ncclBfloat16", "RING", "SIMPLE"), 2u | 9u << 8 | 1u << 16 | 2u << 24);
  assert_int_equal(pt_task_codes("Send", "ncclInt8", NULL, NULL),
                   (uint32_t)PT_FUNC_SEND | 0u << 8 | (uint32_t)PT_CODE_NONE << 16 | (uint32_t)PT_CODE_NONE << 24);
  assert_int_equal(pt_task_codes(NULL, "nope", NULL, NULL) & 0xffff, PT_FUNC_UNKNOWN | PT_CODE_NONE << 8);
  /* a name ending at the last byte of a page followed by an unreadable one */
  const long page = sysconf(_SC_PAGESIZE);
  char* two = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(two != MAP_FAILED);
  assert_int_equal(mprotect(two + page, (size_t)page, PROT_NONE), 0);
  for (int len = 1; len <= 16; len++) { /* every distance from the page's end */
    char* at = two + page - len;
    memset(two + page - 16, 'x', 16);
    memcpy(at, "RING", len - 1 < 4 ? (size_t)len - 1 : 4); /* "", "R", … "RING", "RINGx", … */
    at[len - 1] = 0;
    const int want = len == 5 ? 1 : PT_CODE_NONE;
    assert_int_equal(pt_algo_code(at), want);
    assert_int_equal(pt_algo_code(at), want); /* the remembered address */
  }
  munmap(two, (size_t)page * 2);
}

/* ---- a context, stock ops, the watchdog's inputs, JSON ---- */

static char logged[8192];
static int logged_lines;
static void capture(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                    const char* fmt, ...) {
  (void)level;
  (void)flags;
  (void)file;
  (void)line;
  va_list ap;
  va_start(ap, fmt);
  size_t n = strlen(logged);
  vsnprintf(logged + n, sizeof logged - n, fmt, ap);
  va_end(ap);
  n = strlen(logged);
  if (n + 1 < sizeof logged) strcat(logged, "\n");
  logged_lines++;
}

typedef struct {
  char buf[16384];
  int lines;
} sinkbuf;
static void count_lines(void* arg, const char* line, int len) {
  (void)line;
  (void)len;
  ++*(int*)arg;
}

static void to_buf(void* arg, const char* line, int len) {
  sinkbuf* s = arg;
  size_t n = strlen(s->buf);
  snprintf(s->buf + n, sizeof s->buf - n, "%.*s\n", len, line);
  s->lines++;
}

static pt_ctx* new_ctx(void) {
  setenv("PROXYTRACE_STALL_MS", "0", 1);
  unsetenv("PROXYTRACE_DUMP_DIR");
  pt_ctx* c = pt_ctx_create(77, "unit", 1, 4, 2, 4, capture);
  assert_non_null(c);
  return c;
}

static void test_stock_ops_and_watchdog_inputs(void** state) {
  (void)state;
  pt_ctx* c = new_ctx();
  assert_int_equal(pt_trace_waiting_ops(c->trace), 0);
  assert_int_equal(pt_trace_last_progress(c->trace), 0);
  /* p2p sequences: per peer and direction, from 0 */
  assert_int_equal(pt_ctx_p2p_next(c, 1, 0), 0);
  assert_int_equal(pt_ctx_p2p_next(c, 1, 0), 1);
  assert_int_equal(pt_ctx_p2p_next(c, 1, 1), 0);
  assert_int_equal(pt_ctx_p2p_next(c, 3, 0), 0);
  assert_int_equal(pt_ctx_p2p_next(c, 4, 0), -1); /* beyond nranks */
  assert_int_equal(pt_ctx_p2p_next(c, -1, 0), -1);
  const pt_task_info recv = {.is_p2p = 1, .func = PT_FUNC_RECV, .dtype = PT_CODE_NONE, .root_or_peer = 1};
  const pt_task_info rs = {.func = (uint8_t)pt_func_code("ReduceScatter"), .seq = 12};
  const pt_task_info ar = {.func = 4, .seq = 1};
  void* p2p = pt_event_p2p_start(c, -1, &recv, 0);
  void* coll = pt_event_coll_start(c, -1, &rs, 0);
  assert_null(pt_event_coll_start(NULL, 0, &ar, 0)); /* no context: no handle */
  void* op1 = pt_event_stock_op_start(c, pt_self_pid(), 2, 1, 1, 4, 4096, 0, p2p);
  void* op2 = pt_event_stock_op_start(c, pt_self_pid(), 2, 0, 3, 4, 4096, 1, coll);
  void* op3 = pt_event_stock_op_start(c, pt_self_pid(), 2, 0, 3, 4, 4096, 1, NULL);
  assert_null(pt_event_stock_op_start(c, pt_self_pid() + 1, 2, 0, 3, 4, 4096, 1, coll)); /* PXN */
  pt_op_register(op1);
  pt_op_register(op2);
  pt_op_register(op3);
  assert_int_equal(pt_trace_waiting_ops(c->trace), 3);
  const uint64_t t1 = pt_trace_last_progress(c->trace);
  assert_true(t1 > 0);
  void* s = pt_step_start(c->trace, op2, 0); /* a send step posts: progress */
  pt_step_state(s, 9, -1);
  assert_true(pt_trace_last_progress(c->trace) >= t1);
  pt_handle_stop(op3); /* stopped before completing: no longer waited on */
  assert_int_equal(pt_trace_waiting_ops(c->trace), 2);
  pt_dump* d = pt_trace_snapshot(c->trace);
  assert_non_null(d);
  assert_int_equal(pt_dump_active(d), 3);
  assert_int_equal(pt_dump_origins(d), (1u << PT_ORIGIN_P2P) | (1u << PT_ORIGIN_COLL) | (1u << PT_ORIGIN_NONE));
  pt_dump_meta m = {.host = "node\"0", .pid = 42, .nranks = 4, .nnodes = 1, .comm_hash = 18446744073709551615ull,
                    .comm_name = "unit", .host_lib = "nccl", .profiler_api = 4, .trigger = "stall", .seq = 7,
                    .round = 3, .stall_ms = 10000, .last_progress_ticks = pt_trace_last_progress(c->trace)};
  sinkbuf js = {.lines = 0}, tx = {.lines = 0};
  /* header, 3 ops, 3 progress lines (progress, coll, p2p), end */
  assert_int_equal(pt_dump_json(d, &m, to_buf, &js), 8);
  /* header, drops (the PXN op), 3 ops, the same 3 progress lines */
  assert_int_equal(pt_dump_text(d, to_buf, &tx), 8);
  assert_non_null(strstr(tx.buf, "proxytrace coll: rank=2 seq=12 func=ReduceScatter"));
  assert_non_null(strstr(tx.buf, "proxytrace p2p: rank=2 seq=1 func=Recv count=0 peer=1"));
  assert_non_null(strstr(js.buf, "{\"type\":\"progress\",\"dumpSeq\":7,\"rank\":2,\"colls\":1,\"p2ps\":1,"));
  assert_non_null(strstr(tx.buf, "foreignPid:1"));
  assert_non_null(strstr(js.buf, "\"foreignPid\":1"));
  /* the same records, in the same order, in both */
  assert_non_null(strstr(js.buf, "\"commHash\":\"18446744073709551615\""));
  assert_non_null(strstr(js.buf, "\"host\":\"node\\\"0\""));
  assert_non_null(strstr(js.buf, "\"opCount\":21,\"opId\":0,\"key\":\"<77:21:0>\""));
  assert_non_null(strstr(js.buf, "\"opCountFrom\":\"p2p\",\"coll\":\"Recv\",\"seq\":1"));
  assert_non_null(strstr(js.buf, "\"opCount\":195")); /* 12 * 16 + 3 */
  assert_non_null(strstr(js.buf, "\"coll\":\"ReduceScatter\",\"seq\":12"));
  assert_non_null(strstr(js.buf, "\"opCountFrom\":\"none\",\"coll\":null,\"seq\":null"));
  assert_non_null(strstr(js.buf, "\"state\":\"detached\""));
  assert_non_null(strstr(js.buf, "{\"type\":\"end\",\"dumpSeq\":7,\"records\":3}"));
  assert_non_null(strstr(tx.buf, "<77:195:0>"));
  assert_non_null(strstr(tx.buf, "<77:21:0>"));
  assert_non_null(strstr(tx.buf, "<77:-1:0>"));
  const char* a = strstr(js.buf, "<77:-1:0>");
  const char* b = strstr(js.buf, "<77:195:0>");
  assert_true(a && b && a < b); /* sorted by key string, as the text */
  char banner[512];
  int n = pt_dump_banner(d, &m, banner, sizeof banner);
  assert_int_equal(n, (int)strlen(banner));
  assert_non_null(strstr(banner, "proxytrace dump seq=7 trigger=stall time_ns="));
  assert_non_null(strstr(banner, " pid=42 rank=2 nRanks=4 commHash=18446744073709551615 hostLib=nccl lines="));
  /* the lines the text dump has after the banner, each emitted */
  int emitted = 0;
  pt_dump_text(d, count_lines, &emitted);
  assert_true(emitted > 3);
  assert_int_equal(atoi(strstr(banner, " lines=") + 7), emitted);
  /* the unit of the stock ops' steps: the profiler API's (v4: transfers),
   * in the banner, the header and every op; v1 (NCCL 2.23): raw steps */
  assert_non_null(strstr(banner, " stepUnit=transfers"));
  assert_non_null(strstr(js.buf, "\"maskOff\":false,\"stepUnit\":\"transfers\","));
  assert_non_null(strstr(js.buf, "\"nSteps\":4,\"stepUnit\":\"transfers\","));
  assert_null(strstr(js.buf, "rawSteps"));
  /* host.c's table: v1 (2.23) raw steps, v2-v7 network transfers */
  assert_int_equal(pt_api_raw_steps(1), 1);
  for (int api = 2; api <= 7; api++) assert_int_equal(pt_api_raw_steps(api), 0);
  m.stock_raw_steps = pt_api_raw_steps(1);
  pt_dump_banner(d, &m, banner, sizeof banner);
  assert_non_null(strstr(banner, " stepUnit=rawSteps"));
  sinkbuf raw = {.lines = 0};
  pt_dump_json(d, &m, to_buf, &raw);
  assert_null(strstr(raw.buf, "transfers"));
  assert_non_null(strstr(raw.buf, "\"maskOff\":false,\"stepUnit\":\"rawSteps\","));
  pt_dump_free(d);
  pt_ctx_destroy(c);
}

/* A full disk: the dump is lost, counted and said once; recording goes on. */
static void test_full_disk(void** state) {
  (void)state;
  pt_ctx* c = new_ctx();
  void* op = pt_event_stock_op_start(c, pt_self_pid(), 2, 0, 1, 4, 4096, 1, NULL);
  pt_op_register(op);
  int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
  assert_true(full >= 0);
  logged[0] = 0;
  logged_lines = 0;
  const uint64_t lost0 = pt_sink_lost();
  assert_int_equal(pt_sink_write_fds(c, PT_TRIG_SIGNAL, full, full), -2);
  assert_int_equal(pt_sink_write_fds(c, PT_TRIG_SIGNAL, full, full), -2);
  close(full);
  assert_int_equal(pt_sink_lost(), lost0 + 2);
  assert_int_equal(logged_lines, 1);
  assert_non_null(strstr(logged, "no room for dump files"));
  /* Recording goes on, and the next dump that fits is written whole. */
  void* s = pt_step_start(c->trace, op, 0);
  pt_handle_stop(s);
  char path[] = "/tmp/pt-unit-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(pt_sink_write_fds(c, PT_TRIG_SIGNAL, fd, fd), 0);
  char buf[8192] = {0};
  assert_true(pread(fd, buf, sizeof buf - 1, 0) > 0);
  close(fd);
  unlink(path);
  assert_non_null(strstr(buf, "done:1"));
  char lost[64];
  snprintf(lost, sizeof lost, "\"lostDumps\":%llu", (unsigned long long)(lost0 + 2));
  assert_non_null(strstr(buf, lost));
  pt_ctx_destroy(c);
}

/* ---- variables ---- */

static void test_dump_variables(void** state) {
  (void)state;
  assert_int_equal(pt_parse_signal("USR1"), SIGUSR1);
  assert_int_equal(pt_parse_signal("sigusr2"), SIGUSR2);
  assert_int_equal(pt_parse_signal("10"), 10);
  assert_int_equal(pt_parse_signal("SIGRTMIN"), -1);
  assert_int_equal(pt_parse_signal("9"), -1);  /* KILL */
  assert_int_equal(pt_parse_signal("11"), -1); /* SEGV */
  assert_int_equal(pt_parse_signal("0"), -1);
  assert_int_equal(pt_parse_signal("999"), -1);
  assert_int_equal(pt_parse_signal(""), -1);
  setenv("PROXYTRACE_STALL_MS", "2500", 1);
  setenv("PROXYTRACE_DUMP_INTERVAL_MS", "soon", 1);
  setenv("PROXYTRACE_DUMP_SIGNAL", "KILL", 1);
  setenv("PROXYTRACE_DUMP_DIR", "/tmp/x", 1);
  logged[0] = 0;
  pt_plugin_config cfg;
  pt_config_load(&cfg, capture);
  assert_int_equal(cfg.stall_ms, 2500);
  assert_int_equal(cfg.interval_ms, 0);
  assert_int_equal(cfg.dump_signal, 0);
  assert_string_equal(cfg.dump_dir, "/tmp/x");
  assert_non_null(strstr(logged, "PROXYTRACE_DUMP_INTERVAL_MS='soon' is not a whole number of milliseconds in 0..86400000 (0 = off); using the default 0"));
  assert_non_null(strstr(logged, "PROXYTRACE_DUMP_SIGNAL='KILL' is not USR1, USR2 or a signal number"));
  setenv("PROXYTRACE_STALL_MS", "-3", 1);
  pt_config_load(&cfg, capture);
  assert_int_equal(cfg.stall_ms, PT_DEFAULT_STALL_MS);
  assert_non_null(strstr(logged, "PROXYTRACE_STALL_MS='-3'"));
  for (const char* v = "PROXYTRACE_STALL_MS\0PROXYTRACE_DUMP_INTERVAL_MS\0PROXYTRACE_DUMP_SIGNAL\0PROXYTRACE_DUMP_DIR\0"; *v;
       v += strlen(v) + 1)
    unsetenv(v);
}

/* PROXYTRACE_DUMP_MAX_MB: MiB with up to two decimals; a bad value said
 * once (the first), the default 0.1 MiB applies. */
static void test_dump_cap_variable(void** state) {
  (void)state;
  static const struct {
    const char* v;
    uint64_t bytes;
  } good[] = {{"1", 1 << 20}, {"0.5", 1 << 19}, {"0.25", 1 << 18}, {"0.01", (1 << 20) / 100},
              {"1048576", (uint64_t)1 << 40}, {"2.5", 5 << 19}};
  pt_plugin_config cfg;
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    setenv("PROXYTRACE_DUMP_MAX_MB", good[i].v, 1);
    pt_config_load(&cfg, capture);
    assert_int_equal(cfg.dump_max_bytes, good[i].bytes);
  }
  unsetenv("PROXYTRACE_DUMP_MAX_MB");
  pt_config_load(&cfg, capture);
  assert_int_equal(cfg.dump_max_bytes, ((uint64_t)PT_DEFAULT_DUMP_MAX_MB100 << 20) / 100);
  static const char* const bad[] = {"0", "0.00", "-1", "1.234", "1e3", "1.", ".5", "abc", "1048577", " 1", "0x10"};
  logged[0] = 0;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    setenv("PROXYTRACE_DUMP_MAX_MB", bad[i], 1);
    pt_config_load(&cfg, capture);
    assert_int_equal(cfg.dump_max_bytes, ((uint64_t)PT_DEFAULT_DUMP_MAX_MB100 << 20) / 100);
  }
  assert_non_null(strstr(logged, "PROXYTRACE_DUMP_MAX_MB='0' is not a number of MiB in 0.01..1048576 with at most "
                                 "two decimals; using the default 0.10"));
  assert_null(strstr(logged, "PROXYTRACE_DUMP_MAX_MB='-1'")); /* said once per process */
  unsetenv("PROXYTRACE_DUMP_MAX_MB");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dump_cap_variable),
      cmocka_unit_test(test_task_handles),
      cmocka_unit_test(test_task_names_exact),
      cmocka_unit_test(test_stock_ops_and_watchdog_inputs),
      cmocka_unit_test(test_full_disk),
      cmocka_unit_test(test_dump_variables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
