//! Helpers shared by the integration tests. Each test binary compiles this
//! module (`mod common;`) and uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ccsandbox::{Backend, Context, ErrorKind, Event, EventKind, ExecRequest, Output, Result, Session, Spec};

pub fn spec(backend: Backend) -> Spec {
    let mut s = Spec::new().unwrap();
    s.backend(backend).unwrap();
    s
}

pub fn none_spec() -> Spec {
    spec(Backend::None)
}

pub fn sh(script: &str) -> ExecRequest {
    ExecRequest::new(["sh", "-c", script])
}

/// This process's open fds, each with what it points to, sorted.
pub fn fds() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| format!("{:?} -> {:?}", e.file_name(), std::fs::read_link(e.path()).ok()))
        .collect();
    v.sort();
    v
}

/// Children of every thread of this process (the library forks from its
/// loop thread; its children move to another thread of ours when it ends).
pub fn children() -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().filter_map(|e| e.ok()) {
        // A thread that ended meanwhile has no file left: nothing to add.
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// Polls `cond` until it holds or `limit` passed.
pub fn wait_for<F: FnMut() -> bool>(limit: Duration, mut cond: F) {
    let deadline = Instant::now() + limit;
    while !cond() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Children beyond `before`, once they are gone or a few seconds passed (a
/// zombie is still a child: gone means reaped).
pub fn children_settle(before: &BTreeSet<u32>) -> BTreeSet<u32> {
    wait_for(Duration::from_secs(5), || children().is_subset(before));
    children().difference(before).cloned().collect()
}

/// Whether the native backend works here; prints why `what` skips if not.
pub fn native_available(ctx: &Context, what: &str) -> bool {
    let pr = ctx.probe().unwrap();
    if !pr.available {
        println!("SKIP {}: native backend unavailable here: {}", what, pr.hint);
    }
    pr.available
}

/// `launch()`, a native launch (or launch_exec): None, after a SKIP line
/// for `what`, where the native backend is unavailable here or not in this
/// build. Any other failure panics.
pub fn native_or_skip<T>(ctx: &Context, what: &str, launch: impl FnOnce() -> Result<T>) -> Option<T> {
    if !native_available(ctx, what) {
        return None;
    }
    match launch() {
        Ok(v) => Some(v),
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Unsupported) => {
            println!("SKIP {}: native backend not in this build: {}", what, e);
            None
        }
        Err(e) => panic!("{}: native launch failed: {}", what, e),
    }
}

/// The violations of an exec that ended as `out`, with those its session
/// holds (a denial may be reported after the exit, to the session); drains
/// the session's mailbox.
pub fn violations(out: &Output, s: &Session) -> Vec<Event> {
    let mut vs = out.violations.clone();
    while let Some(ev) = s.try_next_event().unwrap() {
        if ev.kind == EventKind::Violation {
            vs.push(ev);
        }
    }
    vs
}
