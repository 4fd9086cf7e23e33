/*
 * fuzz_result.h — the checks every fuzz target that probes makes on a
 * pt_result: the
 * status is the return value; nothing was loaded; every candidate has a
 * known outcome and source and a reason; at most one is accepted, exactly
 * one when the status is PT_OK, with a table version and a file that
 * exists; the text and JSON reports print.
 */
#ifndef PT_FUZZ_RESULT_H
#define PT_FUZZ_RESULT_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "proxytrace/loader.h"

static inline void fz_check_result(const pt_result* res, int rc) {
  CHECK(res != NULL);
  CHECK(res->status == rc);
  CHECK(res->probed == 1 && res->handle == NULL);
  int accepted = 0;
  for (size_t i = 0; i < res->n_candidates; i++) {
    const pt_candidate* c = &res->candidates[i];
    CHECK(c->name && c->reason);
    CHECK((unsigned)c->outcome <= PT_CAND_DUPLICATE);
    CHECK((unsigned)c->source <= PT_SRC_HOME);
    CHECK(strcmp(pt_outcome_name(c->outcome), "?") != 0);
    accepted += c->outcome == PT_CAND_OK;
  }
  CHECK(accepted <= 1);
  if (rc == PT_OK) {
    CHECK(accepted == 1);
    CHECK(res->path && res->api_version >= 1 && res->api_version <= 6);
    struct stat st;
    if (*res->path) /* "" is the main program (STATIC_PLUGIN) */
      CHECK(res->realpath && stat(res->realpath, &st) == 0 && S_ISREG(st.st_mode));
  }
  FILE* f = fopen("/dev/null", "w");
  CHECK(f);
  pt_result_print(res, f);
  pt_result_print_json(res, f);
  fclose(f);
}

#endif
