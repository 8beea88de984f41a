/* PAPI_attach's answers as PAPI 7.0 gives them (papi.c PAPI_set_opt's PAPI_ATTACH, and the
 * perf_event component's check_permissions, which opens an event on the thread at once): no
 * such process is PAPI_ESYS at the attach, and the set then counts its own thread still.
 * papi/tests/side_by_side.rs runs it against Debian's PAPI and ours and compares line by line.
 * Lines marked [pmu] are PAPI's answers where its check opens a hardware event (instructions)
 * on the target: on a machine whose kernel exposes no core PMU PAPI answers PAPI_ENOEVNT for
 * every live target there (the calling thread, thread 0, included) and the set stays its
 * thread's; the test says what it compares then. Thread 0 is perf_event_open's pid 0, the
 * calling thread, which PAPI passes on as given: where its check opens, the set is attached
 * and counts the thread that attached it. An attached set does not overflow (PAPI_EINVAL). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <papi.h>

#define SHOW(what, value) printf("%s = %d\n", what, (int)(value))

/* Waits until `pid` has exited and is not yet reaped (its state in /proc is Z). */
static int wait_for_zombie(pid_t pid) {
    char path[64], stat[256];
    int tries;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    for (tries = 0; tries < 1000; tries++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
        const char *close;
        if (f)
            fclose(f);
        stat[n] = 0;
        close = strrchr(stat, ')');
        if (close && close[1] == ' ' && close[2] == 'Z')
            return 1;
        usleep(1000);
    }
    return 0;
}

static void handler(int event_set, void *address, long long vector, void *context) {
    (void)event_set;
    (void)address;
    (void)vector;
    (void)context;
}

int main(void) {
    int set = PAPI_NULL, fresh = PAPI_NULL, live = PAPI_NULL, zombie = PAPI_NULL;
    int reaped = PAPI_NULL, own = PAPI_NULL, status, initialised, clock = 0;
    long long values[1], start;
    pid_t child;
    PAPI_option_t option;

    setvbuf(stdout, NULL, _IONBF, 0);
    initialised = PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT;
    SHOW("cpu component enabled",
         PAPI_get_component_info(0) && !PAPI_get_component_info(0)->disabled);
    SHOW("init", initialised);
    SHOW("create", PAPI_create_eventset(&set));
    SHOW("create a set with no event", PAPI_create_eventset(&fresh));
    SHOW("attach it", PAPI_attach(fresh, 999999));
    SHOW("detach it", PAPI_detach(fresh));
    SHOW("add perf::TASK-CLOCK", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("detach a set not attached", PAPI_detach(set));
    SHOW("attach to no process", PAPI_attach(set, 999999));
    SHOW("state after", PAPI_state(set, &status));
    SHOW("the set is not attached", status);
    SHOW("start", PAPI_start(set));
    SHOW("stop", PAPI_stop(set, values));
    SHOW("attach to a thread id past 32 bits", PAPI_attach(set, (unsigned long)-1));
    memset(&option, 0, sizeof option);
    option.attach.eventset = set + 100;
    option.attach.tid = 999999;
    SHOW("PAPI_ATTACH of a missing set", PAPI_set_opt(PAPI_ATTACH, &option));
    option.attach.eventset = set;
    SHOW("PAPI_ATTACH to no process", PAPI_set_opt(PAPI_ATTACH, &option));

    SHOW("create for thread 0", PAPI_create_eventset(&own));
    SHOW("add", PAPI_add_named_event(own, "perf::TASK-CLOCK"));
    SHOW("[pmu] attach to thread 0", PAPI_attach(own, 0));
    SHOW("[pmu] attached", PAPI_state(own, &status) == PAPI_OK && (status & PAPI_ATTACHED));
    PAPI_event_name_to_code("perf::TASK-CLOCK", &clock);
    SHOW("[pmu] overflow on the attached set",
         PAPI_overflow(own, clock, 1000000000, 0, handler));
    SHOW("start", PAPI_start(own));
    for (start = PAPI_get_virt_usec(); PAPI_get_virt_usec() - start < 10000;)
        ;
    SHOW("stop", PAPI_stop(own, values));
    SHOW("it counted this thread's 10 ms (9 at least)", values[0] >= 9000000);
    SHOW("[pmu] detach", PAPI_detach(own));

    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    SHOW("create for a live child", PAPI_create_eventset(&live));
    SHOW("add", PAPI_add_named_event(live, "perf::TASK-CLOCK"));
    SHOW("[pmu] attach to a live child", PAPI_attach(live, child));
    SHOW("start", PAPI_start(live));
    SHOW("stop", PAPI_stop(live, values));
    kill(child, SIGKILL);
    waitpid(child, &status, 0);

    child = fork();
    if (child == 0)
        _exit(0);
    SHOW("the child is a zombie", wait_for_zombie(child));
    SHOW("create for a zombie", PAPI_create_eventset(&zombie));
    SHOW("add", PAPI_add_named_event(zombie, "perf::TASK-CLOCK"));
    SHOW("[pmu] attach to a zombie", PAPI_attach(zombie, child));
    SHOW("start", PAPI_start(zombie));
    SHOW("stop", PAPI_stop(zombie, values));
    waitpid(child, &status, 0);
    SHOW("create for a reaped child", PAPI_create_eventset(&reaped));
    SHOW("add", PAPI_add_named_event(reaped, "perf::TASK-CLOCK"));
    SHOW("attach to a reaped child", PAPI_attach(reaped, child));
    SHOW("start", PAPI_start(reaped));
    SHOW("stop", PAPI_stop(reaped, values));
    PAPI_shutdown();
    return 0;
}
