/*
 * errors.c — names and messages of the loader's error codes and of the
 * candidate outcomes and sources. Kept in one table each so that the text a
 * user reads, the JSON a script reads and the enum a program tests can
 * never drift apart.
 */
#include "internal.h"

const char* pt_strerror(int err) {
  switch (err) {
#define PT_ERRNO_MSG_(code, value, msg) \
  case code:                            \
    return msg;
    PT_ERRNO_MAP(PT_ERRNO_MSG_)
#undef PT_ERRNO_MSG_
  }
  return "unknown error";
}

const char* pt_err_name(int err) {
  switch (err) {
#define PT_ERRNO_NAME_(code, value, msg) \
  case code:                             \
    return #code;
    PT_ERRNO_MAP(PT_ERRNO_NAME_)
#undef PT_ERRNO_NAME_
  }
  return "PT_E?";
}

const char* pt_outcome_name(pt_outcome o) {
  switch (o) {
    case PT_CAND_OK: return "ok";
    case PT_CAND_NOT_TRIED: return "not tried";
    case PT_CAND_NOT_FOUND: return "not found";
    case PT_CAND_TOO_LONG: return "name too long";
    case PT_CAND_UNREADABLE: return "unreadable";
    case PT_CAND_NOT_ELF: return "not an ELF shared object";
    case PT_CAND_LOAD_ERROR: return "load error";
    case PT_CAND_WRONG_MAJOR: return "wrong major version";
    case PT_CAND_NO_SYMBOL: return "no known ncclProfiler symbol";
    case PT_CAND_BAD_TABLE: return "invalid ncclProfiler table";
    case PT_CAND_DUPLICATE: return "duplicate";
  }
  return "?";
}

const char* pt_source_name(pt_source s) {
  switch (s) {
    case PT_SRC_DEFAULT: return "default name";
    case PT_SRC_VALUE: return "value";
    case PT_SRC_SHORT_NAME: return "short name";
    case PT_SRC_STATIC: return "main program";
    case PT_SRC_AUTOLOAD: return "auto-load";
    case PT_SRC_NET_PLUGIN: return "net plugin";
    case PT_SRC_HOME: return "PROXYTRACE_HOME";
  }
  return "?";
}
