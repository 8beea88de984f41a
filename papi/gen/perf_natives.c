/* The generator of events/data/papi/perf_natives.toml: libpfm4's perf_event PMU (`perf::`
   events, which PAPI 7.0's perf_event component lists and adds) read from the installed
   libpfm4 through its interface, and written as TOML, which `counterhal-gen tables` writes into
   the shipped tables' `papi` part: the modifier lists (PFM_OS_PERF_EVENT's, as PAPI enumerates
   them), then each event's name, description, perf type and config, unit masks and modifier
   list; then its perf_raw PMU's one pseudo-event (`perf_raw::r0000`).

   Build and run, naming the libpfm4 it reads (Debian's package version):
     cc papi/gen/perf_natives.c -o /tmp/perf_natives -lpfm &&
     /tmp/perf_natives "$(dpkg-query -W -f '${Version}' libpfm4)" > events/data/papi/perf_natives.toml
   papi/tests/unit_masks.rs runs it and fails when the file differs from its output.

   libpfm4 gives hardware and cache events the `h` qualifier only where the core PMU it
   detects filters the hypervisor level (AMD from family 10h on, or no core PMU detected);
   run it on such a machine, so that the table holds `h` (the library leaves it out where
   libpfm4 would, and the test compares the two without it there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <perfmon/pfmlib.h>
#include <perfmon/pfmlib_perf_event.h>

/* `s` as a TOML basic string. */
static void toml_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    putchar(*s);
  }
  putchar('"');
}

/* The perf type and config of `name`; 0 on success. */
static int encode(const char *name, unsigned *type, unsigned long long *config) {
  struct perf_event_attr attr;
  pfm_perf_encode_arg_t arg;
  memset(&attr, 0, sizeof attr);
  memset(&arg, 0, sizeof arg);
  arg.attr = &attr;
  arg.size = sizeof arg;
  if (pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg) != PFM_SUCCESS) return 1;
  *type = attr.type;
  *config = attr.config;
  return 0;
}

/* The modifiers of event `idx`: as one string ("u k period ..."), for comparing lists, or
   printed as TOML pairs (`print`). */
static void modifiers(int idx, int nattrs, char *out, size_t size, int print) {
  if (out) out[0] = 0;
  for (int i = 0; i < nattrs; i++) {
    pfm_event_attr_info_t at;
    memset(&at, 0, sizeof at);
    at.size = sizeof at;
    pfm_get_event_attr_info(idx, i, PFM_OS_PERF_EVENT_EXT, &at);
    if (at.type == PFM_ATTR_UMASK) continue;
    if (print) {
      printf("  [");
      toml_str(at.name);
      printf(", ");
      toml_str(at.desc);
      printf("],\n");
    } else {
      strncat(out, at.name, size - strlen(out) - 2);
      strncat(out, " ", size - strlen(out) - 1);
    }
  }
}

/* libpfm4's perf_raw PMU, which PAPI 7.0 lists after the perf_event PMU: its one
   pseudo-event (whose name stands for perf's raw syntax, `r` and the config in hexadecimal). */
static pfm_pmu_info_t raw_pmu;
static pfm_event_info_t raw_event;

/* Reads libpfm4's perf_raw PMU and its event; 0 on success. */
static int read_raw(void) {
  memset(&raw_pmu, 0, sizeof raw_pmu);
  raw_pmu.size = sizeof raw_pmu;
  if (pfm_get_pmu_info(PFM_PMU_PERF_EVENT_RAW, &raw_pmu) != PFM_SUCCESS || !raw_pmu.is_present)
    return 6;
  memset(&raw_event, 0, sizeof raw_event);
  raw_event.size = sizeof raw_event;
  if (pfm_get_event_info(raw_pmu.first_event, PFM_OS_PERF_EVENT_EXT, &raw_event) != PFM_SUCCESS)
    return 7;
  return 0;
}

/* One event as an inline table: its name, description, kind, config, unit masks (`umasks` of
   them) and modifier list. */
static void event_line(const char *name, const char *desc, const char *kind,
                       unsigned long long config, const char **umask_names,
                       const char **umask_descs, int umasks, const char *modifier_list) {
  printf("{ name = ");
  toml_str(name);
  printf(", description = ");
  toml_str(desc ? desc : "");
  printf(", kind = \"%s\", config = 0x%llx", kind, config);
  if (umasks > 0) {
    printf(", unit_masks = [");
    for (int u = 0; u < umasks; u++) {
      printf("%s[", u ? ", " : "");
      toml_str(umask_names[u]);
      printf(", ");
      toml_str(umask_descs[u]);
      printf("]");
    }
    printf("]");
  }
  printf(", modifiers = \"%s\" }", modifier_list);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: perf_natives LIBPFM4-VERSION\n");
    return 1;
  }
  if (pfm_initialize() != PFM_SUCCESS) return 2;
  pfm_pmu_info_t pmu;
  memset(&pmu, 0, sizeof pmu);
  pmu.size = sizeof pmu;
  if (pfm_get_pmu_info(PFM_PMU_PERF_EVENT, &pmu) != PFM_SUCCESS) return 3;
  int raw = read_raw();
  if (raw) return raw;
  printf("# libpfm4's `perf::` events, as PAPI 7.0's perf_event component lists them: the\n"
         "# modifiers of each kind of event (hardware and cache, software, raw) with their\n"
         "# descriptions; each event's name (PAPI's), libpfm4's description, its perf type\n"
         "# (`perf_event_attr.type`: hardware, software, cache, raw) and config (a cache event's:\n"
         "# the cache's id), its unit masks (a cache event's operations and results) and the\n"
         "# modifier list it takes; then libpfm4's `%s` PMU (\"%s\"): one\n"
         "# pseudo-event, named for perf's raw syntax (`%s::rc0` is config 0xc0 of\n"
         "# `PERF_TYPE_RAW`).\n",
         raw_pmu.name, raw_pmu.desc, raw_pmu.name);
  printf("#\n# Generated by papi/gen/perf_natives.c from libpfm4 %s's perf_event PMU\n"
         "# (PFM_OS_PERF_EVENT_EXT, the attributes PAPI 7.0 lists); do not edit. Regenerate:\n"
         "#   cc papi/gen/perf_natives.c -o /tmp/perf_natives -lpfm &&\n"
         "#   /tmp/perf_natives \"$(dpkg-query -W -f '${Version}' libpfm4)\" > "
         "events/data/papi/perf_natives.toml\n\n",
         argv[1]);

  /* The two modifier lists (software events', hardware events'), from the first of each. */
  char lists[2][512] = {"", ""};
  int seen[2] = {0, 0};
  for (int idx = pmu.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
    pfm_event_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS) continue;
    char name[256];
    snprintf(name, sizeof name, "perf::%s", info.name);
    unsigned type = 0;
    unsigned long long config = 0;
    int has_umasks = 0;
    for (int i = 0; i < info.nattrs; i++) {
      pfm_event_attr_info_t at;
      memset(&at, 0, sizeof at);
      at.size = sizeof at;
      pfm_get_event_attr_info(idx, i, PFM_OS_PERF_EVENT_EXT, &at);
      if (at.type == PFM_ATTR_UMASK) has_umasks = 1;
    }
    if (!has_umasks && encode(name, &type, &config)) continue;
    int hardware = has_umasks || type != 1;
    if (!seen[hardware]) {
      modifiers(idx, info.nattrs, lists[hardware], sizeof lists[hardware], 0);
      seen[hardware] = 1;
      printf("# The modifiers of libpfm4's %s events, with their descriptions.\n",
             hardware ? "hardware and cache" : "software");
      printf("modifiers.%s = [\n", hardware ? "hardware" : "software");
      modifiers(idx, info.nattrs, 0, 0, 1);
      printf("]\n");
    }
  }
  printf("# The modifiers of libpfm4's `%s` event, with their descriptions.\n", raw_pmu.name);
  printf("modifiers.raw = [\n");
  modifiers(raw_pmu.first_event, raw_event.nattrs, 0, 0, 1);
  printf("]\n\n");

  printf("# The events, in libpfm4's order.\n");
  printf("events = [\n");
  for (int idx = pmu.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
    pfm_event_info_t info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    if (pfm_get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS) continue;
    char name[256];
    snprintf(name, sizeof name, "perf::%s", info.name);
    /* Unit masks: the cache events' operations and results. */
    const char *umask_names[16];
    const char *umask_descs[16];
    int umasks = 0;
    for (int i = 0; i < info.nattrs && umasks < 16; i++) {
      pfm_event_attr_info_t at;
      memset(&at, 0, sizeof at);
      at.size = sizeof at;
      pfm_get_event_attr_info(idx, i, PFM_OS_PERF_EVENT_EXT, &at);
      if (at.type != PFM_ATTR_UMASK) continue;
      umask_names[umasks] = at.name;
      umask_descs[umasks] = at.desc;
      umasks++;
    }
    unsigned type = 3;
    unsigned long long config = 0;
    if (umasks == 0 && encode(name, &type, &config)) {
      fprintf(stderr, "%s does not encode\n", name);
      continue;
    }
    if (umasks > 0) {
      /* A cache event's config is its cache id; the operation and result come from masks. */
      char full[300];
      snprintf(full, sizeof full, "%s:%s:%s", name, umask_names[0], "ACCESS");
      if (encode(full, &type, &config)) {
        fprintf(stderr, "%s does not encode\n", full);
        return 4;
      }
      config &= 0xff;
    }
    int hardware = umasks > 0 || type != 1;
    char mine[512];
    modifiers(idx, info.nattrs, mine, sizeof mine, 0);
    if (strcmp(mine, lists[hardware]) != 0) {
      fprintf(stderr, "%s has modifiers [%s], not [%s]\n", name, mine, lists[hardware]);
      return 5;
    }
    /* One line an event. */
    printf("  ");
    event_line(name, info.desc, type == 0 ? "hardware" : type == 1 ? "software" : "cache",
               config, umask_names, umask_descs, umasks, hardware ? "hardware" : "software");
    printf(",\n");
  }
  printf("]\n\n");

  printf("# libpfm4's `%s` PMU's pseudo-event.\n", raw_pmu.name);
  char name[256];
  snprintf(name, sizeof name, "%s::%s", raw_pmu.name, raw_event.name);
  printf("raw = ");
  event_line(name, raw_event.desc, "raw", 0, 0, 0, 0, "raw");
  printf("\n");
  return 0;
}
