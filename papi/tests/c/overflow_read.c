/* PAPI_read from an overflow handler while the program reads the same set in a loop, as
 * PAPI allows (PAPI 7.0's ctests/overflow_one_and_read reads its set from its handler):
 * perf::TASK-CLOCK overflows every 50 microseconds of CPU time while the main loop calls
 * PAPI_read for 300 ms. papi/tests/overflow.rs runs it on ours with a time limit. Prints the
 * handler's calls, the reads that failed (in the handler or the loop) and the loop's turns. */
#include <stdio.h>
#include <papi.h>

static volatile int calls, bad_reads;
static int set = PAPI_NULL;

static void handler(int event_set, void *address, long long vector, void *context) {
    long long value[1];
    (void)event_set;
    (void)address;
    (void)vector;
    (void)context;
    calls++;
    if (PAPI_read(set, value) != PAPI_OK) bad_reads++;
}

int main(void) {
    int code = 0, r;
    long long value[1], t0;
    long loops = 0;

    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 2;
    PAPI_create_eventset(&set);
    PAPI_event_name_to_code("perf::TASK-CLOCK", &code);
    if ((r = PAPI_add_event(set, code)) != PAPI_OK) { printf("add %d\n", r); return 1; }
    if ((r = PAPI_overflow(set, code, 50000, 0, handler)) != PAPI_OK) { printf("overflow %d\n", r); return 1; }
    if ((r = PAPI_start(set)) != PAPI_OK) { printf("start %d\n", r); return 1; }
    t0 = PAPI_get_real_usec();
    while (PAPI_get_real_usec() - t0 < 300000) {
        if (PAPI_read(set, value) != PAPI_OK) bad_reads++;
        loops++;
    }
    if ((r = PAPI_stop(set, value)) != PAPI_OK) { printf("stop %d\n", r); return 1; }
    printf("calls %d bad_reads %d loops %ld\n", calls, bad_reads, loops);
    return 0;
}
