//! Enumerations of the C API as Rust enums.
use std::os::raw::c_int;

use ccsandbox_sys as sys;

use crate::util::text;

/// Which sandbox runs a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Unspecified: native when the probe offers it, else none.
    Auto,
    /// bubblewrap on Linux, Seatbelt on macOS.
    Native,
    /// No isolation; the environment is still sanitised.
    None,
    /// A microVM; never falls back silently.
    Microvm,
}

impl Backend {
    pub fn to_raw(self) -> c_int {
        match self {
            Backend::Auto => sys::CCSB_BACKEND_AUTO,
            Backend::Native => sys::CCSB_BACKEND_NATIVE,
            Backend::None => sys::CCSB_BACKEND_NONE,
            Backend::Microvm => sys::CCSB_BACKEND_MICROVM,
        }
    }

    pub fn from_raw(v: c_int) -> Option<Backend> {
        match v {
            sys::CCSB_BACKEND_AUTO => Some(Backend::Auto),
            sys::CCSB_BACKEND_NATIVE => Some(Backend::Native),
            sys::CCSB_BACKEND_NONE => Some(Backend::None),
            sys::CCSB_BACKEND_MICROVM => Some(Backend::Microvm),
            _ => None,
        }
    }

    /// Lenient parse of a *stored* name, as the library does: None or an
    /// unknown name is `None`, "docker" is `Native`.
    pub fn from_name(name: Option<&str>) -> Backend {
        let c = name.and_then(|n| std::ffi::CString::new(n).ok());
        // A name with a NUL cannot be a known one: it parses as unknown.
        if name.is_some() && c.is_none() {
            return Backend::None;
        }
        let p = c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: p is NULL or a valid NUL-terminated string.
        Backend::from_raw(unsafe { sys::ccsb_backend_from_name(p) }).unwrap_or(Backend::None)
    }

    pub fn name(self) -> String {
        // SAFETY: returns a static string.
        text(unsafe { sys::ccsb_backend_name(self.to_raw()) })
    }
}

/// What bind mounts may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Chat,
    Review,
    Plan,
    Orchestrate,
}

impl Mode {
    pub fn to_raw(self) -> c_int {
        match self {
            Mode::Chat => sys::CCSB_MODE_CHAT,
            Mode::Review => sys::CCSB_MODE_REVIEW,
            Mode::Plan => sys::CCSB_MODE_PLAN,
            Mode::Orchestrate => sys::CCSB_MODE_ORCHESTRATE,
        }
    }

    pub fn name(self) -> String {
        // SAFETY: returns a static string.
        text(unsafe { sys::ccsb_mode_name(self.to_raw()) })
    }
}

/// A session's lifecycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    Created,
    Warm,
    Active,
    Suspended,
    Destroyed,
    Error,
}

impl State {
    pub fn from_raw(v: c_int) -> Option<State> {
        match v {
            sys::CCSB_STATE_CREATED => Some(State::Created),
            sys::CCSB_STATE_WARM => Some(State::Warm),
            sys::CCSB_STATE_ACTIVE => Some(State::Active),
            sys::CCSB_STATE_SUSPENDED => Some(State::Suspended),
            sys::CCSB_STATE_DESTROYED => Some(State::Destroyed),
            sys::CCSB_STATE_ERROR => Some(State::Error),
            _ => None,
        }
    }
}

/// Why the library killed an exec or a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KillReason {
    Timeout,
    Oom,
    Manual,
    Host,
}

impl KillReason {
    pub fn from_raw(v: c_int) -> Option<KillReason> {
        match v {
            sys::CCSB_KILL_TIMEOUT => Some(KillReason::Timeout),
            sys::CCSB_KILL_OOM => Some(KillReason::Oom),
            sys::CCSB_KILL_MANUAL => Some(KillReason::Manual),
            sys::CCSB_KILL_HOST => Some(KillReason::Host),
            _ => None,
        }
    }
}

/// The kind of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    Starting,
    Ready,
    Stdout,
    Stderr,
    Exit,
    Killed,
    Violation,
    State,
    Error,
    /// A type number this version of the bindings does not know.
    Unknown(i32),
}

impl EventKind {
    pub fn from_raw(v: c_int) -> EventKind {
        match v {
            sys::CCSB_EVENT_STARTING => EventKind::Starting,
            sys::CCSB_EVENT_READY => EventKind::Ready,
            sys::CCSB_EVENT_STDOUT => EventKind::Stdout,
            sys::CCSB_EVENT_STDERR => EventKind::Stderr,
            sys::CCSB_EVENT_EXIT => EventKind::Exit,
            sys::CCSB_EVENT_KILLED => EventKind::Killed,
            sys::CCSB_EVENT_VIOLATION => EventKind::Violation,
            sys::CCSB_EVENT_STATE => EventKind::State,
            sys::CCSB_EVENT_ERROR => EventKind::Error,
            other => EventKind::Unknown(other),
        }
    }
}
