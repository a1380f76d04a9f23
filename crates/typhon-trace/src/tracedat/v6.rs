//! Version 6: after the file header, the sections in a fixed order (headers, ftrace and event
//! formats, kallsyms, printk, cmdlines), the CPU count, then `options` and `latency` or
//! `flyrecord` blocks; the flyrecord table gives each CPU's page data, and a trace_clock text
//! follows it when the options name a clock.

use super::cursor::Cur;
use super::error::{corrupt, Result};
use super::layout::{clock_name, known_option, text, Layout, TraceOption, MAX_CPUS};
use typhon_recorder::tracedat::OPTION_TRACECLOCK;

impl Layout {
    /// The rest of a version 6 file, from just after its page size.
    pub(super) fn parse_v6(&mut self, mut c: Cur<'_>) -> Result<()> {
        self.parse_headers(&mut c)?;
        self.parse_ftrace(&mut c)?;
        self.parse_events(&mut c)?;
        self.parse_kallsyms_printk(&mut c, 0)?;
        self.parse_kallsyms_printk(&mut c, 1)?;
        self.parse_cmdlines(&mut c)?;
        let at = c.off();
        self.cpus = c.u32("cpu count")?;
        if self.cpus > MAX_CPUS {
            return corrupt(
                format!("{} cpus (at most {MAX_CPUS} supported)", self.cpus),
                at,
            );
        }
        let mut has_clock = false;
        loop {
            let at = c.off();
            let tag = c.bytes(10, "section tag")?;
            match tag {
                b"options  \0" => loop {
                    let opt_at = c.off();
                    let id = c.u16("option id")?;
                    if id == 0 {
                        break;
                    }
                    let n = c.u32("option size")?;
                    let data = c.bytes_u64(u64::from(n), "option data")?.to_vec();
                    if !known_option(id) {
                        self.unknown_option(id, n.into(), opt_at, &format!("at offset {opt_at}"));
                    }
                    has_clock |= id == OPTION_TRACECLOCK;
                    self.options.push(TraceOption { id, data });
                },
                b"flyrecord\0" => break,
                b"latency  \0" => {
                    return corrupt("latency-format file (text, no page data)", at);
                }
                _ => return corrupt("expected options, flyrecord or latency", at),
            }
        }
        self.take_clock_option();
        // The table: cpus × 16 bytes, bounded by the file before any allocation.
        let table_len = u64::from(self.cpus) * 16;
        let table = c.bytes_u64(table_len, "flyrecord cpu table")?;
        let mut tc = Cur::at(table, 0, self.big_endian);
        for cpu in 0..self.cpus {
            let off = tc.u64("cpu offset")?;
            let size = tc.u64("cpu size")?;
            if (off, size) != (0, 0) {
                self.cpu_data.push((cpu, off, size));
            }
        }
        if has_clock {
            let n = c.u64("trace_clock size")?;
            let t = text(c.bytes_u64(n, "trace_clock")?);
            if let Some(name) = clock_name(&t) {
                self.clock = Some(name);
            }
        }
        Ok(())
    }
}
