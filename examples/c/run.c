/* A small `perf stat` in C: count events over a command from its exec to its end, with the
 * C API's set pieces a tool meets (the library's version, options, removing an event the
 * machine cannot count, a command counted with its children or alone).
 *
 *   scripts/install-capi /usr/local
 *   cc examples/c/run.c $(pkg-config --cflags --libs counterhal) -o run
 *   ./run [-i] EVENT[,EVENT...] -- CMD [ARGS...]
 *
 * -i counts the command's own process alone (perf stat -i); without it, what it creates too.
 * Events the machine cannot count are removed and named; the rest are counted each on its
 * own (not one group), so one missing event loses no other. Exits with the command's status.
 */
#include <counterhal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
    int arg = 1, follow = COUNTERHAL_FOLLOW_CHILDREN;
    if (arg < argc && strcmp(argv[arg], "-i") == 0) {
        follow = COUNTERHAL_FOLLOW_COMMAND_ONLY;
        arg++;
    }
    if (arg + 2 >= argc || strcmp(argv[arg + 1], "--") != 0) {
        fprintf(stderr, "usage: %s [-i] EVENT[,EVENT...] -- CMD [ARGS...]\n", argv[0]);
        return 2;
    }
    if (counterhal_version() / 100 != COUNTERHAL_VERSION_NUMBER / 100)
        fprintf(stderr, "note: header %s, library %s\n", COUNTERHAL_VERSION_STRING,
                counterhal_version_string());
    counterhal_t *ch;
    if (counterhal_open(&ch, NULL) < 0) {
        fprintf(stderr, "no counter backend: %s\n", counterhal_last_error());
        return 1;
    }
    counterhal_set_t *set;
    if (counterhal_set_create(ch, &set) < 0 ||
        counterhal_set_option(set, COUNTERHAL_OPTION_GROUPED, 0) < 0) {
        fprintf(stderr, "%s\n", counterhal_last_error());
        return 1;
    }
    char *names = strdup(argv[arg]);
    for (char *name = strtok(names, ","); name != NULL; name = strtok(NULL, ","))
        if (counterhal_set_add(set, name) < 0)
            fprintf(stderr, "%s: not counted: %s\n", name, counterhal_last_error());
    int n = counterhal_set_size(set);
    counterhal_reading_t *readings = calloc((size_t)(n > 0 ? n : 1), sizeof *readings);
    int status = -1; /* written once the command ran */
    int rc = counterhal_set_run(set, (const char *const *)&argv[arg + 2], follow, readings,
                                (size_t)n, &status);
    if (rc < 0 && status == -1) {
        fprintf(stderr, "%s: %s\n", argv[arg + 2], counterhal_last_error());
        return 127;
    }
    /* An event that opened when added but not on the command reads 0: say so and drop it. */
    for (int i = n - 1; i >= 0; i--)
        if (readings[i].time_enabled == 0) {
            fprintf(stderr, "%s: not counted on the command\n",
                    counterhal_set_event_name(set, (size_t)i));
            counterhal_set_remove(set, (size_t)i);
            memmove(&readings[i], &readings[i + 1], (size_t)(n - i - 1) * sizeof *readings);
            n--;
        }
    fprintf(stderr, "\n counts of '%s'%s on %s:\n\n", argv[arg + 2],
            follow == COUNTERHAL_FOLLOW_COMMAND_ONLY ? " (its own process)" : "",
            counterhal_backend(ch));
    for (int i = 0; i < n; i++) {
        const counterhal_reading_t *r = &readings[i];
        fprintf(stderr, "%20llu  %s", (unsigned long long)counterhal_scaled(r),
                counterhal_set_event_name(set, (size_t)i));
        if (r->time_running < r->time_enabled)
            fprintf(stderr, "  (%.1f%% of the time)", 100.0 * (double)r->time_running /
                                                          (double)r->time_enabled);
        fputc('\n', stderr);
    }
    free(readings);
    free(names);
    counterhal_set_destroy(set);
    counterhal_close(ch);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}
