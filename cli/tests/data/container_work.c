/* A container's work, built static so that an image holds it alone: sleeps SECONDS_BEFORE,
 * touches PAGES fresh 4 KiB pages, sleeps SECONDS_AFTER, then prints the page faults the
 * kernel counted for it (ru_minflt of getrusage) and exits.
 *   container_work PAGES SECONDS_BEFORE SECONDS_AFTER */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

static void rest(const char *seconds) {
	double s = atof(seconds);
	struct timespec t = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
	nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
	if (argc != 4) return 2;
	/* One fault per 4 KiB page, not per 2 MiB where transparent huge pages are `always`. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	long pages = atol(argv[1]);
	rest(argv[2]);
	char *p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return 3;
	for (long i = 0; i < pages; i++) p[i * 4096] = 1;
	rest(argv[3]);
	struct rusage usage;
	getrusage(RUSAGE_SELF, &usage);
	printf("%ld\n", usage.ru_minflt);
	return 0;
}
