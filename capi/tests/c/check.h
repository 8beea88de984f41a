/* The test programs' check: on a false condition, prints the file, line, condition and the C
 * API's last error to standard error, and returns 1 from the calling function. */
#ifndef COUNTERHAL_TEST_CHECK_H
#define COUNTERHAL_TEST_CHECK_H

#include <counterhal.h>
#include <stdio.h>

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__,    \
                    #cond, counterhal_last_error());                                     \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

#endif
