//! The compile-side attacks of tests/adversarial/ (see its README) through the binary's
//! `compile` command, plus the attacks a repository cannot hold (symbolic links, a FIFO, an
//! oversized or non-UTF-8 file), made here in a temporary directory. Every one must end in
//! exit 2 with an error naming the file and the defence that stopped it, and a canary (a
//! random string in a file next to the source and in an environment variable of the ci-gate
//! process) must appear in no output.
//!
//! The last tests take the lexical check away and give the sandboxed NVRTC process the
//! includes directly: the sandbox alone must read nothing either.

use crate::common::stderr_text;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use crate::common::{bin, require_nvrtc};
use ci_gate::kernel::sandbox::{self, Outcome, Request};

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

    /// `ci-gate compile` of `kernels`, from the scene's directory, with the canary in the
    /// environment. The harness is the one built into the binary (the NVRTC tests compile
    /// it): what is under test is the refusal of the attacking attention.cu.
    fn compile(&self, kernels: &Path) -> Output {
        let start = Instant::now();
        let out = bin()
            .arg("compile")
            .arg("--kernels")
            .arg(kernels)
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
        let stderr = stderr_text(&out.stderr);
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

// ---- The GPU-side attacks and controls compile (without a GPU). ----

/// GPU-side attacks that the gate's own `compile` refuses (exit 2, a refusal naming one of
/// these words): the test on the GPU expects the same of them before any launch
/// (`adversarial_gpu::expectation` reads this table).
pub(crate) const MUST_BE_REFUSED: &[(&str, &[&str])] = &[
    ("memo_device", &["writable device memory"]),
    ("printf_commands", &["vprintf"]),
    ("tma_layout", &["tma layout"]),
];

/// Attacks that a module check may refuse (after issue 29): the gate's own `compile` may end
/// in exit 2 for them, as long as it is a refusal naming one of these words and not a compile
/// error; plain NVRTC must still compile them, so a refusal comes from the check and not from
/// the source. `const_bank_stash` is the red team's `cvta.const`; the other two reach the bank
/// without it (`cvta.param` into bank 0, a relocated `generic(sym)` initialiser).
const MAY_BE_REFUSED: &[(&str, &[&str])] = &[
    ("const_bank_stash", &["cvta", "constant"]),
    ("const_bank_scan", &["cvta", "param", "constant"]),
    ("memo_every_launch", &["constant", "relocat", "generic"]),
];

/// Every `NAME.cu` of `dir`, sorted: (name, text).
fn cu_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Applies a `tests/adversarial/gpu/shipped/*.patch` to `kernel`: its hunks, each
/// `<<<<<<< find`, the exact lines to find, `=======`, the lines to put in their place,
/// `>>>>>>> replace`; every find text must occur exactly once in `kernel` (a patch that no
/// longer applies to the shipped kernel is an error, never a silent no-op). Lines before the
/// first hunk are the patch's description.
pub(crate) fn apply_patch(kernel: &str, patch: &str) -> Result<String, String> {
    let mut out = kernel.to_owned();
    let mut lines = patch.lines();
    let mut hunks = 0;
    while let Some(line) = lines.next() {
        if line != "<<<<<<< find" {
            continue;
        }
        let find: Vec<&str> = lines.by_ref().take_while(|l| *l != "=======").collect();
        let replace: Vec<&str> = lines
            .by_ref()
            .take_while(|l| *l != ">>>>>>> replace")
            .collect();
        let (find, replace) = (find.join("\n"), replace.join("\n"));
        match out.matches(&find).count() {
            1 => out = out.replacen(&find, &replace, 1),
            n => {
                return Err(format!(
                    "hunk {} is found {n} times, not once:\n{find}",
                    hunks + 1
                ));
            }
        }
        hunks += 1;
    }
    if hunks == 0 {
        return Err("no hunk".into());
    }
    Ok(out)
}

/// The shipped kernel with each patch of tests/adversarial/gpu/shipped/: (name, text).
pub(crate) fn shipped_attacks() -> Vec<(String, String)> {
    let kernel = std::fs::read_to_string(root().join("kernels/attention.cu")).unwrap();
    let dir = root().join("tests/adversarial/gpu/shipped");
    let mut all: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "patch"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let patch = std::fs::read_to_string(&p).unwrap();
            let text = apply_patch(&kernel, &patch).unwrap_or_else(|e| panic!("{name}: {e}"));
            (format!("shipped/{name}"), text)
        })
        .collect();
    all.sort();
    all
}

#[test]
fn patches_apply_once_each_and_say_what_they_try() {
    let shipped = shipped_attacks();
    assert!(
        shipped.len() >= 3,
        "{} shipped-kernel attacks",
        shipped.len()
    );
    let readme = std::fs::read_to_string(root().join("tests/adversarial/README.md")).unwrap();
    let dir = root().join("tests/adversarial/gpu/shipped");
    for (name, text) in &shipped {
        let file = name.trim_start_matches("shipped/");
        let patch = std::fs::read_to_string(dir.join(format!("{file}.patch"))).unwrap();
        assert!(patch.starts_with("// Attack: "), "{name}");
        assert!(text.contains("attack"), "{name}: the patch changed nothing");
        assert!(
            readme.contains(&format!("`{file}.patch`")),
            "{name} is not in the README"
        );
    }
    // The format refuses what does not apply.
    assert!(apply_patch("a\nb\n", "<<<<<<< find\nc\n=======\nd\n>>>>>>> replace\n").is_err());
    assert!(apply_patch("a\na\n", "<<<<<<< find\na\n=======\nd\n>>>>>>> replace\n").is_err());
    assert!(apply_patch("a\n", "// nothing\n").is_err());
    assert_eq!(
        apply_patch(
            "x\na\ny",
            "<<<<<<< find\na\n=======\nb\nc\n>>>>>>> replace\n"
        )
        .unwrap(),
        "x\nb\nc\ny"
    );
}

/// The GPU-side kernels as tests/it/adversarial_gpu.rs runs them: every attack grafted on the
/// template, every honest control whole, every shipped-kernel patch applied. (name,
/// attention.cu text).
fn gpu_kernels() -> Vec<(String, String)> {
    let gpu = root().join("tests/adversarial/gpu");
    let template = std::fs::read_to_string(gpu.join("template.cu")).unwrap();
    let mut all: Vec<(String, String)> = cu_files(&gpu.join("attacks"))
        .into_iter()
        .map(|(name, attack)| (name, format!("{attack}\n{template}")))
        .collect();
    all.extend(
        cu_files(&gpu.join("honest"))
            .into_iter()
            .map(|(name, text)| (format!("honest/{name}"), text)),
    );
    all.extend(shipped_attacks());
    all
}

/// Each GPU-side file says first what it tries (or that it is a control), and the README's
/// table has a row for it.
#[test]
fn every_gpu_attack_says_what_it_tries_and_is_in_the_readme() {
    let readme = std::fs::read_to_string(root().join("tests/adversarial/README.md")).unwrap();
    let gpu = root().join("tests/adversarial/gpu");
    let attacks = cu_files(&gpu.join("attacks"));
    let honest = cu_files(&gpu.join("honest"));
    assert!(attacks.len() >= 20, "{} attacks", attacks.len());
    assert!(!honest.is_empty());
    for (name, text) in attacks.iter().chain(&honest) {
        let first = if name == "none" || honest.iter().any(|h| &h.0 == name) {
            "// Control, no attack"
        } else {
            "// Attack: "
        };
        assert!(text.starts_with(first), "{name}: begins with {first:?}");
        assert!(
            readme.contains(&format!("`{name}.cu`")) || readme.contains(&format!("/{name}.cu`")),
            "{name}.cu is not in the README's table"
        );
    }
    for (name, _) in MUST_BE_REFUSED.iter().chain(MAY_BE_REFUSED) {
        assert!(attacks.iter().any(|a| &a.0 == name), "{name}");
    }
}

/// Plain NVRTC (the sandboxed compiler alone: no lexical check, no module policy) compiles
/// the attacks a module check may refuse with the gate's options, for the target the gate
/// compiles them for below (sm_90a, where the lent GPUs run them): this is what shows that
/// a refusal is the check's, not a syntax error.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn the_attacks_a_module_check_may_refuse_compile_with_plain_nvrtc() {
    require_nvrtc();
    let dir = sandbox::nvrtc_library_dir().expect("libnvrtc's directory");
    let kernels = gpu_kernels();
    for (name, _) in MAY_BE_REFUSED {
        let (_, source) = kernels.iter().find(|k| &k.0 == name).unwrap();
        let arch = "sm_90a";
        let request = Request {
            name: "attention.cu".into(),
            source: source.clone(),
            options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
            allow_unconfined: false,
        };
        let answer = sandbox::compile(
            Path::new(env!("CARGO_BIN_EXE_ci-gate")),
            &request,
            &dir,
            sandbox::TIMEOUT,
        )
        .unwrap_or_else(|f| panic!("{name} {arch}: no answer: {f}"));
        match answer.outcome {
            Outcome::Cubin { cubin, .. } => {
                assert!(cubin.starts_with(b"\x7fELF"), "{name} {arch}")
            }
            other => panic!("{name} {arch}: {other:?}"),
        }
    }
}

/// The gate's own `compile` (lexical check, sandboxed NVRTC, module policy) accepts every
/// GPU-side kernel for the target the lent GPUs run it on (sm_90a; the controls for sm_89
/// and sm_90 too): the attacks must reach the GPU to be stopped there. The exceptions: those
/// of [`MUST_BE_REFUSED`], which it refuses, and those of [`MAY_BE_REFUSED`], which a module
/// check may refuse, each in a sentence naming the file and what it refused.
#[test]
#[cfg_attr(
    ci_gate_no_nvrtc,
    ignore = "libnvrtc not found: pip install nvidia-cuda-nvrtc and add its lib dir to LD_LIBRARY_PATH"
)]
fn every_gpu_attack_and_control_compiles_through_the_gate() {
    require_nvrtc();
    let tmp = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for (name, source) in gpu_kernels() {
        let dir = tmp.path().join(name.replace('/', "-"));
        std::fs::create_dir(&dir).unwrap();
        let file = dir.join("attention.cu");
        std::fs::write(&file, source).unwrap();
        // Attacks for the target the lent GPUs run them on (sm_90a; the patched shipped
        // kernels too: the shipped kernel itself compiles for every target in the NVRTC
        // tests), the honest controls for every target; the harness is built in and
        // compiled by the NVRTC tests.
        let archs: &[&str] = if name.starts_with("honest/") || name == "none" {
            &["sm_89", "sm_90", "sm_90a"]
        } else {
            &["sm_90a"]
        };
        let mut cmd = bin();
        cmd.arg("compile").arg("--kernels").arg(&dir);
        for a in archs {
            cmd.args(["--arch", a]);
        }
        let out = cmd.timeout(Duration::from_secs(300)).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let all = format!("{stdout}{}", stderr_text(&out.stderr));
        let file = file.display().to_string();
        let ours: Vec<&str> = stdout.lines().filter(|l| l.starts_with(&file)).collect();
        let must = MUST_BE_REFUSED.iter().find(|(n, _)| *n == name);
        let refusable = must.or_else(|| MAY_BE_REFUSED.iter().find(|(n, _)| *n == name));
        let compiled = out.status.code() == Some(0)
            && archs.iter().all(|a| {
                ours.iter()
                    .any(|l| l.starts_with(&format!("{file} {a}: ok")))
            });
        let refused = refusable.is_some_and(|(_, words)| {
            out.status.code() == Some(2)
                && !ours.is_empty()
                && ours.iter().all(|l| !l.contains(": error:"))
                && ours.iter().any(|l| {
                    let l = l.to_lowercase();
                    l.contains("refused") && words.iter().any(|w| l.contains(w))
                })
        });
        if !(refused || (compiled && must.is_none())) {
            wrong.push(format!("{name}: exit {:?}\n{all}", out.status.code()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
