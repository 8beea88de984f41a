/* PAPI's powercap component seen by a tool: the component, its events enumerated with their
 * descriptions, and a set's counts while the test changes the zone's energy file (argv[1])
 * between the calls: a count since the start, across a wrap of the counter, after a reset,
 * at the stop; a power limit read as it is; another component's event refused beside them;
 * PAPI's rapl names of the same counters, in nanojoules. */
#include <stdio.h>
#include <stdlib.h>
#include "papi.h"

static void energy(const char *path, long long uj) {
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); exit(1); }
    fprintf(f, "%lld\n", uj);
    fclose(f);
}

static void values(const char *what, int ret, const long long *v) {
    printf("%s %d %lld %lld\n", what, ret, v[0], v[1]);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 1;
    int cidx = PAPI_get_component_index("powercap");
    const PAPI_component_info_t *c = PAPI_get_component_info(cidx);
    printf("component %s: %s, disabled %d, native %d, domain %#x, granularity %#x\n", c->name,
           c->description, c->disabled, c->num_native_events, c->default_domain,
           c->default_granularity);
    int code = 0 | PAPI_NATIVE_MASK;
    int r = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
    while (r == PAPI_OK) {
        char name[PAPI_MAX_STR_LEN];
        PAPI_event_info_t info;
        PAPI_event_code_to_name(code, name);
        PAPI_get_event_info(code, &info);
        printf("event %s [%s] component %d type %d\n", name, info.long_descr,
               PAPI_get_event_component(code), info.data_type);
        r = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx);
    }
    printf("end %d\n", r);

    int set = PAPI_NULL;
    long long v[2] = {0, 0};
    PAPI_create_eventset(&set);
    printf("add energy %d\n", PAPI_add_named_event(set, "powercap:::ENERGY_UJ:ZONE0"));
    printf("add limit %d\n", PAPI_add_named_event(set, "powercap:::POWER_LIMIT_A_UW:ZONE0"));
    printf("add perf %d\n", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    printf("add missing %d\n", PAPI_add_named_event(set, "powercap:::ENERGY_UJ:ZONE9"));
    printf("set component %d\n", PAPI_get_eventset_component(set));
    energy(argv[1], 1000);
    printf("start %d\n", PAPI_start(set));
    energy(argv[1], 13345);
    values("read", PAPI_read(set, v), v);
    energy(argv[1], 100);
    values("wrapped", PAPI_read(set, v), v);
    printf("reset %d\n", PAPI_reset(set));
    values("after reset", PAPI_read(set, v), v);
    energy(argv[1], 600);
    values("stop", PAPI_stop(set, v), v);
    energy(argv[1], 9000);
    values("stopped", PAPI_read(set, v), v);

    /* PAPI's rapl component's names, which the zones give in nanojoules. */
    int rapl = PAPI_NULL;
    PAPI_create_eventset(&rapl);
    printf("add package %d\n", PAPI_add_named_event(rapl, "rapl:::PACKAGE_ENERGY:PACKAGE0"));
    printf("add cores %d\n", PAPI_add_named_event(rapl, "PP0_ENERGY:PACKAGE0"));
    printf("start %d\n", PAPI_start(rapl));
    energy(argv[1], 9500);
    values("rapl", PAPI_stop(rapl, v), v);
    PAPI_shutdown();
    return 0;
}
