//! `Event`: one event copied out of the library (no library memory held).
use ccsandbox_sys as sys;

use crate::types::{EventKind, KillReason, State};
use crate::util::text;

/// One event. Fields that do not apply to `kind` hold neutral values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub session_id: String,
    /// 0 for session-level events.
    pub exec_id: u64,
    /// stdout / stderr bytes.
    pub data: Vec<u8>,
    /// exit: the status, or -1 when a signal ended the process.
    pub exit_code: i32,
    /// exit: the terminating signal, 0 otherwise.
    pub signal: i32,
    pub kill_reason: Option<KillReason>,
    /// violation: e.g. "file-write", "network-outbound".
    pub action: String,
    pub target: String,
    pub raw: String,
    /// state: the new state.
    pub state: Option<State>,
    pub message: String,
    pub timestamp_us: i64,
}

impl Event {
    /// Copies and frees a library event.
    ///
    /// # Safety
    /// `ev` must be a valid event popped from a context, owned by the caller.
    pub(crate) unsafe fn take(ev: *mut sys::ccsb_event) -> Event {
        let mut len: usize = 0;
        let p = sys::ccsb_event_data(ev, &mut len);
        let data = if p.is_null() || len == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(p, len).to_vec()
        };
        let out = Event {
            kind: EventKind::from_raw(sys::ccsb_event_type(ev)),
            session_id: text(sys::ccsb_event_session_id(ev)),
            exec_id: sys::ccsb_event_exec_id(ev),
            data,
            exit_code: sys::ccsb_event_exit_code(ev),
            signal: sys::ccsb_event_signal(ev),
            kill_reason: KillReason::from_raw(sys::ccsb_event_kill_reason(ev)),
            action: text(sys::ccsb_event_violation_action(ev)),
            target: text(sys::ccsb_event_violation_target(ev)),
            raw: text(sys::ccsb_event_violation_raw(ev)),
            state: State::from_raw(sys::ccsb_event_state(ev)),
            message: text(sys::ccsb_event_message(ev)),
            timestamp_us: sys::ccsb_event_timestamp_us(ev),
        };
        sys::ccsb_event_free(ev);
        out
    }

    /// The event's type name ("stdout", "exit", ...), as the library spells it.
    pub fn kind_name(&self) -> String {
        let raw = match self.kind {
            EventKind::Starting => sys::CCSB_EVENT_STARTING,
            EventKind::Ready => sys::CCSB_EVENT_READY,
            EventKind::Stdout => sys::CCSB_EVENT_STDOUT,
            EventKind::Stderr => sys::CCSB_EVENT_STDERR,
            EventKind::Exit => sys::CCSB_EVENT_EXIT,
            EventKind::Killed => sys::CCSB_EVENT_KILLED,
            EventKind::Violation => sys::CCSB_EVENT_VIOLATION,
            EventKind::State => sys::CCSB_EVENT_STATE,
            EventKind::Error => sys::CCSB_EVENT_ERROR,
            EventKind::Unknown(v) => v,
        };
        // SAFETY: returns a static string.
        text(unsafe { sys::ccsb_event_type_name(raw) })
    }
}
