//! Deserializing a shipped file from its pre-parsed form: the tree `build.rs` made of the
//! file's TOML with the `toml` crate's own parser (`build/tree.rs` writes it and documents the
//! encoding). Each value keeps its byte span in the text, and `Spanned` fields get it, so a
//! type deserializes from the tree as the `toml` crate's deserializer would give it from the
//! text, without lexing anything: strings are borrowed from the compiled-in bytes.
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

/// `T` from the pre-parsed form `tree`.
pub(crate) fn from_tree<T: de::Deserialize<'static>>(tree: &'static [u8]) -> Result<T, TreeError> {
    T::deserialize(Node { tree, at: 0 })
}

/// Why a tree did not give the type (the caller then parses the text).
#[derive(Debug)]
pub(crate) struct TreeError(String);

impl fmt::Display for TreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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

fn read<const N: usize>(tree: &[u8], at: usize) -> Result<[u8; N], TreeError> {
    tree.get(at..at + N)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(truncated)
}

fn read_u32(tree: &[u8], at: usize) -> Result<usize, TreeError> {
    Ok(u32::from_le_bytes(read(tree, at)?) as usize)
}

/// The string at `at` (its length, then its bytes) and where it ends.
fn read_str(tree: &'static [u8], at: usize) -> Result<(&'static str, usize), TreeError> {
    let len = read_u32(tree, at)?;
    let bytes = tree.get(at + 4..at + 4 + len).ok_or_else(truncated)?;
    let text = std::str::from_utf8(bytes).map_err(|e| TreeError(e.to_string()))?;
    Ok((text, at + 4 + len))
}

/// The node at `at`: its tag, span and where its payload starts.
fn head(tree: &[u8], at: usize) -> Result<(u8, Range<usize>, usize), TreeError> {
    let [tag] = read(tree, at)?;
    let start = read_u32(tree, at + 1)?;
    let end = read_u32(tree, at + 5)?;
    Ok((tag, start..end, at + 9))
}

/// Where the node at `at` ends.
fn skip(tree: &[u8], at: usize) -> Result<usize, TreeError> {
    let (tag, _, payload) = head(tree, at)?;
    Ok(match tag {
        STRING => payload + 4 + read_u32(tree, payload)?,
        INTEGER | FLOAT => payload + 8,
        BOOLEAN => payload + 1,
        ARRAY | TABLE => payload + 8 + read_u32(tree, payload + 4)?,
        other => return Err(TreeError(format!("unknown tag {other}"))),
    })
}

/// One value of the tree.
#[derive(Clone, Copy)]
struct Node {
    tree: &'static [u8],
    at: usize,
}

impl Node {
    fn span(&self) -> Result<Range<usize>, TreeError> {
        head(self.tree, self.at).map(|(_, span, _)| span)
    }
}

impl<'de> de::Deserializer<'de> for Node
where
    'static: 'de,
{
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        let (tag, _, payload) = head(self.tree, self.at)?;
        match tag {
            STRING => visitor.visit_borrowed_str(read_str(self.tree, payload)?.0),
            INTEGER => visitor.visit_i64(i64::from_le_bytes(read(self.tree, payload)?)),
            FLOAT => visitor.visit_f64(f64::from_le_bytes(read(self.tree, payload)?)),
            BOOLEAN => visitor.visit_bool(read::<1>(self.tree, payload)?[0] != 0),
            ARRAY | TABLE => {
                let count = read_u32(self.tree, payload)?;
                let items = Items {
                    tree: self.tree,
                    at: payload + 8,
                    left: count,
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
        match head(self.tree, self.at)? {
            (STRING, _, payload) => {
                let text = read_str(self.tree, payload)?.0;
                visitor.visit_enum(de::IntoDeserializer::<TreeError>::into_deserializer(text))
            }
            _ => Err(TreeError("an enum other than a string".into())),
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

/// A table's key, with its span.
#[derive(Clone)]
struct Key {
    text: &'static str,
    span: Range<usize>,
}

impl<'de> de::Deserializer<'de> for Key
where
    'static: 'de,
{
    type Error = TreeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TreeError> {
        visitor.visit_borrowed_str(self.text)
    }

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
            let span = self.span.clone();
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
        visitor.visit_enum(de::IntoDeserializer::<TreeError>::into_deserializer(
            self.text,
        ))
    }

    serde::forward_to_deserialize_any! {
        bool u8 u16 u32 u64 u128 i8 i16 i32 i64 i128 f32 f64 char str string seq
        bytes byte_buf map unit ignored_any unit_struct tuple_struct tuple identifier
    }
}

impl<'de> IntoDeserializer<'de, TreeError> for Key
where
    'static: 'de,
{
    type Deserializer = Key;

    fn into_deserializer(self) -> Key {
        self
    }
}

/// An array's items or a table's entries, in the tree's order.
struct Items {
    tree: &'static [u8],
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
        let node = Node {
            tree: self.tree,
            at: self.at,
        };
        self.at = skip(self.tree, self.at)?;
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
        let start = read_u32(self.tree, self.at)?;
        let end = read_u32(self.tree, self.at + 4)?;
        let (text, value_at) = read_str(self.tree, self.at + 8)?;
        self.at = value_at;
        seed.deserialize(Key {
            text,
            span: start..end,
        })
        .map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TreeError> {
        let node = Node {
            tree: self.tree,
            at: self.at,
        };
        self.at = skip(self.tree, self.at)?;
        seed.deserialize(node)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}
