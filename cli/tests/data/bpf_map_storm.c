/* A busy BPF agent's map traffic, as a Cilium agent's or another exporter's: on every online
 * CPU a thread pinned there updates and looks up a hash map with bpf(2) as fast as it can,
 * for the seconds given, then prints how many calls it made. Each call holds the CPU's
 * bpf_prog_active while it runs (bpf_disable_instrumentation, include/linux/bpf.h).
 *   bpf_map_storm SECONDS */
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int map;
static double seconds;

static long bpf(int cmd, union bpf_attr *attr) {
	return syscall(__NR_bpf, cmd, attr, sizeof *attr);
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void *storm(void *arg) {
	long cpu = (long)arg, calls = 0;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) return (void *)-1;
	uint32_t key = (uint32_t)cpu;
	uint64_t value[8] = {0};
	union bpf_attr attr;
	double end = now() + seconds;
	while (now() < end) {
		for (int i = 0; i < 256; i++, calls += 2) {
			key = (key * 2654435761u) % 4096;
			memset(&attr, 0, sizeof attr);
			attr.map_fd = map;
			attr.key = (uintptr_t)&key;
			attr.value = (uintptr_t)value;
			attr.flags = BPF_ANY;
			if (bpf(BPF_MAP_UPDATE_ELEM, &attr)) return (void *)-1;
			bpf(BPF_MAP_LOOKUP_ELEM, &attr);
		}
	}
	return (void *)calls;
}

int main(int argc, char **argv) {
	if (argc != 2) return 2;
	seconds = atof(argv[1]);
	union bpf_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.map_type = BPF_MAP_TYPE_HASH;
	attr.key_size = 4;
	attr.value_size = 64;
	attr.max_entries = 4096;
	map = bpf(BPF_MAP_CREATE, &attr);
	if (map < 0) { perror("BPF_MAP_CREATE"); return 1; }
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t threads[1024];
	for (long c = 0; c < cpus && c < 1024; c++) pthread_create(&threads[c], NULL, storm, (void *)c);
	long total = 0;
	for (long c = 0; c < cpus && c < 1024; c++) {
		void *calls;
		pthread_join(threads[c], &calls);
		if ((long)calls < 0) { fprintf(stderr, "a bpf(2) call failed on CPU %ld\n", c); return 1; }
		total += (long)calls;
	}
	printf("%ld\n", total);
	return 0;
}
