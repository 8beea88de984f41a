//! pctr(1)'s names for P6 events where they differ from the event database's.
//!
//! The P6 table follows the 1996 pctr(1) and the seed pctr(4) man page. The pctr(1) of 2007
//! on names 0x43 `DATA_MEM_REF` (the table says `DATA_MEM_REFS`) and lists 0x44
//! `DATA_MEM_CACHE_REF`, which the table lacks. The backend accepts both spellings: a name
//! the P6 table does not know is looked up here and resolved in the table's spelling (0x44 as
//! the raw code `r0044`), with its modifiers and PMU prefix kept.

/// (pctr(1)'s name, what the P6 table resolves in its place).
pub(crate) const PCTR1_P6_NAMES: [(&str, &str); 2] = [
    ("DATA_MEM_REF", "DATA_MEM_REFS"),
    ("DATA_MEM_CACHE_REF", "r0044"),
];

/// `event` with a pctr(1) P6 name replaced by the table's spelling (case-insensitive, the
/// `pmu::` prefix and `:modifiers` kept), or `None` when its name is none of pctr(1)'s.
pub(crate) fn pctr1_p6_spelling(event: &str) -> Option<String> {
    let (prefix, rest) = match event.find("::") {
        Some(at) => event.split_at(at + 2),
        None => ("", event),
    };
    let (name, modifiers) = match rest.find(':') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    PCTR1_P6_NAMES
        .iter()
        .find(|(pctr1, _)| pctr1.eq_ignore_ascii_case(name))
        .map(|(_, ours)| format!("{prefix}{ours}{modifiers}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pctr1_names_become_the_tables() {
        assert_eq!(
            pctr1_p6_spelling("DATA_MEM_REF").as_deref(),
            Some("DATA_MEM_REFS")
        );
        assert_eq!(
            pctr1_p6_spelling("p6::data_mem_ref:u:c=1").as_deref(),
            Some("p6::DATA_MEM_REFS:u:c=1")
        );
        assert_eq!(
            pctr1_p6_spelling("DATA_MEM_CACHE_REF:k").as_deref(),
            Some("r0044:k")
        );
        assert_eq!(pctr1_p6_spelling("DATA_MEM_REFS"), None);
        assert_eq!(pctr1_p6_spelling("INST_RETIRED:u"), None);
        assert_eq!(pctr1_p6_spelling(""), None);
        assert_eq!(pctr1_p6_spelling("::"), None);
    }
}
