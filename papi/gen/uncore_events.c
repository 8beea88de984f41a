/* The generator of events/data/papi/uncore_events.toml: the events of libpfm4's uncore PMU
   families named on the command line (`spr_unc_imc`), read from libpfm4 through its interface
   on each family's first box (`spr_unc_imc0`, or the family's one PMU: its boxes share their
   table), each event and each of its unit masks with the raw config libpfm4 encodes
   (pfm_get_os_event_encoding, PFM_OS_NONE, libpfm4 encoding the PMUs this machine lacks),
   written as TOML, which `counterhal-gen tables` writes into the shipped tables' `papi` part.
   The `perf_event_uncore` component resolves these families' names by it, as libpfm4 encodes
   them, where the kernel's perf JSON lacks events or their unit masks.

   Build and run against libpfm4's head in the lab's Debian sid root (libpfm4-dev there; the
   root's perfmon headers, its libpfm.so.4, run by its loader), naming it and the families:
     R=/var/cache/counterhal-lab/sid; mkdir -p /tmp/ue/include &&
     ln -sfn $R/usr/include/perfmon /tmp/ue/include/perfmon &&
     cc -I /tmp/ue/include papi/gen/uncore_events.c -o /tmp/ue/gen -Wl,--allow-shlib-undefined \
       $R/usr/lib/x86_64-linux-gnu/libpfm.so.4 &&
     LIBPFM_ENCODE_INACTIVE=1 $R/lib64/ld-linux-x86-64.so.2 --library-path \
       $R/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu /tmp/ue/gen \
       "$(sed -n '/^Package: libpfm4$/,/^$/s/^Version: //p' $R/var/lib/dpkg/status)" \
       icx_unc_cha icx_unc_iio icx_unc_imc icx_unc_irp icx_unc_m2m icx_unc_m2pcie \
       icx_unc_m3upi icx_unc_pcu icx_unc_ubox icx_unc_upi spr_unc_cha spr_unc_imc \
       spr_unc_upi gnr_unc_imc > events/data/papi/uncore_events.toml
   papi/tests/uncore.rs runs it and fails when the file differs from its output. */
#include <perfmon/pfmlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* libpfm4's encoding of `name` as `{ name = "EVENT:UMASK", config = "0x..." }`. */
static int row(const char *pmu, const char *name)
{
    char full[512];
    uint64_t codes[8] = {0};
    pfm_pmu_encode_arg_t arg;
    memset(&arg, 0, sizeof(arg));
    arg.size = sizeof(arg);
    arg.codes = codes;
    arg.count = 8;
    snprintf(full, sizeof(full), "%s::%s", pmu, name);
    if (pfm_get_os_event_encoding(full, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg) != PFM_SUCCESS)
        return 0;
    printf("  { name = \"%s\", config = \"0x%llx\" },\n", name, (unsigned long long)codes[0]);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: uncore_events VERSION FAMILY...\n");
        return 2;
    }
    if (pfm_initialize() != PFM_SUCCESS) {
        fprintf(stderr, "pfm_initialize failed\n");
        return 1;
    }
    printf("# generated: do not edit (papi/gen/uncore_events.c)\n");
    printf("# source: libpfm4 %s (Debian's package), its uncore PMUs' tables "
           "(lib/events/intel_*_unc_*.h)\n", argv[1]);
    printf("# each family's events and unit masks on its first box, with the raw config libpfm4 "
           "encodes (pfm_get_os_event_encoding, PFM_OS_NONE)\n");
    for (int a = 2; a < argc; a++) {
        char first[64];
        int p, found = 0;
        pfm_pmu_info_t pinfo;
        for (p = 0; p < PFM_PMU_MAX && !found; p++) {
            memset(&pinfo, 0, sizeof(pinfo));
            pinfo.size = sizeof(pinfo);
            if (pfm_get_pmu_info(p, &pinfo) != PFM_SUCCESS)
                continue;
            snprintf(first, sizeof(first), "%s0", argv[a]);
            found = !strcmp(pinfo.name, first) || !strcmp(pinfo.name, argv[a]);
        }
        if (!found) {
            fprintf(stderr, "libpfm4 has no PMU of family %s\n", argv[a]);
            return 1;
        }
        printf("\n[[families]]\nlibpfm4 = \"%s\"\nevents = [\n", argv[a]);
        for (int e = pinfo.first_event; e != -1; e = pfm_get_event_next(e)) {
            pfm_event_info_t info;
            memset(&info, 0, sizeof(info));
            info.size = sizeof(info);
            if (pfm_get_event_info(e, PFM_OS_NONE, &info) != PFM_SUCCESS)
                continue;
            int umasks = 0;
            for (int u = 0; u < info.nattrs; u++) {
                pfm_event_attr_info_t attr;
                char name[512];
                memset(&attr, 0, sizeof(attr));
                attr.size = sizeof(attr);
                if (pfm_get_event_attr_info(e, u, PFM_OS_NONE, &attr) != PFM_SUCCESS
                    || attr.type != PFM_ATTR_UMASK)
                    continue;
                umasks++;
                snprintf(name, sizeof(name), "%s:%s", info.name, attr.name);
                row(pinfo.name, name);
            }
            if (umasks == 0)
                row(pinfo.name, info.name);
        }
        printf("]\n");
    }
    return 0;
}
