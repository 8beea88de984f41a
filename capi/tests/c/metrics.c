/* The C API's metric sets as a C tool misuses them: every refusal is a code with a message,
 * never a crash. Prints "ok" when every check held, else the failed check and exits 1. */
#include "check.h"

#include <stdio.h>
#include <string.h>

static int refusals(counterhal_t *ch) {
    counterhal_metrics_t *m = NULL;
    CHECK(counterhal_metrics_open(NULL, "IPC", COUNTERHAL_TARGET_THIS_THREAD, 0, NULL, &m) ==
          COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_open(ch, NULL, COUNTERHAL_TARGET_THIS_THREAD, 0, NULL, &m) ==
          COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_open(ch, "IPC", COUNTERHAL_TARGET_THIS_THREAD, 0, NULL, NULL) ==
          COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_open(ch, "No_Such_Metric", COUNTERHAL_TARGET_THIS_THREAD, 0, NULL,
                                  &m) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "unknown metric or group `No_Such_Metric`") != NULL);
    CHECK(counterhal_metrics_open(ch, "page_faults_per_second", 9, 0, NULL, &m) ==
          COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "unknown target kind 9") != NULL);
    CHECK(counterhal_metrics_open(ch, "page_faults_per_second", COUNTERHAL_TARGET_CPUS, 0, NULL,
                                  &m) == COUNTERHAL_EINVAL);
    CHECK(m == NULL);
    /* Where cycles does not count (no PMU), IPC is refused by the metric's name. */
    if (counterhal_query(ch, "cycles", NULL, 0) < 0) {
        CHECK(counterhal_metrics_open(ch, "IPC", COUNTERHAL_TARGET_THIS_THREAD, 0, NULL, &m) < 0);
        CHECK(strstr(counterhal_last_error(), "metric IPC reads `") != NULL);
    }
    /* The planned events: measured with no buffer, cut to a short one. */
    CHECK(counterhal_metrics_events_needed(ch, "IPC", NULL, 0) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "need 20 with the NUL") != NULL);
    char cut[4] = "xxx";
    CHECK(counterhal_metrics_events_needed(ch, "IPC", cut, sizeof cut) == COUNTERHAL_EINVAL);
    CHECK(strcmp(cut, "ins") == 0);
    char events[64];
    CHECK(counterhal_metrics_events_needed(ch, "IPC", events, sizeof events) == 2);
    CHECK(strcmp(events, "instructions\ncycles") == 0);
    CHECK(counterhal_metrics_events_needed(ch, "IPC", NULL, 5) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_events_needed(ch, "nope", events, sizeof events) ==
          COUNTERHAL_EINVAL);
    /* NULL sets. */
    CHECK(counterhal_metrics_size(NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_event_count(NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_enable(NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_disable(NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_name(NULL, 0) == NULL);
    CHECK(counterhal_metrics_unit(NULL, 0) == NULL);
    CHECK(counterhal_metrics_event_name(NULL, 0) == NULL);
    counterhal_metric_value_t value;
    CHECK(counterhal_metrics_read(NULL, &value, 1) == COUNTERHAL_EINVAL);
    counterhal_metrics_destroy(NULL);
    return 0;
}

static int one_set(counterhal_t *ch) {
    counterhal_metrics_t *m = NULL;
    CHECK(counterhal_metrics_open(ch, "page_faults_per_second", COUNTERHAL_TARGET_THIS_THREAD, 0,
                                  NULL, &m) == COUNTERHAL_OK);
    CHECK(counterhal_metrics_size(m) == 1);
    CHECK(strcmp(counterhal_metrics_name(m, 0), "page_faults_per_second") == 0);
    CHECK(strcmp(counterhal_metrics_unit(m, 0), "faults/sec") == 0);
    CHECK(counterhal_metrics_name(m, 1) == NULL);
    CHECK(counterhal_metrics_event_count(m) == 1);
    CHECK(strcmp(counterhal_metrics_event_name(m, 0), "page-faults") == 0);
    CHECK(counterhal_metrics_event_name(m, 1) == NULL);
    counterhal_metric_value_t values[2];
    counterhal_reading_t readings[2];
    /* Never enabled: nothing ran, so the value cannot be computed. */
    CHECK(counterhal_metrics_read(m, values, 2) == COUNTERHAL_OK);
    CHECK(values[0].status == COUNTERHAL_ENOCOUNT && values[0].value == 0);
    CHECK(counterhal_metrics_read(m, values, 0) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "the set has 1 metrics") != NULL);
    CHECK(counterhal_metrics_read(m, NULL, 1) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_readings(m, readings, 0) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_readings(m, NULL, 1) == COUNTERHAL_EINVAL);
    CHECK(counterhal_metrics_enable(m) == COUNTERHAL_OK);
    static char memory[64 * 4096];
    for (size_t i = 0; i < sizeof memory; i += 4096) memory[i] = 1;
    CHECK(counterhal_metrics_disable(m) == COUNTERHAL_OK);
    CHECK(counterhal_metrics_read(m, values, 2) == COUNTERHAL_OK);
    CHECK(counterhal_metrics_readings(m, readings, 2) == COUNTERHAL_OK);
    CHECK(values[0].status == COUNTERHAL_OK && values[0].value > 0);
    CHECK(counterhal_scaled(&readings[0]) >= 64);
    counterhal_metrics_destroy(m);
    return 0;
}

int main(void) {
    counterhal_t *ch;
    if (counterhal_open(&ch, NULL) < 0) {
        printf("no backend: %s\n", counterhal_last_error());
        return 3;
    }
    int failed = refusals(ch) || one_set(ch);
    counterhal_close(ch);
    if (failed) return 1;
    printf("ok\n");
    return 0;
}
