/* The C API used as a hostile caller would: CPU lists naming CPUs that do not exist, calls
 * from pthread_key destructors and from signal handlers, fork(), huge sizes, and the last
 * error kept across calls. One case per run, named by the first argument; prints
 * "case passed" and exits 0 when every check holds, else names the failed check and exits 1.
 * capi/tests/c.rs runs each case, also under AddressSanitizer, UBSan and valgrind. */
#define _GNU_SOURCE
#include <counterhal.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

enum { PAGES = 512 };

static void touch_pages(int pages) {
    long page = sysconf(_SC_PAGESIZE);
    char *memory = mmap(NULL, (size_t)(pages * page), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) abort();
    for (int i = 0; i < pages; i++) memory[(long)i * page] = 1;
    munmap(memory, (size_t)(pages * page));
}

/* Defect 2: a CPU list is checked against the CPUs that exist, at create. */
static int cpu_list_names_cpus_that_do_not_exist(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    const char *bad[] = {"0-4294967295", "0-100000000", "", "  ", "4294967295", "0,99999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set = NULL;
        CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, bad[i], &set) ==
              COUNTERHAL_EINVAL);
        CHECK(set == NULL);
        if (bad[i][0] != '\0' && bad[i][0] != ' ')
            CHECK(strstr(counterhal_last_error(), "online") != NULL);
        else
            CHECK(strstr(counterhal_last_error(), "empty") != NULL);
    }
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, "0-4294967295", &set) ==
          COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "4294967295") != NULL);
    /* A megabyte of CPUs that do not exist: refused, and the message cut to its room. */
    size_t room = 1 << 20, used = 0;
    char *many = malloc(room);
    CHECK(many != NULL);
    for (unsigned cpu = 100000; used + 16 < room; cpu += 2)
        used += (size_t)snprintf(many + used, room - used, "%u,", cpu);
    many[used - 1] = '\0';
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, many, &set) ==
          COUNTERHAL_EINVAL);
    free(many);
    size_t length = counterhal_last_error_copy(NULL, 0);
    CHECK(length == 2047 && strlen(counterhal_last_error()) == length);
    CHECK(strcmp(counterhal_last_error() + length - 3, "...") == 0);
    CHECK(strncmp(counterhal_last_error(), "CPUs 100000,100002,", 19) == 0);
    CHECK(counterhal_set_create_for(ch, COUNTERHAL_TARGET_CPUS, 0, "0", &set) == COUNTERHAL_OK);
    CHECK(counterhal_set_targets(set) == 1);
    counterhal_set_destroy(set);
    return 0;
}

/* Defect 4: calls from a pthread_key destructor, on a thread that failed before. */
static pthread_key_t key;
static int destructor_add = 1, destructor_begin = 1, destructor_end = 1;
static char destructor_error[256];

static void key_destructor(void *value) {
    (void)value;
    destructor_add = counterhal_set_add(NULL, "page-faults");
    counterhal_last_error_copy(destructor_error, sizeof destructor_error);
    destructor_begin = counterhal_region_begin("destructor");
    destructor_end = counterhal_region_end("destructor");
}

static void *fails_then_ends(void *arg) {
    (void)arg;
    counterhal_set_add(NULL, "page-faults"); /* this thread failed before */
    counterhal_region_begin("thread");        /* and has region counters */
    counterhal_region_end("thread");
    pthread_setspecific(key, (void *)1);
    return NULL;
}

static int calls_from_a_key_destructor_fail_cleanly(void) {
    CHECK(pthread_key_create(&key, key_destructor) == 0);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, fails_then_ends, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(destructor_add == COUNTERHAL_EINVAL);
    CHECK(strstr(destructor_error, "NULL") != NULL);
    /* Regions either work or say why not; never an internal error. */
    CHECK(destructor_begin == COUNTERHAL_OK || destructor_begin == COUNTERHAL_ENOSUPP);
    CHECK(destructor_end == COUNTERHAL_OK || destructor_end == COUNTERHAL_ENOSUPP ||
          destructor_end == COUNTERHAL_EINVAL);
    printf("from a key destructor: add %d, region begin %d, end %d\n", destructor_add,
           destructor_begin, destructor_end);
    return 0;
}

/* Defect 4: a signal handler calling regions while the thread is inside a region call. */
static volatile sig_atomic_t handled, busy, unexpected, unexpected_codes[3];

static void region_in_handler(int signal) {
    (void)signal;
    int saved = errno;
    int begin = counterhal_region_begin("handler");
    int end = begin == COUNTERHAL_OK ? counterhal_region_end("handler") : COUNTERHAL_OK;
    if (begin == COUNTERHAL_ENOSUPP) begin = COUNTERHAL_OK; /* a thread past its destructors */
    int fail = counterhal_set_add(NULL, "x"); /* records a last error inside a handler */
    if (begin == COUNTERHAL_EBUSY || end == COUNTERHAL_EBUSY || fail == COUNTERHAL_EBUSY)
        busy++;
    else if (begin != COUNTERHAL_OK || end != COUNTERHAL_OK || fail != COUNTERHAL_EINVAL) {
        unexpected++;
        unexpected_codes[0] = begin, unexpected_codes[1] = end, unexpected_codes[2] = fail;
    }
    handled++;
    errno = saved;
}

static int signals_during_region_calls_never_deadlock(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = region_in_handler;
    action.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGALRM, &action, NULL) == 0);
    struct itimerval every = {{0, 50}, {0, 50}}; /* every 50 us, from the first call on */
    CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
    int failed = 0;
    for (int i = 0; i < 20000; i++) {
        int begin = counterhal_region_begin("main");
        int end = counterhal_region_end("main");
        if (begin != COUNTERHAL_OK || end != COUNTERHAL_OK) failed++;
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
    printf("%d signals handled, %d refused as busy, %d unexpected, %d main calls failed\n",
           (int)handled, (int)busy, (int)unexpected, failed);
    CHECK(handled > 0);
    CHECK(unexpected == 0);
    CHECK(failed == 0);
    return 0;
}

/* Defect 5: nothing carries over to a child; the child re-initialises. */
static int a_child_after_fork_gets_nothing_from_its_parent(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    counterhal_reading_t r[2];
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_region_begin("parent") == COUNTERHAL_OK);
    touch_pages(PAGES);
    CHECK(counterhal_region_end("parent") == COUNTERHAL_OK);
    CHECK(counterhal_region_begin("open-at-fork") == COUNTERHAL_OK);
    fflush(stdout);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        /* The parent's set, handle and open region are refused, with why. */
        CHECK(counterhal_set_read(set, r, 2) == COUNTERHAL_ESTATE);
        CHECK(strstr(counterhal_last_error(), "fork") != NULL);
        CHECK(counterhal_set_stop(set, r, 2) == COUNTERHAL_ESTATE);
        CHECK(counterhal_set_reset(set) == COUNTERHAL_ESTATE);
        CHECK(counterhal_set_add(set, "task-clock") == COUNTERHAL_ESTATE);
        CHECK(counterhal_set_start(set) == COUNTERHAL_ESTATE);
        counterhal_set_t *other = NULL;
        CHECK(counterhal_set_create(ch, &other) == COUNTERHAL_ESTATE);
        CHECK(counterhal_region_end("open-at-fork") == COUNTERHAL_EINVAL);
        counterhal_set_destroy(set);
        counterhal_close(ch);
        /* A new handle counts the child. */
        counterhal_t *mine = NULL;
        CHECK(counterhal_open(&mine, NULL) == COUNTERHAL_OK);
        CHECK(counterhal_set_create(mine, &other) == COUNTERHAL_OK);
        CHECK(counterhal_set_add(other, "page-faults") == 0);
        CHECK(counterhal_set_start(other) == COUNTERHAL_OK);
        touch_pages(PAGES);
        CHECK(counterhal_set_stop(other, r, 1) == COUNTERHAL_OK);
        CHECK(r[0].value >= PAGES);
        counterhal_set_destroy(other);
        counterhal_close(mine);
        /* Regions re-initialise in the child and count its own thread. */
        CHECK(counterhal_region_begin("child") == COUNTERHAL_OK);
        touch_pages(PAGES);
        CHECK(counterhal_region_end("child") == COUNTERHAL_OK);
        printf("child %d passed\n", (int)getpid());
        fflush(stdout);
        exit(0); /* the at-exit report: the child's own */
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The parent's set still counts: the child neither stopped nor reset it. */
    CHECK(counterhal_set_read(set, r, 1) == COUNTERHAL_OK);
    uint64_t before = r[0].value;
    CHECK(before >= PAGES);
    touch_pages(PAGES);
    CHECK(counterhal_set_stop(set, r, 1) == COUNTERHAL_OK);
    CHECK(r[0].value >= before + PAGES);
    counterhal_set_destroy(set);
    CHECK(counterhal_region_end("open-at-fork") == COUNTERHAL_OK);
    printf("parent %d passed\n", (int)getpid());
    return 0;
}

/* Defect 10: a size no buffer can hold is refused before any slice is built. */
static int sizes_no_buffer_can_hold_are_refused(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    counterhal_reading_t r[2];
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    CHECK(counterhal_set_read(set, r, SIZE_MAX) == COUNTERHAL_EINVAL);
    CHECK(strstr(counterhal_last_error(), "hold") != NULL);
    CHECK(counterhal_set_read(set, r, SIZE_MAX / 2) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_read_each(set, r, SIZE_MAX) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_stop(set, r, SIZE_MAX) == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_stop(set, r, 1) == COUNTERHAL_OK); /* still running until here */
    counterhal_set_destroy(set);
    counterhal_event_info_t info[2];
    CHECK(counterhal_list(ch, NULL, info, SIZE_MAX) == COUNTERHAL_EINVAL);
    char encoding[16];
    CHECK(counterhal_query(ch, "page-faults", encoding, SIZE_MAX) == COUNTERHAL_EINVAL);
    return 0;
}

/* Defect 12: the last error can be kept across calls. */
static int the_last_error_survives_the_next_failure(counterhal_t *ch) {
    (void)ch;
    CHECK(counterhal_last_error_copy(NULL, 0) == strlen(counterhal_last_error()));
    CHECK(counterhal_set_add(NULL, "page-faults") == COUNTERHAL_EINVAL);
    const char *first = counterhal_last_error();
    size_t length = strlen(first);
    CHECK(length > 0);
    CHECK(counterhal_last_error_copy(NULL, 0) == length);
    char saved[512], tiny[5];
    CHECK(counterhal_last_error_copy(saved, sizeof saved) == length);
    CHECK(strcmp(saved, first) == 0);
    CHECK(counterhal_last_error_copy(tiny, sizeof tiny) == length);
    CHECK(strlen(tiny) == 4 && strncmp(tiny, saved, 4) == 0);
    /* The natural pattern: keep the pointer, fail again, read it (no use after free). */
    CHECK(counterhal_open(&ch, "nonesuch") == COUNTERHAL_EINVAL);
    CHECK(strlen(first) > 0);
    CHECK(strcmp(saved, first) != 0); /* the pointer now reads the newer error */
    CHECK(strstr(saved, "NULL") != NULL);
    return 0;
}

/* The hostile pass: threads creating, failing, counting and using regions at once while
 * signals land in them and each of them forks. The handler calls counterhal, which the
 * header allows only where the signal cannot interrupt the C library's allocator: SIGALRM is
 * blocked around fork(), until the thread's first call (which allocates its thread-local
 * storage) and from its last (its exit frees memory inside the C library). */
static void alarms(int how) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    pthread_sigmask(how, &set, NULL);
}

static void *worker(void *arg) {
    counterhal_t *ch = arg;
    counterhal_last_error_copy(NULL, 0); /* this thread's storage, then the alarms */
    alarms(SIG_UNBLOCK);
    for (int i = 0; i < 50; i++) {
        counterhal_set_t *set = NULL;
        counterhal_reading_t r[2];
        if (counterhal_set_create(ch, &set) != COUNTERHAL_OK) return (void *)1;
        counterhal_set_add(set, "page-faults");
        counterhal_set_add(set, "no-such-event");
        char copy[64];
        counterhal_last_error_copy(copy, sizeof copy);
        if (counterhal_set_start(set) != COUNTERHAL_OK) return (void *)2;
        counterhal_region_begin("worker");
        touch_pages(8);
        counterhal_region_end("worker");
        if (counterhal_set_stop(set, r, 2) != COUNTERHAL_OK) return (void *)3;
        counterhal_set_destroy(set);
        if (i == 25) {
            alarms(SIG_BLOCK);
            pid_t child = fork();
            if (child == 0) {
                /* POSIX allows a child of a threaded process only async-signal-safe calls;
                 * counterhal allocates, which glibc's allocator survives and AddressSanitizer's
                 * may not (another thread may have held its lock at the fork). */
                if (getenv("HOSTILE_FORK_CHILD_IDLE") != NULL) _exit(0);
                int code = counterhal_region_begin("forked") == COUNTERHAL_OK &&
                                   counterhal_region_end("forked") == COUNTERHAL_OK
                               ? 0
                               : 1;
                _exit(code);
            }
            alarms(SIG_UNBLOCK);
            if (child < 0) return (void *)4;
            int status = 0;
            while (waitpid(child, &status, 0) < 0)
                if (errno != EINTR) return (void *)5;
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return (void *)6;
        }
    }
    alarms(SIG_BLOCK); /* the thread's exit frees memory inside the C library */
    return NULL;
}

static int threads_signals_and_fork_at_once(counterhal_t *ch) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = region_in_handler;
    action.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGALRM, &action, NULL) == 0);
    alarms(SIG_BLOCK); /* the alarms land in the workers once they unblock them */
    struct itimerval every = {{0, 200}, {0, 200}};
    CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&threads[i], NULL, worker, ch) == 0);
    for (int i = 0; i < 4; i++) {
        void *result = NULL;
        CHECK(pthread_join(threads[i], &result) == 0);
        if (result != NULL) printf("worker %d failed at step %d\n", i, (int)(uintptr_t)result);
        CHECK(result == NULL);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    CHECK(setitimer(ITIMER_REAL, &off, NULL) == 0);
    if (unexpected)
        printf("unexpected in the handler: begin %d, end %d, add %d\n", (int)unexpected_codes[0],
               (int)unexpected_codes[1], (int)unexpected_codes[2]);
    CHECK(unexpected == 0);
    return 0;
}

/* A thread cancelled while it is inside counterhal: open, close and read are cancellation
 * points, and a cancellation acted on inside one would unwind through frames that cannot
 * unwind into C ("FATAL: exception not rethrown", the whole process aborted). The library
 * holds a cancellation off while it runs, so the thread ends at its own next cancellation
 * point, between calls. */
static void *churn_sets(void *arg) {
    counterhal_t *ch = arg;
    for (;;) {
        counterhal_set_t *set = NULL;
        if (counterhal_set_create(ch, &set) != COUNTERHAL_OK) continue;
        counterhal_set_add(set, "page-faults");
        counterhal_set_add(set, "task-clock");
        counterhal_reading_t r[2];
        if (counterhal_set_start(set) == COUNTERHAL_OK) {
            counterhal_set_read(set, r, 2);
            counterhal_set_stop(set, r, 2);
        }
        counterhal_set_destroy(set);
        pthread_testcancel();
    }
    return NULL;
}

static int a_thread_cancelled_inside_a_call_ends_cleanly(counterhal_t *ch) {
    for (int round = 0; round < 50; round++) {
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, churn_sets, ch) == 0);
        usleep(200 + (unsigned)(round * 97 % 2000));
        CHECK(pthread_cancel(thread) == 0);
        void *result = NULL;
        CHECK(pthread_join(thread, &result) == 0);
        CHECK(result == PTHREAD_CANCELED);
    }
    /* The library still works on this thread. */
    counterhal_set_t *set = NULL;
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(set, "page-faults") == 0);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    counterhal_reading_t r[1];
    CHECK(counterhal_set_stop(set, r, 1) == COUNTERHAL_OK);
    counterhal_set_destroy(set);
    return 0;
}

/* Sample rates the kernel refuses with a bare EINVAL (a period with bit 63 set, a frequency
 * above kernel.perf_event_max_sample_rate) are named before the open, as perf record
 * --strict-freq names the frequency limit; before, both read as a bad event code. */
static int sample_rates_the_kernel_refuses_are_named(counterhal_t *ch) {
    counterhal_sampler_t *s = NULL;
    const uint64_t periods[] = {UINT64_MAX, (uint64_t)1 << 63};
    for (size_t i = 0; i < sizeof periods / sizeof periods[0]; i++) {
        CHECK(counterhal_sampler_open(ch, "page-faults", periods[i], 0, 1, &s) ==
              COUNTERHAL_EINVAL);
        CHECK(s == NULL);
        CHECK(strstr(counterhal_last_error(), "sample period") != NULL);
        CHECK(strstr(counterhal_last_error(), "9223372036854775807") != NULL);
    }
    CHECK(counterhal_sampler_open(ch, "page-faults", INT64_MAX, 0, 1, &s) == COUNTERHAL_OK);
    counterhal_sampler_destroy(s);
    s = NULL;
    unsigned long long max = 0;
    FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "r");
    CHECK(f != NULL && fscanf(f, "%llu", &max) == 1);
    fclose(f);
    const uint64_t rates[] = {UINT64_MAX, (uint64_t)max + 1};
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        CHECK(counterhal_sampler_open_frequency(ch, "page-faults", rates[i], 0, 1, &s) ==
              COUNTERHAL_EINVAL);
        CHECK(s == NULL);
        CHECK(strstr(counterhal_last_error(), "perf_event_max_sample_rate") != NULL);
    }
    CHECK(counterhal_sampler_open_frequency(ch, "page-faults", max, 0, 1, &s) == COUNTERHAL_OK);
    counterhal_sampler_destroy(s);
    return 0;
}

static void count_sample(const counterhal_sample_t *sample, void *arg) {
    (void)sample;
    ++*(int *)arg;
}

/* Run as any user (capi/tests/c.rs runs it as nobody where it can): events with no modifier
 * count and sample as perf stat and perf record do, the kernel left out where the system
 * forbids counting it, under the names given; before, an unprivileged caller at
 * perf_event_paranoid 2 got COUNTERHAL_EPERM for "task-clock" where perf counts task-clock:u. */
static int events_without_modifiers_count_as_perf_does(counterhal_t *ch) {
    counterhal_set_t *set = NULL;
    CHECK(counterhal_set_create(ch, &set) == COUNTERHAL_OK);
    CHECK(counterhal_set_add(set, "task-clock") == 0);
    CHECK(counterhal_set_add(set, "page-faults") == 1);
    const char *name = counterhal_set_event_name(set, 0);
    CHECK(strcmp(name, "task-clock") == 0);
    /* The same event again, by its plain name, is refused. */
    CHECK(counterhal_set_add(set, "task-clock") == COUNTERHAL_EINVAL);
    CHECK(counterhal_set_start(set) == COUNTERHAL_OK);
    touch_pages(PAGES);
    counterhal_reading_t r[2];
    CHECK(counterhal_set_stop(set, r, 2) == COUNTERHAL_OK);
    CHECK(r[0].value > 0 && r[1].value >= PAGES);
    printf("counted %s and %s in domain %d\n", name, counterhal_set_event_name(set, 1),
           counterhal_set_event_domain(set, 0));
    counterhal_set_destroy(set);
    counterhal_sampler_t *s = NULL;
    CHECK(counterhal_sampler_open(ch, "page-faults", 1, COUNTERHAL_SAMPLE_IP, 64, &s) ==
          COUNTERHAL_OK);
    CHECK(counterhal_sampler_start(s) == COUNTERHAL_OK);
    touch_pages(PAGES);
    CHECK(counterhal_sampler_stop(s) == COUNTERHAL_OK);
    int samples = 0;
    CHECK(counterhal_sampler_read(s, count_sample, &samples) >= PAGES);
    CHECK(samples >= PAGES);
    counterhal_sampler_destroy(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: hostile CASE\n");
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "key-destructor") == 0) {
        if (calls_from_a_key_destructor_fail_cleanly() != 0) return 1;
        printf("case passed\n");
        return 0;
    }
    if (strcmp(name, "signals") == 0) {
        /* The first region call (which initialises) is interrupted too. */
        if (signals_during_region_calls_never_deadlock() != 0) return 1;
        printf("case passed\n");
        return 0;
    }
    counterhal_t *ch = NULL;
    CHECK(counterhal_open(&ch, NULL) == COUNTERHAL_OK);
    int failed;
    if (strcmp(name, "cpu-list") == 0)
        failed = cpu_list_names_cpus_that_do_not_exist(ch);
    else if (strcmp(name, "fork") == 0)
        failed = a_child_after_fork_gets_nothing_from_its_parent(ch);
    else if (strcmp(name, "huge-n") == 0)
        failed = sizes_no_buffer_can_hold_are_refused(ch);
    else if (strcmp(name, "last-error") == 0)
        failed = the_last_error_survives_the_next_failure(ch);
    else if (strcmp(name, "threads") == 0)
        failed = threads_signals_and_fork_at_once(ch);
    else if (strcmp(name, "sample-rates") == 0)
        failed = sample_rates_the_kernel_refuses_are_named(ch);
    else if (strcmp(name, "unprivileged") == 0)
        failed = events_without_modifiers_count_as_perf_does(ch);
    else if (strcmp(name, "cancel") == 0)
        failed = a_thread_cancelled_inside_a_call_ends_cleanly(ch);
    else {
        fprintf(stderr, "unknown case %s\n", name);
        return 2;
    }
    counterhal_close(ch);
    if (failed) return 1;
    printf("case passed\n");
    return 0;
}
