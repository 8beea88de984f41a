/* The oracle of cgroup_pattern's tests: glibc's regcomp/regexec as perf's --for-each-cgroup
   uses them (REG_NOSUB, basic syntax, the C locale).
   stdin: the number of names, the names, then patterns, one a line.
   stdout: per pattern, `E<code>` when regcomp refuses it, else one 0/1 per name. */
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *line(void) {
    static char *buf; static size_t cap;
    ssize_t n = getline(&buf, &cap, stdin);
    if (n < 0) return NULL;
    if (n > 0 && buf[n - 1] == '\n') buf[n - 1] = '\0';
    return buf;
}

static void *run(void *unused) {
    (void)unused;
    char *first = line();
    if (!first) return NULL;
    int count = atoi(first);
    char **names = calloc(count + 1, sizeof *names);
    for (int i = 0; i < count; i++) names[i] = strdup(line());
    char *pattern;
    while ((pattern = line())) {
        regex_t re;
        int rc = regcomp(&re, pattern, REG_NOSUB);
        if (rc) { printf("E%d\n", rc); continue; }
        for (int i = 0; i < count; i++) putchar(regexec(&re, names[i], 0, NULL, 0) ? '0' : '1');
        putchar('\n');
        regfree(&re);
    }
    return NULL;
}

/* glibc recurses over the tree a repeat count writes out (`\(\)\{32767\}` overflows 8 MiB):
   the work runs on a thread of 1 GiB of stack, reserved, not used. */
int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)1 << 30);
    if (pthread_create(&thread, &attr, run, NULL)) return 1;
    pthread_join(thread, NULL);
    return 0;
}
