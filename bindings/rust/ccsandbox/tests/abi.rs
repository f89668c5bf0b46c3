//! The hand-written declarations in ccsandbox-sys against the C headers:
//! every function with the same parameter and return types, every constant
//! with the same value, every exported symbol declared.
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use ccsandbox::sys;

fn source_root() -> PathBuf {
    match std::env::var_os("CCSB_SOURCE_ROOT") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.."),
    }
}

fn read(rel: &str) -> String {
    let p = source_root().join(rel);
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {}", p.display(), e))
}

fn headers() -> String {
    read("include/ccsandbox/ccsandbox.h") + &read("include/ccsandbox/ccsandbox-libevent.h")
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A C type ("const char *const *") in the spelling the -sys crate uses.
fn c_to_rust(c: &str) -> String {
    let c = c.replace("struct ", "");
    let segs: Vec<&str> = c.split('*').collect();
    let is_const = |s: &str| s.split_whitespace().any(|w| w == "const");
    let base_name = segs[0]
        .split_whitespace()
        .filter(|w| *w != "const")
        .collect::<Vec<_>>()
        .join(" ");
    let mut t = match base_name.as_str() {
        "char" => "c_char",
        "int" => "c_int",
        "void" => "c_void",
        "size_t" => "usize",
        "uint8_t" => "u8",
        "uint16_t" => "u16",
        "uint32_t" => "u32",
        "uint64_t" => "u64",
        "int64_t" => "i64",
        other => other,
    }
    .to_string();
    for i in 1..segs.len() {
        t = format!("*{} {}", if is_const(segs[i - 1]) { "const" } else { "mut" }, t);
    }
    if t == "c_void" {
        String::new() // a void return
    } else {
        t
    }
}

/// "type name" -> the type part (the last identifier is the name).
fn c_param_type(p: &str) -> String {
    let p = p.trim();
    let cut = p
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    c_to_rust(&p[..cut])
}

type Sig = (Vec<String>, String);

fn header_functions() -> BTreeMap<String, Sig> {
    let text = headers();
    let mut out = BTreeMap::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("CCSB_API ") {
        rest = &rest[at + "CCSB_API ".len()..];
        if rest.starts_with("__attribute__") || rest.starts_with('\n') {
            continue; // the macro's own definition
        }
        let end = rest.find(';').expect("declaration ends with ;");
        let decl = squash(&rest[..end]);
        let open = decl.find('(').expect("a function");
        let head = &decl[..open];
        let name_at = head
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = head[name_at..].to_string();
        let ret = c_to_rust(&head[..name_at]);
        let params_text = &decl[open + 1..decl.rfind(')').unwrap()];
        let params = if params_text.trim() == "void" {
            Vec::new()
        } else {
            params_text.split(',').map(c_param_type).collect()
        };
        out.insert(name, (params, ret));
    }
    out
}

fn sys_functions() -> BTreeMap<String, Sig> {
    let text = read("bindings/rust/ccsandbox-sys/src/lib.rs");
    let mut out = BTreeMap::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("pub fn ") {
        rest = &rest[at + "pub fn ".len()..];
        let end = rest.find(';').unwrap();
        let decl = squash(&rest[..end]);
        let open = decl.find('(').unwrap();
        let name = decl[..open].to_string();
        let close = decl.rfind(')').unwrap();
        let params: Vec<String> = decl[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| squash(&p[p.find(':').unwrap() + 1..]))
            .collect();
        let ret = decl[close + 1..].trim().trim_start_matches("->").trim().to_string();
        out.insert(name, (params, ret));
    }
    out
}

#[test]
fn every_function_matches_the_header() {
    let c = header_functions();
    let rs = sys_functions();
    assert!(c.len() > 90, "parsed only {} C functions", c.len());
    for (name, sig) in &c {
        let got = rs
            .get(name)
            .unwrap_or_else(|| panic!("ccsandbox-sys does not declare {}", name));
        assert_eq!(got, sig, "{}: -sys declares {:?}, header says {:?}", name, got, sig);
    }
    for name in rs.keys() {
        assert!(
            c.contains_key(name),
            "ccsandbox-sys declares {} which the header lacks",
            name
        );
    }
}

#[test]
fn every_exported_symbol_is_declared() {
    let map = read("lib/libccsandbox.map");
    let rs = sys_functions();
    let mut n = 0;
    for line in map.lines() {
        let w = line.trim().trim_end_matches(';');
        if w.starts_with("ccsb_") {
            n += 1;
            assert!(rs.contains_key(w), "exported {} is not declared in ccsandbox-sys", w);
        }
    }
    assert!(n > 90);
}

#[test]
fn every_constant_matches_the_header() {
    let text = headers();
    let mut header = BTreeMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if w.next() != Some("#define") {
            continue;
        }
        let (name, val) = match (w.next(), w.next()) {
            (Some(n), Some(v)) => (n, v),
            _ => continue,
        };
        if let Ok(v) = val.parse::<i64>() {
            header.insert(name.to_string(), v);
        }
    }
    assert!(header.len() > 40);
    let ours: BTreeMap<String, i64> = sys::CONSTANTS.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    assert_eq!(ours, header);
}

#[test]
fn loaded_library_is_the_declared_version() {
    assert_eq!(ccsandbox::version_number(), sys::CCSB_VERSION_NUMBER);
    let want = format!(
        "{}.{}.{}",
        sys::CCSB_VERSION_MAJOR,
        sys::CCSB_VERSION_MINOR,
        sys::CCSB_VERSION_PATCH
    );
    assert_eq!(ccsandbox::version(), want);
}

#[test]
fn the_type_translation_itself() {
    assert_eq!(c_to_rust("const char *const *"), "*const *const c_char");
    assert_eq!(c_to_rust("ccsb_ctx **"), "*mut *mut ccsb_ctx");
    assert_eq!(c_to_rust("const ccsb_probe_result **"), "*mut *const ccsb_probe_result");
    assert_eq!(c_to_rust("struct event_base *"), "*mut event_base");
    assert_eq!(c_to_rust("void "), "");
}
