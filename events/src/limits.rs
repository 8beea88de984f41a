//! What reading a user's file may cost: the bounds an events file and a metrics file are held
//! to, each far above the shipped data (its largest value given beside each) and far below
//! what would exhaust memory or time.
//!
//! The TOML reader keeps a whole document in memory as tokens and tables before the schema
//! sees it, at about 150 bytes a token; a file of 60 MiB took 2.5 GB, and one of blank lines
//! 3 GB. So the text's tokens are counted first, by a pass that keeps nothing, and a file over
//! [`MAX_TOML_TOKENS`] is refused before it is parsed. What a file loads is bounded next: the
//! models it adds or changes, the events and unit masks it loads (a table for several models
//! loads its own into each), the unit masks of an event, the event aliases and the terms of a
//! mapping, whose checks look names up among an event's unit masks.

/// The most TOML tokens (keys, values, brackets, commas, newlines: all but spaces) a file
/// may hold: 18 times the shipped data's largest file (`generated/clx.toml`, 28,656).
pub const MAX_TOML_TOKENS: usize = 1 << 19;

/// The longest string (or other value) a file may hold: 11 times the shipped data's longest
/// (a metric formula of 88,826 bytes, `generated/metrics/icx.toml`).
pub const MAX_TOML_STRING_BYTES: usize = 1 << 20;

/// The most models one events file may add or change (with each id of a list): 10 times the
/// 98 models the library ships.
pub const MAX_FILE_MODELS: usize = 1024;

/// The most events and unit masks one events file may load into models, counting a table
/// for several models once per model: 181 times the shipped data's largest model (`clx`,
/// 1,446).
pub const MAX_FILE_ENTRIES: usize = 1 << 18;

/// The most unit masks one event may have: 4 times the shipped data's most (`clx`'s `OCR`,
/// 1,008).
pub const MAX_UNIT_MASKS: usize = 4096;

/// The most event aliases one `[[cpu]]` table may give: 12 times the shipped data's most
/// (`amd64_fam1ah_zen5`, 337).
pub const MAX_EVENT_ALIASES: usize = 4096;

/// The most terms one mapping's expression may sum: 5 times the 12 of PAPI 7.0's
/// `PAPI_MAX_INFO_TERMS` (a preset in PAPI's form names at most 8 natives, as PAPI's
/// `PAPI_EVENTS_IN_DERIVED_EVENT`).
pub const MAX_MAPPING_TERMS: usize = 64;

/// Why a text is refused before it is parsed: where (a byte offset) and what was too much.
#[cfg(feature = "events-file")]
pub(crate) struct TooLarge {
    pub(crate) offset: usize,
    pub(crate) message: String,
}

/// Counts `text`'s tokens as the TOML reader's own lexer cuts them, keeping nothing: refused
/// at the first token past [`MAX_TOML_TOKENS`] or the first longer than
/// [`MAX_TOML_STRING_BYTES`].
#[cfg(feature = "events-file")]
pub(crate) fn check_tokens(text: &str) -> Result<(), TooLarge> {
    use toml_parser::lexer::TokenKind;
    let mut tokens = 0usize;
    for token in toml_parser::Source::new(text).lex() {
        let span = token.span();
        match token.kind() {
            TokenKind::Whitespace | TokenKind::Eof => continue,
            // A comment is never kept, whatever its length.
            TokenKind::Comment => {}
            _ if span.len() > MAX_TOML_STRING_BYTES => {
                return Err(TooLarge {
                    offset: span.start(),
                    message: format!(
                        "a value of {} bytes, above the limit of {} MiB a value (the shipped \
                         data's longest is 88,826 bytes)",
                        span.len(),
                        MAX_TOML_STRING_BYTES >> 20
                    ),
                });
            }
            _ => {}
        }
        tokens += 1;
        if tokens > MAX_TOML_TOKENS {
            return Err(TooLarge {
                offset: span.start(),
                message: format!(
                    "more than {MAX_TOML_TOKENS} TOML tokens (keys, values, brackets, commas, \
                     newlines; the shipped data's largest file holds 28,656): check that it is \
                     the file meant, or split it"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "events-file"))]
mod tests {
    use super::*;

    /// The lexer's tokens as counted: spaces are not, newlines and comments are (`a = 1`
    /// is three, a blank line one).
    /// Oracle: TOML 1.0's grammar (toml.io), keys, `=`, values and newlines as its tokens.
    #[test]
    fn tokens_are_counted_as_the_reader_cuts_them() {
        let just = "\n".repeat(MAX_TOML_TOKENS);
        assert!(check_tokens(&just).is_ok());
        let over = format!("{just}\n");
        let refused = check_tokens(&over).err().unwrap();
        assert_eq!(refused.offset, MAX_TOML_TOKENS);
        assert!(refused.message.contains("524288"), "{}", refused.message);
        let long = format!("a = \"{}\"", "x".repeat(MAX_TOML_STRING_BYTES));
        let refused = check_tokens(&long).err().unwrap();
        assert_eq!(refused.offset, 4);
        let comment = format!("# {}\na = 1", "x".repeat(MAX_TOML_STRING_BYTES));
        assert!(check_tokens(&comment).is_ok());
    }
}
