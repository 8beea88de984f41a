/* PAPI_NTV_ENUM_UMASKS from each event named (papi/tests/unit_masks.rs): its code, then
   each unit mask's name and long description, then the code that ended the walk. */
#include <stdio.h>
#include "papi.h"
int main(int argc, char **argv){
  PAPI_library_init(PAPI_VER_CURRENT);
  for (int a = 1; a < argc; a++) {
    int code = 0;
    int r = PAPI_event_name_to_code(argv[a], &code);
    printf("%s -> %d %#x\n", argv[a], r, code);
    if (r) continue;
    int u = code;
    r = PAPI_enum_cmp_event(&u, PAPI_NTV_ENUM_UMASKS, 0);
    while (r == PAPI_OK) {
      char name[PAPI_MAX_STR_LEN]; PAPI_event_info_t info;
      PAPI_event_code_to_name(u, name);
      PAPI_get_event_info(u, &info);
      printf("  %s | %s\n", name, info.long_descr);
      r = PAPI_enum_cmp_event(&u, PAPI_NTV_ENUM_UMASKS, 0);
    }
    printf("  end %d\n", r);
  }
  return 0;
}
