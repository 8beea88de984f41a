/* One perf:: name with libpfm4's qualifiers (argv[1]) in a set of its own, pinned to CPU 0:
   the answers of add, start and stop, and whether 4 million additions' task clock was seen:
   more than 1 ms of it (the loop takes 9 ms on the CI machine; an event that does not count
   it reads 0) (papi/tests/unit_masks.rs runs it on PAPI 7.0 and on ours, one process per
   name). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include "papi.h"
int main(int argc, char **argv) {
  if (argc != 2) return 2;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
  if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 1;
  int es = PAPI_NULL;
  long long value = -1;
  PAPI_create_eventset(&es);
  int added = PAPI_add_named_event(es, argv[1]);
  int started = PAPI_start(es);
  volatile double x = 0;
  for (int i = 0; i < 4000000; i++) x += i;
  int stopped = PAPI_stop(es, &value);
  printf("%s: add %d start %d stop %d counted %d\n", argv[1], added, started, stopped,
         value > 1000000);
  return 0;
}
