//! libpfm4's AMD revisions, read from the snapshot: the order of its revision enumerators
//! (`amd64_rev_t` in `lib/pfmlib_amd64_priv.h`), what each revision flag keeps
//! (`AMD64_FL_K8_REV_D` is `AMD64_FROM_REV(AMD64_K8_REV_D)`, `AMD64_FL_TILL_K8_REV_C` is
//! `AMD64_TILL_REV(AMD64_K8_REV_C)`) and the revision each PMU of a family's source is
//! (`DEFINE_K8_REV(RevB, revb, AMD64_K8_REV_B, ...)` in `lib/pfmlib_amd64_k8.c`). An event or
//! unit mask is kept on a revision as libpfm4's `amd64_event_valid` and `amd64_umask_valid`
//! decide: not before its "from" revision, not after its "till" revision.

use std::collections::BTreeMap;
use std::path::Path;

use crate::GenError;
use crate::cparse::strip_comments;

/// The header holding libpfm4's AMD revision enumerators and flags.
pub const PRIVATE_HEADER: &str = "lib/pfmlib_amd64_priv.h";

/// libpfm4's AMD revision scheme.
#[derive(Clone, Debug, Default)]
pub struct Revisions {
    /// Each revision enumerator (and `#define` alias of one) and its number.
    numbers: BTreeMap<String, u32>,
    /// Each revision flag and the flag bits it stands for: from revision in bits 15:8, till
    /// revision in bits 23:16, as libpfm4 packs them.
    flags: BTreeMap<String, u32>,
}

/// One revision PMU of a family's source: its libpfm4 name and its revision's number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevisionPmu {
    /// libpfm4's PMU name (`amd64_k8_revb`).
    pub name: String,
    /// The revision enumerator it is (`AMD64_K8_REV_B`).
    pub revision: String,
    /// That enumerator's number.
    pub number: u32,
}

impl Revisions {
    /// Reads the enumerators and flags from the snapshot at `root`.
    ///
    /// # Errors
    /// The header cannot be read, or it has no `amd64_rev_t` enumeration, or a flag names a
    /// revision the enumeration lacks.
    pub fn read(root: &Path) -> Result<Revisions, GenError> {
        let path = root.join(PRIVATE_HEADER);
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        Revisions::parse(&text).map_err(|why| GenError::Data(format!("{}: {why}", path.display())))
    }

    /// Parses the header's text.
    ///
    /// # Errors
    /// As [`Revisions::read`], as a sentence.
    pub fn parse(text: &str) -> Result<Revisions, String> {
        let text = strip_comments(text);
        let end = text
            .find("amd64_rev_t;")
            .ok_or("no `amd64_rev_t` enumeration")?;
        let open = text[..end].rfind('{').ok_or("no `amd64_rev_t` body")?;
        let close = text[..end].rfind('}').filter(|c| *c > open);
        let body = &text[open + 1..close.ok_or("no `amd64_rev_t` body")?];
        let mut numbers = BTreeMap::new();
        let mut next = 0u32;
        for item in body.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, number) = match item.split_once('=') {
                Some((name, value)) => {
                    let value = crate::cparse::integer(value)
                        .and_then(|v| u32::try_from(v).ok())
                        .ok_or_else(|| format!("revision `{item}`: not a number"))?;
                    (name.trim(), value)
                }
                None => (item, next),
            };
            numbers.insert(name.to_string(), number);
            next = number + 1;
        }
        let mut flags = BTreeMap::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            if words.next() != Some("#define") {
                continue;
            }
            let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            if let Some(&number) = numbers.get(value) {
                // `#define AMD64_FAM10H AMD64_FAM10H_REV_B`: another name of a revision.
                numbers.insert(name.to_string(), number);
                continue;
            }
            let packed = |inner: &str, shift: u32| -> Result<Option<u32>, String> {
                let Some(rest) = value.strip_prefix(inner) else {
                    return Ok(None);
                };
                let revision = rest
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| format!("`{name}`: `{value}` is not `{inner}(REVISION)`"))?;
                let number = numbers
                    .get(revision)
                    .ok_or_else(|| format!("`{name}` names an unknown revision `{revision}`"))?;
                Ok(Some(number << shift))
            };
            if let Some(bits) = packed("AMD64_FROM_REV", 8)?.or(packed("AMD64_TILL_REV", 16)?) {
                flags.insert(name.to_string(), bits);
            }
        }
        if numbers.is_empty() {
            return Err("an empty `amd64_rev_t` enumeration".to_string());
        }
        Ok(Revisions { numbers, flags })
    }

    /// Whether an entry whose flags are `flags` (the names OR'd in its `.flags` or
    /// `.uflags`) is valid on revision `number`, as libpfm4 decides: flags that name no
    /// revision do not count.
    pub fn keeps(&self, flags: &[String], number: u32) -> bool {
        let bits = flags
            .iter()
            .filter_map(|f| self.flags.get(f))
            .fold(0, |bits, b| bits | b);
        let from = (bits >> 8) & 0xff;
        let till = match (bits >> 16) & 0xff {
            0 => 0xff,
            till => till,
        };
        from <= number && number <= till
    }

    /// The revision PMUs `file` (under `lib/`) defines with its `DEFINE_*_REV` macro, in the
    /// file's order: `DEFINE_K8_REV(RevB, revb, AMD64_K8_REV_B, PFM_PMU_AMD64_K8_REVB)` with
    /// the macro's `.name = "amd64_k8_"#n` and `.pmu_rev = r` is PMU `amd64_k8_revb` of
    /// revision `AMD64_K8_REV_B`.
    ///
    /// # Errors
    /// The file cannot be read, defines no such macro, or names an unknown revision.
    pub fn pmus(&self, root: &Path, file: &str) -> Result<Vec<RevisionPmu>, GenError> {
        let path = root.join("lib").join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| GenError::io(&path, &e))?;
        self.parse_pmus(&strip_comments(&text))
            .map_err(|why| GenError::Data(format!("{}: {why}", path.display())))
    }

    fn parse_pmus(&self, text: &str) -> Result<Vec<RevisionPmu>, String> {
        let define = text
            .find("#define DEFINE_")
            .ok_or("no `DEFINE_*` revision macro")?
            + "#define ".len();
        let open = text[define..]
            .find('(')
            .ok_or("a macro without parameters")?
            + define;
        let close = text[open..].find(')').ok_or("a macro without parameters")? + open;
        let macro_name = &text[define..open];
        let params: Vec<&str> = text[open + 1..close].split(',').map(str::trim).collect();
        // The body runs to the `}` that opens a line; the PMUs follow it.
        let end = text[close..]
            .find("\n}")
            .map_or(text.len(), |e| close + e + 2);
        let (body, uses) = (&text[close + 1..end], &text[end..]);
        let field = |key: &str| -> Option<&str> {
            let at = body.find(key)?;
            let value = body[at + key.len()..].trim_start().strip_prefix('=')?;
            Some(value.split([',', '\\']).next()?.trim())
        };
        let name = field(".name").ok_or("the macro sets no `.name`")?;
        let (prefix, suffix) = name
            .strip_prefix('"')
            .and_then(|n| n.split_once("\"#"))
            .ok_or_else(|| format!("`.name = {name}` is not `\"PREFIX\"#PARAM`"))?;
        let position = |param: &str| {
            params
                .iter()
                .position(|p| *p == param)
                .ok_or_else(|| format!("`{param}` is not a parameter of `{macro_name}`"))
        };
        let name_at = position(suffix.trim())?;
        let revision_at = position(field(".pmu_rev").ok_or("the macro sets no `.pmu_rev`")?)?;
        let mut pmus = Vec::new();
        let invocation = format!("{macro_name}(");
        for (at, _) in uses.match_indices(&invocation) {
            let args: Vec<&str> = uses[at + invocation.len()..]
                .split(')')
                .next()
                .unwrap_or("")
                .split(',')
                .map(str::trim)
                .collect();
            let (Some(name), Some(revision)) = (args.get(name_at), args.get(revision_at)) else {
                return Err(format!("`{macro_name}` used with too few arguments"));
            };
            let number = *self
                .numbers
                .get(*revision)
                .ok_or_else(|| format!("PMU `{prefix}{name}`: unknown revision `{revision}`"))?;
            pmus.push(RevisionPmu {
                name: format!("{prefix}{name}"),
                revision: (*revision).to_string(),
                number,
            });
        }
        if pmus.is_empty() {
            return Err(format!("`{macro_name}` defines no PMU"));
        }
        Ok(pmus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "typedef enum {\n  REV_NONE = 0, /* none */\n  K8_B,\n  K8_C,\n  K8_D,\n} amd64_rev_t;\n\
        #define K8_FIRST K8_B\n\
        #define AMD64_FROM_REV(rev) ((rev)<<8)\n\
        #define AMD64_FL_NCOMBO 0x01\n\
        #define AMD64_FL_TILL_C AMD64_TILL_REV(K8_C)\n\
        #define AMD64_FL_FROM_D AMD64_FROM_REV(K8_D)\n";

    const PMUS: &str = "#define DEFINE_REV(d, n, r, id) \\\npfmlib_pmu_t x_##n={ \\\n\t.name = \"fixture_\"#n, \\\n\t.pmu_rev = r, \\\n}\n\n\
        DEFINE_REV(B, revb, K8_B, ID_B);\nDEFINE_REV(D, revd, K8_D, ID_D);\n";

    fn flags(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_string()).collect()
    }

    #[test]
    fn revision_flags_keep_entries_as_libpfm4_does() {
        let r = Revisions::parse(HEADER).unwrap();
        let (b, c, d) = (1, 2, 3);
        assert!(r.keeps(&flags(&["AMD64_FL_NCOMBO"]), b));
        assert!(r.keeps(&flags(&["AMD64_FL_TILL_C", "AMD64_FL_NCOMBO"]), c));
        assert!(!r.keeps(&flags(&["AMD64_FL_TILL_C"]), d));
        assert!(!r.keeps(&flags(&["AMD64_FL_FROM_D"]), c));
        assert!(r.keeps(&flags(&["AMD64_FL_FROM_D"]), d));
        assert_eq!(r.numbers.get("K8_FIRST"), Some(&b));
    }

    #[test]
    fn revision_pmus_are_read_from_their_macro() {
        let r = Revisions::parse(HEADER).unwrap();
        let pmus = r.parse_pmus(&strip_comments(PMUS)).unwrap();
        let names: Vec<(&str, u32)> = pmus.iter().map(|p| (p.name.as_str(), p.number)).collect();
        assert_eq!(names, [("fixture_revb", 1), ("fixture_revd", 3)]);
    }

    #[test]
    fn unknown_revisions_are_errors() {
        let bad = HEADER.replace("TILL_REV(K8_C)", "TILL_REV(K8_Z)");
        assert!(Revisions::parse(&bad).unwrap_err().contains("K8_Z"));
        let r = Revisions::parse(HEADER).unwrap();
        let bad = PMUS.replace("K8_D,", "K8_Q,");
        assert!(r.parse_pmus(&bad).unwrap_err().contains("K8_Q"));
        assert!(Revisions::parse("int x;").is_err());
    }
}
