/* What a program built against one PAPI release (7.0, 7.1 or 7.2) reads through that release's
 * papi.h, which real PAPI of the release and counterhal's libpapi must answer alike on any
 * machine: the version, component 0's description at the release's offsets, a preset's
 * description (its categories in the release's bits, 7.2's qualifiers), the walks of presets
 * and of a native event's unit masks with the release's modifiers, and the messages.
 * papi/tests/current.rs builds it in a Debian root against the root's PAPI and runs it on
 * that PAPI and on ours. Values that depend on the machine's counters (how many presets
 * count, how many counters) are not printed. */
#include <stdio.h>
#include <string.h>
#include <papi.h>

#define SHOW(what, value) printf("%s = %d\n", what, (int)(value))

/* Walks the presets with `modifier` from the first: how many steps, and the answer that ends
 * the walk. */
static void walk(const char *what, int modifier, int counted) {
    int code = PAPI_PRESET_MASK, steps = 0, result;
    while ((result = PAPI_enum_event(&code, modifier)) == PAPI_OK) {
        steps++;
    }
    if (counted) {
        printf("%s: %d steps, then %d\n", what, steps, result);
    } else {
        printf("%s: ends with %d\n", what, result);
    }
}

int main(void) {
    int code, result;
    char name[PAPI_MAX_STR_LEN];
    const PAPI_component_info_t *cmp;
    PAPI_event_info_t info;

    setvbuf(stdout, NULL, _IONBF, 0);
    SHOW("library_init is PAPI_VER_CURRENT", PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT);
    SHOW("LIB_VERSION is PAPI_VERSION", PAPI_get_opt(PAPI_LIB_VERSION, NULL) == PAPI_VERSION);

    /* Component 0 (fields past 7.2's insertion at its offsets). */
    cmp = PAPI_get_component_info(0);
    printf("component 0: %s\n", cmp->name);
    SHOW("component 0 default_domain", cmp->default_domain);
    SHOW("component 0 default_granularity", cmp->default_granularity);
    SHOW("component 0 available_granularities", cmp->available_granularities);
    SHOW("component 0 num_mpx_cntrs", cmp->num_mpx_cntrs);
    SHOW("component 0 attach", cmp->attach);
    SHOW("component 0 cpu", cmp->cpu);
    SHOW("component 0 inherit", cmp->inherit);
#ifdef PAPI_PARTIAL
    SHOW("component 0 partially_disabled", cmp->partially_disabled);
    printf("component 0 partially_disabled_reason: '%s'\n", cmp->partially_disabled_reason);
#endif
    SHOW("component past the last", PAPI_get_component_info(PAPI_num_components()) == NULL);

    /* A preset's description, written over a filled structure. */
    memset(&info, 0x55, sizeof info);
    SHOW("get_event_info PAPI_L1_DCM", PAPI_get_event_info(PAPI_L1_DCM, &info));
    printf("PAPI_L1_DCM: %s '%s' '%s' type %#x derived '%s'\n", info.symbol, info.short_descr,
           info.long_descr, info.event_type, info.derived);
#ifdef PAPI_PARTIAL
    SHOW("PAPI_L1_DCM num_quals", info.num_quals);
    SHOW("PAPI_L1_DCM quals[7][0]", info.quals[7][0]);
    SHOW("PAPI_L1_DCM quals_descrs[7][1023]", info.quals_descrs[7][PAPI_HUGE_STR_LEN - 1]);
#endif

    /* The walks of presets. */
    code = PAPI_PRESET_MASK;
    SHOW("enum PAPI_ENUM_FIRST", PAPI_enum_event(&code, PAPI_ENUM_FIRST));
    printf("first preset %#x\n", (unsigned)code);
    walk("PAPI_ENUM_EVENTS", PAPI_ENUM_EVENTS, 1);
    walk("PAPI_PRESET_ENUM_AVAIL", PAPI_PRESET_ENUM_AVAIL, 0);
    walk("PAPI_PRESET_ENUM_INS", PAPI_PRESET_ENUM_INS, 1);
    walk("PAPI_NTV_ENUM_GROUPS", PAPI_NTV_ENUM_GROUPS, 0);
#ifdef PAPI_PARTIAL
    walk("PAPI_PRESET_ENUM_CPU", PAPI_PRESET_ENUM_CPU, 1);
    walk("PAPI_PRESET_ENUM_CPU_AVAIL", PAPI_PRESET_ENUM_CPU_AVAIL, 0);
    code = PAPI_PRESET_MASK;
    SHOW("enum PAPI_PRESET_ENUM_FIRST_COMP", PAPI_enum_event(&code, PAPI_PRESET_ENUM_FIRST_COMP));
#endif
    code = PAPI_PRESET_MASK;
    SHOW("enum_cmp_event preset on component 99", PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, 99));

    /* The unit masks of the first native event looked up (PAPI 7.0 walks them for the first
     * only), with the release's PAPI_NTV_ENUM_UMASKS. */
    result = PAPI_event_name_to_code("perf::PERF_COUNT_HW_CACHE_L1D", &code);
    SHOW("name_to_code perf::PERF_COUNT_HW_CACHE_L1D", result);
    while (result == PAPI_OK && (result = PAPI_enum_event(&code, PAPI_NTV_ENUM_UMASKS)) == PAPI_OK) {
        PAPI_event_code_to_name(code, name);
        printf("unit mask %s\n", name);
    }
    SHOW("unit masks end", result);

    /* The messages, to the last code and one past it. */
    printf("message of the last code: %s\n", PAPI_strerror(1 - PAPI_NUM_ERRORS));
    SHOW("message past the last code", PAPI_strerror(-PAPI_NUM_ERRORS) == NULL);
    return 0;
}
