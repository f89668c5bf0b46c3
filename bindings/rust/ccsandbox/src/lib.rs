//! Safe Rust bindings to libccsandbox: run an AI coding agent's commands
//! inside an OS sandbox (bubblewrap on Linux, Seatbelt on macOS).
//!
//! ```no_run
//! use ccsandbox::{Backend, Context, ExecRequest, Spec};
//! let ctx = Context::new()?;
//! let mut spec = Spec::new()?;
//! spec.backend(Backend::None)?;
//! let session = ctx.launch(&spec)?;
//! let out = session.run(&ExecRequest::new(["sh", "-c", "echo hi"]))?;
//! assert_eq!(out.stdout, b"hi\n");
//! # Ok::<(), ccsandbox::Error>(())
//! ```
//!
//! Threading: `Context`, `Session`, `Exec` and `Spec` are `Send + Sync`
//! (the C library accepts calls from any thread on a context it runs
//! itself). Events are pulled, never pushed into Rust from a library thread;
//! the only Rust code a library thread may run is the optional wakeup
//! closure, and a panic there is caught before it reaches C.
mod context;
mod error;
mod event;
mod probe;
mod session;
mod spec;
mod types;
mod util;

pub use ccsandbox_sys as sys;
pub use context::{Context, SESSION_MAILBOX_MAX};
pub use error::{Error, ErrorKind, Result};
pub use event::Event;
pub use probe::Probe;
pub use session::{Exec, ExecEvents, ExecRequest, Output, Session};
pub use spec::Spec;
pub use types::{Backend, EventKind, KillReason, Mode, State};

use std::ffi::CStr;

/// The version of the library actually loaded, e.g. "1.0.0".
pub fn version() -> &'static str {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::ccsb_version()) }.to_str().unwrap_or("?")
}

/// CCSB_VERSION_NUMBER of the library actually loaded.
pub fn version_number() -> u32 {
    // SAFETY: no arguments.
    unsafe { sys::ccsb_version_number() }
}

/// Static text for a CCSB_E_* code.
pub fn strerror(code: i32) -> &'static str {
    // SAFETY: never NULL, static.
    unsafe { CStr::from_ptr(sys::ccsb_strerror(code)) }
        .to_str()
        .unwrap_or("?")
}

/// Probes this host with a short-lived context.
pub fn probe() -> Result<Probe> {
    Context::new()?.probe()
}
