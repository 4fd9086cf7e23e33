/*
 * test_escape.c — the one escaping rule of every output (src/escape/):
 * strings holding bytes that are not UTF-8, every kind of control
 * character, quotes, backslashes and markup come out of pt_json_str as
 * valid UTF-8 JSON that decodes to what was meant, out of pt_text_str and
 * pt_text_esc with no control byte at all (each shown visibly), and out of
 * pt_html_str with no markup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "escape/escape.h"
#include "escape/utf8.h"

typedef void (*writer)(FILE*, const char*);

/* What `w` writes for `s`, NUL-terminated (caller frees). */
static char* written(writer w, const char* s) {
  char* buf = NULL;
  size_t n = 0;
  FILE* f = open_memstream(&buf, &n);
  assert_non_null(f);
  w(f, s);
  assert_int_equal(fclose(f), 0);
  return buf;
}

/* Every byte of `s` is part of valid UTF-8. */
static int valid_utf8(const char* s) {
  const unsigned char* p = (const unsigned char*)s;
  size_t left = strlen(s);
  while (left) {
    size_t n = pt_utf8_len(p, left, NULL);
    if (!n) return 0;
    p += n;
    left -= n;
  }
  return 1;
}

/* No C0 byte, no DEL, no C1 (as UTF-8 C2 80..9F). */
static int no_control(const char* s) {
  for (const unsigned char* p = (const unsigned char*)s; *p; p++)
    if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) return 0;
  return 1;
}

static const char* const hostile[] = {
    "n\xff\xfe\xff" "de",                     /* not UTF-8 */
    "\x1b]0;x\x07\x1b[2Jnode",                /* set the title, clear the screen */
    "a\"b\\c\nd\re\tf\x7f",                   /* JSON's own escapes, DEL */
    "\xc2\x85\xc2\x9b" "1m",                  /* C1: NEL, CSI */
    "\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xae",   /* U+2028, U+2029, U+202E */
    "\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80",   /* a surrogate, overlong, past U+10FFFF */
    "cut \xe2\x82",                            /* a sequence cut short */
    "<script>alert('x')</script>&amp;",
    "ok \xc3\xa9\xe2\x80\xa6\xf0\x9f\x98\x80", /* é … 😀: kept */
};

static void test_json_is_valid_utf8(void** state) {
  (void)state;
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    char* j = written(pt_json_str, hostile[i]);
    assert_true(valid_utf8(j));
    assert_true(no_control(j));
    assert_int_equal(j[0], '"');
    assert_int_equal(j[strlen(j) - 1], '"');
    free(j);
  }
  char* j = written(pt_json_str, "n\xff" "d\x1b\"\\\n\xe2\x80\xa8\xc2\x85");
  assert_string_equal(j, "\"n\xef\xbf\xbd" "d\\u001b\\\"\\\\\\n\\u2028\\u0085\"");
  free(j);
  j = written(pt_json_str, NULL);
  assert_string_equal(j, "null");
  free(j);
  j = written(pt_json_str, "ok \xc3\xa9\xe2\x80\xa6\xf0\x9f\x98\x80");
  assert_string_equal(j, "\"ok \xc3\xa9\xe2\x80\xa6\xf0\x9f\x98\x80\"");
  free(j);
}

static void test_text_has_no_control_byte(void** state) {
  (void)state;
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    char* t = written(pt_text_str, hostile[i]);
    assert_true(no_control(t));
    assert_null(strchr(t, '\n'));
    free(t);
  }
  char* t = written(pt_text_str, "n\xff" "d\x1b]0;x\x07\n\\ \xc2\x9b \xe2\x80\xae \xc3\xa9");
  assert_string_equal(t, "n\\xffd\\x1b]0;x\\x07\\n\\\\ \\u009b \\u202e \xc3\xa9");
  free(t);
}

static void test_text_into_a_buffer_is_cut_whole(void** state) {
  (void)state;
  char b[16];
  assert_string_equal(pt_text_esc(b, sizeof b, "abc\x1b"), "abc\\x1b");
  assert_string_equal(pt_text_esc(b, sizeof b, "\x1b\x1b\x1b\x1b\x1b\x1b"), "\\x1b\\x1b\\x1b..."); /* whole pieces, then the mark */
  assert_string_equal(pt_text_esc(b, sizeof b, NULL), "");
  assert_string_equal(PT_TEXT("\xff", 1), "\\xff");
  char big[PT_TEXT_ROOM(8)];
  assert_string_equal(pt_text_esc(big, sizeof big, "\x01\x02\x03\x04\x05\x06\x07\x08"),
                      "\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08"); /* the room asked for is enough */
}

static void test_html_has_no_markup(void** state) {
  (void)state;
  char* h = written(pt_html_str, "<script>alert(\"x\" & 'y')</script>\xff\x1b");
  assert_string_equal(h, "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;\xef\xbf\xbd\\x1b");
  free(h);
  /* A character whose low byte is one of <>&"' stays itself: … (U+2026),
   * ‼ (U+203C), ➾ (U+27BE), Ȣ (U+0222), ħ (U+0127). */
  h = written(pt_html_str, "a\xe2\x80\xa6 \xe2\x80\xbc \xe2\x9e\xbe \xc8\xa2 \xc4\xa7");
  assert_string_equal(h, "a\xe2\x80\xa6 \xe2\x80\xbc \xe2\x9e\xbe \xc8\xa2 \xc4\xa7");
  free(h);
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    h = written(pt_html_str, hostile[i]);
    assert_true(valid_utf8(h));
    assert_true(no_control(h));
    assert_null(strpbrk(h, "<>\"'"));
    free(h);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_is_valid_utf8),
      cmocka_unit_test(test_text_has_no_control_byte),
      cmocka_unit_test(test_text_into_a_buffer_is_cut_whole),
      cmocka_unit_test(test_html_has_no_markup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
