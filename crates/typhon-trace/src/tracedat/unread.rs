//! Records the Typhon metadata says were written that reading a file did not find, with no
//! damage reported in their place (a damaged option or per-CPU table hides a CPU's data): the
//! count, and the warning each such CPU gets.

use super::TraceFile;

impl TraceFile {
    /// A slot the Typhon metadata says wrote records but whose CPU has no data in the file
    /// (the per-CPU table, the CPU count or the options that lead to them damaged): all its
    /// records are unread, and said so before anything is read.
    pub(super) fn check_slots(&self) {
        let have: std::collections::BTreeSet<u32> = self.data_cpus().collect();
        for (&cpu, &w) in self.written_counts() {
            if w > 0 && !have.contains(&cpu) {
                self.short(
                    cpu,
                    w,
                    format!(
                        "no data in the file, though the metadata says the slot wrote {w} \
                         records: all {w} unread (the file's per-CPU table, CPU count or \
                         BUFFER option is missing or damaged)"
                    ),
                );
            }
        }
    }

    /// Records that `cpu`'s slot wrote (`n` of them) that reading did not find, though no
    /// damage was reported in its data: counted in [`Self::unread_records`] and said in a
    /// reader warning, once per CPU (the first finding stands: reading a CPU the parse found
    /// without data finds it again).
    pub(super) fn short(&self, cpu: u32, n: u64, what: String) {
        let mut u = self.unread.lock().unwrap_or_else(|e| e.into_inner());
        if let std::collections::btree_map::Entry::Vacant(e) = u.entry(cpu) {
            e.insert(n);
            drop(u);
            self.warn(cpu, u64::MAX, 3, what);
        }
    }

    /// Records the Typhon metadata says were written that reading the file did not find,
    /// with no damage reported in their place: a slot with no data in the file (its per-CPU
    /// table, CPU count or BUFFER option damaged: the parse cannot tell), or a CPU whose data
    /// reads whole but holds fewer records than its slot wrote. A loss like damaged pages:
    /// each such CPU has a reader warning too. The missing CPUs are known once the file is
    /// parsed; the short ones are filled in as each CPU is read to its end (a CPU with
    /// damaged pages is not counted here: its damage is), so ask after reading the records.
    ///
    /// ```
    /// # use typhon_trace::tracedat::{write_tracedat, FileMeta, TraceFile};
    /// # let mut out = std::io::Cursor::new(Vec::new());
    /// # write_tracedat(&mut out, &FileMeta::new(4096), &mut []).unwrap();
    /// let f = TraceFile::parse(out.into_inner()).unwrap();
    /// assert_eq!(f.stream_records().count(), 0);
    /// assert_eq!(f.unread_records(), 0);
    /// ```
    pub fn unread_records(&self) -> u64 {
        self.unread
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .fold(0u64, |a, &n| a.saturating_add(n))
    }
}
