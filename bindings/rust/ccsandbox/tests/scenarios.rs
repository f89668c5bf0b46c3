//! The C integration scenarios through the Rust binding: probe; launch;
//! exec with stdout/stderr/exit; timeout; violation event from a denied
//! write (native); denied egress (native + egress). Native scenarios print
//! why and return early where the native backend or egress is unavailable.
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use ccsandbox::{Backend, Context, ErrorKind, EventKind, ExecRequest, KillReason, Session, Spec, State};

mod common;
use common::{none_spec, sh};

const T: Duration = Duration::from_secs(10);

fn launch_none(ctx: &Context) -> Session {
    ctx.launch(&none_spec()).unwrap()
}

#[test]
fn probe_reports_the_host() {
    let ctx = Context::new().unwrap();
    let pr = ctx.probe().unwrap();
    assert!(
        ["linux", "wsl2", "macos", "other"].contains(&pr.platform.as_str()),
        "{:?}",
        pr
    );
    assert!(["bubblewrap", "seatbelt", "none"].contains(&pr.mechanism.as_str()));
    assert!(!pr.note.is_empty());
    assert!(pr.json.contains("\"platform\""));
    if pr.available {
        assert!(pr.startup_message(false).starts_with("agent sandbox ON ("));
    } else {
        assert!(!pr.hint.is_empty());
        assert!(pr.startup_message(false).starts_with("no OS-native agent sandbox"));
    }
    assert_eq!(pr.startup_message(true), "agent sandbox DISABLED by --sandbox off");
    assert_eq!(ccsandbox::probe().unwrap().available, pr.available);
}

#[test]
fn spec_setters_and_json_round_trip() {
    let mut s = Spec::new().unwrap();
    s.session_id("rs-spec")
        .unwrap()
        .backend(Backend::None)
        .unwrap()
        .mode(ccsandbox::Mode::Review)
        .unwrap()
        .bind_mount("/tmp", Some("/guest"), true)
        .unwrap()
        .egress_allow("*.example.com")
        .unwrap()
        .env("LANG", "C.UTF-8")
        .unwrap()
        .timeout(Duration::from_millis(1234))
        .unwrap()
        .upstream_proxy("http://127.0.0.1:3128")
        .unwrap();
    let j = s.to_json().unwrap();
    for needle in [
        "\"rs-spec\"",
        "\"review\"",
        "\"/guest\"",
        "*.example.com",
        "C.UTF-8",
        "1234",
        "\"http://127.0.0.1:3128\"",
    ] {
        assert!(j.contains(needle), "{} lacks {}", j, needle);
    }
    s.validate().unwrap();
    let again = Spec::from_json(&j).unwrap();
    assert_eq!(again.to_json().unwrap(), j);
    let copy = s.try_clone().unwrap();
    assert_eq!(copy.to_json().unwrap(), j);
}

#[test]
fn bad_specs_name_the_field() {
    let e = Spec::from_json(r#"{"bindMounts":[{"hostPath":"relative"}]}"#).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec);
    assert_eq!(e.code(), -3);
    assert!(e.message().contains("bindMounts[0].hostPath"), "{}", e);
    let mut s = Spec::new().unwrap();
    s.bind_mount("relative/path", None, false).unwrap();
    let e = s.validate().unwrap_err();
    assert!(e.to_string().contains("bindMounts[0].hostPath"), "{}", e);
    let e = Spec::new().unwrap().session_id("a\0b").map(|_| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("sessionId"));
}

#[test]
fn check_host_names_the_rule() {
    let mut s = Spec::new().unwrap();
    s.egress_allow("*.example.com").unwrap();
    let (ok, why) = s.check_host("api.example.com:443").unwrap();
    assert!(ok);
    assert!(why.contains("*.example.com"), "{}", why);
    let (ok, _) = s.check_host("example.com").unwrap();
    assert!(!ok);
}

#[test]
fn backend_names() {
    assert_eq!(Backend::from_name(None), Backend::None);
    assert_eq!(Backend::from_name(Some("docker")), Backend::Native);
    assert_eq!(Backend::from_name(Some("nonsense")), Backend::None);
    assert_eq!(Backend::from_name(Some("microvm")), Backend::Microvm);
    assert_eq!(Backend::Native.name(), "native");
}

#[test]
fn launch_reports_backend_state_and_events() {
    let ctx = Context::new().unwrap();
    let mut spec = none_spec();
    spec.session_id("rs-launch").unwrap();
    let s = ctx.launch(&spec).unwrap();
    assert_eq!(s.id(), "rs-launch");
    assert_eq!(s.backend(), Some(Backend::None));
    assert_eq!(s.state(), Some(State::Warm));
    let mut kinds = Vec::new();
    while let Some(ev) = s.try_next_event().unwrap() {
        assert_eq!(ev.session_id, "rs-launch");
        kinds.push(ev.kind);
    }
    let pos = |k| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{:?} lacks {:?}", kinds, k))
    };
    assert!(pos(EventKind::Starting) < pos(EventKind::Ready));
    assert!(s.details_json().unwrap().contains("\"none\""));
    // Same id again while the first is alive: refused, nothing launched.
    let e = ctx.launch(&spec).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    drop(s);
    ctx.launch(&spec).unwrap();
}

#[test]
fn exec_stdout_stderr_exit() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let out = s
        .exec(&sh("echo out; echo err >&2; exit 3"))
        .unwrap()
        .wait_timeout(T)
        .unwrap();
    assert_eq!(out.exit_code, 3);
    assert_eq!(out.signal, 0);
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    assert_eq!(out.killed, None);
    assert!(!out.success());
}

#[test]
fn iterating_an_exec_ends_with_its_exit() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let ex = s.exec(&sh("echo a; echo b >&2")).unwrap();
    let kinds: Vec<EventKind> = ex.events().map(|e| e.unwrap().kind).collect();
    assert_eq!(kinds.last(), Some(&EventKind::Exit));
    assert!(kinds.contains(&EventKind::Stdout) && kinds.contains(&EventKind::Stderr));
    assert!(ex.try_next_event().unwrap().is_none());
}

#[test]
fn timeout_kills() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let t0 = Instant::now();
    let out = s
        .run(&sh("sleep 30 & sleep 30").timeout(Duration::from_millis(300)))
        .unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(out.killed, Some(KillReason::Timeout));
    assert_eq!(out.signal, 9);
    assert_eq!(out.exit_code, -1);
}

#[test]
fn wait_timeout_is_resumable() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let ex = s.exec(&sh("echo early; sleep 0.5; echo late")).unwrap();
    let e = ex.wait_timeout(Duration::from_millis(100)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    assert_eq!(ex.wait_timeout(T).unwrap().stdout, b"early\nlate\n");
}

#[test]
fn stdin_kill_and_not_found() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let ex = s.exec(&ExecRequest::new(["tr", "a-z", "A-Z"]).stdin_pipe()).unwrap();
    assert_eq!(ex.write_stdin(b"hello").unwrap(), 5);
    ex.close_stdin().unwrap();
    assert_eq!(ex.wait_timeout(T).unwrap().stdout, b"HELLO");
    // The exec is gone now: the library says so with its own code.
    let e = ex.write_stdin(b"x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{}", e);
    let ex = s.exec(&ExecRequest::new(["sleep", "30"])).unwrap();
    ex.kill().unwrap();
    assert_eq!(ex.wait_timeout(T).unwrap().killed, Some(KillReason::Manual));
}

#[test]
fn env_cwd_pty() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let out = s
        .run(&sh("pwd; echo \"$GREETING\"").env("GREETING", "hej").cwd("/"))
        .unwrap();
    assert_eq!(out.stdout, b"/\nhej\n");
    let out = s.run(&sh("stty size").pty(33, 101)).unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("33 101"), "{:?}", out);
}

#[test]
fn concurrent_waits_from_threads() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let execs: Vec<_> = (0..6)
        .map(|i| s.exec(&sh(&format!("sleep 0.{}; echo {}", i % 3, i))).unwrap())
        .collect();
    let handles: Vec<_> = execs
        .into_iter()
        .enumerate()
        .map(|(i, ex)| thread::spawn(move || (i, ex.wait_timeout(Duration::from_secs(20)).unwrap())))
        .collect();
    for h in handles {
        let (i, out) = h.join().unwrap();
        assert_eq!(out.stdout, format!("{}\n", i).into_bytes());
    }
}

#[test]
fn fd_and_wakeup_for_async_runtimes() {
    let ctx = Context::new().unwrap();
    assert!(ctx.as_raw_fd() >= 0);
    let rings = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let r2 = rings.clone();
    let tx = std::sync::Mutex::new(tx);
    ctx.set_wakeup(move || {
        let first = r2.fetch_add(1, Ordering::SeqCst) == 0;
        let _ = tx.lock().unwrap().send(());
        if first {
            eprintln!("fd_and_wakeup_for_async_runtimes: the next panic is deliberate (caught before C)");
            panic!("a panicking doorbell must not unwind into C");
        }
    })
    .unwrap();
    let s = launch_none(&ctx);
    let ex = s.exec(&sh("echo rung")).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + T;
    'outer: while Instant::now() < deadline {
        let _ = rx.recv_timeout(Duration::from_millis(200));
        ctx.dispatch().unwrap();
        while let Some(ev) = ex.try_next_event().unwrap() {
            if ev.kind == EventKind::Stdout {
                out.extend_from_slice(&ev.data);
            }
            if ev.kind == EventKind::Exit {
                break 'outer;
            }
        }
    }
    assert_eq!(out, b"rung\n");
    assert!(rings.load(Ordering::SeqCst) >= 1);
    // A replaced or cleared closure lives until the context is freed (the
    // library may still be calling it), and not a moment longer.
    ctx.set_wakeup(|| {}).unwrap();
    ctx.clear_wakeup().unwrap();
    assert_eq!(Arc::strong_count(&rings), 2);
    drop((ex, s, ctx));
    assert_eq!(Arc::strong_count(&rings), 1);
}

#[test]
fn stopped_session_rejects_exec_with_the_library_message() {
    let ctx = Context::new().unwrap();
    let s = launch_none(&ctx);
    let ex = s.exec(&ExecRequest::new(["sleep", "30"])).unwrap();
    s.stop().unwrap();
    assert_eq!(s.state(), Some(State::Destroyed));
    assert_eq!(ex.wait_timeout(T).unwrap().killed, Some(KillReason::Manual));
    let e = s.exec(&ExecRequest::new(["true"])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State);
    assert!(e.message().contains("destroyed"), "{}", e);
}

#[test]
fn microvm_never_falls_back() {
    let ctx = Context::new().unwrap();
    let mut spec = Spec::new().unwrap();
    spec.backend(Backend::Microvm).unwrap();
    let e = ctx.launch(&spec).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.message().contains("microvm"), "{}", e);
}

#[test]
fn invalid_spec_launches_nothing() {
    let ctx = Context::new().unwrap();
    let mut spec = none_spec();
    spec.bind_mount("relative/path", None, false).unwrap();
    let e = ctx.launch(&spec).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec);
    assert!(e.message().contains("bindMounts[0].hostPath"), "{}", e);
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Context>();
    check::<Session>();
    check::<ccsandbox::Exec>();
    check::<Spec>();
    check::<ccsandbox::Event>();
}

fn native_session(ctx: &Context, spec: &mut Spec, what: &str) -> Option<Session> {
    spec.backend(Backend::Native).unwrap();
    common::native_or_skip(ctx, what, || ctx.launch(spec))
}

#[test]
fn native_denied_write_is_a_violation_event() {
    let ctx = Context::new().unwrap();
    let mut spec = Spec::new().unwrap();
    let s = match native_session(&ctx, &mut spec, "denied write") {
        Some(s) => s,
        None => return,
    };
    let target = format!("/usr/ccsb-rs-denied-{}", std::process::id());
    let out = s.run(&sh(&format!("echo x > {}", target))).unwrap();
    assert_ne!(out.exit_code, 0);
    assert!(!std::path::Path::new(&target).exists());
    let vs = common::violations(&out, &s);
    assert!(
        vs.iter().any(|v| v.target.contains(&target) || v.raw.contains(&target)),
        "{:?} / {:?}",
        vs,
        out
    );
    assert!(vs.iter().all(|v| !v.action.is_empty()));
}

#[test]
fn native_denied_egress_is_refused_with_a_violation() {
    let ctx = Context::new().unwrap();
    let mut spec = Spec::new().unwrap();
    let s = match native_session(&ctx, &mut spec, "denied egress") {
        Some(s) => s,
        None => return,
    };
    let proxy = s.run(&sh("echo \"${HTTP_PROXY:-}\"")).unwrap();
    if String::from_utf8_lossy(&proxy.stdout).trim().is_empty() {
        println!("SKIP denied egress: egress proxies not in this build (no HTTP_PROXY in the sandbox)");
        return;
    }
    if !std::path::Path::new("/usr/bin/python3").exists() {
        println!("SKIP denied egress: no /usr/bin/python3 to act as the client in the sandbox");
        return;
    }
    let client = "import os,socket,urllib.parse as u\n\
                  p=u.urlsplit(os.environ['HTTP_PROXY'])\n\
                  c=socket.create_connection((p.hostname,p.port),5)\n\
                  c.sendall(b'CONNECT ccsb-denied.invalid:443 HTTP/1.1\\r\\nHost: ccsb-denied.invalid:443\\r\\n\\r\\n')\n\
                  print(c.recv(200).split(b'\\r\\n')[0].decode())\n";
    let out = s.run(&ExecRequest::new(["/usr/bin/python3", "-c", client])).unwrap();
    assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(" 403"), "{:?}", out);
    let vs = common::violations(&out, &s);
    assert!(
        vs.iter()
            .any(|v| v.action == "network-outbound" && v.target.contains("ccsb-denied.invalid")),
        "{:?}",
        vs
    );
}
