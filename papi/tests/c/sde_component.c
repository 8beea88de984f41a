/* The sde component of PAPI 7.0 seen by a tool, printed line by line so that a run on
 * Debian's PAPI 7.0 (with Debian's libsde) and one on counterhal's libpapi compare: the
 * component's description, names and codes, descriptions, enumeration, the codes of mixing
 * components, and what reads, resets, accumulations, stops and writes give for registered,
 * instantaneous, callback, writable and placeholder counters. Built with -DWITH_SDE (and
 * -lsde) a library part registers counters; without it the process holds no libsde and the
 * component must say so. Event codes differ between the libraries: names are printed. */
#include <stdio.h>
#include <string.h>
#include "papi.h"
#ifdef WITH_SDE
#include "sde_lib.h"
#endif

static long long delta = 5, instant = 9, writable = 1;

#ifdef WITH_SDE
static long long from_callback(void *arg) {
    (void)arg;
    return 42;
}

static void library_part(void) {
    papi_handle_t h = papi_sde_init("LibA");
    papi_sde_register_counter(h, "DELTA", PAPI_SDE_RO | PAPI_SDE_DELTA, PAPI_SDE_long_long, &delta);
    papi_sde_register_counter(h, "INSTANT", PAPI_SDE_RO | PAPI_SDE_INSTANT, PAPI_SDE_long_long,
                              &instant);
    papi_sde_register_counter_cb(h, "CALLBACK", PAPI_SDE_RO | PAPI_SDE_INSTANT, PAPI_SDE_long_long,
                                 from_callback, NULL);
    papi_sde_register_counter(h, "WRITABLE", PAPI_SDE_RW | PAPI_SDE_INSTANT, PAPI_SDE_long_long,
                              &writable);
    papi_sde_describe_counter(h, "DELTA", "a counter that grows");
}
#endif

static void values(const char *what, int ret, const long long *v, int n) {
    printf("%s %d", what, ret);
    for (int i = 0; i < n; i++)
        printf(" %lld", v[i]);
    printf("\n");
}

int main(void) {
    int r, code = 0, sde = -1;
    char name[PAPI_MAX_STR_LEN];
    long long v[4] = {0};
#ifdef WITH_SDE
    library_part();
#endif
    r = PAPI_library_init(PAPI_VER_CURRENT);
    printf("init %s\n", r == PAPI_VER_CURRENT ? "ok" : "failed");
    /* The component by name, among those that answer. */
    for (int i = 0; i < 32; i++) {
        const PAPI_component_info_t *c = PAPI_get_component_info(i);
        if (c != NULL && strcmp(c->name, "sde") == 0) {
            sde = i;
            printf("component %s short=%s description=[%s] version=%s disabled=%d reason=[%s] "
                   "natives=%d counters=%d mpx=%d domain=%d/%d granularity=%d/%d intr=%d "
                   "signal=%d\n",
                   c->name, c->short_name, c->description, c->version, c->disabled,
                   c->disabled_reason, c->num_native_events, c->num_cntrs, c->num_mpx_cntrs,
                   c->default_domain, c->available_domains, c->default_granularity,
                   c->available_granularities, c->hardware_intr, c->hardware_intr_sig);
        }
    }
    const char *lookups[] = {"sde:::LibA::DELTA", "sde:::LibA::MISSING", "sde:::LibZ::OTHER",
                             "sde:::NOLIBRARY"};
    for (int i = 0; i < 4; i++) {
        r = PAPI_event_name_to_code(lookups[i], &code);
        name[0] = 0;
        if (r == PAPI_OK)
            PAPI_event_code_to_name(code, name);
        printf("name_to_code %s %d %s\n", lookups[i], r, name);
    }
    PAPI_event_info_t info;
    /* What a tool asks when a name had no code: the code it started with. */
    r = PAPI_get_event_info(0, &info);
    printf("event_info of code 0: %d\n", r);
    code = 0;
    PAPI_event_name_to_code("sde:::LibA::DELTA", &code);
    r = PAPI_get_event_info(code, &info);
    printf("event_info %d [%s] [%s] same_component=%d\n", r, r == PAPI_OK ? info.symbol : "",
           r == PAPI_OK ? info.long_descr : "", r == PAPI_OK && info.component_index == sde);
    printf("event_component of DELTA is sde %d\n", r == PAPI_OK && PAPI_get_event_component(code) == sde);
    {
        int tied = PAPI_NULL;
        PAPI_create_eventset(&tied);
        r = PAPI_assign_eventset_component(tied, sde < 0 ? 1 : sde);
        printf("assign to sde %d, then component is sde %d\n", r,
               PAPI_get_eventset_component(tied) == sde);
        PAPI_destroy_eventset(&tied);
    }
    code = 0;
    PAPI_event_name_to_code("sde:::LibA::INSTANT", &code);
    r = PAPI_get_event_info(code, &info);
    printf("event_info %d [%s] [%s]\n", r, r == PAPI_OK ? info.symbol : "",
           r == PAPI_OK ? info.long_descr : "");
    if (sde >= 0) {
        int e = PAPI_NATIVE_MASK;
        r = PAPI_enum_cmp_event(&e, PAPI_ENUM_FIRST, sde);
        printf("enumerate first %d\n", r);
        while (r == PAPI_OK) {
            PAPI_event_code_to_name(e, name);
            int u = e;
            printf("  %s umasks %d\n", name, PAPI_enum_cmp_event(&u, PAPI_NTV_ENUM_UMASKS, sde));
            r = PAPI_enum_cmp_event(&e, PAPI_ENUM_EVENTS, sde);
        }
        printf("enumerate end %d\n", r);
    }

    int set = PAPI_NULL, other = PAPI_NULL;
    PAPI_create_eventset(&set);
    printf("add DELTA %d\n", PAPI_add_named_event(set, "sde:::LibA::DELTA"));
    printf("add INSTANT %d\n", PAPI_add_named_event(set, "sde:::LibA::INSTANT"));
    printf("add CALLBACK %d\n", PAPI_add_named_event(set, "sde:::LibA::CALLBACK"));
    printf("add WRITABLE %d\n", PAPI_add_named_event(set, "sde:::LibA::WRITABLE"));
    printf("add DELTA again %d\n", PAPI_add_named_event(set, "sde:::LibA::DELTA"));
    printf("events %d\n", PAPI_num_events(set));
    r = PAPI_read(set, v);
    values("read before start", r, v, 4);
    printf("start %d\n", PAPI_start(set));
    printf("start again %d\n", PAPI_start(set));
    delta += 3;
    instant += 1;
    r = PAPI_read(set, v);
    values("read", r, v, 4);
    printf("reset %d\n", PAPI_reset(set));
    delta += 1;
    r = PAPI_read(set, v);
    values("read after reset", r, v, 4);
    long long sums[4] = {100, 100, 100, 100};
    r = PAPI_accum(set, sums);
    values("accum", r, sums, 4);
    long long written[4] = {7, 7, 7, 70};
    printf("write %d\n", PAPI_write(set, written));
    printf("writable now %lld\n", writable);
    delta += 2;
    r = PAPI_stop(set, v);
    values("stop", r, v, 4);
    delta += 2;
    r = PAPI_read(set, v);
    values("read after stop", r, v, 4);
    printf("stop again %d\n", PAPI_stop(set, v));
    printf("reset stopped %d\n", PAPI_reset(set));
    r = PAPI_read(set, v);
    values("read after reset stopped", r, v, 4);
    printf("remove INSTANT %d\n", PAPI_remove_named_event(set, "sde:::LibA::INSTANT"));
    printf("start %d\n", PAPI_start(set));
    delta += 4;
    r = PAPI_stop(set, v);
    values("stop", r, v, 3);

    /* A set holds one component's events. */
    int mixed = PAPI_NULL;
    PAPI_create_eventset(&mixed);
    printf("add sde first %d\n", PAPI_add_named_event(mixed, "sde:::LibA::DELTA"));
    printf("add perf beside %d\n", PAPI_add_named_event(mixed, "perf::TASK-CLOCK"));
    PAPI_create_eventset(&other);
    printf("add perf first %d\n", PAPI_add_named_event(other, "perf::TASK-CLOCK"));
    printf("add sde beside %d\n", PAPI_add_named_event(other, "sde:::LibA::DELTA"));

    int placeholder = PAPI_NULL;
    PAPI_create_eventset(&placeholder);
    printf("add placeholder %d\n", PAPI_add_named_event(placeholder, "sde:::LibZ::OTHER"));
    printf("start %d\n", PAPI_start(placeholder));
    r = PAPI_stop(placeholder, v);
    values("stop placeholder", r, v, 1);
    PAPI_shutdown();
    return 0;
}
