//! `Probe`: what this host offers (values copied from the context's result).
use std::ptr;

use ccsandbox_sys as sys;

use crate::error::{Error, Result};
use crate::util::{take_owned, text};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// "linux", "wsl2", "macos" or "other".
    pub platform: String,
    /// "bubblewrap", "seatbelt" or "none".
    pub mechanism: String,
    /// The native backend works right now.
    pub available: bool,
    pub requires_install: bool,
    pub note: String,
    pub hint: String,
    pub missing_packages: Vec<String>,
    pub microvm_available: bool,
    pub json: String,
    startup_on: String,
    startup_disabled: String,
}

fn owned(call: &'static str, r: i32, p: *mut std::os::raw::c_char) -> Result<String> {
    let s = take_owned(p);
    if r < 0 {
        return Err(Error::new(r, call, "cannot produce the text"));
    }
    Ok(s)
}

impl Probe {
    /// # Safety
    /// `pr` must be a probe result owned by a live context.
    pub(crate) unsafe fn copy(pr: *const sys::ccsb_probe_result) -> Result<Probe> {
        let mut j = ptr::null_mut();
        let rj = sys::ccsb_probe_to_json(pr, &mut j);
        let json = owned("ccsb_probe_to_json", rj, j)?;
        let mut on = ptr::null_mut();
        let r_on = sys::ccsb_probe_startup_message(pr, 0, &mut on);
        let startup_on = owned("ccsb_probe_startup_message", r_on, on)?;
        let mut off = ptr::null_mut();
        let r_off = sys::ccsb_probe_startup_message(pr, 1, &mut off);
        let startup_disabled = owned("ccsb_probe_startup_message", r_off, off)?;
        Ok(Probe {
            platform: text(sys::ccsb_probe_platform(pr)),
            mechanism: text(sys::ccsb_probe_mechanism(pr)),
            available: sys::ccsb_probe_available(pr) != 0,
            requires_install: sys::ccsb_probe_requires_install(pr) != 0,
            note: text(sys::ccsb_probe_note(pr)),
            hint: text(sys::ccsb_probe_hint(pr)),
            missing_packages: text(sys::ccsb_probe_missing_packages(pr))
                .split_whitespace()
                .map(String::from)
                .collect(),
            microvm_available: sys::ccsb_probe_microvm_available(pr) != 0,
            json,
            startup_on,
            startup_disabled,
        })
    }

    /// The host's one-line startup message ("agent sandbox ON (...)", ...).
    pub fn startup_message(&self, disabled: bool) -> &str {
        if disabled {
            &self.startup_disabled
        } else {
            &self.startup_on
        }
    }
}
