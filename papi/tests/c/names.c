/* Event names as PAPI 7.0 reads them: the `perf::` PMU as written, the event in any case, its
 * unit masks and qualifiers as libpfm4 spells them (at most 64), each spelling its own code,
 * no code for a name PAPI refuses (a qualifier on a preset, blanks). For each name: its add
 * to a new set, its code and the name the code gives back. papi/tests/side_by_side.rs runs it
 * against Debian's PAPI and ours and compares line by line.
 *
 * PAPI's rocm_smi and sysdetect components are disabled first: PAPI asks every component
 * about a name the perf_event component does not claim, and those two answer PAPI_ENOSUPP
 * (rocm_smi's first look-up) and PAPI_ECMP where perf_event answers PAPI_ENOEVNT. Ours has no
 * rocm_smi and its sysdetect claims no names. */
#include <stdio.h>
#include <string.h>
#include <papi.h>

/* Prints `name` with its blanks and bytes outside ASCII escaped. */
static void label(const char *name) {
    const unsigned char *c;
    for (c = (const unsigned char *)name; *c; c++) {
        if (*c == '\n')
            printf("\\n");
        else if (*c == '\t')
            printf("\\t");
        else if (*c < 0x20 || *c >= 0x7f)
            printf("\\x%02x", *c);
        else
            putchar(*c);
    }
}

static void try_name(const char *name) {
    int set = PAPI_NULL, code = PAPI_NULL, added, coded, back = 99;
    char name_back[PAPI_MAX_STR_LEN] = "";
    PAPI_create_eventset(&set);
    added = PAPI_add_named_event(set, name);
    coded = PAPI_event_name_to_code(name, &code);
    if (coded == PAPI_OK)
        back = PAPI_event_code_to_name(code, name_back);
    printf("'");
    label(name);
    printf("' add %d code %d back %d '", added, coded, back);
    label(name_back);
    printf("'\n");
    PAPI_cleanup_eventset(set);
    PAPI_destroy_eventset(&set);
}

/* `perf::PAGE-FAULTS` with `n` times `:u`. */
static void repeated(int n) {
    char name[512];
    int i;
    strcpy(name, "perf::PAGE-FAULTS");
    for (i = 0; i < n; i++)
        strcat(name, ":u");
    printf("%d qualifiers: ", n);
    try_name(name);
}

int main(void) {
    static const char *const names[] = {
        "perf::PAGE-FAULTS", "perf::page-faults", "perf::Page-Faults", "PERF::PAGE-FAULTS",
        "Perf::TASK-CLOCK", "perf::PAGE-FAULTS:u", "perf::PAGE-FAULTS:U", "perf::TASK-CLOCK:K",
        "perf::TASK-CLOCK:k=0", "perf::TASK-CLOCK:U=1", "perf::TASK-CLOCK:period=5",
        "perf::TASK-CLOCK:Period=5", "perf::TASK-CLOCK:PERIOD=5", "perf::TASK-CLOCK:MG=0",
        "perf::TASK-CLOCK:EXCL", "perf::TASK-CLOCK:u=y", "perf::TASK-CLOCK:u=T",
        "perf::TASK-CLOCK:u:u=1", "perf::TASK-CLOCK:u:U", "perf::TASK-CLOCK:period=5:period=5",
        "perf::TASK-CLOCK:u=1:u=0", "perf::TASK-CLOCK:period=5:period=6",
        "perf::TASK-CLOCK:cpu=-1", "perf::TASK-CLOCK:cpu=abc", "perf::TASK-CLOCK:period=abc",
        "perf::TASK-CLOCK:period=-1", "perf::TASK-CLOCK:cpu=0x0", "perf::cs", "perf::CS",
        "perf::PERF_COUNT_SW_PAGE_FAULTS", "perf::perf_count_sw_page_faults",
        "perf::PERF_COUNT_HW_CACHE_L1D:read:miss", "perf::PERF_COUNT_HW_CACHE_L1D:Read:Miss",
        "perf::perf_count_hw_cache_l1d:READ:MISS", "perf::NO_SUCH_EVENT",
        "perf::PAGE-FAULTS\n", "perf::PAGE-FAULTS\t", "perf::PAGE-FAULTS ", " perf::PAGE-FAULTS",
        "perf::PAGE-FAULTS\xff", "PAPI_TOT_INS:u", "PAPI_TOT_INS:", "PAPI_TOT_CYC:k=0",
        "PAPI_NO_SUCH_PRESET", "PAPI_", "NO_SUCH_EVENT_ANYWHERE", "",
    };
    /* Presets: their codes and names only (whether one adds depends on the CPU's PMU). */
    static const char *const presets[] = {"PAPI_TOT_INS", "PAPI_Tot_Ins", "PAPI_tot_cyc",
                                          "Papi_TOT_INS", "papi_tot_ins", "PAPI_L1_DCM"};
    size_t i;
    int initialised;

    setvbuf(stdout, NULL, _IONBF, 0);
    PAPI_disable_component_by_name("rocm_smi");
    PAPI_disable_component_by_name("sysdetect");
    initialised = PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT;
    printf("cpu component enabled = %d\n",
           PAPI_get_component_info(0) && !PAPI_get_component_info(0)->disabled);
    printf("init %d\n", initialised);
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        try_name(names[i]);
    repeated(64);
    repeated(65);
    repeated(90);
    for (i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        int code = PAPI_NULL, coded = PAPI_event_name_to_code(presets[i], &code);
        char back[PAPI_MAX_STR_LEN] = "";
        if (coded == PAPI_OK)
            PAPI_event_code_to_name(code, back);
        printf("preset '%s' code %d %#x back '%s'\n", presets[i], coded, (unsigned)code, back);
    }
    PAPI_shutdown();
    return 0;
}
