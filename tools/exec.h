/*
 * exec.h — starting a program of this build from another one, through the
 * emulator named by PROXYTRACE_EMULATOR when there is one (tools/exec.c).
 */
#ifndef PT_TOOLS_EXEC_H
#define PT_TOOLS_EXEC_H

/* What to pass to execv/execve to start `path` with the argument vector
 * `args` (args[0] is the name the program gets). Without an emulator
 * (PROXYTRACE_EMULATOR unset or empty): *file = path, argv = args. With one:
 * *file = the emulator (its first word, looked up in PATH), argv = [emulator
 * words..., path, args[1..]]; "/proc/self/exe" becomes this program's real
 * path, since the emulator would open its own. One malloc'd block holds the
 * vector, the strings and *file: free() the vector. NULL with errno set on
 * failure (ENOENT: the emulator is not in PATH). */
char** pt_exec_argv(const char* path, char* const args[], const char** file);

#endif
