/* counterhal_set_read from a signal handler while the thread it interrupts reads the same
 * set, as a profiler sampling at each SIGPROF does: SIGPROF from a 1 kHz timer (CLOCK_MONOTONIC, a
 * high-resolution timer) for SECONDS (default 2) while
 * the main thread reads in a loop. Every read, the handler's and the main thread's, must
 * succeed and never go below a read that ended before it began (task-clock only grows); a
 * read that never returns is caught by a SIGALRM watchdog, which prints what it saw.
 *
 * Prints "main M handler H failed F backwards B final V first C: MESSAGE" and exits 0 when F
 * and B are 0, 1 otherwise, 4 when the watchdog fired (a deadlock), 3 when task-clock cannot
 * be counted. papi/tests/c/signal_read.c is the same program on PAPI's interface, run on
 * Debian's PAPI 7.0 too. */
#define _GNU_SOURCE
#include <counterhal.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static counterhal_set_t *set;
static char first_message[256];
/* The highest count a read that ended has seen: a read that begins later sees at least it. */
static volatile long long high;
static volatile long main_reads, handler_reads, failed, backwards;
static volatile int first_failure;

static void check(int rc, long long value, long long floor) {
    if (rc != COUNTERHAL_OK) {
        if (failed++ == 0) {
            first_failure = rc;
            counterhal_last_error_copy(first_message, sizeof first_message);
        }
        return;
    }
    if (value < floor)
        backwards++;
    if (value > high)
        high = value;
}

static void on_prof(int sig) {
    (void)sig;
    counterhal_reading_t reading = {0, 0, 0};
    long long floor = high;
    check(counterhal_set_read(set, &reading, 1), (long long)reading.value, floor);
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
    counterhal_t *ch = NULL;
    if (counterhal_open(&ch, NULL) < 0 || counterhal_set_create(ch, &set) < 0)
        return 2;
    if (counterhal_set_add(set, "task-clock") < 0 || counterhal_set_start(set) < 0) {
        printf("task-clock cannot be counted here: %s\n", counterhal_last_error());
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
        counterhal_reading_t reading = {0, 0, 0};
        long long floor = high;
        check(counterhal_set_read(set, &reading, 1), (long long)reading.value, floor);
        main_reads++;
    }
    timer_delete(timer);
    alarm(0);
    counterhal_reading_t final = {0, 0, 0};
    int stopped = counterhal_set_stop(set, &final, 1);
    printf("main %ld handler %ld failed %ld backwards %ld final %llu first %d: %s\n", main_reads,
           handler_reads, failed, backwards, (unsigned long long)final.value, first_failure,
           first_message);
    counterhal_set_destroy(set);
    counterhal_close(ch);
    return stopped == COUNTERHAL_OK && failed == 0 && backwards == 0 &&
                   (long long)final.value >= high
               ? 0
               : 1;
}
