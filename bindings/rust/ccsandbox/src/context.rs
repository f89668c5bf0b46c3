//! `Context`: the library context, its event queue, and the routing of
//! events to the `Session` and `Exec` handles that wait for them.
//!
//! Events of every session arrive on one queue per context. They are popped
//! (ccsb_ctx_next_event) by whichever thread needs one, always under one
//! mutex, and routed into per-session and per-exec mailboxes in the order
//! the library queued them. At most one thread at a time blocks in poll(2)
//! on the context's fd; the others wait on a condition variable that every
//! drain signals, so an event pulled by one thread for another is never
//! missed. No Rust code runs on a library thread except an optional wakeup
//! closure, which cannot unwind into C.
use std::collections::{HashMap, VecDeque};
use std::os::raw::{c_char, c_int, c_void};
use std::os::unix::io::{AsRawFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ccsandbox_sys as sys;

use crate::error::{Error, Result};
use crate::event::Event;
use crate::probe::Probe;
use crate::session::{Exec, ExecRequest, Session};
use crate::spec::Spec;
use crate::types::EventKind;
use crate::util::{errbuf_text, text, ERRBUF_LEN};

/// A blocked wait returns to check deadlines and shutdown at least this often.
const WAIT_SLICE_MS: c_int = 250;

/// poll(2) on the context's fd (readable while events are queued).
#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}
const POLLIN: i16 = 0x1;
#[cfg(target_os = "linux")]
type NFds = std::os::raw::c_ulong;
#[cfg(not(target_os = "linux"))]
type NFds = std::os::raw::c_uint;
extern "C" {
    fn poll(fds: *mut PollFd, nfds: NFds, timeout: c_int) -> c_int;
}
/// Session-level mailboxes are bounded: a host that never reads them must
/// not grow without limit. The oldest events are dropped and counted.
pub const SESSION_MAILBOX_MAX: usize = 4096;

pub(crate) type Key = (String, u64);

pub(crate) struct Mailbox {
    pub(crate) events: VecDeque<Event>,
    /// No further events will be routed here.
    pub(crate) done: bool,
    pub(crate) dropped: u64,
    max: Option<usize>,
    token: u64,
}

/// Events for a key nobody has registered yet are held while a launch or an
/// exec is in flight (its id is known only when the C call returns); at most
/// this many per key.
const EARLY_MAX: usize = 4096;

pub(crate) struct Router {
    pub(crate) boxes: HashMap<Key, Mailbox>,
    polling: bool,
    next_token: u64,
    pub(crate) dropped: u64,
    /// ccsb_launch / ccsb_exec calls in progress.
    in_flight: usize,
    early: HashMap<Key, VecDeque<Event>>,
}

impl Router {
    fn route(&mut self, ev: Event) {
        let output = matches!(ev.kind, EventKind::Stdout | EventKind::Stderr);
        let key = (ev.session_id.clone(), ev.exec_id);
        if self.in_flight > 0 && !self.boxes.contains_key(&key) {
            let q = self.early.entry(key).or_default();
            if q.len() < EARLY_MAX {
                q.push_back(ev);
            } else {
                self.dropped += 1;
            }
            return;
        }
        let exec_open = self.boxes.get(&key).map_or(false, |b| !b.done);
        let target = if exec_open || ev.exec_id == 0 {
            Some(key)
        } else if !output {
            // An exec nobody holds any more, or a late event after its exit:
            // the session still learns about it.
            Some((ev.session_id.clone(), 0))
        } else {
            None
        };
        let b = match target.and_then(|k| self.boxes.get_mut(&k)) {
            Some(b) => b,
            None => {
                self.dropped += 1;
                return;
            }
        };
        let end = match ev.kind {
            EventKind::Exit => ev.exec_id != 0,
            EventKind::State => ev.exec_id == 0 && ev.state == Some(crate::types::State::Destroyed),
            _ => false,
        };
        if let Some(max) = b.max {
            if b.events.len() >= max {
                b.events.pop_front();
                b.dropped += 1;
            }
        }
        b.events.push_back(ev);
        if end {
            b.done = true;
        }
    }
}

pub(crate) struct CtxInner {
    ptr: *mut sys::ccsb_ctx,
    fd: RawFd,
    router: Mutex<Router>,
    cond: Condvar,
    /// Serialises "fallible call + read ccsb_ctx_errmsg": the library keeps
    /// only the last message per context.
    err_lock: Mutex<()>,
    /// Every wakeup closure ever registered, as raw `Box<WakeFn>` pointers.
    /// The library reads a closure pointer under its lock but calls it after
    /// unlocking, so a closure replaced or cleared may still be running on
    /// the library thread: they are freed only after ccsb_ctx_free has joined
    /// that thread.
    wakers: Mutex<Vec<usize>>,
}

type WakeFn = Box<dyn Fn() + Send + Sync>;

// SAFETY: a context made by ccsb_ctx_new accepts calls from any thread
// (header: "API calls may come from any thread"), and ccsb_ctx_free may run
// on any thread. Our own state is behind mutexes.
unsafe impl Send for CtxInner {}
unsafe impl Sync for CtxInner {}

impl Drop for CtxInner {
    fn drop(&mut self) {
        // SAFETY: last reference; every Session holds a Context, so none is
        // left. Frees exactly once.
        unsafe { sys::ccsb_ctx_free(self.ptr) };
        for &w in lock(&self.wakers).iter() {
            // SAFETY: registered by set_wakeup, never freed before; the
            // library thread is gone, so nothing can still be calling it.
            drop(unsafe { Box::from_raw(w as *mut WakeFn) });
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; carry on.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A library context whose event loop runs on a library thread. Cheap to
/// clone (shared handle); `Send + Sync`.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<CtxInner>,
}

impl Context {
    pub fn new() -> Result<Context> {
        let mut p = ptr::null_mut();
        let mut err = [0 as c_char; ERRBUF_LEN];
        // SAFETY: out-pointer and errbuf are ours.
        let r = unsafe { sys::ccsb_ctx_new(&mut p, err.as_mut_ptr(), err.len()) };
        if r < 0 || p.is_null() {
            let code = if r < 0 { r } else { sys::CCSB_E_INTERNAL };
            return Err(Error::new(code, "ccsb_ctx_new", errbuf_text(&err)));
        }
        // SAFETY: p is a valid context.
        let fd = unsafe { sys::ccsb_ctx_get_fd(p) };
        Ok(Context {
            inner: Arc::new(CtxInner {
                ptr: p,
                fd,
                router: Mutex::new(Router {
                    boxes: HashMap::new(),
                    polling: false,
                    next_token: 1,
                    dropped: 0,
                    in_flight: 0,
                    early: HashMap::new(),
                }),
                cond: Condvar::new(),
                err_lock: Mutex::new(()),
                wakers: Mutex::new(Vec::new()),
            }),
        })
    }

    pub fn as_ptr(&self) -> *mut sys::ccsb_ctx {
        self.inner.ptr
    }

    /// Runs a fallible context-bound call and attaches the context's message.
    pub(crate) fn call<F: FnOnce() -> c_int>(&self, name: &'static str, f: F) -> Result<c_int> {
        let _g = lock(&self.inner.err_lock);
        let r = f();
        if r < 0 {
            // SAFETY: valid context; copied immediately under the lock.
            let msg = text(unsafe { sys::ccsb_ctx_errmsg(self.inner.ptr) });
            return Err(Error::new(r, name, msg));
        }
        Ok(r)
    }

    /// Probes the host (once per context; cached by the library).
    pub fn probe(&self) -> Result<Probe> {
        let mut pr = ptr::null();
        // SAFETY: valid context; out-pointer to a local.
        self.call("ccsb_probe", || unsafe { sys::ccsb_probe(self.inner.ptr, &mut pr) })?;
        // SAFETY: pr is owned by the context, which outlives this call.
        unsafe { Probe::copy(pr) }
    }

    /// Starts one sandbox process ahead for the next native launch of this
    /// context (ccsb_ctx_prestart): on Linux an idle bubblewrap, so that
    /// launch skips bwrap's exec. Returns at once (the library's thread
    /// starts it). Each native launch takes one; at most 4 wait, then
    /// `ErrorKind::State`. `ErrorKind::Unavailable` where the native backend
    /// has nothing to start ahead (macOS). Dropping the last handle of the
    /// context ends those never taken.
    pub fn prestart(&self) -> Result<()> {
        // SAFETY: valid context; the call only queues work on its thread.
        self.call("ccsb_ctx_prestart", || unsafe {
            sys::ccsb_ctx_prestart(self.inner.ptr)
        })?;
        Ok(())
    }

    /// Validates the spec and starts a session; returns once it is warm.
    pub fn launch(&self, spec: &Spec) -> Result<Session> {
        Session::launch(self, spec)
    }

    /// `launch` and `Session::exec` as one call: the command goes out with
    /// the launch and starts as soon as the sandbox is ready. Either both
    /// succeed, or nothing is left running and the error says why.
    pub fn launch_exec(&self, spec: &Spec, req: &ExecRequest) -> Result<(Session, Exec)> {
        Session::launch_exec(self, spec, req)
    }

    /// Pulls every queued event into the mailboxes without blocking; returns
    /// how many. Call it when `as_raw_fd()` turns readable (async runtimes)
    /// or after the wakeup closure fires.
    pub fn dispatch(&self) -> Result<usize> {
        let mut r = lock(&self.inner.router);
        let n = self.drain_locked(&mut r)?;
        Ok(n)
    }

    /// A doorbell for runtimes that cannot watch an fd: `wake` runs (possibly
    /// on a library thread) when the queue goes from empty to non-empty. It
    /// must only schedule a `dispatch()` on the caller's own thread. A panic
    /// in it is caught and ignored. Replaces any previous closure.
    pub fn set_wakeup<F: Fn() + Send + Sync + 'static>(&self, wake: F) -> Result<()> {
        unsafe extern "C" fn ring(ud: *mut c_void) {
            // SAFETY: ud is a Box<WakeFn> kept alive until the context is
            // freed (see CtxInner::wakers).
            let f = &*(ud as *const WakeFn);
            let _ = catch_unwind(AssertUnwindSafe(f));
        }
        let boxed: Box<WakeFn> = Box::new(Box::new(wake));
        let ud = Box::into_raw(boxed) as *mut c_void;
        lock(&self.inner.wakers).push(ud as usize);
        // No destroy notifier: the context owns the closures (see wakers).
        // Not under err_lock: the library may ring the new closure on this
        // very thread before returning, and it must not find a lock held.
        // SAFETY: valid context; ud stays valid until CtxInner::drop.
        let r = unsafe { sys::ccsb_ctx_set_wakeup(self.inner.ptr, Some(ring), ud, None) };
        if r < 0 {
            return Err(Error::new(r, "ccsb_ctx_set_wakeup", "the doorbell was refused"));
        }
        Ok(())
    }

    /// Stops ringing the wakeup closure (it is dropped with the context).
    pub fn clear_wakeup(&self) -> Result<()> {
        // SAFETY: valid context; NULL wake with NULL userdata/destroy clears.
        let r = unsafe { sys::ccsb_ctx_set_wakeup(self.inner.ptr, None, ptr::null_mut(), None) };
        if r < 0 {
            return Err(Error::new(r, "ccsb_ctx_set_wakeup", "cannot clear the doorbell"));
        }
        Ok(())
    }

    /// Events dropped because no live Session or Exec wanted them.
    pub fn dropped_events(&self) -> u64 {
        lock(&self.inner.router).dropped
    }

    // -- mailboxes ----------------------------------------------------------

    /// Marks a launch or exec as in flight: until it lands, events for keys
    /// nobody registered are held instead of dropped.
    pub(crate) fn take_off(&self) -> Flight<'_> {
        lock(&self.inner.router).in_flight += 1;
        Flight {
            ctx: self,
            landed: false,
        }
    }

    /// Ends a flight, registering a mailbox per key (one lock: no event
    /// can slip between them); returns their tokens in order.
    fn finish_flight(&self, register: &[(Key, Option<usize>)]) -> Vec<u64> {
        let mut r = lock(&self.inner.router);
        r.in_flight -= 1;
        let mut tokens = Vec::with_capacity(register.len());
        let mut held = Vec::new();
        for (key, max) in register.iter().cloned() {
            let token = r.next_token;
            r.next_token += 1;
            tokens.push(token);
            held.extend(r.early.remove(&key).unwrap_or_default());
            r.boxes.insert(
                key,
                Mailbox {
                    events: VecDeque::new(),
                    done: false,
                    dropped: 0,
                    max,
                    token,
                },
            );
        }
        for ev in held {
            r.route(ev);
        }
        if r.in_flight == 0 {
            let held: Vec<_> = r.early.drain().collect();
            for (_, q) in held {
                for ev in q {
                    r.route(ev);
                }
            }
        }
        self.inner.cond.notify_all();
        tokens
    }

    pub(crate) fn router(&self) -> MutexGuard<'_, Router> {
        lock(&self.inner.router)
    }

    pub(crate) fn unregister(&self, key: &Key, token: u64) {
        let mut r = lock(&self.inner.router);
        if r.boxes.get(key).map_or(false, |b| b.token == token) {
            r.boxes.remove(key);
        }
    }

    pub(crate) fn mark_done(&self, key: &Key) {
        let mut r = lock(&self.inner.router);
        if let Some(b) = r.boxes.get_mut(key) {
            b.done = true;
        }
        self.inner.cond.notify_all();
    }

    fn drain_locked(&self, r: &mut Router) -> Result<usize> {
        let mut n = 0;
        loop {
            let mut ev = ptr::null_mut();
            // SAFETY: valid context; out-pointer to a local.
            let rc = unsafe { sys::ccsb_ctx_next_event(self.inner.ptr, &mut ev) };
            if rc == sys::CCSB_E_AGAIN {
                break;
            }
            if rc < 0 || ev.is_null() {
                return Err(Error::new(rc.min(-1), "ccsb_ctx_next_event", "cannot pop an event"));
            }
            // SAFETY: we own the popped event.
            r.route(unsafe { Event::take(ev) });
            n += 1;
        }
        if n > 0 {
            self.inner.cond.notify_all();
        }
        Ok(n)
    }

    /// Pops the next event of mailbox `key`, blocking until one arrives, the
    /// mailbox ends (Ok(None)) or `deadline` passes (Err TimedOut).
    pub(crate) fn next_for(&self, key: &Key, deadline: Option<Instant>) -> Result<Option<Event>> {
        let inner = &*self.inner;
        let mut r = lock(&inner.router);
        loop {
            self.drain_locked(&mut r)?;
            match r.boxes.get_mut(key) {
                None => return Ok(None),
                Some(b) => {
                    if let Some(ev) = b.events.pop_front() {
                        return Ok(Some(ev));
                    }
                    if b.done {
                        return Ok(None);
                    }
                }
            }
            let slice = match deadline {
                None => WAIT_SLICE_MS,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(Error::new(sys::CCSB_E_TIMEDOUT, "wait", "no event before the deadline"));
                    }
                    let left = d - now;
                    (left.as_millis().min(WAIT_SLICE_MS as u128) as c_int).max(1)
                }
            };
            if r.polling {
                r = inner
                    .cond
                    .wait_timeout(r, Duration::from_millis(slice as u64))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            // Wait for the queue without popping: every pop happens under
            // the router lock (drain_locked, at the top of the loop), so
            // events are routed in the order the library queued them. (A
            // pop outside the lock let another thread's dispatch route a
            // later exit first, and the output before it was then dropped
            // as arriving after the exit.)
            r.polling = true;
            drop(r);
            let mut pfd = PollFd {
                fd: inner.fd,
                events: POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd on the context's own fd; blocks at
            // most `slice` ms.
            let rc = unsafe { poll(&mut pfd, 1, slice) };
            let err = if rc < 0 {
                Some(std::io::Error::last_os_error())
            } else {
                None
            };
            r = lock(&inner.router);
            r.polling = false;
            inner.cond.notify_all();
            if let Some(e) = err {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(Error::new(
                        sys::CCSB_E_IO,
                        "poll",
                        format!("waiting for an event failed: {}", e),
                    ));
                }
            }
        }
    }
}

/// A launch or exec in flight (see `Context::take_off`). Dropping it without
/// `land` (the C call failed) just ends the flight.
pub(crate) struct Flight<'a> {
    ctx: &'a Context,
    landed: bool,
}

impl Flight<'_> {
    /// Registers the mailbox for `key`, with the events held for it so far.
    pub(crate) fn land(self, key: Key, max: Option<usize>) -> u64 {
        self.land_all(&[(key, max)])[0]
    }

    /// `land` for several keys at once (a launch with its first exec).
    pub(crate) fn land_all(mut self, keys: &[(Key, Option<usize>)]) -> Vec<u64> {
        self.landed = true;
        self.ctx.finish_flight(keys)
    }
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        if !self.landed {
            self.ctx.finish_flight(&[]);
        }
    }
}

impl AsRawFd for Context {
    /// Readable while events are queued; owned by the context. Do not read
    /// it: call `dispatch()`.
    fn as_raw_fd(&self) -> RawFd {
        self.inner.fd
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({:p})", self.inner.ptr)
    }
}
