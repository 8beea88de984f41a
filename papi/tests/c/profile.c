/* PAPI_profil on perf::PAGE-FAULTS (papi/tests/profile.rs): with "misuse", the codes of
   profiling calls on a set that does not exist and on an empty one (nothing counts); else
   1,000 fresh pages touched by touch_pages with a sample every 10 faults (after a round that
   warms the profiling path up), profiled into 16-bit buckets over touch_pages' first 4 KiB,
   and the buckets' total printed. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "papi.h"

#define PAGES 1000

__attribute__((noinline)) static void touch_pages(char *p) {
    for (int i = 0; i < PAGES; i++)
        p[i * 4096] = 1;
}

int main(int argc, char **argv) {
    static unsigned short buckets[2048];
    setvbuf(stdout, NULL, _IONBF, 0);
    if (PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT)
        return 1;
    int es = PAPI_NULL;
    PAPI_create_eventset(&es);
    if (argc > 1 && strcmp(argv[1], "misuse") == 0) {
        printf("no such set %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, 12345, PAPI_TOT_CYC, 10, 0));
        printf("empty set %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, es, PAPI_TOT_CYC, 10, 0));
        PAPI_sprofil_t one = { buckets, sizeof buckets, 0, 65536 };
        printf("sprofil empty set %d\n", PAPI_sprofil(&one, 1, es, PAPI_TOT_CYC, 10, 0));
        /* An event not in the set is PAPI_ENOEVNT before the buffers and flags are looked at
           (papi.c PAPI_sprofil); PAPI_profil with a threshold of 0 or below turns off an event
           that is profiled, and is PAPI_EINVAL for one that is not, first. */
        int counted = PAPI_NULL, code = 0;
        PAPI_create_eventset(&counted);
        printf("add %d\n", PAPI_add_named_event(counted, "perf::PAGE-FAULTS"));
        PAPI_event_name_to_code("perf::PAGE-FAULTS", &code);
        printf("unknown event %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, counted, PAPI_TOT_CYC, 10, 0));
        printf("unknown event, bad scale %d\n", PAPI_profil(buckets, sizeof buckets, 0, 1, counted, PAPI_TOT_CYC, 10, 0));
        printf("code 0, bad scale %d\n", PAPI_profil(buckets, sizeof buckets, 0, 1, counted, 0, 10, 0));
        printf("unknown event, unknown flag %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, counted, PAPI_TOT_CYC, 10, 0x10000));
        printf("unknown event, two bucket sizes %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, counted, PAPI_TOT_CYC, 10,
                                                                PAPI_PROFIL_BUCKET_16 | PAPI_PROFIL_BUCKET_32));
        printf("unknown event, NULL buffer %d\n", PAPI_profil(NULL, sizeof buckets, 0, 65536, counted, PAPI_TOT_CYC, 10, 0));
        printf("unknown event, negative threshold %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, counted, PAPI_TOT_CYC, -1, 0));
        printf("unknown event, off %d\n", PAPI_profil(buckets, sizeof buckets, 0, 1, counted, PAPI_TOT_CYC, 0, 0));
        one.pr_scale = 1;
        printf("sprofil unknown event, bad scale %d\n", PAPI_sprofil(&one, 1, counted, PAPI_TOT_CYC, 10, 0));
        one.pr_scale = 65536;
        one.pr_base = NULL;
        printf("sprofil unknown event, NULL buffer %d\n", PAPI_sprofil(&one, 1, counted, PAPI_TOT_CYC, 10, 0));
        printf("bad scale %d\n", PAPI_profil(buckets, sizeof buckets, 0, 1, counted, code, 10, 0));
        printf("off before on, bad scale %d\n", PAPI_profil(buckets, sizeof buckets, 0, 1, counted, code, 0, 0));
        printf("negative threshold before on %d\n", PAPI_profil(buckets, sizeof buckets, 0, 65536, counted, code, -5, 0));
        printf("sprofil off before on %d\n", PAPI_sprofil(NULL, 0, counted, code, 0, 0));
        printf("sprofil negative threshold %d\n", PAPI_sprofil(NULL, 0, counted, code, -5, 0));
        return 0;
    }
    int r = PAPI_add_named_event(es, "perf::PAGE-FAULTS");
    if (r != PAPI_OK) {
        printf("add %d\n", r);
        return 0;
    }
    vptr_t start = (vptr_t)touch_pages;
    printf("not in set %d\n", PAPI_profil(buckets, sizeof buckets, start, 65536, es, PAPI_TOT_INS, 10, 0));
    printf("bad scale %d\n", PAPI_profil(buckets, sizeof buckets, start, 1, es, 0, 10, 0));
    int code = 0;
    PAPI_event_name_to_code("perf::PAGE-FAULTS", &code);
    printf("off before on %d\n", PAPI_profil(buckets, sizeof buckets, start, 65536, es, code, 0, 0));
    printf("two bucket sizes %d\n", PAPI_profil(buckets, sizeof buckets, start, 65536, es, code, 10,
                                                 PAPI_PROFIL_BUCKET_16 | PAPI_PROFIL_BUCKET_32));
    r = PAPI_profil(buckets, sizeof buckets, start, 65536, es, code, 10, 0);
    printf("profil %d\n", r);
    if (r != PAPI_OK)
        return 0;
    int state = 0;
    PAPI_state(es, &state);
    printf("profiling state %d\n", (state & PAPI_PROFILING) != 0);
    /* A first round on pages of its own, so that the faults of the profiling path's first
       samples (its code and the buckets' page, touched the first time) fall outside the
       measured one; then the buckets are emptied. */
    char *warm = mmap(0, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(warm, PAGES * 4096, MADV_NOHUGEPAGE);
    long long counted = 0;
    PAPI_start(es);
    touch_pages(warm);
    PAPI_stop(es, &counted);
    memset(buckets, 0, sizeof buckets);
    char *p = mmap(0, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(p, PAGES * 4096, MADV_NOHUGEPAGE);
    PAPI_reset(es);
    PAPI_start(es);
    touch_pages(p);
    PAPI_stop(es, &counted);
    long total = 0;
    for (int i = 0; i < 2048; i++)
        total += buckets[i];
    printf("counted %lld\n", counted);
    printf("in buckets %ld\n", total);
    printf("off %d\n", PAPI_profil(buckets, sizeof buckets, start, 65536, es, code, 0, 0));
    return 0;
}
