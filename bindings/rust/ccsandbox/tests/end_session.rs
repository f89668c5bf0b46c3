//! `ExecRequest::end_session` (ccsb_exec_req_set_end_session): after such a
//! command's exit the session ends itself. A `Destroyed` state event follows
//! the exit, what the command left running is killed, the session never
//! reads `Error`, and nothing more runs in it. Without the flag the session
//! stays warm and keeps what the command left. On the none backend and,
//! where it works, on bubblewrap (printing why it skips otherwise).
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ccsandbox::{Backend, Context, ErrorKind, Event, EventKind, Exec, ExecRequest, Session, Spec, State};

mod common;

const T: Duration = Duration::from_secs(10);

/// (state letter, start time) of a pid, or None once it is gone. The start
/// time tells a reused pid from the one we saw.
fn stat_of(pid: u32) -> Option<(String, String)> {
    let text = std::fs::read_to_string(format!("/proc/{}/stat", pid)).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f.first()?.to_string(), f.get(19)?.to_string()))
}

/// The live processes (pid -> start time) that have `marker` as an
/// argument; the host sees a sandbox's processes under their host pids.
fn with_arg(marker: &str) -> BTreeMap<u32, String> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let pid = match e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
            Some(p) => p,
            None => continue,
        };
        // A process that ended meanwhile has no file left: skip it.
        let cmdline = match std::fs::read(e.path().join("cmdline")) {
            Ok(c) => c,
            Err(_) => continue,
        };
        if !cmdline.split(|b| *b == 0).any(|a| a == marker.as_bytes()) {
            continue;
        }
        if let Some((state, start)) = stat_of(pid) {
            if state != "Z" {
                out.insert(pid, start);
            }
        }
    }
    out
}

/// The processes of `procs` alive now. A zombie is dead: reaping an orphan
/// is its new parent's job (on the none backend, the host's init).
fn alive(procs: &BTreeMap<u32, String>) -> Vec<u32> {
    procs
        .iter()
        .filter(|(pid, start)| matches!(stat_of(**pid), Some((st, s)) if s == **start && st != "Z"))
        .map(|(pid, _)| *pid)
        .collect()
}

/// The processes of `procs` still alive after `limit`.
fn still_there(procs: &BTreeMap<u32, String>, limit: Duration) -> Vec<u32> {
    common::wait_for(limit, || alive(procs).is_empty());
    alive(procs)
}

/// A `sleep` argument no other process has (tests run in parallel threads).
/// Dropping it kills what a failed test left behind with it, so no
/// week-long sleep outlives the test.
struct Marker(String);

impl Marker {
    fn new() -> Marker {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        Marker(format!(
            "{}.{}",
            700000 + NEXT.fetch_add(1, Ordering::SeqCst),
            std::process::id()
        ))
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        for pid in with_arg(&self.0).keys() {
            // Best effort: it may have ended meanwhile.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

fn script(marker: &str) -> ExecRequest {
    ExecRequest::new([
        "sh",
        "-c",
        &format!("sleep {} & echo started; read go; echo last; exit 6", marker),
    ])
    .stdin_pipe()
}

/// A context, the spec of the backend a test runs on and a marker for its
/// background sleep; None (after a SKIP line) when native is not usable here.
fn setup(native: bool) -> Option<(Context, Spec, Marker)> {
    let ctx = Context::new().unwrap();
    let backend = if native {
        if !common::native_available(&ctx, "native end_session") {
            return None;
        }
        Backend::Native
    } else {
        Backend::None
    };
    Some((ctx, common::spec(backend), Marker::new()))
}

/// Waits for the command's first line (printed once its background sleep
/// is forked) and for that sleep to run.
fn started_background(ex: &Exec, marker: &str) -> BTreeMap<u32, String> {
    let ev = ex.next_event_timeout(T).unwrap().expect("the command printed nothing");
    assert_eq!(
        (ev.kind, ev.data.as_slice()),
        (EventKind::Stdout, &b"started\n"[..]),
        "{:?}",
        ev
    );
    let deadline = Instant::now() + T;
    loop {
        let procs = with_arg(marker);
        if !procs.is_empty() || Instant::now() >= deadline {
            assert_eq!(procs.len(), 1, "the background sleep is not running");
            return procs;
        }
        std::thread::sleep(Duration::from_millis(10)); // forked, not yet exec'd
    }
}

/// Session-level events up to the first `state` event for `want`, or all
/// that came within `T`.
fn until_state(s: &Session, want: State) -> Vec<Event> {
    let deadline = Instant::now() + T;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match s.next_event_timeout(left) {
            Ok(Some(ev)) => {
                let done = ev.kind == EventKind::State && ev.state == Some(want);
                seen.push(ev);
                if done {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) if e.kind() == ErrorKind::TimedOut => break,
            Err(e) => panic!("{}", e),
        }
    }
    seen
}

/// The command exits 6 with its output; the session then reads destroyed
/// without ever reading error; the sleep it left is gone; no exec runs.
fn assert_ends_itself(s: &Session, ex: &Exec, procs: &BTreeMap<u32, String>) {
    assert_eq!(ex.write_stdin(b"go\n").unwrap(), 3);
    let events: Vec<Event> = ex.events().map(|e| e.unwrap()).collect();
    let exit = events.last().unwrap();
    assert_eq!(exit.kind, EventKind::Exit, "{:?}", events);
    assert_eq!(exit.exit_code, 6);
    let out: Vec<u8> = events
        .iter()
        .filter(|e| e.kind == EventKind::Stdout)
        .flat_map(|e| e.data.clone())
        .collect();
    assert_eq!(out, b"last\n");
    let session_events = until_state(s, State::Destroyed);
    let destroyed = session_events
        .iter()
        .find(|e| e.kind == EventKind::State && e.state == Some(State::Destroyed))
        .unwrap_or_else(|| panic!("no destroyed state event in {:?}", session_events));
    assert!(exit.timestamp_us <= destroyed.timestamp_us);
    assert!(
        !session_events
            .iter()
            .any(|e| e.kind == EventKind::Error || e.state == Some(State::Error)),
        "{:?}",
        session_events
    );
    assert_eq!(s.state(), Some(State::Destroyed));
    assert_eq!(s.error(), "");
    assert_eq!(
        still_there(procs, T),
        Vec::<u32>::new(),
        "the command's background sleep survived"
    );
    let e = s.exec(&ExecRequest::new(["true"])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State, "{}", e);
}

fn exec_ends_the_session(native: bool) {
    let (ctx, spec, m) = match setup(native) {
        Some(v) => v,
        None => return,
    };
    let s = ctx.launch(&spec).unwrap();
    assert_eq!(s.run(&ExecRequest::new(["echo", "warm"])).unwrap().stdout, b"warm\n");
    let ex = s.exec(&script(&m.0).end_session(true)).unwrap();
    let procs = started_background(&ex, &m.0);
    assert_ends_itself(&s, &ex, &procs);
}

fn launch_exec_is_a_one_shot_run(native: bool) {
    let (ctx, spec, m) = match setup(native) {
        Some(v) => v,
        None => return,
    };
    let (s, ex) = ctx.launch_exec(&spec, &script(&m.0).end_session(true)).unwrap();
    let procs = started_background(&ex, &m.0);
    assert_ends_itself(&s, &ex, &procs);
}

fn without_it_the_session_stays_warm(native: bool) {
    let (ctx, spec, m) = match setup(native) {
        Some(v) => v,
        None => return,
    };
    for first in [false, true] {
        let (s, ex) = if first {
            ctx.launch_exec(&spec, &script(&m.0)).unwrap()
        } else {
            let s = ctx.launch(&spec).unwrap();
            let ex = s.exec(&script(&m.0).end_session(false)).unwrap();
            (s, ex)
        };
        let procs = started_background(&ex, &m.0);
        ex.write_stdin(b"go\n").unwrap();
        assert_eq!(ex.wait_timeout(T).unwrap().exit_code, 6);
        common::wait_for(T, || s.state() == Some(State::Warm));
        assert_eq!(s.state(), Some(State::Warm));
        assert_eq!(
            still_there(&procs, Duration::from_millis(200)).len(),
            1,
            "the background sleep was killed with no end_session"
        );
        assert_eq!(s.run(&ExecRequest::new(["echo", "again"])).unwrap().stdout, b"again\n");
        while let Some(ev) = s.try_next_event().unwrap() {
            assert_ne!(ev.state, Some(State::Destroyed), "{:?}", ev);
        }
        // Dropping the session is what ends the sleep then.
        drop(ex);
        drop(s);
        assert_eq!(still_there(&procs, T), Vec::<u32>::new());
    }
}

#[test]
fn none_exec_with_end_session_ends_the_session() {
    exec_ends_the_session(false);
}

#[test]
fn none_launch_exec_with_end_session_is_a_one_shot_run() {
    launch_exec_is_a_one_shot_run(false);
}

#[test]
fn none_without_end_session_the_session_stays_warm() {
    without_it_the_session_stays_warm(false);
}

#[test]
fn native_exec_with_end_session_ends_the_session() {
    exec_ends_the_session(true);
}

#[test]
fn native_launch_exec_with_end_session_is_a_one_shot_run() {
    launch_exec_is_a_one_shot_run(true);
}

#[test]
fn native_without_end_session_the_session_stays_warm() {
    without_it_the_session_stays_warm(true);
}
