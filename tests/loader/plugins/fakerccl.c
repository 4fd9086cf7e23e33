/*
 * fakerccl.c — a stand-in for librccl.so: the auto-load rule looks for the
 * plugin in the directory of the librccl loaded in the process, found with
 * dladdr. Loading this file is enough to be "RCCL" for that purpose.
 */
__attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  if (version) *version = 22800;
  return 0;
}
