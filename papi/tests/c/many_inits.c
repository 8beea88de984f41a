/* PAPI_library_init called again and again: PAPI returns at once from a call on an initialised
 * library, so 1,000 calls cost what one does and keep nothing more; and an init after each of
 * 20 PAPI_shutdown calls makes the components' descriptions again without losing the old ones.
 * valgrind's memcheck counts what is lost. */
#include <stdio.h>
#include <papi.h>

int main(void) {
    int i, bad = 0;
    for (i = 0; i < 1000; i++) {
        bad += PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT;
    }
    for (i = 0; i < 20; i++) {
        PAPI_shutdown();
        bad += PAPI_library_init(PAPI_VER_CURRENT) != PAPI_VER_CURRENT;
        bad += PAPI_get_component_info(0) == NULL;
    }
    printf("inits refused: %d\n", bad);
    PAPI_shutdown();
    return bad != 0;
}
