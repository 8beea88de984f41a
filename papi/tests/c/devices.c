/* The device interface, the sysdetect component and component 0's PMUs and presets, printed
 * one "key value" a line; papi/tests/devices.rs runs it on Debian's PAPI 7.0 and on ours. */
#include <papi.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT) return 1;
    int n = PAPI_num_components();
    for (int c = 0; c < n; c++) {
        const PAPI_component_info_t *info = PAPI_get_component_info(c);
        if (!info) continue;
        printf("component.%s %d\n", info->name, c);
        if (!strcmp(info->name, "sysdetect"))
            printf("sysdetect.description %s\nsysdetect.counters %d\n", info->description,
                   info->num_cntrs);
    }
    printf("index.sysdetect %d\n", PAPI_get_component_index("sysdetect"));
    const PAPI_component_info_t *zero = PAPI_get_component_info(0);
    printf("zero.name %s\nzero.short_name %s\nzero.description %s\n", zero->name,
           zero->short_name, zero->description);
    printf("zero.version %s\nzero.support_version %s\n", zero->version, zero->support_version);
    printf("zero.presets %d\n", zero->num_preset_events);
    for (int i = 0; i < PAPI_PMU_MAX && zero->pmu_names[i]; i++)
        printf("zero.pmu.%s 1\n", zero->pmu_names[i]);
    int available = 0;
    int code = PAPI_PRESET_MASK;
    if (PAPI_enum_event(&code, PAPI_ENUM_FIRST) == PAPI_OK) {
        do {
            if (PAPI_query_event(code) == PAPI_OK) available++;
        } while (PAPI_enum_event(&code, PAPI_PRESET_ENUM_AVAIL) == PAPI_OK);
    }
    printf("zero.available %d\n", available);
    void *handle;
    printf("enum.first %d\n", PAPI_enum_dev_type(PAPI_DEV_TYPE_ENUM__FIRST, &handle));
    int rounds = 0, rc;
    while ((rc = PAPI_enum_dev_type(PAPI_DEV_TYPE_ENUM__ALL, &handle)) == PAPI_OK && rounds < 8) {
        int id = -9, vendor_id = -9, count = -9;
        const char *name = "?", *status = "?";
        PAPI_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_PAPI_ID, &id);
        PAPI_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_VENDOR_ID, &vendor_id);
        PAPI_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__CHAR_NAME, &name);
        PAPI_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__INT_COUNT, &count);
        PAPI_get_dev_type_attr(handle, PAPI_DEV_TYPE_ATTR__CHAR_STATUS, &status);
        printf("type%d.vendor_id %d\ntype%d.name %s\ntype%d.count %d\ntype%d.status %s\n", id,
               vendor_id, id, name, id, count, id, status);
        printf("type%d.bad_attr %d\n", id, PAPI_get_dev_type_attr(handle, 99, &count));
        if (id == PAPI_DEV_TYPE_ID__CPU) {
            const char *cpu_name = "?";
            PAPI_get_dev_attr(handle, 0, PAPI_DEV_ATTR__CPU_CHAR_NAME, &cpu_name);
            printf("cpu.name %s\n", cpu_name);
            unsigned threads = 0, numas = 0;
            for (int a = PAPI_DEV_ATTR__CPU_UINT_L1I_CACHE_SIZE;
                 a <= PAPI_DEV_ATTR__CPU_UINT_STEPPING; a++) {
                unsigned v = 0;
                int r = PAPI_get_dev_attr(handle, 0, a, &v);
                printf("cpu.attr%d %d %u\n", a, r, v);
                if (a == PAPI_DEV_ATTR__CPU_UINT_THREAD_COUNT) threads = v;
                if (a == PAPI_DEV_ATTR__CPU_UINT_NUMA_COUNT) numas = v;
            }
            for (unsigned t = 0; t < threads; t++) {
                unsigned v = 0;
                int r = PAPI_get_dev_attr(handle, t, PAPI_DEV_ATTR__CPU_UINT_THR_NUMA_AFFINITY, &v);
                printf("cpu.thread%u.node %d %u\n", t, r, v);
            }
            for (unsigned node = 0; node < numas; node++) {
                unsigned v = 0;
                int r = PAPI_get_dev_attr(handle, node, PAPI_DEV_ATTR__CPU_UINT_THR_PER_NUMA, &v);
                printf("cpu.node%u.threads %d %u\n", node, r, v);
            }
        }
        rounds++;
    }
    printf("enum.end %d %d\n", rc, handle == NULL);
    PAPI_shutdown();
    return 0;
}
