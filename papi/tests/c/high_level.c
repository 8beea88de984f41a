/* PAPI's high-level regions (papi/tests/high_level.rs): with "misuse", the codes of calls that
   need no counter (end, read and stop before any region); with "mismatch", an end of a region
   not begun, which turns the interface off; else nested regions with a read on
   the main thread and one region on a second thread, each call's code printed. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "papi.h"

static volatile double sink;

static void work(void) {
    for (int i = 0; i < 2000000; i++)
        sink += i * 0.5;
}

static void *second(void *arg) {
    (void)arg;
    printf("thread begin %d\n", PAPI_hl_region_begin("thread"));
    work();
    printf("thread end %d\n", PAPI_hl_region_end("thread"));
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "misuse") == 0) {
        printf("end before begin %d\n", PAPI_hl_region_end("never"));
        printf("read before begin %d\n", PAPI_hl_read("never"));
        printf("stop before begin %d\n", PAPI_hl_stop());
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "mismatch") == 0) {
        printf("begin a %d\n", PAPI_hl_region_begin("a"));
        printf("end b %d\n", PAPI_hl_region_end("b"));
        printf("end a %d\n", PAPI_hl_region_end("a"));
        printf("begin c %d\n", PAPI_hl_region_begin("c"));
        return 0;
    }
    printf("outer begin %d\n", PAPI_hl_region_begin("outer"));
    work();
    printf("inner begin %d\n", PAPI_hl_region_begin("inner"));
    work();
    printf("inner read %d\n", PAPI_hl_read("inner"));
    work();
    printf("inner end %d\n", PAPI_hl_region_end("inner"));
    printf("outer end %d\n", PAPI_hl_region_end("outer"));
    pthread_t t;
    pthread_create(&t, NULL, second, NULL);
    pthread_join(t, NULL);
    printf("stop %d\n", PAPI_hl_stop());
    printf("stop again %d\n", PAPI_hl_stop());
    return 0;
}
