/* PAPI's rate functions (papi/tests/rates.rs): the codes each answers here, for a wrong event,
   NULL pointers, a first call and a second, and PAPI_rate_stop, before and after. */
#include <stdio.h>
#include "papi.h"

int main(void) {
    float rt = -1, pt = -1, rate = -1;
    long long count = -1, ref = -1, core = -1;
    printf("rate_stop before %d\n", PAPI_rate_stop());
    printf("flips of a wrong event %d\n", PAPI_flips_rate(PAPI_TOT_INS, &rt, &pt, &count, &rate));
    printf("flops of a wrong event %d\n", PAPI_flops_rate(PAPI_TOT_CYC, &rt, &pt, &count, &rate));
    printf("flips with NULL %d\n", PAPI_flips_rate(PAPI_FP_INS, NULL, &pt, &count, &rate));
    printf("ipc with NULL %d\n", PAPI_ipc(&rt, &pt, NULL, &rate));
    printf("epc with NULL %d\n", PAPI_epc(0, &rt, &pt, NULL, &core, &count, &rate));
    printf("flips %d\n", PAPI_flips_rate(PAPI_FP_INS, &rt, &pt, &count, &rate));
    printf("flops %d\n", PAPI_flops_rate(PAPI_FP_OPS, &rt, &pt, &count, &rate));
    printf("ipc %d\n", PAPI_ipc(&rt, &pt, &count, &rate));
    printf("ipc again %d\n", PAPI_ipc(&rt, &pt, &count, &rate));
    printf("epc %d\n", PAPI_epc(0, &rt, &pt, &ref, &core, &count, &rate));
    printf("rate_stop after %d\n", PAPI_rate_stop());
    printf("initialized %d\n", PAPI_is_initialized());
    return 0;
}
