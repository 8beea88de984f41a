/* Rules of event sets, as PAPI 7.0 has them; papi/tests/side_by_side.rs runs each mode against
 * Debian's PAPI and ours and compares line by line.
 * - "cleanup": PAPI_cleanup_eventset leaves a set as new (papi_internal.c
 *   _papi_hwi_cleanup_eventset): no component (PAPI_start is PAPI_ENOCMP, and
 *   PAPI_assign_eventset_component takes one again), no domain or granularity until then, no
 *   multiplexing. Lines marked [pmu] are answers PAPI 7.0's perf_event component gives where
 *   the kernel has a core PMU (its PAPI_set_multiplex opens a hardware event to check);
 *   without one it answers PAPI_ENOEVNT there, and the test says what it compares then.
 *   The multiplexing timer's interval is read as papi_multiplex_cost reads it.
 * - "cpu": a set has one CPU binding, as a perf group has: an event whose `cpu` qualifier
 *   differs from the set's events' (a qualifier, or none for the thread wherever it runs) is
 *   PAPI_EINVAL, the kernel's refusal; the set counts what it held. The thread is pinned to
 *   one CPU, the qualifiers name another where there is one.
 * - "fork": a child of a process whose set counts calls on that set ("[parent's set]"
 *   lines), then makes and counts a set of its own; the parent then counts its own work, its
 *   count held against the kernel's CPU clock of its thread over the same work. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <papi.h>

#define SHOW(what, value) printf("%s = %d\n", what, (int)(value))

/* The set's domain (PAPI_DOMAIN) or granularity (PAPI_GRANUL), or PAPI's error. */
static int option(int which, int set) {
    PAPI_option_t o;
    memset(&o, 0, sizeof o);
    o.domain.eventset = set;
    int r = PAPI_get_opt(which, &o);
    if (r < 0)
        return r;
    return which == PAPI_DOMAIN ? o.domain.domain : o.granularity.granularity;
}

static int state(int set) {
    int s = -1;
    int r = PAPI_state(set, &s);
    return r < 0 ? r : s;
}

static void cleanup(void) {
    int set = PAPI_NULL;
    long long value = 0;
    SHOW("create", PAPI_create_eventset(&set));
    SHOW("add", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("start", PAPI_start(set));
    SHOW("stop", PAPI_stop(set, &value));
    SHOW("cleanup", PAPI_cleanup_eventset(set));
    SHOW("state after cleanup", state(set));
    SHOW("events after cleanup", PAPI_num_events(set));
    SHOW("domain after cleanup", option(PAPI_DOMAIN, set));
    SHOW("granularity after cleanup", option(PAPI_GRANUL, set));
    SHOW("start after cleanup", PAPI_start(set));
    SHOW("assign after cleanup", PAPI_assign_eventset_component(set, 0));
    SHOW("domain after assign", option(PAPI_DOMAIN, set));
    SHOW("granularity after assign", option(PAPI_GRANUL, set));
    SHOW("add after assign", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("start again", PAPI_start(set));
    SHOW("stop again", PAPI_stop(set, &value));
    SHOW("counted", value > 0);
    SHOW("cleanup again", PAPI_cleanup_eventset(set));
    /* papi_multiplex_cost's round: a multiplexed set cleaned up, assigned and multiplexed
       again, with the interval PAPI_DEF_ITIMER gives. */
    PAPI_option_t timer;
    memset(&timer, 0x5a, sizeof timer);
    SHOW("itimer", PAPI_get_opt(PAPI_DEF_ITIMER, &timer));
    SHOW("itimer num", timer.itimer.itimer_num);
    SHOW("itimer sig", timer.itimer.itimer_sig);
    SHOW("itimer ns", timer.itimer.ns);
    SHOW("itimer flags", timer.itimer.flags);
    memset(&timer, 0x5a, sizeof timer);
    SHOW("mpx ns", PAPI_get_opt(PAPI_DEF_MPX_NS, &timer));
    SHOW("mpx ns value", timer.multiplex.ns);
    SHOW("assign", PAPI_assign_eventset_component(set, 0));
    SHOW("[pmu] multiplex", PAPI_set_multiplex(set));
    SHOW("[pmu] multiplexed", PAPI_get_multiplex(set));
    SHOW("[pmu] add multiplexed", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("cleanup multiplexed", PAPI_cleanup_eventset(set));
    SHOW("multiplexed after cleanup", PAPI_get_multiplex(set));
    SHOW("state of the multiplexed after cleanup", state(set));
    SHOW("assign the multiplexed again", PAPI_assign_eventset_component(set, 0));
    SHOW("[pmu] multiplex again", PAPI_set_multiplex(set));
    SHOW("[pmu] multiplexed again", PAPI_get_multiplex(set));
    SHOW("cleanup at the end", PAPI_cleanup_eventset(set));
    SHOW("destroy", PAPI_destroy_eventset(&set));
}

static volatile double sink;

static void work(void) {
    for (int i = 0; i < 3000000; i++)
        sink += i * 0.5;
}

/* Adds perf::EVENT:cpu=CPU to `set`. */
static int add_on(int set, const char *event, int cpu) {
    char name[64];
    snprintf(name, sizeof name, "perf::%s:cpu=%d", event, cpu);
    return PAPI_add_named_event(set, name);
}

static void cpu_binding(void) {
    cpu_set_t mask;
    int here = sched_getcpu(), there = here;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (c != here && CPU_ISSET(c, &mask)) {
                there = c;
                break;
            }
    CPU_ZERO(&mask);
    CPU_SET(here, &mask);
    sched_setaffinity(0, sizeof mask, &mask);
    int set = PAPI_NULL;
    long long values[3] = {0, 0, 0};
    SHOW("create", PAPI_create_eventset(&set));
    SHOW("add the thread's", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("add one of another cpu", add_on(set, "CS", there));
    SHOW("add one of this cpu", add_on(set, "PAGE-FAULTS", here));
    SHOW("events", PAPI_num_events(set));
    SHOW("start", PAPI_start(set));
    work();
    SHOW("stop", PAPI_stop(set, values));
    SHOW("counted the thread", values[0] > 0);
    SHOW("cleanup", PAPI_cleanup_eventset(set));
    SHOW("add one of a cpu first", add_on(set, "TASK-CLOCK", there));
    SHOW("add the thread's after", PAPI_add_named_event(set, "perf::CS"));
    SHOW("add one of the same cpu", add_on(set, "MINOR-FAULTS", there));
    SHOW("events of the cpu", PAPI_num_events(set));
    SHOW("cleanup at the end", PAPI_cleanup_eventset(set));
    SHOW("destroy", PAPI_destroy_eventset(&set));
}

/* The calling thread's CPU time, in nanoseconds (the kernel's clock, the oracle). */
static long long thread_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void forked(void) {
    int set = PAPI_NULL;
    long long before = 0, after = 0;
    SHOW("create", PAPI_create_eventset(&set));
    SHOW("add", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("start", PAPI_start(set));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        long long value = 0;
        int status = 0, own = PAPI_NULL;
        SHOW("[parent's set] read in the child", PAPI_read(set, &value));
        SHOW("[parent's set] state in the child", PAPI_state(set, &status));
        SHOW("[parent's set] stop in the child", PAPI_stop(set, &value));
        SHOW("[parent's set] reset in the child", PAPI_reset(set));
        SHOW("[parent's set] cleanup in the child", PAPI_cleanup_eventset(set));
        SHOW("init in the child", PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT);
        SHOW("create in the child", PAPI_create_eventset(&own));
        SHOW("add in the child", PAPI_add_named_event(own, "perf::TASK-CLOCK"));
        SHOW("start in the child", PAPI_start(own));
        work();
        SHOW("stop in the child", PAPI_stop(own, &value));
        SHOW("the child counted", value > 0);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    SHOW("the child ended", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    SHOW("read in the parent", PAPI_read(set, &before));
    long long clock = thread_ns();
    work();
    clock = thread_ns() - clock;
    SHOW("stop in the parent", PAPI_stop(set, &after));
    /* task-clock counts the thread's time on a CPU, as the kernel's clock does. */
    SHOW("the parent counted its work", after - before >= clock / 2);
    SHOW("cleanup in the parent", PAPI_cleanup_eventset(set));
    SHOW("destroy in the parent", PAPI_destroy_eventset(&set));
}

int main(int argc, char **argv) {
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
        return 1;
    if (argc > 1 && strcmp(argv[1], "cleanup") == 0)
        cleanup();
    if (argc > 1 && strcmp(argv[1], "cpu") == 0)
        cpu_binding();
    if (argc > 1 && strcmp(argv[1], "fork") == 0)
        forked();
    return 0;
}
