/*
 * test_units.c — the loader's rules one by one, without plugins: error
 * names, host profiles, version ordering, the candidate list each host
 * builds from NCCL_PROFILER_PLUGIN (the openPluginLib of each NCCL release),
 * request checking, notes that say what to do, nccl.conf, and the report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixtures.h"
#include "loader/internal.h"

/* ---- helpers -------------------------------------------------------------- */

static pt_host host_of(const char* name) {
  pt_host h;
  assert_int_equal(pt_host_parse(name, &h), PT_OK);
  return h;
}

/* Probe with only the given value (NULL = unset); nothing from the
 * environment. */
static pt_result* probe_value(const char* host, const char* value) {
  pt_request req;
  pt_request_init(&req);
  req.plugin = value;
  pt_result* r = NULL;
  int rc = pt_probe(&req, host_of(host), &r);
  assert_non_null(r);
  assert_int_equal(rc, r->status);
  return r;
}

/* "name[source] name[source]" of the candidate list. */
static const char* list_of(const pt_result* r) {
  static char buf[8192];
  buf[0] = '\0';
  for (size_t i = 0; i < r->n_candidates; i++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s[%s]", i ? " " : "",
             r->candidates[i].name, pt_source_name(r->candidates[i].source));
  return buf;
}

static int has_note(const pt_result* r, const char* text) {
  for (size_t i = 0; i < r->n_notes; i++)
    if (strstr(r->notes[i], text)) return 1;
  return 0;
}

/* ---- errors and profiles -------------------------------------------------- */

static void test_error_names(void** state) {
  (void)state;
  assert_string_equal(pt_err_name(PT_OK), "PT_OK");
  assert_string_equal(pt_err_name(PT_ENOTFOUND), "PT_ENOTFOUND");
  assert_string_equal(pt_err_name(PT_ENAMETOOLONG), "PT_ENAMETOOLONG");
  assert_string_equal(pt_err_name(-1000), "PT_E?");
  assert_string_equal(pt_strerror(PT_EDISABLED), "profiler disabled (NCCL_PROFILER_PLUGIN=none)");
  assert_string_equal(pt_strerror(12345), "unknown error");
  for (int e = PT_OK; e >= PT_ENAMETOOLONG; e--) {
    assert_string_not_equal(pt_strerror(e), "unknown error");
    assert_string_not_equal(pt_err_name(e), "PT_E?");
  }
  assert_string_equal(pt_outcome_name(PT_CAND_DUPLICATE), "duplicate");
  assert_string_equal(pt_outcome_name((pt_outcome)99), "?");
  assert_string_equal(pt_source_name(PT_SRC_AUTOLOAD), "auto-load");
  assert_string_equal(pt_source_name((pt_source)99), "?");
}

static void test_host_parse(void** state) {
  (void)state;
  static const struct {
    const char* text;
    pt_host host;
  } ok[] = {
      {"nccl-2.23", PT_HOST_NCCL_2_23},   {"nccl-2.24", PT_HOST_NCCL_2_24},
      {"nccl-2.25", PT_HOST_NCCL_2_25},   {"nccl-2.26", PT_HOST_NCCL_2_26},
      {"nccl-2.27", PT_HOST_NCCL_2_27},   {"nccl-2.27.3", PT_HOST_NCCL_2_27_3},
      {"nccl-2.27.5", PT_HOST_NCCL_2_27}, {"nccl-2.27.7-1", PT_HOST_NCCL_2_27},
      {"nccl-2.28", PT_HOST_NCCL_2_28},   {"2.28.9", PT_HOST_NCCL_2_28},
      {"NCCL-2.29", PT_HOST_NCCL_2_29},   {"nccl-2.30", PT_HOST_NCCL_2_30},
      {"nccl", PT_HOST_NCCL_2_30},        {"rccl", PT_HOST_RCCL},
      {"RCCL", PT_HOST_RCCL},             {"nccl-2.31", PT_HOST_NCCL_2_31},
      {"2.32.7", PT_HOST_NCCL_2_32},      {"rccl-2.31", PT_HOST_RCCL_2_31},
      {"RCCL-2.31", PT_HOST_RCCL_2_31},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    pt_host h = PT_HOST_COUNT;
    assert_int_equal(pt_host_parse(ok[i].text, &h), PT_OK);
    assert_int_equal(h, ok[i].host);
  }
  static const char* const bad[] = {"nccl-2.22", "nccl-2.33", "rccl-2.30", "2.3", "", "rcc", "nccl-2.27.x",
                                    "nccl-2.28.", "nccl-3.0", "nccl-2.28 ", "2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    pt_host h;
    assert_int_equal(pt_host_parse(bad[i], &h), PT_EINVAL);
  }
  pt_host h;
  assert_int_equal(pt_host_parse(NULL, &h), PT_EINVAL);
  assert_int_equal(pt_host_parse("rccl", NULL), PT_EINVAL);
  for (int i = 0; i < PT_HOST_COUNT; i++) { /* names round-trip */
    assert_int_equal(pt_host_parse(pt_host_name((pt_host)i), &h), PT_OK);
    assert_int_equal(h, i);
  }
  assert_null(pt_host_info_of(PT_HOST_COUNT));
  assert_string_equal(pt_host_name(PT_HOST_COUNT), "?");
}

static void test_host_parse_note(void** state) {
  (void)state;
  char buf[256];
  /* Profiles and the releases they were checked against: no note. */
  static const char* const quiet[] = {"nccl-2.23", "nccl-2.23.4", "2.26.5", "nccl-2.27.3",
                                      "nccl-2.27.7-1", "nccl-2.28.9", "nccl-2.30.7", "rccl",
                                      "nccl"};
  for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
    assert_null(pt_host_parse_note(quiet[i], buf, sizeof buf));
  /* No such release: mapped, and said so. */
  assert_ptr_equal(pt_host_parse_note("nccl-2.28.1", buf, sizeof buf), buf);
  assert_string_equal(buf,
                      "NCCL 2.28.1 is not a release: the nccl-2.28 profile (NCCL 2.28.3-2.28.9) "
                      "is used");
  assert_non_null(pt_host_parse_note("nccl-2.27.4", buf, sizeof buf)); /* 2.27.3's profile */
  assert_non_null(strstr(buf, "the nccl-2.27.3 profile"));
  assert_non_null(pt_host_parse_note("2.30.9", buf, sizeof buf));
  assert_non_null(strstr(buf, "newer than the releases the nccl-2.30 profile was checked against"));
  pt_host h;
  assert_int_equal(pt_host_parse("nccl-2.30.9", &h), PT_OK);
  assert_int_equal(h, PT_HOST_NCCL_2_30);
  assert_null(pt_host_parse_note("nccl-2.33", buf, sizeof buf)); /* refused, not noted */
  assert_null(pt_host_parse_note("nccl-2.32.6", buf, sizeof buf));
  assert_non_null(pt_host_parse_note("nccl-2.31.9", buf, sizeof buf));
  assert_non_null(strstr(buf, "newer than the releases the nccl-2.31 profile was checked against"));
  assert_null(pt_host_parse_note(NULL, buf, sizeof buf));
}

static void test_version(void** state) {
  (void)state;
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", PT_VERSION_MAJOR, PT_VERSION_MINOR, PT_VERSION_PATCH);
  assert_string_equal(pt_version(), want);
}

static void test_host_rules(void** state) {
  (void)state;
  static const int native[PT_HOST_COUNT] = {1, 2, 2, 3, 4, 4, 5, 6, 6, 6, 7, 7, 7};
  for (int i = 0; i < PT_HOST_COUNT; i++)
    assert_int_equal(pt_host_info_of((pt_host)i)->native_version, native[i]);
  const pt_host_info* rccl = pt_host_info_of(PT_HOST_RCCL);
  assert_true(rccl->flags & PT_HOSTF_AUTOLOAD);
  assert_true(rccl->flags & PT_HOSTF_DUMP_HOOK);
  assert_int_equal(rccl->max_value, 254);
  assert_false(pt_host_info_of(PT_HOST_NCCL_2_30)->flags & PT_HOSTF_AUTOLOAD);
  assert_false(pt_host_info_of(PT_HOST_NCCL_2_27_3)->flags & PT_HOSTF_PATHS);
  assert_false(pt_host_info_of(PT_HOST_NCCL_2_25)->flags & PT_HOSTF_SHORT_NAMES);
  assert_false(pt_host_info_of(PT_HOST_NCCL_2_27)->flags & PT_HOSTF_NONE_DISABLES);
  assert_true(pt_host_info_of(PT_HOST_NCCL_2_28)->flags & PT_HOSTF_NONE_DISABLES);
  /* Every release reads config files and knows STATIC_PLUGIN (2.27.3 never
   * reaches it); names are cut at 254 from 2.26, 4095 before. */
  static const size_t cut[PT_HOST_COUNT] = {4095, 4095, 4095, 254, 254, 254, 254, 254, 254, 254, 254, 254, 254};
  for (int i = 0; i < PT_HOST_COUNT; i++) {
    const pt_host_info* h = pt_host_info_of((pt_host)i);
    assert_true(h->flags & PT_HOSTF_CONF_FILES);
    assert_true(h->flags & PT_HOSTF_TRUNCATES);
    assert_int_equal(h->max_value, cut[i]);
    assert_int_equal(!!(h->flags & PT_HOSTF_STATIC_PLUGIN), i != PT_HOST_NCCL_2_27_3);
    const int nccl_230_on = i == PT_HOST_NCCL_2_30 || i == PT_HOST_NCCL_2_31 || i == PT_HOST_NCCL_2_32;
    const int is_rccl = i == PT_HOST_RCCL || i == PT_HOST_RCCL_2_31;
    assert_int_equal(!!(h->flags & PT_HOSTF_CONF_HOME_ENV), nccl_230_on);
    assert_int_equal(!!(h->flags & PT_HOSTF_CONF_STRIPS_CR), nccl_230_on);
    assert_int_equal(!!(h->flags & PT_HOSTF_RCCL_CONF), is_rccl);
    assert_int_equal(!!(h->flags & PT_HOSTF_RCCL_SHORT), i == PT_HOST_RCCL_2_31);
    assert_int_equal(!!(h->flags & PT_HOSTF_ENV_PLUGIN),
                     (i >= PT_HOST_NCCL_2_28 && i <= PT_HOST_NCCL_2_30) || nccl_230_on);
  }
}

/* ---- versions ------------------------------------------------------------- */

static void test_version_parse(void** state) {
  (void)state;
  unsigned long v[3];
  assert_int_equal(pt_version_parse("1", v), 1);
  assert_int_equal(v[0], 1);
  assert_int_equal(pt_version_parse("1.10.2", v), 3);
  assert_int_equal(v[1], 10);
  assert_int_equal(v[2], 2);
  static const char* const bad[] = {"", "x", "1.", ".1", "1..2", "1.2.3.4", "1.2a", "-1", "1 "};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(pt_version_parse(bad[i], v), 0);
  assert_int_equal(pt_version_parse(NULL, v), 0);
}

static int cmp(const char* a, const char* b) {
  unsigned long va[3], vb[3];
  int na = pt_version_parse(a, va), nb = pt_version_parse(b, vb);
  assert_true(na > 0 && nb > 0);
  return pt_version_cmp_newest_first(va, na, vb, nb);
}

static void test_version_order(void** state) {
  (void)state;
  assert_true(cmp("1.10.0", "1.9.0") < 0); /* numeric, not string order */
  assert_true(cmp("1.9.0", "1.10.0") > 0);
  assert_true(cmp("10", "9") < 0);
  assert_true(cmp("1.2.0", "1.2") < 0);
  assert_true(cmp("1.2.10", "1.2.9") < 0);
  assert_int_equal(cmp("1.2.3", "1.2.3"), 0);
}

static void test_parse_param(void** state) {
  (void)state;
  /* As NCCL and RCCL read a parameter: strtoll(text, NULL, 0). */
  static const struct {
    const char* text;
    int kind;
    long long v;
  } rows[] = {
      {"1", PT_PARAM_NUMBER, 1},           {"0x10", PT_PARAM_NUMBER, 16},
      {"-2", PT_PARAM_NUMBER, -2},         {" 7", PT_PARAM_NUMBER, 7},
      {"010", PT_PARAM_NUMBER, 8},         {"1 ", PT_PARAM_TRAILING, 1},
      {"1abc", PT_PARAM_TRAILING, 1},      {"0x", PT_PARAM_TRAILING, 0},
      {"yes", PT_PARAM_NO_DIGITS, 0},      {"", PT_PARAM_NO_DIGITS, 0},
      {"99999999999999999999", PT_PARAM_RANGE, 42},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    long long v = -7;
    assert_int_equal(pt_parse_param(rows[i].text, 42, &v), rows[i].kind);
    assert_int_equal(v, rows[i].v);
  }
}

/* ---- the candidate list per host (NCCL's openPluginLib of each release) --- */

static void expect_list(const char* host, const char* value, const char* want) {
  pt_result* r = probe_value(host, value);
  assert_string_equal(list_of(r), want);
  pt_result_free(r);
}

static void test_candidates_new_nccl(void** state) {
  (void)state;
  expect_list("nccl-2.30", NULL, "libnccl-profiler.so[default name]");
  expect_list("nccl-2.30", "", "libnccl-profiler.so[default name]");
  expect_list("nccl-2.30", "example", "example[value] libnccl-profiler-example.so[short name]");
  expect_list("nccl-2.30", "libfoo.so", "libfoo.so[value]");
  expect_list("nccl-2.30", "foo.so", "foo.so[value] libnccl-profiler-foo.so.so[short name]");
  expect_list("nccl-2.30", "/a/b.so", "/a/b.so[value]");
  expect_list("nccl-2.30", "./b.so", "./b.so[value]");
  expect_list("rccl", "proxytrace",
              "proxytrace[value] libnccl-profiler-proxytrace.so[short name]");
  expect_list("nccl-2.27", "example", "example[value] libnccl-profiler-example.so[short name]");
}

static void test_candidates_old_nccl(void** state) {
  (void)state;
  expect_list("nccl-2.23", NULL, "libnccl-profiler.so[default name]");
  expect_list("nccl-2.24", "/a/b.so", "/a/b.so[value] /a/b.so[value]");
  expect_list("nccl-2.25", "example", "example[value] example[value]");
  expect_list("nccl-2.26", "/a/b.so", "/a/b.so[value] libnccl-profiler-/a/b.so.so[short name]");
  expect_list("nccl-2.26", "libfoo.so",
              "libfoo.so[value] libnccl-profiler-libfoo.so.so[short name]");
  expect_list("nccl-2.27.3", "libfoo.so", "libfoo.so[value]");
  /* 2.27.3: lib*.so only from 7 characters (v2.27.3-1 plugin_open.cc:65). */
  expect_list("nccl-2.27.3", "lib.so", "libnccl-profiler-lib.so.so[short name]");
  expect_list("nccl-2.27.3", "libX.so", "libX.so[value]");
  expect_list("nccl-2.27", "lib.so", "lib.so[value]");
  expect_list("nccl-2.27.3", "./b.so", "libnccl-profiler-./b.so.so[short name]");
  expect_list("nccl-2.27.3", "example", "libnccl-profiler-example.so[short name]");
}

static void test_candidates_static_plugin(void** state) {
  (void)state;
  static const char* const yes[] = {"S", "st", "static", "STATIC_PLUGIN", "Static_Plug"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    pt_result* r = probe_value("nccl-2.30", yes[i]);
    assert_int_equal(r->n_candidates, 1);
    assert_int_equal(r->candidates[0].source, PT_SRC_STATIC);
    assert_string_equal(r->candidates[0].name, "");
    pt_result_free(r);
  }
  expect_list("nccl-2.30", "STATIC_PLUGINS",
              "STATIC_PLUGINS[value] libnccl-profiler-STATIC_PLUGINS.so[short name]");
  /* 2.23-2.26 turn a STATIC_PLUGIN prefix into dlopen(NULL) too
   * (v2.23.4-1 src/misc/profiler.cc:28-30, v2.26.6-1 plugin_open.cc:35-37);
   * 2.27.3 only tries the short name of such a value. */
  static const char* const old_hosts[] = {"nccl-2.23", "nccl-2.24", "nccl-2.25", "nccl-2.26"};
  for (size_t i = 0; i < sizeof old_hosts / sizeof old_hosts[0]; i++)
    expect_list(old_hosts[i], "Static", "[main program]");
  expect_list("nccl-2.27.3", "static", "libnccl-profiler-static.so[short name]");
}

static void test_none(void** state) {
  (void)state;
  static const char* const hosts[] = {"nccl-2.28", "nccl-2.29", "nccl-2.30", "rccl"};
  for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
    pt_result* r = probe_value(hosts[i], "None");
    assert_int_equal(r->status, PT_EDISABLED);
    assert_int_equal(r->n_candidates, 0);
    assert_true(has_note(r, "unset it"));
    pt_result_free(r);
  }
  pt_result* r = probe_value("nccl-2.26", "none");
  assert_int_equal(r->status, PT_ENOTFOUND);
  assert_string_equal(list_of(r), "none[value] libnccl-profiler-none.so[short name]");
  assert_true(has_note(r, "does not know the value 'none'"));
  pt_result_free(r);
}

static void test_too_long(void** state) {
  (void)state;
  char v[301];
  memset(v, 'p', 300);
  v[0] = '/';
  v[300] = '\0';
  pt_result* r = probe_value("nccl-2.30", v);
  assert_int_equal(r->status, PT_ENAMETOOLONG);
  assert_int_equal(r->n_candidates, 1);
  assert_int_equal(strlen(r->candidates[0].name), 254); /* what the host really tries */
  assert_true(has_note(r, "300 characters"));
  assert_true(has_note(r, "Use a shorter value"));
  pt_result_free(r);
  /* A short name derived from a long value is cut too. */
  v[0] = 'p';
  r = probe_value("rccl", v);
  assert_int_equal(r->n_candidates, 2);
  assert_int_equal(strlen(r->candidates[1].name), 254);
  assert_int_equal(r->status, PT_ENAMETOOLONG);
  pt_result_free(r);
  /* 2.26 and 2.27.3 cut at 254 too, the short name from the whole value. */
  v[0] = 'p';
  r = probe_value("nccl-2.26", v);
  assert_int_equal(r->n_candidates, 2);
  assert_int_equal(strlen(r->candidates[0].name), 254);
  assert_int_equal(strlen(r->candidates[1].name), 254);
  assert_memory_equal(r->candidates[1].name, "libnccl-profiler-ppp", 20);
  assert_int_equal(r->status, PT_ENAMETOOLONG);
  pt_result_free(r);
  r = probe_value("nccl-2.27.3", v);
  assert_int_equal(r->n_candidates, 1);
  assert_int_equal(strlen(r->candidates[0].name), 254);
  assert_true(has_note(r, "the short-name form of NCCL_PROFILER_PLUGIN is 320 characters"));
  pt_result_free(r);
  /* A short value whose short name is too long: only that name is cut. */
  char mid[241];
  memset(mid, 'm', 240);
  mid[240] = '\0';
  r = probe_value("nccl-2.30", mid);
  assert_int_equal(strlen(r->candidates[0].name), 240);
  assert_int_equal(strlen(r->candidates[1].name), 254);
  pt_result_free(r);
  /* 2.25 cuts only at 4095: the whole value is tried (and its 299-character
   * file name is too long for the file system). */
  v[0] = '/';
  r = probe_value("nccl-2.25", v);
  assert_int_equal(strlen(r->candidates[0].name), 300);
  assert_int_equal(r->candidates[0].outcome, PT_CAND_TOO_LONG);
  assert_int_equal(r->status, PT_ENAMETOOLONG);
  assert_false(has_note(r, "keeps only the first"));
  pt_result_free(r);
}

/* ---- requests ------------------------------------------------------------- */

static pt_result* probe_req(const pt_request* req, const char* host) {
  pt_result* r = NULL;
  int rc = pt_probe(req, host_of(host), &r);
  assert_non_null(r);
  assert_int_equal(rc, r->status);
  return r;
}

static void test_request_errors(void** state) {
  (void)state;
  pt_request req;
  pt_result* r;

  pt_request_init(&req);
  req.plugin = "x";
  req.path = "/x";
  r = probe_req(&req, "rccl");
  assert_int_equal(r->status, PT_EINVAL);
  assert_true(has_note(r, "set only one of"));
  assert_int_equal(r->n_candidates, 0);
  pt_result_free(r);

  pt_request_init(&req);
  req.path = "libx.so";
  r = probe_req(&req, "rccl");
  assert_int_equal(r->status, PT_EINVAL);
  assert_true(has_note(r, "write './NAME'"));
  pt_result_free(r);

  pt_request_init(&req);
  req.path = "";
  r = probe_req(&req, "rccl");
  assert_int_equal(r->status, PT_EINVAL);
  pt_result_free(r);

  pt_request_init(&req);
  req.name = "a/b";
  r = probe_req(&req, "rccl");
  assert_int_equal(r->status, PT_EINVAL);
  assert_true(has_note(r, "pass it as a path"));
  pt_result_free(r);

  pt_request_init(&req);
  req.name = "";
  r = probe_req(&req, "rccl");
  assert_int_equal(r->status, PT_EINVAL);
  pt_result_free(r);

  pt_request_init(&req);
  req.major = -1;
  r = probe_req(&req, "rccl");
  assert_int_equal(r->status, PT_EINVAL);
  pt_result_free(r);

  assert_int_equal(pt_probe(&req, PT_HOST_RCCL, NULL), PT_EINVAL);
  assert_int_equal(pt_load(&req, PT_HOST_RCCL, NULL), PT_EINVAL);
  r = NULL;
  assert_int_equal(pt_probe(NULL, PT_HOST_RCCL, &r), PT_EINVAL);
  assert_non_null(r);
  pt_result_free(r);
  r = NULL;
  assert_int_equal(pt_load(&req, PT_HOST_COUNT, &r), PT_EINVAL);
  assert_true(has_note(r, "unknown host profile"));
  pt_result_free(r);
}

static void test_request_fields(void** state) {
  (void)state;
  pt_request req;
  pt_request_init(&req);
  assert_int_equal(pt_request_set_var(&req, "NCCL_PROFILER_PLUGIN", "a"), PT_OK);
  assert_int_equal(pt_request_set_var(&req, "RCCL_ENABLE_PROXY_TRACE", "1"), PT_OK);
  assert_int_equal(pt_request_set_var(&req, "PROXYTRACE_HOME", "/h"), PT_OK);
  assert_int_equal(pt_request_set_var(&req, "LD_LIBRARY_PATH", "/l"), PT_OK);
  assert_int_equal(pt_request_set_var(&req, "NCCL_DEBUG", "INFO"), PT_EINVAL);
  assert_int_equal(pt_request_set_var(NULL, "NCCL_PROFILER_PLUGIN", "a"), PT_EINVAL);
  assert_string_equal(req.plugin, "a");
  assert_string_equal(req.rccl_enable_proxy_trace, "1");
  assert_string_equal(req.home, "/h");
  assert_string_equal(req.ld_library_path, "/l");
  assert_int_equal(req.flags, 0);
  pt_request_from_environment(&req);
  assert_true(req.flags & PT_REQ_ENVIRONMENT);
  assert_true(req.flags & PT_REQ_CONF_FILES);

  /* name and path go through the host's rules like the variable. */
  pt_request_init(&req);
  req.name = "proxytrace";
  pt_result* r = probe_req(&req, "nccl-2.30");
  assert_string_equal(list_of(r),
                      "proxytrace[value] libnccl-profiler-proxytrace.so[short name]");
  assert_string_equal(r->value_origin, "argument");
  pt_result_free(r);
  r = probe_req(&req, "nccl-2.24");
  assert_true(has_note(r, "does not expand short names"));
  assert_true(has_note(r, "libnccl-profiler-proxytrace.so"));
  pt_result_free(r);
  pt_request_init(&req);
  req.path = "/opt/x/libp.so";
  r = probe_req(&req, "nccl-2.27.3");
  assert_true(has_note(r, "cannot load a plugin by path"));
  pt_result_free(r);
}

static void test_environment(void** state) {
  (void)state;
  setenv("NCCL_PROFILER_PLUGIN", "/from/env.so", 1);
  setenv("PROXYTRACE_HOME", "", 1);
  pt_request req;
  pt_request_init(&req);
  pt_result* r = probe_req(&req, "rccl");
  assert_null(r->value); /* not asked to read the environment */
  pt_result_free(r);
  pt_request_from_environment(&req);
  r = probe_req(&req, "rccl");
  assert_string_equal(r->value, "/from/env.so");
  assert_string_equal(r->value_origin, "environment");
  /* Reading the environment, an unset NCCL_NET_PLUGIN means the host's
   * default net library, which 2.28+ and RCCL fall back to. */
  assert_string_equal(list_of(r), "/from/env.so[value] librccl-net.so[net plugin]");
  pt_result_free(r);
  req.plugin = "/explicit.so"; /* an explicit field wins */
  r = probe_req(&req, "rccl");
  assert_string_equal(r->value, "/explicit.so");
  pt_result_free(r);
  unsetenv("NCCL_PROFILER_PLUGIN");
  unsetenv("PROXYTRACE_HOME");
}

static void test_conf_files(void** state) {
  (void)state;
  const char* d = fx_tmpdir();
  const char* conf = fx_fmt("%s/nccl.conf", d);
  fx_write(conf,
           "# NCCL_PROFILER_PLUGIN=/commented.so\n"
           "NCCL_PROFILER_PLUGIN_X=/other.so\n"
           "garbage line\n"
           "NCCL_PROFILER_PLUGIN=/from/conf.so\r\n"
           "NCCL_PROFILER_PLUGIN=/second/line.so\n"
           "NCCL_NET_PLUGIN=/from/conf-net.so\n"
           "RCCL_ENABLE_PROXY_TRACE=1\n");
  setenv("NCCL_CONF_FILE", conf, 1);
  unsetenv("NCCL_PROFILER_PLUGIN");
  pt_request req;
  pt_request_init(&req);
  pt_request_from_environment(&req);
  req.rccl_dir = "/nonexistent-rccl";
  /* Every NCCL release reads the file before it loads the profiler; only
   * 2.30 cuts the '\r' of a Windows line end. */
  static const char* const keep_cr[] = {"nccl-2.23", "nccl-2.25", "nccl-2.26", "nccl-2.28",
                                        "nccl-2.29"};
  for (size_t i = 0; i < sizeof keep_cr / sizeof keep_cr[0]; i++) {
    pt_result* r = probe_req(&req, keep_cr[i]);
    assert_string_equal(r->value, "/from/conf.so\r");
    assert_string_equal(r->value_origin, conf);
    assert_true(has_note(r, "carriage return"));
    pt_result_free(r);
  }
  pt_result* r = probe_req(&req, "nccl-2.30");
  assert_string_equal(r->value, "/from/conf.so");
  assert_string_equal(r->net_value, "/from/conf-net.so");
  assert_string_equal(r->net_value_origin, conf);
  assert_string_equal(list_of(r), "/from/conf.so[value] /from/conf-net.so[net plugin]");
  assert_false(has_note(r, "carriage return"));
  pt_result_free(r);
  /* RCCL reads ~/.rccl.conf and /etc/rccl.conf, never NCCL_CONF_FILE. */
  r = probe_req(&req, "rccl");
  assert_true(r->value == NULL || strcmp(r->value, "/from/conf.so") != 0);
  assert_true(has_note(r, "RCCL does not read it"));
  pt_result_free(r);
  req.flags &= ~(unsigned)PT_REQ_CONF_FILES;
  r = probe_req(&req, "nccl-2.30");
  assert_null(r->value);
  pt_result_free(r);
  setenv("NCCL_PROFILER_PLUGIN", "/env/wins.so", 1);
  req.flags |= PT_REQ_CONF_FILES;
  r = probe_req(&req, "nccl-2.30");
  assert_string_equal(r->value, "/env/wins.so");
  pt_result_free(r);
  unsetenv("NCCL_PROFILER_PLUGIN");

  /* ~ is $HOME from 2.30, the passwd entry before (never this folder). */
  unsetenv("NCCL_CONF_FILE");
  const char* home = fx_tmpdir();
  char* long_value = malloc(2001);
  assert_non_null(long_value);
  memset(long_value, 'v', 2000);
  long_value[0] = '/';
  long_value[2000] = '\0';
  fx_write(fx_fmt("%s/.nccl.conf", home), fx_fmt("NCCL_PROFILER_PLUGIN=%s\n", long_value));
  char* saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", home, 1);
  r = probe_req(&req, "nccl-2.30");
  assert_non_null(r->value);
  assert_int_equal(strlen(r->value), 1023); /* char envValue[1024] */
  assert_memory_equal(r->value, long_value, 1023);
  assert_string_equal(r->value_origin, fx_fmt("%s/.nccl.conf", home));
  pt_result_free(r);
  r = probe_req(&req, "nccl-2.29");
  assert_true(r->value == NULL || strncmp(r->value, long_value, 100) != 0);
  pt_result_free(r);
  if (saved) setenv("HOME", saved, 1);
  free(saved);
  free(long_value);
}

/* ---- auto-load and home: the notes that say what to do -------------------- */

static void test_autoload_rules(void** state) {
  (void)state;
  pt_request req;
  pt_request_init(&req);
  req.rccl_dir = "/opt/rocm/lib";
  static const struct {
    const char* flag;
    size_t n;
    const char* note;
  } rows[] = {{"1", 2, NULL},
              {"0x1", 2, NULL},
              {"2", 2, NULL},
              {"0", 1, NULL},
              {"", 1, NULL},
              {"yes", 1, "is not a number"},
              {"1abc", 2, "counts as 1 (auto-load on)"}, /* strtoll stops at 'a' */
              {"0x", 1, "counts as 0 (auto-load off)"},
              {"99999999999999999999", 1, "out of range"}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    req.rccl_enable_proxy_trace = rows[i].flag;
    pt_result* r = probe_req(&req, "rccl");
    if (r->n_candidates != rows[i].n) fail_msg("RCCL_ENABLE_PROXY_TRACE='%s'", rows[i].flag);
    if (rows[i].n == 2)
      assert_string_equal(r->candidates[1].name, "/opt/rocm/lib/librccl-profiler-proxytrace.so");
    if (rows[i].note) assert_true(has_note(r, rows[i].note));
    pt_result_free(r);
  }
  req.rccl_enable_proxy_trace = "1";
  pt_result* r = probe_req(&req, "nccl-2.30");
  assert_int_equal(r->n_candidates, 1);
  assert_true(has_note(r, "only RCCL auto-loads"));
  pt_result_free(r);
  req.rccl_dir = NULL; /* no librccl in this process */
  r = probe_req(&req, "rccl");
  assert_int_equal(r->n_candidates, 1);
  assert_true(has_note(r, "no librccl is loaded"));
  assert_true(has_note(r, "--rccl-dir"));
  pt_result_free(r);
}

static void test_home_notes(void** state) {
  (void)state;
  pt_request req;
  pt_request_init(&req);
  req.home = "/nonexistent/prefix";
  pt_result* r = probe_req(&req, "rccl");
  assert_true(has_note(r, "is not a directory"));
  assert_int_equal(r->status, PT_ENOTFOUND);
  pt_result_free(r);
  req.home = fx_tmpdir();
  r = probe_req(&req, "rccl");
  assert_true(has_note(r, "holds no librccl-profiler-proxytrace.so"));
  pt_result_free(r);
  assert_true(has_note(r = probe_req(&req, "rccl"), "make install PREFIX="));
  pt_result_free(r);
}

/* ---- the report ------------------------------------------------------------ */

static char* capture(const pt_result* r, int json) {
  char* buf = NULL;
  size_t n = 0;
  FILE* f = open_memstream(&buf, &n);
  assert_non_null(f);
  assert_int_equal(json ? pt_result_print_json(r, f) : pt_result_print(r, f), PT_OK);
  fclose(f);
  return buf;
}

static void test_report(void** state) {
  (void)state;
  pt_result* r = probe_value("nccl-2.30", "my\"plugin\n");
  char* text = capture(r, 0);
  char* a = strstr(text, "1. value");
  char* b = strstr(text, "2. short name");
  assert_non_null(a);
  assert_non_null(b);
  assert_true(a < b); /* in the order the host tries them */
  assert_non_null(strstr(text, "No such file or directory"));
  assert_non_null(strstr(text, "PT_ENOTFOUND"));
  assert_non_null(strstr(text, "notes:"));
  char* json = capture(r, 1);
  assert_non_null(strstr(json, "\"value\":\"my\\\"plugin\\n\""));
  assert_non_null(strstr(json, "\"status\":\"PT_ENOTFOUND\""));
  assert_non_null(strstr(json, "\"outcome\":\"not_found\""));
  assert_non_null(strstr(json, "\"source\":\"short_name\""));
  assert_int_equal(json[strlen(json) - 2], '}');
  free(text);
  free(json);
  pt_result_free(r);
  assert_int_equal(pt_result_print(NULL, stdout), PT_EINVAL);
  assert_int_equal(pt_result_print_json(NULL, stdout), PT_EINVAL);
  pt_result_free(NULL);
  assert_int_equal(pt_result_close(NULL), PT_OK);
}

int main(void) {
  setenv("HOME", fx_tmpdir(), 1); /* no ~/.nccl.conf of the person running the tests */
  unsetenv("NCCL_PROFILER_PLUGIN");
  unsetenv("RCCL_ENABLE_PROXY_TRACE");
  unsetenv("NCCL_CONF_FILE");
  unsetenv("NCCL_NET_PLUGIN");
  unsetenv("NCCL_ENV_PLUGIN");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_error_names),
      cmocka_unit_test(test_host_parse),
      cmocka_unit_test(test_host_parse_note),
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_host_rules),
      cmocka_unit_test(test_version_parse),
      cmocka_unit_test(test_version_order),
      cmocka_unit_test(test_parse_param),
      cmocka_unit_test(test_candidates_new_nccl),
      cmocka_unit_test(test_candidates_old_nccl),
      cmocka_unit_test(test_candidates_static_plugin),
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_too_long),
      cmocka_unit_test(test_request_errors),
      cmocka_unit_test(test_request_fields),
      cmocka_unit_test(test_environment),
      cmocka_unit_test(test_conf_files),
      cmocka_unit_test(test_autoload_rules),
      cmocka_unit_test(test_home_notes),
      cmocka_unit_test(test_report),
  };
  return cmocka_run_group_tests_name("loader units", tests, NULL, NULL);
}
