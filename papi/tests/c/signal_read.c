/* PAPI_read from a signal handler while the thread it interrupts reads the same set, as a
 * profiler sampling at each SIGPROF does: SIGPROF from a 1 kHz timer (CLOCK_MONOTONIC, a
 * high-resolution timer) for SECONDS (default 2) while
 * the main thread reads in a loop. Every read, the handler's and the main thread's, must
 * succeed and never go below a read that ended before it began (task-clock only grows); a
 * read that never returns is caught by a SIGALRM watchdog, which prints what it saw.
 *
 * With a second argument `unstarted` the set is never started: PAPI reads it as zeros, and
 * ours under the library's lock, which a handler that interrupted a read holding it is
 * refused (PAPI_EMISC, counted as "refused") instead of waiting for.
 *
 * Prints "main M handler H failed F refused R backwards B final V" and exits 0 when F and B
 * are 0, 1 otherwise, 4 when the watchdog fired (a deadlock), 3 when task-clock cannot be
 * counted.
 * Built against Debian's papi.h and run on Debian's PAPI 7.0 (the oracle) and on ours. */
#include <papi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int set = PAPI_NULL;
/* The highest count a read that ended has seen: a read that begins later sees at least it. */
static volatile long long high;
static volatile long main_reads, handler_reads, failed, refused, backwards;
static volatile int first_failure;

static void check(int rc, long long value, long long floor) {
    if (rc == PAPI_EMISC) {
        refused++;
        return;
    }
    if (rc != PAPI_OK) {
        if (failed++ == 0)
            first_failure = rc;
        return;
    }
    if (value < floor)
        backwards++;
    if (value > high)
        high = value;
}

static void on_prof(int sig) {
    (void)sig;
    long long value = 0, floor = high;
    check(PAPI_read(set, &value), value, floor);
    handler_reads++;
}

static void say(const char *text) {
    ssize_t ignored = write(2, text, strlen(text));
    (void)ignored;
}

/* The watchdog: a read that never returned. Only async-signal-safe calls. */
static void on_alarm(int sig) {
    (void)sig;
    char line[160];
    int n = snprintf(line, sizeof line,
                     "deadlock: no progress (main %ld handler %ld reads so far)\n", main_reads,
                     handler_reads);
    if (n > 0)
        say(line);
    _exit(4);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    int started = !(argc > 2 && strcmp(argv[2], "unstarted") == 0);
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT ||
        PAPI_create_eventset(&set) != PAPI_OK)
        return 2;
    if (PAPI_add_named_event(set, "perf::TASK-CLOCK") != PAPI_OK ||
        (started && PAPI_start(set) != PAPI_OK)) {
        printf("task-clock cannot be counted here\n");
        return 3;
    }
    struct sigaction prof, alarm_action;
    memset(&prof, 0, sizeof prof);
    prof.sa_handler = on_prof;
    prof.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &prof, NULL);
    memset(&alarm_action, 0, sizeof alarm_action);
    alarm_action.sa_handler = on_alarm;
    sigaction(SIGALRM, &alarm_action, NULL);
    alarm((unsigned)seconds + 10);
    timer_t timer;
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGPROF;
    struct itimerspec every = {{0, 1000000}, {0, 1000000}};
    if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0 ||
        timer_settime(timer, 0, &every, NULL) != 0)
        return 2;
    double end = now() + seconds;
    while (now() < end) {
        long long value = 0, floor = high;
        check(PAPI_read(set, &value), value, floor);
        main_reads++;
    }
    timer_delete(timer);
    alarm(0);
    long long final = 0;
    int stopped = started ? PAPI_stop(set, &final) : PAPI_OK;
    printf("main %ld handler %ld failed %ld refused %ld backwards %ld final %lld first %d\n",
           main_reads, handler_reads, failed, refused, backwards, final, first_failure);
    return stopped == PAPI_OK && failed == 0 && backwards == 0 && final >= (started ? high : 0)
               ? 0
               : 1;
}
