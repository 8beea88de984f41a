# The aarch64 lab's readable summary of target/arm-lab/report.json (jq -r -f summary.jq).

# A failure's text, shortened: the lines that say what failed (a panic, a FAIL line of the
# conformance suite, an assertion) or, when none does, its first lines.
def gist:
  split("\n") as $lines
  | [$lines[] | select(test("panicked at|^FAIL |assertion|left:|right:"))] as $telling
  | (if ($telling | length) > 0 then
       [$lines | to_entries[] | select(.value | test("panicked at")) | .key] as $panics
       | if ($panics | length) > 0 then $lines[$panics[0]:$panics[0] + 4] else $telling end
     else $lines end)
  | map(select(length > 0 and (test("^note: run with") | not)))
  | .[:8] | map("      " + .[:300]) | join("\n");

"== aarch64 lab: \(if .ok then "PASSED" else "FAILED" end) ==",
(.machine[]? | "   \(.)"),
"-- test binaries (libtest's passed / failed / ignored; skips logged through the skip door)",
(.tests[] | "   \(.binary): \(.passed | length) passed, \(.failed | length) failed, "
            + "\(.ignored | length) ignored, \(.skipped | length) skips (exit status \(.status))"),
(if .stopped_early then "   (stopped at the first failing binary; --keep-going runs them all)"
 else empty end),
"-- counterhal check --json in the guest (exit status \(.check.status))",
(.check.report.reports[]?
 | "   \(.backend)/\(.device): " + ([.cases[].result] | group_by(.)
     | map("\(length) \(.[0])") | join(", "))),
(.check.report.reports[]? | "\(.backend)/\(.device)" as $subject | .cases[]
 | select(.result == "fail") | "   FAIL \($subject) \(.case): \(.reason)"),
"-- the hardware lab on loop.c, counted from exec (scripts/hw-lab: counterhal stat -x, vs perf stat -x,; exit status \(.hw_lab.status))",
(.hw_lab.lines[] | select(test("^hw-lab (equal|close|absent|FAIL|summary)")) | "   " + ltrimstr("hw-lab ")),
"-- exact counts of loop.c",
(.exact_counts[] | "   \(.event): counterhal \(.counterhal), perf \(.perf)"
   + (if .expected then ", expected \(.expected)" else "" end)
   + (if .equal then ": equal" else ": DIFFERENT" end)),
"-- Arm native names on loop.c (detected CPU, --cpu-model, perf) vs counterhal's generic count",
(.native_counts[] | "   \(.event) (\(.how)): \(.count), \(.generic) \(.generic_count)"
   + (if .equal then ": equal" else ": DIFFERENT\n" + (.output | split("\n") | .[:4] | map("      " + .) | join("\n")) end)),
"-- PAPI's tests: real PAPI 7.0 (Debian's arm64) and counterhal's libpapi (papi/ctests/run, exit status \(.papi.status))",
(.papi.tests | map(.real) | group_by(.) | map("\(length) \(.[0])") | join(", ")
 | "   real PAPI: \(.)"),
(.papi.tests | map(.ours) | group_by(.) | map("\(length) \(.[0])") | join(", ")
 | "   counterhal: \(.)"),
(.papi.tests[] | "   \(.test): \(.real) \(.ours)"
   + (if .expected and .expected != .ours then " (expected \(.expected))" else "" end)),
(.papi.problems[] | "   PROBLEM \(.)"),
(.papi.tests[] | select(.log) | "   \(.test) with counterhal:\n"
   + (.log | split("\n") | .[-8:] | map("      " + .[:300]) | join("\n"))),
"-- failing tests",
(.tests[] | .binary as $binary | .failed[]
 | "   \($binary) \(.name):\n" + (.message | gist)),
"-- skips",
(.tests[] | .binary as $binary | .skipped[]
 | "   \($binary) \(.test) [\(.need)]: \(.reason)"),
(if .guest_finished then empty else "   the guest did not finish (status \(.guest_status))" end)
