/* Counts an energy PMU's alias and a software event over every CPU through the C API, and
 * prints what each count is in (counterhal_set_event_unit). Run where the energy PMU is the
 * one tests/units.rs mounts: `power` with the events energy-pkg (in Joules) and cas-read (in
 * MiB), both of the msr PMU's tsc, so that they count on any x86 machine. Prints one line per
 * event: NAME UNIT SCALE COUNT SCALED; exits 1 on the first failed check. */
#define _GNU_SOURCE
#include <counterhal.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(void) {
    static const char *const events[] = {"power/energy-pkg/", "power/cas-read/", "task-clock"};
    enum { N = sizeof events / sizeof events[0] };
    counterhal_t *ch = NULL;
    CHECK(counterhal_open(&ch, NULL) == COUNTERHAL_OK);
    counterhal_set_t *set = NULL;
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_ALL_CPUS, 0, NULL, &set) ==
          COUNTERHAL_OK);
    for (int i = 0; i < N; i++) {
        CHECK(counterhal_set_add(set, events[i]) == i);
    }
    double scale = -1.0;
    /* Misuse: no set, an index past the end; a NULL scale is allowed. */
    CHECK(counterhal_set_event_unit(NULL, 0, &scale) == NULL && scale == -1.0);
    CHECK(counterhal_set_event_unit(set, N, &scale) == NULL && scale == -1.0);
    CHECK(counterhal_set_event_unit(set, 0, NULL) != NULL);

    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    usleep(20000);
    counterhal_reading_t readings[N];
    CHECK(counterhal_set_stop(set, readings, N) == COUNTERHAL_OK);
    for (int i = 0; i < N; i++) {
        const char *unit = counterhal_set_event_unit(set, (size_t)i, &scale);
        CHECK(unit != NULL);
        uint64_t count = counterhal_scaled(&readings[i]);
        printf("%s %s %.17g %llu %.17g\n", events[i], unit[0] ? unit : "-", scale,
               (unsigned long long)count, (double)count * scale);
    }
    counterhal_set_destroy(set);
    counterhal_close(ch);
    return 0;
}
