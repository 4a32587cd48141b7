//! The `candor` binary: with no subcommand it serves ACP on stdio.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A coding agent that speaks the Agent Client Protocol over stdio.
///
/// With no subcommand, candor serves one ACP connection on stdin/stdout:
/// this is how an editor launches it. Logs go to stderr (`RUST_LOG`).
#[derive(Debug, Parser)]
#[command(name = "candor", version, about)]
struct Cli {
    /// Mirror every protocol frame to stderr, prefixed `<-` (in) or `->` (out).
    #[arg(long, global = true)]
    log_messages: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a whole scripted session end to end and print it as an editor would show it.
    Demo,
    /// Print a session's audit trail: prompts, each tool call with its decision, the deciding
    /// hooks, original and effective arguments (a diff when rewritten), how it ended and how
    /// long it ran.
    Audit {
        /// A session id (looked up in candor's session logs) or the path of a log.
        session: String,
        /// Print the timeline as JSON (one array of entries).
        #[arg(long)]
        json: bool,
    },
    /// Show what a session in a directory would load: the model and its key variable, each
    /// settings file (loaded, skipped and why, or the error with its line), every hook with its
    /// matchers, the permission rules, the starting mode and whether the project is trusted.
    /// Exits 1 when something is broken.
    Doctor {
        /// The directory a session would work in (default: the current one).
        #[arg(long, value_name = "DIR")]
        cwd: Option<std::path::PathBuf>,
        /// A directory the session would also count as its project, as an editor's
        /// `additionalDirectories` (repeatable).
        #[arg(long = "add-dir", value_name = "DIR")]
        add_dir: Vec<std::path::PathBuf>,
        /// Print the report as JSON (protocol/doctor.md).
        #[arg(long)]
        json: bool,
    },
    /// Trust a project's own settings (its hooks, allow rules and starting mode): prints every
    /// one of them whole, with the project files its hooks run, and asks on the terminal. The
    /// answer is remembered for exactly what was shown; when a setting or one of those files
    /// changes, sessions there wait for trust again. Exits 1 when nothing was trusted.
    Trust {
        /// The project directory (default: the current one).
        #[arg(value_name = "DIR")]
        dir: Option<std::path::PathBuf>,
        /// Trust without asking (you typed this; scripts may use it).
        #[arg(long)]
        yes: bool,
    },
    /// Run protocol conformance scenarios against candor or another ACP agent.
    Harness {
        /// Run the scenarios against this agent command (run by `bash -c`) instead of candor;
        /// scenarios that need candor's scripted model or log are skipped.
        #[arg(long, value_name = "CMD")]
        agent: Option<String>,
        /// Print the whole transcript and the agent's stderr for failing scenarios.
        #[arg(long, short)]
        verbose: bool,
        /// Scenario files or directories (default: protocol/scenarios).
        #[arg(value_name = "FILES")]
        files: Vec<std::path::PathBuf>,
    },
    /// The MCP server the tests and the conformance scenarios start (a fixture; built with
    /// the default feature `mcp-test-server`).
    #[cfg(feature = "mcp-test-server")]
    #[command(name = "mcp-test-server", hide = true)]
    McpTestServer {
        /// Its own options (`--http ADDR`, `--sse ADDR`, `--log FILE`, `--delay-ms N`,
        /// `--hang`, `--exit-at-start`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    // The sandbox launcher (`candor __sandbox …`) runs before anything
    // else: it must unshare namespaces while the process has one thread.
    if let Some(code) = candor::sandbox::entry::main_if_sandbox() {
        return code;
    }
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    match run(cli) {
        Ok(code) => code,
        // `candor demo | head` is fine: a closed stdout is not a failure.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Said once (not also through `tracing`, which writes to the
            // same stderr), even with RUST_LOG=off.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("candor: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.command {
        None => Ok(serve_stdio(runtime, cli.log_messages)),
        Some(Command::Audit { session, json }) => {
            let config = candor::Config::from_env();
            let warnings = candor::audit::run(
                &config.sessions_dir(),
                &session,
                json,
                &mut std::io::stdout(),
            )
            .map_err(|e| anyhow::anyhow!(e))?;
            for warning in warnings {
                tracing::warn!("{warning}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Doctor { cwd, add_dir, json }) => {
            let mut config = candor::Config::from_env();
            config.launcher = std::env::current_exe().ok();
            let cwd = match cwd {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            // What this kernel gives the sandbox, asked as a session asks.
            let kernel = match &config.launcher {
                Some(launcher) => runtime
                    .block_on(candor::tools::exec::sandbox_probe(launcher))
                    .clone(),
                None => candor::sandbox::Probe::nothing("candor's own binary is not known"),
            };
            let report = candor::doctor::report_adding(&config, &cwd, &add_dir, &kernel);
            let text = if json {
                serde_json::to_string_pretty(&report)? + "\n"
            } else {
                candor::doctor::render(&report)
            };
            use std::io::Write as _;
            std::io::stdout().write_all(text.as_bytes())?;
            Ok(if report.broken {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Some(Command::Trust { dir, yes }) => {
            use std::io::IsTerminal as _;
            let config = candor::Config::from_env();
            let dir = match dir {
                Some(dir) => dir,
                None => std::env::current_dir()?,
            };
            let stdin = std::io::stdin();
            let mut lines = stdin.lock();
            // Only a person at a terminal answers the question.
            let terminal: Option<&mut dyn std::io::BufRead> =
                std::io::stdin().is_terminal().then_some(&mut lines);
            let trusted = candor::bridges::project_trust::command(
                &config,
                &dir,
                yes,
                terminal,
                &mut std::io::stdout(),
            )?;
            Ok(if trusted {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Some(Command::Demo) => {
            let state = candor::Config::from_env().home;
            Ok(runtime.block_on(candor::demo::run(&mut std::io::stdout(), &state))?)
        }
        Some(Command::Harness {
            agent,
            verbose,
            files,
        }) => {
            let opts = candor::harness::Options {
                paths: files,
                agent,
                candor: std::env::current_exe()?,
                verbose,
            };
            let ok = runtime.block_on(candor::harness::run(&opts, &mut std::io::stdout()))?;
            Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        #[cfg(feature = "mcp-test-server")]
        Some(Command::McpTestServer { args }) => {
            runtime
                .block_on(candor::mcp_test_server::run(args))
                .map_err(|e| anyhow::anyhow!(e))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// No subcommand: one ACP connection on stdin/stdout.
fn serve_stdio(runtime: tokio::runtime::Runtime, log_messages: bool) -> ExitCode {
    let mut config = candor::Config::from_env();
    config.log_messages = log_messages;
    // The sandbox's launcher is this binary.
    config.launcher = std::env::current_exe().ok();
    // Before any child exists: what commands and hooks leave behind
    // becomes candor's to end.
    candor::tools::exec::become_subreaper();
    if std::env::var_os("HOME").is_none()
        && let Some(home) = config.user_home.clone()
    {
        candor::tools::exec::home_for_children(home);
    }
    candor::tools::exec::pass_env(
        config
            .user_settings
            .as_ref()
            .ok()
            .and_then(|s| s.pass_env.clone())
            .unwrap_or_default(),
    );
    {
        use std::io::IsTerminal as _;
        if let Some(hint) = candor::terminal_hint(std::io::stdin().is_terminal()) {
            #[allow(clippy::print_stderr)] // for the person at the terminal
            {
                eprintln!("{hint}");
            }
        }
    }
    runtime.block_on(async {
        let (input, output) = candor::stdio();
        candor::serve(input, output, config, terminate_signal()).await;
    });
    // When stdin is not a pipe, do not wait for the blocking reader
    // thread, which may sit in read(2) forever.
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    ExitCode::SUCCESS
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Resolves on SIGTERM or SIGINT.
async fn terminate_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("could not install signal handlers; only end of input stops candor");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
