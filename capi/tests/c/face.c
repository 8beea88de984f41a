/* The C API's set options, removal, rows, version, listing of unit masks and the refusals
 * it words, as a C tool meets them. Each mode checks one piece and prints "ok MODE" when every
 * check held, or the failed check and exits 1.
 *
 *   face version | remove | options | inherit | rows | restart | refusals | umasks | command
 *   face open-with | domain
 *   face cpus    (rows of a COUNTERHAL_TARGET_ALL_CPUS set; needs the privilege to count CPUs)
 *   face unprivileged ID  (as an unprivileged user at perf_event_paranoid 2, with ID the id of
 *                          the syscalls:sys_enter_getpid tracepoint) */
#define _GNU_SOURCE
#include <counterhal.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failed;

#define CHECK(cond)                                                                         \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, \
                    #cond, counterhal_last_error());                                        \
            failed = 1;                                                                     \
        }                                                                                   \
    } while (0)

/* This thread's CPU time. */
static uint64_t cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The wall clock. */
static uint64_t wall_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Runs this thread until it has used ns nanoseconds of CPU. */
static void spin(uint64_t ns) {
    uint64_t end = cpu_ns() + ns;
    while (cpu_ns() < end) {
    }
}

enum { PAGES = 256 };

/* Touches PAGES fresh pages: at least PAGES page faults in the thread that runs it. */
static void *touch_pages(void *arg) {
    long page = sysconf(_SC_PAGESIZE);
    char *memory = mmap(NULL, (size_t)page * PAGES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
        return NULL;
    for (int i = 0; i < PAGES; i++)
        memory[(size_t)i * (size_t)page] = 1;
    munmap(memory, (size_t)page * PAGES);
    return arg;
}

static counterhal_set_t *new_set(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    if (counterhal_set_create(ch, &set) != COUNTERHAL_OK) {
        fprintf(stderr, "no set: %s\n", counterhal_last_error());
        exit(1);
    }
    return set;
}

static void version(void) {
    CHECK(counterhal_version() == COUNTERHAL_VERSION_NUMBER);
    CHECK(strcmp(counterhal_version_string(), COUNTERHAL_VERSION_STRING) == 0);
    printf("version %s\n", counterhal_version_string());
}

static void removal(counterhal_t *ch) {
    counterhal_set_t *set = new_set(ch);
    counterhal_reading_t out[3];
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    CHECK(counterhal_set_add(set, "task-clock") == 1);
    CHECK(counterhal_set_add(set, "context-switches") == 2);
    CHECK(counterhal_set_remove(set, 1) == COUNTERHAL_OK);
    CHECK(counterhal_set_size(set) == 2);
    CHECK(strcmp(counterhal_set_event_name(set, 1), "context-switches") == 0);
    CHECK(counterhal_set_remove(set, 5) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "no event at index 5") != NULL);
    /* A removed event can be added again, at the end. */
    CHECK(counterhal_set_add(set, "task-clock") == 2);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_remove(set, 0) == COUNTERHAL_ESTATE);
    CHECK(counterhal_set_stop(set, out, 3) == COUNTERHAL_OK);
    CHECK(out[2].value > 0); /* task-clock counted in its new place */
    CHECK(counterhal_set_remove(set, 0) == COUNTERHAL_OK);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_stop(set, out, 2) == COUNTERHAL_OK);
    CHECK(out[1].value > 0);
    counterhal_set_destroy(set);
}

static void options(counterhal_t *ch) {
    counterhal_set_t *set = new_set(ch);
    counterhal_reading_t out[2];
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_GROUPED) == 1);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_PINNED) == 0);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_INHERIT) == 0);
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    CHECK(counterhal_set_add(set, "task-clock") == 1);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_GROUPED, 0) == COUNTERHAL_OK);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_GROUPED) == 0);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_PINNED, 1) == COUNTERHAL_OK);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_PINNED) == 1);
    CHECK(counterhal_set_option(set, 9, 1) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "unknown option 9") != NULL);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_GROUPED, 2) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_GROUPED, 1) == COUNTERHAL_ESTATE);
    CHECK(counterhal_set_stop(set, out, 2) == COUNTERHAL_OK);
    CHECK(out[1].value > 0);
    counterhal_set_destroy(set);

    counterhal_set_t *cpus = NULL;
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, "0", &cpus) == COUNTERHAL_OK);
    if (cpus != NULL) {
        CHECK(counterhal_set_option(cpus, COUNTERHAL_OPTION_INHERIT, 1) == COUNTERHAL_EINVAL);
        counterhal_set_destroy(cpus);
    }
}

/* Page faults of a thread this thread creates: counted with COUNTERHAL_OPTION_INHERIT, not
 * without (the oracle: touching PAGES fresh pages faults at least PAGES times). */
static void inherit(counterhal_t *ch) {
    for (int on = 0; on <= 1; on++) {
        counterhal_set_t *set = new_set(ch);
        counterhal_reading_t out[1];
        CHECK(counterhal_set_add(set, "page-faults") == 0);
        CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_INHERIT, on) == COUNTERHAL_OK);
        CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, touch_pages, NULL) == 0);
        pthread_join(thread, NULL);
        CHECK(counterhal_set_stop(set, out, 1) == COUNTERHAL_OK);
        printf("inherit %d: %llu page faults\n", on, (unsigned long long)out[0].value);
        if (on)
            CHECK(out[0].value >= PAGES);
        else
            CHECK(out[0].value < PAGES);
        counterhal_set_destroy(set);
    }
}

static void rows(counterhal_t *ch) {
    counterhal_set_t *set = new_set(ch);
    counterhal_reading_t out[1];
    uint32_t id = 99;
    CHECK(counterhal_set_add(set, "task-clock") == 0);
    CHECK(counterhal_set_place(set, 0, &id) == COUNTERHAL_PLACE_THIS_THREAD && id == 0);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_targets(set) == 1);
    CHECK(counterhal_set_place(set, 0, NULL) == COUNTERHAL_PLACE_THIS_THREAD);
    CHECK(counterhal_set_place(set, 1, &id) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "no row 1") != NULL);
    CHECK(counterhal_set_stop(set, out, 1) == COUNTERHAL_OK);
    counterhal_set_destroy(set);

    counterhal_set_t *thread = NULL;
    uint32_t self = (uint32_t)gettid();
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_THREAD, self, NULL, &thread) ==
          COUNTERHAL_OK);
    if (thread != NULL) {
        CHECK(counterhal_set_place(thread, 0, &id) == COUNTERHAL_PLACE_THREAD && id == self);
        counterhal_set_destroy(thread);
    }
}

/* Each row of an all-CPUs set names its CPU: the CPUs online, in order. */
static void cpus(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_ALL_CPUS, 0, NULL, &set) ==
          COUNTERHAL_OK);
    if (set == NULL)
        return;
    int added = counterhal_set_add(set, "task-clock");
    if (added == COUNTERHAL_EPERM) {
        printf("skip: counting CPUs is refused here: %s\n", counterhal_last_error());
        exit(3);
    }
    CHECK(added == 0);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    int places = counterhal_set_targets(set);
    CHECK(places == (int)sysconf(_SC_NPROCESSORS_ONLN));
    for (int row = 0; row < places; row++) {
        uint32_t id = 999;
        CHECK(counterhal_set_place(set, (size_t)row, &id) == COUNTERHAL_PLACE_CPU);
        printf("row %d: cpu %u\n", row, id);
        CHECK(id == (uint32_t)row);
    }
    counterhal_set_destroy(set);
}

/* A restarted set's times start from zero: the second run's time enabled is that run's,
 * not the lifetime's. Bounds that no load can break: a thread's event is enabled for at most
 * the wall time (CLOCK_MONOTONIC) between its start and its stop, and for at least the CPU
 * time this thread spun (CLOCK_THREAD_CPUTIME_ID: a VM's steal time and interrupts count in
 * the kernel's enabled time, not in the thread's CPU clock, so that clock is no upper bound).
 * The lifetime's time would hold the first run's 40 ms: more than the first run alone. */
static void restart(counterhal_t *ch) {
    /* perf's clock and CLOCK_MONOTONIC are read apart: a millisecond covers the calls. */
    const uint64_t slack = 1000000;
    counterhal_set_t *set = new_set(ch);
    counterhal_reading_t first[1], second[1], again[1];
    CHECK(counterhal_set_add(set, "task-clock") == 0);
    uint64_t t0 = wall_ns();
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    spin(40000000);
    CHECK(counterhal_set_stop(set, first, 1) == COUNTERHAL_OK);
    uint64_t t1 = wall_ns();
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    spin(5000000);
    CHECK(counterhal_set_stop(set, second, 1) == COUNTERHAL_OK);
    uint64_t t2 = wall_ns();
    printf("first run %llu ns enabled (%llu ns of wall time), second %llu ns (%llu ns)\n",
           (unsigned long long)first[0].time_enabled, (unsigned long long)(t1 - t0),
           (unsigned long long)second[0].time_enabled, (unsigned long long)(t2 - t1));
    CHECK(first[0].time_enabled <= t1 - t0 + slack);
    CHECK(first[0].time_enabled + slack >= 40000000);
    CHECK(second[0].time_enabled <= t2 - t1 + slack);
    CHECK(second[0].time_enabled + slack >= 5000000);
    CHECK(second[0].value <= second[0].time_enabled + slack);
    /* The lifetime's time would be the first run's and more. */
    CHECK(second[0].time_enabled < first[0].time_enabled);
    /* A reset while running starts a new window too: the time before it (20 ms and the
     * runs before) is gone. */
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    spin(20000000);
    uint64_t t3 = wall_ns();
    CHECK(counterhal_set_reset(set) == COUNTERHAL_OK);
    spin(2000000);
    CHECK(counterhal_set_read(set, again, 1) == COUNTERHAL_OK);
    uint64_t t4 = wall_ns();
    printf("after the reset %llu ns enabled (%llu ns of wall time)\n",
           (unsigned long long)again[0].time_enabled, (unsigned long long)(t4 - t3));
    CHECK(again[0].time_enabled <= t4 - t3 + slack);
    CHECK(again[0].time_enabled + slack >= 2000000);
    CHECK(again[0].value <= again[0].time_enabled + slack);
    counterhal_set_destroy(set);
}

/* A set on a control group counts what runs in it, on every CPU: a spinning task's time in
 * the busy group (some, never more than the wall time counted), nothing in the idle one.
 * Both are named below the cgroup mount, as perf stat -G names them. */
static void cgroup(counterhal_t *ch, const char *busy, const char *idle) {
    counterhal_set_t *in_busy = NULL, *in_idle = NULL;
    CHECK(counterhal_set_create_cgroup(ch, busy, NULL, &in_busy) == COUNTERHAL_OK);
    CHECK(counterhal_set_create_cgroup(ch, idle, NULL, &in_idle) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(in_busy, "task-clock") == 0);
    CHECK(counterhal_set_add(in_idle, "task-clock") == 0);
    uint64_t t0 = wall_ns();
    int started = counterhal_set_start(in_busy);
    if (started == COUNTERHAL_EPERM || started == COUNTERHAL_ENOSUPP) {
        printf("skip: counting a cgroup is refused here: %s\n", counterhal_last_error());
        exit(3);
    }
    CHECK(started == COUNTERHAL_OK);
    CHECK(counterhal_set_start(in_idle) == COUNTERHAL_OK);
    struct timespec pause = {0, 300000000};
    nanosleep(&pause, NULL);
    counterhal_reading_t busy_reading[1], idle_reading[1];
    CHECK(counterhal_set_stop(in_busy, busy_reading, 1) == COUNTERHAL_OK);
    CHECK(counterhal_set_stop(in_idle, idle_reading, 1) == COUNTERHAL_OK);
    uint64_t elapsed = wall_ns() - t0;
    printf("busy %llu ns, idle %llu ns, of %llu ns\n", (unsigned long long)busy_reading[0].value,
           (unsigned long long)idle_reading[0].value, (unsigned long long)elapsed);
    CHECK(busy_reading[0].value > 0 && busy_reading[0].value <= elapsed);
    CHECK(idle_reading[0].value == 0);
    int places = counterhal_set_targets(in_busy);
    CHECK(places == (int)sysconf(_SC_NPROCESSORS_ONLN));
    uint32_t id = 999;
    CHECK(counterhal_set_place(in_busy, 0, &id) == COUNTERHAL_PLACE_CPU && id == 0);
    counterhal_set_destroy(in_busy);
    counterhal_set_destroy(in_idle);
    /* On CPU 0 alone: one row. */
    counterhal_set_t *on_cpu0 = NULL;
    CHECK(counterhal_set_create_cgroup(ch, busy, "0", &on_cpu0) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(on_cpu0, "task-clock") == 0);
    CHECK(counterhal_set_start(on_cpu0) == COUNTERHAL_OK);
    CHECK(counterhal_set_targets(on_cpu0) == 1);
    counterhal_set_destroy(on_cpu0);
    /* Refused by name: a group that is not there, one climbing out of the mount, NULL. */
    counterhal_set_t *none = NULL;
    CHECK(counterhal_set_create_cgroup(ch, "counterhal-no-such-cgroup", NULL, &none) ==
          COUNTERHAL_ENOENT);
    CHECK(strstr(counterhal_last_error(), "counterhal-no-such-cgroup") != NULL);
    CHECK(counterhal_set_create_cgroup(ch, "../etc", NULL, &none) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "..") != NULL);
    CHECK(counterhal_set_create_cgroup(ch, NULL, NULL, &none) == COUNTERHAL_EINVAL);
    CHECK(none == NULL);
}

static void refusals(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_THREAD, 0, NULL, &set) ==
          COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "COUNTERHAL_TARGET_THREAD needs an id") != NULL);
    CHECK(strstr(counterhal_last_error(), "process id") == NULL);
    set = new_set(ch);
    CHECK(counterhal_set_add(set, "{page-faults,task-clock}") == COUNTERHAL_EEVENT);
    CHECK(strstr(counterhal_last_error(), "group syntax") != NULL);
    counterhal_set_destroy(set);
}

/* libpfm4's perf:: names, as PAPI users type them, are taken and count (the encodings are
 * checked against libpfm4's by the facade's tests). */
static void perf_names(counterhal_t *ch) {
    counterhal_set_t *set = new_set(ch);
    CHECK(counterhal_set_add(set, "perf::PAGE-FAULTS") == 0);
    CHECK(counterhal_set_add(set, "perf::PERF_COUNT_SW_CONTEXT_SWITCHES") == 1);
    CHECK(counterhal_set_add(set, "perf::NO-SUCH-EVENT") == COUNTERHAL_EEVENT);
    CHECK(strstr(counterhal_last_error(), "perf::PAGE-FAULTS") != NULL);
    counterhal_reading_t r[2];
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    touch_pages(NULL);
    CHECK(counterhal_set_stop(set, r, 2) == COUNTERHAL_OK);
    CHECK(r[0].value >= 256);
    printf("perf::PAGE-FAULTS %llu\n", (unsigned long long)r[0].value);
    counterhal_set_destroy(set);
}

/* A native event's unit masks follow it in the listing, named EVENT.UNIT_MASK. */
static void umasks(counterhal_t *ch) {
    if (counterhal_cpu_model(ch) == NULL) {
        printf("skip: no CPU model detected\n");
        exit(3);
    }
    int n = counterhal_list(ch, "BR_INST_RETIRED", NULL, 0);
    if (n == 0) {
        printf("skip: model %s has no BR_INST_RETIRED\n", counterhal_cpu_model(ch));
        exit(3);
    }
    CHECK(n > 1);
    if (n <= 1)
        return;
    counterhal_event_info_t *out = calloc((size_t)n, sizeof *out);
    CHECK(counterhal_list(ch, "BR_INST_RETIRED", out, (size_t)n) == n);
    int events = 0, masks = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(out[i].section, "native") == 0 && strcmp(out[i].name, "BR_INST_RETIRED") == 0)
            events++;
        if (strcmp(out[i].section, "umask") == 0) {
            CHECK(strncmp(out[i].name, "BR_INST_RETIRED.", 16) == 0);
            masks++;
        }
    }
    printf("BR_INST_RETIRED: %d event, %d unit masks\n", events, masks);
    CHECK(events == 1 && masks > 1);
    free(out);
}

/* A report written on request is not written again at exit unless a region ended since
 * ("report" ends one region; "report-more" ends another after the report). The report's
 * return code is printed ("report returned N") for the format check. */
static void report(int more) {
    CHECK(counterhal_region_begin("first") == COUNTERHAL_OK);
    CHECK(counterhal_region_end("first") == COUNTERHAL_OK);
    int rc = counterhal_region_report();
    printf("report returned %d: %s\n", rc, rc == 0 ? "" : counterhal_last_error());
    if (more) {
        CHECK(counterhal_region_begin("second") == COUNTERHAL_OK);
        CHECK(counterhal_region_end("second") == COUNTERHAL_OK);
    }
}

/* counterhal_open_with: the backend, the CPU model (by id or perf's signature) and an events
 * file chosen from C; unknown names refused naming the known ones; the struct's size checked
 * (too small, too large, a newer struct whose unknown fields are 0 or not). The oracle for
 * Skylake's INST_RETIRED.ANY_P is the SDM's table (event 0xc0, as libpfm4's skl encodes it). */
static void open_with(void) {
    counterhal_t *ch = NULL;
    counterhal_options_t o = {sizeof o, NULL, NULL, NULL};
    /* The first version's layout, which the library pins too. */
    CHECK(sizeof o == sizeof(size_t) + 3 * sizeof(const char *));
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_OK);
    counterhal_close(ch);
    ch = NULL;
    CHECK(counterhal_open_with(&ch, NULL) == COUNTERHAL_OK);
    counterhal_close(ch);
    ch = NULL;
    CHECK(counterhal_open_with(NULL, &o) == COUNTERHAL_EINVAL);

    o.backend = "linux";
    o.cpu_model = "skl";
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_OK);
    if (ch != NULL) {
        CHECK(strcmp(counterhal_backend(ch), "linux") == 0);
        CHECK(counterhal_cpu_model(ch) != NULL && strcmp(counterhal_cpu_model(ch), "skl") == 0);
        char encoding[128] = "";
        counterhal_query(ch, "INST_RETIRED.ANY_P", encoding, sizeof encoding);
        printf("skl INST_RETIRED.ANY_P: %s\n", encoding);
        CHECK(strstr(encoding, "config=0xc0 ") != NULL);
        counterhal_close(ch);
        ch = NULL;
    }
    o.backend = NULL;
    o.cpu_model = "GenuineIntel-6-8F-8";
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_OK);
    if (ch != NULL) {
        CHECK(counterhal_cpu_model(ch) != NULL && strcmp(counterhal_cpu_model(ch), "spr") == 0);
        counterhal_close(ch);
        ch = NULL;
    }

    o.cpu_model = "pentium9000";
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_EINVAL && ch == NULL);
    CHECK(strstr(counterhal_last_error(), "pentium9000") != NULL);
    CHECK(strstr(counterhal_last_error(), "skl") != NULL);
    o.cpu_model = NULL;
    o.backend = "windows";
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_EINVAL && ch == NULL);
    /* The known names, the registry's, are checked by the test that runs this mode. */
    printf("unknown backend: %s\n", counterhal_last_error());
    o.backend = NULL;

    /* An events file adding a model: chosen by its id, its event resolved. */
    char path[] = "/tmp/counterhal-face-events-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        const char text[] = "[[cpu]]\nid = \"mine\"\nencoder = \"amd64\"\n"
                            "pmu = { general_counters = 6, counter_width = 48 }\n"
                            "[[cpu.event]]\nname = \"MY_EVENT\"\ncode = 0x76\n";
        CHECK(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
        close(fd);
        o.events_file = path;
        o.cpu_model = "mine";
        CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_OK);
        if (ch != NULL) {
            CHECK(counterhal_cpu_model(ch) != NULL &&
                  strcmp(counterhal_cpu_model(ch), "mine") == 0);
            char encoding[128] = "";
            counterhal_query(ch, "MY_EVENT", encoding, sizeof encoding);
            printf("mine MY_EVENT: %s\n", encoding);
            CHECK(strstr(encoding, "config=0x76 ") != NULL);
            counterhal_close(ch);
            ch = NULL;
        }
        unlink(path);
        CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_EINVAL && ch == NULL);
        CHECK(strstr(counterhal_last_error(), path) != NULL);
        o.events_file = NULL;
        o.cpu_model = NULL;
    }

    /* The size: too small, absurd, a newer struct with its new fields 0 (taken) or not. */
    o.size = sizeof(size_t);
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_EINVAL && ch == NULL);
    CHECK(strstr(counterhal_last_error(), "sizeof(counterhal_options_t)") != NULL);
    o.size = 1u << 20;
    CHECK(counterhal_open_with(&ch, &o) == COUNTERHAL_EINVAL && ch == NULL);
    struct {
        counterhal_options_t options;
        uint64_t newer[2];
    } grown;
    memset(&grown, 0, sizeof grown);
    grown.options.size = sizeof grown;
    CHECK(counterhal_open_with(&ch, &grown.options) == COUNTERHAL_OK);
    counterhal_close(ch);
    ch = NULL;
    grown.newer[1] = 1;
    CHECK(counterhal_open_with(&ch, &grown.options) == COUNTERHAL_ENOSUPP && ch == NULL);
    CHECK(strstr(counterhal_last_error(), "newer counterhal.h") != NULL);
}

/* COUNTERHAL_OPTION_DOMAIN and _EXCLUSIVE: the domain goes to events without a modifier. The
 * oracle: touching PAGES fresh pages faults PAGES times in user space (perf stat -e
 * page-faults:u,page-faults:k counts them :u, and at most a few :k). The kernel asked for by
 * a caller the OS refuses it to is COUNTERHAL_EPERM with the hint. */
static void domain(counterhal_t *ch) {
    counterhal_set_t *set = new_set(ch);
    counterhal_reading_t out[1];
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_DOMAIN) == 0);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_EXCLUSIVE) == 0);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, 8) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "COUNTERHAL_DOMAIN_USER") != NULL);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, -1) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_EXCLUSIVE, 2) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    const int domains[] = {COUNTERHAL_DOMAIN_USER, COUNTERHAL_DOMAIN_KERNEL,
                           COUNTERHAL_DOMAIN_USER | COUNTERHAL_DOMAIN_KERNEL};
    for (int i = 0; i < 3; i++) {
        int rc = counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, domains[i]);
        if (rc == COUNTERHAL_EPERM && (domains[i] & COUNTERHAL_DOMAIN_KERNEL)) {
            CHECK(strstr(counterhal_last_error(), "perf_event_paranoid") != NULL);
            printf("domain %d refused: %s\n", domains[i], counterhal_last_error());
            continue;
        }
        CHECK(rc == COUNTERHAL_OK);
        CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_DOMAIN) == domains[i]);
        CHECK(strcmp(counterhal_set_event_name(set, 0), "page-faults") == 0);
        CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
        touch_pages(NULL);
        CHECK(counterhal_set_stop(set, out, 1) == COUNTERHAL_OK);
        printf("domain %d: %llu page faults\n", domains[i], (unsigned long long)out[0].value);
        if (domains[i] & COUNTERHAL_DOMAIN_USER)
            CHECK(out[0].value >= PAGES);
        else
            CHECK(out[0].value < PAGES / 2);
        CHECK(counterhal_set_note(set) == NULL);
    }
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, 0) == COUNTERHAL_OK);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_DOMAIN) == 0);
    /* Exclusive: the set alone on the counters while it runs; it still counts. */
    CHECK(counterhal_set_add(set, "task-clock") == 1);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_EXCLUSIVE, 1) == COUNTERHAL_OK);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_EXCLUSIVE) == 1);
    counterhal_reading_t both[2];
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    touch_pages(NULL);
    CHECK(counterhal_set_stop(set, both, 2) == COUNTERHAL_OK);
    CHECK(both[0].value >= PAGES && both[1].value > 0);
    counterhal_set_destroy(set);
}

/* As an unprivileged user at perf_event_paranoid 2: task-clock, page-faults and a tracepoint
 * by its id count user space only, under the names given (their domain says user space),
 * with the note naming them as the Rust face
 * and the command word it; the kernel asked for is COUNTERHAL_EPERM with the hint. Oracles:
 * the kernel's paranoid rules (perf_event_open(2)); 100 getpid() calls counted by
 * syscalls:sys_enter_getpid; PAGES fresh pages touched. */
static void unprivileged(counterhal_t *ch, const char *id) {
    char tracepoint[64], names[200];
    snprintf(tracepoint, sizeof tracepoint, "tracepoint/config=%s/", id);
    snprintf(names, sizeof names, "so task-clock, page-faults, %s count user space only",
             tracepoint);
    counterhal_set_t *set = new_set(ch);
    counterhal_reading_t r[3];
    CHECK(counterhal_set_add(set, "task-clock") == 0);
    CHECK(counterhal_set_add(set, "page-faults") == 1);
    CHECK(counterhal_set_add(set, tracepoint) == 2);
    CHECK(strcmp(counterhal_set_event_name(set, 0), "task-clock") == 0);
    CHECK(strcmp(counterhal_set_event_name(set, 1), "page-faults") == 0);
    CHECK(strcmp(counterhal_set_event_name(set, 2), tracepoint) == 0);
    CHECK(counterhal_set_note(set) == NULL); /* nothing opened as a whole yet */
    CHECK(counterhal_set_event_domain(set, 0) == COUNTERHAL_DOMAIN_USER);
    CHECK(counterhal_set_event_domain(set, 1) == COUNTERHAL_DOMAIN_USER);
    CHECK(counterhal_set_event_domain(set, 2) == COUNTERHAL_DOMAIN_USER);
    CHECK(counterhal_set_event_domain(set, 3) == COUNTERHAL_EINVAL);
    /* A strict domain: the fallback refused, the set unchanged. */
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_STRICT_DOMAIN, 1) == COUNTERHAL_EPERM);
    CHECK(strstr(counterhal_last_error(), "perf_event_paranoid") != NULL);
    printf("strict refused: %s\n", counterhal_last_error());
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_STRICT_DOMAIN) == 0);
    CHECK(strcmp(counterhal_set_event_name(set, 0), "task-clock") == 0);
    CHECK(counterhal_set_event_domain(set, 0) == COUNTERHAL_DOMAIN_USER);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    for (int i = 0; i < 100; i++)
        (void)getpid();
    touch_pages(NULL);
    CHECK(counterhal_set_stop(set, r, 3) == COUNTERHAL_OK);
    printf("counted task-clock %llu, page-faults %llu, %s %llu in user space\n",
           (unsigned long long)r[0].value, (unsigned long long)r[1].value, tracepoint,
           (unsigned long long)r[2].value);
    CHECK(r[0].value > 0 && r[1].value >= PAGES && r[2].value == 100);
    const char *note = counterhal_set_note(set);
    CHECK(note != NULL);
    if (note != NULL) {
        printf("note: %s\n", note);
        CHECK(strstr(note, "kernel.perf_event_paranoid is 2") != NULL);
        CHECK(strstr(note, names) != NULL);
    }
    /* A command counted with the set's events counts them as the set does (user space). */
    const char *const command[] = {"/bin/true", NULL};
    int status = -1;
    CHECK(counterhal_set_run(set, command, COUNTERHAL_FOLLOW_CHILDREN, r, 3, &status) ==
          COUNTERHAL_OK);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && r[0].value > 0);
    /* The kernel asked for: refused, the set unchanged. */
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, COUNTERHAL_DOMAIN_KERNEL) ==
          COUNTERHAL_EPERM);
    CHECK(strstr(counterhal_last_error(), "perf_event_paranoid") != NULL);
    printf("kernel refused: %s\n", counterhal_last_error());
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_DOMAIN) == 0);
    /* User space asked for: counted as asked, under the names given, without a note. */
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, COUNTERHAL_DOMAIN_USER) ==
          COUNTERHAL_OK);
    CHECK(strcmp(counterhal_set_event_name(set, 0), "task-clock") == 0);
    CHECK(counterhal_set_event_domain(set, 0) == COUNTERHAL_DOMAIN_USER);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    for (int i = 0; i < 100; i++)
        (void)getpid();
    CHECK(counterhal_set_stop(set, r, 3) == COUNTERHAL_OK);
    CHECK(r[2].value == 100);
    CHECK(counterhal_set_note(set) == NULL);
    /* Back to the default: the fallback again, under the same names. */
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, 0) == COUNTERHAL_OK);
    CHECK(strcmp(counterhal_set_event_name(set, 0), "task-clock") == 0);
    CHECK(counterhal_set_event_domain(set, 0) == COUNTERHAL_DOMAIN_USER);
    counterhal_set_destroy(set);

    /* An empty set asked for the kernel: the add is refused with the hint. */
    set = new_set(ch);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_DOMAIN, COUNTERHAL_DOMAIN_KERNEL) ==
          COUNTERHAL_OK);
    CHECK(counterhal_set_add(set, "task-clock") == COUNTERHAL_EPERM);
    CHECK(strstr(counterhal_last_error(), "perf_event_paranoid") != NULL);
    CHECK(counterhal_set_size(set) == 0);
    counterhal_set_destroy(set);

    /* An empty strict set: an event the kernel is refused for is refused, not counted in user
     * space only. */
    set = new_set(ch);
    CHECK(counterhal_set_option(set, COUNTERHAL_OPTION_STRICT_DOMAIN, 1) == COUNTERHAL_OK);
    CHECK(counterhal_set_get_option(set, COUNTERHAL_OPTION_STRICT_DOMAIN) == 1);
    CHECK(counterhal_set_add(set, "context-switches") == COUNTERHAL_EPERM);
    CHECK(counterhal_set_size(set) == 0);
    CHECK(counterhal_set_add(set, "context-switches:u") == 0);
    CHECK(counterhal_set_event_domain(set, 0) == COUNTERHAL_DOMAIN_USER);
    counterhal_set_destroy(set);
}

/* A command counted from its exec: execve calls of a shell running two programs, in the shell
 * and what it creates (2) and in the shell alone (0), printed for the test to compare with
 * perf; the exit status passed back; misuse refused. Exit 3 without the tracepoint. */
static void command(counterhal_t *ch) {
    counterhal_set_t *set;
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK);
    if (counterhal_set_add(set, "syscalls:sys_enter_execve") < 0) {
        printf("the tracepoint syscalls:sys_enter_execve does not open here: %s\n",
               counterhal_last_error());
        exit(3);
    }
    CHECK(counterhal_set_add(set, "task-clock") == 1);
    const char *const two[] = {"/bin/sh", "-c", "/bin/true; /bin/true", NULL};
    counterhal_reading_t r[2];
    int status = -1;
    CHECK(counterhal_set_run(set, two, COUNTERHAL_FOLLOW_CHILDREN, r, 2, &status) ==
          COUNTERHAL_OK);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(r[1].value > 0 && r[1].time_enabled > 0);
    printf("execve children %llu\n", (unsigned long long)r[0].value);
    CHECK(counterhal_set_run(set, two, COUNTERHAL_FOLLOW_COMMAND_ONLY, r, 2, NULL) ==
          COUNTERHAL_OK);
    printf("execve alone %llu\n", (unsigned long long)r[0].value);
    const char *const three[] = {"sh", "-c", "exit 3", NULL};
    CHECK(counterhal_set_run(set, three, COUNTERHAL_FOLLOW_CHILDREN, r, 2, &status) ==
          COUNTERHAL_OK);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    /* Misuse: no NULL-free argv, an unknown follow, a short buffer, a missing program, a
     * running set. None runs anything. */
    CHECK(counterhal_set_run(set, NULL, 0, r, 2, NULL) == COUNTERHAL_EINVAL);
    const char *const none[] = {NULL};
    CHECK(counterhal_set_run(set, none, 0, r, 2, NULL) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_run(set, two, 7, r, 2, NULL) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "COUNTERHAL_FOLLOW_CHILDREN") != NULL);
    CHECK(counterhal_set_run(set, two, 0, r, 1, NULL) == COUNTERHAL_EINVAL);
    const char *const missing[] = {"/nonexistent/program", NULL};
    int rc = counterhal_set_run(set, missing, 0, r, 2, NULL);
    CHECK(rc < 0);
    CHECK(strstr(counterhal_last_error(), "/nonexistent/program") != NULL);
    printf("missing program: %d %s\n", rc, counterhal_last_error());
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_run(set, two, 0, r, 2, NULL) == COUNTERHAL_ESTATE);
    CHECK(counterhal_set_stop(set, r, 2) == COUNTERHAL_OK);
    counterhal_set_destroy(set);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    counterhal_t *ch = NULL;
    if (counterhal_open(&ch, NULL) != COUNTERHAL_OK) {
        fprintf(stderr, "no backend: %s\n", counterhal_last_error());
        return 2;
    }
    if (strcmp(mode, "version") == 0)
        version();
    else if (strcmp(mode, "remove") == 0)
        removal(ch);
    else if (strcmp(mode, "options") == 0)
        options(ch);
    else if (strcmp(mode, "inherit") == 0)
        inherit(ch);
    else if (strcmp(mode, "rows") == 0)
        rows(ch);
    else if (strcmp(mode, "cpus") == 0)
        cpus(ch);
    else if (strcmp(mode, "restart") == 0)
        restart(ch);
    else if (strcmp(mode, "refusals") == 0)
        refusals(ch);
    else if (strcmp(mode, "perf-names") == 0)
        perf_names(ch);
    else if (strcmp(mode, "umasks") == 0)
        umasks(ch);
    else if (strcmp(mode, "command") == 0)
        command(ch);
    else if (strcmp(mode, "open-with") == 0)
        open_with();
    else if (strcmp(mode, "domain") == 0)
        domain(ch);
    else if (strcmp(mode, "cgroup") == 0 && argc > 3)
        cgroup(ch, argv[2], argv[3]);
    else if (strcmp(mode, "unprivileged") == 0 && argc > 2)
        unprivileged(ch, argv[2]);
    else if (strcmp(mode, "report") == 0 || strcmp(mode, "report-more") == 0)
        report(strcmp(mode, "report-more") == 0);
    else {
        fprintf(stderr, "unknown mode `%s`\n", mode);
        return 2;
    }
    counterhal_close(ch);
    if (failed)
        return 1;
    printf("ok %s\n", mode);
    return 0;
}
