//! The C# binding (csharp/TyphonRecorder.cs) cannot drift from the header
//! (include/typhon_recorder.h, itself checked against the Rust code by tests/header.rs): both
//! are parsed, and any difference in the set of functions, a return or parameter type (C types
//! mapped to their P/Invoke equivalents), a struct's fields (names, order, types) or a constant
//! (`TYPHON_OK`/`TYPHON_ERR_*` against `Native`'s, `TYPHON_THREAD_*` against `ThreadKind`)
//! fails. `differences_are_caught` checks that each kind of difference is reported.

use std::collections::BTreeMap;
use std::path::Path;

/// What both sides declare, in C# terms.
#[derive(Debug, Default, PartialEq)]
struct Api {
    /// name -> (return type, parameter types).
    functions: BTreeMap<String, (String, Vec<String>)>,
    /// struct -> [(field, type)] in order.
    structs: BTreeMap<String, Vec<(String, String)>>,
    /// C# name (`Native.ErrNull`, `ThreadKind.Pool`) -> value.
    constants: BTreeMap<String, i64>,
}

/// Removes `/* */` and `//` comments.
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
            out.push(' ');
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.find('\n').map_or("", |i| &r[i..]);
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `snake_case` / `SCREAMING_CASE` to `PascalCase`.
fn pascal(s: &str) -> String {
    s.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_ascii_lowercase();
            let mut c = w.chars();
            let first = c.next().unwrap().to_ascii_uppercase();
            std::iter::once(first).chain(c).collect::<String>()
        })
        .collect()
}

/// Where a C type is used: a `char*` is `byte*` as a parameter and `IntPtr` (read with
/// Marshal.PtrToStringUTF8, or set to a pinned NUL-terminated buffer) elsewhere.
#[derive(Clone, Copy, PartialEq)]
enum Use {
    Param,
    Return,
    Field,
}

/// A C declaration `type name` split into its C# type and the name.
fn c_decl(decl: &str, usage: Use) -> Result<(String, String), String> {
    let d = squash(&decl.replace('*', " * "));
    let mut words: Vec<&str> = d
        .split(' ')
        .filter(|w| *w != "const" && *w != "struct")
        .collect();
    let name = match usage {
        Use::Return => String::new(),
        _ => words.pop().ok_or("empty declaration")?.to_string(),
    };
    let stars = words.iter().filter(|w| **w == "*").count();
    let base: Vec<&str> = words.into_iter().filter(|w| *w != "*").collect();
    let [base] = base[..] else {
        return Err(format!("cannot read the C declaration {decl:?}"));
    };
    let cs = match base {
        "int8_t" => "sbyte",
        "uint8_t" => "byte",
        "int16_t" => "short",
        "uint16_t" => "ushort",
        "int32_t" => "int",
        "uint32_t" => "uint",
        "int64_t" => "long",
        "uint64_t" => "ulong",
        "size_t" => "UIntPtr",
        "double" => "double",
        "void" => "void",
        "char" if stars == 1 && usage != Use::Param => return Ok(("IntPtr".into(), name)),
        "char" => "byte",
        // Structs of the header keep their names; anything else is a type the binding would
        // have to map by hand (bool: never, see the header's note on BOOL).
        s if s.starts_with("Typhon") => s,
        other => return Err(format!("no P/Invoke mapping for the C type {other:?}")),
    };
    Ok((format!("{cs}{}", "*".repeat(stars)), name))
}

fn parse_header(src: &str) -> Result<Api, String> {
    let mut api = Api::default();
    for line in src.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let ["#define", name, value] = w[..] {
            if let Some(rest) = name.strip_prefix("TYPHON_") {
                let v: i64 = value.parse().map_err(|_| format!("{name} = {value}"))?;
                let cs = match rest.strip_prefix("THREAD_") {
                    Some(kind) => format!("ThreadKind.{}", pascal(kind)),
                    None => format!("Native.{}", pascal(rest)),
                };
                api.constants.insert(cs, v);
            }
        }
    }
    let body: String = strip_comments(src)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let mut rest = body.as_str();
    // Structs: `typedef struct Name { fields } Name;`.
    while let Some(i) = rest.find("typedef struct") {
        let after = &rest[i + "typedef struct".len()..];
        let (name, after) = after.split_once('{').ok_or("typedef without {")?;
        let (fields, after) = after.split_once('}').ok_or("typedef without }")?;
        let mut list = Vec::new();
        for f in fields.split(';').map(str::trim).filter(|f| !f.is_empty()) {
            let (ty, field) = c_decl(f, Use::Field)?;
            list.push((pascal(&field), ty));
        }
        api.structs.insert(name.trim().to_string(), list);
        rest = after;
    }
    // Functions: `ret typhon_name(params);`.
    for decl in body.split(';').map(|d| squash(&d.replace('*', " * "))) {
        let Some(open) = decl.find('(') else { continue };
        let head = &decl[..open];
        let Some(name) = head
            .split(' ')
            .next_back()
            .filter(|n| n.starts_with("typhon_"))
        else {
            continue;
        };
        let ret = head[..head.len() - name.len()]
            .trim()
            .trim_start_matches("extern \"C\" {")
            .trim();
        let (ret, _) = c_decl(ret, Use::Return)?;
        let params = decl[open + 1..].trim_end().trim_end_matches(')');
        let mut types = Vec::new();
        if params.trim() != "void" {
            for p in params.split(',') {
                types.push(c_decl(p, Use::Param)?.0);
            }
        }
        if api
            .functions
            .insert(name.to_string(), (ret, types))
            .is_some()
        {
            return Err(format!("{name} declared twice in the header"));
        }
    }
    Ok(api)
}

/// The body of the first `{ ... }` after `at` (no nested braces in the parts read).
fn braced(src: &str, at: usize) -> Result<&str, String> {
    let s = &src[at..];
    let open = s.find('{').ok_or("no {")?;
    let close = s[open..].find('}').ok_or("no }")? + open;
    Ok(&s[open + 1..close])
}

fn parse_csharp(src: &str) -> Result<Api, String> {
    let src = strip_comments(src);
    let mut api = Api::default();
    for line in src.lines().filter(|l| l.contains(" static extern ")) {
        let decl = squash(line.split_once(" static extern ").unwrap().1);
        let open = decl.find('(').ok_or_else(|| format!("no ( in {line:?}"))?;
        let (ret, name) = decl[..open]
            .rsplit_once(' ')
            .ok_or_else(|| format!("no return type in {line:?}"))?;
        let params = decl[open + 1..]
            .trim_end_matches(';')
            .trim_end()
            .trim_end_matches(')');
        let mut types = Vec::new();
        for p in params.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (ty, _) = p
                .rsplit_once(' ')
                .ok_or_else(|| format!("parameter {p:?} of {name}"))?;
            types.push(ty.replace(' ', ""));
        }
        let entry = (ret.replace(' ', ""), types);
        if api.functions.insert(name.to_string(), entry).is_some() {
            return Err(format!("{name} declared twice in the binding"));
        }
    }
    // Structs (`public struct Name { public T A; public T B, C; }`).
    let mut from = 0;
    while let Some(i) = src[from..].find("public struct ") {
        let at = from + i;
        let name = src[at + "public struct ".len()..]
            .split_whitespace()
            .next()
            .ok_or("struct name")?;
        let mut fields = Vec::new();
        for f in braced(&src, at)?
            .split(';')
            .map(squash)
            .filter(|f| !f.is_empty())
        {
            let f = f
                .strip_prefix("public ")
                .ok_or_else(|| format!("{name}: {f:?}"))?;
            let (ty, names) = f.split_once(' ').ok_or_else(|| format!("{name}: {f:?}"))?;
            for n in names.split(',') {
                fields.push((n.trim().to_string(), ty.to_string()));
            }
        }
        api.structs.insert(name.to_string(), fields);
        from = at + 1;
    }
    // Constants: Native's `public const int Name = value;`, ThreadKind's members.
    for line in src.lines() {
        if let Some(c) = line.trim().strip_prefix("public const int ") {
            let (n, v) = c
                .trim_end_matches(';')
                .split_once('=')
                .ok_or(c.to_string())?;
            let v = v.trim().parse().map_err(|_| format!("constant {c:?}"))?;
            api.constants.insert(format!("Native.{}", n.trim()), v);
        }
    }
    let at = src.find("enum ThreadKind").ok_or("no enum ThreadKind")?;
    for m in braced(&src, at)?
        .split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        let (n, v) = m
            .split_once('=')
            .ok_or_else(|| format!("ThreadKind member {m:?} without a value"))?;
        let v = v.trim().parse().map_err(|_| format!("ThreadKind {m:?}"))?;
        api.constants.insert(format!("ThreadKind.{}", n.trim()), v);
    }
    Ok(api)
}

/// Every difference between the header and the binding, one line each.
fn drift(header: &str, csharp: &str) -> Vec<String> {
    let h = match parse_header(header) {
        Ok(h) => h,
        Err(e) => return vec![format!("header: {e}")],
    };
    let c = match parse_csharp(csharp) {
        Ok(c) => c,
        Err(e) => return vec![format!("binding: {e}")],
    };
    let mut out = Vec::new();
    fn compare<V: PartialEq + std::fmt::Debug>(
        what: &str,
        h: &BTreeMap<String, V>,
        c: &BTreeMap<String, V>,
        out: &mut Vec<String>,
    ) {
        for (k, hv) in h {
            match c.get(k) {
                None => out.push(format!("{what} {k}: in the header, not in the binding")),
                Some(cv) if cv != hv => out.push(format!(
                    "{what} {k}: header {hv:?} (in C# terms), binding {cv:?}"
                )),
                _ => {}
            }
        }
        for k in c.keys().filter(|k| !h.contains_key(*k)) {
            out.push(format!("{what} {k}: in the binding, not in the header"));
        }
    }
    compare("function", &h.functions, &c.functions, &mut out);
    compare("struct", &h.structs, &c.structs, &mut out);
    compare("constant", &h.constants, &c.constants, &mut out);
    out
}

fn sources() -> (String, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let h = std::fs::read_to_string(root.join("include/typhon_recorder.h")).unwrap();
    let cs = std::fs::read_to_string(root.join("csharp/TyphonRecorder.cs")).unwrap();
    (h, cs)
}

#[test]
fn the_csharp_binding_matches_the_header() {
    let (h, cs) = sources();
    let d = drift(&h, &cs);
    assert!(
        d.is_empty(),
        "csharp/TyphonRecorder.cs differs from include/typhon_recorder.h:\n  {}",
        d.join("\n  ")
    );
    // It compared something: every function, both structs, every code and thread kind.
    let api = parse_header(&h).unwrap();
    assert!(
        api.functions.len() >= 40,
        "{} functions",
        api.functions.len()
    );
    assert_eq!(api.structs.len(), 4);
    assert_eq!(api.structs["TyphonStats"].len(), 11);
    assert_eq!(api.structs["TyphonConfigEx"].len(), 18);
    assert_eq!(api.structs["TyphonSnapshot"].len(), 9);
    // 17 codes, the two minimum struct sizes, 4 thread kinds.
    assert_eq!(api.constants.len(), 17 + 2 + 4);
    for f in [
        "typhon_start_ex",
        "typhon_snapshot",
        "typhon_request_snapshot",
        "typhon_counter_at",
        "typhon_counter_f64_at",
    ] {
        assert!(api.functions.contains_key(f), "{f} is compared");
    }
    assert_eq!(
        api.functions["typhon_snapshot"],
        (
            "int".to_string(),
            ["byte*", "UIntPtr", "TyphonSnapshot*"]
                .map(String::from)
                .to_vec()
        )
    );
    assert_eq!(
        api.functions["typhon_celog_data"],
        (
            "int".to_string(),
            ["int", "ushort", "void*", "ushort", "uint", "uint", "ushort", "int"]
                .map(String::from)
                .to_vec()
        )
    );
    eprintln!(
        "binding matches the header: {} functions, {} struct fields, {} constants",
        api.functions.len(),
        api.structs.values().map(Vec::len).sum::<usize>(),
        api.constants.len()
    );
}

/// Each kind of difference, made in a copy of the real sources, is reported (and names what
/// differs).
#[test]
fn differences_are_caught() {
    let (h, cs) = sources();
    let edit = |src: &str, from: &str, to: &str| {
        assert_eq!(src.matches(from).count(), 1, "{from:?} once");
        src.replacen(from, to, 1)
    };
    let cases: Vec<(&str, String, String)> = vec![
        (
            "typhon_drain",
            h.clone(),
            edit(
                &cs,
                "[DllImport(Lib)] public static extern int typhon_drain();",
                "",
            ),
        ),
        (
            "typhon_instant",
            h.clone(),
            edit(
                &cs,
                "typhon_instant(int nameId, int payload)",
                "typhon_instant(int nameId, uint payload)",
            ),
        ),
        (
            "typhon_span_end_at",
            h.clone(),
            edit(
                &cs,
                "typhon_span_end_at(ulong spanId, ulong ts)",
                "typhon_span_end_at(ulong spanId)",
            ),
        ),
        (
            "typhon_version",
            h.clone(),
            edit(
                &cs,
                "extern IntPtr typhon_version()",
                "extern byte* typhon_version()",
            ),
        ),
        (
            "TyphonStats",
            h.clone(),
            edit(
                &cs,
                "public ulong Written;\n        public ulong Missed;",
                "public ulong Missed;\n        public ulong Written;",
            ),
        ),
        (
            "TyphonConfig",
            h.clone(),
            edit(
                &cs,
                "public UIntPtr PageSize;       //",
                "public ulong PageSize;       //",
            ),
        ),
        (
            "Native.ErrNoSlot",
            h.clone(),
            edit(&cs, "ErrNoSlot = -12;", "ErrNoSlot = -13;"),
        ),
        (
            // A field of the growable config out of order shifts every later one.
            "TyphonConfigEx",
            h.clone(),
            edit(
                &cs,
                "public ulong WindowNs;             // uint64_t window_ns\n        public ulong WindowBytes;          // uint64_t window_bytes",
                "public ulong WindowBytes;          // uint64_t window_bytes\n        public ulong WindowNs;             // uint64_t window_ns",
            ),
        ),
        (
            "typhon_request_snapshot",
            h.clone(),
            edit(
                &cs,
                "typhon_request_snapshot(byte* reason)",
                "typhon_request_snapshot(IntPtr reason)",
            ),
        ),
        (
            "Native.ConfigExMinSize",
            h.clone(),
            edit(&cs, "ConfigExMinSize = 48;", "ConfigExMinSize = 40;"),
        ),
        (
            "ThreadKind.Pool",
            h.clone(),
            edit(&cs, "Pool = 2,", "Pool = 3,"),
        ),
        (
            "Native.ErrTimeout",
            edit(
                &h,
                "#define TYPHON_ERR_NO_SLOT -12",
                "#define TYPHON_ERR_NO_SLOT -12\n#define TYPHON_ERR_TIMEOUT -17",
            ),
            cs.clone(),
        ),
        (
            "typhon_flush",
            edit(
                &h,
                "int32_t typhon_drain(void);",
                "int32_t typhon_drain(void);\nint32_t typhon_flush(uint32_t timeout_ms);",
            ),
            cs.clone(),
        ),
        (
            "TyphonConfig",
            edit(
                &h,
                "  uint32_t zstd_level;\n} TyphonConfig;",
                "  uint32_t zstd_level;\n  uint32_t zones;\n} TyphonConfig;",
            ),
            cs.clone(),
        ),
    ];
    for (what, h, cs) in cases {
        let d = drift(&h, &cs);
        assert!(
            d.iter().any(|l| l.contains(what)),
            "a difference in {what} is not reported (got {d:?})"
        );
    }
}
