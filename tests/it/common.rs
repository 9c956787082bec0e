//! Shared helpers of the integration tests: synthetic results files and the binary.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use chrono::{TimeZone, Utc};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use ci_gate::config::{CacheMode, Dtype, GateSettings, ShapeParams, Tolerance};
use ci_gate::results::{
    ConfigInfo, Environment, MeasurementInfo, Parity, ResultsFile, SCHEMA_VERSION, ShapeResult,
};
use ci_gate::stats::Sample;
use ci_gate::verdict::Verdict;

/// The ci-gate binary, outside GitHub Actions whatever the test runs in (the simulated GPU
/// is refused where `GITHUB_ACTIONS` is set; a test that wants Actions sets it again), with
/// GPU locks of its own ([`private_lock_dir`]): tests that run at once on the simulated GPU of
/// one seed do not wait for each other (a test of the lock sets one directory for two runs).
pub fn bin() -> Command {
    let mut c = Command::cargo_bin("ci-gate").unwrap();
    c.env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .env_remove("GITHUB_ACTIONS")
        .env("CI_GATE_LOCK_DIR", private_lock_dir());
    c
}

/// `DIR/NAME/attention.cu`, a kernel for the simulated GPU that follows `directive` (the
/// first line names it, so that kernels of other names differ); returns `DIR/NAME`.
pub fn sim_kernels(dir: &Path, name: &str, directive: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("attention.cu"),
        format!("// {name}\n// ci-gate-sim: {directive}\n"),
    )
    .unwrap();
    d
}

/// A finished command's stderr, as text, its error messages unwrapped ([`stderr_text`]).
pub fn stderr(out: &std::process::Output) -> String {
    stderr_text(&out.stderr)
}

/// stderr as text with every error message on one line again: ci-gate wraps a message at 80
/// columns (`text::error_message`), continuing it on lines indented by two spaces (a line
/// that ends inside a cut word ends with `\`), and a test that looks for a phrase must find
/// it wherever the line broke (the break moves with the length of a temporary path). Only the
/// lines that continue an `error: ` line are joined.
pub fn stderr_text(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut out = String::with_capacity(text.len());
    let mut in_error = false;
    for line in text.split_inclusive('\n') {
        if in_error && line.starts_with("  ") && !line.trim().is_empty() {
            // The previous line's newline becomes one space, or with its `\` nothing.
            out.pop();
            if out.ends_with('\\') {
                out.pop();
            } else {
                out.push(' ');
            }
            out.push_str(&line[2..]);
            continue;
        }
        in_error = line.starts_with("error: ");
        out.push_str(line);
    }
    out
}

/// A predicate on a command's stderr: it holds `needle` once its error messages are
/// unwrapped ([`stderr_text`]). For `assert_cmd`'s `.stderr(...)`, like
/// `predicates::str::contains`.
pub fn stderr_has(needle: impl Into<String>) -> StderrHas {
    StderrHas(needle.into())
}

/// See [`stderr_has`].
#[derive(Debug)]
pub struct StderrHas(String);

impl std::fmt::Display for StderrHas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "stderr (its error messages unwrapped) contains {:?}",
            self.0
        )
    }
}

impl predicates::reflection::PredicateReflection for StderrHas {}

impl predicates::Predicate<[u8]> for StderrHas {
    fn eval(&self, stderr: &[u8]) -> bool {
        stderr_text(stderr).contains(&self.0)
    }
}

/// A GPU lock directory no other command of the test suite uses (not created: ci-gate creates
/// it, private).
pub fn private_lock_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let parent = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gpu-locks");
    std::fs::create_dir_all(&parent).unwrap();
    parent.join(format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

pub fn environment(gpu: &str) -> Environment {
    Environment {
        gpu_name: gpu.into(),
        gpu_slug: ci_gate::results::gpu_slug(gpu),
        gpu_uuid: Some("GPU-00000000-0000-0000-0000-000000000000".into()),
        compute_capability: "9.0".into(),
        sm_count: Some(132),
        l2_bytes: Some(62_914_560),
        driver_version: Some("580.159.04".into()),
        cuda_driver_version: Some("13.0".into()),
        nvrtc_version: Some("13.0".into()),
        state_before: None,
        state_after: None,
    }
}

pub fn shapes() -> Vec<ShapeParams> {
    vec![
        ShapeParams::new(2, 8, 512, 64, false, Dtype::Float16),
        ShapeParams::new(2, 8, 512, 64, true, Dtype::Float16),
        ShapeParams::new(2, 16, 2048, 128, true, Dtype::Bfloat16),
    ]
}

/// Rounds of lognormal-ish timings around `center` µs with `spread` relative noise.
pub fn rounds(
    rng: &mut ChaCha8Rng,
    center: f64,
    spread: f64,
    rounds: usize,
    per: usize,
) -> Vec<Vec<f64>> {
    (0..rounds)
        .map(|_| {
            let drift = 1.0 + spread * (rng.random::<f64>() - 0.5);
            (0..per)
                .map(|_| center * drift * (1.0 + spread * (rng.random::<f64>() - 0.5)))
                .collect()
        })
        .collect()
}

/// Sets a shape's summary and TFLOP/s to what its samples and parameters give, as a run
/// writes them (a results file whose summary is not its samples' is refused), after a test
/// changed either.
pub fn resummarize(s: &mut ShapeResult) {
    s.summary = Sample::new(s.samples_us.iter().flatten().copied().collect())
        .ok()
        .map(|x| x.summary());
    s.tflops = s.summary.as_ref().map(|x| s.params.tflops(x.p50));
}

/// A stored baseline shape's derived figures (summary, TFLOP/s) recomputed from its samples
/// after a test changed them, as `baseline update` writes them (a file whose figures are not
/// its samples' is refused).
pub fn resummarize_stored(shape: &mut serde_json::Value) {
    let mut s: ci_gate::baseline::BaselineShape =
        serde_json::from_value(shape.clone()).expect("a stored shape");
    s.summary = Sample::new(s.samples_us.iter().flatten().copied().collect())
        .expect("samples")
        .summary();
    s.tflops = s.tflops.map(|_| s.params.tflops(s.summary.p50));
    *shape = serde_json::to_value(&s).expect("serializable");
}

/// A results file with one entry per `factors` (p50 multiplier per shape).
pub fn results(gpu: &str, factors: &[f64], seed: u64) -> ResultsFile {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let shapes: Vec<ShapeResult> = shapes()
        .into_iter()
        .zip(factors)
        .map(|(params, f)| {
            let samples = rounds(&mut rng, 100.0 * f, 0.004, 8, 10);
            let summary = Sample::new(samples.iter().flatten().copied().collect())
                .unwrap()
                .summary();
            ShapeResult {
                verdict: Verdict::NoBaseline,
                samples_us: samples,
                tflops: Some(params.tflops(summary.p50)),
                summary: Some(summary),
                parity: Some(Parity {
                    max_abs: 1e-3,
                    rel_l2: 2e-4,
                    centered: None,
                    nan_or_inf: 0,
                    unwritten: 0,
                    tolerance: Tolerance {
                        max_abs: 1e-2,
                        rel_l2: 1e-3,
                        centered: None,
                    },
                    seed: 1,
                }),
                measurement: Some(MeasurementInfo {
                    cache: CacheMode::Hot,
                    launches_per_sample: 20,
                    rounds: 8,
                    extra_rounds: 0,
                    working_set_bytes: 1 << 20,
                    wall_s: 0.5,
                    sm_clock_mhz: Some((1980, 1980)),
                    design: None,
                    checked_launches: 0,
                    unwitnessed: None,
                }),
                ..ShapeResult::new(params)
            }
        })
        .collect();
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        git_commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        created_at: Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap(),
        environment: Some(environment(gpu)),
        config: ConfigInfo {
            name: "pr".into(),
            path: "configs/pr.yaml".into(),
            hash: "0".repeat(64),
            defines: Vec::new(),
        },
        method: Some(ci_gate::method::Method::current()),
        kernel_source_hash: Some("f".repeat(64)),
        gate: GateSettings::default(),
        baseline: None,
        shapes,
        passed: true,
        warnings: vec![],
        notes: vec![],
        error: None,
        base: None,
        fail_on_drift: false,
        profiling: None,
        shard: None,
        peers: None,
        probes: Vec::new(),
        timing: None,
        energy: None,
        kernel_resources: Vec::new(),
    }
}

pub fn write(path: &Path, r: &ResultsFile) {
    r.save(path).unwrap();
}

/// tests/golden (or $CI_GATE_GOLDEN_DIR) when it holds the golden cases.
pub fn golden_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("CI_GATE_GOLDEN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden"));
    dir.join("cases.json").exists().then_some(dir)
}

/// A little-endian file of 16-bit values.
pub fn read_u16(path: &Path) -> Vec<u16> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// A little-endian file of f32 values, widened.
pub fn read_f32(path: &Path) -> Vec<f64> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect()
}

/// For the NVRTC tests (ignored where build.rs found no libnvrtc, `ci_gate_no_nvrtc`): names
/// the ci-gate executable as the sandboxed compiler and fails, rather than passing, where
/// libnvrtc cannot be loaded.
#[track_caller]
pub fn require_nvrtc() {
    ci_gate::kernel::sandbox::use_compiler_executable(env!("CARGO_BIN_EXE_ci-gate"));
    assert!(
        ci_gate::gpu::nvrtc_present(),
        "libnvrtc cannot be loaded: `pip install nvidia-cuda-nvrtc` and add its lib dir to \
         LD_LIBRARY_PATH (where build.rs finds none, and CI_GATE_REQUIRE_NVRTC is unset, this \
         test is ignored)"
    );
}

/// For the tests of the path without a GPU (ignored where build.rs found a CUDA driver,
/// `ci_gate_cuda_driver`): fails, rather than passing, where a CUDA driver can be loaded.
#[track_caller]
pub fn require_no_cuda_driver() {
    assert!(
        !ci_gate::gpu::driver_present(),
        "a CUDA driver can be loaded here and this test checks the path without one; build.rs \
         found no libcuda when the tests were built (rebuilt here, the test is ignored)"
    );
}

/// `v` with every floating-point number rounded to 9 significant digits, for JSON snapshots:
/// the same on any machine, where a libm may differ in the last bits of a logarithm or an
/// exponential. Integers are left as they are.
pub fn rounded(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap();
            let r: f64 = format!("{x:.8e}").parse().unwrap();
            serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number)
        }
        Value::Array(a) => Value::Array(a.into_iter().map(rounded).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, rounded(v))).collect()),
        other => other,
    }
}

/// `markdown` with the footer's `ci-gate <version>` (this build's version) as
/// `ci-gate [version]`, for snapshots that a version bump should leave alone.
pub fn without_version(markdown: &str) -> String {
    markdown.replace(
        concat!("ci-gate ", env!("CARGO_PKG_VERSION"), "</sub>"),
        "ci-gate [version]</sub>",
    )
}

/// A config file in `dir` of exactly the config name and shapes `results` (a results file)
/// records. `None` where the file cannot be read as a results file (a hostile one, refused
/// before that). The results record another content hash (they are made, not measured with
/// it): [`measured_with`] makes them agree.
pub fn config_matching(results: &Path, dir: &Path) -> Option<PathBuf> {
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(results).ok()?).ok()?;
    let name = r["config"]["name"].as_str()?;
    let mut yaml = format!("name: {name}\nshapes:\n");
    for s in r["shapes"].as_array()? {
        let p = &s["params"];
        yaml.push_str(&format!(
            "  - {{batch: {}, heads: {}, seq_len: {}, head_dim: {}, causal: {}, dtype: {}}}\n",
            p["batch"],
            p["heads"],
            p["seq_len"],
            p["head_dim"],
            p["causal"],
            p["dtype"].as_str()?
        ));
    }
    let path = dir.join(format!("{name}-matching.yaml"));
    std::fs::write(&path, yaml).ok()?;
    Some(path)
}

/// The config `results` (a results file the test wrote) was measured with, for `baseline
/// update --from` and `compare --config`, which refuse results of another config (its name,
/// shapes and content hash): [`config_matching`], and the results file made to record that
/// config's hash. `None` (and the file untouched) where it cannot be read as a results
/// file. Never call it on a file of the source tree.
pub fn measured_with(results: &Path, dir: &Path) -> Option<PathBuf> {
    let config = config_matching(results, dir)?;
    let mut r = ResultsFile::load(results).ok()?;
    r.config.hash = ci_gate::config::Config::load(&config).ok()?.hash;
    r.save(results).ok()?;
    Some(config)
}
