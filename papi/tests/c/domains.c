/* PAPI_DOMAIN on perf::PAGE-FAULTS over 1,000 fresh pages touched from user mode: the
   counts in the user, kernel and all domains (papi/tests/domains.rs); "touch" only touches. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include "papi.h"
static void touch(void) {
  char *p = mmap(0, 1000*4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  madvise(p, 1000*4096, MADV_NOHUGEPAGE);
  for (int i = 0; i < 1000; i++) p[i*4096] = 1;
  munmap(p, 1000*4096);
}
static long long count(int domain) {
  int es = PAPI_NULL; long long v = -1;
  PAPI_create_eventset(&es);
  int r = PAPI_add_named_event(es, "perf::PAGE-FAULTS");
  if (r) { printf("add %d\n", r); return r; }
  PAPI_option_t o;
  memset(&o, 0, sizeof o);
  o.domain.eventset = es; o.domain.domain = domain; o.domain.def_cidx = 0;
  r = PAPI_set_opt(PAPI_DOMAIN, &o);
  if (r) { printf("set domain %d: %d\n", domain, r); }
  char *p = mmap(0, 1000*4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  madvise(p, 1000*4096, MADV_NOHUGEPAGE);
  PAPI_start(es);
  for (int i = 0; i < 1000; i++) p[i*4096] = 1;
  PAPI_stop(es, &v);
  munmap(p, 1000*4096);
  PAPI_cleanup_eventset(es); PAPI_destroy_eventset(&es);
  return v;
}
int main(int argc, char **argv){
  if (argc > 1 && strcmp(argv[1], "touch") == 0) { touch(); return 0; }
  PAPI_library_init(PAPI_VER_CURRENT);
  /* Once uncounted: the first PAPI_stop runs code of the library not yet mapped, whose page
     fault (in user mode, while the event still counts) would be counted with the 1,000. */
  count(PAPI_DOM_ALL);
  printf("user %lld\n", count(PAPI_DOM_USER));
  printf("kernel %lld\n", count(PAPI_DOM_KERNEL));
  printf("all %lld\n", count(PAPI_DOM_ALL));
  return 0;
}
