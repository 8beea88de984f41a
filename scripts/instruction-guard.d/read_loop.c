/* The C API's read path for the instruction-count guard (scripts/instruction-guard): the four
 * software events of benches/read.rs added to one set, started, and read N times with
 * counterhal_set_read. Usage: read_loop N. */
#include <counterhal.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    static const char *events[4] = {"task-clock", "page-faults", "context-switches",
                                    "cpu-migrations"};
    counterhal_reading_t readings[4];
    counterhal_t *ch = NULL;
    counterhal_set_t *set = NULL;
    long count = argc > 1 ? strtol(argv[1], NULL, 10) : -1;
    if (count < 0) {
        fprintf(stderr, "usage: read_loop N\n");
        return 2;
    }
    if (counterhal_open(&ch, NULL) != 0 || counterhal_set_create(ch, &set) != 0) {
        fprintf(stderr, "read_loop: no backend or set\n");
        return 1;
    }
    for (int i = 0; i < 4; i++) {
        if (counterhal_set_add(set, events[i]) < 0) {
            fprintf(stderr, "read_loop: %s not added\n", events[i]);
            return 1;
        }
    }
    if (counterhal_set_start(set) != 0) {
        fprintf(stderr, "read_loop: the set does not start\n");
        return 1;
    }
    for (long i = 0; i < count; i++) {
        if (counterhal_set_read(set, readings, 4) != 0) {
            fprintf(stderr, "read_loop: read %ld failed\n", i);
            return 1;
        }
    }
    counterhal_set_destroy(set);
    counterhal_close(ch);
    return 0;
}
