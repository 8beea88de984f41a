/* libpfm4's perf_event PMU (the `perf::` events PAPI users type) with each event's perf type
   and config as libpfm4 encodes it: one line `perf::NAME[:UMASK:UMASK] TYPE CONFIG` per event,
   a cache event once per operation (READ, WRITE, PREFETCH) and result (ACCESS, MISS) libpfm4
   encodes. The oracle of tests/face.rs's perf:: names. */
#include <stdio.h>
#include <string.h>
#include <perfmon/pfmlib.h>
#include <perfmon/pfmlib_perf_event.h>

static void show(const char *name) {
  struct perf_event_attr attr;
  pfm_perf_encode_arg_t arg;
  memset(&attr, 0, sizeof attr);
  memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.size = sizeof arg;
  if (pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg) == PFM_SUCCESS)
    printf("%s %u %llu\n", name, attr.type, (unsigned long long)attr.config);
}

int main(void) {
  if (pfm_initialize() != PFM_SUCCESS) return 2;
  pfm_pmu_info_t pmu;
  memset(&pmu, 0, sizeof pmu);
  pmu.size = sizeof pmu;
  if (pfm_get_pmu_info(PFM_PMU_PERF_EVENT, &pmu) != PFM_SUCCESS) return 3;
  static const char *ops[] = {"READ", "WRITE", "PREFETCH"};
  static const char *results[] = {"ACCESS", "MISS"};
  for (int idx = pmu.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
    pfm_event_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS) continue;
    char name[256];
    if (strncmp(info.name, "PERF_COUNT_HW_CACHE_", 20) == 0) {
      for (int o = 0; o < 3; o++)
        for (int r = 0; r < 2; r++) {
          snprintf(name, sizeof name, "perf::%s:%s:%s", info.name, ops[o], results[r]);
          show(name);
        }
    } else {
      snprintf(name, sizeof name, "perf::%s", info.name);
      show(name);
    }
  }
  return 0;
}
