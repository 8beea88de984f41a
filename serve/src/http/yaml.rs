//! The YAML of `--web.config.file` read field by field: a mapping's keys, a string, a
//! boolean, a list of strings, each refused with the field's name when it is not one.

use yaml_rust2::Yaml;

/// The keys and values of a YAML mapping (`what` names it in errors); null is empty.
pub fn mapping<'a>(value: &'a Yaml, what: &str) -> Result<Vec<(String, &'a Yaml)>, String> {
    match value {
        Yaml::Null => Ok(Vec::new()),
        Yaml::Hash(hash) => hash
            .iter()
            .map(|(key, value)| match key {
                Yaml::String(key) => Ok((key.clone(), value)),
                _ => Err(format!("{what} has a key that is not a string: {key:?}")),
            })
            .collect(),
        _ => Err(format!("{what} is not a mapping of keys to values")),
    }
}

pub fn string(value: &Yaml, what: &str) -> Result<String, String> {
    match value {
        Yaml::String(text) => Ok(text.clone()),
        Yaml::Integer(number) => Ok(number.to_string()),
        _ => Err(format!("{what} is not a string")),
    }
}

pub fn boolean(value: &Yaml, what: &str) -> Result<bool, String> {
    match value {
        Yaml::Boolean(b) => Ok(*b),
        _ => Err(format!("{what} is not true or false")),
    }
}

pub fn strings(value: &Yaml, what: &str) -> Result<Vec<String>, String> {
    match value {
        Yaml::Null => Ok(Vec::new()),
        Yaml::Array(items) => items.iter().map(|item| string(item, what)).collect(),
        _ => Err(format!("{what} is not a list")),
    }
}
