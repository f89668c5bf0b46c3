//! A launch_exec that fails leaves no process and no fd behind, whether the
//! session itself or only its first command could not start. Alone in its
//! own test binary so that no parallel test forks or opens descriptors
//! while it counts.
use std::collections::BTreeSet;

use ccsandbox::{Backend, Context, ErrorKind, ExecRequest};

mod common;
use common::{children, children_settle, fds, spec};

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
    let native = common::native_available(&Context::new().unwrap(), "the native case");
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
