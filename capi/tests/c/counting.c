/* Counts page faults over touched pages and an exact getpid tracepoint through the C API,
 * then tries every misuse the header names. Prints one line per check; exits 1 on the
 * first failure. Argument: "tracepoint" when the getpid tracepoint is expected to count. */
#define _GNU_SOURCE
#include <counterhal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"

enum { PAGES = 512, GETPIDS = 1000 };

static int counting(counterhal_t *ch, int tracepoint) {
    counterhal_set_t *set = NULL;
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK && set != NULL);
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    int getpid_index = -1;
    if (tracepoint) {
        getpid_index = counterhal_set_add(set, "syscalls:sys_enter_getpid");
        CHECK(getpid_index == 1);
    }
    CHECK(counterhal_set_size(set) == (tracepoint ? 2 : 1));
    CHECK(strcmp(counterhal_set_event_name(set, 0), "page-faults") == 0);
    CHECK(counterhal_set_event_name(set, 7) == NULL);
    CHECK(counterhal_set_targets(set) == 1);

    long page = sysconf(_SC_PAGESIZE);
    char *memory = mmap(NULL, (size_t)(PAGES * page), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(memory != MAP_FAILED);
    counterhal_reading_t readings[2];
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    for (int i = 0; i < PAGES; i++) memory[(long)i * page] = 1;
    for (int i = 0; i < GETPIDS; i++) syscall(SYS_getpid);
    CHECK(counterhal_set_stop(set, readings, 2) == COUNTERHAL_OK);
    printf("page-faults %llu over %d touched pages\n", (unsigned long long)readings[0].value,
           PAGES);
    CHECK(readings[0].value >= PAGES);
    CHECK(readings[0].time_enabled > 0 && readings[0].time_running > 0);
    CHECK(counterhal_scaled(&readings[0]) == readings[0].value);
    if (tracepoint) {
        printf("sys_enter_getpid %llu for %d calls\n", (unsigned long long)readings[1].value,
               GETPIDS);
        CHECK(readings[1].value == GETPIDS);
    }
    /* After the stop a read gives the counts at the stop. */
    counterhal_reading_t again[2];
    CHECK(counterhal_set_read(set, again, 2) == COUNTERHAL_OK);
    CHECK(again[0].value == readings[0].value);
    /* A restart counts from zero, every member in every window: the getpid tracepoint under
     * its page-faults leader read 0 from the second window on while the Linux backend enabled
     * groups with the group flag. */
    static const int windows[] = {5, 7, 11};
    for (int w = 0; w < 3; w++) {
        CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
        for (int i = 0; i < windows[w]; i++) syscall(SYS_getpid);
        CHECK(counterhal_set_stop(set, again, 2) == COUNTERHAL_OK);
        if (tracepoint) {
            printf("sys_enter_getpid %llu for %d calls after restart %d\n",
                   (unsigned long long)again[1].value, windows[w], w + 1);
            CHECK(again[1].value == (unsigned long long)windows[w]);
        }
    }
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_read(set, again, 2) == COUNTERHAL_OK);
    CHECK(again[0].value < readings[0].value);
    CHECK(counterhal_set_reset(set) == COUNTERHAL_OK);
    counterhal_reading_t rows[2];
    CHECK(counterhal_set_read_each(set, rows, 2) == 1);
    CHECK(counterhal_set_stop(set, readings, 2) == COUNTERHAL_OK);
    counterhal_set_destroy(set);
    munmap(memory, (size_t)(PAGES * page));
    return 0;
}

static int misuse(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    counterhal_reading_t r[4];
    CHECK(counterhal_open(NULL, NULL) == COUNTERHAL_EINVAL);
    counterhal_t *other = NULL;
    CHECK(counterhal_open(&other, "nonesuch") == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "nonesuch") != NULL);
    CHECK(counterhal_set_create(NULL, &set) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_create(ch, NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_create_for(ch, 99, 0, NULL, &set) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, NULL, &set) ==
          COUNTERHAL_EINVAL);
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, "3-1", &set) ==
          COUNTERHAL_EINVAL);
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(NULL, "page-faults") == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_add(set, NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_add(set, "page-faultz") == COUNTERHAL_EEVENT);
    CHECK(strstr(counterhal_last_error(), "page-faults") != NULL); /* the nearest name */
    CHECK(counterhal_set_size(set) == 0);
    CHECK(counterhal_set_start(set) == COUNTERHAL_ESTATE); /* empty */
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    CHECK(counterhal_set_add(set, "page-faults") == COUNTERHAL_EINVAL); /* twice */
    CHECK(counterhal_set_add(set, "task-clock") == 1);
    CHECK(counterhal_set_read(set, r, 2) == COUNTERHAL_ESTATE); /* not started */
    CHECK(counterhal_set_reset(set) == COUNTERHAL_ESTATE);
    CHECK(counterhal_set_stop(set, r, 2) == COUNTERHAL_ESTATE);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_start(set) == COUNTERHAL_ESTATE);            /* running */
    CHECK(counterhal_set_add(set, "context-switches") == COUNTERHAL_ESTATE);
    CHECK(counterhal_set_read(set, r, 1) == COUNTERHAL_EINVAL);       /* short buffer */
    CHECK(strstr(counterhal_last_error(), "2 events") != NULL);
    CHECK(counterhal_set_read(set, NULL, 2) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_read(NULL, r, 2) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_stop(set, r, 0) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_read_each(set, r, 1) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_read(set, r, 4) == COUNTERHAL_OK);
    CHECK(counterhal_set_stop(set, r, 2) == COUNTERHAL_OK);
    counterhal_set_destroy(set);
    counterhal_set_destroy(NULL);
    counterhal_close(NULL);

    CHECK(counterhal_scaled(NULL) == 0);
    counterhal_reading_t never = {5, 100, 0}, half = {10, 100, 50};
    CHECK(counterhal_scaled(&never) == 0);
    CHECK(counterhal_scaled(&half) == 20);
    for (int code = COUNTERHAL_OK; code >= COUNTERHAL_EOTHER; code--)
        CHECK(counterhal_strerror(code) != NULL && counterhal_strerror(code)[0] != '\0');
    CHECK(strcmp(counterhal_strerror(12345), "unknown error code") == 0);
    CHECK(strcmp(counterhal_strerror(COUNTERHAL_ESTATE), "wrong state for this call") == 0);

    char encoding[128];
    CHECK(counterhal_query(ch, "page-faults", encoding, sizeof encoding) == COUNTERHAL_OK);
    CHECK(encoding[0] != '\0');
    /* A buffer too short is refused, never answered COUNTERHAL_OK with the encoding cut: the
     * last error names the length needed (snprintf's convention: the whole length, and the
     * text cut to fit, NUL-terminated). */
    char tiny[4], needs[64];
    CHECK(counterhal_query(ch, "page-faults", tiny, sizeof tiny) == COUNTERHAL_EINVAL);
    CHECK(strlen(tiny) == 3 && strncmp(tiny, encoding, 3) == 0);
    snprintf(needs, sizeof needs, "needs %zu with its NUL", strlen(encoding) + 1);
    CHECK(strstr(counterhal_last_error(), needs) != NULL);
    CHECK(counterhal_query(ch, "page-faults", encoding, strlen(encoding) + 1) == COUNTERHAL_OK);
    CHECK(counterhal_query(ch, "page-faultz", encoding, sizeof encoding) == COUNTERHAL_EEVENT);
    CHECK(counterhal_query(ch, "page-faults", NULL, 0) == COUNTERHAL_OK);
    CHECK(counterhal_query(ch, "page-faults", NULL, 8) == COUNTERHAL_EINVAL);
    CHECK(counterhal_query(NULL, "page-faults", NULL, 0) == COUNTERHAL_EINVAL);

    int total = counterhal_list(ch, NULL, NULL, 0);
    CHECK(total > 10);
    CHECK(counterhal_list(ch, NULL, NULL, 1) == COUNTERHAL_EINVAL);
    counterhal_event_info_t info[4];
    int faults = counterhal_list(ch, "page-faults", info, 4);
    CHECK(faults >= 1);
    CHECK(strcmp(info[0].name, "page-faults") == 0 && strcmp(info[0].section, "software") == 0);
    CHECK(info[0].usable == 1 && info[0].encoding != NULL);

    uint64_t t0 = counterhal_real_nsec(), v0 = counterhal_virt_nsec();
    volatile uint64_t spin = 0;
    for (int i = 0; i < 10000000; i++) spin += (uint64_t)i;
    CHECK(counterhal_real_nsec() > t0 && counterhal_virt_nsec() > v0);
    uint64_t c0 = counterhal_real_cyc();
    CHECK(c0 == 0 || counterhal_real_cyc() >= c0);

    CHECK(counterhal_region_begin(NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_region_end("never-begun") == COUNTERHAL_EINVAL);
    CHECK(counterhal_region_begin("loop") == COUNTERHAL_OK);
    for (int i = 0; i < 1000000; i++) spin += (uint64_t)i;
    CHECK(counterhal_region_end("loop") == COUNTERHAL_OK);
    CHECK(counterhal_region_report() == COUNTERHAL_OK);
    return 0;
}

int main(int argc, char **argv) {
    int tracepoint = argc > 1 && strcmp(argv[1], "tracepoint") == 0;
    counterhal_t *ch = NULL;
    CHECK(counterhal_open(&ch, NULL) == COUNTERHAL_OK && ch != NULL);
    printf("backend %s, CPU model %s\n", counterhal_backend(ch),
           counterhal_cpu_model(ch) ? counterhal_cpu_model(ch) : "(none)");
    if (counting(ch, tracepoint) != 0) return 1;
    if (misuse(ch) != 0) return 1;
    /* A set outlives its handle safely. */
    counterhal_set_t *late = NULL;
    CHECK(counterhal_set_create(ch, &late) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(late, "page-faults") == 0);
    counterhal_close(ch);
    CHECK(counterhal_set_start(late) == COUNTERHAL_OK);
    counterhal_reading_t r;
    CHECK(counterhal_set_stop(late, &r, 1) == COUNTERHAL_OK);
    counterhal_set_destroy(late);
    printf("all checks passed\n");
    return 0;
}
