            (stat)
_arguments "${_arguments_options[@]}" : \
'*-e+[Events to count, comma-separated or repeated (default\: perf stat'\''s set); a comma inside a PMU event'\''s \`/.../\` or a group'\''s \`{...}\` separates nothing]:EV[,EV...]:_default' \
'*--event=[Events to count, comma-separated or repeated (default\: perf stat'\''s set); a comma inside a PMU event'\''s \`/.../\` or a group'\''s \`{...}\` separates nothing]:EV[,EV...]:_default' \
'--backend=[The backend (a name \`counterhal info\` lists); default\: the first that works here]:BACKEND:_default' \
'--cpu-model=[CPU model from the event database instead of the detected one\: an id (e.g. p6, skl, amd64_fam19h_zen3) or perf'\''s signature Vendor-Family-Model\[-Stepping\] (GenuineIntel-6-8F-8, AuthenticAMD-26-2-0), detected as this CPU would be; on a hybrid chip, -atom or -core after it names the core (GenuineIntel-6-97-2-atom)]:MODEL:_default' \
'--events=[An events file that adds CPU models or overrides events (also COUNTERHAL_EVENTS)]:FILE:_files' \
'--descriptions=[Descriptions of the CPU model'\''s native events and unit masks, read from perf'\''s JSON event files\: the kernel'\''s tools/perf/pmu-events/arch/x86 directory, one model'\''s directory of it, or a perfmon tree (also COUNTERHAL_DESCRIPTIONS). \`list\` shows them and its PATTERN matches them]:DIR:_files' \
'--sysfs=[Read the PMUs from this sysfs root instead of /sys\: DIR/bus/event_source/devices (and DIR/kernel/tracing), a /sys copied or mounted here (also COUNTERHAL_SYSFS). encode and list open nothing, so another machine'\''s PMUs, aliases, cpumasks, scales and units encode on this one; stat opens on this kernel, so its tree must be this machine'\''s. The CPUs of each open come from the tree'\''s \`cpumask\` and \`cpus\` files; DIR/devices/system/cpu is not read\: encode and list need no other CPU list, and stat counts this machine'\''s. The tree is read as sysfs is\: links are followed only where they stay inside DIR, only regular files of at most 4096 bytes are read, and a scale must be finite and positive; a file that breaks these rules is refused by its path, never shown]:DIR:_files' \
'-p+[Count existing processes (every thread, and what it creates from now on), one or a comma-separated list, while CMD runs, or without CMD until Ctrl-C or --timeout]:PID[,PID]:_default' \
'--pid=[Count existing processes (every thread, and what it creates from now on), one or a comma-separated list, while CMD runs, or without CMD until Ctrl-C or --timeout]:PID[,PID]:_default' \
'-C+[Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3 (\`--cpu\` as in perf; \`--cpu-model\` names the CPU model)]:CPUS:_default' \
'--cpu-list=[Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3 (\`--cpu\` as in perf; \`--cpu-model\` names the CPU model)]:CPUS:_default' \
'--cpu=[Count these CPUs (system wide) while CMD runs, e.g. 0 or 0,2-3 (\`--cpu\` as in perf; \`--cpu-model\` names the CPU model)]:CPUS:_default' \
'-r+[Run the command N times and print the mean (with the spread)]:N:_default' \
'--repeat=[Run the command N times and print the mean (with the spread)]:N:_default' \
'*-M+[Metrics or metric groups to compute, comma-separated\: the CPU model'\''s from the event database (\`counterhal list --metrics\`) and the portable ones (IPC, CPI, CPUs_utilized, branch_miss_rate, cache_miss_rate, TopdownL1...); their events are added]:METRIC[,METRIC]:_default' \
'*--metrics=[Metrics or metric groups to compute, comma-separated\: the CPU model'\''s from the event database (\`counterhal list --metrics\`) and the portable ones (IPC, CPI, CPUs_utilized, branch_miss_rate, cache_miss_rate, TopdownL1...); their events are added]:METRIC[,METRIC]:_default' \
'-I+[Print the counts of every interval of MS milliseconds (at least 10) while counting]:MS:_default' \
'--interval-print=[Print the counts of every interval of MS milliseconds (at least 10) while counting]:MS:_default' \
'--interval-count=[Stop after N intervals (with -I)]:N:_default' \
'--timeout=[Stop counting (and the command) after MS milliseconds (at least 10)]:MS:_default' \
'--plot=[With -I\: draw each event'\''s rate over time to this SVG file]:FILE.svg:_files' \
'-x+[perf'\''s CSV with this separator\: value, unit, event, \[spread,\] time running, percent running, metric value, metric unit (with -I the time first, with -A the CPU)]:SEP:_default' \
'--field-separator=[perf'\''s CSV with this separator\: value, unit, event, \[spread,\] time running, percent running, metric value, metric unit (with -I the time first, with -A the CPU)]:SEP:_default' \
'-o+[Write the results to FILE instead of standard error (where perf writes them too, so that the command'\''s own output stays clean)]:FILE:_files' \
'--output=[Write the results to FILE instead of standard error (where perf writes them too, so that the command'\''s own output stays clean)]:FILE:_files' \
'-D+[Count only from MS milliseconds after the command starts (-1\: start with the events disabled, until --control'\''s \`enable\`)]:MS:_default' \
'--delay=[Count only from MS milliseconds after the command starts (-1\: start with the events disabled, until --control'\''s \`enable\`)]:MS:_default' \
'--control=[Take perf'\''s commands (enable, disable, enable NAME, disable NAME, snapshot, stop, ping) from SPEC, fd\:CTL\[,ACK\] (descriptors) or fifo\:CTL\[,ACK\] (fifos), each acknowledged (\`ack\`) on ACK]:SPEC:_default' \
'--log-fd=[Write the results to this open file descriptor (added to what it holds) instead of standard error]:FD:_default' \
'-t+[Count existing threads (by their thread ids) while CMD runs, or without CMD until Ctrl-C or --timeout]:TID[,TID]:_default' \
'--tid=[Count existing threads (by their thread ids) while CMD runs, or without CMD until Ctrl-C or --timeout]:TID[,TID]:_default' \
'*-G+[With -a or -C\: count the events given before it only while tasks of these cgroups run, the n-th name for the n-th event (one name\: every event; an empty name\: none), each a path under the perf_event (or cgroup2) mount]:NAME[,NAME...]:_default' \
'*--cgroup=[With -a or -C\: count the events given before it only while tasks of these cgroups run, the n-th name for the n-th event (one name\: every event; an empty name\: none), each a path under the perf_event (or cgroup2) mount]:NAME[,NAME...]:_default' \
'*--for-each-cgroup=[With -a or -C\: count every event once per cgroup, only while that cgroup'\''s tasks run (a list with any of {}\[\]()|*+?^\$\: basic regular expressions matched against every cgroup'\''s path, as perf matches them)]:NAME[,NAME...]:_default' \
'*--filter=[Count only the hits of the tracepoint given just before it that FILTER accepts, in the kernel'\''s event-filter syntax (\`fd == 1\`, \`comm ~ "sh*" && count > 64\`); the fields are in /sys/kernel/tracing/events/SUBSYSTEM/EVENT/format]:FILTER:_default' \
'--pre=[Run this shell command before each run (not counted)]:CMD:_default' \
'--post=[Run this shell command after each run (not counted)]:CMD:_default' \
'--per-cache=[With -a or -C\: add up the CPUs that share each cache of a level\: the last level (without a value), or L1 to L4 (\`--per-cache=L2\`)]::LEVEL:_default' \
'--td-level=[With --topdown\: the level, 1 up to the deepest TopdownLN group of the CPU model (0\: 1)]:N:_default' \
'--cputype=[On a hybrid CPU\: count each event on this kind of core alone (\`atom\`, \`core\`, or the PMU'\''s name, \`cpu_atom\`)]:TYPE:_default' \
'--bpf-attr-map=[With -b\: the attr map'\''s path in a BPF file system (perf'\''s default\: /sys/fs/bpf/perf_attr_map)]:PATH:_files' \
'--iostat=[Not implemented\: Intel'\''s uncore I/O stack PMUs]::ARG:_default' \
'--model[Count on the backend'\''s device model, where it has one, instead of its device, fed a steady synthetic workload while CMD runs (per 10 ns of the model'\''s clock\: 4 instructions, 1 branch, 2 cycles)\: what the backend would print here, its multiplexing included. The counts are the model'\''s, not this machine'\''s, and the output says so]' \
'-a[Count every CPU (system wide) while CMD runs, or without CMD until Ctrl-C or --timeout; with -C, the CPUs of -C (as perf'\''s -a -C)]' \
'--all-cpus[Count every CPU (system wide) while CMD runs, or without CMD until Ctrl-C or --timeout; with -C, the CPUs of -C (as perf'\''s -a -C)]' \
'-A[Print per CPU, not added up (with -a or -C; perf'\''s --no-aggr)]' \
'--no-aggr[Print per CPU, not added up (with -a or -C; perf'\''s --no-aggr)]' \
'--no-aggregate[Print per CPU, not added up (with -a or -C; perf'\''s --no-aggr)]' \
'--per-thread[Print per thread of the process (with -p) or of the threads (with -t)]' \
'-j[perf'\''s JSON\: one object per event (and per interval, CPU or thread) per line]' \
'--json-output[perf'\''s JSON\: one object per event (and per interval, CPU or thread) per line]' \
'--json[One JSON document for the whole run\: the command, its times, every event'\''s reading]' \
'-n[Null run\: count no events, print only the times (perf'\''s -n)]' \
'--null[Null run\: count no events, print only the times (perf'\''s -n)]' \
'-q[Print no results (the command'\''s status is still passed on)]' \
'--quiet[Print no results (the command'\''s status is still passed on)]' \
'-B[Group digits in the table (the default; refused with -x, as perf refuses it)]' \
'--big-num[Group digits in the table (the default; refused with -x, as perf refuses it)]' \
'--no-big-num[Do not group digits in the table]' \
'--append[With -o\: add the results to the end of FILE instead of replacing it]' \
'--all-user[Count every event in user space only (\`\:u\` added to each event without a modifier)]' \
'--all-kernel[Count every event in the kernel only (\`\:k\` added to each event without a modifier)]' \
'-i[Count the command'\''s own process, not the processes and threads it creates; with -p the process'\''s threads, not the children they create from now on (with -a or -C it changes nothing\: CPUs count whatever runs on them)]' \
'--no-inherit[Count the command'\''s own process, not the processes and threads it creates; with -p the process'\''s threads, not the children they create from now on (with -a or -C it changes nothing\: CPUs count whatever runs on them)]' \
'-g[Count every event in one group (all together or not at all), as \`{a,b,...}\` would]' \
'--group[Count every event in one group (all together or not at all), as \`{a,b,...}\` would]' \
'*-d[Add perf'\''s detailed events to the default set (L1 data cache and last level cache; -dd also L1 instruction cache and TLBs; -ddd also L1 data prefetches)]' \
'*--detailed[Add perf'\''s detailed events to the default set (L1 data cache and last level cache; -dd also L1 instruction cache and TLBs; -ddd also L1 data prefetches)]' \
'--no-scale[Print raw counts, not scaled for the time an event was multiplexed out]' \
'--scale[Scale counts for multiplexing (the default)]' \
'-v[Say which backend counts each event, and why an event cannot be counted, before the results]' \
'--verbose[Say which backend counts each event, and why an event cannot be counted, before the results]' \
'-S[Call sync before each run (so that dirty pages written back do not land in it)]' \
'--sync[Call sync before each run (so that dirty pages written back do not land in it)]' \
'--per-socket[With -a or -C\: add up the CPUs of each socket]' \
'--per-die[With -a or -C\: add up the CPUs of each die]' \
'--per-core[With -a or -C\: add up the CPUs (hardware threads) of each core]' \
'--per-node[With -a or -C\: add up the CPUs of each NUMA node]' \
'--per-cluster[With -a or -C\: add up the CPUs of each cluster (\`topology/cluster_id\`)]' \
'--summary[With -I\: after the intervals, the whole run as without -I (in -x each line starts with \`summary\`)]' \
'--no-csv-summary[With --summary and -x\: no \`summary\` field before the whole run'\''s lines]' \
'--interval-clear[With -I in the table\: clear the screen before each interval]' \
'--table[With -r in the table\: each run'\''s elapsed time, its distance from the mean and a bar]' \
'--metric-only[Print the metrics alone, one column each (the metric column'\''s and -M'\''s), no counts]' \
'--topdown[Count and print the CPU model'\''s top-down metrics of level 1 (metric group TopdownL1; --td-level picks another), alone, as with --metric-only]' \
'--percore-show-thread[Accepted\: with no \`percore\` event term here (perf'\''s), it changes nothing, as perf'\''s does not without one]' \
'--metric-no-group[Accepted\: no metric'\''s events are grouped here (each is opened on its own)]' \
'--metric-no-merge[Accepted\: every metric'\''s events are counted once, shared between metrics, already]' \
'--no-merge[One line per PMU a PMU event names (each \`uncore_imc_N\` of \`uncore_imc/EV/\`, named \`uncore_imc_N/EV/\`), where by default one line adds them up]' \
'--hybrid-merge[Accepted\: an event counted on a hybrid CPU'\''s core and atom PMUs prints as one line, their counts added up, already]' \
'-b[Counts each event through a BPF program shared with other sessions (perf'\''s and counterhal'\''s) by the attr map pinned at /sys/fs/bpf/perf_attr_map; with --for-each-cgroup\: each cgroup'\''s events summed by a BPF program at every cgroup switch (needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, or root)]' \
'--bpf-counters[Counts each event through a BPF program shared with other sessions (perf'\''s and counterhal'\''s) by the attr map pinned at /sys/fs/bpf/perf_attr_map; with --for-each-cgroup\: each cgroup'\''s events summed by a BPF program at every cgroup switch (needs CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, or root)]' \
'--smi-cost[Not implemented\: the SMI count and cost]' \
'-T[Not implemented\: the transaction events]' \
'--transaction[Not implemented\: the transaction events]' \
'-h[Print help]' \
'--help[Print help]' \
'*::command -- The command to run\: after `--`, or from the first word that is not an option (as perf stops reading options there\: `stat -e page-faults ls -d /` runs `ls -d /`). A first word `record` is perf'\''s `stat record` (the counts written to `-o`, perf.data by default, `-` for a pipe, as perf'\''s stat records), `report` its `stat report -i FILE`:_default' \
&& ret=0