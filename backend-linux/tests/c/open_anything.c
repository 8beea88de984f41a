/*
 * LD_PRELOAD for perf in tests/perf_pmus.rs: every perf_event_open that perf asks for opens,
 * as the software event cpu-clock on CPU 0, so that perf goes on to the next CPU and the next
 * PMU as it would on the machine the fake sysfs tree describes (where the kernel knows the
 * tree's PMU types). perf has already printed the attr and the CPU it asked for (-vv) when the
 * call arrives here; nothing perf decides is changed, only the kernel's answer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

long syscall(long number, ...)
{
	va_list ap;
	long a[6];
	long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (number == SYS_perf_event_open) {
		const struct perf_event_attr *asked = (const void *)a[0];
		struct perf_event_attr attr;
		size_t size = asked->size < sizeof(attr) ? asked->size : sizeof(attr);

		memset(&attr, 0, sizeof(attr));
		memcpy(&attr, asked, size);
		attr.size = size;
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.config1 = 0;
		attr.config2 = 0;
		return real(number, &attr, a[1], 0L, a[3], a[4]);
	}
	return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
