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

/// The uid of the process at the other end of a connected Unix socket (`SO_PEERCRED`).
#[cfg(target_os = "linux")]
pub(crate) fn peer_uid(fd: std::os::fd::RawFd) -> std::io::Result<u32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given, and `len` says the size
    // of `cred`; a bad fd makes the call fail with EBADF, which is returned, not undefined.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(cred.uid)
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

#[cfg(not(target_os = "linux"))]
pub(crate) fn peer_uid(_fd: std::os::fd::RawFd) -> std::io::Result<u32> {
    Err(std::io::ErrorKind::Unsupported.into())
}
