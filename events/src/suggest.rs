//! Nearest-name suggestions for unknown names.

/// The edit distance between two ASCII-case-folded strings.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<u8> = a.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<u8> = b.bytes().map(|c| c.to_ascii_lowercase()).collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            current[j + 1] = (previous[j] + cost)
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// Names longer than this get no suggestions: no event name is this long, and the edit
/// distance costs time proportional to the name's length times each candidate's.
pub const MAX_SUGGESTED_NAME_LEN: usize = 128;

/// Up to `limit` candidates nearest to `name`, nearest first; only plausible ones (a small
/// edit distance, or containing the name). Empty for names longer than
/// [`MAX_SUGGESTED_NAME_LEN`].
pub fn nearest(
    name: &str,
    mut candidates: impl Iterator<Item = String>,
    limit: usize,
) -> Vec<String> {
    nearest_of(name, &mut candidates, limit)
}

/// [`nearest`] compiled once, whatever iterator its caller has.
fn nearest_of(
    name: &str,
    candidates: &mut dyn Iterator<Item = String>,
    limit: usize,
) -> Vec<String> {
    if name.len() > MAX_SUGGESTED_NAME_LEN {
        return Vec::new();
    }
    let lower = name.to_ascii_lowercase();
    let budget = (name.len() * 2 / 5).max(2);
    let mut scored: Vec<(usize, String)> = candidates
        .filter_map(|candidate| {
            let d = distance(name, &candidate);
            let contains = lower.len() >= 4 && candidate.to_ascii_lowercase().contains(&lower);
            (d <= budget || contains)
                .then_some((if contains { d.min(budget) } else { d }, candidate))
        })
        .collect();
    // Unstable is enough: two equal (distance, name) pairs are the same pair.
    scored.sort_unstable();
    scored.dedup_by(|a, b| a.1.eq_ignore_ascii_case(&b.1));
    scored.into_iter().take(limit).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_typos() {
        let names = ["INST_RETIRED", "INST_DECODER", "L2_RQSTS", "cycles"].map(String::from);
        assert_eq!(
            nearest("INST_RETIRD", names.clone().into_iter(), 3)[0],
            "INST_RETIRED"
        );
        assert_eq!(
            nearest("cycels", names.clone().into_iter(), 3),
            vec!["cycles"]
        );
        assert!(nearest("zzzzzzzz", names.clone().into_iter(), 3).is_empty());
        // Past the cap nothing is tried, even a candidate one edit away.
        let long = "a".repeat(MAX_SUGGESTED_NAME_LEN + 1);
        let near = vec![format!("{long}b")];
        assert!(nearest(&long, near.into_iter(), 3).is_empty());
        let short = "a".repeat(MAX_SUGGESTED_NAME_LEN);
        let near = vec![format!("{short}b")];
        assert_eq!(nearest(&short, near.into_iter(), 3).len(), 1);
        assert_eq!(distance("abc", "ABD"), 1);
    }
}
