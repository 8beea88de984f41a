/* What PAPI 7.0 and counterhal's libpapi must answer alike on any machine: event names and
 * codes, preset short and long descriptions and categories, error codes of misuse, messages, timers.
 * papi/tests/side_by_side.rs builds it once against Debian's papi.h and libpapi, runs it
 * against Debian's library and, through LD_LIBRARY_PATH, against ours, and compares. */
#include <stdio.h>
#include <string.h>
#include <papi.h>

#define SHOW(what, value) printf("%s = %d\n", what, (int)(value))

static void handler(int event_set, void *address, long long vector, void *context) {
    (void)event_set;
    (void)address;
    (void)vector;
    (void)context;
}

int main(void) {
    int set = PAPI_NULL, code = 0, i;
    char name[PAPI_MAX_STR_LEN];
    long long values[4] = {0}, t0, t1;
    PAPI_event_info_t info;

    setvbuf(stdout, NULL, _IONBF, 0);

    SHOW("set_debug before init", PAPI_set_debug(PAPI_QUIET));
    SHOW("is_initialized before", PAPI_is_initialized());
    SHOW("name_to_code before init", PAPI_event_name_to_code("PAPI_TOT_INS", &code));
    /* Calls on an event set before initialisation: PAPI 7.0 looks the set up in its table of
     * sets first, empty until then, so they answer PAPI_ENOEVST, not PAPI_ENOINIT (those
     * that read a name or go through PAPI_set_opt answer PAPI_ENOINIT; PAPI_get_multiplex 0
     * whatever goes wrong). Handle 0 is not asked: PAPI 7.0 reads its table's first slot
     * before the table exists and crashes. */
    {
        int one = 1, events[1] = {PAPI_TOT_INS}, number = 1;
        PAPI_sprofil_t none = {NULL, 0, 0, 65536};
        SHOW("start before init", PAPI_start(1));
        SHOW("start PAPI_NULL before init", PAPI_start(PAPI_NULL));
        SHOW("read before init", PAPI_read(1, values));
        SHOW("read to NULL before init", PAPI_read(1, NULL));
        SHOW("read_ts before init", PAPI_read_ts(1, values, &t0));
        SHOW("accum before init", PAPI_accum(1, values));
        SHOW("reset before init", PAPI_reset(1));
        SHOW("stop before init", PAPI_stop(1, values));
        SHOW("destroy before init", PAPI_destroy_eventset(&one));
        SHOW("cleanup before init", PAPI_cleanup_eventset(1));
        SHOW("state before init", PAPI_state(1, &i));
        SHOW("num_events before init", PAPI_num_events(1));
        SHOW("list_events before init", PAPI_list_events(1, events, &number));
        SHOW("add_event before init", PAPI_add_event(1, PAPI_TOT_INS));
        SHOW("add_events before init", PAPI_add_events(1, events, 1));
        SHOW("add_named_event before init", PAPI_add_named_event(1, "perf::TASK-CLOCK"));
        SHOW("remove_event before init", PAPI_remove_event(1, PAPI_TOT_INS));
        SHOW("remove_events before init", PAPI_remove_events(1, events, 1));
        SHOW("overflow before init", PAPI_overflow(1, PAPI_TOT_INS, 100, 0, NULL));
        SHOW("profil before init", PAPI_profil(NULL, 0, 0, 65536, 1, PAPI_TOT_INS, 100, 0));
        SHOW("sprofil before init", PAPI_sprofil(&none, 1, 1, PAPI_TOT_INS, 100, 0));
        SHOW("overflow event index before init",
             PAPI_get_overflow_event_index(1, 1, events, &number));
        SHOW("set_multiplex before init", PAPI_set_multiplex(1));
        SHOW("get_multiplex before init", PAPI_get_multiplex(1));
        SHOW("write before init", PAPI_write(1, values));
        SHOW("assign_eventset_component before init", PAPI_assign_eventset_component(1, 0));
        SHOW("get_eventset_component before init", PAPI_get_eventset_component(1));
        SHOW("attach before init", PAPI_attach(1, 1));
        SHOW("detach before init", PAPI_detach(1));
        SHOW("set_opt MULTIPLEX before init", PAPI_set_opt(PAPI_MULTIPLEX, NULL));
        SHOW("create before init", PAPI_create_eventset(&set));
    }
    SHOW("init with a wrong version", PAPI_library_init(PAPI_VER_CURRENT + 1));
    SHOW("init", PAPI_library_init(PAPI_VER_CURRENT));
    SHOW("init again", PAPI_library_init(PAPI_VER_CURRENT));
    SHOW("is_initialized", PAPI_is_initialized());
    SHOW("lib version", PAPI_get_opt(PAPI_LIB_VERSION, NULL));
    SHOW("num_components > 0", PAPI_num_components() > 0);

    for (i = 0; i < PAPI_END_idx; i++) {
        int back = 0;
        int r1 = PAPI_event_code_to_name(PAPI_PRESET_MASK | i, name);
        int r2 = PAPI_event_name_to_code(name, &back);
        int r3 = PAPI_get_event_info(PAPI_PRESET_MASK | i, &info);
        printf("preset %#x %s %d %d %#x %d type=%#x short=%s long=%s\n", PAPI_PRESET_MASK | i,
               name, r1, r2, (unsigned)back, r3, info.event_type, info.short_descr,
               info.long_descr);
    }
    /* Preset codes past the table: PAPI 7.0 has room for PAPI_MAX_PRESET_EVENTS, and
     * answers an empty slot differently from a code past the room. */
    for (i = PAPI_END_idx; i < PAPI_MAX_PRESET_EVENTS + 2; i++) {
        printf("preset slot %d: code_to_name %d get_event_info %d query_event %d\n", i,
               PAPI_event_code_to_name(PAPI_PRESET_MASK | i, name),
               PAPI_get_event_info(PAPI_PRESET_MASK | i, &info),
               PAPI_query_event(PAPI_PRESET_MASK | i));
    }
    SHOW("code_to_name of 0", PAPI_event_code_to_name(0, name));
    SHOW("code_to_name past the presets", PAPI_event_code_to_name(PAPI_PRESET_MASK | 200, name));
    SHOW("query nonsense code", PAPI_query_event(0x12345));
    {
        /* The answers at the end of each enumeration (PAPI 7.0's papi.c: a component's
         * native enumeration ending is PAPI_EINVAL, the presets' end PAPI_ENOEVNT). */
        int code = PAPI_NATIVE_MASK, r = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, 0);
        while (r == PAPI_OK)
            r = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, 0);
        SHOW("end of the natives", r);
        code = PAPI_NATIVE_MASK;
        r = PAPI_enum_event(&code, PAPI_ENUM_FIRST);
        while (r == PAPI_OK)
            r = PAPI_enum_event(&code, PAPI_ENUM_EVENTS);
        SHOW("end of the natives (enum_event)", r);
        int clock = 0, masks = 0;
        SHOW("name_to_code perf::TASK-CLOCK", PAPI_event_name_to_code("perf::TASK-CLOCK", &clock));
        code = clock;
        while ((r = PAPI_enum_cmp_event(&code, PAPI_NTV_ENUM_UMASKS, 0)) == PAPI_OK)
            masks++;
        printf("qualifiers of perf::TASK-CLOCK %d, then %d\n", masks, r);
        code = clock;
        SHOW("native modifier 99", PAPI_enum_cmp_event(&code, 99, 0));
        code = 0;
        SHOW("enumerate from code 0", PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, 0));
        code = PAPI_PRESET_MASK;
        r = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, 0);
        while (r == PAPI_OK)
            r = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, 0);
        SHOW("end of the presets", r);
    }

    for (i = 0; i < PAPI_NUM_ERRORS; i++) {
        const char *text = PAPI_strerror(-i);
        printf("strerror %d %s\n", -i, text ? text : "(null)");
    }

    t0 = PAPI_get_real_usec();
    for (i = 0; i < 100000000 && PAPI_get_real_usec() - t0 < 20000; i++)
        ;
    t1 = PAPI_get_real_usec();
    SHOW("real usec advances 20 ms", t1 - t0 >= 20000 && t1 - t0 < 1000000);
    SHOW("real nsec agrees", PAPI_get_real_nsec() / 1000 - PAPI_get_real_usec() < 1000);
    SHOW("virt usec advances", PAPI_get_virt_usec() > 0);
    SHOW("real cyc advances", PAPI_get_real_cyc() > 0);
    /* Component 0's capability bits, which tests act on (attach_must_ptrace: whether they
     * stop and continue an attached child with ptrace; cntr_umasks: whether they enumerate
     * unit masks); PAPI 7.0's perf_event sets them statically, enabled or not. */
    {
        const PAPI_component_info_t *c = PAPI_get_component_info(0);
        SHOW("cpu component hardware_intr", c ? (int)c->hardware_intr : -1);
        SHOW("cpu component kernel_profile", c ? (int)c->kernel_profile : -1);
        SHOW("cpu component kernel_multiplex", c ? (int)c->kernel_multiplex : -1);
        SHOW("cpu component fast_virtual_timer", c ? (int)c->fast_virtual_timer : -1);
        SHOW("cpu component attach", c ? (int)c->attach : -1);
        SHOW("cpu component attach_must_ptrace", c ? (int)c->attach_must_ptrace : -1);
        SHOW("cpu component cntr_umasks", c ? (int)c->cntr_umasks : -1);
        SHOW("cpu component cpu", c ? (int)c->cpu : -1);
        SHOW("cpu component inherit", c ? (int)c->inherit : -1);
    }
    /* Below: answers that depend on the CPU component (Debian's PAPI disables perf_event
     * on a machine without a core PMU and then answers PAPI_ENOCMP); compared only where
     * the side-by-side test says so. */
    printf("-- sets\n");
    SHOW("cpu component enabled", PAPI_get_component_info(0) && !PAPI_get_component_info(0)->disabled);
    SHOW("name_to_code of nonsense", PAPI_event_name_to_code("NO_SUCH_EVENT_ANYWHERE", &code));
    SHOW("create with a non-NULL handle", PAPI_create_eventset(&code));
    SHOW("create", PAPI_create_eventset(&set));
    SHOW("first handle", set);
    SHOW("num_events empty", PAPI_num_events(set));
    SHOW("start empty", PAPI_start(set));
    SHOW("stop not running", PAPI_stop(set, values));
    SHOW("add to a missing set", PAPI_add_event(set + 100, PAPI_TOT_INS));
    SHOW("add a nonsense code", PAPI_add_event(set, 0x12345));
    SHOW("add code 0", PAPI_add_event(set, 0));
    SHOW("add named nonsense", PAPI_add_named_event(set, "NO_SUCH_EVENT_ANYWHERE"));
    SHOW("state of a missing set", PAPI_state(set + 100, &code));
    SHOW("state", PAPI_state(set, &code));
    SHOW("state value", code);
    SHOW("read a missing set", PAPI_read(set + 100, values));
    SHOW("add perf::TASK-CLOCK", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    {
        PAPI_option_t opt;
        memset(&opt, 0, sizeof opt);
        opt.multiplex.eventset = set;
        opt.multiplex.ns = -1;
        SHOW("DEF_MPX_NS of -1 ns", PAPI_set_opt(PAPI_DEF_MPX_NS, &opt));
        memset(&opt, 0, sizeof opt);
        opt.cpu.eventset = set;
        opt.cpu.cpu_num = 1000000;
        SHOW("CPU_ATTACH to CPU 1000000", PAPI_set_opt(PAPI_CPU_ATTACH, &opt));
        memset(&opt, 0, sizeof opt);
        opt.multiplex.eventset = set;
        opt.multiplex.ns = -1;
        SHOW("MULTIPLEX with -1 ns", PAPI_set_opt(PAPI_MULTIPLEX, &opt));
        /* Every field all ones (set -1, domain -1, thread ~0): each option's first check. */
        memset(&opt, 0xff, sizeof opt);
        SHOW("DOMAIN of all ones", PAPI_set_opt(PAPI_DOMAIN, &opt));
        SHOW("GRANUL of all ones", PAPI_set_opt(PAPI_GRANUL, &opt));
        SHOW("ATTACH of all ones", PAPI_set_opt(PAPI_ATTACH, &opt));
        SHOW("DETACH of all ones", PAPI_set_opt(PAPI_DETACH, &opt));
        SHOW("CPU_ATTACH of all ones", PAPI_set_opt(PAPI_CPU_ATTACH, &opt));
        SHOW("INHERIT of all ones", PAPI_set_opt(PAPI_INHERIT, &opt));
        SHOW("MULTIPLEX of all ones", PAPI_set_opt(PAPI_MULTIPLEX, &opt));
        SHOW("DEF_MPX_NS of all ones", PAPI_set_opt(PAPI_DEF_MPX_NS, &opt));
    }
    /* Codes of no event: PAPI_NULL (which PAPI finds in the set's first empty slot), preset
     * codes past the table, a native code past the table, a user-defined code. */
    SHOW("add PAPI_NULL as an event", PAPI_add_event(set, PAPI_NULL));
    SHOW("add a preset code past PAPI's room", PAPI_add_event(set, PAPI_PRESET_MASK | 0xff));
    SHOW("add an empty preset slot", PAPI_add_event(set, PAPI_PRESET_MASK | 0x70));
    SHOW("add a native code past the table", PAPI_add_event(set, PAPI_NATIVE_MASK | 0xfffffff));
    SHOW("add a user-defined code", PAPI_add_event(set, (int)0xC0000001));
    SHOW("add a nonsense code to a missing set", PAPI_add_event(set + 100, 0x12345));
    SHOW("event info past the native table", PAPI_get_event_info(0x7fffffff, &info));
    SHOW("add it again", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    SHOW("its code", PAPI_event_name_to_code("perf::TASK-CLOCK", &code));
    SHOW("overflow without a handler", PAPI_overflow(set, code, 1000000, 0, NULL));
    SHOW("overflow of an event not in the set", PAPI_overflow(set, 12345, 100, 0, NULL));
    SHOW("overflow turned off where it is not on", PAPI_overflow(set, code, 0, 0, NULL));
    /* PAPI 7.0 keeps one handler per set, the one the last PAPI_overflow call named: once the
     * set overflows, a NULL handler is taken (and PAPI calls it at the next overflow, and
     * crashes; the set is not started with it here), and turning the event off with NULL
     * answers PAPI_OK. Then a set that no longer overflows needs a handler again. */
    SHOW("overflow", PAPI_overflow(set, code, 1000000000, 0, handler));
    SHOW("overflow with a NULL handler once the set overflows",
         PAPI_overflow(set, code, 1000000000, 0, NULL));
    SHOW("state", PAPI_state(set, &i) == PAPI_OK ? i : -1);
    SHOW("overflow turned off with a NULL handler", PAPI_overflow(set, code, 0, 0, NULL));
    SHOW("state", PAPI_state(set, &i) == PAPI_OK ? i : -1);
    SHOW("overflow with a NULL handler again", PAPI_overflow(set, code, 1000000000, 0, NULL));
    SHOW("num_events", PAPI_num_events(set));
    SHOW("start", PAPI_start(set));
    SHOW("start again", PAPI_start(set));
    for (i = 0, t0 = PAPI_get_virt_usec(); PAPI_get_virt_usec() - t0 < 10000; i++)
        ;
    SHOW("read", PAPI_read(set, values));
    SHOW("stop", PAPI_stop(set, values + 1));
    /* At least 9 ms: PAPI 7.0's virtual clock runs a few microseconds ahead of perf's task
     * clock on a loaded machine (9,982,477 ns counted for its 10 ms loop, one run in seven). */
    SHOW("task clock counted 10 ms", values[1] >= 9000000 && values[1] >= values[0]);
    SHOW("destroy a set with events", PAPI_destroy_eventset(&set));
    SHOW("cleanup", PAPI_cleanup_eventset(set));
    SHOW("destroy", PAPI_destroy_eventset(&set));
    SHOW("handle after destroy", set);
    SHOW("destroy again", PAPI_destroy_eventset(&set));
    /* Handles: PAPI 7.0 gives a new set the lowest handle free, a destroyed set's included. */
    {
        int a = PAPI_NULL, b = PAPI_NULL, c = PAPI_NULL, d = PAPI_NULL, e = PAPI_NULL, gone;
        SHOW("create a", PAPI_create_eventset(&a));
        SHOW("create b", PAPI_create_eventset(&b));
        SHOW("create c", PAPI_create_eventset(&c));
        printf("handles a b c = %d %d %d\n", a, b, c);
        SHOW("destroy b", PAPI_destroy_eventset(&b));
        SHOW("create d", PAPI_create_eventset(&d));
        SHOW("d is b's handle", d);
        SHOW("destroy a", PAPI_destroy_eventset(&a));
        gone = c;
        SHOW("destroy c", PAPI_destroy_eventset(&c));
        SHOW("create e", PAPI_create_eventset(&e));
        SHOW("e is a's handle", e);
        SHOW("start a destroyed set", PAPI_start(gone));
        SHOW("get_multiplex of a missing set", PAPI_get_multiplex(gone + 100));
        SHOW("read to NULL from a missing set", PAPI_read(gone + 100, NULL));
        SHOW("read to NULL from a set with no component", PAPI_read(e, NULL));
        SHOW("accum to NULL from a set with no component", PAPI_accum(e, NULL));
        /* PAPI_assign_eventset_component: the set before the component; a set tied to a
         * component already is PAPI_EINVAL. */
        SHOW("assign a missing set to component 99", PAPI_assign_eventset_component(gone, 99));
        SHOW("assign to component 99", PAPI_assign_eventset_component(e, 99));
        SHOW("assign to component 0", PAPI_assign_eventset_component(e, 0));
        SHOW("assign again", PAPI_assign_eventset_component(e, 0));
        SHOW("destroy d", PAPI_destroy_eventset(&d));
        SHOW("destroy e", PAPI_destroy_eventset(&e));
    }
    SHOW("get_opt nonsense", PAPI_get_opt(12345, NULL));
    {
        PAPI_option_t opt;
        SHOW("get_cmp_opt of component -1", PAPI_get_cmp_opt(PAPI_MAX_HWCTRS, NULL, -1));
        SHOW("get_cmp_opt of component 99", PAPI_get_cmp_opt(PAPI_MAX_HWCTRS, NULL, 99));
        SHOW("get_cmp_opt LIB_VERSION", PAPI_get_cmp_opt(PAPI_LIB_VERSION, NULL, 0));
        SHOW("get_cmp_opt DEBUG", PAPI_get_cmp_opt(PAPI_DEBUG, &opt, 0));
        SHOW("get_cmp_opt COMPONENTINFO to NULL", PAPI_get_cmp_opt(PAPI_COMPONENTINFO, NULL, 0));
        SHOW("get_cmp_opt COMPONENTINFO", PAPI_get_cmp_opt(PAPI_COMPONENTINFO, &opt, 0));
        SHOW("it is component 0's", opt.cmp_info == PAPI_get_component_info(0));
        SHOW("get_cmp_opt SHLIBINFO to NULL", PAPI_get_cmp_opt(PAPI_SHLIBINFO, NULL, 0));
        SHOW("get_cmp_opt DEFDOM", PAPI_get_cmp_opt(PAPI_DEFDOM, NULL, 0));
        SHOW("get_cmp_opt DEFGRN", PAPI_get_cmp_opt(PAPI_DEFGRN, NULL, 0));
        SHOW("get_cmp_opt MAX_MPX_CTRS", PAPI_get_cmp_opt(PAPI_MAX_MPX_CTRS, NULL, 0));
    }
    SHOW("hl_read(NULL) before any region", PAPI_hl_read(NULL));
    SHOW("hl_region_end(NULL) before any region", PAPI_hl_region_end(NULL));
    SHOW("set_domain nonsense", PAPI_set_domain(0));
    SHOW("get_component_info 99 is NULL", PAPI_get_component_info(99) == NULL);
    SHOW("hardware info", PAPI_get_hardware_info() != NULL);
    SHOW("thread specific unset", PAPI_get_thr_specific(PAPI_USR1_TLS, (void **)&t0));
    SHOW("lock", PAPI_lock(PAPI_USR1_LOCK));
    SHOW("unlock", PAPI_unlock(PAPI_USR1_LOCK));

    PAPI_shutdown();
    SHOW("is_initialized after shutdown", PAPI_is_initialized());
    SHOW("start after shutdown", PAPI_start(1));
    SHOW("read after shutdown", PAPI_read(1, values));
    SHOW("create after shutdown", PAPI_create_eventset(&set));
    return 0;
}
