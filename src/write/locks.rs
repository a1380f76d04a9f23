//! [`TracedMutex`]: a mutex whose contended waits are spans.
//!
//! An uncontended lock writes nothing: the first attempt is parking_lot's `try_lock`, one
//! compare-and-swap, exactly the fast path of `parking_lot::Mutex::lock`. Only when it fails
//! does the lock read the clock, open a span named after the lock (a static name, so it is
//! written once per slot as a definition where the recorder does that), wait, and end the span
//! when the lock is held. The span therefore measures the wait alone, nests under whatever span
//! the waiting thread has open, and shows in every reader as any other named span.

use crate::write::span_api::span_static;
use core::fmt;
use core::ops::{Deref, DerefMut};

/// A `parking_lot` mutex that records the wait of a contended `lock` as a span named after the
/// lock, and nothing when the lock is free.
///
/// ```
/// # let _g = typhon_recorder::doc_lock();
/// use typhon_recorder::{sink::NullSink, RecorderBuilder, TracedMutex};
/// static QUEUE: TracedMutex<Vec<u32>> = TracedMutex::new("queue lock", Vec::new());
///
/// let rec = RecorderBuilder::new().sink(NullSink).start().unwrap();
/// QUEUE.lock().push(1); // free: no record
/// let held = QUEUE.lock();
/// let waiter = std::thread::spawn(|| QUEUE.lock().push(2)); // waits: one span, "queue lock"
/// std::thread::sleep(std::time::Duration::from_millis(20));
/// drop(held);
/// waiter.join().unwrap();
/// assert_eq!(*QUEUE.lock(), [1, 2]);
/// rec.finish().unwrap();
/// ```
pub struct TracedMutex<T: ?Sized> {
    name: &'static str,
    inner: parking_lot::Mutex<T>,
}

/// The guard of a [`TracedMutex`]: the lock is held until it is dropped.
///
/// ```
/// let m = typhon_recorder::TracedMutex::new("m", 1);
/// *m.lock() += 1;
/// assert_eq!(*m.lock(), 2);
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct TracedMutexGuard<'a, T: ?Sized>(parking_lot::MutexGuard<'a, T>);

impl<T> TracedMutex<T> {
    /// A mutex holding `value`, whose waits are spans named `name`; `const`, so it can be a
    /// `static`.
    ///
    /// ```
    /// static M: typhon_recorder::TracedMutex<u32> = typhon_recorder::TracedMutex::new("m", 0);
    /// assert_eq!(M.name(), "m");
    /// ```
    pub const fn new(name: &'static str, value: T) -> Self {
        Self {
            name,
            inner: parking_lot::const_mutex(value),
        }
    }

    /// The value, taking the mutex apart.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::TracedMutex::new("m", 5).into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> T {
        self.inner.into_inner()
    }
}

impl<T: ?Sized> TracedMutex<T> {
    /// Locks the mutex, blocking until it is free. A wait is recorded as a span named after
    /// the lock, from the failed first attempt to the moment the lock is held; a free lock
    /// records nothing.
    ///
    /// ```
    /// let m = typhon_recorder::TracedMutex::new("m", String::new());
    /// m.lock().push('x');
    /// assert_eq!(*m.lock(), "x");
    /// ```
    #[inline]
    pub fn lock(&self) -> TracedMutexGuard<'_, T> {
        match self.inner.try_lock() {
            Some(g) => TracedMutexGuard(g),
            None => self.lock_contended(),
        }
    }

    // Out of line: the uncontended path stays the size of parking_lot's own fast path.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> TracedMutexGuard<'_, T> {
        let wait = span_static(self.name);
        let g = self.inner.lock();
        drop(wait);
        TracedMutexGuard(g)
    }

    /// Locks the mutex if it is free, recording nothing either way.
    ///
    /// ```
    /// let m = typhon_recorder::TracedMutex::new("m", 0);
    /// let g = m.lock();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<TracedMutexGuard<'_, T>> {
        self.inner.try_lock().map(TracedMutexGuard)
    }

    /// The value, through `&mut self`: no locking is needed.
    ///
    /// ```
    /// let mut m = typhon_recorder::TracedMutex::new("m", 1);
    /// *m.get_mut() = 3;
    /// assert_eq!(*m.lock(), 3);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut()
    }

    /// The name its waits are recorded under.
    ///
    /// ```
    /// assert_eq!(typhon_recorder::TracedMutex::new("pool", ()).name(), "pool");
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for TracedMutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracedMutex")
            .field("name", &self.name)
            .field("inner", &&self.inner)
            .finish()
    }
}

impl<T: ?Sized> Deref for TracedMutexGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized> DerefMut for TracedMutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for TracedMutexGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
