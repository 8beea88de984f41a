/* Samplers from C, against what the kernel must record. Each mode prints "ok MODE" when
 * every check held; exit 3 with the reason when the mode cannot run here.
 *
 *   sampling getpid     1,000 getpid calls sampled with period 1: 1,000 samples, each with
 *                       this thread's ids and an address (the getpid tracepoint; root)
 *   sampling faults     256 fresh pages touched: one page-fault sample at each page
 *   sampling overflow   period 10 over 1,000 getpid calls: 100 overflow callbacks; refreshed
 *                       for 5, the sampler stops itself at the fifth (50 counted) (root)
 *   sampling lost       2,000 faults into a one-page ring: samples kept + lost = 2,000 */
#define _GNU_SOURCE
#include <counterhal.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

enum { PAGE = 4096 };

struct tally {
    unsigned long samples, wrong;
    uint32_t pid, tid;
    uintptr_t low, high;
    unsigned char *seen;
};

static void on_getpid(const counterhal_sample_t *s, void *arg) {
    struct tally *t = arg;
    t->samples++;
    if (!(s->fields & COUNTERHAL_SAMPLE_IP) || s->ip == 0 || s->pid != t->pid || s->tid != t->tid)
        t->wrong++;
}

static void on_fault(const counterhal_sample_t *s, void *arg) {
    struct tally *t = arg;
    t->samples++;
    if ((s->fields & COUNTERHAL_SAMPLE_ADDR) && s->addr >= t->low && s->addr < t->high)
        t->seen[(s->addr - t->low) / PAGE] = 1;
}

static counterhal_sampler_t *open_or_skip(counterhal_t *ch, const char *event, uint64_t period,
                                          uint32_t fields, size_t pages) {
    counterhal_sampler_t *s = NULL;
    int rc = counterhal_sampler_open(ch, event, period, fields, pages, &s);
    if (rc == COUNTERHAL_EEVENT || rc == COUNTERHAL_EPERM) {
        printf("skip: %s cannot be sampled here: %s\n", event, counterhal_last_error());
        exit(3);
    }
    CHECK(rc == COUNTERHAL_OK);
    if (s == NULL)
        exit(1);
    return s;
}

static void getpid_samples(counterhal_t *ch) {
    counterhal_sampler_t *s = open_or_skip(ch, "syscalls:sys_enter_getpid", 1,
                                           COUNTERHAL_SAMPLE_IP | COUNTERHAL_SAMPLE_TID, 0);
    struct tally t = {0};
    t.pid = (uint32_t)getpid();
    t.tid = (uint32_t)gettid();
    CHECK(counterhal_sampler_start(s) == COUNTERHAL_OK);
    for (int i = 0; i < 1000; i++)
        (void)syscall(SYS_getpid);
    CHECK(counterhal_sampler_stop(s) == COUNTERHAL_OK);
    CHECK(counterhal_sampler_read(s, on_getpid, &t) == 1000);
    uint64_t count = 0;
    CHECK(counterhal_sampler_count(s, &count) == COUNTERHAL_OK && count == 1000);
    printf("getpid: %lu samples, %lu wrong\n", t.samples, t.wrong);
    CHECK(t.samples == 1000 && t.wrong == 0);
    CHECK(counterhal_sampler_read(s, on_getpid, &t) == 0);
    counterhal_sampler_destroy(s);
}

static unsigned char *fresh(size_t pages) {
    void *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        exit(1);
    /* One fault a page: no transparent huge page (a 2 MiB fault where the policy is always). */
    madvise(p, pages * PAGE, MADV_NOHUGEPAGE);
    return p;
}

static void fault_samples(counterhal_t *ch) {
    enum { PAGES = 256 };
    counterhal_sampler_t *s =
        open_or_skip(ch, "page-faults", 1, COUNTERHAL_SAMPLE_IP | COUNTERHAL_SAMPLE_ADDR, 0);
    unsigned char *memory = fresh(PAGES);
    unsigned char seen[PAGES] = {0};
    struct tally t = {0};
    t.low = (uintptr_t)memory;
    t.high = t.low + PAGES * PAGE;
    t.seen = seen;
    CHECK(counterhal_sampler_start(s) == COUNTERHAL_OK);
    for (int k = 0; k < PAGES; k++)
        ((volatile unsigned char *)memory)[k * PAGE] = 1;
    CHECK(counterhal_sampler_stop(s) == COUNTERHAL_OK);
    CHECK(counterhal_sampler_read(s, on_fault, &t) >= PAGES);
    int pages = 0;
    for (int k = 0; k < PAGES; k++)
        pages += seen[k];
    printf("faults: %lu samples, %d of %d pages seen at their address\n", t.samples, pages, PAGES);
    CHECK(pages == PAGES);
    munmap(memory, PAGES * PAGE);
    counterhal_sampler_destroy(s);
}

static volatile sig_atomic_t overflows;

static void on_overflow(uint64_t address, void *arg) {
    if (address != 0 && arg == (void *)&overflows)
        overflows++;
}

static void overflow_callbacks(counterhal_t *ch) {
    counterhal_sampler_t *s =
        open_or_skip(ch, "syscalls:sys_enter_getpid", 10, COUNTERHAL_SAMPLE_IP, 0);
    CHECK(counterhal_sampler_overflow(s, on_overflow, (void *)&overflows) == COUNTERHAL_OK);
    CHECK(counterhal_sampler_overflow(s, on_overflow, NULL) == COUNTERHAL_ESTATE);
    CHECK(counterhal_sampler_start(s) == COUNTERHAL_OK);
    for (int i = 0; i < 1000; i++)
        (void)syscall(SYS_getpid);
    CHECK(counterhal_sampler_stop(s) == COUNTERHAL_OK);
    printf("overflow: %d callbacks\n", (int)overflows);
    CHECK(overflows == 100);
    counterhal_sampler_destroy(s);

    s = open_or_skip(ch, "syscalls:sys_enter_getpid", 10, COUNTERHAL_SAMPLE_IP, 0);
    CHECK(counterhal_sampler_overflow(s, on_overflow, (void *)&overflows) == COUNTERHAL_OK);
    overflows = 0;
    CHECK(counterhal_sampler_refresh(s, 0) == COUNTERHAL_EINVAL);
    CHECK(counterhal_sampler_refresh(s, 5) == COUNTERHAL_OK);
    for (int i = 0; i < 1000; i++)
        (void)syscall(SYS_getpid);
    uint64_t count = 0;
    CHECK(counterhal_sampler_count(s, &count) == COUNTERHAL_OK);
    printf("refresh: %d callbacks, %llu counted\n", (int)overflows, (unsigned long long)count);
    CHECK(overflows == 5 && count == 50);
    counterhal_sampler_destroy(s);
}

static void lost_samples(counterhal_t *ch) {
    enum { PAGES = 2000 };
    counterhal_sampler_t *s =
        open_or_skip(ch, "page-faults", 1, COUNTERHAL_SAMPLE_IP | COUNTERHAL_SAMPLE_ADDR, 1);
    unsigned char *memory = fresh(PAGES);
    unsigned char *seen = calloc(PAGES, 1);
    struct tally t = {0};
    t.low = (uintptr_t)memory;
    t.high = t.low + PAGES * PAGE;
    t.seen = seen;
    CHECK(counterhal_sampler_start(s) == COUNTERHAL_OK);
    for (int k = 0; k < PAGES; k++)
        ((volatile unsigned char *)memory)[k * PAGE] = 1;
    CHECK(counterhal_sampler_stop(s) == COUNTERHAL_OK);
    int kept = counterhal_sampler_read(s, on_fault, &t);
    uint64_t lost = 0;
    int rc = counterhal_sampler_lost(s, &lost);
    if (rc == COUNTERHAL_ENOSUPP) {
        printf("skip: this kernel does not count lost samples\n");
        exit(3);
    }
    CHECK(rc == COUNTERHAL_OK);
    printf("lost: %d kept, %llu lost\n", kept, (unsigned long long)lost);
    CHECK(lost > 0 && (uint64_t)kept + lost >= PAGES);
    free(seen);
    munmap(memory, PAGES * PAGE);
    counterhal_sampler_destroy(s);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    counterhal_t *ch = NULL;
    if (counterhal_open(&ch, NULL) != COUNTERHAL_OK) {
        fprintf(stderr, "no backend: %s\n", counterhal_last_error());
        return 2;
    }
    CHECK(sizeof(counterhal_sample_t) == 4 * 4 + 4 * 8 + sizeof(void *) + sizeof(size_t));
    if (strcmp(mode, "getpid") == 0)
        getpid_samples(ch);
    else if (strcmp(mode, "faults") == 0)
        fault_samples(ch);
    else if (strcmp(mode, "overflow") == 0)
        overflow_callbacks(ch);
    else if (strcmp(mode, "lost") == 0)
        lost_samples(ch);
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
