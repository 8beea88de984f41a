/* Event sets as C tools build and run them.
 *
 *   sets adds EVENT...   adds each event to one set of this thread, starts and stops it, and
 *                        prints "added N" (run under strace to count perf_event_open calls).
 *   sets churn ROUNDS    forks a process that spawns and joins short-lived threads without
 *                        end, then counts it ROUNDS times (create_for PROCESS, add, start,
 *                        read three times, stop) and prints "errors E of R rounds"; a total
 *                        that goes down while the set counts is an error too.
 *   sets limit TRIES     adds software events to one set until an add is refused, then TRIES
 *                        more, and prints "limit L refused R of TRIES reads N": the events the
 *                        set took, the further adds refused with COUNTERHAL_ECNTR, and the
 *                        read(2) calls those adds made (the kernel's count, /proc/self/io). */
#define _GNU_SOURCE
#include <counterhal.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int adds(counterhal_t *ch, int count, char **names) {
    counterhal_set_t *set = NULL;
    if (counterhal_set_create(ch, &set) != COUNTERHAL_OK)
        return 1;
    int added = 0;
    for (int i = 0; i < count; i++) {
        if (counterhal_set_add(set, names[i]) >= 0)
            added++;
        else
            fprintf(stderr, "%s: %s\n", names[i], counterhal_last_error());
    }
    counterhal_reading_t *out = calloc((size_t)count + 1, sizeof *out);
    int ok = out != NULL && counterhal_set_start(set) == COUNTERHAL_OK &&
             counterhal_set_stop(set, out, (size_t)count + 1) == COUNTERHAL_OK;
    free(out);
    counterhal_set_destroy(set);
    printf("added %d\n", added);
    return ok ? 0 : 1;
}

/* The read(2) calls this process made so far (`syscr` of /proc/self/io), or -1. */
static long long reads_so_far(void) {
    FILE *io = fopen("/proc/self/io", "r");
    long long count = -1;
    char line[128];
    while (io != NULL && fgets(line, sizeof line, io) != NULL)
        if (sscanf(line, "syscr: %lld", &count) == 1)
            break;
    if (io != NULL)
        fclose(io);
    return count;
}

/* Distinct software events: task-clock with config1 values the event ignores. */
static int add_software(counterhal_set_t *set, int i) {
    char name[64];
    snprintf(name, sizeof name, "software/config=1,config1=%d/", i);
    return counterhal_set_add(set, name);
}

static int past_limit(counterhal_t *ch, int tries) {
    counterhal_set_t *set = NULL;
    if (counterhal_set_create(ch, &set) != COUNTERHAL_OK)
        return 1;
    int taken = 0;
    while (taken < 100000 && add_software(set, taken) >= 0)
        taken++;
    fprintf(stderr, "add %d: %s\n", taken, counterhal_last_error());
    /* The same reading of /proc/self/io on both sides: its own reads cancel out. */
    long long before = reads_so_far();
    int refused = 0;
    for (int i = 1; i <= tries; i++)
        refused += add_software(set, taken + i) == COUNTERHAL_ECNTR;
    long long after = reads_so_far();
    printf("limit %d refused %d of %d reads %lld\n", taken, refused, tries, after - before);
    counterhal_set_destroy(set);
    return before < 0 ? 1 : 0;
}

static void *short_lived(void *arg) {
    volatile char page[8192];
    memset((char *)page, 1, sizeof page);
    return arg;
}

/* Spawns and joins four threads at a time, forever. */
static void churn_threads(void) {
    for (;;) {
        pthread_t threads[4];
        for (int i = 0; i < 4; i++)
            if (pthread_create(&threads[i], NULL, short_lived, NULL) != 0)
                _exit(2);
        for (int i = 0; i < 4; i++)
            pthread_join(threads[i], NULL);
    }
}

static const char *const EVENTS[] = {"page-faults", "task-clock", "context-switches"};
enum { NEVENTS = 3 };

/* One round on process pid; 0, or the first failing call's code (a total that went down: 1). */
static int round_on(counterhal_t *ch, pid_t pid) {
    counterhal_set_t *set = NULL;
    int rc = counterhal_set_create_for(ch, COUNTERHAL_TARGET_PROCESS, (uint32_t)pid, NULL, &set);
    if (rc != COUNTERHAL_OK)
        return rc;
    for (int i = 0; i < NEVENTS && rc >= 0; i++)
        rc = counterhal_set_add(set, EVENTS[i]);
    if (rc >= 0)
        rc = counterhal_set_start(set);
    counterhal_reading_t out[NEVENTS];
    uint64_t last[NEVENTS] = {0};
    for (int r = 0; r < 3 && rc == COUNTERHAL_OK; r++) {
        rc = counterhal_set_read(set, out, NEVENTS);
        for (int i = 0; i < NEVENTS && rc == COUNTERHAL_OK; i++) {
            if (out[i].value < last[i]) {
                fprintf(stderr, "%s went down from %llu to %llu\n", EVENTS[i],
                        (unsigned long long)last[i], (unsigned long long)out[i].value);
                rc = 1;
            }
            last[i] = out[i].value;
        }
    }
    if (rc == COUNTERHAL_OK)
        rc = counterhal_set_stop(set, out, NEVENTS);
    if (rc < 0)
        fprintf(stderr, "round failed (%d): %s\n", rc, counterhal_last_error());
    counterhal_set_destroy(set);
    return rc < 0 ? rc : (rc > 0 ? 1 : 0);
}

static int churn(counterhal_t *ch, int rounds) {
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        churn_threads();
    int errors = 0;
    for (int r = 0; r < rounds; r++)
        errors += round_on(ch, pid) != 0;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    printf("errors %d of %d rounds\n", errors, rounds);
    return 0;
}

int main(int argc, char **argv) {
    counterhal_t *ch = NULL;
    if (argc < 3 || counterhal_open(&ch, NULL) != COUNTERHAL_OK) {
        fprintf(stderr, "usage: sets adds EVENT... | churn ROUNDS | limit TRIES (%s)\n",
                counterhal_last_error());
        return 2;
    }
    int rc = strcmp(argv[1], "adds") == 0    ? adds(ch, argc - 2, argv + 2)
             : strcmp(argv[1], "limit") == 0 ? past_limit(ch, atoi(argv[2]))
                                             : churn(ch, atoi(argv[2]));
    counterhal_close(ch);
    return rc;
}
