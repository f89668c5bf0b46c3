//! No fd survives a context's lifecycle. Alone in its own test binary so
//! that no parallel test opens descriptors while it counts.
use ccsandbox::{Backend, Context, ExecRequest, Spec};

mod common;
use common::fds;

fn lifecycle(stdin: bool) {
    let ctx = Context::new().unwrap();
    let mut spec = Spec::new().unwrap();
    spec.backend(Backend::None).unwrap();
    let s = ctx.launch(&spec).unwrap();
    let mut req = ExecRequest::new(["cat"]);
    if stdin {
        req = req.stdin_pipe();
    }
    let ex = s.exec(&req).unwrap();
    if stdin {
        ex.write_stdin(b"x").unwrap();
        ex.close_stdin().unwrap();
    }
    assert!(ex.wait().unwrap().success());
    // A running exec at teardown: the session kills it and closes its pipes.
    s.exec(&ExecRequest::new(["sleep", "30"])).unwrap();
}

#[test]
fn no_fd_leak_over_many_lifecycles() {
    lifecycle(false); // anything opened once per process happens here
    let before = fds();
    for i in 0..10 {
        lifecycle(i % 2 == 0);
    }
    // The read_dir handle itself is open while listing, in both lists.
    assert_eq!(fds(), before);
}
