/* The perf_event_uncore component and PMU-syntax events through libpapi (tests/uncore.rs).
 *   uncore component            the component's description and its events' names
 *   uncore listed               the component's PMUs, and each event it lists as `add` says
 *   uncore add NAME...          each name alone in a new set: code, add, start, stop, count
 *   uncore pair FIRST SECOND    both in one set: the second add's answer
 *   uncore attach CPU NAME      NAME in a set attached to CPU (PAPI_CPU_ATTACH), counted
 *   uncore options NAME         NAME's set given each granularity and some domains, counted
 * One line of `key value...` each. */
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void spin(void)
{
    for (volatile long k = 0; k < 3000000; k++)
        ;
}

static void component(void)
{
    int cidx = PAPI_get_component_index("perf_event_uncore");
    printf("index %d\n", cidx);
    const PAPI_component_info_t *c = PAPI_get_component_info(cidx);
    if (c == NULL) {
        printf("info none\n");
        return;
    }
    printf("name %s\n", c->name);
    printf("short_name %s\n", c->short_name);
    printf("description %s\n", c->description);
    printf("disabled %d\n", c->disabled);
    printf("disabled_reason %s\n", c->disabled_reason);
    printf("default_domain %d\n", c->default_domain);
    printf("available_domains %d\n", c->available_domains);
    printf("default_granularity %d\n", c->default_granularity);
    printf("available_granularities %d\n", c->available_granularities);
    printf("cpu %d\n", c->cpu);
    printf("hwctrs %d\n", PAPI_num_cmp_hwctrs(cidx));
    int code = PAPI_NATIVE_MASK, n = 0;
    int r = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
    while (r == PAPI_OK) {
        char name[PAPI_MAX_STR_LEN];
        if (PAPI_event_code_to_name(code, name) == PAPI_OK && n < 3)
            printf("event %s component %d\n", name, PAPI_get_event_component(code));
        int umask = code;
        if (n == 0 && PAPI_enum_cmp_event(&umask, PAPI_NTV_ENUM_UMASKS, cidx) == PAPI_OK
            && PAPI_event_code_to_name(umask, name) == PAPI_OK)
            printf("umask %s\n", name);
        n++;
        r = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx);
    }
    printf("events %d end %d\n", n, r);
    int first = PAPI_NATIVE_MASK;
    printf("enum_first %d\n", PAPI_enum_cmp_event(&first, PAPI_ENUM_FIRST, cidx));
}

static void add(const char *name);

static void listed(void)
{
    int cidx = PAPI_get_component_index("perf_event_uncore");
    const PAPI_component_info_t *c = PAPI_get_component_info(cidx);
    printf("pmus");
    for (int i = 0; c != NULL && i < PAPI_PMU_MAX && c->pmu_names[i] != NULL; i++)
        printf("%s%s", i ? "," : " ", c->pmu_names[i]);
    printf("\n");
    int code = PAPI_NATIVE_MASK;
    int r = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
    while (r == PAPI_OK) {
        char name[PAPI_MAX_STR_LEN];
        if (PAPI_event_code_to_name(code, name) == PAPI_OK)
            add(name);
        r = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cidx);
    }
}

static void add(const char *name)
{
    int code = 0, set = PAPI_NULL;
    int n = PAPI_event_name_to_code(name, &code);
    int c = PAPI_create_eventset(&set);
    int a = n == PAPI_OK ? PAPI_add_event(set, code) : 0;
    long long v = 0;
    int s = 0, t = 0;
    if (n == PAPI_OK && a == PAPI_OK) {
        s = PAPI_start(set);
        spin();
        t = PAPI_stop(set, &v);
    }
    printf("%s code %d create %d add %d start %d stop %d count %lld component %d set_component %d\n",
           name, n, c, a, s, t, v, n == PAPI_OK ? PAPI_get_event_component(code) : n,
           PAPI_get_eventset_component(set));
}

static void pair(const char *first, const char *second)
{
    int set = PAPI_NULL;
    PAPI_create_eventset(&set);
    int a = PAPI_add_named_event(set, first);
    int b = PAPI_add_named_event(set, second);
    printf("pair first %d second %d\n", a, b);
}

static void attach(int cpu, const char *name)
{
    int set = PAPI_NULL;
    PAPI_create_eventset(&set);
    PAPI_assign_eventset_component(set, PAPI_get_component_index("perf_event_uncore"));
    PAPI_option_t opt;
    memset(&opt, 0, sizeof(opt));
    opt.cpu.eventset = set;
    opt.cpu.cpu_num = cpu;
    int o = PAPI_set_opt(PAPI_CPU_ATTACH, &opt);
    int a = PAPI_add_named_event(set, name);
    long long v = 0;
    int s = PAPI_start(set);
    spin();
    int t = PAPI_stop(set, &v);
    printf("attach opt %d add %d start %d stop %d count %lld\n", o, a, s, t, v);
}

static void options(const char *name)
{
    int set = PAPI_NULL;
    PAPI_create_eventset(&set);
    int a = PAPI_add_named_event(set, name);
    PAPI_option_t opt;
    memset(&opt, 0, sizeof(opt));
    opt.granularity.eventset = set;
    opt.granularity.granularity = PAPI_GRN_THR;
    int thr = PAPI_set_opt(PAPI_GRANUL, &opt);
    opt.granularity.granularity = PAPI_GRN_SYS;
    int sys = PAPI_set_opt(PAPI_GRANUL, &opt);
    memset(&opt, 0, sizeof(opt));
    opt.domain.eventset = set;
    opt.domain.domain = PAPI_DOM_SUPERVISOR;
    int supervisor = PAPI_set_opt(PAPI_DOMAIN, &opt);
    opt.domain.domain = PAPI_DOM_USER;
    int user = PAPI_set_opt(PAPI_DOMAIN, &opt);
    long long v = 0;
    int s = PAPI_start(set);
    spin();
    int t = PAPI_stop(set, &v);
    printf("options add %d thr %d sys %d supervisor %d user %d start %d stop %d count %lld\n", a,
           thr, sys, supervisor, user, s, t, v);
}

int main(int argc, char **argv)
{
    int r = PAPI_library_init(PAPI_VER_CURRENT);
    if (r != PAPI_VER_CURRENT) {
        printf("init %d\n", r);
        return 1;
    }
    if (argc > 1 && !strcmp(argv[1], "component"))
        component();
    else if (argc > 1 && !strcmp(argv[1], "listed"))
        listed();
    else if (argc > 1 && !strcmp(argv[1], "add"))
        for (int i = 2; i < argc; i++)
            add(argv[i]);
    else if (argc > 3 && !strcmp(argv[1], "pair"))
        pair(argv[2], argv[3]);
    else if (argc > 2 && !strcmp(argv[1], "options"))
        options(argv[2]);
    else if (argc > 3 && !strcmp(argv[1], "attach"))
        attach(atoi(argv[2]), argv[3]);
    else
        return 2;
    return 0;
}
