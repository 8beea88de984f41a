/* A program and a library it links, each built against its own PAPI release's papi.h (7.0 and
 * 7.2, either way round), in one process: as a tool and its plugin, or an application and a
 * profiler. This file is both: built with -DAS_LIBRARY it is the library (library_init,
 * library_reads), without it the program, which calls PAPI_library_init and the library's
 * in the order its argument says ("program-first" or "library-first").
 *
 * Each caller passes its papi.h's PAPI_VER_CURRENT. The first init chooses the release; the
 * other caller's init is PAPI_EINVAL, as a real libpapi refuses every version but its own.
 * A caller whose init succeeded then reads an event's and a component's description into
 * structs of exactly its release's size, on the heap (valgrind sees a write past one) and on
 * the stack between two guards (AddressSanitizer sees one; so do the guards' bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <papi.h>

#ifdef AS_LIBRARY
#define WHO "library"
#define FN(name) library_##name
#else
#define WHO "program"
#define FN(name) program_##name
#endif

#define GUARD_BYTE 0x5a

int FN(init)(void) {
    int result = PAPI_library_init(PAPI_VER_CURRENT);
    printf("%s (PAPI %d.%d) init: %s (%d)\n", WHO, PAPI_VERSION_MAJOR(PAPI_VERSION),
           PAPI_VERSION_MINOR(PAPI_VERSION), result == PAPI_VER_CURRENT ? "ok" : "refused",
           result == PAPI_VER_CURRENT ? 0 : result);
    return result == PAPI_VER_CURRENT;
}

void FN(reads)(void) {
    struct {
        unsigned char before[64];
        PAPI_event_info_t info;
        unsigned char after[64];
    } guarded;
    PAPI_event_info_t *heap = malloc(sizeof *heap);
    const PAPI_component_info_t *cmp;
    size_t i;
    int result, intact = 1;

    memset(&guarded, GUARD_BYTE, sizeof guarded);
    result = PAPI_get_event_info(PAPI_TOT_INS, &guarded.info);
    for (i = 0; i < sizeof guarded.after; i++) {
        intact &= guarded.before[i] == GUARD_BYTE && guarded.after[i] == GUARD_BYTE;
    }
    printf("%s: get_event_info on the stack %d, %s, guards %s\n", WHO, result,
           guarded.info.symbol, intact ? "intact" : "written");
    if (heap == NULL) {
        return;
    }
    result = PAPI_get_event_info(PAPI_TOT_INS, heap);
    printf("%s: get_event_info on the heap %d, %s\n", WHO, result, heap->symbol);
#ifdef PAPI_PARTIAL
    printf("%s: num_quals %d\n", WHO, heap->num_quals);
#endif
    free(heap);
    /* Fields after the one 7.2 inserted, at this release's offsets. */
    cmp = PAPI_get_component_info(0);
    printf("%s: component 0 default_granularity %d, available_granularities %#x\n", WHO,
           cmp->default_granularity, cmp->available_granularities);
    /* A second init in the release chosen returns at once with its version. */
    printf("%s: init again: %s\n", WHO,
           PAPI_library_init(PAPI_VER_CURRENT) == PAPI_VER_CURRENT ? "ok" : "refused");
}

#ifndef AS_LIBRARY
int library_init(void);
void library_reads(void);

int main(int argc, char **argv) {
    int program_first = argc > 1 && strcmp(argv[1], "program-first") == 0;
    int program_ok, library_ok;

    setvbuf(stdout, NULL, _IONBF, 0);
    if (program_first) {
        program_ok = program_init();
        library_ok = library_init();
    } else {
        library_ok = library_init();
        program_ok = program_init();
    }
    if (program_ok) {
        program_reads();
    }
    if (library_ok) {
        library_reads();
    }
    PAPI_shutdown();
    return 0;
}
#endif
