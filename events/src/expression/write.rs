//! An expression written back in perf's syntax, as [`parse`](super::parse) reads it.

use std::fmt;

use super::{Expr, Function, Op};

impl Op {
    /// How the formula writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Subtract => "-",
            Op::Multiply => "*",
            Op::Divide => "/",
            Op::Less => "<",
            Op::Greater => ">",
            Op::LessEqual => "<=",
            Op::GreaterEqual => ">=",
            Op::And => "&",
            Op::Or => "|",
            Op::Xor => "^",
        }
    }
}

impl Function {
    /// How the formula writes it.
    pub fn name(self) -> &'static str {
        match self {
            Function::Min => "min",
            Function::Max => "max",
            Function::DRatio => "d_ratio",
        }
    }
}

/// A name as the formula writes it: perf's backslash before each character the name syntax
/// does not take there, so that [`parse`](super::parse) reads the same name back.
fn write_name(f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
    for (i, c) in name.chars().enumerate() {
        let plain = if i == 0 {
            c.is_alphabetic() || c == '_' || c == '#'
        } else {
            c.is_alphanumeric() || matches!(c, '_' | '.' | '#' | '@' | ':')
        };
        if !plain {
            f.write_str("\\")?;
        }
        write!(f, "{c}")?;
    }
    Ok(())
}

/// The formula in perf's syntax, written so that [`parse`](super::parse) gives this expression
/// back: an operand that is not a number, a name or a call is put in parentheses.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operand = |f: &mut fmt::Formatter<'_>, e: &Expr| match e {
            Expr::Chain { .. } | Expr::If { .. } | Expr::Negate(_) => write!(f, "({e})"),
            _ => write!(f, "{e}"),
        };
        match self {
            Expr::Number(n) => write!(f, "{n}"),
            Expr::Name(name) => write_name(f, name),
            Expr::Negate(inner) => {
                f.write_str("-")?;
                operand(f, inner)
            }
            Expr::Chain { first, rest } => {
                operand(f, first)?;
                for (op, e) in rest {
                    write!(f, " {} ", op.symbol())?;
                    operand(f, e)?;
                }
                Ok(())
            }
            Expr::If {
                then,
                condition,
                otherwise,
            } => {
                operand(f, then)?;
                f.write_str(" if ")?;
                operand(f, condition)?;
                f.write_str(" else ")?;
                operand(f, otherwise)
            }
            Expr::Call(function, a, b) => write!(f, "{}({a}, {b})", function.name()),
            Expr::HasEvent(name) | Expr::SourceCount(name) => {
                let function = match self {
                    Expr::HasEvent(_) => "has_event",
                    _ => "source_count",
                };
                write!(f, "{function}(")?;
                write_name(f, name)?;
                f.write_str(")")
            }
        }
    }
}
