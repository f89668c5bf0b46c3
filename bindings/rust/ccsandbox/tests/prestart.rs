//! `Context::prestart` (ccsb_ctx_prestart): an idle bubblewrap started
//! ahead, which the next native launch takes. A launch after one runs its
//! commands; each native launch takes one (so at most 4 wait again
//! afterwards, the 5th call failing with `ErrorKind::State`); dropping the
//! context ends those never taken, and no bubblewrap process of ours is
//! left. The tests of this binary run one at a time: they count this
//! process's children.
use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use ccsandbox::{Backend, Context, ErrorKind, ExecRequest};

mod common;
use common::{children, native_available, native_or_skip, wait_for};

/// The library's limit (header: "at most 4 wait").
const MAX_WAITING: usize = 4;
const SETTLE: Duration = Duration::from_secs(2);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    // A failed test poisons it; the next one still runs alone.
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Children not in `before` that are (or, as zombies, were) bubblewrap.
fn bwrap_children(before: &BTreeSet<u32>) -> BTreeSet<u32> {
    children()
        .difference(before)
        .filter(|p| std::fs::read_to_string(format!("/proc/{}/comm", p)).map_or(false, |c| c.trim() == "bwrap"))
        .cloned()
        .collect()
}

/// `n` prestarts, each of which must be accepted; false (after a SKIP
/// line) when the first is refused as unavailable: the host has nothing to
/// start ahead.
fn prestart(ctx: &Context, n: usize) -> bool {
    for i in 0..n {
        match ctx.prestart() {
            Ok(()) => {}
            Err(e) if i == 0 && e.kind() == ErrorKind::Unavailable => {
                println!("SKIP prestart: nothing to start ahead here: {}", e);
                return false;
            }
            Err(e) => panic!("prestart {} of {} refused: {}", i + 1, n, e),
        }
    }
    true
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
    if !native_available(&ctx, "prestart") || !prestart(&ctx, 1) {
        return;
    }
    let mut spec = common::spec(Backend::Native);
    spec.session_id("rs-prestart").unwrap();
    let s = match native_or_skip(&ctx, "prestart", || ctx.launch(&spec)) {
        Some(s) => s,
        None => return,
    };
    assert_eq!(s.backend(), Some(Backend::Native));
    let out = s.run(&ExecRequest::new(["true"])).unwrap();
    assert!(out.success() && out.killed.is_none(), "{:?}", out);
    drop(s);
    // The launch took the one waiting: 4 fit again, not 3.
    assert!(prestart(&ctx, MAX_WAITING), "prestart unavailable after it worked");
    assert_full(&ctx);
}

#[test]
fn the_fifth_waiting_prestart_is_refused() {
    let _g = serial();
    let ctx = Context::new().unwrap();
    if !prestart(&ctx, MAX_WAITING) {
        return;
    }
    assert_full(&ctx);
    // Still full: a refused call adds nothing and frees no slot.
    assert_full(&ctx);
}

#[test]
fn dropping_the_context_ends_every_untaken_bwrap() {
    let _g = serial();
    let ctx = Context::new().unwrap();
    if !native_available(&ctx, "prestart") {
        return;
    }
    let before = children();
    if !prestart(&ctx, MAX_WAITING) {
        return;
    }
    // Started on the library's thread, without the call waiting for it.
    wait_for(SETTLE, || bwrap_children(&before).len() >= MAX_WAITING);
    let started = bwrap_children(&before);
    assert_eq!(started.len(), MAX_WAITING, "bubblewrap children: {:?}", started);
    drop(ctx);
    // Gone means reaped too: a zombie is still listed as our child.
    wait_for(SETTLE, || {
        bwrap_children(&before).is_empty() && children().is_disjoint(&started)
    });
    assert_eq!(
        bwrap_children(&before),
        BTreeSet::new(),
        "bubblewrap left after the context"
    );
    let left: BTreeSet<u32> = children().intersection(&started).cloned().collect();
    assert_eq!(left, BTreeSet::new(), "prestarted children left after the context");
}
