//! Where and how `typhon-rec push` sends: the endpoint's URL, the headers, the compression, the
//! roots a TLS server's certificate is checked against and the service name. Each comes from
//! its flag or, where the flag is not given, from the OpenTelemetry environment as the OTLP
//! exporter specification names it (the `_TRACES_` variable before the generic one; an empty
//! variable counts as unset, as the specification says).

use base64::Engine as _;
use percent_encoding::percent_decode_str;
use std::path::{Path, PathBuf};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use url::Url;

/// `typhon-rec push`'s arguments.
#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// The trace.dat file.
    pub file: PathBuf,
    /// The Collector's OTLP/HTTP base URL (`http://HOST:4318`, or `https://…`); spans go to
    /// URL/v1/traces, or to URL itself when it ends in /v1/traces. A query stays after the
    /// path; credentials (`https://user:password@host`) are sent as Basic authorization and
    /// never printed. Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given), else
    /// OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// A header sent with each request, `KEY=VALUE` (or `KEY: VALUE`), e.g. an API key;
    /// repeatable. Added to `OTEL_EXPORTER_OTLP_TRACES_HEADERS` or `OTEL_EXPORTER_OTLP_HEADERS`, replacing one of the same name.
    #[arg(long = "header", value_name = "KEY=VALUE")]
    pub headers: Vec<String>,
    /// A PEM file of the CA certificates to trust for https instead of the system's (a private
    /// CA). Default: `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE` or `OTEL_EXPORTER_OTLP_CERTIFICATE`.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// `service.name` of the spans (default: OTEL_SERVICE_NAME, else the file's name).
    #[arg(long)]
    pub service: Option<String>,
    /// Compress each request body with gzip (`Content-Encoding: gzip`): `--compression gzip`.
    #[arg(long, conflicts_with = "compression")]
    pub gzip: bool,
    /// `gzip` or `none` (default: `OTEL_EXPORTER_OTLP_TRACES_COMPRESSION` or `OTEL_EXPORTER_OTLP_COMPRESSION`, else none).
    #[arg(long, value_parser = ["gzip", "none"])]
    pub compression: Option<String>,
    /// Spans per request.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..=65536))]
    pub batch: u64,
    /// Longest time one request may spend being retried (with its unit: ms, s), waits
    /// included; past it the push fails.
    #[arg(long, default_value = "60s", value_parser = crate::durations::parse_duration)]
    pub retry_for: u64,
}

/// What a push sends to, and with what.
#[derive(Debug)]
pub struct Target {
    /// The URL requested, without its credentials (they are a header).
    pub url: Url,
    /// The URL as printed: its credentials masked.
    pub shown: String,
    /// Header names and values, each name once.
    pub headers: Vec<(String, String)>,
    pub gzip: bool,
    /// The roots to trust instead of the system's.
    pub roots: Option<Vec<Certificate<'static>>>,
    pub service: Option<String>,
}

/// How the path `/v1/traces` joins an endpoint's.
#[derive(Clone, Copy)]
enum Join {
    /// `--endpoint`: appended, unless the path already ends in it.
    UnlessThere,
    /// OTEL_EXPORTER_OTLP_ENDPOINT: appended (the specification's rule).
    Always,
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: the URL is the one to use.
    AsGiven,
}

/// The push's target from its flags and from `env` (a variable's value; `None` when unset).
pub fn resolve(a: &PushArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, String> {
    // An empty variable is unset (OpenTelemetry's environment specification).
    let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let first = |keys: [&'static str; 2]| {
        keys.into_iter()
            .find_map(|k| env(k).map(|v| (k, v.trim().to_string())))
    };
    if let Some((k, v)) = first([
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]) {
        if v != "http/protobuf" {
            return Err(format!(
                "{k}={v}: push sends OTLP/HTTP protobuf only (http/protobuf): unset it, or \
                 point push at the Collector's OTLP/HTTP port (4318)"
            ));
        }
    }
    let (raw, from, join) = match &a.endpoint {
        Some(e) => (e.clone(), "--endpoint", Join::UnlessThere),
        None => match first([
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ]) {
            Some(("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", v)) => {
                (v, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", Join::AsGiven)
            }
            Some((k, v)) => (v, k, Join::Always),
            None => {
                return Err(
                    "no endpoint: give --endpoint URL (a Collector's OTLP/HTTP base, \
                            http://HOST:4318) or set OTEL_EXPORTER_OTLP_ENDPOINT"
                        .into(),
                )
            }
        },
    };
    let (url, credentials) = endpoint_url(&raw, from, join)?;
    let shown = shown(&url, credentials.is_some());

    let mut headers = Vec::new();
    if let Some(c) = credentials {
        headers.push(("Authorization".to_string(), c));
    }
    if let Some((k, v)) = first([
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ]) {
        for (name, value) in otel_headers(k, &v)? {
            set_header(&mut headers, k, name, value)?;
        }
    }
    for h in &a.headers {
        let (name, value) = flag_header(h)?;
        set_header(&mut headers, "--header", name, value)?;
    }

    let gzip = match (a.gzip, a.compression.as_deref()) {
        (true, _) | (_, Some("gzip")) => true,
        (_, Some(_)) => false,
        _ => match first([
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ]) {
            None => false,
            Some((k, v)) => match v.to_ascii_lowercase().as_str() {
                "gzip" => true,
                "none" => false,
                _ => return Err(format!("{k}={v}: the compression is gzip or none")),
            },
        },
    };

    let roots = match &a.ca_cert {
        Some(p) => Some(certificates("--ca-cert", p)?),
        None => match first([
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
            "OTEL_EXPORTER_OTLP_CERTIFICATE",
        ]) {
            Some((k, v)) => Some(certificates(k, Path::new(&v))?),
            None => None,
        },
    };
    let service = a.service.clone().or_else(|| env("OTEL_SERVICE_NAME"));
    Ok(Target {
        url,
        shown,
        headers,
        gzip,
        roots,
        service,
    })
}

impl Target {
    /// The agent every request of the push goes through: statuses are answers (not errors),
    /// redirects are not followed (a followed POST arrives as an empty GET, or not at all),
    /// and https checks the server against the given roots, else the system's, else (a system
    /// without any, said in the note) Mozilla's, which webpki-roots carries.
    pub fn agent(&self) -> (ureq::Agent, Option<String>) {
        let mut note = None;
        let roots = match &self.roots {
            Some(c) => RootCerts::new_with_certs(c),
            None if self.url.scheme() != "https" => RootCerts::PlatformVerifier,
            None if rustls_native_certs::load_native_certs().certs.is_empty() => {
                note = Some(
                    "the system has no CA certificates (SSL_CERT_FILE, SSL_CERT_DIR, or the \
                     ca-certificates package): Mozilla's roots stand in"
                        .to_string(),
                );
                RootCerts::WebPki
            }
            None => RootCerts::PlatformVerifier,
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .tls_config(TlsConfig::builder().root_certs(roots).build())
            .build()
            .into();
        (agent, note)
    }
}

/// `url` as it may be printed: credentials, if it had any, stand as `***`.
pub fn shown(url: &Url, had_credentials: bool) -> String {
    let mut u = url.clone();
    if had_credentials || !u.username().is_empty() || u.password().is_some() {
        let _ = u.set_password(None);
        let _ = u.set_username("***");
    }
    u.to_string()
}

/// `s` with any credentials before a host masked, for a URL that may not parse.
pub fn mask(s: &str) -> String {
    let start = s.find("://").map_or(0, |i| i + 3);
    let rest = &s[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{}***{}", &s[..start], &rest[at..]),
        None => s.to_string(),
    }
}

/// The URL to request, and the Basic authorization its credentials make.
fn endpoint_url(raw: &str, from: &str, join: Join) -> Result<(Url, Option<String>), String> {
    let m = mask(raw);
    let mut u = Url::parse(raw.trim()).map_err(|e| format!("{from} {m}: not a URL ({e})"))?;
    if !matches!(u.scheme(), "http" | "https") || u.host().is_none() {
        return Err(format!(
            "{from} {m}: the endpoint must be an http:// or https:// URL with a host (OTLP/HTTP, \
             port 4318 by default)"
        ));
    }
    if u.fragment().is_some() {
        return Err(format!(
            "{from} {m}: a #fragment is never sent to a server: remove it (a ?query is kept)"
        ));
    }
    let credentials = if u.username().is_empty() && u.password().is_none() {
        None
    } else {
        let dec = |s: &str| {
            percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| format!("{from} {m}: its credentials are not UTF-8 once URL-decoded"))
        };
        let pair = format!(
            "{}:{}",
            dec(u.username())?,
            dec(u.password().unwrap_or(""))?
        );
        let _ = u.set_password(None);
        let _ = u.set_username("");
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        ))
    };
    let path = u.path().trim_end_matches('/').to_string();
    match join {
        Join::AsGiven => {}
        Join::UnlessThere if path.ends_with("/v1/traces") => u.set_path(&path),
        Join::UnlessThere | Join::Always => u.set_path(&format!("{path}/v1/traces")),
    }
    Ok((u, credentials))
}

/// OTEL_EXPORTER_OTLP_HEADERS' `key1=value1,key2=value2`, the values URL-decoded. Errors name
/// the entry, never a value (they are API keys).
fn otel_headers(var: &str, v: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, e) in v.split(',').enumerate() {
        if e.trim().is_empty() {
            continue;
        }
        let Some((k, val)) = e.split_once('=') else {
            return Err(format!(
                "{var}: entry {} has no '=' (the form is key1=value1,key2=value2)",
                i + 1
            ));
        };
        let k = k.trim();
        let val = percent_decode_str(val.trim())
            .decode_utf8()
            .map_err(|_| format!("{var}: the value of {k} is not UTF-8 once URL-decoded"))?;
        out.push((k.to_string(), val.into_owned()));
    }
    Ok(out)
}

/// `--header KEY=VALUE` or `KEY: VALUE` (curl's form): a header name holds neither `=` nor
/// `:`, so the first of them ends it.
fn flag_header(h: &str) -> Result<(String, String), String> {
    match h.find(['=', ':']) {
        Some(i) => Ok((h[..i].trim().to_string(), h[i + 1..].trim().to_string())),
        // Not quoted: a lone argument may well be the secret itself.
        None => Err("--header: an argument has neither '=' nor ':' (the form is KEY=VALUE)".into()),
    }
}

/// Adds or replaces (names are case-insensitive) the header `name`, checked.
fn set_header(
    headers: &mut Vec<(String, String)>,
    from: &str,
    name: String,
    value: String,
) -> Result<(), String> {
    use ureq::http::{HeaderName, HeaderValue};
    let n = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{from}: {name:?} is not a header name"))?;
    if matches!(
        n.as_str(),
        "content-type" | "content-encoding" | "content-length" | "transfer-encoding" | "host"
    ) {
        return Err(format!("{from}: {name} is set by push itself"));
    }
    HeaderValue::from_str(&value)
        .map_err(|_| format!("{from}: the value of {name} is not a header value"))?;
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&name));
    headers.push((name, value));
    Ok(())
}

/// The certificates of the PEM file `p` (named in errors with where it came from).
fn certificates(from: &str, p: &Path) -> Result<Vec<Certificate<'static>>, String> {
    let pem = std::fs::read(p).map_err(|e| format!("{from} {}: {e}", p.display()))?;
    let mut out = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => out.push(c),
            Ok(_) => {}
            Err(e) => return Err(format!("{from} {}: not PEM ({e})", p.display())),
        }
    }
    if out.is_empty() {
        return Err(format!(
            "{from} {}: no CERTIFICATE in it (a PEM file of the CA's certificates)",
            p.display()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: PushArgs,
    }

    fn target(args: &[&str], env: &[(&str, &str)]) -> Result<Target, String> {
        let cli = Cli::try_parse_from(["push", "x.dat"].iter().chain(args)).unwrap();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(&cli.a, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    fn url(args: &[&str], env: &[(&str, &str)]) -> String {
        target(args, env).unwrap().url.to_string()
    }

    #[test]
    fn the_path_goes_before_the_query_and_v1_traces_is_not_doubled() {
        let e = |s: &str| url(&["--endpoint", s], &[]);
        assert_eq!(e("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(e("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(
            e("http://h/otlp/?a=1&b=%20"),
            "http://h/otlp/v1/traces?a=1&b=%20"
        );
        assert_eq!(e("https://h/otlp/v1/traces"), "https://h/otlp/v1/traces");
        assert_eq!(e("https://h/v1/traces/?k=v"), "https://h/v1/traces?k=v");
        let err = target(&["--endpoint", "http://h:4318/#frag"], &[]).unwrap_err();
        assert!(err.contains("#fragment"), "{err}");
        let err = target(&["--endpoint", "ftp://h"], &[]).unwrap_err();
        assert!(err.contains("http:// or https://"), "{err}");
    }

    #[test]
    fn credentials_become_basic_authorization_and_are_masked() {
        let t = target(&["--endpoint", "https://us%40r:p%3Ass@h:1/x?q=1"], &[]).unwrap();
        assert_eq!(t.url.as_str(), "https://h:1/x/v1/traces?q=1");
        assert_eq!(t.shown, "https://***@h:1/x/v1/traces?q=1");
        let basic = base64::engine::general_purpose::STANDARD.encode("us@r:p:ss");
        assert_eq!(
            t.headers,
            [("Authorization".to_string(), format!("Basic {basic}"))]
        );
        // Unparseable URLs are masked too.
        for raw in [
            "http://u:secret@[::1",
            "u:secret@h:4318/x",
            "ftp://u:secret@h/",
        ] {
            let err = target(&["--endpoint", raw], &[]).unwrap_err();
            assert!(!err.contains("secret") && err.contains("***@"), "{err}");
        }
    }

    #[test]
    fn the_environment_fills_in_what_no_flag_gives() {
        let all = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://generic:1/base/"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:2/custom",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=generic,x-gen=a%20b"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
                " x-key = tr%2Caces , x-t=1",
            ),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip"),
            ("OTEL_SERVICE_NAME", "svc"),
        ];
        let t = target(&[], &all).unwrap();
        assert_eq!(t.url.as_str(), "http://traces:2/custom");
        let h = |k: &str, v: &str| (k.to_string(), v.to_string());
        // The _TRACES_ headers replace the generic ones; values are URL-decoded.
        assert_eq!(t.headers, [h("x-key", "tr,aces"), h("x-t", "1")]);
        assert!(t.gzip);
        assert_eq!(t.service.as_deref(), Some("svc"));
        // The generic endpoint gets /v1/traces, even when it ends so (the specification's rule).
        assert_eq!(
            url(&[], &all[..1]),
            "http://generic:1/base/v1/traces".to_string()
        );
        assert_eq!(
            url(
                &[],
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://g/v1/traces")]
            ),
            "http://g/v1/traces/v1/traces"
        );
        // Empty is unset.
        assert_eq!(
            url(&[], &[all[0], ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")]),
            "http://generic:1/base/v1/traces"
        );
        let t = target(&[], &all[..4]).unwrap();
        assert!(!t.gzip);
    }

    #[test]
    fn flags_win_over_the_environment() {
        let env = [
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://traces:2/custom",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=env,x-env=1"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"),
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem"),
            ("OTEL_SERVICE_NAME", "svc"),
        ];
        let t = target(
            &[
                "--endpoint",
                "http://flag:3",
                "--header",
                "X-Key=flag=1",
                "--header",
                "Authorization: Bearer t:k",
                "--compression",
                "none",
                "--service",
                "mine",
            ],
            &env,
        );
        // The certificate variable is read when no --ca-cert is given.
        let err = t.unwrap_err();
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_CERTIFICATE /nonexistent/ca.pem"),
            "{err}"
        );
        let ca = std::env::temp_dir().join(format!("typhon-push-ca-{}.pem", std::process::id()));
        let pem = "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n";
        std::fs::write(&ca, pem).unwrap();
        let t = target(
            &[
                "--endpoint",
                "http://flag:3",
                "--header",
                "X-Key=flag=1",
                "--header",
                "Authorization: Bearer t:k",
                "--compression",
                "none",
                "--service",
                "mine",
                "--ca-cert",
                ca.to_str().unwrap(),
            ],
            &env,
        )
        .unwrap();
        std::fs::remove_file(&ca).unwrap();
        assert_eq!(t.url.as_str(), "http://flag:3/v1/traces");
        let h = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            t.headers,
            [
                h("x-env", "1"),
                h("X-Key", "flag=1"),
                h("Authorization", "Bearer t:k")
            ]
        );
        assert!(!t.gzip);
        assert_eq!(t.service.as_deref(), Some("mine"));
        assert_eq!(t.roots.map(|r| r.len()), Some(1));
    }

    #[test]
    fn bad_settings_are_named_without_their_values() {
        let e = |args: &[&str], env: &[(&str, &str)]| target(args, env).unwrap_err();
        let err = e(&[], &[]);
        assert!(err.contains("no endpoint"), "{err}");
        let ep = ["--endpoint", "http://h"];
        let err = e(&ep, &[("OTEL_EXPORTER_OTLP_HEADERS", "a=1,secretkey")]);
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_HEADERS: entry 2 has no '='"),
            "{err}"
        );
        assert!(!err.contains("secretkey"), "{err}");
        let err = e(&[ep[0], ep[1], "--header", "x-key=bad\u{1}value"], &[]);
        assert!(
            err.contains("the value of x-key is not a header value"),
            "{err}"
        );
        assert!(!err.contains("bad"), "{err}");
        let err = e(&[ep[0], ep[1], "--header", "tok3n"], &[]);
        assert!(
            err.contains("neither '=' nor ':'") && !err.contains("tok3n"),
            "{err}"
        );
        let err = e(&[ep[0], ep[1], "--header", "Content-Type=text/plain"], &[]);
        assert!(err.contains("set by push itself"), "{err}");
        let err = e(&ep, &[("OTEL_EXPORTER_OTLP_COMPRESSION", "brotli")]);
        assert!(
            err.contains("OTEL_EXPORTER_OTLP_COMPRESSION=brotli"),
            "{err}"
        );
        let err = e(&ep, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]);
        assert!(err.contains("http/protobuf"), "{err}");
        assert!(target(&ep, &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]).is_ok());
    }
}
