/* A measuring harness: runs a function N times with the events named on the command line
 * counted around each run, and prints each event's per-run mean, standard deviation, least
 * and most, beside the sum of the runs and what one set counting all the runs at once read
 * (the two agree where an event counts only what the function does).
 *
 *   scripts/install-capi /usr/local
 *   cc examples/c/harness.c $(pkg-config --cflags --libs counterhal) -lm -o harness
 *   ./harness -r 20 -p 256 -c 1000 page-faults task-clock syscalls:sys_enter_getpid
 *
 *   -r RUNS   runs counted (default 10), after -w WARM uncounted ones (default 1)
 *   -p PAGES  fresh pages the function touches each run (default 256): a page fault each
 *   -c CALLS  getpid() calls it makes each run (default 1000)
 *
 * Each run is counterhal_set_start .. counterhal_set_stop: a start zeroes the counts and
 * their times enabled and running, so each run's counts, and its scaling where the counters
 * were time-shared, are that run's alone. Put your own code in work(). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <counterhal.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

/* What one run does. */
struct work {
    long pages, calls;
};

/* The function measured: touches w->pages fresh pages (each faults once, on first write) and
 * calls getpid() w->calls times. */
static void work(void *arg) {
    const struct work *w = arg;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), size = page * (size_t)w->pages;
    if (size > 0) {
        char *memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory != MAP_FAILED) {
            for (size_t i = 0; i < size; i += page)
                memory[i] = 1;
            munmap(memory, size);
        }
    }
    for (long i = 0; i < w->calls; i++)
        (void)getpid();
}

/* Runs fn(arg) `runs` times, each counted by set on its own: run r's estimate of event e into
 * value[r * n + e], the share of its time enabled that it ran into ran[r * n + e], and the
 * run's wall-clock time into ns[r]. 0, or the failing call's code. */
static int measure(counterhal_set_t *set, int n, void (*fn)(void *), void *arg, int runs,
                   double *value, double *ran, double *ns) {
    counterhal_reading_t *r = calloc((size_t)n, sizeof *r);
    if (r == NULL)
        return COUNTERHAL_EOTHER;
    int rc = COUNTERHAL_OK;
    for (int run = 0; run < runs && rc >= 0; run++) {
        rc = counterhal_set_start(set);
        if (rc < 0)
            break;
        uint64_t t0 = counterhal_real_nsec();
        fn(arg);
        uint64_t t1 = counterhal_real_nsec();
        rc = counterhal_set_stop(set, r, (size_t)n);
        ns[run] = (double)(t1 - t0);
        for (int e = 0; e < n && rc >= 0; e++) {
            value[run * n + e] = (double)counterhal_scaled(&r[e]);
            ran[run * n + e] =
                r[e].time_enabled ? (double)r[e].time_running / (double)r[e].time_enabled : 0;
        }
    }
    free(r);
    return rc;
}

/* The mean, sample standard deviation, least and most of x[0], x[stride], ... (count of
 * them). */
static void stats(const double *x, int count, int stride, double *mean, double *sd, double *lo,
                  double *hi) {
    double sum = 0, squares = 0;
    *lo = *hi = x[0];
    for (int i = 0; i < count; i++) {
        double v = x[i * stride];
        sum += v;
        *lo = v < *lo ? v : *lo;
        *hi = v > *hi ? v : *hi;
    }
    *mean = sum / count;
    for (int i = 0; i < count; i++)
        squares += (x[i * stride] - *mean) * (x[i * stride] - *mean);
    *sd = count > 1 ? sqrt(squares / (count - 1)) : 0;
}

/* A positive number from text, or -1. */
static long number(const char *text) {
    char *end;
    long value = strtol(text, &end, 10);
    return *text != '\0' && *end == '\0' && value >= 0 ? value : -1;
}

int main(int argc, char **argv) {
    long runs = 10, warm = 1;
    struct work w = {256, 1000};
    int first = 1;
    for (; first + 1 < argc && argv[first][0] == '-'; first += 2) {
        long value = number(argv[first + 1]);
        long *slot = strcmp(argv[first], "-r") == 0   ? &runs
                     : strcmp(argv[first], "-w") == 0 ? &warm
                     : strcmp(argv[first], "-p") == 0 ? &w.pages
                     : strcmp(argv[first], "-c") == 0 ? &w.calls
                                                      : NULL;
        if (slot == NULL || value < 0 || value > 1000000) {
            fprintf(stderr, "usage: harness [-r RUNS] [-w WARM] [-p PAGES] [-c CALLS] EVENT...\n");
            return 2;
        }
        *slot = value;
    }
    if (runs < 1 || first >= argc) {
        fprintf(stderr, "usage: harness [-r RUNS] [-w WARM] [-p PAGES] [-c CALLS] EVENT...\n");
        return 2;
    }
    counterhal_t *ch;
    if (counterhal_open(&ch, NULL) < 0) {
        fprintf(stderr, "no counter backend: %s\n", counterhal_last_error());
        return 1;
    }
    /* Two sets of the same events: one counts each run, the other all of them at once. */
    counterhal_set_t *each, *all;
    if (counterhal_set_create(ch, &each) < 0 ||
        counterhal_set_create(ch, &all) < 0) {
        fprintf(stderr, "%s\n", counterhal_last_error());
        return 1;
    }
    for (int i = first; i < argc; i++) {
        if (counterhal_set_add(each, argv[i]) < 0)
            fprintf(stderr, "%s left out: %s\n", argv[i], counterhal_last_error());
        else if (counterhal_set_add(all, argv[i]) < 0) {
            fprintf(stderr, "%s: %s\n", argv[i], counterhal_last_error());
            return 1;
        }
    }
    int n = counterhal_set_size(each);
    if (n <= 0) {
        fprintf(stderr, "nothing to count\n");
        return 1;
    }
    double *value = calloc((size_t)(runs * n), sizeof *value);
    double *ran = calloc((size_t)(runs * n), sizeof *ran);
    double *ns = calloc((size_t)runs, sizeof *ns);
    counterhal_reading_t *total = calloc((size_t)n, sizeof *total);
    if (value == NULL || ran == NULL || ns == NULL || total == NULL)
        return 1;
    for (long i = 0; i < warm; i++)
        work(&w);
    int rc = counterhal_set_start(all);
    if (rc >= 0)
        rc = measure(each, n, work, &w, (int)runs, value, ran, ns);
    if (rc >= 0)
        rc = counterhal_set_stop(all, total, (size_t)n);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", counterhal_strerror(rc), counterhal_last_error());
        return 1;
    }

    printf("%ld runs of work (%ld pages, %ld getpid calls) on %s, after %ld warm-up\n", runs,
           w.pages, w.calls, counterhal_backend(ch), warm);
    printf("%-32s %14s %12s %12s %12s %14s %14s %5s\n", "event", "mean", "stddev", "min", "max",
           "sum of runs", "one set", "ran");
    for (int e = 0; e < n; e++) {
        double mean, sd, lo, hi, sum = 0, least = 1;
        stats(&value[e], (int)runs, n, &mean, &sd, &lo, &hi);
        for (long r = 0; r < runs; r++) {
            sum += value[r * n + e];
            least = ran[r * n + e] < least ? ran[r * n + e] : least; /* time-shared runs */
        }
        printf("%-32s %14.1f %12.1f %12.0f %12.0f %14.0f %14llu %4.0f%%\n",
               counterhal_set_event_name(each, (size_t)e), mean, sd, lo, hi, sum,
               (unsigned long long)counterhal_scaled(&total[e]), least * 100);
    }
    double mean, sd, lo, hi;
    stats(ns, (int)runs, 1, &mean, &sd, &lo, &hi);
    printf("%-32s %14.1f %12.1f %12.0f %12.0f\n", "wall-clock ns", mean, sd, lo, hi);
    if (counterhal_set_note(each) != NULL)
        printf("note: %s\n", counterhal_set_note(each));

    free(value);
    free(ran);
    free(ns);
    free(total);
    counterhal_set_destroy(each);
    counterhal_set_destroy(all);
    counterhal_close(ch);
    return 0;
}
