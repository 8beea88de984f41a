/* One running event set per thread and component, as PAPI 7.0 allows (papi.c PAPI_start: a
 * second set of a thread whose set runs is PAPI_EISRUN, whichever thread starts it; a set of
 * another thread starts). papi/tests/side_by_side.rs runs it against Debian's PAPI and ours,
 * with and without PAPI_thread_init ("init" as the argument), and compares line by line. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <papi.h>

#define SHOW(what, value) printf("%s = %d\n", what, (int)(value))

static int main_b = PAPI_NULL;

static void *other_thread(void *unused) {
    int c = PAPI_NULL;
    long long values[2];
    (void)unused;
    SHOW("thread: create", PAPI_create_eventset(&c));
    SHOW("thread: add", PAPI_add_named_event(c, "perf::TASK-CLOCK"));
    SHOW("thread: start its own set beside the main thread's", PAPI_start(c));
    SHOW("thread: start a set of the main thread's", PAPI_start(main_b));
    SHOW("thread: stop it", PAPI_stop(main_b, values));
    SHOW("thread: stop its own", PAPI_stop(c, values));
    SHOW("thread: cleanup", PAPI_cleanup_eventset(c));
    SHOW("thread: destroy", PAPI_destroy_eventset(&c));
    return NULL;
}

int main(int argc, char **argv) {
    int a = PAPI_NULL, empty = PAPI_NULL, unassigned = PAPI_NULL, state = 0, created, initialised;
    long long values[2];
    pthread_t thread;

    setvbuf(stdout, NULL, _IONBF, 0);
    initialised = PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT;
    SHOW("cpu component enabled",
         PAPI_get_component_info(0) && !PAPI_get_component_info(0)->disabled);
    SHOW("init", initialised);
    if (argc > 1 && !strcmp(argv[1], "init"))
        SHOW("thread_init", PAPI_thread_init(pthread_self));
    SHOW("create a", PAPI_create_eventset(&a));
    SHOW("create b", PAPI_create_eventset(&main_b));
    SHOW("add to a", PAPI_add_named_event(a, "perf::PAGE-FAULTS"));
    SHOW("add to b", PAPI_add_named_event(main_b, "perf::TASK-CLOCK"));
    SHOW("start a", PAPI_start(a));
    SHOW("start a again", PAPI_start(a));
    SHOW("start b while a runs", PAPI_start(main_b));
    SHOW("state of b", PAPI_state(main_b, &state));
    SHOW("b is stopped", state);
    SHOW("stop b", PAPI_stop(main_b, values));
    SHOW("read b", PAPI_read(main_b, values));
    SHOW("create a set with no event", PAPI_create_eventset(&unassigned));
    SHOW("start it while a runs", PAPI_start(unassigned));
    SHOW("create an empty set", PAPI_create_eventset(&empty));
    SHOW("assign it to component 0", PAPI_assign_eventset_component(empty, 0));
    SHOW("start it while a runs", PAPI_start(empty));
    /* The thread prints its lines; its creation is told after them. */
    created = pthread_create(&thread, NULL, other_thread, NULL);
    SHOW("thread joined", created == 0 && pthread_join(thread, NULL) == 0);
    SHOW("stop a", PAPI_stop(a, values));
    SHOW("start the empty set", PAPI_start(empty));
    SHOW("start b", PAPI_start(main_b));
    SHOW("start a while b runs", PAPI_start(a));
    SHOW("add to a while b runs", PAPI_add_named_event(a, "perf::CS"));
    SHOW("stop b again", PAPI_stop(main_b, values));
    SHOW("start a", PAPI_start(a));
    SHOW("stop a again", PAPI_stop(a, values));
    SHOW("remove from a", PAPI_remove_named_event(a, "perf::CS"));
    SHOW("cleanup a", PAPI_cleanup_eventset(a));
    SHOW("destroy a", PAPI_destroy_eventset(&a));
    SHOW("start b with a gone", PAPI_start(main_b));
    SHOW("stop b at last", PAPI_stop(main_b, values));
    PAPI_shutdown();
    return 0;
}
