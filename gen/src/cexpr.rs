//! Just enough of the C preprocessor and C's integer expressions to read libpfm4's tables:
//! object-like `#define NAME BODY` macros (continued lines joined) and the expressions of
//! their fields (`0x100|INTEL_X86_MOD_INV|(1<<INTEL_X86_CMASK_BIT)`, `1ULL<<(2+8)`).

use std::collections::BTreeMap;

/// Object-like macros: name -> body text.
#[derive(Default, Clone)]
pub struct Macros {
    bodies: BTreeMap<String, String>,
}

impl Macros {
    /// Adds every `#define NAME BODY` of `text` (comments already stripped); function-like
    /// macros (`NAME(`) are left out, later definitions win.
    pub fn add(&mut self, text: &str) {
        let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
        for line in joined.lines() {
            let Some(rest) = line.trim_start().strip_prefix("#define") else {
                continue;
            };
            let rest = rest.trim_start();
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let (name, body) = rest.split_at(end);
            if name.is_empty() || body.starts_with('(') {
                continue;
            }
            self.bodies
                .insert(name.to_string(), body.trim().to_string());
        }
    }

    /// The value of the C integer expression `text`, its identifiers expanded as macros.
    ///
    /// # Errors
    /// An unknown identifier, a syntax error or a macro expanding into itself.
    pub fn eval(&self, text: &str) -> Result<u64, String> {
        self.eval_depth(text, 0)
    }

    fn eval_depth(&self, text: &str, depth: usize) -> Result<u64, String> {
        if depth > 32 {
            return Err(format!("`{text}`: macros nest too deep"));
        }
        let tokens = tokens(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            macros: self,
            depth,
        };
        let value = parser.expr(0)?;
        if parser.at != tokens.len() {
            return Err(format!("`{text}`: unexpected `{:?}`", tokens[parser.at]));
        }
        Ok(value)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(u64),
    Ident(String),
    Op(&'static str),
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    const OPS: [&str; 12] = ["<<", ">>", "|", "&", "^", "+", "-", "*", "~", "(", ")", "!"];
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let literal = &text[start..i];
            let value = crate::cparse::integer(literal)
                .ok_or_else(|| format!("`{text}`: bad number `{literal}`"))?;
            out.push(Token::Number(value));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < bytes.len()
                && ((bytes[i] as char).is_ascii_alphanumeric() || bytes[i] == b'_')
            {
                i += 1;
            }
            out.push(Token::Ident(text[start..i].to_string()));
        } else {
            let op = OPS
                .iter()
                .find(|op| text[i..].starts_with(**op))
                .ok_or_else(|| format!("`{text}`: unexpected `{c}`"))?;
            out.push(Token::Op(op));
            i += op.len();
        }
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    macros: &'a Macros,
    depth: usize,
}

/// Binding strength of a binary operator (C's order).
fn strength(op: &str) -> Option<u8> {
    Some(match op {
        "*" => 10,
        "+" | "-" => 9,
        "<<" | ">>" => 8,
        "&" => 6,
        "^" => 5,
        "|" => 4,
        _ => return None,
    })
}

impl Parser<'_> {
    fn expr(&mut self, min: u8) -> Result<u64, String> {
        let mut left = self.unary()?;
        while let Some(Token::Op(op)) = self.tokens.get(self.at) {
            let Some(s) = strength(op).filter(|s| *s > min) else {
                break;
            };
            self.at += 1;
            let right = self.expr(s)?;
            left = match *op {
                "*" => left.wrapping_mul(right),
                "+" => left.wrapping_add(right),
                "-" => left.wrapping_sub(right),
                "<<" => left
                    .checked_shl(u32::try_from(right).unwrap_or(64))
                    .unwrap_or(0),
                ">>" => left
                    .checked_shr(u32::try_from(right).unwrap_or(64))
                    .unwrap_or(0),
                "&" => left & right,
                "^" => left ^ right,
                _ => left | right,
            };
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<u64, String> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or("an expression ends early")?;
        self.at += 1;
        match token {
            Token::Number(n) => Ok(n),
            Token::Ident(name) => {
                let body = self
                    .macros
                    .bodies
                    .get(&name)
                    .ok_or_else(|| format!("unknown identifier `{name}`"))?;
                self.macros.eval_depth(body, self.depth + 1)
            }
            Token::Op("~") => Ok(!self.unary()?),
            Token::Op("!") => Ok(u64::from(self.unary()? == 0)),
            Token::Op("-") => Ok(self.unary()?.wrapping_neg()),
            Token::Op("(") => {
                let value = self.expr(0)?;
                match self.tokens.get(self.at) {
                    Some(Token::Op(")")) => {
                        self.at += 1;
                        Ok(value)
                    }
                    _ => Err("a `(` is not closed".to_string()),
                }
            }
            Token::Op(op) => Err(format!("unexpected `{op}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_of_libpfm4_tables_evaluate() {
        let mut macros = Macros::default();
        macros.add(
            "#define INTEL_X86_CMASK_BIT 24\n#define INTEL_X86_MOD_INV (1 << 23)\n#define A \\\n  (B|2)\n#define B 1\n#define F(x) x\n",
        );
        assert_eq!(
            macros.eval("0x100|INTEL_X86_MOD_INV|(1<<INTEL_X86_CMASK_BIT)"),
            Ok(0x0180_0100)
        );
        assert_eq!(macros.eval("1ULL<<(2+8)"), Ok(0x400));
        assert_eq!(macros.eval("A"), Ok(3));
        assert_eq!(macros.eval("~0 & 0xf"), Ok(0xf));
        assert!(macros.eval("F(1)").is_err());
        assert!(macros.eval("(1").is_err());
        assert!(macros.eval("NOPE").is_err());
    }
}
