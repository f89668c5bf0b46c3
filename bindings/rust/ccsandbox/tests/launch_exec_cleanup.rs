//! A launch_exec that fails leaves no process and no fd behind, whether the
//! session itself or only its first command could not start. Alone in its
//! own test binary so that no parallel test forks or opens descriptors
//! while it counts.
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ccsandbox::{Backend, Context, ErrorKind, ExecRequest, Spec};

fn fds() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| format!("{:?} -> {:?}", e.file_name(), std::fs::read_link(e.path()).ok()))
        .collect();
    v.sort();
    v
}

/// Children of every thread of this process (the library forks from its
/// loop thread).
fn children() -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().filter_map(|e| e.ok()) {
        // A thread that ended meanwhile has no file left: nothing to add.
        if let Ok(text) = std::fs::read_to_string(t.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
        }
    }
    out
}

/// Children beyond `before`, once they are gone or a few seconds passed.
fn children_settle(before: &BTreeSet<u32>) -> BTreeSet<u32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let extra: BTreeSet<u32> = children().difference(before).cloned().collect();
        if extra.is_empty() || Instant::now() >= deadline {
            return extra;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spec(backend: Backend) -> Spec {
    let mut s = Spec::new().unwrap();
    s.backend(backend).unwrap();
    s
}

fn failures(ctx: &Context, native: bool) {
    let mut bad = spec(Backend::None);
    bad.bind_mount("relative", None, false).unwrap();
    let e = ctx.launch_exec(&bad, &ExecRequest::new(["sleep", "30"])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Spec, "{}", e);
    let e = ctx
        .launch_exec(&spec(Backend::Microvm), &ExecRequest::new(["sleep", "30"]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{}", e);
    if native {
        // The sandbox starts, but an argv over the size its init accepts
        // cannot be handed to it: the command never starts.
        let huge = "x".repeat(5 << 20);
        let e = ctx
            .launch_exec(&spec(Backend::Native), &ExecRequest::new(["true", huge.as_str()]))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{}", e);
        assert_eq!(e.call(), "ccsb_launch_exec");
        assert!(e.message().contains("command"), "{}", e);
    }
}

#[test]
fn failed_launch_exec_leaves_nothing_behind() {
    let native = Context::new().unwrap().probe().unwrap().available;
    if !native {
        println!("SKIP the native case: the native backend is unavailable here");
    }
    // Anything opened once per process happens in this first round.
    {
        let ctx = Context::new().unwrap();
        failures(&ctx, native);
    }
    let before_fds = fds();
    let before = children();
    for _ in 0..3 {
        let ctx = Context::new().unwrap();
        failures(&ctx, native);
        assert_eq!(
            children_settle(&before),
            BTreeSet::new(),
            "a process outlived the failed call"
        );
        // A success in the same context, then its teardown.
        let (s, ex) = ctx
            .launch_exec(&spec(Backend::None), &ExecRequest::new(["sleep", "30"]))
            .unwrap();
        assert!(ex.id() > 0);
        assert!(children().difference(&before).count() > 0, "the command is not running");
        drop(ex);
        drop(s);
        assert_eq!(
            children_settle(&before),
            BTreeSet::new(),
            "the command outlived its session"
        );
    }
    assert_eq!(fds(), before_fds);
}
