/*
 * proxytrace.c — entry point of the `proxytrace` CLI: dispatches to one
 * subcommand per file. Subcommands that a build does not include are declared
 * weak, so the CLI links and says plainly that the command is missing.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "proxytrace/loader.h"

#pragma weak pt_cmd_probe
#pragma weak pt_cmd_sim
#pragma weak pt_cmd_demo
#pragma weak pt_cmd_top
#pragma weak pt_cmd_analyze
#pragma weak pt_cmd_doctor
#pragma weak pt_cmd_selftest

struct command {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

static void usage(FILE* f, const struct command* cmds, size_t n) {
  fprintf(f,
          "usage: proxytrace <command> [options]\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < n; i++)
    fprintf(f, "  %-8s %s%s\n", cmds[i].name, cmds[i].summary,
            cmds[i].run ? "" : " (not in this build)");
  fprintf(f,
          "\nRun 'proxytrace <command> --help' for the options of one command;\n"
          "'proxytrace --version' prints the version.\n");
}

int main(int argc, char** argv) {
  const struct command cmds[] = {
      {"doctor", pt_cmd_doctor, "run in a job's environment: will it load the plugin and keep its dumps?"},
      {"probe", pt_cmd_probe, "show which profiler plugin a host would load, and why"},
      {"sim", pt_cmd_sim, "emulate NCCL/RCCL on the CPU and drive a profiler plugin"},
      {"analyze", pt_cmd_analyze, "read every rank's dumps, pair sends with receives, name the culprit"},
      {"demo", pt_cmd_demo, "run the demo job with the built plugin and summarise it"},
      {"top", pt_cmd_top, "a running job's step metrics per rank and peer, the slowest first"},
      {"selftest", pt_cmd_selftest, "run a tiny job with the plugin on this machine's GPU and check it end to end"},
  };
  const size_t n = sizeof cmds / sizeof cmds[0];
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout, cmds, n);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
    printf("proxytrace %s\n", pt_version());
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    if (strcmp(argv[1], cmds[i].name) != 0) continue;
    if (!cmds[i].run) {
      fprintf(stderr, "proxytrace: command '%s' is not in this build\n", argv[1]);
      return 2;
    }
    return cmds[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "proxytrace: unknown command '%s'\n\n", argv[1]);
  usage(stderr, cmds, n);
  return 2;
}
