/*
 * commands.h — the subcommands of the `proxytrace` CLI. Each lives in its own
 * file under tools/ and is reached through the table in proxytrace.c.
 * Every command returns the process exit status and prints its own --help.
 */
#ifndef PT_TOOLS_COMMANDS_H
#define PT_TOOLS_COMMANDS_H

int pt_cmd_probe(int argc, char** argv); /* tools/probe.c */
int pt_cmd_sim(int argc, char** argv);   /* tools/sim/ */
int pt_cmd_demo(int argc, char** argv);  /* tools/demo.c */
int pt_cmd_top(int argc, char** argv);   /* tools/top.c */
/* analyze --follow DIR (tools/follow.c): 0 nothing slow at the end, 1 an
 * edge slow, 2 DIR unreadable or out of memory. for_s 0: until a signal. */
int pt_follow(const char* dir, long interval_ms, double window_s, double for_s);
int pt_cmd_analyze(int argc, char** argv); /* tools/analyze.c */
int pt_cmd_doctor(int argc, char** argv);  /* tools/doctor.c */
int pt_cmd_selftest(int argc, char** argv); /* tools/selftest.c: runs python/proxytrace/_selftest.py */

#endif
