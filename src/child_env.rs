//! The environment of every process ci-gate starts: an allow-list, never the parent's whole
//! environment. On a runner the parent's environment holds tokens (`GITHUB_TOKEN`,
//! `ACTIONS_RUNTIME_TOKEN`, `ACTIONS_ID_TOKEN_REQUEST_TOKEN`, a `GIT_CONFIG_VALUE_0` carrying
//! an `Authorization` header, ...) that no child needs, and some children run the pull
//! request's kernels: what a child is not given, nothing in it can read or leak.
//!
//! It uses nothing else of the crate but `runner_settings`, whose resolved values a GPU
//! child is given in place of the environment's.

use std::ffi::OsString;
use std::process::Command;

use crate::runner_settings;

/// What a child is, and so what it may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Child {
    /// A plain utility (`kill`): the path, home, locale and temporary directory only.
    Plain,
    /// git reading the repository: as `Plain`, plus the variables that say which repository
    /// (a user's `GIT_DIR`, `GIT_WORK_TREE`); never `GIT_CONFIG_*`, which can carry a token.
    Git,
    /// Anything that loads CUDA or runs ci-gate again (the peer worker, `local` children,
    /// ncu, compute-sanitizer, `kernel-run`): as `Plain`, plus the loader path, the CUDA and
    /// NVIDIA driver settings, the NVRTC cache's location, ci-gate's runner settings (never
    /// the `CI_GATE_*` variables that select test behaviour), and the commit a results file
    /// records (`GITHUB_SHA`).
    Gpu,
}

/// Every child: finding programs, the home directory (git's and ncu's own settings), the
/// locale and where temporary files go.
const PLAIN: &[&str] = &["PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR"];
const PLAIN_PREFIXES: &[&str] = &["LC_"];

const GIT: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// `GITHUB_ACTIONS` and `RUNNER_TEMP` place the NVRTC cache in the job's own temporary
/// directory (`kernel::compile`); `GITHUB_SHA` is the commit a `local` child records, so that
/// its results agree with the parent's.
///
/// Of ci-gate's own variables only the runner's settings pass, by name (an allow-list, so a
/// variable added one day passes only when someone decides it should), and with the values
/// this process uses ([`runner_settings`]: in GitHub Actions the runner's own file's, never a
/// workflow's), not the environment's:
/// - `CI_GATE_CACHE_DIR`: where compiled kernels are cached (`kernel::compile`);
/// - `CI_GATE_PYTHON`: the interpreter of the PyTorch peer worker (`run::peer`);
/// - `CI_GATE_ALLOW_UNCONFINED_NVRTC`: the runner owner's leave to compile where the sandbox
///   cannot confine NVRTC (`kernel::sandbox`), which a `--devices` child compiling needs.
///
/// Never the variables that select test behaviour: `CI_GATE_SIMULATE` (the simulated GPU; a
/// simulated `--devices` child is given its own seed explicitly, `run::BackendChoice::pass_to_child`),
/// `CI_GATE_NVRTC_LINEINFO` (set explicitly by `sanitize` for its workers), and the test
/// suite's and benches' own (`CI_GATE_FUZZ_*`, `CI_GATE_CALIBRATION*`, `CI_GATE_CANARY`,
/// `CI_GATE_GOLDEN_DIR`, `CI_GATE_VARIANTS`, `CI_GATE_BIN`, `CI_GATE_REQUIRE_NVRTC`), nor
/// `CI_GATE_SHARDS` (the workflow's matrix) or `CI_GATE_COMMENT_AUTHOR` (the comment
/// command's, which no GPU child runs).
const GPU: &[&str] = &[
    "LD_LIBRARY_PATH",
    "XDG_CACHE_HOME",
    "RUNNER_TEMP",
    "GITHUB_ACTIONS",
    "GITHUB_SHA",
    "NO_COLOR",
    runner_settings::CACHE_DIR,
    runner_settings::PYTHON,
    runner_settings::ALLOW_UNCONFINED_NVRTC,
];
const GPU_PREFIXES: &[&str] = &["CUDA_", "NVIDIA_"];

/// Parts of a name that mark a secret: such a variable is never passed on, whatever list
/// would otherwise allow it (a `CI_GATE_TOKEN` someone adds one day included).
const SECRET_MARKS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "AUTH",
    "KEY",
];

/// Whether a variable named `name` may reach a child of kind `child`.
pub(crate) fn passes(name: &str, child: Child) -> bool {
    let upper = name.to_ascii_uppercase();
    if SECRET_MARKS.iter().any(|m| upper.contains(m)) {
        return false;
    }
    let listed = |names: &[&str], prefixes: &[&str]| {
        names.contains(&name) || prefixes.iter().any(|p| name.starts_with(p))
    };
    listed(PLAIN, PLAIN_PREFIXES)
        || match child {
            Child::Plain => false,
            Child::Git => listed(GIT, &[]),
            Child::Gpu => listed(GPU, GPU_PREFIXES),
        }
}

/// Clears `cmd`'s environment and gives it only the variables of this process that
/// [`passes`] allows for `child`, the runner settings with the values this process uses
/// ([`runner_settings::resolved_vars`]). Call it before any `cmd.env(..)` of the caller's
/// own: clearing also drops those.
pub(crate) fn restrict(cmd: &mut Command, child: Child) -> &mut Command {
    restrict_with_settings(cmd, child, std::env::vars_os(), || {
        runner_settings::resolved_vars().collect()
    })
}

/// [`restrict_from`], the runner settings among `vars` replaced by those `settings` gives
/// (called only for a GPU child, the one kind they reach: a git child is started by commands
/// that never read them).
fn restrict_with_settings(
    cmd: &mut Command,
    child: Child,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    settings: impl FnOnce() -> Vec<(OsString, OsString)>,
) -> &mut Command {
    let vars = vars.into_iter().filter(|(name, _)| {
        !runner_settings::NAMES
            .iter()
            .any(|n| name.as_os_str() == std::ffi::OsStr::new(n))
    });
    if child == Child::Gpu {
        restrict_from(cmd, child, vars.chain(settings()))
    } else {
        restrict_from(cmd, child, vars)
    }
}

/// [`restrict`] with the parent's variables given (tests).
pub(crate) fn restrict_from(
    cmd: &mut Command,
    child: Child,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> &mut Command {
    cmd.env_clear();
    for (name, value) in vars {
        // A name that is not UTF-8 is on no list.
        if name.to_str().is_some_and(|n| passes(n, child)) {
            cmd.env(name, value);
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_never_pass_and_each_child_gets_its_list() {
        for secret in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "GH_ENTERPRISE_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "ACTIONS_RUNTIME_URL",
            "ACTIONS_CACHE_URL",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_CONFIG_VALUE_0",
            "CI_GATE_TOKEN",
            "CUDA_SECRET",
            "NVIDIA_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_AUTH_SOCK",
            "GITHUB_STEP_SUMMARY",
            "GITHUB_OUTPUT",
            "GITHUB_ENV",
            "PYTHONPATH",
            "LD_PRELOAD",
        ] {
            for child in [Child::Plain, Child::Git, Child::Gpu] {
                assert!(!passes(secret, child), "{secret} reaches {child:?}");
            }
        }
        for child in [Child::Plain, Child::Git, Child::Gpu] {
            for ok in ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"] {
                assert!(passes(ok, child), "{ok} {child:?}");
            }
        }
        assert!(passes("GIT_DIR", Child::Git) && !passes("GIT_DIR", Child::Gpu));
        for gpu in [
            "LD_LIBRARY_PATH",
            "CUDA_VISIBLE_DEVICES",
            "CUDA_DEVICE_ORDER",
            "NVIDIA_VISIBLE_DEVICES",
            "CI_GATE_CACHE_DIR",
            "CI_GATE_PYTHON",
            "CI_GATE_ALLOW_UNCONFINED_NVRTC",
            "RUNNER_TEMP",
            "GITHUB_ACTIONS",
            "XDG_CACHE_HOME",
        ] {
            assert!(passes(gpu, Child::Gpu), "{gpu}");
            assert!(
                !passes(gpu, Child::Plain) && !passes(gpu, Child::Git),
                "{gpu}"
            );
        }
    }

    /// ci-gate's variables that select test behaviour reach no child; a name that only
    /// starts like a runner setting is not one.
    #[test]
    fn test_behaviour_never_reaches_a_child() {
        for test in [
            "CI_GATE_SIMULATE",
            "CI_GATE_NVRTC_LINEINFO",
            "CI_GATE_FUZZ_CASES",
            "CI_GATE_FUZZ_SEED",
            "CI_GATE_FUZZ_RANDOM",
            "CI_GATE_CALIBRATION",
            "CI_GATE_CALIBRATION_RUNS",
            "CI_GATE_CANARY",
            "CI_GATE_GOLDEN_DIR",
            "CI_GATE_VARIANTS",
            "CI_GATE_SHARDS",
            "CI_GATE_BIN",
            "CI_GATE_REQUIRE_NVRTC",
            "CI_GATE_COMMENT_AUTHOR",
            "CI_GATE_MARKER",
            "CI_GATE_CACHE_DIR_X",
            "CI_GATE_PYTHONX",
        ] {
            for child in [Child::Plain, Child::Git, Child::Gpu] {
                assert!(!passes(test, child), "{test} reaches {child:?}");
            }
        }
    }

    /// A GPU child gets the runner settings this process uses, not the environment's (in
    /// GitHub Actions a workflow's `env:` may hold others); other children get none of them.
    #[test]
    fn a_gpu_child_gets_the_resolved_runner_settings() {
        let parent = [
            ("PATH", "/usr/bin:/bin"),
            ("CI_GATE_PYTHON", "/workflow/python"),
            ("CI_GATE_ALLOW_UNCONFINED_NVRTC", "1"),
            ("CI_GATE_CACHE_DIR", "/workflow/cache"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let mut cmd = Command::new("true");
        restrict_with_settings(&mut cmd, Child::Gpu, parent.clone(), || {
            vec![("CI_GATE_PYTHON".into(), "/runner/python".into())]
        });
        let mut seen: Vec<(String, String)> = cmd
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("CI_GATE_PYTHON".to_owned(), "/runner/python".to_owned()),
                ("PATH".to_owned(), "/usr/bin:/bin".to_owned())
            ]
        );
        for child in [Child::Plain, Child::Git] {
            let mut cmd = Command::new("true");
            restrict_with_settings(&mut cmd, child, parent.clone(), || {
                panic!("settings resolved for a {child:?} child")
            });
            let names: Vec<_> = cmd.get_envs().map(|(k, _)| k.to_owned()).collect();
            assert_eq!(names, [OsString::from("PATH")], "{child:?}");
        }
    }

    /// Through a real process: `env` started with a restricted environment prints only what
    /// was allowed, whatever the parent held.
    #[test]
    fn a_child_sees_only_the_allowed_variables() {
        let parent = [
            (
                "PATH",
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            ),
            ("GITHUB_TOKEN", "ghs_parentsecret".to_owned()),
            ("ACTIONS_RUNTIME_TOKEN", "runtime-secret".to_owned()),
            ("CUDA_VISIBLE_DEVICES", "1".to_owned()),
            ("CI_GATE_CACHE_DIR", "/runner/cache".to_owned()),
            ("CI_GATE_SIMULATE", "1".to_owned()),
            ("CI_GATE_FUZZ_CASES", "5".to_owned()),
            ("UNLISTED", "x".to_owned()),
        ];
        let mut cmd = Command::new("env");
        restrict_from(
            &mut cmd,
            Child::Gpu,
            parent.iter().map(|(k, v)| (k.into(), v.into())),
        );
        let Ok(out) = cmd.output() else {
            eprintln!("SKIPPED: no `env` program here");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("CUDA_VISIBLE_DEVICES=1"), "{text}");
        assert!(text.contains("CI_GATE_CACHE_DIR=/runner/cache"), "{text}");
        assert!(text.lines().any(|l| l.starts_with("PATH=")), "{text}");
        for absent in [
            "secret",
            "GITHUB_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "UNLISTED",
            "CI_GATE_SIMULATE",
            "CI_GATE_FUZZ_CASES",
        ] {
            assert!(!text.contains(absent), "{absent} in {text}");
        }
    }
}
