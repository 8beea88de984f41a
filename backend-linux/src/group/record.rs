//! The record a `read` of a perf event descriptor returns, decoded into [`Reading`]s: a
//! group's (`PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`:
//! `nr, enabled, running, {value, id}*`) and one event's (`value, enabled, running, id`).
//! The kernel writes them in `perf_read_group` and `perf_read_one` (kernel/events/core.c).

use counterhal_hal::{Error, ErrorKind, Reading, Result};

/// Parses one `PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read of
/// `bytes` bytes in `words` into `readings`, matching each value to its event by id.
///
/// # Errors
/// [`ErrorKind::NotCounted`] for a zero-byte read (a pinned group in error state);
/// [`ErrorKind::Other`] when the record is short, its count differs from the group's, or an id
/// is unknown.
#[inline(always)]
pub(super) fn parse_group_read(
    words: &[u64],
    bytes: usize,
    ids: &[u64],
    slots: &[usize],
    readings: &mut [Reading],
) -> Result<()> {
    let n = ids.len();
    let needed = 3 + 2 * n;
    if bytes < needed * 8 || words.len() < needed || words[0] != n as u64 {
        return Err(malformed_group_read(words, bytes, n));
    }
    let (time_enabled, time_running) = (words[1], words[2]);
    let pairs = words[3..needed].chunks_exact(2);
    for ((pair, &expected), &slot) in pairs.zip(ids).zip(slots) {
        let (value, id) = (pair[0], pair[1]);
        // The kernel lists the leader then members in attach order, so position k usually
        // holds ids[k]; the id decides either way.
        let slot = if expected == id {
            slot
        } else {
            slot_of(id, ids, slots).ok_or_else(|| unknown_id(id))?
        };
        let Some(out) = readings.get_mut(slot) else {
            return Err(slot_outside(slot));
        };
        *out = Reading {
            value,
            time_enabled,
            time_running,
        };
    }
    Ok(())
}

/// The events a group record of `words` holds (`nr, enabled, running`, then a
/// `[value, id]` pair per event); `None` for fewer words than its head.
#[inline(always)]
pub(super) fn events_in(words: &[u64]) -> Option<usize> {
    let (_, pairs) = words.split_first_chunk::<3>()?;
    Some(pairs.len() / 2)
}

/// Decodes the group read of `bytes` bytes in `words` (exactly one record long) of a group
/// whose events the kernel lists in request order into `readings`, one per event (as many
/// as [`events_in`] counts), as [`parse_group_read`] does for such a group; `false` (with
/// `readings` untouched) when the record is not exactly that long or of another count, for
/// [`parse_group_read`] to decode or refuse.
///
/// The ids are not compared: the order was seen at open (by [`lists_in_order`]) and the
/// kernel keeps it. `perf_group_attach` (kernel/events/core.c) appends an event to its
/// leader's sibling list as it opens and nothing reorders that list; an event only leaves
/// it (`perf_group_detach`: its descriptor closed, `remove_on_exec`, its CPU taken offline),
/// and one that leaves or joins changes the record's count and length, which every read
/// checks. Each event then costs a load and its stores.
#[inline(always)]
pub(super) fn decode_in_order(words: &[u64], bytes: usize, readings: &mut [Reading]) -> bool {
    let Some((&[count, time_enabled, time_running], rest)) = words.split_first_chunk::<3>() else {
        return false;
    };
    let (events, _) = rest.as_chunks::<2>();
    let n = events.len();
    if bytes != size_of_val(words) || count != n as u64 {
        return false;
    }
    for (&[value, _id], out) in events.iter().zip(readings) {
        *out = Reading {
            value,
            time_enabled,
            time_running,
        };
    }
    true
}

/// Whether the group read of `bytes` bytes in `words` lists exactly the events `ids`, in
/// that order (what [`decode_in_order`] relies on).
pub(super) fn lists_in_order(words: &[u64], bytes: usize, ids: &[u64]) -> bool {
    let n = ids.len();
    words.get(..3 + 2 * n).is_some_and(|record| {
        bytes == size_of_val(record)
            && record[0] == n as u64
            && record[3..]
                .chunks_exact(2)
                .map(|pair| pair[1])
                .eq(ids.iter().copied())
    })
}

/// [`parse_group_read`] out of line: the in-order read's way out for a record it does not
/// decode (an error, or ids out of place).
#[cold]
#[inline(never)]
pub(super) fn parse_group_read_cold(
    words: &[u64],
    bytes: usize,
    ids: &[u64],
    slots: &[usize],
    readings: &mut [Reading],
) -> Result<()> {
    parse_group_read(words, bytes, ids, slots, readings)
}

/// Why a group read of `bytes` bytes in `words` is not a record of `n` events.
#[cold]
#[inline(never)]
fn malformed_group_read(words: &[u64], bytes: usize, n: usize) -> Error {
    let needed = (3 + 2 * n) * 8;
    if bytes == 0 {
        return not_counted();
    }
    if bytes < needed || words.len() < 3 + 2 * n {
        return Error::new(
            ErrorKind::Other,
            format!("group read returned {bytes} bytes, expected {needed}"),
        );
    }
    Error::new(
        ErrorKind::Other,
        format!("group read reports {} events, the group has {n}", words[0]),
    )
}

#[cold]
#[inline(never)]
fn slot_outside(slot: usize) -> Error {
    Error::new(
        ErrorKind::Other,
        format!("event slot {slot} outside the readings"),
    )
}

#[cold]
fn slot_of(id: u64, ids: &[u64], slots: &[usize]) -> Option<usize> {
    ids.iter().position(|known| *known == id).map(|i| slots[i])
}

#[cold]
fn unknown_id(id: u64) -> Error {
    Error::new(
        ErrorKind::Other,
        format!("group read has unknown event id {id}"),
    )
}

/// Parses one `ID | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING` read (no group format).
pub(super) fn parse_single_read(words: &[u64], bytes: usize, id: u64) -> Result<Reading> {
    if bytes == 0 {
        return Err(not_counted());
    }
    if bytes < 32 || words.len() < 4 {
        return Err(Error::new(
            ErrorKind::Other,
            format!("read returned {bytes} bytes, expected 32"),
        ));
    }
    if words[3] != id {
        return Err(Error::new(
            ErrorKind::Other,
            format!("read returned event id {}, expected {id}", words[3]),
        ));
    }
    Ok(Reading {
        value: words[0],
        time_enabled: words[1],
        time_running: words[2],
    })
}

fn not_counted() -> Error {
    Error::new(
        ErrorKind::NotCounted,
        "the read returned no data: the group is in error state",
    )
    .with_hint(
        "a pinned group that could not be scheduled stays in error until re-enabled; open it \
             unpinned to let the kernel multiplex it",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_read_matches_by_id_not_position() {
        // The kernel lists ids 30, 10, 20; the caller's order is 10, 20, 30.
        let words = [3, 1_000, 900, 333, 30, 111, 10, 222, 20];
        let ids = [10, 20, 30];
        let slots = [0, 1, 2];
        let mut out = [Reading::default(); 3];
        parse_group_read(&words, words.len() * 8, &ids, &slots, &mut out).unwrap();
        assert_eq!(out[0], Reading::new(111, 1_000, 900));
        assert_eq!(out[1], Reading::new(222, 1_000, 900));
        assert_eq!(out[2], Reading::new(333, 1_000, 900));
        // Slots place readings in request order across kernel groups.
        let mut out = [Reading::default(); 5];
        parse_group_read(&words, 72, &ids, &[4, 0, 2], &mut out).unwrap();
        assert_eq!((out[4].value, out[0].value, out[2].value), (111, 222, 333));
    }

    #[test]
    fn group_read_errors() {
        let mut out = [Reading::default(); 2];
        let e = parse_group_read(&[0; 7], 0, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotCounted);
        let e = parse_group_read(&[2, 0, 0, 5, 1], 40, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert!(e.message().contains("expected 56"), "{e}");
        let e =
            parse_group_read(&[3, 0, 0, 5, 1, 6, 2], 56, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert!(e.message().contains("3 events"), "{e}");
        let e =
            parse_group_read(&[2, 0, 0, 5, 1, 6, 9], 56, &[1, 2], &[0, 1], &mut out).unwrap_err();
        assert!(e.message().contains("unknown event id 9"), "{e}");
    }

    /// A group read as the kernel writes it: events in its order, readings in the caller's.
    #[derive(Debug)]
    struct Record {
        words: Vec<u64>,
        ids: Vec<u64>,
        slots: Vec<usize>,
        want: Vec<Reading>,
    }

    fn record(g: &mut counterhal_conformance::prop::Gen) -> Record {
        let n = 1 + g.index(8);
        // Distinct ids, and slots that are a permutation of 0..n.
        let ids: Vec<u64> = (0..n as u64).map(|i| (g.u64() << 4) | i).collect();
        let mut slots: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            slots.swap(i, g.index(i + 1));
        }
        let (enabled, running) = (g.edgy_u64(), g.edgy_u64());
        let values: Vec<u64> = (0..n).map(|_| g.edgy_u64()).collect();
        // The kernel's order: any permutation of the caller's.
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, g.index(i + 1));
        }
        let mut words = vec![n as u64, enabled, running];
        for &k in &order {
            words.extend([values[k], ids[k]]);
        }
        let mut want = vec![Reading::default(); n];
        for k in 0..n {
            want[slots[k]] = Reading::new(values[k], enabled, running);
        }
        Record {
            words,
            ids,
            slots,
            want,
        }
    }

    #[test]
    fn group_reads_parse_whatever_the_kernels_order() {
        counterhal_conformance::prop::check(
            "parse_group_read matches values to events by id",
            record,
            counterhal_conformance::prop::no_shrink,
            |r| {
                let mut out = vec![Reading::default(); r.want.len()];
                let bytes = r.words.len() * 8;
                parse_group_read(&r.words, bytes, &r.ids, &r.slots, &mut out)
                    .map_err(|e| e.to_string())?;
                (out == r.want).then_some(()).ok_or(format!("read {out:?}"))
            },
        );
    }

    /// A record of a group the kernel lists in request order (ids in request order, slots
    /// `0..n`), as `perf_read_group` writes it.
    fn in_order(g: &mut counterhal_conformance::prop::Gen) -> Record {
        let n = 1 + g.index(8);
        let ids: Vec<u64> = (0..n as u64).map(|i| (g.u64() << 4) | i).collect();
        let (enabled, running) = (g.edgy_u64(), g.edgy_u64());
        let values: Vec<u64> = (0..n).map(|_| g.edgy_u64()).collect();
        let mut words = vec![n as u64, enabled, running];
        for (value, id) in values.iter().zip(&ids) {
            words.extend([*value, *id]);
        }
        Record {
            words,
            ids,
            slots: (0..n).collect(),
            want: values
                .iter()
                .map(|value| Reading::new(*value, enabled, running))
                .collect(),
        }
    }

    /// The in-order decoding of a group the kernel lists in request order reads what the
    /// decoding by id (`parse_group_read`, which matches each value to its event's id) reads.
    #[test]
    fn in_order_records_decode_as_records_read_by_id() {
        counterhal_conformance::prop::check(
            "decode_in_order reads a group in request order as parse_group_read does",
            in_order,
            counterhal_conformance::prop::no_shrink,
            |r| {
                let bytes = r.words.len() * 8;
                if !lists_in_order(&r.words, bytes, &r.ids) {
                    return Err("lists_in_order refuses it".into());
                }
                let mut by_id = vec![Reading::default(); r.want.len()];
                parse_group_read(&r.words, bytes, &r.ids, &r.slots, &mut by_id)
                    .map_err(|e| e.to_string())?;
                let mut decoded = vec![Reading::default(); events_in(&r.words).unwrap()];
                if !decode_in_order(&r.words, bytes, &mut decoded) {
                    return Err("decode_in_order refuses it".into());
                }
                (decoded == by_id && decoded == r.want)
                    .then_some(())
                    .ok_or(format!("decoded {decoded:?}, by id {by_id:?}"))
            },
        );
    }

    /// A record cut short, of another count, or read in another number of bytes than its
    /// length is refused by the in-order decoding, which then leaves the readings as they
    /// were (for `parse_group_read` to refuse or decode the record).
    #[test]
    fn in_order_decoding_refuses_records_of_another_length_or_count() {
        counterhal_conformance::prop::check(
            "decode_in_order refuses a record of another length or count",
            |g| {
                let mut r = in_order(g);
                let len = r.words.len();
                let bytes = match g.index(3) {
                    0 => {
                        r.words.truncate(g.index(len));
                        r.words.len() * 8
                    }
                    1 => {
                        r.words[0] ^= 1 << g.below(64);
                        len * 8
                    }
                    _ => g.index(len * 8),
                };
                (r, bytes)
            },
            counterhal_conformance::prop::no_shrink,
            |(r, bytes)| {
                let marker = Reading::new(7, 7, 7);
                let mut out = vec![marker; events_in(&r.words).unwrap_or(0)];
                if decode_in_order(&r.words, *bytes, &mut out) {
                    return Err(format!("decoded into {out:?}"));
                }
                out.iter()
                    .all(|reading| *reading == marker)
                    .then_some(())
                    .ok_or(format!("refused but wrote {out:?}"))
            },
        );
    }

    /// `lists_in_order` holds exactly when the record lists the group's ids in request order.
    #[test]
    fn lists_in_order_only_for_records_in_request_order() {
        counterhal_conformance::prop::check(
            "lists_in_order holds exactly for records in request order",
            record,
            counterhal_conformance::prop::no_shrink,
            |r| {
                let listed: Vec<u64> = r.words[3..].chunks_exact(2).map(|p| p[1]).collect();
                let expected = listed == r.ids;
                let got = lists_in_order(&r.words, r.words.len() * 8, &r.ids);
                let short = lists_in_order(&r.words, r.words.len() * 8 - 8, &r.ids);
                (got == expected && !short)
                    .then_some(())
                    .ok_or(format!("lists_in_order said {got}, short {short}"))
            },
        );
    }

    #[test]
    fn short_or_garbled_group_reads_are_errors_never_panics() {
        counterhal_conformance::prop::check(
            "parse_group_read refuses short and garbled records",
            |g| {
                let mut r = record(g);
                let cut = g.index(r.words.len());
                let garble = g.index(r.words.len());
                if g.one_in(2) {
                    r.words.truncate(cut);
                } else {
                    r.words[garble] ^= 1 << g.below(64);
                }
                r
            },
            counterhal_conformance::prop::no_shrink,
            |r| {
                let mut out = vec![Reading::default(); r.want.len()];
                let bytes = r.words.len() * 8;
                let short = r.words.len() < 3 + 2 * r.ids.len();
                match parse_group_read(&r.words, bytes, &r.ids, &r.slots, &mut out) {
                    Ok(()) if short => Err(format!("{} words accepted", r.words.len())),
                    // A flipped value or time bit still parses, into what the words say.
                    Ok(()) => Ok(()),
                    Err(e) if !e.message().is_empty() => Ok(()),
                    Err(e) => Err(format!("an error without a message: {e:?}")),
                }
            },
        );
    }

    #[test]
    fn single_read() {
        assert_eq!(
            parse_single_read(&[7, 100, 50, 4], 32, 4).unwrap(),
            Reading::new(7, 100, 50)
        );
        assert_eq!(
            parse_single_read(&[0; 4], 0, 4).unwrap_err().kind(),
            ErrorKind::NotCounted
        );
        assert!(parse_single_read(&[7, 100, 50, 5], 32, 4).is_err());
        assert!(parse_single_read(&[7, 100, 50, 4], 24, 4).is_err());
    }
}
