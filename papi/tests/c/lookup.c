/* Each name given, looked up and added to a new set: "NAME code C add A", C the answer of
 * PAPI_event_name_to_code and A of PAPI_add_named_event (papi/tests/tracepoints.rs). */
#include <stdio.h>
#include <papi.h>

int main(int argc, char **argv) {
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
        return 1;
    for (int i = 1; i < argc; i++) {
        int set = PAPI_NULL, code = 0;
        PAPI_create_eventset(&set);
        int looked_up = PAPI_event_name_to_code(argv[i], &code);
        printf("%s code %d add %d\n", argv[i], looked_up, PAPI_add_named_event(set, argv[i]));
        PAPI_cleanup_eventset(set);
        PAPI_destroy_eventset(&set);
    }
    return 0;
}
