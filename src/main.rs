//! The `schemaops` binary: parse the command line, run the command, map the
//! outcome to an exit status (0 compatible or done, 1 incompatible, 2 error).

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use schemaops::cli::{Cli, Command};
use schemaops::commands::{self, Verdict};
use schemaops::telemetry;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(Verdict::Compatible) => ExitCode::SUCCESS,
        Ok(Verdict::Incompatible) => ExitCode::from(1),
        Ok(Verdict::Failed) => ExitCode::from(2),
        Err(error) => {
            eprintln!("schemaops: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<Verdict> {
    match cli.command {
        Command::Compat(args) => {
            let config = args
                .into_config()
                .map_err(anyhow::Error::msg)
                .context("invalid arguments")?;
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let verdict = commands::compat::run(&config, &mut out)?;
            out.flush().context("failed to write the result")?;
            Ok(verdict)
        }
        Command::Crds => {
            let stdout = io::stdout();
            let mut out = stdout.lock();
            commands::crds::run(&mut out).context("failed to print the CRDs")?;
            Ok(Verdict::Compatible)
        }
        Command::Registry(args) => {
            let config = args
                .into_config()
                .map_err(anyhow::Error::msg)
                .context("invalid arguments")?;
            telemetry::init(config.log_format, "info");
            let runtime = runtime()?;
            Ok(runtime.block_on(commands::registry::run(&config))?)
        }
        Command::Apply(args) => {
            let config = args
                .into_config()
                .map_err(anyhow::Error::msg)
                .context("invalid arguments")?;
            telemetry::init(schemaops::cli::LogFormat::Plain, "warn");
            let runtime = runtime()?;
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let verdict = runtime.block_on(commands::apply::run(&config, &mut out))?;
            out.flush().context("failed to write the output")?;
            Ok(verdict)
        }
        Command::Check(args) => {
            let config = args
                .into_config()
                .map_err(anyhow::Error::msg)
                .context("invalid arguments")?;
            telemetry::init(schemaops::cli::LogFormat::Plain, "warn");
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("failed to start the async runtime")?;
            let stdout = io::stdout();
            let mut out = stdout.lock();
            let verdict = runtime.block_on(commands::check::run(&config, &mut out))?;
            out.flush().context("failed to write the output")?;
            Ok(verdict)
        }
        Command::Operator(args) => {
            let config = args
                .into_config()
                .map_err(anyhow::Error::msg)
                .context("invalid arguments")?;
            telemetry::init(config.log_format, "info");
            let runtime = runtime()?;
            Ok(runtime.block_on(commands::operator::run(config))?)
        }
    }
}

/// The async runtime of the commands that need one.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")
}
