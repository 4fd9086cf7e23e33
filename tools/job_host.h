/*
 * job_host.h — which NCCL or RCCL a job started here would load
 * (tools/job_host.c): `proxytrace doctor`'s host check and `proxytrace
 * probe`'s default host, one finding.
 */
#ifndef PT_TOOLS_JOB_HOST_H
#define PT_TOOLS_JOB_HOST_H

#include <stddef.h>

typedef struct {
  char profile[80];    /* for pt_host_parse: "2.28.9", "rccl"; "" = none found */
  char what[1280];     /* where it was found, in words */
  char rccl_dir[4096]; /* RCCL: the folder of the librccl the job loads; "" */
} pt_job_host;

/* The torch of `python` (NULL: torch is not asked), else the dynamic
 * linker's search path. 0 when found; -1 when neither has NCCL or RCCL. */
int pt_job_host_find(const char* python, pt_job_host* h);
/* What pt_job_host_find looked at when it found nothing, in words. */
void pt_job_host_none(char* b, size_t n, const char* python);

#endif
