//! The two operating-system calls the write side needs, and the one place that says which
//! systems the crate supports.
//!
//! The recorder is Linux-only (tested on x86-64 Linux): writers read their thread id with
//! `gettid` and, for CeLog records, their CPU with `sched_getcpu`; the file sink locks its
//! parts directory with `flock` and the trace.dat format it writes is Linux ftrace's. A build
//! for another OS stops at the single `compile_error!` below instead of at unresolved imports.

#[cfg(not(target_os = "linux"))]
compile_error!(
    "typhon-recorder supports Linux only (tested on x86-64 Linux): it needs gettid and \
     sched_getcpu for its writers, flock for its recordings' parts directory, and writes Linux \
     ftrace's trace.dat. See the README's \"Platforms\" section."
);

/// The calling thread's kernel thread id.
#[cfg(target_os = "linux")]
pub(crate) fn os_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// The CPU the calling thread runs on, or `None` when the kernel cannot say.
#[cfg(target_os = "linux")]
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}

// Never built (the compile_error! above stops the build first); these keep the rest of the crate
// from adding its own errors after it.
#[cfg(not(target_os = "linux"))]
pub(crate) fn os_tid() -> i32 {
    0
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn current_cpu() -> Option<u32> {
    None
}
