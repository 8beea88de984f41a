/* PAPI_overflow on a software event: perf::PAGE-FAULTS with a threshold of 10 while 1,000
 * fresh pages are touched. papi/tests/overflow.rs runs it on Debian's PAPI 7.0 and on ours.
 * Prints the handler's calls, the count PAPI_stop gives, and what the handler was given. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <papi.h>

static volatile int calls, bad_set, bad_vector, set = PAPI_NULL;

static void handler(int event_set, void *address, long long vector, void *context) {
    (void)address;
    (void)context;
    calls++;
    if (event_set != set) bad_set++;
    if (vector != 1) bad_vector++;
}

int main(void) {
    int code = 0, r, pages = 1000, index[4], n = 4;
    long long count = 0;
    long page = sysconf(_SC_PAGESIZE);
    char *memory;

    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 2;
    PAPI_create_eventset((int *)&set);
    PAPI_event_name_to_code("perf::PAGE-FAULTS", &code);
    if ((r = PAPI_add_event(set, code)) != PAPI_OK) { printf("add %d\n", r); return 1; }
    if ((r = PAPI_overflow(set, code, 10, 0, handler)) != PAPI_OK) { printf("overflow %d\n", r); return 1; }
    memory = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((r = PAPI_start(set)) != PAPI_OK) { printf("start %d\n", r); return 1; }
    for (int i = 0; i < pages; i++) memory[(long)i * page] = 1;
    if ((r = PAPI_stop(set, &count)) != PAPI_OK) { printf("stop %d\n", r); return 1; }
    printf("calls %d count %lld bad_set %d bad_vector %d\n", calls, count, bad_set, bad_vector);
    r = PAPI_get_overflow_event_index(set, 1, index, &n);
    printf("index %d n %d first %d\n", r, n, index[0]);
    printf("off %d\n", PAPI_overflow(set, code, 0, 0, handler));
    return 0;
}
