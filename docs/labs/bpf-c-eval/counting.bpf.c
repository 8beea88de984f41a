// The BPF mode's counting program at sched_switch (backend-linux/src/bpf_cgroup/program.rs,
// Run::Switch), written in C for the evaluation in docs/bpf.md (the figures in
// x86-2cpu-per-switch.txt were measured with the adoption below keeping no entry for a
// child of a parent at 2 levels; the fix adds one branch, outside the path measured): each event's difference on
// this CPU since the previous switch, added to every followed cgroup among the switched-out
// task's ancestors, adopting a new child where its parent adopts.
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_EVENTS 16
#define MAX_LEVELS 64
#define EVERY_LEVEL 255

struct reading { __u64 value, enabled, running; };
struct sums { struct reading r[MAX_EVENTS]; };

// Set by the loader before load (libbpf's .rodata): the events and the map's stride.
#ifndef EVENTS
#define EVENTS 1
#endif
const volatile __u32 num_events = EVENTS;
const volatile __u32 stride = 1;

struct { __uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY); __uint(key_size, 4); __uint(value_size, 4); __uint(max_entries, MAX_EVENTS * 512); } events SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); __type(key, __u32); __type(value, struct reading); __uint(max_entries, MAX_EVENTS); } previous SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_PERCPU_HASH); __type(key, __u64); __type(value, struct sums); __uint(max_entries, 1024); } cgroups SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __type(key, __u32); __type(value, __u32); __uint(max_entries, 1); } levels SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __type(key, __u64); __type(value, __u8); __uint(max_entries, 1024); } adopting SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __type(key, __u64); __type(value, __u8); __uint(max_entries, 1024); } refused SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __type(key, __u32); __type(value, struct sums); __uint(max_entries, 1); } zeros SEC(".maps");

static struct sums *adopt(__u64 *id, __u64 *parent)
{
	__u32 zero = 0;
	__u8 *parents, child;
	struct sums *empty;

	if (bpf_map_lookup_elem(&refused, id))
		return 0;
	parents = bpf_map_lookup_elem(&adopting, parent);
	if (!parents)
		return 0;
	empty = bpf_map_lookup_elem(&zeros, &zero);
	if (!empty)
		return 0;
	bpf_map_update_elem(&cgroups, id, empty, BPF_NOEXIST);
	// The child adopts one level fewer than its parent (every level kept), none below 2.
	child = *parents;
	if (child == EVERY_LEVEL || child >= 2) {
		if (child != EVERY_LEVEL)
			child--;
		bpf_map_update_elem(&adopting, id, &child, BPF_NOEXIST);
	}
	return bpf_map_lookup_elem(&cgroups, id);
}

SEC("raw_tracepoint/sched_switch")
int ch_cgroup_switch(void *ctx)
{
	struct reading diff[MAX_EVENTS] = {};
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0, *depth;
	__u64 parent = 0;

	for (__u32 e = 0; e < MAX_EVENTS && e < num_events; e++) {
		struct bpf_perf_event_value now;
		struct reading *before;
		__u32 key = e;

		if (bpf_perf_event_read_value(&events, e * stride + cpu, &now, sizeof(now)))
			continue;
		before = bpf_map_lookup_elem(&previous, &key);
		if (!before)
			continue;
		diff[e].value = now.counter - before->value;
		diff[e].enabled = now.enabled - before->enabled;
		diff[e].running = now.running - before->running;
		before->value = now.counter;
		before->enabled = now.enabled;
		before->running = now.running;
	}
	depth = bpf_map_lookup_elem(&levels, &zero);
	if (!depth)
		return 0;
	for (int level = 0; level < MAX_LEVELS && level < *depth; level++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		struct sums *sums;

		if (!id)
			break;
		sums = bpf_map_lookup_elem(&cgroups, &id);
		if (!sums)
			sums = adopt(&id, &parent);
		if (sums) {
			for (__u32 e = 0; e < MAX_EVENTS && e < num_events; e++) {
				sums->r[e].value += diff[e].value;
				sums->r[e].enabled += diff[e].enabled;
				sums->r[e].running += diff[e].running;
			}
		}
		parent = id;
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
