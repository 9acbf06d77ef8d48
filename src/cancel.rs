//! Cancellation as a value (mini-redis's `Shutdown`): one `Cancel` is made per command and
//! handed down — run options, the runner, each contender's launch and probes, the load
//! engine's config — never read from a global. Cloning shares the flag; a fresh command gets
//! a fresh flag, so nothing is ever reset.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// A shared "stop now" flag: set once (Ctrl-C, SIGTERM), seen by every holder.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag nobody has set.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Sets the flag for every holder.
    pub fn cancel(&self) {
        self.0.store(true, Relaxed);
    }

    /// Sets the flag and says whether it was set before (a second signal).
    pub fn cancel_again(&self) -> bool {
        self.0.swap(true, Relaxed)
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Relaxed)
    }

    /// The flag itself, for a signal handler that can only reach a static pointer. The
    /// handle stays valid as long as one clone of this `Cancel` lives (the caller keeps one).
    pub fn as_ptr(&self) -> *const AtomicBool {
        Arc::as_ptr(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_flag_and_new_values_start_clear() {
        let a = Cancel::new();
        let b = a.clone();
        assert!(!b.is_cancelled());
        a.cancel();
        assert!(b.is_cancelled());
        assert!(b.cancel_again(), "a second cancel sees the first");
        assert!(
            !Cancel::new().is_cancelled(),
            "a fresh value is never cancelled"
        );
    }
}
