/* Lists the events counterhal_list gives (section, name and description, tab-separated),
 * then the CPU model: the descriptions test reads it with and without
 * COUNTERHAL_DESCRIPTIONS. Usage: descriptions [PATTERN]. */
#include <stdio.h>
#include <stdlib.h>

#include "counterhal.h"

int main(int argc, char **argv) {
    counterhal_t *ch = NULL;
    if (counterhal_open(&ch, NULL) != COUNTERHAL_OK) {
        char message[1024];
        counterhal_last_error_copy(message, sizeof message);
        printf("open failed: %s\n", message);
        return 1;
    }
    const char *pattern = argc > 1 ? argv[1] : NULL;
    int total = counterhal_list(ch, pattern, NULL, 0);
    counterhal_event_info_t *events = calloc((size_t)total + 1, sizeof *events);
    if (events == NULL) {
        return 1;
    }
    int listed = counterhal_list(ch, pattern, events, (size_t)total);
    for (int i = 0; i < listed && i < total; i++) {
        printf("%s\t%s\t%s\n", events[i].section, events[i].name, events[i].description);
    }
    const char *model = counterhal_cpu_model(ch);
    printf("model %s\n", model ? model : "none");
    free(events);
    counterhal_close(ch);
    return 0;
}
