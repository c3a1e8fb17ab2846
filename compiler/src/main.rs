//! The `compiler` command: `check` validates content, `build` also writes the bundle,
//! `inspect` describes a bundle file. Exit status: 0 when nothing fails, 1 when an error
//! (or, with `--deny-warnings`, a warning) remains after the baseline, 2 on bad usage.

use clap::{Args, Parser, Subcommand};
use compiler::diagnostics::{Baseline, Format, render};
use compiler::{Compiled, Progress, selection_from};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

// mimalloc: fewer, faster allocations for the many small strings of a content package, and
// no per-thread arena growth when archives are parsed in parallel.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "compiler",
    version,
    about = "Compile an OpenMRS content package into a sealed bundle"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate the content without writing anything.
    Check(BuildArgs),
    /// Validate the content and write the bundle.
    Build {
        #[command(flatten)]
        args: BuildArgs,
        /// Where to write the bundle.
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Print a bundle's header and the number of entities of each type.
    Inspect {
        /// The bundle file.
        file: PathBuf,
    },
}

#[derive(Args)]
struct BuildArgs {
    /// Project root: holds openmrs_config/, sites/ and frontend/.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// `distro` (the base package) or `site` (base plus one site); default $BUILD_TYPE, else distro.
    #[arg(long)]
    build_type: Option<String>,
    /// The site for a site build; default $MVN_PROJECT.
    #[arg(long)]
    site: Option<String>,
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Fail on warnings too.
    #[arg(long)]
    deny_warnings: bool,
    /// Accept the diagnostics recorded in this file (default: <root>/validator-baseline.json if present).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Record today's diagnostics as the baseline in this file.
    #[arg(long)]
    write_baseline: Option<PathBuf>,
}

/// An indicatif bar on a terminal; nothing otherwise.
struct Bar(Option<ProgressBar>);

impl Progress for Bar {
    fn start(&self, total: u64) {
        if let Some(b) = &self.0 {
            b.set_length(total);
            b.set_message("OCL archives");
        }
    }
    fn advance(&self) {
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }
    fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => run(&args, None),
        Command::Build { args, out } => run(&args, Some(&out)),
        Command::Inspect { file } => inspect(&file),
    }
}

fn run(args: &BuildArgs, out: Option<&Path>) -> ExitCode {
    let started = Instant::now();
    let selection = match selection_from(args.build_type.as_deref(), args.site.as_deref(), |k| {
        std::env::var(k).ok()
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let stderr_tty = std::io::stderr().is_terminal();
    let bar = Bar(stderr_tty.then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template("{spinner} {msg} {pos}/{len} {wide_bar}")
                .expect("valid template"),
        );
        b
    }));
    let compiled = compiler::compile(&args.root, &selection, &bar);

    if let Some(path) = &args.write_baseline {
        let baseline = Baseline::from_diagnostics(&compiled.diagnostics);
        let json = serde_json::to_string_pretty(&baseline).expect("baseline serializes") + "\n";
        if let Err(e) = std::fs::write(path, json) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(2);
        }
        eprintln!(
            "wrote {} baseline entries to {}",
            baseline.entries.len(),
            path.display()
        );
    }

    let baseline_path = args.baseline.clone().or_else(|| {
        let p = args.root.join("validator-baseline.json");
        (args.write_baseline.is_none() && p.is_file()).then_some(p)
    });
    let (diagnostics, baselined) = match &baseline_path {
        Some(p) if args.write_baseline.is_none() => match Baseline::read(p) {
            Ok(b) => {
                let (mut d, n) = b.apply(compiled.diagnostics.clone(), &p.display().to_string());
                d.sort_by(|a, b| (&a.position, &a.code).cmp(&(&b.position, &b.code)));
                (d, n)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
        _ if args.write_baseline.is_some() => (Vec::new(), compiled.diagnostics.len()),
        _ => (compiled.diagnostics.clone(), 0),
    };

    let color =
        stderr_tty && args.format == Format::Human && std::env::var_os("NO_COLOR").is_none();
    let text = render(&diagnostics, args.format, color);
    match args.format {
        Format::Human => eprint!("{text}"),
        Format::Json | Format::Github => print!("{text}"),
    }

    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    let failed = errors > 0 || (args.deny_warnings && warnings > 0);
    let mut wrote = String::new();
    if let Some(out) = out {
        if failed {
            wrote = " (bundle not written)".into();
        } else {
            match write_bundle(&compiled, out) {
                Ok(n) => wrote = format!(", wrote {} ({n} bytes)", out.display()),
                Err(e) => {
                    eprintln!("error: cannot write {}: {e}", out.display());
                    return ExitCode::from(2);
                }
            }
        }
    }
    eprintln!(
        "{}",
        summary(
            &compiled,
            errors,
            warnings,
            baselined,
            started.elapsed().as_secs_f64(),
            &wrote
        )
    );
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn summary(
    c: &Compiled,
    errors: usize,
    warnings: usize,
    baselined: usize,
    secs: f64,
    wrote: &str,
) -> String {
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let target = match &c.header.site {
        Some(site) => format!("site {site}"),
        None => "distro".to_string(),
    };
    let mut s = format!(
        "{target}: {}, {}, {} in {secs:.2} s",
        plural(errors, "error", "errors"),
        plural(warnings, "warning", "warnings"),
        plural(c.entity_count(), "entity", "entities"),
    );
    if baselined > 0 {
        s.push_str(&format!(", {baselined} accepted by the baseline"));
    }
    s.push_str(wrote);
    s
}

fn write_bundle(c: &Compiled, out: &Path) -> std::io::Result<usize> {
    use std::io::Write;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    // Write then rename, so a reader never sees half a bundle.
    let tmp = out.with_extension("partial");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    let size = c.write_to(&mut file)?;
    file.flush()?;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, out)?;
    Ok(size)
}

fn inspect(file: &Path) -> ExitCode {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let bundle = match model::decode(&bytes) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(1);
        }
    };
    let h = &bundle.header;
    println!("format version:   {}", h.format_version);
    println!("compiler version: {}", h.compiler_version);
    println!("build type:       {}", h.build_type.as_str());
    println!("site:             {}", h.site.as_deref().unwrap_or("-"));
    println!("content hash:     {}", h.content_hash);
    println!("size:             {} bytes", bytes.len());
    println!("layers (first to last):");
    for layer in &h.layers {
        println!(
            "  {:<11} {} {}",
            layer.role,
            layer.name,
            layer.version.as_deref().unwrap_or("-")
        );
    }
    println!();
    for (name, count) in bundle.content.counts() {
        println!("{name:<26} {count:>8}");
    }
    ExitCode::SUCCESS
}
