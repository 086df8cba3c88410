//! The `schemaops` binary: parse the command line, run the command, map the
//! outcome to an exit status (0 compatible or done, 1 incompatible, 2 error).

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use schemaops::cli::{Cli, Command, LogFormat};
use schemaops::commands::{self, Verdict};
use schemaops::telemetry;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(Verdict::Compatible) => ExitCode::SUCCESS,
        Ok(Verdict::Incompatible) => ExitCode::from(1),
        Ok(Verdict::Failed) => ExitCode::from(2),
        // A reader that went away (`schemaops compat --cases … | head`) ends the run quietly, with
        // the status a shell gives a process that SIGPIPE stopped (128 + 13).
        Err(error) if closed_pipe(&error) => ExitCode::from(141),
        Err(error) => {
            eprintln!("schemaops: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Whether `error` comes from writing to a pipe whose reader has gone.
fn closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> anyhow::Result<Verdict> {
    match cli.command {
        Command::Compat(args) => {
            let config = checked(args.into_config())?;
            to_stdout(|out| Ok(commands::compat::run(&config, out)?))
        }
        Command::Crds => to_stdout(|out| {
            commands::crds::run(out).context("failed to print the CRDs")?;
            Ok(Verdict::Compatible)
        }),
        Command::Registry(args) => {
            let config = checked(args.into_config())?;
            telemetry::init(config.log_format, "info");
            Ok(runtime()?.block_on(commands::registry::run(&config))?)
        }
        Command::Apply(args) => {
            let config = checked(args.into_config())?;
            telemetry::init(LogFormat::Plain, "warn");
            let runtime = runtime()?;
            to_stdout(|out| Ok(runtime.block_on(commands::apply::run(&config, out))?))
        }
        Command::Check(args) => {
            let config = checked(args.into_config())?;
            telemetry::init(LogFormat::Plain, "warn");
            let runtime = runtime()?;
            to_stdout(|out| Ok(runtime.block_on(commands::check::run(&config, out))?))
        }
        Command::Export(args) => {
            let config = checked(args.into_config())?;
            telemetry::init(LogFormat::Plain, "warn");
            let runtime = runtime()?;
            to_stdout(|out| Ok(runtime.block_on(commands::export::run(&config, out))?))
        }
        Command::Import(args) => {
            let config = checked(args.into_config())?;
            telemetry::init(LogFormat::Plain, "warn");
            let runtime = runtime()?;
            to_stdout(|out| Ok(runtime.block_on(commands::import::run(&config, out))?))
        }
        Command::Operator(args) => {
            let config = checked(args.into_config())?;
            telemetry::init(config.log_format, "info");
            Ok(runtime()?.block_on(commands::operator::run(config))?)
        }
    }
}

/// A configuration, or the argument error that prevents it.
fn checked<T>(config: Result<T, String>) -> anyhow::Result<T> {
    config.map_err(anyhow::Error::msg).context("invalid arguments")
}

/// Runs `print` on locked stdout and flushes it.
fn to_stdout(print: impl FnOnce(&mut dyn Write) -> anyhow::Result<Verdict>) -> anyhow::Result<Verdict> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let verdict = print(&mut out)?;
    out.flush().context("failed to write the output")?;
    Ok(verdict)
}

/// jemalloc rather than glibc's malloc. At 10,000 Schemas the operator's heap
/// peaks near 60 MiB (heaptrack), but glibc's per-thread arenas kept what
/// was freed in each and RSS reached ~150 MiB; jemalloc returns freed pages
/// and peaks under 100 MiB in the same bench (issue 20).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The async runtime of the commands that need one.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the async runtime")
}
