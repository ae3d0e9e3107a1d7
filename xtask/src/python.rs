//! The Python half of `cargo xtask test`: builds every Python package of the repository into
//! one virtual environment and runs each package's pytest suite.
//!
//! The environment lives outside the checkout, in
//! `$XDG_CACHE_HOME/datasetrt-atlas/venv-<hash>` (or `~/.cache/...`), where the hash covers
//! the requirements file and the interpreter's version and path: it is reused while those are
//! unchanged and rebuilt when they change. It is created with uv (taken from `PATH`, else
//! installed with pip into a bootstrap environment next to it), gets the pinned requirements
//! of [`REQUIREMENTS`], then each package of [`PACKAGES`] is built by maturin (dev profile, the
//! workspace's target directory) and installed as a wheel. pytest then runs each test
//! directory with the environment `cargo xtask test` passes in (the S3 server's variables).
//!
//! A run fails on a missing dependency, on any failed test, on a suite that collects no test
//! (pytest's exit code 5) and on any skipped test (the `pytest_noskip` plugin in `python/`).
//!
//! Before the suites, [`lint`] checks the pure-Python code and the native modules' stubs (also
//! on its own: `cargo xtask lint-python`): `ruff check` and `ruff format --check` over `python/`
//! (`python/ruff.toml`), mypy over each package (its `[tool.mypy]`: the sources and `.pyi`
//! stubs, the tests, the benchmarks) against the test environment's installed packages, and
//! mypy's stubtest of each package's native module, imported from the test environment, against
//! its stub in the checkout. The tools come from [`LINT_REQUIREMENTS`], installed into an
//! environment of their own (`lint-venv-<hash>` beside the test one, made the same way), so
//! that changing them does not rebuild the test environment. Any finding fails the run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One Python package: where its `pyproject.toml` is and where its tests are, relative to the
/// repository root.
pub(crate) struct Package {
    /// The distribution name (for messages).
    pub(crate) name: &'static str,
    /// The directory holding `pyproject.toml`.
    pub(crate) dir: &'static str,
    /// The pytest directory.
    pub(crate) tests: &'static str,
    /// The native extension module, whose stub (`.pyi`) stubtest checks.
    pub(crate) native: &'static str,
}

/// Every Python package built and tested by `cargo xtask test`.
pub(crate) const PACKAGES: &[Package] = &[
    Package {
        name: "datasetrt",
        dir: "python/datasetrt",
        tests: "python/datasetrt/tests",
        native: "datasetrt._native",
    },
    Package {
        name: "atlas-collections",
        dir: "python/atlas",
        tests: "python/atlas/tests",
        native: "atlas_collections._atlas",
    },
];

/// The pinned test requirements, shared by all packages.
pub(crate) const REQUIREMENTS: &str = "python/requirements-test.txt";

/// The pinned lint tools (ruff, mypy), shared by all packages, in an environment of their own.
pub(crate) const LINT_REQUIREMENTS: &str = "python/requirements-lint.txt";

/// Builds the environment if needed, installs every package, lints (see [`lint`]) and runs
/// every suite. A lint finding fails the run, after the suites have run too.
pub(crate) fn run(root: &Path, env: &[(String, String)]) -> Result<(), String> {
    let venv = ensure_venv(root)?;
    let python = venv.join("bin/python");
    install_all(root, &venv)?;
    let mut failures = Vec::new();
    if let Err(e) = lint_with(root, &venv) {
        failures.push(e);
    }
    for package in PACKAGES {
        if let Err(e) = pytest(root, &python, env, package) {
            failures.push(e);
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Builds every package and installs it into the test environment `venv`.
fn install_all(root: &Path, venv: &Path) -> Result<(), String> {
    let wheels = std::env::temp_dir().join(format!("xtask-wheels-{}", std::process::id()));
    let result = PACKAGES
        .iter()
        .try_for_each(|package| install(root, venv, &wheels, package, Profile::Dev));
    let _ = std::fs::remove_dir_all(&wheels);
    result
}

/// `cargo xtask lint-python`: lints with the packages the test environment holds (the last
/// `cargo xtask test`'s build), or, with `build`, builds and installs them first.
pub(crate) fn lint(root: &Path, build: bool) -> Result<(), String> {
    let venv = ensure_venv(root)?;
    if build {
        install_all(root, &venv)?;
    } else {
        let python = venv.join("bin/python");
        let imports = PACKAGES
            .iter()
            .map(|package| format!("import {}", package.native))
            .collect::<Vec<_>>()
            .join("; ");
        output(
            Command::new(&python).args(["-c", &imports]),
            &format!("importing the native modules in {}", venv.display()),
        )
        .map_err(|e| {
            format!(
                "{e}\nthe packages are not installed in the test environment: \
                 run `cargo xtask lint-python --build` (or `cargo xtask test --python-only`)"
            )
        })?;
    }
    lint_with(root, &venv)
}

/// Runs every lint step against the test environment `venv` (which holds the built packages);
/// fails, after all of them ran, if any found anything.
fn lint_with(root: &Path, venv: &Path) -> Result<(), String> {
    let tools = ensure_env(root, &[LINT_REQUIREMENTS], "lint-venv")?;
    let tool_python = tools.join("bin/python");
    let test_python = venv.join("bin/python");
    // Caches of ruff and mypy, outside the checkout.
    let caches = tools.join("caches");
    // stubtest runs on the tools' interpreter with the test environment's packages on its path,
    // after the tools' own (so that the tools' dependencies win): the compiled modules there
    // need the same Python version.
    let (version, test_site) = interpreter_paths(&test_python)?;
    let (tool_version, mut site) = interpreter_paths(&tool_python)?;
    if version != tool_version {
        return Err(format!(
            "the lint environment runs Python {tool_version}, the test environment {version}: \
             stubtest cannot import the native modules"
        ));
    }
    site.extend(test_site);
    let site = std::env::join_paths(&site).map_err(|e| format!("{}: {e}", venv.display()))?;
    let mut steps: Vec<(String, Command)> = Vec::new();
    for args in [&["check"][..], &["format", "--check"]] {
        let mut ruff = Command::new(tools.join("bin/ruff"));
        ruff.current_dir(root)
            .args(args)
            .arg("python")
            .env("RUFF_CACHE_DIR", caches.join("ruff"));
        steps.push((format!("ruff {}", args.join(" ")), ruff));
    }
    for package in PACKAGES {
        let dir = root.join(package.dir);
        // The files and settings are the package's [tool.mypy]; the installed packages' types
        // come from the test environment.
        let mut mypy = Command::new(&tool_python);
        mypy.current_dir(&dir)
            .args(["-m", "mypy", "--python-executable"])
            .arg(&test_python)
            .env("MYPY_CACHE_DIR", caches.join("mypy").join(package.name))
            .env_remove("PYTHONPATH");
        steps.push((format!("mypy {}", package.dir), mypy));
        // The stub is the checkout's (the config's mypy_path), the module the test
        // environment's. stubtest keeps its cache in its working directory.
        let stubtest_dir = caches.join("stubtest").join(package.name);
        std::fs::create_dir_all(&stubtest_dir)
            .map_err(|e| format!("{}: {e}", stubtest_dir.display()))?;
        let mut stubtest = Command::new(&tool_python);
        stubtest
            .current_dir(&stubtest_dir)
            .args(["-m", "mypy.stubtest", package.native, "--mypy-config-file"])
            .arg(dir.join("pyproject.toml"))
            .env("PYTHONPATH", &site)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        steps.push((format!("stubtest {}", package.native), stubtest));
    }
    let mut failures = Vec::new();
    for (what, mut cmd) in steps {
        eprintln!("== python: {what}");
        if let Err(e) = status(&mut cmd, &what) {
            failures.push(e);
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("Python lint: {}", failures.join("; ")))
    }
}

/// The `major.minor` version of `python` and its site-packages directories (purelib, then
/// platlib when it differs).
fn interpreter_paths(python: &Path) -> Result<(String, Vec<PathBuf>), String> {
    let text = output(
        Command::new(python).args([
            "-c",
            "import sys, sysconfig; print('%d.%d' % sys.version_info[:2]); \
             print(sysconfig.get_path('purelib')); print(sysconfig.get_path('platlib'))",
        ]),
        &format!("running {}", python.display()),
    )?;
    let mut lines = text.lines();
    let version = lines.next().unwrap_or_default().to_owned();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for line in lines {
        let dir = PathBuf::from(line);
        if !line.is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    Ok((version, dirs))
}

/// 64-bit FNV-1a: a stable hash (the same on every machine and toolchain) for the cache key.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for part in parts {
        for &byte in *part {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

pub(crate) fn cache_root() -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or("neither XDG_CACHE_HOME nor HOME is set: nowhere to put the Python environment")?;
    Ok(base.join("datasetrt-atlas"))
}

/// The interpreter the environment is built from: `$PYTHON`, else `python3`.
fn base_python() -> String {
    std::env::var("PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_owned())
}

fn output(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn status(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed: {status}"))
    }
}

/// uv from `PATH`, else one installed with pip into `<cache>/uv-bootstrap`.
fn uv(cache: &Path, python: &str) -> Result<PathBuf, String> {
    if Command::new("uv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Ok(PathBuf::from("uv"));
    }
    let bootstrap = cache.join("uv-bootstrap");
    let uv = bootstrap.join("bin/uv");
    if uv.exists() {
        return Ok(uv);
    }
    eprintln!("== python: installing uv into {}", bootstrap.display());
    status(
        Command::new(python).args(["-m", "venv"]).arg(&bootstrap),
        "creating the uv bootstrap environment",
    )?;
    status(
        Command::new(bootstrap.join("bin/python")).args(["-m", "pip", "install", "--quiet", "uv"]),
        "pip install uv",
    )?;
    Ok(uv)
}

/// Creates (or reuses) the test environment and returns its directory.
fn ensure_venv(root: &Path) -> Result<PathBuf, String> {
    ensure_env(root, &[REQUIREMENTS], "venv")
}

/// Creates (or reuses) the benchmarks' environment (the test requirements and the peers of
/// [`crate::bench_python::BENCH_REQUIREMENTS`]), builds both packages in the release profile
/// into it and returns its directory.
pub(crate) fn ensure_bench_env(root: &Path) -> Result<PathBuf, String> {
    let venv = ensure_env(
        root,
        &[REQUIREMENTS, crate::bench_python::BENCH_REQUIREMENTS],
        "bench-venv",
    )?;
    let wheels = std::env::temp_dir().join(format!("xtask-bench-wheels-{}", std::process::id()));
    let result = PACKAGES
        .iter()
        .try_for_each(|package| install(root, &venv, &wheels, package, Profile::Release));
    let _ = std::fs::remove_dir_all(&wheels);
    result.map(|()| venv)
}

/// Creates (or reuses) `<cache>/<prefix>-<hash>`, an environment of the base interpreter with
/// the pinned `requirements_files` (paths relative to `root`), and returns its directory.
fn ensure_env(root: &Path, requirements_files: &[&str], prefix: &str) -> Result<PathBuf, String> {
    let python = base_python();
    let mut requirements = Vec::new();
    for file in requirements_files {
        let path = root.join(file);
        requirements.extend(std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?);
        // A boundary, so that moving a line from one file to the next changes the key.
        requirements.push(0);
    }
    let identity = output(
        Command::new(&python).args([
            "-c",
            "import sys; print(sys.version, sys.executable, sep='\\n')",
        ]),
        &format!("running {python}"),
    )?;
    let cache = cache_root()?;
    let venv = cache.join(format!(
        "{prefix}-{:016x}",
        fnv1a(&[&requirements, identity.as_bytes()])
    ));
    let marker = venv.join(".xtask-complete");
    if marker.exists() {
        eprintln!("== python: reusing {}", venv.display());
        return Ok(venv);
    }
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let uv = uv(&cache, &python)?;
    eprintln!("== python: creating {}", venv.display());
    if venv.exists() {
        std::fs::remove_dir_all(&venv).map_err(|e| format!("{}: {e}", venv.display()))?;
    }
    status(
        Command::new(&uv)
            .args(["venv", "--quiet", "--python", &python])
            .arg(&venv),
        "uv venv",
    )?;
    let mut install = Command::new(&uv);
    install
        .args(["pip", "install", "--quiet", "--python"])
        .arg(venv.join("bin/python"));
    for file in requirements_files {
        install.arg("-r").arg(root.join(file));
    }
    status(
        &mut install,
        &format!("installing {}", requirements_files.join(" and ")),
    )?;
    std::fs::write(&marker, identity).map_err(|e| format!("{}: {e}", marker.display()))?;
    Ok(venv)
}

/// The cargo profile a package is built in: the tests' dev build, or the benchmarks' release.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Profile {
    Dev,
    Release,
}

/// Builds `package` with maturin (in `profile`, with the `test-hooks` feature that adds the
/// native module's `_testing` submodule) and installs the wheel into the environment.
fn install(
    root: &Path,
    venv: &Path,
    wheels: &Path,
    package: &Package,
    profile: Profile,
) -> Result<(), String> {
    eprintln!("== python: building {}", package.name);
    let out = wheels.join(package.name);
    let _ = std::fs::remove_dir_all(&out);
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let mut maturin = Command::new(venv.join("bin/maturin"));
    maturin.current_dir(root.join(package.dir)).args([
        "build",
        "--quiet",
        "--features",
        "test-hooks",
    ]);
    if profile == Profile::Release {
        maturin.arg("--release");
    }
    status(
        maturin
            .arg("--interpreter")
            .arg(venv.join("bin/python"))
            .arg("--out")
            .arg(&out)
            .env("CARGO_TARGET_DIR", &target)
            .env("VIRTUAL_ENV", venv),
        &format!("maturin build of {}", package.name),
    )?;
    let wheel = std::fs::read_dir(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("maturin left no wheel in {}", out.display()))?;
    let uv = uv(&cache_root()?, &base_python())?;
    status(
        Command::new(uv)
            .args([
                "pip",
                "install",
                "--quiet",
                "--reinstall",
                "--no-deps",
                "--python",
            ])
            .arg(venv.join("bin/python"))
            .arg(&wheel),
        &format!("installing {}", wheel.display()),
    )
}

/// Runs one package's suite; skips, collection errors and empty suites are failures.
fn pytest(
    root: &Path,
    python: &Path,
    env: &[(String, String)],
    package: &Package,
) -> Result<(), String> {
    eprintln!("== python: pytest {}", package.tests);
    let status = Command::new(python)
        .current_dir(root)
        .args([
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "pytest_noskip",
        ])
        .arg("-rfEs")
        .arg(package.tests)
        .env("PYTHONPATH", root.join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .status()
        .map_err(|e| format!("running pytest: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(5) => Err(format!("pytest collected no test in {}", package.tests)),
        _ => Err(format!("pytest failed for {} ({status})", package.name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_is_stable_and_separates_parts() {
        assert_eq!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"ab", b"c"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_ne!(fnv1a(&[b"torch==2.15.0"]), fnv1a(&[b"torch==2.15.1"]));
    }

    #[test]
    fn every_package_has_a_pyproject_and_tests() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for package in PACKAGES {
            assert!(root.join(package.dir).join("pyproject.toml").exists());
            assert!(root.join(package.tests).is_dir());
        }
        assert!(root.join(REQUIREMENTS).exists());
        assert!(root.join(LINT_REQUIREMENTS).exists());
        assert!(root.join("python/ruff.toml").exists());
    }

    /// Each package's mypy settings are in its pyproject.toml, and each native module named
    /// for stubtest has its stub in the package's sources.
    #[test]
    fn every_package_has_mypy_settings_and_a_stub_of_its_native_module() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for package in PACKAGES {
            let pyproject =
                std::fs::read_to_string(root.join(package.dir).join("pyproject.toml")).unwrap();
            assert!(pyproject.contains("\n[tool.mypy]\n"), "{}", package.dir);
            assert!(pyproject.contains(&format!("module-name = \"{}\"", package.native)));
            let stub = format!("src/{}.pyi", package.native.replace('.', "/"));
            assert!(root.join(package.dir).join(&stub).exists(), "{stub}");
        }
    }
}
