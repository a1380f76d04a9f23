//! `TrackingAllocator` as this program's `#[global_allocator]`, over `Beneath`, a test
//! allocator that counts what reaches it on each thread independently. Checked: the totals
//! agree exactly with `Beneath` on every thread (threads starting and exiting while they
//! allocate, with and without a recorder); the samples in a recording account for every byte
//! (allocated − freed = live, against blocks of known sizes); what a thread counted after its
//! last sample is written when it exits; large allocations are recorded with their size; and
//! nothing is written before a recorder is installed or after it finished.

mod recording;

use recording::{read_stream, Names};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Arc, Mutex};
use typhon_recorder::alloc::{self as talloc, AllocTotals};
use typhon_recorder::codec::records::{self, Record};
use typhon_recorder::sink::MemorySink;
use typhon_recorder::{doc_lock, RecorderBuilder, TrackingAllocator};

/// Counts per thread what reaches it (a reallocation as a free and an allocation, as the
/// tracking allocator does), in a `const` thread-local without drop glue.
struct Beneath;

thread_local! {
    static BENEATH: [Cell<u64>; 4] = const { [Cell::new(0), Cell::new(0), Cell::new(0), Cell::new(0)] };
}

fn beneath_add(alloc: Option<usize>, free: Option<usize>) {
    BENEATH.with(|b| {
        if let Some(s) = alloc {
            b[0].set(b[0].get() + 1);
            b[1].set(b[1].get() + s as u64);
        }
        if let Some(s) = free {
            b[2].set(b[2].get() + 1);
            b[3].set(b[3].get() + s as u64);
        }
    })
}

fn beneath_totals() -> AllocTotals {
    BENEATH.with(|b| AllocTotals {
        allocs: b[0].get(),
        alloc_bytes: b[1].get(),
        frees: b[2].get(),
        free_bytes: b[3].get(),
    })
}

// SAFETY: every call goes to `System` unchanged; the counting touches only thread-local cells.
unsafe impl GlobalAlloc for Beneath {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System::alloc`'s.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            beneath_add(Some(l.size()), None);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            beneath_add(Some(l.size()), None);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `System` with `l`.
        unsafe { System.dealloc(p, l) };
        beneath_add(None, Some(l.size()));
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System::realloc`'s.
        let q = unsafe { System.realloc(p, l, n) };
        if !q.is_null() {
            beneath_add(Some(n), Some(l.size()));
        }
        q
    }
}

const LARGE: usize = 1 << 20;

#[global_allocator]
static A: TrackingAllocator<Beneath> = TrackingAllocator::new(Beneath).track_sizes_over(LARGE);

/// Allocation churn of every kind: boxes, growing Vecs (reallocations), zeroed blocks, Strings.
fn churn(seed: u64, n: usize) {
    let mut x = seed | 1;
    let mut keep: Vec<Vec<u8>> = Vec::new();
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let size = (x % 300) as usize + 1;
        match i % 4 {
            0 => keep.push(vec![0u8; size]),
            1 => {
                let mut v = Vec::new();
                for b in 0..size {
                    v.push(b as u8);
                }
                keep.push(v);
            }
            2 => drop(Box::new([x; 4])),
            _ => drop(format!("{x}")),
        }
        if keep.len() > 16 {
            keep.swap_remove((x % 16) as usize);
        }
    }
}

/// The tracking allocator counts exactly what `Beneath` sees, on threads that start and exit
/// while others allocate, with no recorder and with one running (whose own threads allocate).
#[test]
fn totals_agree_exactly_with_the_allocator_beneath() {
    let _g = doc_lock();
    for with_recorder in [false, true] {
        let rec = with_recorder.then(|| {
            RecorderBuilder::new()
                .sink(MemorySink::new())
                .start()
                .unwrap()
        });
        for round in 0..4u64 {
            let threads: Vec<_> = (0..8u64)
                .map(|i| {
                    std::thread::spawn(move || {
                        if i % 2 == 0 {
                            typhon_recorder::register_thread();
                        }
                        churn(round * 8 + i, 2000 + 300 * i as usize);
                        assert_eq!(talloc::thread_totals(), beneath_totals());
                    })
                })
                .collect();
            churn(round, 500);
            assert_eq!(talloc::thread_totals(), beneath_totals());
            for t in threads {
                t.join().unwrap();
            }
        }
        if let Some(rec) = rec {
            rec.finish().unwrap();
        }
        assert_eq!(talloc::thread_totals(), beneath_totals());
    }
}

/// One thread's samples in a recording: (alloc.count, alloc.bytes, free.count, free.bytes)
/// at each time all four were written, and the sizes of its large allocations.
#[derive(Default, Debug)]
struct Samples {
    totals: Vec<AllocTotals>,
    large: Vec<i64>,
}

/// The samples of each thread of the recording, by thread name.
fn samples(sink: &MemorySink) -> Vec<(String, Samples)> {
    let pages = sink.pages();
    let pages = pages.lock();
    let mut out: Vec<(String, Samples)> = Vec::new();
    for slot in &pages.slots {
        let mut names = Names::default();
        let mut cur: Option<usize> = None;
        let mut part = [None::<u64>; 4];
        for p in read_stream(slot) {
            for (_, r) in &p.records {
                let Some(r) = names.read(r) else { continue };
                let (_, rec) = records::decode(&r).unwrap();
                match rec {
                    Record::ThreadInfo { name, .. } => {
                        out.push((name.to_string(), Samples::default()));
                        cur = Some(out.len() - 1);
                    }
                    Record::Counter { value, name } => {
                        let s = &mut out[cur.expect("a counter before its ThreadInfo")].1;
                        let v = value.as_i64().expect("an i64 counter");
                        let i = match name {
                            talloc::ALLOC_COUNT => 0,
                            talloc::ALLOC_BYTES => 1,
                            talloc::FREE_COUNT => 2,
                            talloc::FREE_BYTES => 3,
                            talloc::ALLOC_LARGE => {
                                s.large.push(v);
                                continue;
                            }
                            _ => continue,
                        };
                        assert!(part[i].is_none(), "{name} twice in one sample");
                        part[i] = Some(v as u64);
                        if let [Some(a), Some(b), Some(c), Some(d)] = part {
                            s.totals.push(AllocTotals {
                                allocs: a,
                                alloc_bytes: b,
                                frees: c,
                                free_bytes: d,
                            });
                            part = [None; 4];
                        }
                    }
                    _ => {}
                }
            }
        }
        assert_eq!(part, [None; 4], "a sample left incomplete");
    }
    out
}

/// What each worker saw, taken where it allocates nothing: its totals and `Beneath`'s right
/// after each explicit flush, and at the end of its closure.
#[derive(Default, Debug, Clone, Copy)]
struct Seen {
    after_first_flush: AllocTotals,
    after_second_flush: AllocTotals,
    beneath_at_second: AllocTotals,
    at_end: AllocTotals,
    live_bytes: u64,
}

/// The recording accounts for every byte: between two flushes a worker allocates blocks of
/// known sizes and frees some; the two samples differ by exactly those allocations, frees and
/// bytes (allocated − freed = live), and agree with `Beneath`. What the worker counted after
/// its last flush is written when it exits. Large allocations carry their sizes. Threads
/// start and exit while others allocate.
#[test]
fn samples_account_for_every_byte_and_the_remainder_at_exit() {
    let _g = doc_lock();
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    const WORKERS: usize = 6;
    let seen = Arc::new(Mutex::new([Seen::default(); WORKERS]));
    let threads: Vec<_> = (0..WORKERS)
        .map(|i| {
            let seen = seen.clone();
            std::thread::Builder::new()
                .name(format!("w{i}"))
                .spawn(move || {
                    typhon_recorder::register_thread();
                    churn(i as u64, 3000);
                    talloc::flush_thread();
                    let first = talloc::thread_totals();
                    // Blocks of known sizes, held in a fixed array (no Vec to grow).
                    let mut blocks = [(std::ptr::null_mut::<u8>(), 0usize); 64];
                    let mut allocated = 0u64;
                    for (k, b) in blocks.iter_mut().enumerate() {
                        let size = 8 + 24 * k + i;
                        let l = Layout::from_size_align(size, 8).unwrap();
                        // SAFETY: a non-zero size.
                        *b = (unsafe { std::alloc::alloc(l) }, size);
                        assert!(!b.0.is_null());
                        allocated += size as u64;
                    }
                    let mut freed = 0u64;
                    for b in blocks.iter().step_by(3) {
                        // SAFETY: allocated above with this layout, freed once.
                        unsafe {
                            std::alloc::dealloc(b.0, Layout::from_size_align(b.1, 8).unwrap())
                        };
                        freed += b.1 as u64;
                    }
                    talloc::flush_thread();
                    let second = talloc::thread_totals();
                    let beneath = beneath_totals();
                    assert_eq!(second.allocs - first.allocs, 64);
                    assert_eq!(second.alloc_bytes - first.alloc_bytes, allocated);
                    assert_eq!(second.frees - first.frees, 22);
                    assert_eq!(second.free_bytes - first.free_bytes, freed);
                    for b in blocks
                        .iter()
                        .skip(1)
                        .step_by(3)
                        .chain(blocks.iter().skip(2).step_by(3))
                    {
                        // SAFETY: as above: the blocks not freed yet, each once.
                        unsafe {
                            std::alloc::dealloc(b.0, Layout::from_size_align(b.1, 8).unwrap())
                        };
                    }
                    // One large allocation, then a remainder that no sample has written yet.
                    drop(vec![1u8; LARGE + 1 + i]);
                    churn(100 + i as u64, 7);
                    let at_end = talloc::thread_totals();
                    let mut s = seen.lock().unwrap();
                    s[i] = Seen {
                        after_first_flush: first,
                        after_second_flush: second,
                        beneath_at_second: beneath,
                        at_end,
                        live_bytes: allocated - freed,
                    };
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    rec.finish().unwrap();
    // After the finish: counted, never written.
    churn(7, 100);
    let seen = *seen.lock().unwrap();
    let got = samples(&sink);
    for (i, s) in seen.iter().enumerate() {
        let name = format!("w{i}");
        let (_, mine) = got
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no samples of {name}: {got:?}"));
        assert_eq!(s.after_second_flush, s.beneath_at_second);
        let at = |t: &AllocTotals| {
            mine.totals
                .iter()
                .position(|x| x == t)
                .unwrap_or_else(|| panic!("{name}: no sample {t:?} in {:?}", mine.totals))
        };
        let (a, b) = (at(&s.after_first_flush), at(&s.after_second_flush));
        assert!(b > a, "{name}: the second flush after the first");
        let d = |x: u64, y: u64| x - y;
        let (t0, t1) = (&mine.totals[a], &mine.totals[b]);
        assert_eq!(
            d(t1.alloc_bytes, t0.alloc_bytes) - d(t1.free_bytes, t0.free_bytes),
            s.live_bytes,
            "{name}: allocated − freed = live"
        );
        // The remainder at exit: the last sample holds at least what the closure had counted
        // at its end (only the thread's own teardown may add to it).
        let last = mine.totals.last().unwrap();
        assert!(
            last.allocs >= s.at_end.allocs
                && last.alloc_bytes >= s.at_end.alloc_bytes
                && last.frees >= s.at_end.frees
                && last.free_bytes >= s.at_end.free_bytes,
            "{name}: last sample {last:?} before the end {:?}",
            s.at_end
        );
        assert!(
            last.allocs - s.at_end.allocs < 16,
            "{name}: {last:?} vs {:?}",
            s.at_end
        );
        // Cumulative: never decreasing.
        for w in mine.totals.windows(2) {
            assert!(w[1].allocs >= w[0].allocs && w[1].free_bytes >= w[0].free_bytes);
        }
        assert_eq!(
            mine.large,
            [(LARGE + 1 + i) as i64],
            "{name}: the large allocation"
        );
    }
}

/// Before a recorder is installed nothing is written (and nothing breaks); the finishing
/// thread's remainder is written at `finish`.
#[test]
fn before_a_recorder_only_counts_and_finish_writes_the_remainder() {
    let _g = doc_lock();
    assert!(!talloc::flush_thread());
    churn(3, 1000);
    assert_eq!(talloc::thread_totals(), beneath_totals());
    let sink = MemorySink::new();
    let rec = RecorderBuilder::new().sink(sink.clone()).start().unwrap();
    std::thread::Builder::new()
        .name("finisher".into())
        .spawn(move || {
            typhon_recorder::register_thread();
            churn(4, 10);
            let before = talloc::thread_totals();
            rec.finish().unwrap();
            let got = samples(&sink);
            let (_, mine) = got.iter().find(|(n, _)| n == "finisher").unwrap();
            let last = mine.totals.last().expect("the remainder written at finish");
            assert!(last.allocs >= before.allocs && last.frees >= before.frees);
        })
        .unwrap()
        .join()
        .unwrap();
}
