/* libpfm4's encodings of its uncore PMUs' events, the oracle of tests/uncore.rs: for each
 * PMU named on the command line (`skx_unc_imc0`), every event and every unit mask of it (an
 * argument with `::` is one event, encoded as given), encoded by libpfm4 itself
 * (pfm_get_os_event_encoding, PFM_OS_NONE: the raw config); with `-l`, the names of all its
 * uncore PMUs.
 * Run with LIBPFM_ENCODE_INACTIVE=1, which makes libpfm4 encode events of PMUs this machine
 * lacks. One line each: `NAME CONFIG COUNT` (the encoding's first code in hex and how many
 * codes it has; a second or third code is a filter register), or `NAME error TEXT`. */
#include <perfmon/pfmlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void encode(const char *name)
{
    uint64_t codes[8] = {0};
    pfm_pmu_encode_arg_t arg;
    memset(&arg, 0, sizeof(arg));
    arg.size = sizeof(arg);
    arg.codes = codes;
    arg.count = 8;
    int r = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
    if (r != PFM_SUCCESS)
        printf("%s error %s\n", name, pfm_strerror(r));
    else
        printf("%s %#llx %d\n", name, (unsigned long long)arg.codes[0], arg.count);
}

int main(int argc, char **argv)
{
    if (pfm_initialize() != PFM_SUCCESS) {
        fprintf(stderr, "pfm_initialize failed\n");
        return 1;
    }
    /* `-l`: the name of every uncore PMU libpfm4 has, one a line. */
    if (argc == 2 && !strcmp(argv[1], "-l")) {
        for (int p = 0; p < PFM_PMU_MAX; p++) {
            pfm_pmu_info_t pinfo;
            memset(&pinfo, 0, sizeof(pinfo));
            pinfo.size = sizeof(pinfo);
            if (pfm_get_pmu_info(p, &pinfo) == PFM_SUCCESS && pinfo.type == PFM_PMU_TYPE_UNCORE)
                printf("%s\n", pinfo.name);
        }
        return 0;
    }
    for (int a = 1; a < argc; a++) {
        /* A whole event name (`PMU::EVENT:UMASK:QUALIFIER`): encoded as given. */
        if (strstr(argv[a], "::")) {
            encode(argv[a]);
            continue;
        }
        int found = 0;
        for (int p = 0; p < PFM_PMU_MAX; p++) {
            pfm_pmu_info_t pinfo;
            memset(&pinfo, 0, sizeof(pinfo));
            pinfo.size = sizeof(pinfo);
            if (pfm_get_pmu_info(p, &pinfo) != PFM_SUCCESS || strcmp(pinfo.name, argv[a]))
                continue;
            found = 1;
            for (int e = pinfo.first_event; e != -1; e = pfm_get_event_next(e)) {
                pfm_event_info_t info;
                memset(&info, 0, sizeof(info));
                info.size = sizeof(info);
                if (pfm_get_event_info(e, PFM_OS_NONE, &info) != PFM_SUCCESS)
                    continue;
                char name[512];
                int umasks = 0;
                for (int u = 0; u < info.nattrs; u++) {
                    pfm_event_attr_info_t attr;
                    memset(&attr, 0, sizeof(attr));
                    attr.size = sizeof(attr);
                    if (pfm_get_event_attr_info(e, u, PFM_OS_NONE, &attr) != PFM_SUCCESS
                        || attr.type != PFM_ATTR_UMASK)
                        continue;
                    umasks++;
                    snprintf(name, sizeof(name), "%s::%s:%s", argv[a], info.name, attr.name);
                    encode(name);
                }
                if (umasks == 0) {
                    snprintf(name, sizeof(name), "%s::%s", argv[a], info.name);
                    encode(name);
                }
            }
        }
        if (!found)
            printf("%s nopmu\n", argv[a]);
    }
    return 0;
}
