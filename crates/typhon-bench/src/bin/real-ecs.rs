//! A real program as a benchmark: a bevy_ecs frame loop with its `trace` feature (every system
//! run enters the system's cached `system` span and creates a `check_conditions` span, each
//! with a `name` field), a schedule of `--systems` systems over `--entities` entities, measured
//! in time a frame under each `tracing` subscriber (BENCHMARKS.md, "What a real program pays").
//!
//! ```text
//! real-ecs bench [--modes all|none,registry,…] [--rounds 5] [--frames 3000] [--warmup 300]
//!                [--systems 100] [--entities 1000] [--json FILE] [--plot FILE.svg]
//! ```
//! `bench` runs the modes alternately, each round one process per mode (`frames`). The
//! single-threaded executor runs the schedule: frames run back to back on the main thread, as
//! fast as they go, and the recorder keeps its default ring. The figure compared is the main
//! thread's CPU time a frame, the frame time it would have on a core of its own: on a machine
//! shared with other work the wall time (reported beside it, with the CPU time of the whole
//! process, the flusher's included) mostly measures how long the thread waited for a core.

use bevy_ecs::prelude::*;
use bevy_ecs::schedule::SingleThreadedExecutor;
use bevy_ecs::system::IntoSystem;
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};
use typhon_bench::real::{self, Mode};

#[derive(Component)]
struct Pos(f32, f32);
#[derive(Component)]
struct Vel(f32, f32);
#[derive(Component)]
struct Health(f32);
#[derive(Component)]
struct Heat(f32);

fn integrate(mut q: Query<(&mut Pos, &Vel)>) {
    for (mut p, v) in &mut q {
        p.0 += v.0 * 0.016;
        p.1 += v.1 * 0.016;
    }
}

fn damp(mut q: Query<&mut Vel>) {
    for mut v in &mut q {
        v.0 *= 0.999;
        v.1 = black_box(v.1 * 0.999);
    }
}

fn decay(mut q: Query<&mut Health>) {
    for mut h in &mut q {
        h.0 = (h.0 - 0.01).max(0.0);
    }
}

fn warm(mut q: Query<(&mut Heat, &Vel)>) {
    for (mut h, v) in &mut q {
        h.0 = black_box(h.0 * 0.9 + (v.0 * v.0 + v.1 * v.1) * 0.1);
    }
}

/// The options `bench` passes on to `frames`, and their defaults.
struct Shape {
    frames: u64,
    warmup: u64,
    systems: usize,
    entities: usize,
}

impl Shape {
    fn parse(args: &[String]) -> Result<Self, String> {
        Ok(Shape {
            frames: real::arg(args, "--frames", 3_000)?,
            warmup: real::arg(args, "--warmup", 300)?,
            systems: real::arg(args, "--systems", 100)?,
            entities: real::arg(args, "--entities", 1_000)?,
        })
    }
    fn args(&self) -> Vec<String> {
        [
            ("--frames", self.frames),
            ("--warmup", self.warmup),
            ("--systems", self.systems as u64),
            ("--entities", self.entities as u64),
        ]
        .iter()
        .flat_map(|(k, v)| [k.to_string(), v.to_string()])
        .collect()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("bench") => bench(&args[1..]),
        Some("frames") => frames(&args[1..]),
        _ => Err("usage: real-ecs bench|frames [options] (see the source's docs)".into()),
    };
    if let Err(e) = r {
        eprintln!("real-ecs: {e}");
        std::process::exit(1);
    }
}

fn bench(args: &[String]) -> Result<(), String> {
    let modes = Mode::parse_list(&real::arg(args, "--modes", "all".to_string())?)?;
    let rounds: usize = real::arg(args, "--rounds", 5)?;
    let sh = Shape::parse(args)?;
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    eprintln!(
        "real-ecs: {} modes x {rounds} rounds, {} frames of {} systems over {} entities (load {})",
        modes.len(),
        sh.frames,
        sh.systems,
        sh.entities,
        real::load_average()
    );
    let samples = real::alternate(
        &modes,
        rounds,
        Duration::from_secs(300),
        |m| {
            let mut c = Command::new(&exe);
            c.arg("frames").arg("--mode").arg(m.name()).args(sh.args());
            c
        },
        |s| {
            eprintln!(
                "  round {} {:<12} {:>8.1} µs CPU a frame ({:.1} wall), {:>7.0} B, {} missed, load {}",
                s.round,
                s.mode,
                s.get("cost_ns") / 1e3,
                s.get("wall_ns") / 1e3,
                s.get("bytes_per_unit"),
                s.get("missed"),
                s.figures["load"].as_str().unwrap_or("")
            )
        },
    )?;
    let sum = real::summarise(
        &samples,
        &["cpu_ns_per_unit", "threads_ns_per_unit", "wall_ns"],
    );
    println!(
        "{}",
        real::table(
            &sum,
            "main thread's CPU a frame",
            "frame",
            &[
                "process CPU a frame",
                "of it, our flusher + compressor",
                "wall time a frame"
            ]
        )
    );
    if let Some(p) = args
        .iter()
        .position(|a| a == "--json")
        .and_then(|i| args.get(i + 1))
    {
        real::write_json(p.as_ref(), "real-ecs", &samples, &sum)?;
    }
    if let Some(p) = args
        .iter()
        .position(|a| a == "--plot")
        .and_then(|i| args.get(i + 1))
    {
        let title = format!(
            "bevy_ecs, {} systems over {} entities: main thread's CPU a frame, {rounds} alternating rounds",
            sh.systems, sh.entities
        );
        real::overhead_svg(p.as_ref(), &title, "a frame", &sum)?;
    }
    Ok(())
}

/// One measuring process: the frame loop under `--mode`, printing its figures as JSON.
fn frames(args: &[String]) -> Result<(), String> {
    let mode = Mode::parse(&real::arg(args, "--mode", String::new())?)?;
    let sh = Shape::parse(args)?;
    let installed = real::install(mode, &real::scratch("ecs"))?;
    let load_avg = real::load_average();
    let mut world = World::new();
    for i in 0..sh.entities {
        let f = i as f32;
        world.spawn((
            Pos(f, -f),
            Vel(1.0 + f * 0.01, 0.5),
            Health(100.0),
            Heat(0.0),
        ));
    }
    let mut schedule = Schedule::default();
    schedule.set_executor(SingleThreadedExecutor::new());
    for i in 0..sh.systems {
        let name = format!("sim::system_{i:03}");
        match i % 4 {
            0 => schedule.add_systems(IntoSystem::into_system(integrate).with_name(name)),
            1 => schedule.add_systems(IntoSystem::into_system(damp).with_name(name)),
            2 => schedule.add_systems(IntoSystem::into_system(decay).with_name(name)),
            _ => schedule.add_systems(IntoSystem::into_system(warm).with_name(name)),
        };
    }
    for _ in 0..sh.warmup {
        schedule.run(&mut world);
    }
    installed.settle();
    let ours0 = real::recorder_threads_cpu_ns();
    let (cpu0, rss0) = (real::process_cpu_ns(), real::rss_bytes());
    let t0 = Instant::now();
    let main0 = real::thread_cpu_ns();
    for _ in 0..sh.frames {
        schedule.run(&mut world);
    }
    let main = real::thread_cpu_ns() - main0;
    let wall = t0.elapsed();
    let rss_grown = real::rss_bytes().saturating_sub(rss0);
    // The process CPU of the frames and of the subscriber catching up with them (our flusher
    // draining the last frames' records), not of finishing the file.
    installed.settle();
    let cpu = real::process_cpu_ns() - cpu0;
    let ours = real::recorder_threads_cpu_ns() - ours0;
    let fin = installed.finish()?;
    let all = (sh.warmup + sh.frames).max(1) as f64;
    let per = |x: f64| x / sh.frames.max(1) as f64;
    println!(
        "{}",
        serde_json::json!({
            "mode": mode.name(),
            "cost_ns": per(main as f64),
            "wall_ns": per(wall.as_nanos() as f64),
            "cpu_ns_per_unit": per(cpu as f64),
            "threads_ns_per_unit": per(ours as f64),
            "units": sh.frames,
            "bytes_per_unit": fin.file_bytes as f64 / all,
            "records_per_unit": fin.records as f64 / all,
            "mem_bytes_per_unit": per(rss_grown as f64),
            "missed": fin.missed,
            "file_bytes": fin.file_bytes,
            "records": fin.records,
            "load": load_avg,
        })
    );
    Ok(())
}
