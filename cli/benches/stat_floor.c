/* The floor under `stat -e page-faults,context-switches -- COMMAND`: what any tool pays to count
 * a command, and no more. Forks a child held before exec on a pipe, opens the two software
 * counters on it (inherited, enabled at exec, as perf stat and counterhal stat open them),
 * releases it, waits, reads both counts and prints them. No event names, no database, no
 * formatting beyond two numbers: benches/stat_vs_perf.rs times it beside perf stat. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int go[2];
    if (argc < 2 || pipe2(go, O_CLOEXEC) != 0)
        return 2;
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) == 1)
            execvp(argv[1], argv + 1);
        _exit(127);
    }
    close(go[0]);
    const uint64_t configs[2] = {PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_CONTEXT_SWITCHES};
    int fds[2];
    for (int i = 0; i < 2; i++) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = configs[i];
        attr.disabled = 1;
        attr.inherit = 1;
        attr.enable_on_exec = 1;
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        fds[i] = (int)syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    }
    if (write(go[1], "g", 1) != 1)
        return 2;
    close(go[1]);
    int status;
    waitpid(pid, &status, 0);
    for (int i = 0; i < 2; i++) {
        uint64_t values[3] = {0, 0, 0};
        if (fds[i] < 0 || read(fds[i], values, sizeof values) != sizeof values)
            return 1;
        fprintf(stderr, "%llu\n", (unsigned long long)values[0]);
    }
    return 0;
}
