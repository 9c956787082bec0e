//! The runner settings on synthetic process trees and runner directories: the ancestry walk
//! under a stand-in `/proc`, the file's checks and parsing, and the rule that decides
//! between the file and the environment.

use std::collections::HashMap;
use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

/// `PROC/PID/stat` with `comm` and `ppid`, and `PROC/PID/exe` a link to `exe` when given.
fn process(proc: &Path, pid: u32, comm: &str, ppid: u32, exe: Option<&Path>) {
    let dir = proc.join(pid.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("stat"),
        format!("{pid} ({comm}) S {ppid} {pid} {pid} 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0\n"),
    )
    .unwrap();
    if let Some(exe) = exe {
        symlink(exe, dir.join("exe")).unwrap();
    }
}

fn my_uid(dir: &Path) -> u32 {
    std::fs::metadata(dir).unwrap().uid()
}

/// A job's processes as a self-hosted runner has them: systemd (1, its exe unreadable: no
/// link), the runner's service script, Runner.Listener, Runner.Worker, the step's bash,
/// ci-gate; the runner installed in `ROOT/actions-runner`.
fn job_tree(root: &Path, worker_exe: &Path) -> PathBuf {
    let proc = root.join("proc");
    let bin = root.join("actions-runner/bin");
    process(&proc, 1, "systemd", 0, None);
    process(&proc, 500, "runsvc.sh", 1, Some(Path::new("/usr/bin/bash")));
    process(
        &proc,
        510,
        "Runner.Listener",
        500,
        Some(&bin.join("Runner.Listener")),
    );
    process(&proc, 600, "Runner.Worker", 510, Some(worker_exe));
    process(&proc, 700, "bash", 600, Some(Path::new("/usr/bin/bash")));
    process(
        &proc,
        710,
        "ci-gate",
        700,
        Some(Path::new("/tmp/ci-gate-bin/ci-gate")),
    );
    proc
}

#[test]
fn the_walk_finds_the_worker_that_runs_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("actions-runner");
    let proc = job_tree(dir.path(), &runner.join("bin/Runner.Worker"));
    let found = find_runner(&proc, 710).unwrap();
    assert_eq!(found.root, runner);
    assert_eq!(found.uid, my_uid(&proc));
    // From the worker itself, and from a grandchild of ci-gate (a `--devices` child).
    assert_eq!(find_runner(&proc, 600).unwrap().root, runner);
    process(
        &proc,
        720,
        "ci-gate",
        710,
        Some(Path::new("/tmp/ci-gate-bin/ci-gate")),
    );
    assert_eq!(find_runner(&proc, 720).unwrap().root, runner);
    // The listener alone is not the worker: above the worker there is none.
    assert_eq!(find_runner(&proc, 510), None);
    assert_eq!(find_runner(&proc, 1), None);
    // An unknown pid: no stat, no runner.
    assert_eq!(find_runner(&proc, 4242), None);
}

#[test]
fn the_walk_takes_an_updated_or_replaced_worker() {
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("actions-runner");
    // After a self-update the runner runs from bin.<version>.
    let proc = job_tree(dir.path(), &runner.join("bin.2.329.0/Runner.Worker"));
    assert_eq!(find_runner(&proc, 710).unwrap().root, runner);
    // An executable replaced while it runs reads "PATH (deleted)".
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("actions-runner");
    let proc = job_tree(dir.path(), &runner.join("bin/Runner.Worker (deleted)"));
    assert_eq!(find_runner(&proc, 710).unwrap().root, runner);
}

#[test]
fn the_walk_reads_the_parent_after_the_last_parenthesis_and_ends() {
    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path().join("proc");
    let runner = dir.path().join("r");
    // A command name that looks like more fields: ") S 1 (" inside it.
    process(
        &proc,
        30,
        "Runner.Worker",
        1,
        Some(&runner.join("bin/Runner.Worker")),
    );
    process(&proc, 40, "x) S 1 (y", 30, Some(Path::new("/bin/x")));
    assert_eq!(find_runner(&proc, 40).unwrap().root, runner);
    // A name merely containing Runner.Worker, or a comm that says so, is not the worker.
    process(
        &proc,
        50,
        "Runner.Worker",
        1,
        Some(Path::new("/x/bin/Runner.Worker2")),
    );
    process(&proc, 51, "sh", 50, Some(Path::new("/bin/sh")));
    assert_eq!(find_runner(&proc, 51), None);
    // A loop of parents ends (bounded), and so does a parent that is itself.
    process(&proc, 60, "a", 61, Some(Path::new("/bin/a")));
    process(&proc, 61, "b", 60, Some(Path::new("/bin/b")));
    assert_eq!(find_runner(&proc, 60), None);
    process(&proc, 70, "c", 70, Some(Path::new("/bin/c")));
    assert_eq!(find_runner(&proc, 70), None);
    // A stat file that is not one.
    std::fs::create_dir_all(proc.join("80")).unwrap();
    std::fs::write(proc.join("80/stat"), "garbage").unwrap();
    assert_eq!(find_runner(&proc, 80), None);
    // A worker at the top of a file system: no install directory above bin/.
    process(
        &proc,
        90,
        "Runner.Worker",
        1,
        Some(Path::new("/Runner.Worker")),
    );
    assert_eq!(find_runner(&proc, 90), None);
}

/// The real /proc: this test process has no runner among its ancestors unless the suite runs
/// inside a GitHub Actions job; either way the walk ends.
#[test]
fn the_walk_on_this_machine_ends() {
    if let Some(runner) = find_runner(Path::new("/proc"), std::process::id()) {
        assert!(std::env::var_os("GITHUB_ACTIONS").is_some(), "{runner:?}");
    }
}

fn write_env(root: &Path, text: &[u8], mode: u32) -> PathBuf {
    std::fs::create_dir_all(root).unwrap();
    let path = root.join(".env");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn the_file_is_read_as_the_runner_reads_it() {
    let text = b"LANG=C.UTF-8\r\n\
        CI_GATE_PYTHON=/opt/first/python\n\
        #CI_GATE_ALLOW_UNCONFINED_NVRTC=1\n\
        CI_GATE_ALLOW_UNCONFINED_NVRTC =1\n\
         CI_GATE_CACHE_DIR=/leading/space\n\
        ci_gate_cache_dir=/lower/case\n\
        CI_GATE_PYTHON=/opt/ci-gate-torch/bin/python\r\n\
        CI_GATE_CACHE_DIR=/var/cache/a=b\n\
        CI_GATE_CACHE_DIR=\n\
        CI_GATE_SIMULATE=1\n\
        no equals sign\n\
        =CI_GATE_PYTHON\n";
    let values = parse(text).unwrap();
    let map: HashMap<&str, &OsStr> = values.iter().map(|(n, v)| (*n, v.as_os_str())).collect();
    assert_eq!(
        map,
        HashMap::from([
            // The later line wins, the CR of CRLF is not part of the value.
            (PYTHON, OsStr::new("/opt/ci-gate-torch/bin/python")),
            // Split at the first '='; an empty value later sets nothing.
            (CACHE_DIR, OsStr::new("/var/cache/a=b")),
        ])
    );
    // A value that is not UTF-8 is kept as bytes.
    let values = parse(b"CI_GATE_CACHE_DIR=/caf\xe9\n").unwrap();
    assert_eq!(values[0].1.as_bytes(), b"/caf\xe9");
    assert_eq!(parse(b"").unwrap(), vec![]);
    assert_eq!(parse(b"CI_GATE_PYTHON=/a\0b\n"), Err(Refusal::Nul));
}

#[test]
fn a_file_anyone_else_could_have_written_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("runner");
    let uid = my_uid(dir.path());
    let good = b"CI_GATE_ALLOW_UNCONFINED_NVRTC=1\n";
    let path = write_env(&root, good, 0o644);
    assert_eq!(
        read_file(&path, uid).unwrap(),
        vec![(ALLOW_UNCONFINED_NVRTC, OsString::from("1"))]
    );
    write_env(&root, good, 0o600);
    assert!(read_file(&path, uid).is_ok());
    let refused = |why| NoRunnerFile::Refused {
        path: path.clone(),
        why,
    };
    for mode in [0o664, 0o646, 0o666, 0o622] {
        write_env(&root, good, mode);
        assert_eq!(
            read_file(&path, uid),
            Err(refused(Refusal::Writable { mode })),
            "{mode:o}"
        );
    }
    // Owned by a user that is neither root nor the runner's: refused; root's: accepted.
    write_env(&root, good, 0o644);
    let owner = if uid == 0 {
        // Root (as in a container) gives the file away to show the refusal.
        std::os::unix::fs::chown(&path, Some(4242), None).unwrap();
        assert!(read_file(&path, 4242).is_ok());
        4242
    } else {
        uid
    };
    assert_eq!(
        read_file(&path, owner + 1),
        Err(refused(Refusal::Owner {
            owner,
            runner: owner + 1
        }))
    );
    if uid == 0 {
        std::os::unix::fs::chown(&path, Some(0), None).unwrap();
        assert!(read_file(&path, 4243).is_ok(), "root's file");
    }
    // Too large, whatever it holds.
    let mut big = good.to_vec();
    big.resize(MAX_FILE_BYTES as usize + 1, b'\n');
    write_env(&root, &big, 0o644);
    assert_eq!(read_file(&path, uid), Err(refused(Refusal::TooLarge)));
    big.truncate(MAX_FILE_BYTES as usize);
    write_env(&root, &big, 0o644);
    assert_eq!(read_file(&path, uid).unwrap().len(), 1);
    write_env(&root, b"CI_GATE_PYTHON=/x\0\n", 0o644);
    assert_eq!(read_file(&path, uid), Err(refused(Refusal::Nul)));
    // A link is not followed, even to a good file; a directory is no file; none is missing.
    std::fs::remove_file(&path).unwrap();
    let elsewhere = write_env(&dir.path().join("elsewhere"), good, 0o644);
    symlink(&elsewhere, &path).unwrap();
    assert_eq!(read_file(&path, uid), Err(refused(Refusal::Link)));
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert_eq!(read_file(&path, uid), Err(refused(Refusal::NotFile)));
    std::fs::remove_dir(&path).unwrap();
    assert_eq!(
        read_file(&path, uid),
        Err(NoRunnerFile::Missing { path: path.clone() })
    );
}

#[test]
fn the_file_is_found_through_the_ancestry() {
    let dir = tempfile::tempdir().unwrap();
    let runner = dir.path().join("actions-runner");
    let proc = job_tree(dir.path(), &runner.join("bin/Runner.Worker"));
    let env_file = runner.join(".env");
    assert_eq!(
        runner_file(&proc, 710),
        Err(NoRunnerFile::Missing {
            path: env_file.clone()
        })
    );
    write_env(&runner, b"CI_GATE_PYTHON=/opt/py\n", 0o644);
    assert_eq!(
        runner_file(&proc, 710),
        Ok((env_file, vec![(PYTHON, OsString::from("/opt/py"))]))
    );
    assert_eq!(runner_file(&proc, 510), Err(NoRunnerFile::NoRunner));
}

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |name| vars.get(name).cloned()
}

fn file(values: &[(&'static str, &str)]) -> Result<FileValues, NoRunnerFile> {
    Ok((
        PathBuf::from("/opt/actions-runner/.env"),
        values
            .iter()
            .map(|(n, v)| (*n, OsString::from(v)))
            .collect(),
    ))
}

#[test]
fn outside_actions_the_environment_decides_and_no_file_is_read() {
    let env = env_of(&[
        (ALLOW_UNCONFINED_NVRTC, "1"),
        (PYTHON, "/usr/bin/python3"),
        (CACHE_DIR, ""),
    ]);
    let s = resolve(false, &env, || {
        panic!("no runner file is read outside Actions")
    });
    assert_eq!(s.get(ALLOW_UNCONFINED_NVRTC), Some(OsStr::new("1")));
    assert_eq!(s.get(PYTHON), Some(OsStr::new("/usr/bin/python3")));
    assert_eq!(s.get(CACHE_DIR), None);
    assert_eq!(s.warning, None);
}

#[test]
fn in_actions_a_workflow_value_is_ignored_and_said_once() {
    // No runner file: the workflow's value gives nothing.
    let env = env_of(&[(ALLOW_UNCONFINED_NVRTC, "1")]);
    let s = resolve(true, &env, || Err(NoRunnerFile::NoRunner));
    assert_eq!(s.get(ALLOW_UNCONFINED_NVRTC), None);
    assert_eq!(
        s.warning.as_deref(),
        Some(
            "warning: CI_GATE_ALLOW_UNCONFINED_NVRTC in this job's environment is ignored: in GitHub Actions ci-gate takes it from the runner's environment file only, and this value is not the file's (a workflow's env: or $GITHUB_ENV set it, or the file changed after the runner started); the runner's environment file cannot be found (no Runner.Worker among this process's ancestors) (docs/RUNNER.md, \"Runner settings\")"
        )
    );
    // A runner file without the key, and one with another value: ignored, one line for all.
    let env = env_of(&[
        (ALLOW_UNCONFINED_NVRTC, "1"),
        (PYTHON, "/tmp/evil/python"),
        (CACHE_DIR, "/opt/cache"),
    ]);
    let s = resolve(true, &env, || {
        file(&[
            (PYTHON, "/opt/ci-gate-torch/bin/python"),
            (CACHE_DIR, "/opt/cache"),
        ])
    });
    assert_eq!(s.get(ALLOW_UNCONFINED_NVRTC), None);
    assert_eq!(
        s.get(PYTHON),
        Some(OsStr::new("/opt/ci-gate-torch/bin/python"))
    );
    assert_eq!(s.get(CACHE_DIR), Some(OsStr::new("/opt/cache")));
    let warning = s.warning.unwrap();
    assert!(
        warning.starts_with(
            "warning: CI_GATE_ALLOW_UNCONFINED_NVRTC and CI_GATE_PYTHON in this job's environment are ignored: in GitHub Actions ci-gate takes them from the runner's environment file only, and these values are not the file's"
        ),
        "{warning}"
    );
    assert!(
        warning.ends_with(
            "; the runner's environment file is /opt/actions-runner/.env (docs/RUNNER.md, \"Runner settings\")"
        ),
        "{warning}"
    );
    assert!(
        !warning.contains('\n') && !warning.contains("evil"),
        "{warning}"
    );
    // A workflow cannot switch the owner's leave off either: the file decides both ways.
    let env = env_of(&[(ALLOW_UNCONFINED_NVRTC, "0")]);
    let s = resolve(true, &env, || file(&[(ALLOW_UNCONFINED_NVRTC, "1")]));
    assert_eq!(s.get(ALLOW_UNCONFINED_NVRTC), Some(OsStr::new("1")));
    assert!(s.warning.is_some());
}

#[test]
fn in_actions_the_runner_file_decides_silently_when_the_environment_agrees() {
    // As the runner loads it: the same values in the environment, or none there (action.yml
    // or a step may unset them): no warning.
    for env in [
        env_of(&[(ALLOW_UNCONFINED_NVRTC, "1"), (PYTHON, "/opt/py")]),
        env_of(&[]),
        env_of(&[(PYTHON, "")]),
    ] {
        let s = resolve(true, &env, || {
            file(&[(ALLOW_UNCONFINED_NVRTC, "1"), (PYTHON, "/opt/py")])
        });
        assert_eq!(s.get(ALLOW_UNCONFINED_NVRTC), Some(OsStr::new("1")));
        assert_eq!(s.get(PYTHON), Some(OsStr::new("/opt/py")));
        assert_eq!(s.get(CACHE_DIR), None);
        assert_eq!(s.warning, None);
    }
    // A runner without a file and a job without the settings: nothing to say.
    for why in [
        NoRunnerFile::NoRunner,
        NoRunnerFile::Missing {
            path: "/r/.env".into(),
        },
    ] {
        let s = resolve(true, &env_of(&[(PYTHON, "")]), || Err(why.clone()));
        assert_eq!(s.values, vec![]);
        assert_eq!(s.warning, None, "{why:?}");
    }
}

#[test]
fn in_actions_a_refused_file_gives_no_setting_and_says_why() {
    let refused = NoRunnerFile::Refused {
        path: "/opt/actions-runner/.env".into(),
        why: Refusal::Writable { mode: 0o666 },
    };
    let s = resolve(true, &env_of(&[]), || Err(refused.clone()));
    assert_eq!(s.values, vec![]);
    assert_eq!(
        s.warning.as_deref(),
        Some(
            "warning: the runner's environment file /opt/actions-runner/.env is not used: users other than its owner can write it (mode 666), so no runner setting (CI_GATE_ALLOW_UNCONFINED_NVRTC, CI_GATE_PYTHON, CI_GATE_CACHE_DIR) applies in this job (docs/RUNNER.md, \"Runner settings\")"
        )
    );
    // With a value in the environment: still one line, naming both.
    let s = resolve(true, &env_of(&[(ALLOW_UNCONFINED_NVRTC, "1")]), || {
        Err(refused.clone())
    });
    assert_eq!(s.get(ALLOW_UNCONFINED_NVRTC), None);
    let warning = s.warning.unwrap();
    assert!(
        warning.starts_with("warning: CI_GATE_ALLOW_UNCONFINED_NVRTC in this job's environment is ignored")
            && warning.contains("/opt/actions-runner/.env is not used: users other than its owner can write it (mode 666)"),
        "{warning}"
    );
}

#[test]
fn a_path_with_a_line_break_stays_on_one_line() {
    let why = NoRunnerFile::Missing {
        path: "/opt/run\nner/.env".into(),
    };
    let s = resolve(true, &env_of(&[(PYTHON, "/x")]), || Err(why));
    let warning = s.warning.unwrap();
    assert!(
        !warning.contains('\n') && warning.contains("/opt/run\\nner/.env does not exist"),
        "{warning}"
    );
}
