/* Whose handler PAPI_overflow calls: PAPI 7.0 keeps one handler per event set, the one the
 * last PAPI_overflow call named (papi.c: `ESI->overflow.handler = handler` at every call),
 * for every event that overflows in it. perf::PAGE-FAULTS and perf::MINOR-FAULTS, a threshold
 * of 10, 1,000 fresh pages per round. papi/tests/overflow.rs runs it on Debian's PAPI 7.0 and
 * on ours and compares line by line.
 *
 * With "null" as the argument, a set that overflows is given a NULL handler and started:
 * PAPI 7.0 then calls NULL and dies of SIGSEGV, so this part runs on ours alone. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <papi.h>

#define SHOW(what, value) printf("%s = %d\n", what, (int)(value))

static volatile int first_calls, second_calls;

static void first(int event_set, void *address, long long vector, void *context) {
    (void)event_set;
    (void)address;
    (void)vector;
    (void)context;
    first_calls++;
}

static void second(int event_set, void *address, long long vector, void *context) {
    (void)event_set;
    (void)address;
    (void)vector;
    (void)context;
    second_calls++;
}

/* Touches 1,000 fresh pages with `set` running: 1,000 page faults. */
static void round_of_faults(int set) {
    long page = sysconf(_SC_PAGESIZE);
    long long counts[2];
    char *memory = mmap(NULL, (size_t)(1000 * page), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    first_calls = second_calls = 0;
    SHOW("start", PAPI_start(set));
    for (int i = 0; i < 1000; i++)
        memory[(long)i * page] = 1;
    SHOW("stop", PAPI_stop(set, counts));
    munmap(memory, (size_t)(1000 * page));
}

/* A set of both events, neither overflowing. */
static int fresh_set(int faults, int minor) {
    int set = PAPI_NULL;
    PAPI_create_eventset(&set);
    PAPI_add_event(set, faults);
    PAPI_add_event(set, minor);
    return set;
}

static void drop(int *set) {
    PAPI_cleanup_eventset(*set);
    PAPI_destroy_eventset(set);
}

int main(int argc, char **argv) {
    int faults = 0, minor = 0, set, state;

    setvbuf(stdout, NULL, _IONBF, 0);
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
        return 2;
    SHOW("perf::PAGE-FAULTS", PAPI_event_name_to_code("perf::PAGE-FAULTS", &faults));
    SHOW("perf::MINOR-FAULTS", PAPI_event_name_to_code("perf::MINOR-FAULTS", &minor));

    if (argc > 1 && strcmp(argv[1], "null") == 0) {
        set = fresh_set(faults, minor);
        SHOW("overflow with the first handler", PAPI_overflow(set, faults, 10, 0, first));
        SHOW("overflow with a NULL handler", PAPI_overflow(set, faults, 10, 0, NULL));
        round_of_faults(set);
        printf("first handler called %d\n", first_calls);
        PAPI_overflow(set, faults, 0, 0, NULL);
        drop(&set);
        return 0;
    }

    printf("-- one event, its handler replaced\n");
    set = fresh_set(faults, minor);
    SHOW("overflow with the first handler", PAPI_overflow(set, faults, 10, 0, first));
    SHOW("overflow with the second, every 20", PAPI_overflow(set, faults, 20, 0, second));
    round_of_faults(set);
    printf("first handler called %d, second %d\n", first_calls, second_calls);
    PAPI_overflow(set, faults, 0, 0, NULL);
    drop(&set);

    printf("-- two events, a handler each\n");
    set = fresh_set(faults, minor);
    SHOW("page faults with the first handler", PAPI_overflow(set, faults, 10, 0, first));
    SHOW("minor faults with the second", PAPI_overflow(set, minor, 10, 0, second));
    round_of_faults(set);
    printf("first handler called %d, second called %d\n", first_calls, second_calls > 0);
    PAPI_overflow(set, faults, 0, 0, second);
    PAPI_overflow(set, minor, 0, 0, second);
    drop(&set);

    printf("-- the second event turned off with the second handler\n");
    set = fresh_set(faults, minor);
    SHOW("page faults with the first handler", PAPI_overflow(set, faults, 10, 0, first));
    SHOW("minor faults with the first handler", PAPI_overflow(set, minor, 10, 0, first));
    SHOW("minor faults off, naming the second", PAPI_overflow(set, minor, 0, 0, second));
    round_of_faults(set);
    printf("first handler called %d, second %d\n", first_calls, second_calls);
    PAPI_overflow(set, faults, 0, 0, second);
    drop(&set);

    printf("-- NULL handlers\n");
    set = fresh_set(faults, minor);
    SHOW("overflow with a NULL handler first", PAPI_overflow(set, faults, 10, 0, NULL));
    SHOW("overflow with the first handler", PAPI_overflow(set, faults, 10, 0, first));
    SHOW("then with a NULL handler", PAPI_overflow(set, faults, 10, 0, NULL));
    SHOW("minor faults with a NULL handler", PAPI_overflow(set, minor, 10, 0, NULL));
    PAPI_state(set, &state);
    SHOW("overflowing", (state & PAPI_OVERFLOWING) != 0);
    SHOW("minor faults off with a NULL handler", PAPI_overflow(set, minor, 0, 0, NULL));
    SHOW("page faults off with a NULL handler", PAPI_overflow(set, faults, 0, 0, NULL));
    PAPI_state(set, &state);
    SHOW("overflowing", (state & PAPI_OVERFLOWING) != 0);
    SHOW("a NULL handler once it no longer overflows", PAPI_overflow(set, faults, 10, 0, NULL));
    SHOW("the second handler", PAPI_overflow(set, faults, 10, 0, second));
    round_of_faults(set);
    printf("first handler called %d, second %d\n", first_calls, second_calls);
    PAPI_overflow(set, faults, 0, 0, NULL);
    drop(&set);
    PAPI_shutdown();
    return 0;
}
