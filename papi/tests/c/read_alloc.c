/* The read calls allocate nothing, as an overflow handler may call them and the thread it
 * interrupted may be inside malloc: the program's own malloc, calloc, realloc and aligned
 * allocators (which the library's calls reach before the C library's) count what
 * PAPI_read, PAPI_read_ts and PAPI_accum allocate over 1,000 calls each on a started set of
 * two software events, after one call of each. Prints each call's allocations.
 * papi/tests/overflow.rs runs it on ours. */
#include <stddef.h>
#include <stdio.h>
#include <papi.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *old, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static int counting;
static long allocations;

static void counted(void) {
    if (counting) allocations++;
}

void *malloc(size_t size) {
    counted();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    counted();
    return __libc_calloc(count, size);
}

void *realloc(void *old, size_t size) {
    counted();
    return __libc_realloc(old, size);
}

void *memalign(size_t alignment, size_t size) {
    counted();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    counted();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    counted();
    *out = __libc_memalign(alignment, size);
    return *out ? 0 : 12;
}

int main(void) {
    const char *names[2] = {"perf::TASK-CLOCK", "perf::PAGE-FAULTS"};
    int set = PAPI_NULL, code, i;
    long long values[2], sums[2] = {0, 0}, cycles;
    long read, read_ts, accum;

    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 2;
    if (PAPI_create_eventset(&set) != PAPI_OK) return 2;
    for (i = 0; i < 2; i++) {
        if (PAPI_event_name_to_code(names[i], &code) != PAPI_OK || PAPI_add_event(set, code) != PAPI_OK) {
            printf("cannot add %s\n", names[i]);
            return 1;
        }
    }
    if (PAPI_start(set) != PAPI_OK) return 1;
    if (PAPI_read(set, values) != PAPI_OK || PAPI_read_ts(set, values, &cycles) != PAPI_OK ||
        PAPI_accum(set, sums) != PAPI_OK)
        return 1;
    counting = 1;
    allocations = 0;
    for (i = 0; i < 1000; i++)
        if (PAPI_read(set, values) != PAPI_OK) return 1;
    read = allocations;
    allocations = 0;
    for (i = 0; i < 1000; i++)
        if (PAPI_read_ts(set, values, &cycles) != PAPI_OK) return 1;
    read_ts = allocations;
    allocations = 0;
    for (i = 0; i < 1000; i++)
        if (PAPI_accum(set, sums) != PAPI_OK) return 1;
    accum = allocations;
    counting = 0;
    printf("PAPI_read %ld PAPI_read_ts %ld PAPI_accum %ld\n", read, read_ts, accum);
    return PAPI_stop(set, values) == PAPI_OK ? 0 : 1;
}
