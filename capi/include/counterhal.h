/*
 * counterhal.h: the C API of counterhal, hardware performance counters behind one interface
 * over each OS's own. A backend (one OS interface) is named by a string, its name in
 * counterhal's registry of backends: `counterhal info` lists this build's, and an unknown
 * name is COUNTERHAL_EINVAL naming them.
 * Link with -lcounterhal (pkg-config --cflags --libs counterhal; counterhal-static for the
 * archive). C99 and C++.
 *
 * Errors: every int-returning function returns a value >= 0 on success (COUNTERHAL_OK, 0, or
 * a count or index: counterhal_set_add returns the event's index) and a negative
 * COUNTERHAL_E* code on failure, so test a result with < 0, never != COUNTERHAL_OK;
 * counterhal_last_error() then gives this thread's message with its hint. A NULL pointer argument or a buffer shorter than the set is
 * an error (COUNTERHAL_EINVAL), never a crash, and no failure inside counterhal crosses this
 * boundary as anything but a code (COUNTERHAL_EINTERNAL).
 *
 * Threads: a counterhal_t may be used from several threads at once (counterhal_list's results
 * excepted: they live until the next counterhal_list on that handle). A counterhal_set_t is
 * used by one thread at a time; it may move between threads. A set made with
 * counterhal_set_create counts the thread that calls counterhal_set_start. Closing a handle
 * with sets still alive is allowed: each set keeps what it needs until destroyed.
 * counterhal_last_error() is per thread.
 *
 * Signals: counterhal_set_read of a started set is async-signal-safe: no lock, no
 * allocation, one read(2) of the set's perf group, and it runs beside any other call on the
 * set, so a profiler's SIGPROF handler may read a set on top of whatever its thread was
 * doing (a counterhal_set_read of the same set too). A set over several places (a process,
 * a CPU list), one not started, or one being started, stopped or reset is read as the other
 * calls. No other counterhal function is async-signal-safe: a call made from a signal
 * handler that interrupted a counterhal call on the same thread is refused at once with
 * COUNTERHAL_EBUSY (it never deadlocks and touches nothing; counterhal_close and
 * counterhal_set_destroy then leave the handle or set alive), and so is a call that would
 * change a set whose read the handler interrupted; any other call from a handler may
 * deadlock inside the C library's allocator. counterhal_strerror, counterhal_scaled,
 * counterhal_real_nsec and counterhal_virt_nsec are safe anywhere.
 *
 * Cancellation: no counterhal function is a cancellation point. Each holds the calling
 * thread's cancellation off while it runs (the system calls it makes are cancellation
 * points), so a pthread_cancel of a thread inside a call takes effect at the thread's next
 * cancellation point after the call returns.
 *
 * Thread exit: the functions may be called from thread-local and pthread_key destructors.
 * A region call there, once the thread's own region counters are gone, fails with
 * COUNTERHAL_ENOSUPP and says so.
 *
 * fork(): nothing carries over to the child (PAPI's rule). In the child a handle or set made
 * before the fork refuses every call with COUNTERHAL_ESTATE (counterhal_close and
 * counterhal_set_destroy excepted: they free the child's copy without touching the parent's
 * counters); the child opens its own handle. Regions re-initialise in the child: a region
 * begun before the fork cannot be ended there (COUNTERHAL_EINVAL), new ones count the
 * child's threads, and the child writes its own at-exit report, to
 * COUNTERHAL_REGION_OUTPUT with ".PID" appended (the parent's file is the parent's alone).
 * In the child of a process with several threads POSIX allows only async-signal-safe calls
 * until exec: counterhal allocates, which works where the C library's allocator survives
 * such a fork (glibc's does), not under every sanitizer.
 */
#ifndef COUNTERHAL_H
#define COUNTERHAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: stable numbers, one per cause. */
#define COUNTERHAL_OK 0
#define COUNTERHAL_EINVAL (-1)     /* NULL argument, short buffer, bad target or string */
#define COUNTERHAL_EEVENT (-2)     /* unknown event name or bad modifier */
#define COUNTERHAL_ENOSUPP (-3)    /* this machine, OS or backend cannot do it */
#define COUNTERHAL_EPERM (-4)      /* refused for lack of privilege */
#define COUNTERHAL_ECNTR (-5)      /* more events than free counters */
#define COUNTERHAL_ENODEV (-6)     /* the backend's device or driver is missing */
#define COUNTERHAL_EBUSY (-7)      /* the counters are in use */
#define COUNTERHAL_ENOENT (-8)     /* no such process or thread (a CPU: EINVAL, at create) */
#define COUNTERHAL_ENOCOUNT (-9)   /* a read carried no values */
#define COUNTERHAL_ELIMIT (-10)    /* a limit of this process (open files) */
#define COUNTERHAL_ESTATE (-11)    /* wrong state (add while running, read before start) */
#define COUNTERHAL_EINTERNAL (-12) /* counterhal failed inside: please report */
#define COUNTERHAL_EOTHER (-13)    /* anything else: see counterhal_last_error() */

/* Where a set counts (counterhal_set_create_for). */
#define COUNTERHAL_TARGET_THIS_THREAD 0 /* the thread that starts the set */
#define COUNTERHAL_TARGET_THREAD 1      /* one thread: id = its thread id */
#define COUNTERHAL_TARGET_PROCESS 2     /* id = a process: every thread it has and creates */
#define COUNTERHAL_TARGET_ALL_CPUS 3    /* every online CPU */
#define COUNTERHAL_TARGET_CPUS 4        /* the CPUs of cpus, e.g. "0,2-3" */

/* Options of a set (counterhal_set_option): each 0 or 1, DOMAIN a COUNTERHAL_DOMAIN_* mask. */
#define COUNTERHAL_OPTION_GROUPED 0 /* 1 (default): one group, counted all together or not at
                                     * all; 0: each event on its own (time-shared where the
                                     * counters are too few, each with its own times) */
#define COUNTERHAL_OPTION_PINNED 1  /* 1: keep the group on its counters always (perf's
                                     * pinned); one that cannot be reads as an error */
#define COUNTERHAL_OPTION_INHERIT 2 /* 1: a THIS_THREAD or THREAD set also counts the threads
                                     * and processes the thread creates once started (each
                                     * event then on its own: a group does not survive the
                                     * kernel's inheritance); default 0 */
#define COUNTERHAL_OPTION_EXCLUSIVE 3 /* 1: the set has the counters to itself while it runs
                                       * (perf's exclusive): no other group is scheduled
                                       * beside it; default 0 */
#define COUNTERHAL_OPTION_DOMAIN 4    /* what the events without a modifier of their own
                                       * (a name without :u, :k, ...) count: 0 (default) the
                                       * backend's default, user space only where the OS
                                       * refuses the kernel to this caller (counterhal_set_note
                                       * says so); else COUNTERHAL_DOMAIN_* or-ed together,
                                       * counted as asked or refused (the kernel asked for as
                                       * an unprivileged caller at perf_event_paranoid 2:
                                       * COUNTERHAL_EPERM with the hint) */
#define COUNTERHAL_OPTION_STRICT_DOMAIN 5 /* 1: with the default domain, an event with no
                                           * modifier that the system forbids to count the
                                           * kernel to this caller is refused (COUNTERHAL_EPERM
                                           * with the hint) instead of counting user space
                                           * only; default 0 */

/* Privilege levels, the values of COUNTERHAL_OPTION_DOMAIN, or-ed together. */
#define COUNTERHAL_DOMAIN_USER 1       /* user space */
#define COUNTERHAL_DOMAIN_KERNEL 2     /* the kernel */
#define COUNTERHAL_DOMAIN_HYPERVISOR 4 /* the hypervisor */

/* How a counted command's counters follow it (counterhal_set_run). */
#define COUNTERHAL_FOLLOW_CHILDREN 0     /* the command and every process and thread it
                                          * creates: perf stat -- cmd */
#define COUNTERHAL_FOLLOW_COMMAND_ONLY 1 /* the command's own process alone: perf stat -i */

/* What a row of counterhal_set_read_each counts (counterhal_set_place). */
#define COUNTERHAL_PLACE_THIS_THREAD 0 /* the thread that started the set */
#define COUNTERHAL_PLACE_THREAD 1      /* a thread, by id */
#define COUNTERHAL_PLACE_CPU 2         /* a CPU, by number */
#define COUNTERHAL_PLACE_OTHER 3       /* a place this version does not name */

/* The version of this header; counterhal_version() gives the library's (the same number
 * when the library is the one the header came with). */
#define COUNTERHAL_VERSION_MAJOR 0
#define COUNTERHAL_VERSION_MINOR 1
#define COUNTERHAL_VERSION_PATCH 0
#define COUNTERHAL_VERSION_STRING "0.1.0"
#define COUNTERHAL_VERSION_NUMBER \
    (COUNTERHAL_VERSION_MAJOR * 10000 + COUNTERHAL_VERSION_MINOR * 100 + COUNTERHAL_VERSION_PATCH)

typedef struct counterhal counterhal_t;         /* opaque */
typedef struct counterhal_set counterhal_set_t; /* opaque */

/* One event's reading: its count, and the nanoseconds it was enabled and running. */
typedef struct {
    uint64_t value, time_enabled, time_running;
} counterhal_reading_t;

/* One listed event; the strings live until the next counterhal_list on the handle. */
typedef struct {
    const char *section;     /* hardware, software, cache, preset, native, umask (a native
                              * event's unit mask, named EVENT.UNIT_MASK, listed after its
                              * event), backend */
    const char *name;        /* the name to add */
    const char *description; /* a few words, or ""; a native event's or unit mask's from
                              * perf's JSON event files where COUNTERHAL_DESCRIPTIONS names
                              * them when the handle is opened, else "" */
    const char *encoding;    /* what it resolves to here, or NULL */
    const char *reason;      /* why it is not usable (or how it counts), or NULL */
    int usable;              /* 1 if this process can count it for itself here */
} counterhal_event_info_t;

/* Opens the backend named backend (a name `counterhal info` lists), or with NULL the first
 * usable here, trying this OS's backends in the registry's order (on Linux, the one over
 * perf_event_open first). An unknown name is COUNTERHAL_EINVAL naming the known ones. */
int counterhal_open(counterhal_t **out, const char *backend);

/* What counterhal_open_with chooses; a NULL field is chosen as counterhal_open(.., NULL)
 * chooses it. Set size to sizeof(counterhal_options_t): later versions add fields at the
 * end, and a library older than its caller's header accepts the larger size where every
 * field it does not know is 0 (else COUNTERHAL_ENOSUPP). Zero the struct first:
 *   counterhal_options_t o = {sizeof o, NULL, NULL, NULL};  (C99: {.size = sizeof o, ...}) */
typedef struct {
    size_t size;             /* sizeof(counterhal_options_t) */
    const char *backend;     /* a backend's name, as counterhal_open's; NULL: the first
                              * usable */
    const char *cpu_model;   /* the CPU model names resolve against, as counterhal's
                              * --cpu-model: a database id ("skl", "amd64_fam19h_zen3") or
                              * perf's signature ("GenuineIntel-6-8F-8"); NULL: this machine's */
    const char *events_file; /* a TOML events file read beside the shipped database (adds
                              * models, overrides events), as --events FILE; NULL: none */
} counterhal_options_t;

/* Opens a handle as options says (NULL: as counterhal_open(out, NULL)). An unknown backend or
 * CPU model, or an events file that cannot be read or parsed, is COUNTERHAL_EINVAL, the last
 * error naming the known backends or models, or the file's line and column; a size less
 * than the first version's or past 4096 is COUNTERHAL_EINVAL. */
int counterhal_open_with(counterhal_t **out, const counterhal_options_t *options);
/* Closes a handle; NULL is a no-op. */
void counterhal_close(counterhal_t *ch);
/* The backend's label, and the CPU model names resolve against (NULL if none). */
const char *counterhal_backend(const counterhal_t *ch);
const char *counterhal_cpu_model(const counterhal_t *ch);

/* An empty set counting the thread that starts it. */
int counterhal_set_create(counterhal_t *ch, counterhal_set_t **out);
/* An empty set counting on a COUNTERHAL_TARGET_* with id or cpus where the kind needs one
 * (THREAD and PROCESS: an id other than 0). A CPU list must name at least one CPU, each
 * online here: others are refused at once (COUNTERHAL_EINVAL, naming them and the online
 * CPUs). */
int counterhal_set_create_for(counterhal_t *ch, int target, uint32_t id, const char *cpus,
                              counterhal_set_t **out);
/* An empty set counting what runs in a control group (cgroup v2, or v1's perf_event
 * hierarchy), on the CPUs of cpus (NULL: every online CPU), as perf stat -G does: the group
 * named by its path below the cgroup mount ("user.slice", "/" for the root). Its rows are
 * the CPUs (COUNTERHAL_PLACE_CPU). A group that does not exist or cannot be read is
 * COUNTERHAL_ENOENT naming its directory; a name climbing out with ".." COUNTERHAL_EINVAL. */
int counterhal_set_create_cgroup(counterhal_t *ch, const char *cgroup, const char *cpus,
                                 counterhal_set_t **out);
/* Adds an event by name: its index >= 0, or < 0 (the set is unchanged). One event per call:
 * perf's group syntax {a,b} is refused with COUNTERHAL_EEVENT saying so (a set is one group
 * already). An event with no modifier counts the set's COUNTERHAL_OPTION_DOMAIN; with the
 * default domain, where the system forbids counting the kernel (Linux at perf_event_paranoid
 * 2 for an unprivileged caller), it counts user space only, as perf stat counts it: its
 * name stays as given, counterhal_set_event_domain says COUNTERHAL_DOMAIN_USER, and
 * counterhal_set_note, once started, says so. */
int counterhal_set_add(counterhal_set_t *set, const char *event);
/* Removes the event at index (the later ones move down one); not while running. */
int counterhal_set_remove(counterhal_set_t *set, size_t index);
/* Sets a COUNTERHAL_OPTION_* to value (0 or 1; for DOMAIN 0 or a COUNTERHAL_DOMAIN_* mask,
 * one the backend cannot filter being COUNTERHAL_ENOSUPP), not while running; with events in
 * the set, refused if they do not open together under the new options (the old ones stay),
 * else each event takes the domain it now counts under. The current value of
 * an option (0 or 1, or the domain mask), or < 0. */
int counterhal_set_option(counterhal_set_t *set, int option, int value);
int counterhal_set_get_option(counterhal_set_t *set, int option);
/* How many events the set holds; the name of event index as it was added (whatever domain
 * it counts: counterhal_set_event_domain says), or NULL if out of range: valid until the
 * event is removed, an option of the set changes or the set is destroyed. */
int counterhal_set_size(counterhal_set_t *set);
const char *counterhal_set_event_name(counterhal_set_t *set, size_t index);
/* The privilege levels event index counts, COUNTERHAL_DOMAIN_* or-ed together: every level
 * its PMU counts (USER | KERNEL | HYPERVISOR) for an event with no modifier, USER alone where
 * it counts user space only because the system forbids the kernel (perf names it NAME:u),
 * those asked for otherwise; COUNTERHAL_EINVAL if index is out of range. */
int counterhal_set_event_domain(counterhal_set_t *set, size_t index);
/* What the count of event index is in, where its PMU says so (a Linux PMU alias's .scale and
 * .unit, as perf prints them: power/energy-pkg/ counts in units of 2^-32 Joules): returns the
 * unit ("Joules", "MiB"; "" for a plain count) and stores what one count is in it in *scale
 * (1.0 for a plain count) where scale is not NULL; NULL if index is out of range. The count
 * times *scale is in the unit. Valid as long as the event's name. */
const char *counterhal_set_event_unit(counterhal_set_t *set, size_t index, double *scale);
/* Starts counting from zero: the counts and the times enabled and running of every event
 * start at 0 (after a stop too), so counterhal_scaled estimates this run alone. */
int counterhal_set_start(counterhal_set_t *set);
/* Reads one reading per event into out (n >= the set's size), summed over its places;
 * async-signal-safe on a started set (see Signals above). Here
 * and below, n (or len) is the number of elements the buffer has: a number no buffer can
 * hold (more than PTRDIFF_MAX bytes, e.g. SIZE_MAX) is refused with COUNTERHAL_EINVAL. */
int counterhal_set_read(counterhal_set_t *set, counterhal_reading_t *out, size_t n);
/* Stops counting and reads the final counts. */
int counterhal_set_stop(counterhal_set_t *set, counterhal_reading_t *out, size_t n);
/* Zeroes the counts and their times enabled and running (running or stopped). */
int counterhal_set_reset(counterhal_set_t *set);
/* How many places (threads, CPUs) the set counts on; each place's readings, one row of
 * size readings per place, into out[0..n): returns the number of rows. */
int counterhal_set_targets(counterhal_set_t *set);
int counterhal_set_read_each(counterhal_set_t *set, counterhal_reading_t *out, size_t n);
/* What row `row` of counterhal_set_read_each counts: a COUNTERHAL_PLACE_* (>= 0) with the
 * thread or CPU id written to *id (id may be NULL), or < 0. The rows are the places at the
 * last read (a thread of a process that ended is no longer one). */
int counterhal_set_place(counterhal_set_t *set, size_t row, uint32_t *id);
/* Runs the command argv (argv[0] searched in PATH as execvp does; NULL ends the list) with the
 * set's events counted from its exec to its end, as perf stat -- cmd counts it: following it
 * as follow (COUNTERHAL_FOLLOW_*) says, under the set's options (grouped or each event on its
 * own, pinned, exclusive), each event counting what the set's events count (its domain;
 * user space only where counterhal_set_event_domain says so). The command inherits this
 * process's environment, directory and standard streams; the call waits for it to end. One
 * reading per event goes into out[0..n), the command's wait status (as waitpid(2) gives it:
 * WIFEXITED, WEXITSTATUS) into *status (status may be NULL). The set's own target is not
 * used, and the set stays as it was (not while running: COUNTERHAL_ESTATE). An event that could not be counted reads 0 and its code
 * is returned, after the command ran; a command that could not be started is an error
 * naming it, and nothing ran. */
int counterhal_set_run(counterhal_set_t *set, const char *const *argv, int follow,
                       counterhal_reading_t *out, size_t n, int *status);
/* What opening the set did that the caller should know, in one sentence, or NULL: where the
 * system forbids counting the kernel and the set's domain is the default, which events count
 * user space only, in the words of perf stat's note and counterhal's ("counting the kernel
 * is not permitted here (kernel.perf_event_paranoid is 2), so task-clock, page-faults count
 * user space only, as perf stat does"). The note of the set's last counterhal_set_start:
 * NULL before it, and valid until the set is changed (an event added or removed, an option
 * set) or destroyed. */
const char *counterhal_set_note(counterhal_set_t *set);
/* Destroys a set; NULL is a no-op. */
void counterhal_set_destroy(counterhal_set_t *set);

/* The library's version: COUNTERHAL_VERSION_NUMBER's form, and "MAJOR.MINOR.PATCH". */
int counterhal_version(void);
const char *counterhal_version_string(void);

/* The estimate a reading implies (value x enabled / running); 0 if it never ran or NULL. */
uint64_t counterhal_scaled(const counterhal_reading_t *r);
/* A code's meaning (static), and this thread's last failure with its hint. */
const char *counterhal_strerror(int code);
/* This thread's last failure: message and hint ("" before any), at most 2047 bytes. The
 * pointer stays valid as long as the thread, but the text is replaced by the thread's next
 * failing call: to keep it, copy it (counterhal_last_error_copy). */
const char *counterhal_last_error(void);
/* Copies this thread's last failure into buf[0..len), cut to fit and NUL-terminated when
 * len > 0, as snprintf does; returns its whole length without the NUL (so a return >= len
 * means it was cut). buf may be NULL when len is 0: the call then only measures. */
size_t counterhal_last_error_copy(char *buf, size_t len);

/* Lists the events whose name or description holds pattern (NULL: all) into out[0..n);
 * returns how many there are, which may exceed n. out may be NULL when n is 0. */
int counterhal_list(counterhal_t *ch, const char *pattern, counterhal_event_info_t *out,
                    size_t n);
/* COUNTERHAL_OK if event counts here, else why not; writes its encoding into
 * encoding[0..len) (NUL-terminated) when the name exists. encoding may be NULL if len is 0.
 * An encoding longer than len - 1 is written cut and refused with COUNTERHAL_EINVAL, the last
 * error naming the length it needs. */
int counterhal_query(counterhal_t *ch, const char *event, char *encoding, size_t len);

/* Timers: wall-clock ns, this thread's CPU ns, the TSC where it is a clock (else 0). */
uint64_t counterhal_real_nsec(void);
uint64_t counterhal_virt_nsec(void);
uint64_t counterhal_real_cyc(void);

/* Samplers: where events happen. A sampler records one event every `period` events (or about
 * `hz` times a second) on the thread that opens it, into a ring of ring_pages pages (a power
 * of two; 0 for 64), each sample with the COUNTERHAL_SAMPLE_* fields asked for. Linux only
 * (perf_event_open); elsewhere COUNTERHAL_ENOSUPP. A sampler is used by one thread at a time.
 * A period past 2^63 - 1 or a frequency above kernel.perf_event_max_sample_rate is
 * COUNTERHAL_EINVAL naming the limit; where the kernel may not be counted, an event with no
 * modifier samples user space only, as perf record does. */
typedef struct counterhal_sampler counterhal_sampler_t; /* opaque */
#define COUNTERHAL_SAMPLE_IP (1u << 0)        /* the instruction pointer */
#define COUNTERHAL_SAMPLE_TID (1u << 1)       /* the process and thread ids */
#define COUNTERHAL_SAMPLE_TIME (1u << 2)      /* the time (the kernel's perf clock, ns) */
#define COUNTERHAL_SAMPLE_ADDR (1u << 3)      /* the data address (page faults, memory events) */
#define COUNTERHAL_SAMPLE_CPU (1u << 4)       /* the CPU */
#define COUNTERHAL_SAMPLE_PERIOD (1u << 5)    /* the period in force */
#define COUNTERHAL_SAMPLE_CALLCHAIN (1u << 7) /* the call chain, innermost first */

/* One sample; `fields` says which members hold values. The call chain is valid during the
 * callback only. */
typedef struct {
    uint32_t fields;
    uint32_t pid, tid, cpu;
    uint64_t ip, time, addr, period;
    const uint64_t *callchain;
    size_t ncallchain;
} counterhal_sample_t;
typedef void (*counterhal_sample_fn)(const counterhal_sample_t *sample, void *arg);
/* Called in a signal handler (a real-time signal to the thread that asked): it must be
 * async-signal-safe. address is where the thread was interrupted. */
typedef void (*counterhal_overflow_fn)(uint64_t address, void *arg);

int counterhal_sampler_open(counterhal_t *ch, const char *event, uint64_t period, uint32_t fields,
                            size_t ring_pages, counterhal_sampler_t **out);
int counterhal_sampler_open_frequency(counterhal_t *ch, const char *event, uint64_t hz,
                                      uint32_t fields, size_t ring_pages,
                                      counterhal_sampler_t **out);
int counterhal_sampler_start(counterhal_sampler_t *s);
/* Stops sampling; the records stay to be read. */
int counterhal_sampler_stop(counterhal_sampler_t *s);
/* Hands each sample recorded since the last read to callback(sample, arg), oldest first, and
 * frees their room in the ring: the number handed (>= 0), or < 0. */
int counterhal_sampler_read(counterhal_sampler_t *s, counterhal_sample_fn callback, void *arg);
/* The samples the kernel could not write since the open (the ring was full: read it more
 * often or give it more pages); COUNTERHAL_ENOSUPP before Linux 6.0. */
int counterhal_sampler_lost(counterhal_sampler_t *s, uint64_t *lost);
/* The event's count so far (every event, not only those sampled). */
int counterhal_sampler_count(counterhal_sampler_t *s, uint64_t *count);
/* Calls callback(address, arg) at each overflow (each sample), in a signal handler on the
 * calling thread: PAPI_overflow. Once per sampler. */
int counterhal_sampler_overflow(counterhal_sampler_t *s, counterhal_overflow_fn callback,
                                void *arg);
/* Enables the sampler for `overflows` more overflows, after which it stops itself. */
int counterhal_sampler_refresh(counterhal_sampler_t *s, int overflows);
/* Destroys a sampler (its overflow signals stop first); NULL is a no-op. */
void counterhal_sampler_destroy(counterhal_sampler_t *s);

/* Metrics: formulas over events by name, as counterhal stat -M, list --metrics and serve --rules
 * know them (one evaluator for all): the CPU model's (Intel perfmon's, the kernel's AMD
 * tables: the handle's model, counterhal_open_with's cpu_model) and the portable ones (IPC,
 * CPI, CPUs_utilized, page_faults_per_second, branch_miss_rate, ...); names and groups
 * comma-separated ("IPC,TopdownL1"), `counterhal list --metrics` lists them. A set opens the
 * events they read as one group on a COUNTERHAL_TARGET_* (as counterhal_set_create_for),
 * disabled; each read gives every metric's value from the events' scaled readings
 * (value x enabled / running) over the seconds the set was enabled (duration_time). An
 * unknown name is COUNTERHAL_EINVAL naming the nearest; a metric whose event does not count
 * here is refused by the metric's name and the event's. Used by one thread at a time. A
 * library built without its metrics feature refuses every metric call with
 * COUNTERHAL_ENOSUPP. */
typedef struct counterhal_metrics counterhal_metrics_t; /* opaque */

/* One metric's value: status COUNTERHAL_OK, or COUNTERHAL_ENOCOUNT where it cannot be
 * computed (an event it reads never ran, or a divisor counted 0; value is then 0). */
typedef struct {
    double value; /* scaled as the metric prints it (a share in percent) */
    int status;
} counterhal_metric_value_t;

int counterhal_metrics_open(counterhal_t *ch, const char *names, int target, uint32_t id,
                            const char *cpus, counterhal_metrics_t **out);
/* The events the metrics names read on the handle's CPU model, planned without opening
 * anything (so on any model, PMU or not), written one a line into buf[0..len),
 * NUL-terminated: their number, or < 0. A list longer than len - 1 is written cut and
 * refused with COUNTERHAL_EINVAL, the last error naming the length it needs. */
int counterhal_metrics_events_needed(counterhal_t *ch, const char *names, char *buf,
                                     size_t len);
/* How many metrics the set holds (a group's each), and the name and unit of metric index
 * (NULL if out of range), valid until the set is destroyed. */
int counterhal_metrics_size(counterhal_metrics_t *m);
const char *counterhal_metrics_name(counterhal_metrics_t *m, size_t index);
const char *counterhal_metrics_unit(counterhal_metrics_t *m, size_t index);
/* How many events the set counts, each once, and the name of event index (NULL if out of
 * range), valid until the set is destroyed. */
int counterhal_metrics_event_count(counterhal_metrics_t *m);
const char *counterhal_metrics_event_name(counterhal_metrics_t *m, size_t index);
/* Starts and stops counting (and the clock of duration_time); counts go on from where they
 * stopped. */
int counterhal_metrics_enable(counterhal_metrics_t *m);
int counterhal_metrics_disable(counterhal_metrics_t *m);
/* Reads the events and writes each metric's value into out[0..n); n must be at least
 * counterhal_metrics_size. */
int counterhal_metrics_read(counterhal_metrics_t *m, counterhal_metric_value_t *out, size_t n);
/* The events' readings of the last counterhal_metrics_read into out[0..n) (zero before one);
 * n must be at least counterhal_metrics_event_count. */
int counterhal_metrics_readings(counterhal_metrics_t *m, counterhal_reading_t *out, size_t n);
/* Destroys a metric set; NULL is a no-op. */
void counterhal_metrics_destroy(counterhal_metrics_t *m);

/* Regions: the events of COUNTERHAL_REGION_EVENTS counted per thread between begin and end,
 * accumulated by name; the report (COUNTERHAL_REGION_OUTPUT, COUNTERHAL_REGION_FORMAT=table
 * or json) is written at exit, or now by counterhal_region_report (then not again at exit
 * unless a region ended since). Another format is COUNTERHAL_EINVAL from
 * counterhal_region_report, with the report written as a table. */
int counterhal_region_begin(const char *name);
int counterhal_region_end(const char *name);
int counterhal_region_report(void);

#ifdef __cplusplus
}
#endif

#endif /* COUNTERHAL_H */
