//! `Context::prestart` (ccsb_ctx_prestart): an idle bubblewrap started
//! ahead, which the next native launch takes. A launch after one runs its
//! commands; each native launch takes one (so at most 4 wait again
//! afterwards, the 5th call failing with `ErrorKind::State`); dropping the
//! context ends those never taken, and no bubblewrap process of ours is
//! left. The tests of this binary run one at a time: they count this
//! process's children.
use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ccsandbox::{Backend, Context, ErrorKind, ExecRequest, Spec};

/// The library's limit (header: "at most 4 wait").
const MAX_WAITING: usize = 4;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    // A failed test poisons it; the next one still runs alone.
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Children of every thread of this process (the library forks from its
/// loop thread; its children move to another thread of ours when it ends).
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

/// Children not in `before` that are (or, as zombies, were) bubblewrap.
fn bwrap_children(before: &BTreeSet<u32>) -> BTreeSet<u32> {
    children()
        .difference(before)
        .filter(|p| std::fs::read_to_string(format!("/proc/{}/comm", p)).map_or(false, |c| c.trim() == "bwrap"))
        .cloned()
        .collect()
}

/// Polls `cond` until it holds or two seconds passed.
fn wait_for<F: FnMut() -> bool>(mut cond: F) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !cond() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first prestart; false (after a SKIP line) where the host has
/// nothing to start ahead.
fn first_prestart(ctx: &Context) -> bool {
    match ctx.prestart() {
        Ok(()) => true,
        Err(e) if e.kind() == ErrorKind::Unavailable => {
            println!("SKIP prestart: nothing to start ahead here: {}", e);
            false
        }
        Err(e) => panic!("prestart failed: {}", e),
    }
}

fn native_available(ctx: &Context) -> bool {
    let pr = ctx.probe().unwrap();
    if !pr.available {
        println!("SKIP prestart: native backend unavailable here: {}", pr.hint);
    }
    pr.available
}

fn fill(ctx: &Context, n: usize) {
    for i in 0..n {
        if let Err(e) = ctx.prestart() {
            panic!("prestart {} of {} refused: {}", i + 1, n, e);
        }
    }
}

fn assert_full(ctx: &Context) {
    let e = ctx.prestart().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::State, "{}", e);
    assert_eq!(e.call(), "ccsb_ctx_prestart");
    assert!(e.message().contains("already wait"), "{}", e);
}

#[test]
fn a_native_launch_runs_on_the_prestarted_bwrap_and_takes_it() {
    let _g = serial();
    let ctx = Context::new().unwrap();
    if !native_available(&ctx) || !first_prestart(&ctx) {
        return;
    }
    let mut spec = Spec::new().unwrap();
    spec.backend(Backend::Native)
        .unwrap()
        .session_id("rs-prestart")
        .unwrap();
    let s = match ctx.launch(&spec) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Unsupported) => {
            println!("SKIP prestart: native backend not in this build: {}", e);
            return;
        }
        Err(e) => panic!("native launch failed: {}", e),
    };
    assert_eq!(s.backend(), Some(Backend::Native));
    let out = s.run(&ExecRequest::new(["true"])).unwrap();
    assert!(out.success() && out.killed.is_none(), "{:?}", out);
    drop(s);
    // The launch took the one waiting: 4 fit again, not 3.
    fill(&ctx, MAX_WAITING);
    assert_full(&ctx);
}

#[test]
fn the_fifth_waiting_prestart_is_refused() {
    let _g = serial();
    let ctx = Context::new().unwrap();
    if !first_prestart(&ctx) {
        return;
    }
    fill(&ctx, MAX_WAITING - 1);
    assert_full(&ctx);
    // Still full: a refused call adds nothing and frees no slot.
    assert_full(&ctx);
}

#[test]
fn dropping_the_context_ends_every_untaken_bwrap() {
    let _g = serial();
    let ctx = Context::new().unwrap();
    if !native_available(&ctx) {
        return;
    }
    let before = children();
    if !first_prestart(&ctx) {
        return;
    }
    fill(&ctx, MAX_WAITING - 1);
    // Started on the library's thread, without the call waiting for it.
    wait_for(|| bwrap_children(&before).len() >= MAX_WAITING);
    let started = bwrap_children(&before);
    assert_eq!(started.len(), MAX_WAITING, "bubblewrap children: {:?}", started);
    drop(ctx);
    // Gone means reaped too: a zombie is still listed as our child.
    wait_for(|| bwrap_children(&before).is_empty() && children().is_disjoint(&started));
    assert_eq!(
        bwrap_children(&before),
        BTreeSet::new(),
        "bubblewrap left after the context"
    );
    let left: BTreeSet<u32> = children().intersection(&started).cloned().collect();
    assert_eq!(left, BTreeSet::new(), "prestarted children left after the context");
}
