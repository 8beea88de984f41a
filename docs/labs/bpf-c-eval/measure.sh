#!/bin/bash
# Run from this directory, as root, after
#   clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c counting.bpf.c -o counting.bpf.o
#   a loader built against aya 0.13 (docs/bpf.md says what it does: not kept here) at
#   aya-loader/target/release/aya-eval, and cargo build in the repository.
# Cost per switch of the C counting program (loaded by aya) and of ours (counterhal serve's
# BPF mode), each alone at sched_switch, following one cgroup running perf's pipe benchmark.
set -e
CG=/sys/fs/cgroup/unified/ch-eval
mkdir -p $CG
sysctl -q kernel.bpf_stats_enabled=1
names2="cpu-clock,task-clock"
names8="cpu-clock,task-clock,page-faults,context-switches,cpu-migrations,minor-faults,major-faults,alignment-faults"
stat() { bpftool -j prog show | python3 -c "
import json,sys
for d in json.load(sys.stdin):
    if d.get('name') in ('ch_cgroup_switch','ch_cgroup_swtch'):
        print('%s %s runs %d ns/run %.1f' % ('$1', d['name'], d.get('run_cnt',0), d.get('run_time_ns',0)/max(1,d.get('run_cnt',1))))"; }
work() { sh -c "echo \$\$ > $CG/cgroup.procs; exec perf bench sched pipe -l 200000" > /dev/null; }
for n in 2 8; do
  for round in 1 2 3; do
    aya-loader/target/release/aya-eval counting.bpf.o $n $CG 30 > /tmp/aya.out & a=$!
    until grep -q attached /tmp/aya.out 2>/dev/null; do sleep 0.1; done
    work; stat "C-aya events=$n round=$round"; kill $a; wait $a 2>/dev/null || true
    names=names$n
    ../../../target/debug/counterhal serve --listen 127.0.0.1:0 -e ${!names} --cgroups '^ch-eval$' --cgroup-mode bpf 2>/tmp/serve.err & s=$!
    sleep 1.5
    work; stat "ours events=$n round=$round"; kill $s; wait $s 2>/dev/null || true
  done
done
sysctl -q kernel.bpf_stats_enabled=0
rmdir $CG
