/* PAPI's granularities (papi/tests/domains.rs): PAPI_GRANUL set before a component, after
   one, after an event, and PAPI_set_granularity's default, each on a set of perf::PAGE-FAULTS
   while a child pinned to CPU 0 touches 2,000 fresh pages (this process runs on CPU 0 too, so
   PAPI_GRN_SYS binds the set there). A line per answer; "counted" says whether the set saw
   the child's faults. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "papi.h"

enum { PAGES = 2000 };

static void on_cpu0(void) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
}

/* A child on CPU 0 takes one fault per fresh page. */
static void child_faults(void) {
  pid_t child = fork();
  if (child == 0) {
    on_cpu0();
    char *p = mmap(0, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(p, PAGES * 4096, MADV_NOHUGEPAGE);
    for (int i = 0; i < PAGES; i++) p[i * 4096] = 1;
    _exit(0);
  }
  waitpid(child, 0, 0);
}

/* when: 0 never sets PAPI_GRANUL, 1 before a component, 2 after PAPI_assign_eventset_component,
   3 after the event is added. */
static void run(const char *how, int when) {
  int es = PAPI_NULL, r;
  long long value = -1;
  PAPI_option_t o;
  PAPI_create_eventset(&es);
  memset(&o, 0, sizeof o);
  o.granularity.eventset = es;
  o.granularity.granularity = PAPI_GRN_SYS;
  if (when == 1) printf("%s: granul %d\n", how, PAPI_set_opt(PAPI_GRANUL, &o));
  if (when == 2) {
    PAPI_assign_eventset_component(es, 0);
    printf("%s: granul %d\n", how, PAPI_set_opt(PAPI_GRANUL, &o));
    for (int g = PAPI_GRN_THR; g <= PAPI_GRN_SYS_CPU; g <<= 1) {
      if (g == PAPI_GRN_SYS) continue;
      PAPI_option_t other;
      memset(&other, 0, sizeof other);
      other.granularity.eventset = es;
      other.granularity.granularity = g == PAPI_GRN_THR ? 3 : g;
      printf("%s: granul %d: %d\n", how, other.granularity.granularity,
             PAPI_set_opt(PAPI_GRANUL, &other));
    }
  }
  printf("%s: add %d\n", how, PAPI_add_named_event(es, "perf::PAGE-FAULTS"));
  if (when == 3) printf("%s: granul %d\n", how, PAPI_set_opt(PAPI_GRANUL, &o));
  memset(&o, 0, sizeof o);
  o.granularity.eventset = es;
  r = PAPI_get_opt(PAPI_GRANUL, &o);
  printf("%s: get granul %d value %d\n", how, r, o.granularity.granularity);
  memset(&o, 0, sizeof o);
  o.domain.eventset = es;
  r = PAPI_get_opt(PAPI_DOMAIN, &o);
  printf("%s: get domain %d value %d\n", how, r, o.domain.domain);
  printf("%s: start %d\n", how, PAPI_start(es));
  child_faults();
  r = PAPI_stop(es, &value);
  printf("%s: stop %d counted %d\n", how, r, value >= PAGES);
  PAPI_cleanup_eventset(es);
  PAPI_destroy_eventset(&es);
}

int main(void) {
  on_cpu0();
  if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 1;
  run("thread", 0);
  run("before a component", 1);
  run("after a component", 2);
  run("after an event", 3);
  for (int g = PAPI_GRN_THR; g <= PAPI_GRN_SYS_CPU; g <<= 1)
    printf("set_granularity %d: %d\n", g, PAPI_set_granularity(g));
  printf("set_granularity 3: %d\n", PAPI_set_granularity(3));
  printf("default granularity %d\n", PAPI_get_opt(PAPI_DEFGRN, NULL));
  run("default", 0);
  printf("default domain %d\n", PAPI_get_opt(PAPI_DEFDOM, NULL));
  /* PAPI_set_multiplex before a component: PAPI_ENOCMP (on a set of the thread). */
  PAPI_set_granularity(PAPI_GRN_THR);
  int es = PAPI_NULL;
  PAPI_create_eventset(&es);
  printf("set_multiplex unbound %d\n", PAPI_set_multiplex(es));
  PAPI_option_t o;
  memset(&o, 0, sizeof o);
  o.multiplex.eventset = es;
  printf("set_opt multiplex unbound %d\n", PAPI_set_opt(PAPI_MULTIPLEX, &o));
  return 0;
}
