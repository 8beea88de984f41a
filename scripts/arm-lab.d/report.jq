# The aarch64 lab's report, from the guest's console (scripts/arm-lab.d/init prints its
# sections between `@@lab` markers).
#   jq -n --rawfile console FILE --argjson iterations N --argjson guest_status S \
#      --rawfile papi_expected EXPECTED --arg papi_must_pass "TEST..." --argjson diagnostic 0|1 \
#      --arg papi_run "TEST..." -f report.jq
# Per test binary: its libtest results (passed, failed with the failure's text, ignored), the
# skips it logged through the skip door (need, test, reason) and its exit status; the guest's
# `counterhal check --json`; the hardware lab's counts of counterhal and perf on loop.c
# (scripts/hw-lab: every event equal, the exact instructions, the native names); PAPI's own tests
# with Debian's PAPI and ours (papi/ctests/run's `TEST REAL OURS` lines), judged as
# papi/tests/suite.rs judges them: a test that passes with real PAPI must pass with ours,
# nothing may fail with ours that real PAPI skips, nothing may do worse than EXPECTED
# (papi/ctests/expected-aarch64.txt) records (for the tests papi_run lists: the guest was
# asked to run them), and the tests named in papi_must_pass must pass.
# A diagnostic run (scripts/arm-lab --papi-only or --papi-tests: part of the lab) never passes.

# The console as sections: {head: the marker's words, body: the lines up to the next marker}.
def sections:
  reduce (split("\n")[]) as $line ({sections: [], current: null};
    if ($line | startswith("@@lab ")) then
      (if .current then .sections += [.current] else . end)
      | .current = {head: ($line | ltrimstr("@@lab ")), body: []}
    elif .current then .current.body += [$line]
    else . end)
  | .sections + (if .current then [.current] else [] end);

# libtest's one line per test: `test NAME ... ok|FAILED|ignored[, reason]` (what a child
# process printed may come before the verdict on the same line).
def results:
  [.[] | capture("^test (?<name>.+?) \\.\\.\\. .*?(?<verdict>ok|FAILED|ignored(, .*)?)$")?];

# libtest's failure texts: the lines after `---- NAME stdout ----`, up to the next such line or
# the closing `failures:` list.
def failure_texts:
  reduce .[] as $line ({name: null, texts: {}, done: false};
    if .done then .
    elif ($line | test("^---- .+ stdout ----$")) then
      ($line | capture("^---- (?<name>.+) stdout ----$").name) as $name
      | .name = $name | .texts[$name] = []
    elif ($line == "failures:" and .name != null) then .done = true
    elif .name != null then .texts[.name] += [$line]
    else . end)
  | .texts | map_values(join("\n") | sub("^\\s+"; "") | sub("\\s+$"; ""));

# A verdict's rank, as papi/tests/suite.rs ranks them.
def rank: if . == "PASSED" or . == "WARNED" then 2 elif . == "SKIPPED" then 1 else 0 end;

def status_of($section): $section.head | capture("^status (?<n>[0-9]+)").n | tonumber;

($console | sections) as $sections
| [range(0; $sections | length) as $i | select($sections[$i].head | startswith("test "))
   | $sections[$i] as $test
   | ($sections[$i + 1] // {head: "", body: []}) as $skips
   | ($sections[$i + 2] // {head: "", body: []}) as $closing
   | ($test.body | results) as $results
   | ($test.body | failure_texts) as $texts
   | ((try status_of($closing) catch null)) as $status
   | {
       binary: ($test.head | ltrimstr("test ")),
       status: $status,
       passed: [$results[] | select(.verdict == "ok") | .name],
       failed: [$results[] | select(.verdict == "FAILED")
                | {name, message: ($texts[.name] // "")}],
       ignored: [$results[] | select(.verdict | startswith("ignored")) | .name],
       skipped: [$skips.body[] | select(length > 0) | split("\t")
                 | {need: .[0], test: .[1], reason: .[2]}],
       finished: any($test.body[]; startswith("test result: "))
     }
   # A binary that died (a signal, the time limit) or failed without a failing test: its end.
   | if (.status != 0 and (.failed | length) == 0) then
       .failed = [{name: "(the binary)",
                   message: ("exit status \(.status); its last lines:\n"
                            + ($test.body | .[-15:] | join("\n")))}]
     else . end
  ] as $tests
| ([$sections[] | select(.head == "check")] | first) as $check_text
| ([range(0; $sections | length) as $i | select($sections[$i].head == "check-json")
    | {json: ($sections[$i].body | join("\n") | try fromjson catch null),
       status: (try status_of($sections[$i + 1]) catch null)}] | first) as $check
# The hardware lab (scripts/hw-lab): its verdict lines, its exit status, and from them the
# exact counts (`hw-lab exact EVENT counterhal=N perf=N expected=N equal|DIFFERENT`) and the
# native names (`hw-lab native HOW NAME GENERIC count=N generic=N equal|DIFFERENT`).
| ([range(0; $sections | length) as $i | select($sections[$i].head == "hw-lab")
    | {lines: [$sections[$i].body[] | select(startswith("hw-lab "))],
       output: ($sections[$i].body | map(select(length > 0)) | join("\n")),
       status: (try status_of($sections[$i + 1]) catch null)}] | first
   // {lines: [], output: "", status: null}) as $hw_lab
| [$hw_lab.lines[]
   | capture("^hw-lab exact (?<event>\\S+) counterhal=(?<c>\\S+) perf=(?<p>\\S+) expected=(?<e>\\S+) (?<v>equal|DIFFERENT)$")?
   | {event, counterhal: (.c | tonumber? // null), perf: (.p | tonumber? // null),
      expected: (.e | tonumber? // null), equal: (.v == "equal")}] as $exact
| [$hw_lab.lines[]
   | capture("^hw-lab native (?<how>\\S+) (?<event>\\S+) (?<generic>\\S+) count=(?<count>\\S+) generic=(?<g>\\S+) (?<v>equal|DIFFERENT)$")?
   | {how, event, generic, count: (.count | tonumber? // null),
      generic_count: (.g | tonumber? // null), equal: (.v == "equal"), output: ""}] as $native
# PAPI's tests: the verdicts, each judged.
| ([$sections[] | select(.head == "papi")] | first) as $papi_section
| ([range(0; $sections | length) as $i | select($sections[$i].head == "papi")
    | (try status_of($sections[$i + 1]) catch null)] | first) as $papi_status
| ([$papi_expected | split("\n")[] | select(length > 0 and (startswith("#") | not))
    | split(" ") | select(length == 3) | {key: .[0], value: .[2]}] | from_entries)
  as $expected
| [range(0; $sections | length) as $i | select($sections[$i].head | startswith("papi-log "))
   | {key: ($sections[$i].head | ltrimstr("papi-log ")),
      value: ($sections[$i].body | map(select(length > 0)) | join("\n"))}] | from_entries
  as $papi_logs
# Excused: a test that fails with ours where real PAPI skips or passes, because of PAPI's test
# itself or the emulated core (`excused TEST: TEXT`, with the evidence in the file's comments):
# allowed only while the test's log with ours says TEXT, the failure the excuse explains.
| ([$papi_expected | split("\n")[] | capture("^excused (?<test>[^:]+): (?<text>.+)$")?
    | {key: .test, value: .text}] | from_entries) as $excused
| ($papi_must_pass | split(" ") | map(select(length > 0))) as $must_pass
| [($papi_section.body // [])[]
   | capture("^(?<test>[a-z_]+/[A-Za-z0-9_-]+) (?<real>[A-Z]+) (?<ours>[A-Z]+)$")?]
  as $papi_results
| ($papi_results | map({key: .test, value: .}) | from_entries) as $papi_by_test
| [$papi_results[]
   | .test as $test | .real as $real | .ours as $ours
   | ($excused[$test] != null and $ours == "FAILED"
      and (($papi_logs[$test] // "") | contains($excused[$test]))) as $is_excused
   | (if ($real | rank) == 2 and ($ours | rank) < 2 and ($is_excused | not) then
        "\($test): real PAPI \($real), ours \($ours)"
          + (if $excused[$test] then " (excused only with \"\($excused[$test])\" in its log)" else "" end)
      elif $real == "SKIPPED" and ($ours | rank) == 0 and ($is_excused | not) then
        "\($test): real PAPI skips, ours \($ours)"
          + (if $excused[$test] then " (excused only with \"\($excused[$test])\" in its log)" else "" end)
      else empty end),
     (if $expected[$test] and ($ours | rank) < ($expected[$test] | rank) then
        "\($test): \($ours), expected \($expected[$test])"
      else empty end),
     (if any($must_pass[]; . == $test) and ($ours | rank) < 2 then
        "\($test): \($ours), must pass on real counters"
      else empty end)]
  as $papi_verdict_problems
| (if $diagnostic == 1 then ["a diagnostic run (--papi-only or --papi-tests) never passes"]
   else [$expected | keys[] | select($papi_by_test[.] | not)
         | select(. as $t | $papi_run | split(" ") | any(. == $t))
         | "\(.): expected, not run"]
        + [$must_pass[] | select($papi_by_test[.] | not) | "\(.): must pass, not run"]
   end | unique) as $papi_missing
| {
    machine: ([$sections[] | select(.head == "machine")] | first | .body
              | map(select(length > 0))),
    guest_status: $guest_status,
    guest_finished: any($sections[]; .head == "done"),
    stopped_early: any($sections[]; .head | startswith("stopped")),
    tests: $tests,
    check: {
      status: $check.status,
      output: ($check_text.body // [] | join("\n")),
      report: $check.json
    },
    hw_lab: $hw_lab,
    exact_counts: $exact,
    native_counts: $native,
    papi: {
      status: $papi_status,
      tests: [$papi_results[] | . + {expected: $expected[.test], log: $papi_logs[.test]}],
      problems: ($papi_verdict_problems + $papi_missing
                 + (if $papi_status == 0 then [] else ["papi/ctests/run: exit status \($papi_status)"] end))
    }
  }
| .ok = (.guest_status == 0 and .guest_finished
         and all(.tests[]; .status == 0 and (.failed | length) == 0)
         and .check.status == 0
         and .hw_lab.status == 0
         and (.exact_counts | length) > 0 and all(.exact_counts[]; .equal)
         and (.native_counts | length) > 0 and all(.native_counts[]; .equal)
         and (.papi.tests | length) > 0 and (.papi.problems | length) == 0)
