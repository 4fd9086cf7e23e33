/*
 * fixtures.h — files and processes for the loader tests: the test plugins
 * built next to the test programs, scratch directories that are removed at
 * exit, and child processes with a chosen environment (the dynamic linker
 * reads LD_LIBRARY_PATH only when a process starts, so every case that
 * depends on it runs in a fresh process).
 */
#ifndef PT_TESTS_LOADER_FIXTURES_H
#define PT_TESTS_LOADER_FIXTURES_H

#include <stddef.h>

/* Path of a test plugin built by mk/loader.mk: <dir of this test>/plugins/NAME.so */
const char* fx_plugin(const char* name);
/* Path of a program in the build folder, relative to the folder of this test
 * ("../../proxytrace"), resolved. */
const char* fx_built(const char* rel);
/* A new directory (mode 0755) under $TMPDIR, removed at exit. */
const char* fx_tmpdir(void);
/* mkdir -p (0755). */
void fx_mkdirs(const char* path);
void fx_copy(const char* from, const char* to);
void fx_symlink(const char* target, const char* link);
void fx_write(const char* path, const char* text);
/* printf into a static ring of buffers (valid for the next 16 calls). */
const char* fx_fmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run argv with exactly envp (NULL-terminated), in cwd (NULL = here), as
 * user "nobody" when drop_root and running as root. Captures stdout into
 * out. Returns the exit status, or 128 + signal. */
int fx_run(char* const argv[], char* const envp[], const char* cwd, int drop_root, char* out,
           size_t n);

#endif
