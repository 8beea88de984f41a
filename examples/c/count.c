/* The C API in a few lines: count events named on the command line over a loop.
 *
 *   scripts/install-capi /usr/local
 *   cc examples/c/count.c $(pkg-config --cflags --libs counterhal) -o count
 *   ./count page-faults task-clock nosuch
 */
#include <counterhal.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    counterhal_t *ch;
    if (counterhal_open(&ch, NULL) < 0) {
        fprintf(stderr, "no counter backend: %s\n", counterhal_last_error());
        return 1;
    }
    counterhal_set_t *set;
    if (counterhal_set_create(ch, &set) < 0) return 1;
    for (int i = 1; i < argc; i++)
        if (counterhal_set_add(set, argv[i]) < 0)
            fprintf(stderr, "%s left out: %s\n", argv[i], counterhal_last_error());
    int n = counterhal_set_size(set);
    if (n <= 0) {
        fprintf(stderr, "nothing to count\n");
        return 1;
    }
    counterhal_reading_t *readings = calloc((size_t)n, sizeof *readings);
    if (readings == NULL || counterhal_set_start(set) < 0) return 1;
    uint64_t start = counterhal_real_nsec();
    double sum = 0;
    char *memory = malloc(16 << 20);
    if (memory == NULL) return 1;
    for (int i = 0; i < (16 << 20); i += 4096) memory[i] = (char)i;
    for (int i = 0; i < 10000000; i++) sum += i * 0.5;
    if (counterhal_set_stop(set, readings, (size_t)n) < 0) {
        fprintf(stderr, "%s\n", counterhal_last_error());
        return 1;
    }
    printf("%.0f in %.3f ms on %s\n", sum, (counterhal_real_nsec() - start) / 1e6,
           counterhal_backend(ch));
    for (int i = 0; i < n; i++)
        printf("%-24s %16llu\n", counterhal_set_event_name(set, (size_t)i),
               (unsigned long long)counterhal_scaled(&readings[i]));
    free(memory);
    free(readings);
    counterhal_set_destroy(set);
    counterhal_close(ch);
    return 0;
}
