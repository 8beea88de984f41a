/* A benchmark harness's client of perf stat's --control, as php-src's zend_perf_stat and
 * gungraun drive it: `enable`, 256 fresh 4 KiB pages touched, `disable`, each command's ack
 * awaited (perf writes "ack\n" and its NUL, 5 bytes), then 1,000 fresh pages touched outside
 * the window, and a `ping`.
 *   control_client run CTL ACK      CTL and ACK: descriptor numbers, or fifo paths
 *   control_client pipes PROGRAM... PROGRAM run with two pipes: commands read on 10 (written
 *                                   on 11), acks written on 13 (read on 12)
 *   control_client nonblocking-pipes PROGRAM...
 *                                   the same pipes, every end O_NONBLOCK, as a harness may
 *                                   open them (the client then polls for each ack) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

static int end_of(const char *s, int flags) {
	char *rest;
	long fd = strtol(s, &rest, 10);
	return *s && !*rest ? (int)fd : open(s, flags);
}

static void command(int ctl, int ack, const char *text) {
	char reply[5];
	size_t got = 0;
	if (write(ctl, text, strlen(text)) != (ssize_t)strlen(text)) exit(3);
	while (got < sizeof reply) {
		ssize_t n = read(ack, reply + got, sizeof reply - got);
		if (n < 0 && errno == EAGAIN) {
			struct pollfd ready = {.fd = ack, .events = POLLIN};
			if (poll(&ready, 1, 10000) != 1) exit(7);
			continue;
		}
		if (n <= 0) exit(4);
		got += (size_t)n;
	}
	if (memcmp(reply, "ack\n", 5)) exit(5);
}

static void touch(size_t pages) {
	char *p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) exit(6);
	for (size_t i = 0; i < pages; i++) p[i * 4096] = 1;
}

int main(int argc, char **argv) {
	int commands[2], acks[2];
	int nonblocking = argc > 2 && !strcmp(argv[1], "nonblocking-pipes");
	if (argc > 2 && (nonblocking || !strcmp(argv[1], "pipes"))) {
		if (pipe(commands) || pipe(acks) || dup2(commands[0], 10) < 0 || dup2(commands[1], 11) < 0
		    || dup2(acks[0], 12) < 0 || dup2(acks[1], 13) < 0) return 2;
		for (int fd = 10; nonblocking && fd <= 13; fd++) {
			if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) return 2;
		}
		execvp(argv[2], argv + 2);
		return 127;
	}
	if (argc != 4 || strcmp(argv[1], "run")) return 2;
	/* One fault per 4 KiB page, not per 2 MiB where transparent huge pages are `always`. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	int ctl = end_of(argv[2], O_WRONLY), ack = end_of(argv[3], O_RDONLY);
	if (ctl < 0 || ack < 0) return 2;
	touch(1); /* mmap's and the loop's first faults, outside the window */
	command(ctl, ack, "enable\n");
	touch(256);
	command(ctl, ack, "disable\n");
	touch(1000);
	command(ctl, ack, "ping\n");
	return 0;
}
