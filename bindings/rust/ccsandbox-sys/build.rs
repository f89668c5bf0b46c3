//! Finds libccsandbox for linking.
//!
//! 1. `CCSANDBOX_LIB_DIR=<dir>`: link `<dir>/libccsandbox.so` directly (no
//!    pkg-config involved).
//! 2. Otherwise the `pkg-config` program answers for module `ccsandbox`,
//!    honouring `PKG_CONFIG` and `PKG_CONFIG_PATH` as usual. Against a meson
//!    build tree use `PKG_CONFIG_PATH=<build>/meson-uninstalled`.
//!
//! The module's version must be in [MIN_VERSION, MAX_VERSION): every
//! release in that range ships the `CCSB_1.0` symbol node these
//! declarations describe (SONAME libccsandbox.so.1).
use std::env;
use std::process::Command;

const MIN_VERSION: (u32, u32) = (1, 0);
const MAX_VERSION: (u32, u32) = (2, 0);

fn parse_version(v: &str) -> Option<(u32, u32)> {
    let mut it = v.trim().split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

fn pkg_config(args: &[&str]) -> Result<String, String> {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(&prog).args(args).output().map_err(|e| {
        format!(
            "cannot run `{}`: {} (install pkg-config or set CCSANDBOX_LIB_DIR)",
            prog, e
        )
    })?;
    if !out.status.success() {
        return Err(format!(
            "`{} {}` failed: {}",
            prog,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn fail(msg: &str) -> ! {
    eprintln!("ccsandbox-sys: {}", msg);
    eprintln!(
        "ccsandbox-sys: point PKG_CONFIG_PATH at the directory holding ccsandbox.pc \
         (a meson build: <build>/meson-uninstalled), or set CCSANDBOX_LIB_DIR"
    );
    std::process::exit(1);
}

fn main() {
    for v in [
        "CCSANDBOX_LIB_DIR",
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
    ] {
        println!("cargo:rerun-if-env-changed={}", v);
    }
    println!("cargo:rerun-if-changed=build.rs");

    if let Ok(dir) = env::var("CCSANDBOX_LIB_DIR") {
        if dir.is_empty() {
            fail("CCSANDBOX_LIB_DIR is set but empty");
        }
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:rustc-link-lib=dylib=ccsandbox");
        println!("cargo:libdir={}", dir);
        return;
    }

    let version = pkg_config(&["--modversion", "ccsandbox"]).unwrap_or_else(|e| fail(&e));
    let parsed =
        parse_version(&version).unwrap_or_else(|| fail(&format!("cannot parse ccsandbox version {:?}", version)));
    if parsed < MIN_VERSION || parsed >= MAX_VERSION {
        fail(&format!(
            "ccsandbox {} found; these bindings need >= {}.{}, < {}.{}",
            version, MIN_VERSION.0, MIN_VERSION.1, MAX_VERSION.0, MAX_VERSION.1
        ));
    }
    let libs = pkg_config(&["--libs", "ccsandbox"]).unwrap_or_else(|e| fail(&e));
    let mut linked = false;
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:libdir={}", dir);
        } else if let Some(name) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={}", name);
            linked |= name == "ccsandbox";
        }
    }
    if !linked {
        fail(&format!(
            "`pkg-config --libs ccsandbox` did not name -lccsandbox: {}",
            libs
        ));
    }
    println!("cargo:version={}", version);
}
