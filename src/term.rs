//! Finishing the recording when the process is told to end (SIGINT, SIGTERM, `exit`):
//! [`crate::RecorderBuilder::finish_on_termination`].
//!
//! ```text
//!  signal handler (any thread)            typhon-signals thread          atexit hook (exiting thread)
//!   STATE: ARMED ──CAS──▶ FIRED            read(pipe) → sig                lock ARMED, take it
//!     won:  write(pipe, sig)  ────────▶     lock ARMED, take it             core.finish()
//!     lost (FIRED, DISARMED, forked         core.finish()                   restore, DISARMED
//!       child): act as the previous         restore, STATE = DISARMED       callback(Exit)
//!       disposition                         unlock; callback(Signal)
//!                                           kill(getpid(), sig)
//! ```
//!
//! Why the handoff is sound:
//! - The handler does only async-signal-safe things: atomic loads and one compare-exchange on
//!   lock-free atomics, `getpid`, `write` to a non-blocking pipe, and (when it acts as the
//!   previous disposition) `sigaction`, `raise` or a call of the previous handler. It saves and
//!   restores `errno`. It allocates nothing and takes no lock, so a signal that lands while the
//!   interrupted thread holds any lock (the allocator's, ACTIVE's) cannot deadlock it.
//! - One byte per arming: only the compare-exchange that moves STATE from ARMED to FIRED
//!   writes, so a signal arriving twice (or SIGINT and SIGTERM together) wakes the thread once;
//!   the loser acts as the previous disposition at once (a second Ctrl-C kills while the first
//!   is being finished). The pipe holds 64 KiB, so the one write never finds it full.
//! - What the handler reads is published before it can run: the pipe's fd, the process id and
//!   the previous dispositions (`PREV`) are stored before STATE becomes ARMED (Release), and
//!   the handler reads STATE (Acquire) first. Each arming leaks its `Prev` (about 300 bytes),
//!   so a handler still reading an older one never reads freed memory.
//! - Only the `ARMED` mutex decides who finishes: the thread, the hook and `Recorder::finish`'s
//!   disarm each take the armed entry out under it, and `Core::finish` runs once (a second
//!   caller waits for the first's outcome on `Core::ending`). Holding `ARMED` across the finish
//!   keeps a later recorder from being armed (and its handler installed over ours) between the
//!   finish and the restore. Lock order is `ARMED` → `Core::ending` → ACTIVE; `Recorder::finish`
//!   takes `ending` and releases it before it disarms, and the callback runs with no lock held
//!   (it may call `exit`, whose hook takes `ARMED`).
//! - Every record written before the signal is in the file: a write that completed before the
//!   signal was sent happens before the handler runs (the kernel's signal delivery orders it),
//!   the handler's pipe write before the thread's read, and `Core::finish` then uninstalls the
//!   recorder and hands the flusher its last cycle with the Release/Acquire pair of
//!   `Wake::finish` (SPEC's finish guarantee, as for a call of `Recorder::finish`).
//! - A forked child inherits the handler but not the thread: the handler compares `getpid()`
//!   with the process that made the pipe and acts as the previous disposition in a child, so a
//!   child's SIGTERM never reaches the parent's thread through the shared pipe; the `atexit`
//!   hook does nothing in a child either.
//! - At `exit`, the exiting thread's thread-locals are already destroyed (glibc runs their
//!   destructors before the `atexit` hooks) and other threads still run. `Core::finish` needs
//!   neither: it takes parking_lot locks (which fall back to a stack-allocated parker without
//!   thread-locals), joins the flusher, and the flusher writes the file on its own thread. The
//!   hook does nothing on the flusher thread itself (a sink that calls `exit`), which it could
//!   not join, and it prints a failure with `write(2)` rather than through Rust's `stderr`.

use crate::error::RecorderError;
use crate::stats::Stats;
use std::fmt;

/// Why the recording was finished for the program: what the callback of
/// [`crate::RecorderBuilder::on_termination`] is told.
///
/// ```
/// assert_eq!(typhon_recorder::Termination::Signal(15).to_string(), "SIGTERM");
/// assert_eq!(typhon_recorder::Termination::Exit.to_string(), "exit");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// SIGINT (2) or SIGTERM (15) arrived: after the callback the signal is raised again.
    Signal(i32),
    /// The process is exiting (`std::process::exit`, a return from `main`) with the recorder
    /// still running.
    Exit,
}

impl fmt::Display for Termination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Termination::Signal(2) => f.write_str("SIGINT"),
            Termination::Signal(15) => f.write_str("SIGTERM"),
            Termination::Signal(n) => write!(f, "signal {n}"),
            Termination::Exit => f.write_str("exit"),
        }
    }
}

/// The callback of [`crate::RecorderBuilder::on_termination`].
pub(crate) type Callback = Box<dyn FnOnce(Termination, Result<Stats, RecorderError>) + Send>;

#[cfg(target_os = "linux")]
pub(crate) use imp::{arm, disarm};

#[cfg(target_os = "linux")]
mod imp {
    use super::{Callback, Termination};
    use crate::session::Core;
    use libc::c_int;
    use parking_lot::Mutex;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU8, Ordering};
    use std::sync::{Arc, Once};

    /// The signals that finish the recording.
    const SIGNALS: [c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    const DISARMED: u8 = 0;
    const ARMED: u8 = 1;
    const FIRED: u8 = 2;

    /// The handler's state (see the module's docs).
    static STATE: AtomicU8 = AtomicU8::new(DISARMED);
    /// The pipe's write end (non-blocking) and read end, and the process they belong to.
    static WFD: AtomicI32 = AtomicI32::new(-1);
    static RFD: AtomicI32 = AtomicI32::new(-1);
    static PID: AtomicI32 = AtomicI32::new(0);
    /// The dispositions our handler replaced (null before the first arming).
    static PREV: AtomicPtr<Prev> = AtomicPtr::new(std::ptr::null_mut());
    /// The armed recorder; taken out by whoever finishes it for the program, or by its disarm.
    static ARMED_REC: Mutex<Option<Armed>> = Mutex::new(None);
    static AT_EXIT: Once = Once::new();

    /// What SIGINT and SIGTERM did before (`act[i]` for `SIGNALS[i]`), and whether our handler
    /// was installed for it (not for a signal the process ignored).
    struct Prev {
        act: [libc::sigaction; 2],
        installed: [bool; 2],
    }

    struct Armed {
        core: Arc<Core>,
        callback: Option<Callback>,
        prev: &'static Prev,
    }

    /// Installs the handlers and the `atexit` hook for `core` (see the builder's docs).
    pub(crate) fn arm(core: &Arc<Core>, callback: Option<Callback>) -> std::io::Result<()> {
        let mut armed = ARMED_REC.lock();
        match armed.as_mut() {
            Some(a) if a.core.gen == core.gen => {
                if callback.is_some() {
                    a.callback = callback;
                }
                return Ok(());
            }
            // A finished recorder whose disarm has not run yet (its finish is on another
            // thread): its handlers go before ours are installed.
            Some(_) => disarm_locked(&mut armed),
            None => {}
        }
        start_thread()?;
        // SAFETY: all-zero is a valid `sigaction` (SIG_DFL, empty mask, no flags).
        let mut prev = Prev {
            act: unsafe { std::mem::zeroed() },
            installed: [false; 2],
        };
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: a query (no new action) into a live, writable `sigaction`.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut prev.act[i]) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            prev.installed[i] = prev.act[i].sa_sigaction != libc::SIG_IGN;
        }
        let prev: &'static Prev = Box::leak(Box::new(prev));
        // Release (both): the handler reads STATE with Acquire before it reads PREV, the fd and
        // the pid (stored by `start_thread` above).
        PREV.store(prev as *const Prev as *mut Prev, Ordering::Release);
        STATE.store(ARMED, Ordering::Release);
        // SAFETY: all-zero is a valid `sigaction`; the fields are set below.
        let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
        ours.sa_sigaction = on_signal as *const () as usize;
        // SA_RESTART: a system call the handler interrupts is restarted, not failed with
        // EINTR (the program did not ask for a handler). SA_ONSTACK: on the thread's
        // alternate stack where it has one.
        ours.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        // SAFETY: `sa_mask` is a live sigset_t; both signals are blocked while the handler
        // runs, so it never interrupts itself.
        unsafe {
            libc::sigemptyset(&mut ours.sa_mask);
            for &sig in &SIGNALS {
                libc::sigaddset(&mut ours.sa_mask, sig);
            }
        }
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: `ours` is a fully initialised action whose handler is a valid
            // `extern "C"` function of the SA_SIGINFO signature.
            if prev.installed[i]
                && unsafe { libc::sigaction(sig, &ours, std::ptr::null_mut()) } != 0
            {
                let e = std::io::Error::last_os_error();
                restore(prev);
                STATE.store(DISARMED, Ordering::Release);
                return Err(e);
            }
        }
        AT_EXIT.call_once(|| {
            // SAFETY: registers an `extern "C" fn()` that lives as long as the process. A
            // failure (no room for handlers) only leaves `exit` as it was.
            unsafe { libc::atexit(at_exit) };
        });
        FLUSHER.store(
            core.flusher_thread.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        *armed = Some(Armed {
            core: core.clone(),
            callback,
            prev,
        });
        Ok(())
    }

    /// The recorder of generation `gen` was finished by the program: the dispositions are put
    /// back. (A signal that fired just before finds nothing to finish and is raised again.)
    pub(crate) fn disarm(gen: u64) {
        let mut armed = ARMED_REC.lock();
        if armed.as_ref().is_some_and(|a| a.core.gen == gen) {
            disarm_locked(&mut armed);
        }
    }

    fn disarm_locked(armed: &mut Option<Armed>) {
        if let Some(a) = armed.take() {
            // Release: orders nothing the handler needs; it only reads PREV, which stays valid.
            STATE.store(DISARMED, Ordering::Release);
            restore(a.prev);
        }
    }

    /// Puts back the previous action of each signal whose handler is still ours (one the
    /// program installed over it stays).
    fn restore(prev: &Prev) {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            if !prev.installed[i] {
                continue;
            }
            // SAFETY: all-zero is a valid `sigaction`; a query, then the saved action back.
            unsafe {
                let mut cur: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut cur) == 0
                    && cur.sa_sigaction == on_signal as *const () as usize
                {
                    libc::sigaction(sig, &prev.act[i], std::ptr::null_mut());
                }
            }
        }
    }

    /// Makes the pipe and the `typhon-signals` thread once per process (again in a forked
    /// child, which has the parent's pipe but not its thread).
    fn start_thread() -> std::io::Result<()> {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        if PID.load(Ordering::Relaxed) == pid {
            return Ok(());
        }
        for fd in [&WFD, &RFD] {
            let old = fd.swap(-1, Ordering::Relaxed);
            if old >= 0 {
                // SAFETY: the parent's pipe, inherited: this process's copy of it is ours.
                unsafe { libc::close(old) };
            }
        }
        let mut fds = [0 as c_int; 2];
        // SAFETY: `fds` has room for the two descriptors; then plain fcntl on the write end.
        unsafe {
            if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK);
        }
        let rfd = fds[0];
        let spawned = std::thread::Builder::new()
            .name("typhon-signals".into())
            .spawn(move || signals_thread(rfd));
        if let Err(e) = spawned {
            // SAFETY: the two descriptors just made, used by nobody else.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            return Err(e);
        }
        RFD.store(fds[0], Ordering::Relaxed);
        WFD.store(fds[1], Ordering::Relaxed);
        PID.store(pid, Ordering::Relaxed);
        Ok(())
    }

    /// The handler: hands the signal to the thread, or acts as the previous disposition.
    extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        // SAFETY: this thread's errno, restored before returning so the interrupted code
        // never sees ours.
        let errno = unsafe { *libc::__errno_location() };
        // Acquire: pairs with `arm`'s Release, so PREV, WFD and PID are the armed ones.
        let armed = STATE.load(Ordering::Acquire) == ARMED
            // SAFETY: getpid is async-signal-safe.
            && PID.load(Ordering::Relaxed) == unsafe { libc::getpid() }
            && STATE
                .compare_exchange(ARMED, FIRED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok();
        if armed {
            let b = sig as u8;
            // SAFETY: write(2) is async-signal-safe; one byte from a live local to the pipe
            // (a failure leaves the recording to `exit` or `recover`; nothing to do here).
            unsafe { libc::write(WFD.load(Ordering::Relaxed), (&b as *const u8).cast(), 1) };
        } else {
            // SAFETY: called from the handler with the handler's own arguments.
            unsafe { act_as_before(sig, info, ctx) };
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    /// Does what the signal's previous disposition would: nothing for SIG_IGN, the previous
    /// handler called with our arguments, or for SIG_DFL the default action (restored, and the
    /// signal raised: it is blocked while this handler runs, so it is delivered on return).
    ///
    /// # Safety
    /// Only from `on_signal`, with its arguments.
    unsafe fn act_as_before(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
        let i = if sig == libc::SIGINT { 0 } else { 1 };
        // Acquire: pairs with `arm`'s Release store; a leaked `Prev` is never freed.
        let p = PREV.load(Ordering::Acquire);
        // SAFETY: null or a leaked, never-mutated `Prev`.
        let act = unsafe { p.as_ref() }.map(|p| p.act[i]);
        match act.map(|a| (a.sa_sigaction, a.sa_flags)) {
            Some((libc::SIG_IGN, _)) => {}
            Some((f, flags)) if f != libc::SIG_DFL => {
                // SAFETY: the program installed `f` as this signal's handler, of the signature
                // its SA_SIGINFO flag says; it is called as the kernel would have.
                unsafe {
                    if flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                            std::mem::transmute(f);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(c_int) = std::mem::transmute(f);
                        f(sig);
                    }
                }
            }
            _ => {
                // SAFETY: sigaction and raise are async-signal-safe; all-zero is SIG_DFL.
                unsafe {
                    let dfl: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(sig, &dfl, std::ptr::null_mut());
                    libc::raise(sig);
                }
            }
        }
    }

    /// `typhon-signals`: waits for the handler's byte, finishes the armed recorder, puts the
    /// dispositions back and raises the signal again.
    fn signals_thread(rfd: c_int) {
        // Every signal blocked: this thread is never the one a process-directed signal is
        // delivered to, so it takes none from a program that waits for them in a thread.
        // SAFETY: a full set built in a live local; only this thread's mask changes.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        }
        loop {
            let mut b = 0u8;
            // SAFETY: reads one byte into a live local.
            let n = unsafe { libc::read(rfd, (&mut b as *mut u8).cast(), 1) };
            if n == 1 {
                fired(c_int::from(b));
            } else if n == 0
                || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return; // the pipe is gone (cannot happen: nothing closes it in this process)
            }
        }
    }

    fn fired(sig: c_int) {
        let mut armed = ARMED_REC.lock();
        let done = armed.take().map(|a| {
            let result = a.core.finish();
            STATE.store(DISARMED, Ordering::Release);
            restore(a.prev);
            (result, a.callback)
        });
        drop(armed);
        if let Some((result, callback)) = done {
            report(Termination::Signal(sig), result, callback);
        }
        // SAFETY: kill(2) with this process's own id: the process-directed signal it got,
        // now met by its previous disposition (our handler is no longer installed).
        unsafe { libc::kill(libc::getpid(), sig) };
    }

    /// Hands the outcome to the program's callback; without one a failure is printed.
    fn report(
        why: Termination,
        result: Result<crate::Stats, crate::RecorderError>,
        callback: Option<Callback>,
    ) {
        match callback {
            Some(f) => {
                // A panicking callback must not keep the signal from being raised again.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(why, result)));
            }
            None => {
                if let Err(e) = result {
                    let msg = format!("typhon-recorder: finishing on {why} failed: {e}\n");
                    // SAFETY: write(2) of a live buffer to stderr (Rust's `stderr` may be
                    // unusable in an `atexit` hook).
                    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
                }
            }
        }
    }

    extern "C" fn at_exit() {
        // SAFETY: getpid and pthread_self have no preconditions.
        let (pid, me) = unsafe { (libc::getpid(), libc::pthread_self() as u64) };
        // Not in a forked child (the recorder is the parent's), nor on the flusher thread (a
        // sink that calls `exit`): whoever is finishing may be waiting for that thread.
        if PID.load(Ordering::Relaxed) != pid || FLUSHER.load(Ordering::Relaxed) == me {
            return;
        }
        // Held by the signals thread finishing: waiting for it keeps `exit` from cutting the
        // file short.
        let mut armed = ARMED_REC.lock();
        let Some(a) = armed.take() else {
            return;
        };
        let result = a.core.finish();
        STATE.store(DISARMED, Ordering::Release);
        restore(a.prev);
        drop(armed);
        report(Termination::Exit, result, a.callback);
    }

    /// The armed recorder's flusher thread (`pthread_t`), for `at_exit`.
    static FLUSHER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
}
