//! `Session` (a running sandbox), `ExecRequest`, `Exec` (one command) and
//! `Output` (how it ended).
use std::ffi::CString;
use std::os::raw::{c_char, c_void};
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ccsandbox_sys as sys;

use crate::context::{Context, Key, SESSION_MAILBOX_MAX};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::spec::Spec;
use crate::types::{Backend, EventKind, KillReason, State};
use crate::util::{cstring, take_owned, text};

struct SessionInner {
    ptr: *mut sys::ccsb_session,
    ctx: Context,
    id: String,
    token: u64,
}

// SAFETY: session calls may come from any thread and ccsb_session_destroy is
// callable from any thread (header contract); the id is immutable.
unsafe impl Send for SessionInner {}
unsafe impl Sync for SessionInner {}

impl Drop for SessionInner {
    fn drop(&mut self) {
        // SAFETY: last reference to this session; destroyed exactly once.
        unsafe { sys::ccsb_session_destroy(self.ptr) };
        let key = (self.id.clone(), 0);
        self.ctx.mark_done(&key);
        self.ctx.unregister(&key, self.token);
    }
}

/// A running sandbox. Clones share it; the last one dropped stops it and
/// frees it (an `Exec` keeps its session alive).
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

/// Reads `"sessionId": "<string>"` from spec JSON (None when absent/null).
fn spec_session_id(json: &str) -> Option<String> {
    let at = json.find("\"sessionId\"")? + "\"sessionId\"".len();
    let rest = json[at..].trim_start().strip_prefix(':')?.trim_start();
    let mut chars = rest.strip_prefix('"')?.chars();
    let mut out = String::new();
    loop {
        match chars.next()? {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?).unwrap_or('\u{fffd}'));
                }
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
}

impl Session {
    pub(crate) fn launch(ctx: &Context, spec: &Spec) -> Result<Session> {
        Session::start(ctx, spec, None).map(|(s, _)| s)
    }

    pub(crate) fn launch_exec(ctx: &Context, spec: &Spec, req: &ExecRequest) -> Result<(Session, Exec)> {
        let raw = req.build()?;
        let (session, exec) = Session::start(ctx, spec, Some(&raw))?;
        Ok((session, exec.expect("a launch with a first command has its Exec")))
    }

    /// ccsb_launch, or ccsb_launch_exec with `first`; then the session's
    /// mailbox and, with `first`, the exec's.
    fn start(ctx: &Context, spec: &Spec, first: Option<&RawReq>) -> Result<(Session, Option<Exec>)> {
        let wanted = spec_session_id(&spec.to_json()?);
        let dup = |id: &str| {
            Error::new(
                sys::CCSB_E_STATE,
                "launch",
                format!(
                    "sessionId {:?} is already live in this context; ids must be unique per context",
                    id
                ),
            )
        };
        if let Some(id) = &wanted {
            if ctx.router().boxes.contains_key(&(id.clone(), 0)) {
                return Err(dup(id));
            }
        }
        // Until the flight lands, a drain on another thread holds this
        // session's first events (starting, ready, and the first command's)
        // instead of dropping them.
        let flight = ctx.take_off();
        let mut p = ptr::null_mut();
        let mut xid: u64 = 0;
        match first {
            // SAFETY: valid context and spec; out-pointer to a local.
            None => ctx.call("ccsb_launch", || unsafe {
                sys::ccsb_launch(ctx.as_ptr(), spec.as_ptr(), &mut p)
            })?,
            // SAFETY: valid context, spec and request; out-pointers to locals.
            Some(req) => ctx.call("ccsb_launch_exec", || unsafe {
                sys::ccsb_launch_exec(ctx.as_ptr(), spec.as_ptr(), req.0, &mut p, &mut xid)
            })?,
        };
        // SAFETY: p is a live session.
        let id = text(unsafe { sys::ccsb_session_id(p) });
        if ctx.router().boxes.contains_key(&(id.clone(), 0)) {
            // SAFETY: the session we just made; nobody else has it.
            unsafe { sys::ccsb_session_destroy(p) };
            return Err(dup(&id));
        }
        let mut keys = vec![((id.clone(), 0), Some(SESSION_MAILBOX_MAX))];
        if first.is_some() {
            keys.push(((id.clone(), xid), None));
        }
        let tokens = flight.land_all(&keys);
        let session = Session {
            inner: Arc::new(SessionInner {
                ptr: p,
                ctx: ctx.clone(),
                id,
                token: tokens[0],
            }),
        };
        let exec = first.map(|_| Exec::new(session.clone(), xid, tokens[1]));
        Ok((session, exec))
    }

    pub fn as_ptr(&self) -> *mut sys::ccsb_session {
        self.inner.ptr
    }

    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The backend actually running.
    pub fn backend(&self) -> Option<Backend> {
        // SAFETY: live session.
        Backend::from_raw(unsafe { sys::ccsb_session_backend(self.inner.ptr) })
    }

    pub fn state(&self) -> Option<State> {
        // SAFETY: live session.
        State::from_raw(unsafe { sys::ccsb_session_state(self.inner.ptr) })
    }

    /// The error that put the session in `State::Error` ("" otherwise).
    pub fn error(&self) -> String {
        // SAFETY: live session; copied at once.
        text(unsafe { sys::ccsb_session_error(self.inner.ptr) })
    }

    /// Workdir, tmp dir, pids, backend, limits applied, ... as JSON.
    pub fn details_json(&self) -> Result<String> {
        let mut out = ptr::null_mut();
        // SAFETY: live session; out-pointer to a local.
        let r = unsafe { sys::ccsb_session_details_json(self.inner.ptr, &mut out) };
        let s = take_owned(out);
        if r < 0 {
            return Err(Error::new(
                r,
                "ccsb_session_details_json",
                "cannot describe the session",
            ));
        }
        Ok(s)
    }

    /// Kills every process of the session; the state becomes destroyed.
    pub fn stop(&self) -> Result<()> {
        // SAFETY: live session.
        self.inner
            .ctx
            .call("ccsb_session_stop", || unsafe {
                sys::ccsb_session_stop(self.inner.ptr)
            })
            .map(|_| ())
    }

    pub fn suspend(&self) -> Result<()> {
        // SAFETY: live session.
        self.inner
            .ctx
            .call("ccsb_session_suspend", || unsafe {
                sys::ccsb_session_suspend(self.inner.ptr)
            })
            .map(|_| ())
    }

    pub fn resume(&self) -> Result<()> {
        // SAFETY: live session.
        self.inner
            .ctx
            .call("ccsb_session_resume", || unsafe {
                sys::ccsb_session_resume(self.inner.ptr)
            })
            .map(|_| ())
    }

    /// Starts a command; the session must be warm or active.
    pub fn exec(&self, req: &ExecRequest) -> Result<Exec> {
        let raw = req.build()?;
        let ctx = &self.inner.ctx;
        let flight = ctx.take_off();
        let mut id: u64 = 0;
        // SAFETY: live session and request; out-pointer to a local.
        ctx.call("ccsb_exec", || unsafe {
            sys::ccsb_exec(self.inner.ptr, raw.0, &mut id)
        })?;
        let token = flight.land((self.inner.id.clone(), id), None);
        Ok(Exec::new(self.clone(), id, token))
    }

    /// exec() then wait().
    pub fn run(&self, req: &ExecRequest) -> Result<Output> {
        self.exec(req)?.wait()
    }

    fn key(&self) -> Key {
        (self.inner.id.clone(), 0)
    }

    /// The next session-level event (starting, ready, state, killed, error,
    /// violations not tied to a live exec) already here, without blocking.
    pub fn try_next_event(&self) -> Result<Option<Event>> {
        self.inner.ctx.dispatch()?;
        Ok(self
            .inner
            .ctx
            .router()
            .boxes
            .get_mut(&self.key())
            .and_then(|b| b.events.pop_front()))
    }

    /// Blocks up to `timeout` for the next session-level event; Ok(None) once
    /// the session is destroyed and its events are consumed.
    pub fn next_event_timeout(&self, timeout: Duration) -> Result<Option<Event>> {
        self.inner.ctx.next_for(&self.key(), Some(Instant::now() + timeout))
    }

    /// Session-level events dropped because nobody read them in time.
    pub fn dropped_events(&self) -> u64 {
        self.inner.ctx.router().boxes.get(&self.key()).map_or(0, |b| b.dropped)
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Session({:?}, {:?})", self.inner.id, self.state())
    }
}

/// What to run: argv plus options. Plain Rust data; turned into a
/// `ccsb_exec_req` by `Session::exec`.
#[derive(Clone, Debug, Default)]
pub struct ExecRequest {
    argv: Vec<String>,
    env: Vec<(String, String)>,
    cwd: Option<String>,
    stdin_pipe: bool,
    timeout: Option<Duration>,
    pty: Option<(u16, u16)>,
    end_session: bool,
}

struct RawReq(*mut sys::ccsb_exec_req);

impl Drop for RawReq {
    fn drop(&mut self) {
        // SAFETY: owned request; freed once.
        unsafe { sys::ccsb_exec_req_free(self.0) }
    }
}

impl ExecRequest {
    /// argv[0] is looked up on the session's PATH when it has no slash.
    pub fn new<I, S>(argv: I) -> ExecRequest
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ExecRequest {
            argv: argv.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn cwd(mut self, path: &str) -> Self {
        self.cwd = Some(path.into());
        self
    }

    /// Feed stdin with `Exec::write_stdin` (default: the command reads EOF).
    pub fn stdin_pipe(mut self) -> Self {
        self.stdin_pipe = true;
        self
    }

    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout = Some(d);
        self
    }

    /// Run on a pseudo-terminal of rows x cols.
    pub fn pty(mut self, rows: u16, cols: u16) -> Self {
        self.pty = Some((rows, cols));
        self
    }

    /// For one-shot runs: when this command's main process exits, the
    /// session ends itself (every process of it killed, state `Destroyed`
    /// after the exit event), without a `Session::stop` from here.
    pub fn end_session(mut self, on: bool) -> Self {
        self.end_session = on;
        self
    }

    fn build(&self) -> Result<RawReq> {
        let call = "ccsb_exec_req";
        if self.argv.is_empty() {
            return Err(Error::new(sys::CCSB_E_INVAL, call, "argv: empty"));
        }
        let mut p = ptr::null_mut();
        // SAFETY: out-pointer to a local.
        let r = unsafe { sys::ccsb_exec_req_new(&mut p) };
        if r < 0 || p.is_null() {
            return Err(Error::new(
                r.min(-1),
                "ccsb_exec_req_new",
                "cannot allocate an exec request",
            ));
        }
        let req = RawReq(p);
        let fail = |r: i32, what: String| -> Result<()> {
            if r < 0 {
                Err(Error::new(r, call, what))
            } else {
                Ok(())
            }
        };
        let args: Vec<CString> = self
            .argv
            .iter()
            .enumerate()
            .map(|(i, a)| cstring(a, call, &format!("argv[{}]", i)))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        // SAFETY: ptrs holds argc valid strings that outlive the call (copied).
        fail(
            unsafe { sys::ccsb_exec_req_set_argv(req.0, ptrs.as_ptr(), ptrs.len()) },
            "argv: rejected".into(),
        )?;
        for (n, v) in &self.env {
            let cn = cstring(n, call, "env name")?;
            let cv = cstring(v, call, n)?;
            // SAFETY: valid request and strings (copied).
            fail(
                unsafe { sys::ccsb_exec_req_set_env(req.0, cn.as_ptr(), cv.as_ptr()) },
                format!("env[{}]: rejected", n),
            )?;
        }
        if let Some(cwd) = &self.cwd {
            let c = cstring(cwd, call, "cwd")?;
            // SAFETY: valid request and string (copied).
            fail(
                unsafe { sys::ccsb_exec_req_set_cwd(req.0, c.as_ptr()) },
                format!("cwd: rejected {:?}", cwd),
            )?;
        }
        if self.stdin_pipe {
            // SAFETY: valid request.
            fail(
                unsafe { sys::ccsb_exec_req_set_stdin(req.0, sys::CCSB_STDIN_PIPE) },
                "stdin: rejected".into(),
            )?;
        }
        if let Some(t) = self.timeout {
            let ms = u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1);
            // SAFETY: valid request.
            fail(
                unsafe { sys::ccsb_exec_req_set_timeout_ms(req.0, ms) },
                "timeout: rejected".into(),
            )?;
        }
        if let Some((rows, cols)) = self.pty {
            // SAFETY: valid request.
            fail(
                unsafe { sys::ccsb_exec_req_set_pty(req.0, rows, cols) },
                format!("pty: rejected {}x{}", rows, cols),
            )?;
        }
        if self.end_session {
            // SAFETY: valid request.
            fail(
                unsafe { sys::ccsb_exec_req_set_end_session(req.0, 1) },
                "end_session: rejected".into(),
            )?;
        }
        Ok(req)
    }
}

/// How an exec ended. stdout/stderr hold the bytes not already taken by
/// iterating over the exec's events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub exec_id: u64,
    /// The exit status, or -1 when a signal ended it.
    pub exit_code: i32,
    pub signal: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Set when the library killed it (timeout, oom, manual, host).
    pub killed: Option<KillReason>,
    pub violations: Vec<Event>,
}

impl Output {
    pub fn success(&self) -> bool {
        self.exit_code == 0 && self.signal == 0
    }

    /// Folds one event in; true once the exit event arrived.
    fn absorb(&mut self, ev: Event) -> bool {
        match ev.kind {
            EventKind::Stdout => self.stdout.extend_from_slice(&ev.data),
            EventKind::Stderr => self.stderr.extend_from_slice(&ev.data),
            EventKind::Killed => self.killed = ev.kill_reason,
            EventKind::Violation => self.violations.push(ev),
            EventKind::Exit => {
                self.exit_code = ev.exit_code;
                self.signal = ev.signal;
                return true;
            }
            _ => {}
        }
        false
    }
}

/// One command in a session. Its events end with its exit event.
pub struct Exec {
    session: Session,
    id: u64,
    key: Key,
    token: u64,
    partial: Mutex<Option<Output>>,
}

impl Exec {
    /// The handle of exec `id` of `session`, whose mailbox landed as `token`.
    fn new(session: Session, id: u64, token: u64) -> Exec {
        let key = (session.inner.id.clone(), id);
        Exec {
            session,
            id,
            key,
            token,
            partial: Mutex::new(None),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    fn ctx(&self) -> &Context {
        &self.session.inner.ctx
    }

    /// Writes to a `stdin_pipe()` exec (or its pty); returns bytes written.
    pub fn write_stdin(&self, buf: &[u8]) -> Result<usize> {
        let s = self.session.inner.ptr;
        // SAFETY: live session; buf valid for len bytes.
        let n = self.ctx().call("ccsb_exec_write_stdin", || unsafe {
            sys::ccsb_exec_write_stdin(s, self.id, buf.as_ptr() as *const c_void, buf.len())
        })?;
        Ok(n as usize)
    }

    pub fn close_stdin(&self) -> Result<()> {
        let s = self.session.inner.ptr;
        // SAFETY: live session.
        self.ctx()
            .call("ccsb_exec_close_stdin", || unsafe {
                sys::ccsb_exec_close_stdin(s, self.id)
            })
            .map(|_| ())
    }

    /// Kills the exec's process group; a killed(manual) event follows.
    pub fn kill(&self) -> Result<()> {
        let s = self.session.inner.ptr;
        // SAFETY: live session.
        self.ctx()
            .call("ccsb_exec_kill", || unsafe { sys::ccsb_exec_kill(s, self.id) })
            .map(|_| ())
    }

    pub fn resize_pty(&self, rows: u16, cols: u16) -> Result<()> {
        let s = self.session.inner.ptr;
        // SAFETY: live session.
        self.ctx()
            .call("ccsb_exec_resize_pty", || unsafe {
                sys::ccsb_exec_resize_pty(s, self.id, rows, cols)
            })
            .map(|_| ())
    }

    /// The next event already here, without blocking (Ok(None): none yet or
    /// the stream ended). For async runtimes after `Context::dispatch`.
    pub fn try_next_event(&self) -> Result<Option<Event>> {
        self.ctx().dispatch()?;
        Ok(self
            .ctx()
            .router()
            .boxes
            .get_mut(&self.key)
            .and_then(|b| b.events.pop_front()))
    }

    /// Blocks up to `timeout` for the next event: Ok(None) once the stream
    /// ended, Err(TimedOut) when nothing came in time.
    pub fn next_event_timeout(&self, timeout: Duration) -> Result<Option<Event>> {
        self.ctx().next_for(&self.key, Some(Instant::now() + timeout))
    }

    /// A blocking iterator over the exec's events, ending after its exit.
    pub fn events(&self) -> ExecEvents<'_> {
        ExecEvents { exec: self }
    }

    fn collect(&self, deadline: Option<Instant>) -> Result<Output> {
        let mut slot = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = slot.take().unwrap_or_else(|| Output {
            exec_id: self.id,
            ..Default::default()
        });
        loop {
            match self.ctx().next_for(&self.key, deadline) {
                Ok(Some(ev)) => {
                    if out.absorb(ev) {
                        return Ok(out);
                    }
                }
                Ok(None) => {
                    return Err(Error::new(
                        sys::CCSB_E_STATE,
                        "wait",
                        format!("exec {}: its exit event was already consumed", self.id),
                    ))
                }
                Err(e) => {
                    // Keep what arrived so a later wait continues from here.
                    *slot = Some(out);
                    return Err(e);
                }
            }
        }
    }

    /// Blocks until the exec exits.
    pub fn wait(&self) -> Result<Output> {
        self.collect(None)
    }

    /// Like wait(), but gives up after `timeout` with a TimedOut error; the
    /// exec keeps running and a later wait continues where this one stopped.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<Output> {
        self.collect(Some(Instant::now() + timeout))
    }
}

impl Drop for Exec {
    fn drop(&mut self) {
        self.ctx().unregister(&self.key, self.token);
    }
}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Exec({:?}, {})", self.session.id(), self.id)
    }
}

/// Blocking iterator over one exec's events (see `Exec::events`).
pub struct ExecEvents<'a> {
    exec: &'a Exec,
}

impl Iterator for ExecEvents<'_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        self.exec.ctx().next_for(&self.exec.key, None).transpose()
    }
}
