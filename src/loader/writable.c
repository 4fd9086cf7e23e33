/*
 * writable.c — notes about places other users can write. The host loads
 * whatever file it finds there, so a plugin file, or the directory holding
 * it, that every user can write lets anyone on the machine run code in the
 * job; and a PROXYTRACE_HOME directory every user can write lets anyone add
 * a newer versioned file, which is tried first. Neither stops a load (the
 * host would load it): each gets a note that says what to change.
 */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

/* World-writable? Sets *mode to the permission bits. */
static int world_writable(const char* path, mode_t* mode) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  *mode = st.st_mode & 07777;
  return (st.st_mode & S_IWOTH) != 0;
}

static void dir_of(const char* file, char* dir, size_t n) {
  char copy[PATH_MAX];
  snprintf(copy, sizeof copy, "%s", file);
  snprintf(dir, n, "%s", dirname(copy));
}

void pt_note_writable_plugin(pt_res* r, const char* file) {
  if (!file || !*file) return;
  mode_t mode;
  if (world_writable(file, &mode)) {
    pt_res_note(r,
                "%s is writable by every user (mode %04o): anyone on this machine can change "
                "the plugin this job loads. Run chmod o-w on it.",
                file, (unsigned)mode);
    return;
  }
  char dir[PATH_MAX];
  dir_of(file, dir, sizeof dir);
  /* With the sticky bit (/tmp) others cannot replace a file they do not own. */
  if (world_writable(dir, &mode) && !(mode & S_ISVTX))
    pt_res_note(r,
                "%s is in %s, which every user can write (mode %04o, no sticky bit): anyone "
                "on this machine can replace the plugin this job loads. Install it in a "
                "directory only its owner can write.",
                file, dir, (unsigned)mode);
}

void pt_note_writable_home(pt_res* r, const char* dir) {
  mode_t mode;
  if (world_writable(dir, &mode))
    pt_res_note(r,
                "PROXYTRACE_HOME directory %s is writable by every user (mode %04o): anyone on "
                "this machine can add a newer %s.* there, which is tried first. Run chmod o-w "
                "on it.",
                dir, (unsigned)mode, PT_PLUGIN_STEM);
}
