//! The command-line reference, rendered from the clap definitions and held to the committed
//! copies: `docs/cli.md` (one Markdown page) and `docs/man/*.1` (a manual page per command,
//! by clap_mangen). A test fails when an option, its help or a subcommand changed and the
//! copies were not rendered again:
//!
//! ```sh
//! COUNTERHAL_WRITE_REFERENCE=1 cargo test -p counterhal-cli --bin counterhal reference
//! ```
#![cfg(test)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::Cli;

/// The command as clap builds it, each subcommand's arguments added.
fn command() -> clap::Command {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    command
}

/// An argument as it is typed: `-e, --event <EV[,EV...]>`, `[CMD]...`.
fn spelling(arg: &clap::Arg) -> String {
    let values = arg
        .get_value_names()
        .map(|names| {
            names
                .iter()
                .map(|n| format!("<{n}>"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| format!("<{}>", arg.get_id().as_str().to_ascii_uppercase()));
    if arg.is_positional() {
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let values = values.replace(['<', '>'], "");
        let name = if arg.is_required_set() {
            format!("<{values}>")
        } else {
            format!("[{values}]")
        };
        return if many { format!("{name}...") } else { name };
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let mut text = names.join(", ");
    if arg.get_action().takes_values() {
        text.push(' ');
        text.push_str(&values);
    }
    text
}

/// What an argument's help says, on one line, with its aliases and default.
fn help(arg: &clap::Arg) -> String {
    let mut text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut aliases: Vec<String> = arg
        .get_visible_short_aliases()
        .into_iter()
        .flatten()
        .map(|a| format!("-{a}"))
        .collect();
    aliases.extend(
        arg.get_visible_aliases()
            .into_iter()
            .flatten()
            .map(|a| format!("--{a}")),
    );
    if !aliases.is_empty() {
        let _ = write!(text, " (also `{}`)", aliases.join("`, `"));
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if !defaults.is_empty() && arg.get_action().takes_values() {
        let _ = write!(text, " (default: `{}`)", defaults.join(","));
    }
    text.replace('|', "\\|")
}

/// One command's section of the Markdown page.
fn markdown_section(command: &mut clap::Command, path: &str, out: &mut String) {
    let _ = writeln!(out, "## `{path}`\n");
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        let _ = writeln!(out, "{about}\n");
    }
    let usage = command.render_usage().to_string();
    let usage = usage.trim_start_matches("Usage: ").trim();
    let _ = writeln!(out, "```text\n{usage}\n```\n");
    let args: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .collect();
    if !args.is_empty() {
        out.push_str("| argument | what it does |\n|---|---|\n");
        for arg in args {
            let _ = writeln!(out, "| `{}` | {} |", spelling(arg), help(arg));
        }
        out.push('\n');
    }
    let subcommands: Vec<&clap::Command> = command.get_subcommands().collect();
    if !subcommands.is_empty() {
        out.push_str("| command | what it does |\n|---|---|\n");
        for sub in subcommands {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let name = sub.get_name();
            let _ = writeln!(out, "| [`{path} {name}`](#{path}-{name}) | {about} |");
        }
        out.push('\n');
    }
    if let Some(after) = command.get_after_long_help().or(command.get_after_help()) {
        let _ = writeln!(out, "```text\n{}\n```\n", after.to_string().trim_end());
    }
}

/// The Markdown page: the command, then each subcommand.
fn markdown() -> String {
    let mut command = command();
    let mut out = String::from(
        "# The `counterhal` command: reference\n\n\
         <!-- Generated from the command's clap definitions by cli/src/reference.rs; do not \
         edit. Render again with\n     COUNTERHAL_WRITE_REFERENCE=1 cargo test -p counterhal-cli \
         --bin counterhal reference -->\n\n\
         Every subcommand and option as `counterhal --help` gives it (the manual pages in \
         `docs/man/` say the same). How `stat` behaves where perf users would look, and where it \
         differs from perf on purpose, is in [the command's guide](command.md).\n\n",
    );
    markdown_section(&mut command, "counterhal", &mut out);
    let names: Vec<String> = command
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let sub = command.find_subcommand_mut(&name).expect("a subcommand");
        markdown_section(sub, &format!("counterhal {name}"), &mut out);
    }
    format!("{}\n", out.trim_end())
}

/// The manual pages by file name: `counterhal.1` and one per subcommand.
fn man_pages() -> BTreeMap<String, Vec<u8>> {
    let command = command();
    let mut pages = BTreeMap::new();
    let mut render = |command: clap::Command| {
        let man = clap_mangen::Man::new(command);
        let mut text = Vec::new();
        man.render(&mut text).expect("rendering into memory");
        pages.insert(man.get_filename(), text);
    };
    for sub in command.get_subcommands() {
        render(sub.clone());
    }
    render(command);
    pages
}

/// The repository's docs folder.
fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs")
}

#[test]
fn the_cli_reference_is_rendered_from_the_current_options() {
    let write = std::env::var_os("COUNTERHAL_WRITE_REFERENCE").is_some();
    let mut expected: BTreeMap<PathBuf, Vec<u8>> = man_pages()
        .into_iter()
        .map(|(name, text)| (docs().join("man").join(name), text))
        .collect();
    expected.insert(docs().join("cli.md"), markdown().into_bytes());
    // A manual page of a subcommand that is gone is stale too.
    let committed: Vec<PathBuf> = std::fs::read_dir(docs().join("man"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let mut stale = Vec::new();
    for path in committed.iter().filter(|p| !expected.contains_key(*p)) {
        if write {
            std::fs::remove_file(path).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
    for (path, text) in &expected {
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        } else if std::fs::read(path).ok().as_ref() != Some(text) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "the CLI reference is out of date ({stale:?}): render it again with \
         COUNTERHAL_WRITE_REFERENCE=1 cargo test -p counterhal-cli --bin counterhal reference"
    );
}

#[test]
fn the_reference_names_every_subcommand_and_visible_option() {
    let page = markdown();
    let command = command();
    for sub in command.get_subcommands() {
        assert!(page.contains(&format!("## `counterhal {}`", sub.get_name())));
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(long) = arg.get_long() {
                assert!(page.contains(&format!("--{long}")), "--{long}");
            }
        }
    }
    // The pages carry the options' text, not a summary of it.
    let stat = &man_pages()["counterhal-stat.1"];
    assert!(String::from_utf8_lossy(stat).contains("for\\-each\\-cgroup"));
}
