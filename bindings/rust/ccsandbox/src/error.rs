//! `Error`: a CCSB_E_* code and the library's message.
use std::fmt;
use std::os::raw::c_int;

use ccsandbox_sys as sys;

/// The closed set of library error codes (values never change).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    InvalidArgument,
    OutOfMemory,
    Spec,
    Unavailable,
    Policy,
    State,
    NotFound,
    Io,
    Again,
    Reentrant,
    Launch,
    Internal,
    Unsupported,
    TimedOut,
    /// A code this version of the bindings does not know.
    Other(i32),
}

impl ErrorKind {
    pub fn from_code(code: c_int) -> ErrorKind {
        match code {
            sys::CCSB_E_INVAL => ErrorKind::InvalidArgument,
            sys::CCSB_E_NOMEM => ErrorKind::OutOfMemory,
            sys::CCSB_E_SPEC => ErrorKind::Spec,
            sys::CCSB_E_UNAVAILABLE => ErrorKind::Unavailable,
            sys::CCSB_E_POLICY => ErrorKind::Policy,
            sys::CCSB_E_STATE => ErrorKind::State,
            sys::CCSB_E_NOTFOUND => ErrorKind::NotFound,
            sys::CCSB_E_IO => ErrorKind::Io,
            sys::CCSB_E_AGAIN => ErrorKind::Again,
            sys::CCSB_E_REENTRANT => ErrorKind::Reentrant,
            sys::CCSB_E_LAUNCH => ErrorKind::Launch,
            sys::CCSB_E_INTERNAL => ErrorKind::Internal,
            sys::CCSB_E_UNSUPPORTED => ErrorKind::Unsupported,
            sys::CCSB_E_TIMEDOUT => ErrorKind::TimedOut,
            other => ErrorKind::Other(other),
        }
    }

    /// The C symbol, e.g. "CCSB_E_SPEC".
    pub fn symbol(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "CCSB_E_INVAL",
            ErrorKind::OutOfMemory => "CCSB_E_NOMEM",
            ErrorKind::Spec => "CCSB_E_SPEC",
            ErrorKind::Unavailable => "CCSB_E_UNAVAILABLE",
            ErrorKind::Policy => "CCSB_E_POLICY",
            ErrorKind::State => "CCSB_E_STATE",
            ErrorKind::NotFound => "CCSB_E_NOTFOUND",
            ErrorKind::Io => "CCSB_E_IO",
            ErrorKind::Again => "CCSB_E_AGAIN",
            ErrorKind::Reentrant => "CCSB_E_REENTRANT",
            ErrorKind::Launch => "CCSB_E_LAUNCH",
            ErrorKind::Internal => "CCSB_E_INTERNAL",
            ErrorKind::Unsupported => "CCSB_E_UNSUPPORTED",
            ErrorKind::TimedOut => "CCSB_E_TIMEDOUT",
            ErrorKind::Other(_) => "CCSB_E_?",
        }
    }
}

/// A failed call: the negative CCSB_E_* code, the call that failed and the
/// library's detail text (which names the field for spec errors).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: i32,
    call: &'static str,
    message: String,
}

impl Error {
    pub(crate) fn new(code: c_int, call: &'static str, message: impl Into<String>) -> Error {
        Error {
            code,
            call,
            message: message.into(),
        }
    }

    /// The CCSB_E_* value (negative).
    pub fn code(&self) -> i32 {
        self.code
    }

    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_code(self.code)
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The C function (or binding step) that failed.
    pub fn call(&self) -> &'static str {
        self.call
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if self.message.is_empty() {
            crate::strerror(self.code)
        } else {
            &self.message
        };
        write!(f, "{}: {} ({})", self.call, text, self.kind().symbol())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
