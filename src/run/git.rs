//! The base side of an A/B run ([`resolve_base`]): `--base-kernels DIR`, or from git the
//! merge-base with the default branch or any revision, read with `git show` into a temporary
//! directory. The working tree is never touched, and revisions are passed to git as
//! arguments (never through a shell).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::child_env::{Child, restrict};
use crate::kernel::KernelDir;

/// The base side of an A/B run: a directory holding its `kernels/` files.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaseKernels {
    pub dir: PathBuf,
    /// What it is, for the report: a git revision or the directory.
    pub source: String,
    pub commit: Option<String>,
}

/// The kernel files a base needs: its timed kernel only (the harness, reference.cu and
/// util.cu, is built into ci-gate and never read from a commit).
const KERNEL_FILES: [&str; 1] = [crate::kernel::TIMED_FILE];

fn git(args: &[&str]) -> Option<String> {
    let out = restrict(&mut Command::new("git"), Child::Git)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A revision as the user wrote it, refused where git could read it as an option.
fn check_rev(rev: &str) -> Result<()> {
    if rev.is_empty() || rev.starts_with('-') || rev.chars().any(|c| c.is_control()) {
        bail!("--base {rev:?} is not a git revision");
    }
    Ok(())
}

/// The full commit a revision names, if this is a repository that has it.
pub(crate) fn resolve(rev: &str) -> Option<String> {
    check_rev(rev).ok()?;
    git(&[
        "rev-parse",
        "--verify",
        "--quiet",
        &format!("{rev}^{{commit}}"),
    ])
}

/// Whether `commit` is a full commit id as git prints it (40 or 64 hex digits): what every
/// id read back from git is checked against before it is used or shown.
pub(crate) fn is_full_commit(commit: &str) -> bool {
    matches!(commit.len(), 40 | 64) && commit.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The commits on the first-parent path from `good` (left out) to `bad` (included), oldest
/// first: `git rev-list --first-parent --reverse good..bad`. `None` where git cannot list
/// them or prints anything but commit ids.
pub(crate) fn first_parent_path(good: &str, bad: &str) -> Option<Vec<String>> {
    if !is_full_commit(good) || !is_full_commit(bad) {
        return None;
    }
    let out = git(&[
        "rev-list",
        "--first-parent",
        "--reverse",
        &format!("{good}..{bad}"),
    ])?;
    let commits: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    commits.iter().all(|c| is_full_commit(c)).then_some(commits)
}

/// The first parent of `commit`, if it has one.
pub(crate) fn first_parent(commit: &str) -> Option<String> {
    if !is_full_commit(commit) {
        return None;
    }
    git(&["rev-parse", "--verify", "--quiet", &format!("{commit}^1")]).filter(|p| is_full_commit(p))
}

/// Whether `ancestor` is an ancestor of `commit` (or the same commit).
pub(crate) fn is_ancestor(ancestor: &str, commit: &str) -> bool {
    is_full_commit(ancestor)
        && is_full_commit(commit)
        && git(&["merge-base", "--is-ancestor", ancestor, commit]).is_some()
}

/// The subject line of `commit` as git has it (`git log -1 --format=%s`): untrusted text,
/// to be escaped wherever it is shown and never part of a path. Empty where git has none.
pub(crate) fn subject(commit: &str) -> String {
    if !is_full_commit(commit) {
        return String::new();
    }
    git(&["log", "-1", "--format=%s", commit]).unwrap_or_default()
}

/// The merge-base of HEAD with the default branch (origin's HEAD, else `main`, else
/// `master`); `None` outside a repository or where none of those exists.
pub(crate) fn default_base() -> Option<String> {
    let branch = git(&["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"]).or_else(|| {
        ["origin/main", "main", "origin/master", "master"]
            .into_iter()
            .find(|b| resolve(b).is_some())
            .map(str::to_owned)
    })?;
    git(&["merge-base", "HEAD", &branch])
}

/// `dir` relative to the repository's top level (for `git show REV:path`).
fn path_in_repo(dir: &Path) -> Result<String> {
    let top = git(&["rev-parse", "--show-toplevel"]).context("not inside a git repository")?;
    let top = Path::new(&top)
        .canonicalize()
        .with_context(|| format!("cannot resolve the repository root {top}"))?;
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve the kernels directory {}", dir.display()))?;
    let rel = dir.strip_prefix(&top).with_context(|| {
        format!(
            "the kernels directory {} is outside the repository {}",
            dir.display(),
            top.display()
        )
    })?;
    let rel = rel.to_string_lossy().replace('\\', "/");
    Ok(if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    })
}

/// Writes the kernel files of `commit` (under the path `kernels_dir` has in this repository,
/// or `kernels/` where it lies outside, as a pull request's checkout does) into `into`, and
/// describes them as a base named `label`.
pub(crate) fn export_kernels(
    commit: &str,
    label: &str,
    kernels_dir: &Path,
    into: &Path,
) -> Result<BaseKernels> {
    let prefix = path_in_repo(kernels_dir).unwrap_or_else(|_| "kernels/".into());
    for file in KERNEL_FILES {
        let spec = format!("{commit}:{prefix}{file}");
        let out = restrict(&mut Command::new("git"), Child::Git)
            .args(["show", &spec])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("cannot run git")?;
        if !out.status.success() {
            bail!("{label} has no {prefix}{file}: cannot build the base kernels from it");
        }
        std::fs::write(into.join(file), &out.stdout)
            .with_context(|| format!("cannot write {}", into.join(file).display()))?;
    }
    Ok(BaseKernels {
        dir: PathBuf::from(into),
        source: label.to_owned(),
        commit: Some(commit.to_owned()),
    })
}

/// The base kernels a run measures against, with the temporary directory that holds them
/// when they were read from git (removed when this is dropped).
pub(crate) struct ResolvedBase {
    pub kernels: Option<BaseKernels>,
    pub note: Option<String>,
    _tmp: Option<tempfile::TempDir>,
}

/// Where the base kernels of a run come from, as the command asked (`--no-base`,
/// `--base-kernels`, `--base`, or none of them).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BaseChoice {
    /// No A/B: the stored baseline decides (`--no-base`, said in a note).
    NoBase,
    /// The kernels in this directory (`--base-kernels DIR`).
    Dir(PathBuf),
    /// The kernels of this git revision (`--base REF`).
    Rev(String),
    /// None asked: the command's default ([`resolve_base`]'s `merge_base_by_default`).
    Default,
}

/// Resolves the base `choice`. Without one, `local` takes the merge-base with the default
/// branch (`merge_base_by_default`) and `ci` none.
pub(crate) fn resolve_base(
    choice: &BaseChoice,
    kernels: &Path,
    merge_base_by_default: bool,
) -> Result<ResolvedBase> {
    let none = |note: Option<String>| ResolvedBase {
        kernels: None,
        note,
        _tmp: None,
    };
    let rev = match choice {
        BaseChoice::NoBase => {
            return Ok(none(Some(
                "--no-base: no A/B, the stored baseline decides".into(),
            )));
        }
        BaseChoice::Dir(dir) => {
            if !KernelDir::new(dir).timed().is_file() {
                bail!(
                    "--base-kernels {}: no attention.cu in that directory",
                    dir.display()
                );
            }
            return Ok(ResolvedBase {
                kernels: Some(BaseKernels {
                    dir: dir.clone(),
                    source: dir.display().to_string(),
                    commit: None,
                }),
                note: None,
                _tmp: None,
            });
        }
        BaseChoice::Rev(rev) => Some(rev),
        BaseChoice::Default => None,
    };
    let (commit, label) = match rev {
        Some(rev) => {
            let commit = resolve(rev)
                .with_context(|| format!("--base {rev:?}: no such commit in this repository"))?;
            (commit, rev.clone())
        }
        None if merge_base_by_default => match default_base() {
            Some(c) => {
                let label = format!("merge-base {}", c.chars().take(12).collect::<String>());
                (c, label)
            }
            None if git(&["rev-parse", "--git-dir"]).is_none() => {
                return Ok(none(Some(
                    "not in a git repository, so there is no base to measure against: no A/B, the stored baseline decides; pass --base-kernels DIR (the kernels to compare with)".into(),
                )));
            }
            None => {
                return Ok(none(Some(
                    "no merge-base with a default branch (main, master or origin's HEAD) was found: no A/B, the stored baseline decides; pass --base REF or --base-kernels DIR".into(),
                )));
            }
        },
        None => return Ok(none(None)),
    };
    let tmp = tempfile::Builder::new()
        .prefix("ci-gate-base-")
        .tempdir()
        .context("cannot create a temporary directory for the base kernels")?;
    let k = export_kernels(&commit, &label, kernels, tmp.path())?;
    Ok(ResolvedBase {
        kernels: Some(k),
        note: None,
        _tmp: Some(tmp),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_not_revisions() {
        assert!(check_rev("--output=/tmp/x").is_err());
        assert!(check_rev("").is_err());
        assert!(check_rev("main\n").is_err());
        assert!(check_rev("HEAD~1").is_ok());
        assert!(resolve("-x").is_none());
    }
}
