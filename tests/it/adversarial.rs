//! The compile-side attacks of tests/adversarial/ (see its README) through the binary's
//! `compile` command, plus the attacks a repository cannot hold (symbolic links, a FIFO, an
//! oversized or non-UTF-8 file), made here in a temporary directory. Every one must end in
//! exit 2 with an error naming the file and the defence that stopped it, and a canary (a
//! random string in a file next to the source and in an environment variable of the ci-gate
//! process) must appear in no output.
//!
//! The last tests take the lexical check away and give the sandboxed NVRTC process the
//! includes directly: the sandbox alone must read nothing either.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::{bin, require_nvrtc};
use ci_gate::gpu::sandbox::{self, Outcome, Request};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn canary() -> String {
    format!(
        "ci-gate-canary-{:016x}{:016x}",
        rand::random::<u64>(),
        rand::random::<u64>()
    )
}

/// A temporary kernels directory with a canary file, and the canary.
struct Scene {
    dir: tempfile::TempDir,
    canary: String,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let canary = canary();
        std::fs::write(
            dir.path().join("canary.txt"),
            format!("{canary}\nint {canary}_x;\n"),
        )
        .unwrap();
        Scene { dir, canary }
    }

    fn kernels(&self) -> PathBuf {
        self.dir.path().join("kernels")
    }

    /// `ci-gate compile` of `kernels` (the shipped harness beside it), from the scene's
    /// directory, with the canary in the environment.
    fn compile(&self, kernels: &Path) -> Output {
        let start = Instant::now();
        let out = bin()
            .arg("compile")
            .arg("--kernels")
            .arg(kernels)
            .arg("--harness")
            .arg(root().join("kernels"))
            .args(["--arch", "sm_89"])
            .env("CI_GATE_CANARY", &self.canary)
            .current_dir(kernels.parent().unwrap())
            .timeout(Duration::from_secs(300))
            .output()
            .unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "{:?}",
            start.elapsed()
        );
        out
    }

    /// Exit 2, the file and `defence` named, the canary nowhere.
    fn assert_refused(&self, out: &Output, file: &Path, defence: &str) {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let all = format!("{stdout}{stderr}");
        assert_eq!(out.status.code(), Some(2), "{all}");
        let file = file.display().to_string();
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("{file} sm_89: ")) && l.contains(defence)),
            "no line for {file} with {defence:?}: {all}"
        );
        assert!(
            stderr.starts_with("error: ") && stderr.contains(&file),
            "{stderr}"
        );
        assert!(!all.contains(&self.canary), "the canary leaked: {all}");
        assert!(
            !all.lines().any(|l| l.trim_start().starts_with("::")),
            "a workflow command: {all}"
        );
    }
}

/// Runs the attack of tests/adversarial/NAME and checks that `defence` stopped it.
fn attack(name: &str, defence: &str) {
    require_nvrtc();
    let source = root()
        .join("tests/adversarial")
        .join(name)
        .join("attention.cu");
    let text = std::fs::read_to_string(&source).unwrap();
    assert!(
        text.starts_with("// Attack: "),
        "{name}: the first line says what it tries"
    );
    let scene = Scene::new();
    std::fs::create_dir(scene.kernels()).unwrap();
    let file = scene.kernels().join("attention.cu");
    std::fs::write(&file, text).unwrap();
    // The relative include looks in the kernels directory and in the working directory.
    std::fs::copy(
        scene.dir.path().join("canary.txt"),
        scene.kernels().join("canary.txt"),
    )
    .unwrap();
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(&out, &file, defence);
}

macro_rules! attacks {
    ($($test:ident: $dir:literal => $defence:literal,)*) => {
        $(
            #[test]
            #[cfg_attr(
                ci_gate_no_nvrtc,
                ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
            )]
            fn $test() {
                attack($dir, $defence);
            }
        )*

        /// Every directory of tests/adversarial/ with a compile-side attack is tested here.
        const TESTED: &[&str] = &[$($dir),*];
    };
}

attacks! {
    include_of_a_file_by_a_relative_name: "include-relative" => ":2: #include is refused",
    include_of_proc_self_environ: "include-environ" => ":2: #include is refused",
    include_spelled_with_a_digraph: "include-digraph" => ":2: %:include is refused",
    include_spelled_with_a_trigraph: "include-trigraph" => ":2: ??=include is refused",
    include_cut_by_a_line_splice: "include-spliced" => ":2: #include is refused",
    include_of_a_macro_built_path: "include-macro-path" => ":3: #include is refused",
    has_include_probe: "has-include" => ":2: `__has_include` is refused",
    embed_of_a_file: "embed" => ":3: #embed is refused",
    memoisation_in_a_device_array: "device-memo" => "writable device memory \"last_q\" in \".nv.global\"",
    printf_of_workflow_commands: "printf-workflow" => "calls \"vprintf\" (device printf)",
    device_side_malloc: "device-malloc" => "calls \"malloc\" (device-side heap memory)",
    device_side_assert: "device-assert" => "calls \"__assertfail\" (device assert)",
}

/// A new attack directory without a test here would pass unnoticed: directories whose
/// attention.cu the compile step refuses are listed above (GPU-side attacks, which compile,
/// are listed in the README for the GPU tests).
#[test]
fn every_compile_side_attack_directory_is_tested() {
    let readme = std::fs::read_to_string(root().join("tests/adversarial/README.md")).unwrap();
    for dir in TESTED {
        assert!(
            root()
                .join("tests/adversarial")
                .join(dir)
                .join("attention.cu")
                .is_file(),
            "{dir}"
        );
        assert!(
            readme.contains(&format!("`{dir}/`")),
            "{dir} is not in the README"
        );
    }
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_source_that_links_to_a_secret_is_refused() {
    require_nvrtc();
    let scene = Scene::new();
    std::fs::create_dir(scene.kernels()).unwrap();
    let file = scene.kernels().join("attention.cu");
    std::os::unix::fs::symlink(scene.dir.path().join("canary.txt"), &file).unwrap();
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(&out, &file, "is refused: it is a symbolic link");
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_source_that_links_to_dev_zero_is_refused_at_once() {
    require_nvrtc();
    let scene = Scene::new();
    std::fs::create_dir(scene.kernels()).unwrap();
    let file = scene.kernels().join("attention.cu");
    std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
    let start = Instant::now();
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(&out, &file, "is refused: it is a symbolic link");
    assert!(start.elapsed() < Duration::from_secs(60));
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_kernels_directory_that_is_a_link_is_refused() {
    require_nvrtc();
    let scene = Scene::new();
    let real = scene.dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::copy(
        root().join("kernels/attention.cu"),
        real.join("attention.cu"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&real, scene.kernels()).unwrap();
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(
        &out,
        &scene.kernels().join("attention.cu"),
        "is a symbolic link (kernel sources are read without following links)",
    );
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_fifo_is_refused_without_waiting_for_a_writer() {
    require_nvrtc();
    let scene = Scene::new();
    std::fs::create_dir(scene.kernels()).unwrap();
    let file = scene.kernels().join("attention.cu");
    let made = std::process::Command::new("mkfifo")
        .arg(&file)
        .status()
        .unwrap();
    assert!(made.success());
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(&out, &file, "it is not a regular file but a FIFO");
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn an_oversized_source_is_refused_after_reading_at_most_one_mebibyte() {
    require_nvrtc();
    let scene = Scene::new();
    std::fs::create_dir(scene.kernels()).unwrap();
    let file = scene.kernels().join("attention.cu");
    let mut text = String::from("// padding\n");
    while text.len() <= 1 << 20 {
        text.push_str("// ............................................................\n");
    }
    std::fs::write(&file, text).unwrap();
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(&out, &file, "it is larger than 1024 KiB");
}

#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn a_source_that_is_not_utf8_is_refused() {
    require_nvrtc();
    let scene = Scene::new();
    std::fs::create_dir(scene.kernels()).unwrap();
    let file = scene.kernels().join("attention.cu");
    std::fs::write(&file, b"// \xff\xfe\n").unwrap();
    let out = scene.compile(&scene.kernels());
    scene.assert_refused(&out, &file, "it is not UTF-8 text (byte 3 is not)");
}

// ---- The sandbox alone, without the lexical check in front of it. ----

/// Compiles `source` in the sandboxed child directly (no lexical check) for sm_89.
fn sandboxed(source: &str) -> sandbox::Answer {
    let dir = sandbox::nvrtc_library_dir().expect("libnvrtc's directory");
    let request = Request {
        name: "attention.cu".into(),
        source: source.into(),
        options: vec!["--gpu-architecture=sm_89".into()],
        allow_unconfined: false,
    };
    sandbox::compile(
        Path::new(env!("CARGO_BIN_EXE_ci-gate")),
        &request,
        &dir,
        sandbox::TIMEOUT,
    )
    .unwrap_or_else(|f| panic!("no answer: {f}"))
}

/// Landlock is available on the machines the tests run on (CI included), so the sandbox is
/// asserted whole here; elsewhere the child refuses to compile (`nvrtc_fail_closed.rs`).
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_sandbox_alone_lets_nvrtc_read_no_file() {
    require_nvrtc();
    let scene = Scene::new();
    let secret = scene.dir.path().join("canary.txt");
    // The same file, readable by this process: what the child cannot open.
    assert!(
        std::fs::read_to_string(&secret)
            .unwrap()
            .contains(&scene.canary)
    );
    for target in [
        secret.display().to_string(),
        "/proc/self/environ".into(),
        "/etc/passwd".into(),
        format!("/proc/{}/environ", std::process::id()),
    ] {
        let answer = sandboxed(&format!(
            "#include \"{target}\"\nextern \"C\" __global__ void k(float* o) {{ o[0] = 1.0f; }}\n"
        ));
        assert_eq!(answer.unconfined, None, "Landlock is not enforced here");
        match answer.outcome {
            Outcome::Failed(log) => {
                assert!(log.contains("cannot open source file"), "{target}: {log}");
                for leak in [scene.canary.as_str(), "root:", "LD_LIBRARY_PATH", "PATH="] {
                    assert!(!log.contains(leak), "{target}: {leak} in {log}");
                }
            }
            other => panic!("{target}: {other:?}"),
        }
    }
}

/// `__has_include` opens the file it asks about: in the sandbox it finds nothing, so it is no
/// oracle of the runner's files either (the canary file exists and this process can read it).
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn in_the_sandbox_has_include_finds_nothing() {
    require_nvrtc();
    let scene = Scene::new();
    let secret = scene.dir.path().join("canary.txt");
    for target in [secret.display().to_string(), "/etc/passwd".into()] {
        assert!(Path::new(&target).is_file());
        let answer = sandboxed(&format!(
            "#if __has_include(\"{target}\")\n#error found\n#else\n#error not found\n#endif\n"
        ));
        match answer.outcome {
            Outcome::Failed(log) => {
                assert!(
                    log.contains("#error directive: not found"),
                    "{target}: {log}"
                )
            }
            other => panic!("{target}: {other:?}"),
        }
    }
}

/// A compile in the sandbox still works, with the shipped kernel, under the fixed name.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_sandbox_compiles_the_shipped_kernel() {
    require_nvrtc();
    let text = std::fs::read_to_string(root().join("kernels/attention.cu")).unwrap();
    match sandboxed(&text).outcome {
        Outcome::Cubin { cubin, .. } => assert!(cubin.starts_with(b"\x7fELF")),
        other => panic!("{other:?}"),
    }
}
