//! Conversions at the FFI edge.
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};

use ccsandbox_sys as sys;

use crate::error::{Error, Result};

/// A borrowed C string as an owned String (lossy UTF-8; "" for NULL).
pub(crate) fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings that live at least
    // as long as the handle we just called it on, and we copy immediately.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A Rust string for the library; an interior NUL is an error naming `what`.
pub(crate) fn cstring(s: &str, call: &'static str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(sys::CCSB_E_INVAL, call, format!("{}: contains a NUL byte", what)))
}

/// Takes ownership of a library-allocated string: copies it, then ccsb_free.
pub(crate) fn take_owned(p: *mut c_char) -> String {
    let s = text(p);
    // SAFETY: p was allocated by the library for us (or is NULL, which
    // ccsb_free accepts).
    unsafe { sys::ccsb_free(p as *mut c_void) };
    s
}

/// A caller error buffer as text.
pub(crate) fn errbuf_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

pub(crate) const ERRBUF_LEN: usize = 1024;
