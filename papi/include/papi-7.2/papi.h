/* counterhal's papi.h for programs written against PAPI 7.2: the interface of ../papi.h in
 * 7.2's release (PAPI_VER_CURRENT 0x07020000, PAPI_PARTIAL, the qualifiers of
 * PAPI_event_info_t, the partial-disable fields of PAPI_component_info_t and 7.2's numbers of
 * the enumeration modifiers). Build with -I on this folder; papi/tests/abi.rs checks it
 * against PAPI 7.2's own papi.h. */
#ifndef COUNTERHAL_PAPI_7_2
#define COUNTERHAL_PAPI_7_2
#endif
#include "../papi.h"
