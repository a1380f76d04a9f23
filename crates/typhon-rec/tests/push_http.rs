//! `typhon-rec push` against a Rust OTLP/HTTP receiver on 127.0.0.1 (tests/loopback), plain
//! and over TLS with a certificate made here: redirects, credentials in the URL, the path and
//! the query, headers, the OpenTelemetry environment against the flags, authentication
//! failures, `Retry-After` dates, a retry budget under a second, and damaged recordings.

#[path = "../../typhon-trace/tests/common/mod.rs"]
mod common;
mod loopback;

use base64::Engine as _;
use loopback::{Receiver, Reply, Request};
use prost::Message;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};
use typhon_trace::export::otlp::opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

const BIN: &str = env!("CARGO_BIN_EXE_typhon-rec");

/// What a push reads from the environment: cleared for every run, so the machine's own
/// settings play no part.
const OTEL: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
];

/// A small demo recording, made once and shared (read-only) by the tests.
fn recording() -> &'static Path {
    static DAT: OnceLock<PathBuf> = OnceLock::new();
    DAT.get_or_init(|| {
        let d = common::scratch_dir("push-http");
        let dat = d.join("svc.dat");
        let o = Command::new(BIN)
            .args([
                "demo",
                "--duration",
                "0.2",
                "--threads",
                "1",
                "--rate",
                "2000",
            ])
            .arg("--out")
            .arg(&dat)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        dat
    })
}

/// The (trace id, span id) of every span `export --format otlp` writes for `dat`.
fn exported(dat: &Path) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    let pb = dat.with_extension(format!("{}.otlp.pb", std::process::id()));
    let o = Command::new(BIN)
        .arg("export")
        .arg(dat)
        .args(["--format", "otlp", "-o"])
        .arg(&pb)
        .output()
        .unwrap();
    assert!(o.status.code().is_some(), "{o:?}");
    let r = ExportTraceServiceRequest::decode(&std::fs::read(&pb).unwrap()[..]).unwrap();
    std::fs::remove_file(&pb).unwrap();
    r.resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| (s.trace_id.clone(), s.span_id.clone()))
        .collect()
}

/// Every span the receiver got, each once (a span twice fails).
fn received(reqs: &[Request]) -> BTreeSet<(Vec<u8>, Vec<u8>)> {
    let all: Vec<_> = reqs.iter().flat_map(Request::spans).collect();
    let set: BTreeSet<_> = all.iter().cloned().collect();
    assert_eq!(set.len(), all.len(), "a span arrived twice");
    set
}

struct Run {
    code: Option<i32>,
    out: String,
    err: String,
}

/// `typhon-rec push FILE ARGS` with only `env` of the OpenTelemetry environment.
fn push_file(dat: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = Command::new(BIN);
    c.arg("push").arg(dat).args(args);
    for k in OTEL {
        c.env_remove(k);
    }
    c.envs(env.iter().copied());
    let o = c.output().unwrap();
    Run {
        code: o.status.code(),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn push(args: &[&str], env: &[(&str, &str)]) -> Run {
    push_file(recording(), args, env)
}

fn ok(_: usize, _: &Request) -> Reply {
    Reply::status(200)
}

#[test]
fn https_with_a_private_ca_delivers_every_span_with_the_api_key_header() {
    let want = exported(recording());
    assert!(want.len() > 100, "{} spans", want.len());
    let cert = loopback::self_signed();
    let dir = common::scratch_dir("push-https");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &cert.pem).unwrap();
    let ca = ca.to_str().unwrap();

    let r = Receiver::start(Some(cert.config.clone()), ok);
    let url = format!("https://127.0.0.1:{}", r.port);
    let run = push(
        &[
            "--endpoint",
            &url,
            "--ca-cert",
            ca,
            "--header",
            "x-api-key=k1=",
            "--gzip",
            "--batch",
            "100",
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}{}", run.out, run.err);
    assert!(
        run.out.contains(&format!("to {url}/v1/traces, 0 retries")),
        "{}",
        run.out
    );
    let reqs = r.requests();
    assert_eq!(reqs.len(), want.len().div_ceil(100));
    for q in &reqs {
        assert_eq!(
            (q.method.as_str(), q.target.as_str()),
            ("POST", "/v1/traces")
        );
        assert_eq!(q.header("x-api-key"), Some("k1="));
        assert_eq!(q.header("content-type"), Some("application/x-protobuf"));
        assert_eq!(q.header("content-encoding"), Some("gzip"));
    }
    assert_eq!(received(&reqs), want);

    // The same from the environment: the base endpoint, a URL-encoded header, the certificate.
    let r = Receiver::start(Some(cert.config.clone()), ok);
    let url = format!("https://127.0.0.1:{}", r.port);
    let run = push(
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &url),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20t0k%2Cen",
            ),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", ca),
        ],
    );
    assert_eq!(run.code, Some(0), "{}{}", run.out, run.err);
    let reqs = r.requests();
    assert!(reqs
        .iter()
        .all(|q| q.header("authorization") == Some("Bearer t0k,en")));
    assert_eq!(received(&reqs), want);

    // The system's roots are used: with the CA as the system's only one (rustls-native-certs
    // reads SSL_CERT_FILE), no --ca-cert is needed.
    let r = Receiver::start(Some(cert.config.clone()), ok);
    let url = format!("https://127.0.0.1:{}", r.port);
    let mut c = Command::new(BIN);
    c.arg("push").arg(recording()).args(["--endpoint", &url]);
    for k in OTEL {
        c.env_remove(k);
    }
    let o = c
        .env("SSL_CERT_FILE", ca)
        .env_remove("SSL_CERT_DIR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(received(&r.requests()), want);
    // A system without roots: Mozilla's stand in, and it is said.
    let o = c
        .env("SSL_CERT_FILE", dir.join("none.pem"))
        .env("SSL_CERT_DIR", dir.join("none"))
        .args(["--retry-for", "20s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("the system has no CA certificates"), "{err}");
    assert!(err.contains("UnknownIssuer (not retried)"), "{err}");

    // Without the CA, the system's roots do not vouch for the certificate: a failure at once,
    // not retried, and nothing arrives.
    let r = Receiver::start(Some(cert.config.clone()), ok);
    let url = format!("https://127.0.0.1:{}", r.port);
    let run = push(&["--endpoint", &url, "--retry-for", "20s"], &[]);
    assert_eq!(run.code, Some(1), "{}{}", run.out, run.err);
    assert!(
        run.err.contains(&format!("{url}/v1/traces: ")),
        "{}",
        run.err
    );
    assert!(
        run.err.contains("certificate: UnknownIssuer (not retried)")
            && run.err.contains("--ca-cert FILE"),
        "{}",
        run.err
    );
    assert!(!run.err.contains("retrying"), "{}", run.err);
    assert!(r.requests().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_redirect_is_refused_naming_its_target_and_nothing_is_sent_there() {
    for code in [301, 302, 303, 307, 308] {
        let r = Receiver::start(None, move |_, q: &Request| {
            if q.target.starts_with("/moved") {
                return Reply::status(200);
            }
            // A relative Location for one, absolute for the others.
            let to = if code == 301 {
                "/moved/v1/traces".to_string()
            } else {
                format!("http://{}/moved/v1/traces", q.header("host").unwrap())
            };
            Reply::status(code).with("Location", &to)
        });
        let base = format!("http://127.0.0.1:{}", r.port);
        let run = push(&["--endpoint", &base], &[]);
        assert_eq!(run.code, Some(1), "{code}: {}{}", run.out, run.err);
        assert!(
            run.err.contains(&format!(
                "{base}/v1/traces: HTTP {code} redirects to {base}/moved/v1/traces (not followed"
            )),
            "{code}: {}",
            run.err
        );
        assert!(
            run.err.contains("(0 spans were accepted before)"),
            "{}",
            run.err
        );
        let reqs = r.requests();
        assert_eq!(reqs.len(), 1, "{code}: {reqs:?}");
        assert_eq!(reqs[0].method, "POST");
    }
}

#[test]
fn credentials_in_the_url_are_sent_as_basic_authorization_and_never_printed() {
    let r = Receiver::start(None, |i, _: &Request| {
        if i == 0 {
            Reply::status(503).with("Retry-After", "0")
        } else {
            Reply::status(200)
        }
    });
    let raw = format!("http://alice:s3cr%40t@127.0.0.1:{}/", r.port);
    let shown = format!("http://***@127.0.0.1:{}/v1/traces", r.port);
    let run = push(&["--endpoint", &raw], &[]);
    assert_eq!(run.code, Some(0), "{}{}", run.out, run.err);
    let all = format!("{}{}", run.out, run.err);
    assert!(!all.contains("alice") && !all.contains("s3cr"), "{all}");
    assert!(
        run.err
            .contains(&format!("{shown}: HTTP 503, retrying in 0.0 s")),
        "{}",
        run.err
    );
    assert!(
        run.out.contains(&format!("to {shown}, 1 retries")),
        "{}",
        run.out
    );
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:s3cr@t")
    );
    let reqs = r.requests();
    assert!(reqs.len() >= 2);
    assert!(reqs
        .iter()
        .all(|q| q.header("authorization") == Some(&basic)));

    // In failures too.
    let r = Receiver::start(None, |_, _: &Request| Reply::status(400));
    let run = push(
        &[
            "--endpoint",
            &format!("http://alice:s3cr%40t@127.0.0.1:{}", r.port),
        ],
        &[],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        !run.err.contains("alice") && !run.err.contains("s3cr"),
        "{}",
        run.err
    );
    assert!(run.err.contains(&format!(
        "http://***@127.0.0.1:{}/v1/traces: HTTP 400",
        r.port
    )));
    let run = push(&["--endpoint", "http://alice:s3cret@[::1"], &[]);
    assert_eq!(run.code, Some(1));
    assert!(
        !run.err.contains("s3cret") && run.err.contains("http://***@[::1"),
        "{}",
        run.err
    );
}

#[test]
fn the_path_goes_before_the_query_and_a_fragment_is_refused() {
    let r = Receiver::start(None, ok);
    let p = r.port;
    for (endpoint, target) in [
        (
            format!("http://127.0.0.1:{p}/base/?tenant=a%20b"),
            "/base/v1/traces?tenant=a%20b",
        ),
        (
            format!("http://127.0.0.1:{p}/otlp/v1/traces"),
            "/otlp/v1/traces",
        ),
        (
            format!("http://127.0.0.1:{p}/v1/traces?k=v"),
            "/v1/traces?k=v",
        ),
    ] {
        let before = r.requests().len();
        let run = push(&["--endpoint", &endpoint, "--batch", "65536"], &[]);
        assert_eq!(run.code, Some(0), "{}{}", run.out, run.err);
        let reqs = r.requests();
        assert_eq!(reqs.len(), before + 1);
        assert_eq!(reqs[before].target, target, "{endpoint}");
    }
    let before = r.requests().len();
    let run = push(&["--endpoint", &format!("http://127.0.0.1:{p}/#frag")], &[]);
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("a #fragment is never sent"), "{}", run.err);
    assert_eq!(r.requests().len(), before);
}

#[test]
fn flags_win_over_the_opentelemetry_environment() {
    let (a, b) = (Receiver::start(None, ok), Receiver::start(None, ok));
    let one = ["--batch", "65536"];
    let last = |r: &Receiver| r.requests().pop().unwrap();
    let generic = format!("http://127.0.0.1:{}/gen", a.port);
    let traces = format!("http://127.0.0.1:{}/tr", b.port);

    let run = push(&one, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &generic)]);
    assert_eq!(run.code, Some(0), "{}", run.err);
    assert_eq!(last(&a).target, "/gen/v1/traces");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", generic.as_str()),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.as_str()),
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=gen,x-gen=1"),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-key=tr"),
        ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
        ("OTEL_SERVICE_NAME", "from-env"),
    ];
    let run = push(&one, &env);
    assert_eq!(run.code, Some(0), "{}", run.err);
    let q = last(&b);
    assert_eq!(q.target, "/tr");
    assert_eq!((q.header("x-key"), q.header("x-gen")), (Some("tr"), None));
    assert_eq!(q.header("content-encoding"), Some("gzip"));
    assert_eq!(q.service().as_deref(), Some("from-env"));

    let mut args = one.to_vec();
    let flag = format!("http://127.0.0.1:{}", a.port);
    args.extend([
        "--endpoint",
        &flag,
        "--header",
        "X-Key=flag",
        "--compression",
        "none",
        "--service",
        "from-flag",
    ]);
    let run = push(&args, &env);
    assert_eq!(run.code, Some(0), "{}", run.err);
    let q = last(&a);
    assert_eq!(q.target, "/v1/traces");
    assert_eq!(q.header("x-key"), Some("flag"));
    assert_eq!(q.header("content-encoding"), None);
    assert_eq!(q.service().as_deref(), Some("from-flag"));
    // Without OTEL_SERVICE_NAME nor --service, the file's name.
    let run = push(&["--endpoint", &flag, "--batch", "65536"], &[]);
    assert_eq!(run.code, Some(0), "{}", run.err);
    assert_eq!(last(&a).service().as_deref(), Some("svc"));
}

#[test]
fn an_authentication_failure_is_named_and_not_retried() {
    for code in [401, 403] {
        let r = Receiver::start(None, move |_, _: &Request| Reply::status(code));
        let run = push(
            &["--endpoint", &format!("http://127.0.0.1:{}", r.port)],
            &[],
        );
        assert_eq!(run.code, Some(1));
        assert!(
            run.err
                .contains(&format!("HTTP {code}: authentication failed (not retried)")),
            "{}",
            run.err
        );
        assert_eq!(r.requests().len(), 1);
    }
}

#[test]
fn a_retry_after_given_as_an_http_date_is_honoured() {
    // Four seconds ahead, to the second: a wait of three to four seconds (the default backoff
    // would be a quarter of one).
    let r = Receiver::start(None, |i, _: &Request| {
        if i == 0 {
            let at = SystemTime::now() + Duration::from_secs(4);
            Reply::status(503).with("Retry-After", &httpdate::fmt_http_date(at))
        } else {
            Reply::status(200)
        }
    });
    let run = push(
        &[
            "--endpoint",
            &format!("http://127.0.0.1:{}", r.port),
            "--batch",
            "65536",
        ],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}{}", run.out, run.err);
    let reqs = r.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_millis(2500), "retried after {gap:?}");
    let said: f64 = run
        .err
        .split_once("HTTP 503, retrying in ")
        .and_then(|(_, r)| r.split_once(" s"))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap_or_else(|| panic!("{}", run.err));
    assert!((2.5..=4.0).contains(&said), "{}", run.err);

    // A date past is no wait; a date beyond --retry-for fails at once.
    let r = Receiver::start(None, |i, _: &Request| {
        let at = if i == 0 {
            SystemTime::now() - Duration::from_secs(60)
        } else {
            SystemTime::now() + Duration::from_secs(120)
        };
        Reply::status(503).with("Retry-After", &httpdate::fmt_http_date(at))
    });
    let run = push(
        &[
            "--endpoint",
            &format!("http://127.0.0.1:{}", r.port),
            "--retry-for",
            "30s",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.err.contains("HTTP 503, retrying in 0.0 s"),
        "{}",
        run.err
    );
    assert!(
        run.err.contains("its Retry-After (119.") || run.err.contains("its Retry-After (120."),
        "{}",
        run.err
    );
    assert_eq!(r.requests().len(), 2);
}

#[test]
fn a_retry_budget_under_a_second_bounds_each_attempt() {
    let port = loopback::silent();
    let run = push(
        &[
            "--endpoint",
            &format!("http://127.0.0.1:{port}"),
            "--retry-for",
            "300ms",
        ],
        &[],
    );
    assert_eq!(run.code, Some(1));
    assert!(run.err.contains("no answer within 0.3 s"), "{}", run.err);
    assert!(run.err.contains("gave up after 0.3 s"), "{}", run.err);
}

/// A copy of the recording with one page damaged in the middle of its busiest slot.
fn damaged_copy(dir: &Path) -> PathBuf {
    use typhon_trace::tracedat::TraceFile;
    let valid = std::fs::read(recording()).unwrap();
    let tf = TraceFile::parse(valid.clone()).unwrap();
    let slot = (0..tf.cpus()).max_by_key(|&c| tf.pages(c).count()).unwrap();
    assert!(tf.pages(slot).count() >= 3, "the demo fills pages");
    let (off, _) = tf.cpu_data(slot).unwrap();
    let page_at = off + u64::from(tf.page_size());
    let hdr = common::page_records(&valid, page_at, tf.page_size() as usize)[3].0 as usize;
    let mut bytes = valid;
    bytes[hdr..hdr + 8].fill(0);
    let bad = dir.join("bad.dat");
    std::fs::write(&bad, &bytes).unwrap();
    bad
}

#[test]
fn otlp_export_and_push_exit_1_after_skipping_damaged_pages() {
    let dir = common::scratch_dir("push-damaged");
    let bad = damaged_copy(&dir);
    let message = "1 damaged page skipped: the";
    for format in ["otlp", "otlp-json"] {
        let out = dir.join(format!("bad.{format}"));
        let o = Command::new(BIN)
            .arg("export")
            .arg(&bad)
            .args(["--format", format, "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{format}: {err}");
        assert!(err.contains(&format!("{message} export lacks")), "{err}");
        // What could be read is written.
        assert!(std::fs::metadata(&out).unwrap().len() > 0);
    }
    let want = exported(&bad);
    assert!(!want.is_empty());
    let r = Receiver::start(None, ok);
    let run = push_file(
        &bad,
        &["--endpoint", &format!("http://127.0.0.1:{}", r.port)],
        &[],
    );
    assert_eq!(run.code, Some(1), "{}{}", run.out, run.err);
    assert!(
        run.err.contains(&format!("{message} push lacks")),
        "{}",
        run.err
    );
    assert!(
        run.out.contains("1 damaged pages were skipped"),
        "{}",
        run.out
    );
    assert_eq!(received(&r.requests()), want);
    // The undamaged recording pushes with status 0.
    let run = push(
        &["--endpoint", &format!("http://127.0.0.1:{}", r.port)],
        &[],
    );
    assert_eq!(run.code, Some(0), "{}", run.err);
    std::fs::remove_dir_all(&dir).unwrap();
}
