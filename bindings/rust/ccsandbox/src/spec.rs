//! `Spec`: what a session may see and do (owned `ccsb_spec`).
use std::os::raw::{c_char, c_int};
use std::ptr::{self, NonNull};
use std::time::Duration;

use ccsandbox_sys as sys;

use crate::error::{Error, Result};
use crate::types::{Backend, Mode};
use crate::util::{cstring, errbuf_text, take_owned, ERRBUF_LEN};

/// A sandbox spec. Setters take `&mut self` and return `Result<&mut Self>`
/// so they chain with `?`.
pub struct Spec {
    ptr: NonNull<sys::ccsb_spec>,
}

// SAFETY: a ccsb_spec is plain data owned by this value. Mutation needs
// &mut Spec; the const calls (to_json, validate, check_host, explain, copy,
// launch) only read it, so sharing &Spec across threads is sound.
unsafe impl Send for Spec {}
unsafe impl Sync for Spec {}

fn check(r: c_int, call: &'static str, what: impl FnOnce() -> String) -> Result<()> {
    if r < 0 {
        Err(Error::new(r, call, what()))
    } else {
        Ok(())
    }
}

impl Spec {
    /// A spec with every default.
    pub fn new() -> Result<Spec> {
        let mut p = ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let r = unsafe { sys::ccsb_spec_new(&mut p) };
        check(r, "ccsb_spec_new", || "cannot allocate a spec".into())?;
        NonNull::new(p)
            .map(|ptr| Spec { ptr })
            .ok_or_else(|| Error::new(sys::CCSB_E_INTERNAL, "ccsb_spec_new", "returned NULL"))
    }

    /// Parses and validates JSON; a bad field is an error naming it.
    pub fn from_json(json: &str) -> Result<Spec> {
        let mut p = ptr::null_mut();
        let mut err = [0 as c_char; ERRBUF_LEN];
        // SAFETY: json is passed with its explicit length; errbuf is ours.
        let r = unsafe {
            sys::ccsb_spec_from_json(
                &mut p,
                json.as_ptr() as *const c_char,
                json.len(),
                err.as_mut_ptr(),
                err.len(),
            )
        };
        check(r, "ccsb_spec_from_json", || errbuf_text(&err))?;
        NonNull::new(p)
            .map(|ptr| Spec { ptr })
            .ok_or_else(|| Error::new(sys::CCSB_E_INTERNAL, "ccsb_spec_from_json", "returned NULL"))
    }

    pub fn as_ptr(&self) -> *const sys::ccsb_spec {
        self.ptr.as_ptr()
    }

    /// Every field, defaults included, as JSON.
    pub fn to_json(&self) -> Result<String> {
        let mut out = ptr::null_mut();
        // SAFETY: valid spec; out-pointer to a local.
        let r = unsafe { sys::ccsb_spec_to_json(self.as_ptr(), &mut out) };
        let s = take_owned(out);
        check(r, "ccsb_spec_to_json", || "cannot serialise the spec".into())?;
        Ok(s)
    }

    /// Full validation, as launch does.
    pub fn validate(&self) -> Result<()> {
        let mut err = [0 as c_char; ERRBUF_LEN];
        // SAFETY: valid spec; errbuf is ours.
        let r = unsafe { sys::ccsb_spec_validate(self.as_ptr(), err.as_mut_ptr(), err.len()) };
        check(r, "ccsb_spec_validate", || errbuf_text(&err))
    }

    pub fn try_clone(&self) -> Result<Spec> {
        let mut p = ptr::null_mut();
        // SAFETY: valid spec; out-pointer to a local.
        let r = unsafe { sys::ccsb_spec_copy(self.as_ptr(), &mut p) };
        check(r, "ccsb_spec_copy", || "cannot copy the spec".into())?;
        NonNull::new(p)
            .map(|ptr| Spec { ptr })
            .ok_or_else(|| Error::new(sys::CCSB_E_INTERNAL, "ccsb_spec_copy", "returned NULL"))
    }

    /// Would egress to "host", "host:port" or "[v6]:port" be allowed, and by
    /// which rule.
    pub fn check_host(&self, host: &str) -> Result<(bool, String)> {
        let h = cstring(host, "ccsb_spec_check_host", "host")?;
        let mut allowed: c_int = 0;
        let mut reason = ptr::null_mut();
        // SAFETY: valid spec and string; out-pointers to locals.
        let r = unsafe { sys::ccsb_spec_check_host(self.as_ptr(), h.as_ptr(), &mut allowed, &mut reason) };
        let reason = take_owned(reason);
        check(r, "ccsb_spec_check_host", || {
            if reason.is_empty() {
                format!("host {:?} rejected", host)
            } else {
                reason.clone()
            }
        })?;
        Ok((allowed != 0, reason))
    }

    /// The resolved policy as text; platform "linux", "macos" or None (this host).
    pub fn explain(&self, platform: Option<&str>) -> Result<String> {
        let pl = match platform {
            Some(p) => Some(cstring(p, "ccsb_explain", "platform")?),
            None => None,
        };
        let mut out = ptr::null_mut();
        let mut err = [0 as c_char; ERRBUF_LEN];
        // SAFETY: valid spec; platform NULL or valid; out-pointers are ours.
        let r = unsafe {
            sys::ccsb_explain(
                self.as_ptr(),
                pl.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                &mut out,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        let text = take_owned(out);
        check(r, "ccsb_explain", || errbuf_text(&err))?;
        Ok(text)
    }

    fn set_str(
        &mut self,
        f: unsafe extern "C" fn(*mut sys::ccsb_spec, *const c_char) -> c_int,
        call: &'static str,
        field: &str,
        value: &str,
    ) -> Result<&mut Self> {
        let c = cstring(value, call, field)?;
        // SAFETY: valid spec and string; the setter copies the string.
        let r = unsafe { f(self.ptr.as_ptr(), c.as_ptr()) };
        check(r, call, || format!("{}: rejected {:?}", field, value))?;
        Ok(self)
    }

    fn set_int(&mut self, r: c_int, call: &'static str, field: &str) -> Result<&mut Self> {
        check(r, call, || format!("{}: rejected", field))?;
        Ok(self)
    }

    pub fn session_id(&mut self, id: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_set_session_id,
            "ccsb_spec_set_session_id",
            "sessionId",
            id,
        )
    }
    pub fn workspace_id(&mut self, id: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_set_workspace_id,
            "ccsb_spec_set_workspace_id",
            "workspaceId",
            id,
        )
    }
    pub fn agent_id(&mut self, id: &str) -> Result<&mut Self> {
        self.set_str(sys::ccsb_spec_set_agent_id, "ccsb_spec_set_agent_id", "agentId", id)
    }
    pub fn guest_workdir(&mut self, path: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_set_guest_workdir,
            "ccsb_spec_set_guest_workdir",
            "guestWorkdir",
            path,
        )
    }
    pub fn egress_allow(&mut self, entry: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_egress_allow,
            "ccsb_spec_add_egress_allow",
            "egressAllowlist",
            entry,
        )
    }
    pub fn egress_deny(&mut self, entry: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_egress_deny,
            "ccsb_spec_add_egress_deny",
            "egressDenylist",
            entry,
        )
    }
    pub fn protected_path(&mut self, path: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_protected_path,
            "ccsb_spec_add_protected_path",
            "protectedPaths",
            path,
        )
    }
    pub fn runner_state_dir(&mut self, path: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_runner_state_dir,
            "ccsb_spec_add_runner_state_dir",
            "runnerStateDirs",
            path,
        )
    }
    pub fn exec_grant_root(&mut self, path: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_exec_grant_root,
            "ccsb_spec_add_exec_grant_root",
            "execGrantRoots",
            path,
        )
    }
    pub fn deny_read(&mut self, path: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_deny_read,
            "ccsb_spec_add_deny_read",
            "denyRead",
            path,
        )
    }
    pub fn deny_write_glob(&mut self, glob: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_deny_write_glob,
            "ccsb_spec_add_deny_write_glob",
            "denyWriteGlobs",
            glob,
        )
    }
    /// A host unix socket the commands may connect to (turns on AF_UNIX).
    pub fn unix_socket(&mut self, path: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_add_unix_socket,
            "ccsb_spec_add_unix_socket",
            "unixSockets",
            path,
        )
    }

    pub fn backend(&mut self, b: Backend) -> Result<&mut Self> {
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_backend(self.ptr.as_ptr(), b.to_raw()) };
        self.set_int(r, "ccsb_spec_set_backend", "backend")
    }
    pub fn mode(&mut self, m: Mode) -> Result<&mut Self> {
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_mode(self.ptr.as_ptr(), m.to_raw()) };
        self.set_int(r, "ccsb_spec_set_mode", "mode")
    }
    pub fn network_enabled(&mut self, on: bool) -> Result<&mut Self> {
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_network_enabled(self.ptr.as_ptr(), on as c_int) };
        self.set_int(r, "ccsb_spec_set_network_enabled", "networkEnabled")
    }
    /// An HTTP proxy the host itself must use ("http://[user:password@]host:port"):
    /// allowed connections are tunnelled through it.
    pub fn upstream_proxy(&mut self, url: &str) -> Result<&mut Self> {
        self.set_str(
            sys::ccsb_spec_set_upstream_proxy,
            "ccsb_spec_set_upstream_proxy",
            "upstreamProxy",
            url,
        )
    }

    pub fn allow_git_config(&mut self, on: bool) -> Result<&mut Self> {
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_allow_git_config(self.ptr.as_ptr(), on as c_int) };
        self.set_int(r, "ccsb_spec_set_allow_git_config", "allowGitConfig")
    }
    /// The session's wall-clock limit (zero: none). Milliseconds precision.
    pub fn timeout(&mut self, d: Duration) -> Result<&mut Self> {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_timeout_ms(self.ptr.as_ptr(), ms) };
        self.set_int(r, "ccsb_spec_set_timeout_ms", "limits.timeoutMs")
    }
    pub fn memory_max(&mut self, bytes: u64) -> Result<&mut Self> {
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_memory_max(self.ptr.as_ptr(), bytes) };
        self.set_int(r, "ccsb_spec_set_memory_max", "limits.memoryBytes")
    }
    pub fn pids_max(&mut self, count: u32) -> Result<&mut Self> {
        // SAFETY: valid spec.
        let r = unsafe { sys::ccsb_spec_set_pids_max(self.ptr.as_ptr(), count) };
        self.set_int(r, "ccsb_spec_set_pids_max", "limits.pids")
    }

    /// A host path visible in the sandbox at `guest_path` (None: the same path).
    pub fn bind_mount(&mut self, host_path: &str, guest_path: Option<&str>, read_only: bool) -> Result<&mut Self> {
        let call = "ccsb_spec_add_bind_mount";
        let h = cstring(host_path, call, "bindMounts.hostPath")?;
        let g = match guest_path {
            Some(g) => Some(cstring(g, call, "bindMounts.guestPath")?),
            None => None,
        };
        // SAFETY: valid spec; strings valid or NULL; the setter copies them.
        let r = unsafe {
            sys::ccsb_spec_add_bind_mount(
                self.ptr.as_ptr(),
                h.as_ptr(),
                g.as_ref().map_or(ptr::null(), |c| c.as_ptr()),
                read_only as c_int,
            )
        };
        check(r, call, || format!("bind mount {:?} rejected", host_path))?;
        Ok(self)
    }

    /// An environment variable for every exec of the session.
    pub fn env(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let call = "ccsb_spec_set_env";
        let n = cstring(name, call, "env name")?;
        let v = cstring(value, call, name)?;
        // SAFETY: valid spec and strings; the setter copies them.
        let r = unsafe { sys::ccsb_spec_set_env(self.ptr.as_ptr(), n.as_ptr(), v.as_ptr()) };
        check(r, call, || format!("env[{}]: rejected", name))?;
        Ok(self)
    }
}

impl Drop for Spec {
    fn drop(&mut self) {
        // SAFETY: we own the spec; it is freed exactly once.
        unsafe { sys::ccsb_spec_free(self.ptr.as_ptr()) }
    }
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.to_json() {
            Ok(j) => write!(f, "Spec({})", j),
            Err(e) => write!(f, "Spec(<{}>)", e),
        }
    }
}
