/* Metrics through the C API: the events a CPU model's metric reads (IPC, or the one named)
 * and their encodings there (planned, no PMU needed), then a metric counted on this thread:
 * the page-fault rate of a loop that touches fresh memory. The same evaluator as counterhal
 * stat -M and serve --rules.
 *
 *   scripts/install-capi /usr/local
 *   cc examples/c/metrics.c $(pkg-config --cflags --libs counterhal) -o metrics
 *   ./metrics                      # this CPU's model
 *   ./metrics --cpu-model spr      # IPC's events on Sapphire Rapids, anywhere
 *   ./metrics --cpu-model spr Info_Thread_IPC   # the model's own IPC (Intel perfmon's)
 */
#include <counterhal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the events metric reads on the handle's model, each with its encoding there. */
static int print_events(counterhal_t *ch, const char *metric) {
    char events[4096];
    int n = counterhal_metrics_events_needed(ch, metric, events, sizeof events);
    if (n < 0) {
        fprintf(stderr, "%s: %s\n", metric, counterhal_last_error());
        return -1;
    }
    printf("%s reads %d events:\n", metric, n);
    for (char *event = strtok(events, "\n"); event != NULL; event = strtok(NULL, "\n")) {
        char encoding[256] = "";
        int usable = counterhal_query(ch, event, encoding, sizeof encoding);
        printf("  %s: %s%s\n", event, encoding[0] ? encoding : "(no encoding)",
               usable < 0 ? " (does not count here)" : "");
    }
    return 0;
}

int main(int argc, char **argv) {
    counterhal_options_t options = {sizeof options, NULL, NULL, NULL};
    const char *metric = "IPC";
    int next = 1;
    if (argc >= 3 && strcmp(argv[1], "--cpu-model") == 0) {
        options.cpu_model = argv[2];
        next = 3;
    }
    if (next < argc) metric = argv[next++];
    if (next != argc || metric[0] == '-') {
        fprintf(stderr, "usage: metrics [--cpu-model MODEL] [METRIC]\n");
        return 2;
    }
    counterhal_t *ch;
    if (counterhal_open_with(&ch, &options) < 0) {
        fprintf(stderr, "no counter backend: %s\n", counterhal_last_error());
        return 1;
    }
    const char *model = counterhal_cpu_model(ch);
    printf("model: %s (backend %s)\n", model ? model : "no model", counterhal_backend(ch));
    if (print_events(ch, metric) < 0) return 1;

    counterhal_metrics_t *rate;
    if (counterhal_metrics_open(ch, "page_faults_per_second", COUNTERHAL_TARGET_THIS_THREAD, 0,
                                NULL, &rate) < 0) {
        fprintf(stderr, "page_faults_per_second: %s\n", counterhal_last_error());
        return 1;
    }
    enum { PAGES = 4096 };
    char *memory = malloc((size_t)PAGES * 4096);
    if (memory == NULL || counterhal_metrics_enable(rate) < 0) return 1;
    for (size_t i = 0; i < (size_t)PAGES * 4096; i += 4096) memory[i] = (char)i;
    counterhal_metric_value_t value;
    counterhal_reading_t faults;
    if (counterhal_metrics_disable(rate) < 0 || counterhal_metrics_read(rate, &value, 1) < 0 ||
        counterhal_metrics_readings(rate, &faults, 1) < 0) {
        fprintf(stderr, "%s\n", counterhal_last_error());
        return 1;
    }
    if (value.status < 0) {
        printf("counted: %s did not run\n", counterhal_metrics_name(rate, 0));
    } else {
        printf("counted: %s = %.0f %s (%llu %s, %d pages touched)\n",
               counterhal_metrics_name(rate, 0), value.value, counterhal_metrics_unit(rate, 0),
               (unsigned long long)counterhal_scaled(&faults),
               counterhal_metrics_event_name(rate, 0), PAGES);
    }
    free(memory);
    counterhal_metrics_destroy(rate);
    counterhal_close(ch);
    return 0;
}
