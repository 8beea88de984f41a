//! `counterhal serve`: the Prometheus exporter, a crate of its own (`counterhal-serve`) that
//! the command links by its default feature `serve`, given the event database and CPU model
//! the command's options name. Without the feature, `serve` says that this build has no
//! exporter.

use std::process::ExitCode;

use clap::Args;

use crate::error::CliError;

/// `counterhal serve`'s options: the exporter's and the event database's.
#[cfg(feature = "serve")]
#[derive(Args, Debug, Clone)]
pub struct ServeCommand {
    #[command(flatten)]
    pub serve: counterhal_serve::ServeArgs,
    #[command(flatten)]
    pub database: crate::options::DatabaseArgs,
}

/// Text after `serve --help`.
#[cfg(feature = "serve")]
pub const HELP: &str = counterhal_serve::HELP;

/// Runs `counterhal serve`: prints the recording rules (`--rules`), or serves until
/// `SIGTERM` or `SIGINT`.
///
/// # Errors
/// As [`counterhal_serve::run`] and [`counterhal_serve::rules`], and a bad events file or CPU
/// model (exit 2).
#[cfg(feature = "serve")]
pub fn run(args: ServeCommand) -> Result<ExitCode, CliError> {
    let context = args.database.context()?;
    let failed = |failure: counterhal_serve::Failure| CliError {
        exit_code: failure.exit_code(),
        error: failure.error,
        usage: failure.usage,
    };
    if args.serve.rules {
        let rules = counterhal_serve::rules(&args.serve, &context).map_err(failed)?;
        crate::output::emit(&rules)?;
        return Ok(ExitCode::SUCCESS);
    }
    counterhal_serve::run(args.serve, context).map_err(failed)
}

/// `counterhal serve`'s arguments in a build without the exporter: whatever they are, the
/// answer is that there is none.
#[cfg(not(feature = "serve"))]
#[derive(Args, Debug, Clone)]
pub struct ServeCommand {
    /// The exporter's arguments, taken only to be refused.
    #[arg(
        value_name = "ARGS",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    arguments: Vec<std::ffi::OsString>,
}

/// Text after `serve --help`.
#[cfg(not(feature = "serve"))]
pub const HELP: &str = "This build of counterhal has no exporter: it was built without the \
`serve` feature (a default feature of counterhal-cli).";

/// Says that this build has no exporter (exit 1).
///
/// # Errors
/// Always: [`counterhal::ErrorKind::Unsupported`].
#[cfg(not(feature = "serve"))]
pub fn run(_args: ServeCommand) -> Result<ExitCode, CliError> {
    Err(CliError::failed(
        counterhal::Error::unsupported(
            "this build of counterhal has no exporter: `serve` was built without its feature",
        )
        .with_hint("build the command with its default features (`--features serve`)"),
    ))
}

#[cfg(all(test, not(feature = "serve")))]
mod tests {
    use clap::Parser;

    use super::*;

    /// Oracle: Cargo's features (this build without `serve`, as `cargo test -p
    /// counterhal-cli --no-default-features` builds it): whatever the arguments, `serve`
    /// answers that there is no exporter, by the feature's name, and exits 1.
    #[test]
    fn without_its_feature_serve_says_this_build_has_no_exporter() {
        #[derive(Parser)]
        struct Serve {
            #[command(flatten)]
            args: ServeCommand,
        }
        for words in [&["serve"][..], &["serve", "--listen", ":0", "-e", "cycles"]] {
            let parsed = Serve::try_parse_from(words).expect("any arguments are taken");
            let failure = run(parsed.args).unwrap_err();
            assert_eq!(failure.exit_code, 1, "{words:?}");
            assert_eq!(failure.error.kind(), counterhal::ErrorKind::Unsupported);
            let said = failure.error.to_string();
            assert!(
                said.contains("no exporter") && said.contains("feature"),
                "{said}"
            );
        }
    }
}
