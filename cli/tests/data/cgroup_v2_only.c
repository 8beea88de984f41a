/* An LD_PRELOAD library that shows a program only the cgroup v2 line (`0::`) of
 * /proc/PID/cgroup, as on a host with cgroup v2 alone: Slurm's cgroup/v2 plugin refuses a
 * hybrid host ("Hybrid mode is not supported") because the v1 hierarchies' lines come first
 * there, and with this library slurmd and slurmstepd run on the cgroup2 mount they are told
 * (cgroup.conf's CgroupMountpoint). Every other file is opened as it is. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Whether `path` is a task's cgroup file: /proc/self/cgroup, /proc/thread-self/cgroup,
 * /proc/PID/cgroup or /proc/PID/task/TID/cgroup. */
static int is_cgroup_file(const char *path) {
	size_t n;
	if (path == NULL || strncmp(path, "/proc/", 6) != 0) return 0;
	n = strlen(path);
	return n > 13 && strcmp(path + n - 7, "/cgroup") == 0 && strstr(path, "/ns/") == NULL;
}

/* A memory file holding the `0::` lines of `path`, at its start; -1 where `path` cannot be
 * read. */
static int v2_only(const char *path) {
	char buffer[65536], *line, *end;
	ssize_t got, total = 0;
	int real = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (real < 0) return -1;
	while (total < (ssize_t)sizeof buffer - 1 &&
	       (got = read(real, buffer + total, sizeof buffer - 1 - total)) > 0)
		total += got;
	close(real);
	buffer[total] = 0;
	int memory = (int)syscall(SYS_memfd_create, "cgroup", MFD_CLOEXEC);
	if (memory < 0) return -1;
	for (line = buffer; *line; line = end) {
		end = strchr(line, '\n');
		end = end ? end + 1 : line + strlen(line);
		if (strncmp(line, "0::", 3) == 0 && write(memory, line, end - line) < 0) break;
	}
	lseek(memory, 0, SEEK_SET);
	return memory;
}

static int reading(int flags) { return (flags & O_ACCMODE) == O_RDONLY; }

int open(const char *path, int flags, ...) {
	va_list args;
	va_start(args, flags);
	mode_t mode = (mode_t)va_arg(args, int);
	va_end(args);
	if (is_cgroup_file(path) && reading(flags)) return v2_only(path);
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
	va_list args;
	va_start(args, flags);
	mode_t mode = (mode_t)va_arg(args, int);
	va_end(args);
	return open(path, flags, mode);
}

int openat(int dir, const char *path, int flags, ...) {
	va_list args;
	va_start(args, flags);
	mode_t mode = (mode_t)va_arg(args, int);
	va_end(args);
	if (path != NULL && path[0] == '/' && is_cgroup_file(path) && reading(flags))
		return v2_only(path);
	return (int)syscall(SYS_openat, dir, path, flags, mode);
}

int openat64(int dir, const char *path, int flags, ...) {
	va_list args;
	va_start(args, flags);
	mode_t mode = (mode_t)va_arg(args, int);
	va_end(args);
	return openat(dir, path, flags, mode);
}

FILE *fopen(const char *path, const char *how) {
	static FILE *(*real)(const char *, const char *);
	if (is_cgroup_file(path) && how[0] == 'r' && strchr(how, '+') == NULL) {
		int fd = v2_only(path);
		return fd < 0 ? NULL : fdopen(fd, how);
	}
	if (real == NULL) real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, "fopen");
	return real(path, how);
}

FILE *fopen64(const char *path, const char *how) { return fopen(path, how); }
