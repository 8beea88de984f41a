/* The error PAPI_perror prints after each call, as PAPI 7.0 keeps it (papi.c: `papi_return`
 * sets `_papi_hwi_errno` when a call answers an error; the few plain `return`s of an error,
 * PAPI_query_event of an empty preset slot, the end of an enumeration and
 * PAPI_assign_eventset_component of a set tied already, leave it as it was;
 * a call that succeeds leaves it too). papi/tests/side_by_side.rs runs it against Debian's
 * PAPI and ours and compares line by line. PAPI_perror writes to stderr, which is sent to
 * stdout here. (Before PAPI_library_init PAPI 7.0's PAPI_perror crashes, reading messages it
 * has not allocated yet: not asked.) */
#include <stdio.h>
#include <unistd.h>
#include <papi.h>

/* Prints what `call` answered and what PAPI_perror prints after it. */
#define TRY(what, call)                                                                       \
    do {                                                                                      \
        int answer_ = (int)(call);                                                            \
        printf("%s = %d; perror: ", what, answer_);                                           \
        PAPI_perror(NULL);                                                                    \
    } while (0)

int main(void) {
    int set = PAPI_NULL, code = 0, r, status = 0, initialised;
    long long values[2];

    setvbuf(stdout, NULL, _IONBF, 0);
    setvbuf(stderr, NULL, _IONBF, 0);
    dup2(1, 2);
    initialised = PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT;
    printf("cpu component enabled = %d\n",
           PAPI_get_component_info(0) && !PAPI_get_component_info(0)->disabled);
    TRY("init (no error yet)", initialised);
    TRY("create to NULL", PAPI_create_eventset(NULL));
    TRY("create", PAPI_create_eventset(&set));
    TRY("query an empty preset slot", PAPI_query_event(PAPI_PRESET_MASK | 0x70));
    TRY("query a preset code past PAPI's room", PAPI_query_event(PAPI_PRESET_MASK | 0xfff));
    TRY("query an empty preset slot again", PAPI_query_event(PAPI_PRESET_MASK | 0x70));
    TRY("query a native code past the table", PAPI_query_event(PAPI_NATIVE_MASK | 0xffffff));
    TRY("query code 0", PAPI_query_event(0));
    TRY("query a native code past the table again",
        PAPI_query_event(PAPI_NATIVE_MASK | 0xffffff));
    TRY("start a set with no component", PAPI_start(set));
    TRY("start a missing set", PAPI_start(set + 100));
    code = PAPI_PRESET_MASK | (PAPI_END_idx - 1);
    TRY("enumerate past the last preset", PAPI_enum_event(&code, PAPI_ENUM_EVENTS));
    code = PAPI_NATIVE_MASK;
    r = PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, 0);
    while (r == PAPI_OK)
        r = PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, 0);
    TRY("enumerate past the last native event", r);
    TRY("state to NULL", PAPI_state(set, NULL));
    TRY("get_multiplex of a missing set", PAPI_get_multiplex(set + 100));
    TRY("read to NULL from a set with no component", PAPI_read(set, NULL));
    TRY("read to NULL from a missing set", PAPI_read(set + 100, NULL));
    TRY("assign to component 0", PAPI_assign_eventset_component(set, 0));
    TRY("assign again", PAPI_assign_eventset_component(set, 0));
    TRY("set_debug 99", PAPI_set_debug(99));
    TRY("state", PAPI_state(set, &status));
    TRY("get_opt of no option", PAPI_get_opt(12345, NULL));
    TRY("set_opt to NULL", PAPI_set_opt(PAPI_DOMAIN, NULL));
    TRY("add perf::TASK-CLOCK", PAPI_add_named_event(set, "perf::TASK-CLOCK"));
    TRY("read", PAPI_read(set, values));
    TRY("destroy a set with events", PAPI_destroy_eventset(&set));
    PAPI_shutdown();
    return 0;
}
