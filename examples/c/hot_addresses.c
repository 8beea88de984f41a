/* Where this program spends its time, from C: samples its own two busy loops (one doing three
 * times the work of the other) with cpu-clock:u at 1 kHz for MILLISECONDS of its own CPU time
 * (so that a busy machine gives it as many samples as an idle one), and prints the hottest
 * addresses, each with the loop it lies in.
 *
 *   cc hot_addresses.c $(pkg-config --cflags --libs counterhal) && ./a.out [MILLISECONDS] */
#define _GNU_SOURCE
#include <counterhal.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

__attribute__((noinline)) static uint64_t light(uint64_t n) {
    volatile uint64_t x = n;
    for (uint64_t i = 0; i < n; i++)
        x = (x << 5 | x >> 59) ^ i;
    return x;
}

__attribute__((noinline)) static uint64_t heavy(uint64_t n) {
    volatile uint64_t x = n;
    for (uint64_t i = 0; i < 3 * n; i++)
        x = (x << 7 | x >> 57) ^ i;
    return x;
}

enum { SLOTS = 4096 };
struct histogram {
    uint64_t ip[SLOTS], count[SLOTS];
    size_t used;
    uint64_t samples;
};

static void add(const counterhal_sample_t *s, void *arg) {
    struct histogram *h = arg;
    h->samples++;
    for (size_t i = 0; i < h->used; i++)
        if (h->ip[i] == s->ip) {
            h->count[i]++;
            return;
        }
    if (h->used < SLOTS) {
        h->ip[h->used] = s->ip;
        h->count[h->used++] = 1;
    }
}

/* The CPU time this process has used, in seconds. */
static double cpu_time(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* The loop an address lies in: the nearest function start below it, within 4 KiB. */
static const char *name_of(uint64_t ip) {
    uint64_t a = (uint64_t)(uintptr_t)light, b = (uint64_t)(uintptr_t)heavy;
    uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    const char *lo_name = a < b ? "light" : "heavy", *hi_name = a < b ? "heavy" : "light";
    if (ip >= hi && ip - hi < 4096)
        return hi_name;
    if (ip >= lo && ip - lo < 4096)
        return lo_name;
    return "elsewhere";
}

int main(int argc, char **argv) {
    double seconds = (argc > 1 ? atof(argv[1]) : 400) / 1000;
    counterhal_t *ch;
    counterhal_sampler_t *s;
    if (counterhal_open(&ch, NULL) < 0 ||
        counterhal_sampler_open_frequency(ch, "cpu-clock:u", 1000, COUNTERHAL_SAMPLE_IP, 0, &s) <
            0) {
        fprintf(stderr, "cannot sample: %s\n", counterhal_last_error());
        return 1;
    }
    counterhal_sampler_start(s);
    for (double end = cpu_time() + seconds; cpu_time() < end;) {
        light(200000);
        heavy(200000);
    }
    counterhal_sampler_stop(s);
    static struct histogram h;
    counterhal_sampler_read(s, add, &h);
    uint64_t lost = 0;
    counterhal_sampler_lost(s, &lost);
    printf("%llu samples (%llu lost)\n", (unsigned long long)h.samples, (unsigned long long)lost);
    uint64_t in_light = 0, in_heavy = 0;
    for (size_t i = 0; i < h.used; i++) {
        const char *name = name_of(h.ip[i]);
        in_light += name[0] == 'l' ? h.count[i] : 0;
        in_heavy += name[0] == 'h' ? h.count[i] : 0;
    }
    for (int shown = 0; shown < 8; shown++) {
        size_t best = SLOTS;
        for (size_t i = 0; i < h.used; i++)
            if (h.count[i] && (best == SLOTS || h.count[i] > h.count[best]))
                best = i;
        if (best == SLOTS)
            break;
        printf("%6llu  %#018llx  %s\n", (unsigned long long)h.count[best],
               (unsigned long long)h.ip[best], name_of(h.ip[best]));
        h.count[best] = 0;
    }
    printf("light %llu samples, heavy %llu samples\n", (unsigned long long)in_light,
           (unsigned long long)in_heavy);
    counterhal_sampler_destroy(s);
    counterhal_close(ch);
    return 0;
}
