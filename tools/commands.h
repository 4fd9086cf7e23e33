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
int pt_cmd_analyze(int argc, char** argv); /* tools/analyze.c */
int pt_cmd_doctor(int argc, char** argv);  /* tools/doctor.c */

#endif
