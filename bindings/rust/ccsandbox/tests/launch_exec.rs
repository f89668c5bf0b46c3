//! `Context::launch_exec` (ccsb_launch_exec): a session and its first
//! command in one call. The command's events arrive with the returned exec
//! id; bad input fails with the library's message and launches nothing.
//! What a failed call leaves behind (processes, fds) is checked alone in
//! `launch_exec_cleanup.rs`.
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ccsandbox::{sys, Backend, Context, ErrorKind, EventKind, ExecRequest, KillReason, State};

mod common;
use common::{none_spec, sh};

const T: Duration = Duration::from_secs(10);

#[test]
fn command_events_carry_the_returned_exec_id() {
    let ctx = Context::new().unwrap();
    let mut spec = none_spec();
    spec.session_id("rs-le").unwrap();
    let (s, ex) = ctx.launch_exec(&spec, &sh("echo out; echo err >&2; exit 3")).unwrap();
    assert_eq!(s.id(), "rs-le");
    assert_eq!(ex.session().id(), "rs-le");
    assert!(ex.id() > 0);
    let events: Vec<_> = ex.events().map(|e| e.unwrap()).collect();
    assert!(!events.is_empty());
    for ev in &events {
        assert_eq!((ev.session_id.as_str(), ev.exec_id), ("rs-le", ex.id()), "{:?}", ev);
    }
    let last = events.last().unwrap();
    assert_eq!(last.kind, EventKind::Exit);
    assert_eq!(last.exit_code, 3);
    let bytes = |k| -> Vec<u8> {
        events
            .iter()
            .filter(|e| e.kind == k)
            .flat_map(|e| e.data.clone())
            .collect()
    };
    assert_eq!(bytes(EventKind::Stdout), b"out\n");
    assert_eq!(bytes(EventKind::Stderr), b"err\n");
    // The launch's own events are the session's; ready comes no later than
    // the command's exit.
    let mut session_events = Vec::new();
    while let Some(ev) = s.try_next_event().unwrap() {
        assert_eq!(ev.exec_id, 0, "{:?}", ev);
        session_events.push(ev);
    }
    assert!(session_events.iter().any(|e| e.kind == EventKind::Starting));
    let ready = session_events
        .iter()
        .find(|e| e.kind == EventKind::Ready)
        .unwrap_or_else(|| panic!("no ready event in {:?}", session_events));
    assert!(ready.timestamp_us <= last.timestamp_us);
}

#[test]
fn events_drained_by_another_thread_during_the_call_still_arrive() {
    // Another thread pulls the queue the whole time, so the command's
    // output is often popped before launch_exec has returned its id.
    let ctx = Context::new().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let drainer = {
        let (ctx, stop) = (ctx.clone(), stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                ctx.dispatch().unwrap();
                thread::yield_now();
            }
        })
    };
    let spec = none_spec();
    for i in 0..20 {
        let (_s, ex) = ctx.launch_exec(&spec, &sh(&format!("echo {}", i))).unwrap();
        let out = ex.wait_timeout(T).unwrap();
        assert_eq!(out.stdout, format!("{}\n", i).into_bytes(), "round {}", i);
        assert!(out.success());
    }
    stop.store(true, Ordering::SeqCst);
    drainer.join().unwrap();
}

#[test]
fn exec_options_reach_the_first_command() {
    let ctx = Context::new().unwrap();
    let spec = none_spec();
    let req = sh("pwd; echo \"$GREETING\"; tr a-z A-Z")
        .env("GREETING", "hej")
        .cwd("/")
        .stdin_pipe();
    let (_s, ex) = ctx.launch_exec(&spec, &req).unwrap();
    assert_eq!(ex.write_stdin(b"piped").unwrap(), 5);
    ex.close_stdin().unwrap();
    let out = ex.wait_timeout(T).unwrap();
    assert_eq!(out.stdout, b"/\nhej\nPIPED", "{:?}", out);
    let (_s, ex) = ctx.launch_exec(&spec, &sh("stty size").pty(33, 101)).unwrap();
    let out = ex.wait_timeout(T).unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("33 101"), "{:?}", out);
    let t0 = Instant::now();
    let (_s, ex) = ctx
        .launch_exec(&spec, &sh("sleep 30 & sleep 30").timeout(Duration::from_millis(300)))
        .unwrap();
    assert_eq!(ex.wait_timeout(T).unwrap().killed, Some(KillReason::Timeout));
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_session_runs_more_commands_and_stops_the_first() {
    let ctx = Context::new().unwrap();
    let (s, first) = ctx
        .launch_exec(&none_spec(), &ExecRequest::new(["sleep", "30"]))
        .unwrap();
    assert_eq!(s.state(), Some(State::Active));
    let second = s.exec(&ExecRequest::new(["echo", "second"])).unwrap();
    assert_ne!(second.id(), first.id());
    assert_eq!(second.wait_timeout(T).unwrap().stdout, b"second\n");
    s.stop().unwrap();
    assert_eq!(first.wait_timeout(T).unwrap().killed, Some(KillReason::Manual));
    assert_eq!(s.state(), Some(State::Destroyed));
}

#[test]
fn empty_argv_is_refused_before_anything_starts() {
    let ctx = Context::new().unwrap();
    let e = ctx
        .launch_exec(&none_spec(), &ExecRequest::new(Vec::<String>::new()))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("argv: empty"), "{}", e);
    assert_eq!(ctx.dropped_events(), 0, "a session was started");
}

#[test]
fn the_library_refuses_an_empty_request_itself() {
    // Straight through -sys: a request without argv, and none at all.
    let ctx = Context::new().unwrap();
    let spec = none_spec();
    let mut req = ptr::null_mut();
    // SAFETY: out-pointer to a local.
    assert_eq!(unsafe { sys::ccsb_exec_req_new(&mut req) }, 0);
    let mut s = ptr::null_mut();
    let mut id: u64 = 77;
    // SAFETY: valid context, spec and request; out-pointers to locals.
    let r = unsafe { sys::ccsb_launch_exec(ctx.as_ptr(), spec.as_ptr(), req, &mut s, &mut id) };
    // SAFETY: valid context; copied at once.
    let msg = unsafe { std::ffi::CStr::from_ptr(sys::ccsb_ctx_errmsg(ctx.as_ptr())) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(r, sys::CCSB_E_INVAL);
    assert!(msg.contains("argv: empty"), "{}", msg);
    assert!(s.is_null());
    assert_eq!(id, 0);
    // SAFETY: as above, with a NULL request.
    let r = unsafe { sys::ccsb_launch_exec(ctx.as_ptr(), spec.as_ptr(), ptr::null(), &mut s, &mut id) };
    assert_eq!(r, sys::CCSB_E_INVAL);
    assert!(s.is_null());
    // SAFETY: ours; freed once.
    unsafe { sys::ccsb_exec_req_free(req) };
}

#[test]
fn a_bad_spec_names_the_field_and_launches_nothing() {
    let ctx = Context::new().unwrap();
    let mut spec = none_spec();
    spec.session_id("rs-le-bad")
        .unwrap()
        .bind_mount("relative/path", None, false)
        .unwrap();
    let e = ctx.launch_exec(&spec, &ExecRequest::new(["true"])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec);
    assert_eq!(e.call(), "ccsb_launch_exec");
    assert!(e.message().contains("bindMounts[0].hostPath"), "{}", e);
    // The id was never taken.
    let mut spec = none_spec();
    spec.session_id("rs-le-bad").unwrap();
    let (_s, ex) = ctx.launch_exec(&spec, &ExecRequest::new(["true"])).unwrap();
    assert!(ex.wait_timeout(T).unwrap().success());
}

#[test]
fn microvm_never_falls_back() {
    let ctx = Context::new().unwrap();
    let spec = common::spec(Backend::Microvm);
    let e = ctx.launch_exec(&spec, &ExecRequest::new(["true"])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.message().contains("microvm"), "{}", e);
}

#[test]
fn a_live_session_id_is_refused() {
    let ctx = Context::new().unwrap();
    let mut spec = none_spec();
    spec.session_id("rs-le-twice").unwrap();
    let _live = ctx.launch(&spec).unwrap();
    let e = ctx.launch_exec(&spec, &ExecRequest::new(["true"])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
}

#[test]
fn native_command_runs_sandboxed_with_its_exec_id() {
    let ctx = Context::new().unwrap();
    let dir = std::env::temp_dir().join(format!("ccsb-rs-le-{}", std::process::id()));
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap().to_owned();
    let mut spec = common::spec(Backend::Native);
    spec.bind_mount(&d, None, false).unwrap().guest_workdir(&d).unwrap();
    let target = format!("/usr/ccsb-rs-le-denied-{}", std::process::id());
    let req = sh(&format!("pwd; echo x > {}; echo ok > f", target));
    let (s, ex) = match common::native_or_skip(&ctx, "native launch_exec", || ctx.launch_exec(&spec, &req)) {
        Some(v) => v,
        None => {
            std::fs::remove_dir_all(&dir).unwrap();
            return;
        }
    };
    assert_eq!(s.backend(), Some(Backend::Native));
    let out = ex.wait_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(out.exec_id, ex.id());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), d);
    assert!(!std::path::Path::new(&target).exists());
    assert_eq!(std::fs::read_to_string(dir.join("f")).unwrap(), "ok\n");
    let vs = common::violations(&out, &s);
    assert!(
        vs.iter().any(|v| v.target.contains(&target) || v.raw.contains(&target)),
        "{:?}",
        vs
    );
    assert_eq!(s.run(&ExecRequest::new(["echo", "again"])).unwrap().stdout, b"again\n");
    drop(ex);
    drop(s);
    std::fs::remove_dir_all(&dir).unwrap();
}
