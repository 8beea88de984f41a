/* Each name given, looked up, named back, described and added to a new set, one line each:
 * "'NAME' code C back 'BACK' info I 'DESCRIPTION' add A", C the answer of
 * PAPI_event_name_to_code, I of PAPI_get_event_info and A of PAPI_add_named_event
 * (papi/tests/side_by_side.rs, papi/tests/tracepoints.rs). */
#include <stdio.h>
#include <string.h>
#include <papi.h>

int main(int argc, char **argv) {
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
        return 1;
    for (int i = 1; i < argc; i++) {
        int set = PAPI_NULL, code = 0;
        char back[PAPI_MAX_STR_LEN] = "";
        PAPI_event_info_t info;
        memset(&info, 0, sizeof info);
        PAPI_create_eventset(&set);
        int looked_up = PAPI_event_name_to_code(argv[i], &code);
        if (looked_up == PAPI_OK)
            PAPI_event_code_to_name(code, back);
        int described = looked_up == PAPI_OK ? PAPI_get_event_info(code, &info) : looked_up;
        int added = PAPI_add_named_event(set, argv[i]);
        printf("'%s' code %d back '%s' info %d '%s' add %d\n", argv[i], looked_up, back,
               described, info.long_descr, added);
        PAPI_cleanup_eventset(set);
        PAPI_destroy_eventset(&set);
    }
    return 0;
}
