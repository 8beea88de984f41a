//! Deserializing a shipped file from its pre-parsed form: the tree `build.rs` made of the
//! file's TOML with the `toml` crate's own parser (`build/tree.rs` writes it and documents the
//! encoding). Each value keeps its byte span in the text, and `Spanned` fields get it, so a
//! type deserializes from the tree as the `toml` crate's deserializer would give it from the
//! text, without lexing anything: strings are borrowed from the compiled-in text, sliced where
//! the tree says they stand (no string is checked for UTF-8: the text is a `str` already),
//! or, the few with escapes, from a second compiled-in text of their values.
//!
//! Any error here (a tree that does not fit the type) is only a reason to read the text with
//! the TOML parser instead, which gives the error its message and position: the loader does
//! that, and a test deserializes every shipped file both ways and requires the same models.

use std::fmt;
use std::ops::Range;

use serde::de::{self, IntoDeserializer, Visitor};

const STRING: u8 = 0;
const INTEGER: u8 = 1;
const FLOAT: u8 = 2;
const BOOLEAN: u8 = 3;
const ARRAY: u8 = 4;
const TABLE: u8 = 5;

/// The bit a string body's start has when the string stands in [`Tree::decoded`].
const DECODED: u32 = 1 << 31;

/// A shipped file's pre-parsed form and the texts its strings are slices of.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tree {
    /// The nodes (`build/tree.rs`).
    pub(crate) nodes: &'static [u8],
    /// The TOML text.
    pub(crate) text: &'static str,
    /// The values of the strings the text does not hold as they are (those with escapes).
    pub(crate) decoded: &'static str,
}

/// `T` from the pre-parsed form `tree`.
pub(crate) fn from_tree<T: de::Deserialize<'static>>(tree: Tree) -> Result<T, TreeError> {
    T::deserialize(Node::Value { tree, at: 0 })
}

/// The tree called `name` in `trees` (sorted by name, as `build.rs` writes them).
pub(crate) fn find(trees: &[(&str, Tree)], name: &str) -> Option<Tree> {
    trees
        .binary_search_by(|(tree, _)| (*tree).cmp(name))
        .ok()
        .map(|i| trees[i].1)
}

/// Why a tree did not give the type (the caller then parses the text).
#[derive(Debug)]
pub(crate) struct TreeError(String);

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TreeError {
    pub(crate) fn new(message: String) -> TreeError {
        TreeError(message)
    }
}

impl std::error::Error for TreeError {}

impl de::Error for TreeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        TreeError(message.to_string())
    }
}

fn truncated() -> TreeError {
    TreeError("the pre-parsed form ends early".into())
}

/// The `N` bytes at `at` (one bounds check for a node's whole head or a string's body).
fn read<const N: usize>(tree: &[u8], at: usize) -> Result<[u8; N], TreeError> {
    match tree.get(at..).and_then(<[u8]>::first_chunk::<N>) {
        Some(bytes) => Ok(*bytes),
        None => Err(truncated()),
    }
}

/// The `u32` at `i` of bytes read.
fn u32_in<const N: usize>(bytes: &[u8; N], i: usize) -> u32 {
    u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]])
}

fn read_u32(tree: &[u8], at: usize) -> Result<usize, TreeError> {
    Ok(u32::from_le_bytes(read(tree, at)?) as usize)
}

/// The string whose body is at `at` (`build/tree.rs`): a slice of the text, or of the
/// decoded strings.
fn read_str(tree: &Tree, at: usize) -> Result<&'static str, TreeError> {
    let body: [u8; STR_BODY] = read(tree.nodes, at)?;
    let (start, end) = (u32_in(&body, 0), u32_in(&body, 4) as usize);
    let (text, start) = match start & DECODED {
        0 => (tree.text, start as usize),
        _ => (tree.decoded, (start & !DECODED) as usize),
    };
    text.get(start..end)
        .ok_or_else(|| TreeError(format!("no string at {start}..{end}")))
}

/// A string body's length in bytes.
const STR_BODY: usize = 8;

/// The node at `at`: its tag, span and where its payload starts.
fn head(tree: &[u8], at: usize) -> Result<(u8, Range<usize>, usize), TreeError> {
    let head: [u8; 9] = read(tree, at)?;
    let span = u32_in(&head, 1) as usize..u32_in(&head, 5) as usize;
    Ok((head[0], span, at + 9))
}

/// Where the node at `at` ends.
fn skip(tree: &[u8], at: usize) -> Result<usize, TreeError> {
    let (tag, _, payload) = head(tree, at)?;
    Ok(match tag {
        STRING => payload + STR_BODY,
        INTEGER | FLOAT => payload + 8,
        BOOLEAN => payload + 1,
        ARRAY | TABLE => payload + 8 + read_u32(tree, payload + 4)?,
        other => return Err(TreeError(format!("unknown tag {other}"))),
    })
}

/// A value of a tree read by hand, where serde's generic path costs too much (the loader's
/// events and unit masks, the metric tables): its tag, span and payload, read once. What it is
/// not asked for it reads through serde ([`Value::deserialize`]), as the generic path would.
#[derive(Clone, Debug)]
pub(crate) struct Value<'t> {
    tree: &'t Tree,
    at: usize,
    tag: u8,
    span: (u32, u32),
    payload: usize,
}

impl<'t> Value<'t> {
    /// The tree's root table.
    pub(crate) fn root(tree: &'t Tree) -> Result<Value<'t>, TreeError> {
        Value::at(tree, 0)
    }

    fn at(tree: &'t Tree, at: usize) -> Result<Value<'t>, TreeError> {
        let head: [u8; 9] = read(tree.nodes, at)?;
        Ok(Value {
            tree,
            at,
            tag: head[0],
            span: (u32_in(&head, 1), u32_in(&head, 5)),
            payload: at + 9,
        })
    }

    /// Where it is in the text.
    pub(crate) fn span(&self) -> Range<usize> {
        self.span.0 as usize..self.span.1 as usize
    }

    fn not_a(&self, what: &str) -> TreeError {
        TreeError(format!("not {what} at {}", self.span.0))
    }

    /// The string it is.
    pub(crate) fn str(&self) -> Result<&'static str, TreeError> {
        match self.tag {
            STRING => read_str(self.tree, self.payload),
            _ => Err(self.not_a("a string")),
        }
    }

    /// The integer it is.
    pub(crate) fn i64(&self) -> Result<i64, TreeError> {
        match self.tag {
            INTEGER => Ok(i64::from_le_bytes(read(self.tree.nodes, self.payload)?)),
            _ => Err(self.not_a("an integer")),
        }
    }

    /// The boolean it is.
    pub(crate) fn bool(&self) -> Result<bool, TreeError> {
        match self.tag {
            BOOLEAN => Ok(read::<1>(self.tree.nodes, self.payload)?[0] != 0),
            _ => Err(self.not_a("a boolean")),
        }
    }

    /// The array's items.
    pub(crate) fn items(&self) -> Result<Cursor<'t>, TreeError> {
        match self.tag {
            ARRAY => self.cursor(),
            _ => Err(self.not_a("an array")),
        }
    }

    /// The table's entries.
    pub(crate) fn entries(&self) -> Result<Cursor<'t>, TreeError> {
        match self.tag {
            TABLE => self.cursor(),
            _ => Err(self.not_a("a table")),
        }
    }

    fn cursor(&self) -> Result<Cursor<'t>, TreeError> {
        Ok(Cursor {
            tree: self.tree,
            at: self.payload + 8,
            left: read_u32(self.tree.nodes, self.payload)?,
        })
    }

    /// Where it ends.
    fn end(&self) -> Result<usize, TreeError> {
        Ok(match self.tag {
            STRING => self.payload + STR_BODY,
            INTEGER | FLOAT => self.payload + 8,
            BOOLEAN => self.payload + 1,
            // An array or a table: the build script writes no other tag, and a value of one
            // is refused when read (this match left it out: a check here costs the hot
            // loop its inlining).
            _ => self.payload + 8 + read_u32(self.tree.nodes, self.payload + 4)?,
        })
    }

    /// `T` from it, through serde.
    pub(crate) fn deserialize<T: de::Deserialize<'static>>(&self) -> Result<T, TreeError> {
        T::deserialize(Node::Value {
            tree: *self.tree,
            at: self.at,
        })
    }
}

/// An array's items or a table's entries, read by hand in the tree's order.
pub(crate) struct Cursor<'t> {
    tree: &'t Tree,
    at: usize,
    left: usize,
}

impl<'t> Cursor<'t> {
    /// How many are left.
    pub(crate) fn len(&self) -> usize {
        self.left
    }

    /// An array's next item.
    pub(crate) fn next_item(&mut self) -> Result<Option<Value<'t>>, TreeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let value = Value::at(self.tree, self.at)?;
        self.at = value.end()?;
        Ok(Some(value))
    }

    /// A table's next entry: its key and the value.
    pub(crate) fn next_entry(&mut self) -> Result<Option<(&'static str, Value<'t>)>, TreeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let key = read_str(self.tree, self.at + 8)?;
        let value = Value::at(self.tree, self.at + 8 + STR_BODY)?;
        self.at = value.end()?;
        Ok(Some((key, value)))
    }
}

/// One value of the tree: a node, or a table's key (a string with its span).
#[derive(Clone)]
enum Node {
    Value {
        tree: Tree,
        at: usize,
    },
    Key {
        text: &'static str,
        span: Range<usize>,
    },
}

impl Node {
    fn span(&self) -> Result<Range<usize>, TreeError> {
        match self {
            Node::Value { tree, at } => head(tree.nodes, *at).map(|(_, span, _)| span),
            Node::Key { span, .. } => Ok(span.clone()),
        }
    }

    /// The string this is, if it is one.
    fn text(&self) -> Result<Option<&'static str>, TreeError> {
        match self {
            Node::Value { tree, at } => match head(tree.nodes, *at)? {
                (STRING, _, payload) => Ok(Some(read_str(tree, payload)?)),
                _ => Ok(None),
            },
            Node::Key { text, .. } => Ok(Some(text)),
        }
    }
}

impl<'de> de::Deserializer<'de> for Node
where
    'static: 'de,
{
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        let (tree, at) = match self {
            Node::Value { tree, at } => (tree, at),
            Node::Key { text, .. } => return visitor.visit_borrowed_str(text),
        };
        let nodes = tree.nodes;
        let (tag, _, payload) = head(nodes, at)?;
        match tag {
            STRING => visitor.visit_borrowed_str(read_str(&tree, payload)?),
            INTEGER => visitor.visit_i64(i64::from_le_bytes(read(nodes, payload)?)),
            FLOAT => visitor.visit_f64(f64::from_le_bytes(read(nodes, payload)?)),
            BOOLEAN => visitor.visit_bool(read::<1>(nodes, payload)?[0] != 0),
            ARRAY | TABLE => {
                let items = Items {
                    tree,
                    at: payload + 8,
                    left: read_u32(nodes, payload)?,
                };
                if tag == ARRAY {
                    visitor.visit_seq(items)
                } else {
                    visitor.visit_map(items)
                }
            }
            other => Err(TreeError(format!("unknown tag {other}"))),
        }
    }

    // As the toml crate's deserializer: a value that is there is `Some` (a missing field is
    // the `None`).
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        if serde_spanned::de::is_spanned(name) {
            let span = self.span()?;
            return visitor.visit_map(serde_spanned::de::SpannedDeserializer::new(self, span));
        }
        self.deserialize_any(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TreeError> {
        match self.text()? {
            Some(text) => {
                visitor.visit_enum(de::IntoDeserializer::<TreeError>::into_deserializer(text))
            }
            None => Err(TreeError("an enum other than a string".into())),
        }
    }

    serde::forward_to_deserialize_any! {
        bool u8 u16 u32 u64 u128 i8 i16 i32 i64 i128 f32 f64 char str string seq
        bytes byte_buf map unit ignored_any unit_struct tuple_struct tuple identifier
    }
}

impl<'de> IntoDeserializer<'de, TreeError> for Node
where
    'static: 'de,
{
    type Deserializer = Node;

    fn into_deserializer(self) -> Node {
        self
    }
}

/// An array's items or a table's entries, in the tree's order.
struct Items {
    tree: Tree,
    at: usize,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Items
where
    'static: 'de,
{
    type Error = TreeError;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TreeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let node = Node::Value {
            tree: self.tree,
            at: self.at,
        };
        self.at = skip(self.tree.nodes, self.at)?;
        seed.deserialize(node).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

impl<'de> de::MapAccess<'de> for Items
where
    'static: 'de,
{
    type Error = TreeError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TreeError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let start = read_u32(self.tree.nodes, self.at)?;
        let end = read_u32(self.tree.nodes, self.at + 4)?;
        let text = read_str(&self.tree, self.at + 8)?;
        self.at += 8 + STR_BODY;
        seed.deserialize(Node::Key {
            text,
            span: start..end,
        })
        .map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TreeError> {
        let node = Node::Value {
            tree: self.tree,
            at: self.at,
        };
        self.at = skip(self.tree.nodes, self.at)?;
        seed.deserialize(node)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// The build script's half, to make trees of the tests' own texts.
#[cfg(test)]
#[path = "../build/tree.rs"]
pub(crate) mod encode;

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use toml::Spanned;

    use super::encode;

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        name: Spanned<String>,
        count: i64,
        ratio: f64,
        on: bool,
        maybe: Option<Spanned<i64>>,
        absent: Option<String>,
        kind: Kind,
        list: Vec<Spanned<u8>>,
        any: Spanned<toml::Value>,
        map: BTreeMap<Spanned<String>, Spanned<String>>,
        #[serde(default)]
        item: Vec<Spanned<Item>>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Plain,
        Fancy,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        code: Spanned<i64>,
        #[serde(default)]
        desc: String,
    }

    const TEXT: &str = r#"
name = "a \"quoted\" \\ name"
count = 0x1f
ratio = 1e-3
on = true
maybe = -7
kind = "fancy"
list = [1, 2, 255]
any = { a = [1.5, "x"], b = { c = false } }

[map]
"k.1" = "v"
plain = 'literal \n'

[[item]]
code = 1
desc = "one"

[[item]]
code = 0o17
"#;

    fn tree_of(text: &'static str) -> Tree {
        let encoded = encode::encode(text).unwrap();
        Tree {
            nodes: Box::leak(encoded.nodes.into_boxed_slice()),
            text,
            decoded: Box::leak(encoded.decoded.into_boxed_str()),
        }
    }

    /// Oracle: the `toml` crate's deserializer on the same text. Every kind of value the
    /// shipped files use (strings with escapes, integers in every radix, floats, booleans,
    /// optional and absent fields, string enums, arrays, inline and array tables, maps with
    /// spanned keys, `toml::Value`) deserializes from the tree equal to TOML's, spans included.
    #[test]
    fn a_tree_gives_what_the_text_gives_spans_included() {
        // The two halves agree on the tags.
        assert_eq!(
            [STRING, INTEGER, FLOAT, BOOLEAN, ARRAY, TABLE],
            [
                encode::STRING,
                encode::INTEGER,
                encode::FLOAT,
                encode::BOOLEAN,
                encode::ARRAY,
                encode::TABLE
            ]
        );
        assert_eq!(DECODED, encode::DECODED);
        let from_text: Doc = toml::from_str(TEXT).unwrap();
        let from_tree: Doc = from_tree(tree_of(TEXT)).unwrap();
        assert_eq!(from_tree, from_text);
        // Spanned compares values only: the spans are checked one by one.
        assert_eq!(from_tree.name.span(), from_text.name.span());
        assert_eq!(
            from_tree.maybe.as_ref().map(Spanned::span),
            from_text.maybe.as_ref().map(Spanned::span)
        );
        assert_eq!(from_tree.any.span(), from_text.any.span());
        let spans = |doc: &Doc| -> Vec<_> {
            doc.list
                .iter()
                .map(Spanned::span)
                .chain(doc.map.iter().flat_map(|(k, v)| [k.span(), v.span()]))
                .chain(
                    doc.item
                        .iter()
                        .flat_map(|i| [i.span(), i.get_ref().code.span()]),
                )
                .collect()
        };
        assert_eq!(spans(&from_tree), spans(&from_text));
        assert_eq!(&TEXT[from_tree.name.span()], r#""a \"quoted\" \\ name""#);
    }

    /// Oracle: the `toml` crate's deserializer. A string whose bytes stand in the text as they
    /// are (a basic string without escapes, a literal string, a bare key) is read as a slice of
    /// the text, the others (escapes, a line-ending backslash) from the decoded strings; both
    /// give TOML's value.
    #[test]
    fn plain_strings_are_slices_of_the_text_and_escaped_ones_decoded() {
        const TEXT: &str = "plain = \"p q\"\nesc = \"e\\tq\"\nlit = 'l\\n'\n\
                            multi = \"\"\"\nm \\\n  n\"\"\"\nempty = \"\"\n";
        let tree = tree_of(TEXT);
        let mut from_tree: Vec<(&'static str, &'static str)> = Vec::new();
        let mut decoded = Vec::new();
        // The root's entries: key span, key body, value node (tag, span, body).
        let count = read_u32(tree.nodes, 9).unwrap();
        let mut at = 17;
        for _ in 0..count {
            let key = read_str(&tree, at + 8).unwrap();
            let value_at = at + 8 + STR_BODY;
            let (tag, _, payload) = head(tree.nodes, value_at).unwrap();
            assert_eq!(tag, STRING);
            let value = read_str(&tree, payload).unwrap();
            if read_u32(tree.nodes, payload).unwrap() & DECODED as usize != 0 {
                decoded.push(key);
            }
            from_tree.push((key, value));
            at = skip(tree.nodes, value_at).unwrap();
        }
        let from_text: BTreeMap<String, String> = toml::from_str(TEXT).unwrap();
        let from_text: Vec<(&str, &str)> = from_text
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        from_tree.sort_unstable();
        assert_eq!(from_tree, from_text);
        decoded.sort_unstable();
        assert_eq!(decoded, ["esc", "multi"]);
        assert_eq!(tree.decoded, "e\tqm n");
    }

    /// A tree that does not fit the type is an error (the loader then reads the text), never a
    /// panic: an unknown field, a wrong type, an enum's unknown variant, a truncated tree.
    #[test]
    fn a_tree_that_does_not_fit_is_an_error() {
        let tree = tree_of(TEXT);
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Narrow {
            name: String,
        }
        assert!(from_tree::<Narrow>(tree).is_err());
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct WrongType {
            name: i64,
        }
        assert!(from_tree::<WrongType>(tree).is_err());
        let odd = tree_of(
            "name = \"x\"\ncount = 1\nratio = 1.0\non = false\nkind = \"odd\"\nlist = []\nany = 1\n[map]\n",
        );
        assert!(from_tree::<Doc>(odd).is_err());
        for cut in [0, 1, 9, tree.nodes.len() / 2, tree.nodes.len() - 1] {
            let cut = Tree {
                nodes: &tree.nodes[..cut],
                ..tree
            };
            assert!(from_tree::<Doc>(cut).is_err(), "cut at {cut:?}");
        }
        // A tree with another text: its strings' places are not in it, or not at a character's
        // boundary.
        for text in ["", "é"] {
            let other = Tree { text, ..tree };
            assert!(from_tree::<Doc>(other).is_err(), "text {text:?}");
        }
    }
}
