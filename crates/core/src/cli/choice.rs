//! Flags whose value is one of a few named choices (`--requests-order`,
//! `--fault-per`, `--tls`), for enums that live below the command line.
//!
//! Each such enum lists its choices as plain data, `(value, name, help)`,
//! instead of deriving the parser's trait, so the modules that own them
//! do not depend on the command line. The parser built here lists the
//! same names and help in `--help` and in the error for a wrong value.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// A value, the name it is typed as, and its one-line help.
pub type Choices<T> = [(T, &'static str, &'static str)];

/// A parser that accepts exactly the names of `choices`.
pub fn choice<T>(choices: &'static Choices<T>) -> impl TypedValueParser<Value = T>
where
    T: Copy + Send + Sync + 'static,
{
    let names = choices
        .iter()
        .map(|&(_, name, help)| PossibleValue::new(name).help(help));
    PossibleValuesParser::new(names).try_map(move |typed: String| {
        choices
            .iter()
            .find(|(_, name, _)| *name == typed)
            .map(|&(value, _, _)| value)
            .ok_or_else(|| format!("'{typed}' is not one of the choices"))
    })
}
