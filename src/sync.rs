//! Locking std mutexes the one way candor does: a lock whose holder
//! panicked is still taken (candor does not panic, and every structure
//! behind its locks stays whole between statements).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// `m.lock()`, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
