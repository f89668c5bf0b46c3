//! The README's Rust example (built by `cargo test`, so it stays compiling).
//! usage: cargo run --example readme -- [DIR]   (DIR defaults to /srv/repo)
use ccsandbox::{Context, ExecRequest, Spec};

fn main() -> ccsandbox::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/srv/repo".into());
    let ctx = Context::new()?;
    let mut spec = Spec::new()?;
    spec.bind_mount(&dir, None, false)?.guest_workdir(&dir)?;
    let session = ctx.launch(&spec)?;
    let out = session.run(&ExecRequest::new(["sh", "-c", "echo hi; touch /etc/x"]))?;
    println!(
        "{} {:?} {:?}",
        out.exit_code,
        String::from_utf8_lossy(&out.stdout),
        out.violations
    );
    Ok(())
}
