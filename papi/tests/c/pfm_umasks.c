/* libpfm4's unit masks (PFM_ATTR_UMASK attributes) of each event named, under its PMU::EVENT
   name, each line with its description after " | ": the oracle of papi/tests/unit_masks.rs. */
#include <stdio.h>
#include <string.h>
#include <perfmon/pfmlib.h>
int main(int argc, char **argv) {
  if (pfm_initialize() != PFM_SUCCESS) return 2;
  for (int a = 1; a < argc; a++) {
    int idx = pfm_find_event(argv[a]);
    if (idx < 0) { printf("%s not found\n", argv[a]); continue; }
    pfm_event_info_t info; memset(&info, 0, sizeof info); info.size = sizeof info;
    pfm_get_event_info(idx, PFM_OS_NONE, &info);
    pfm_pmu_info_t pinfo; memset(&pinfo, 0, sizeof pinfo); pinfo.size = sizeof pinfo;
    pfm_get_pmu_info(info.pmu, &pinfo);
    printf("%s::%s | %s\n", pinfo.name, info.name, info.desc ? info.desc : "");
    pfm_event_attr_info_t at;
    for (int i = 0; i < info.nattrs; i++) {
      memset(&at, 0, sizeof at); at.size = sizeof at;
      pfm_get_event_attr_info(idx, i, PFM_OS_NONE, &at);
      if (at.type == PFM_ATTR_UMASK) printf("  %s | %s\n", at.name, at.desc ? at.desc : "");
    }
  }
  return 0;
}
