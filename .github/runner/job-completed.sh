#!/usr/bin/env bash
# The cleanup a persistent GPU runner needs after every job (docs/RUNNER.md, "What one
# persistent runner costs in trust"). Install it outside the runner's directory, owned by
# root and not writable by the runner's user, and name it in the runner's .env:
#
#   ACTIONS_RUNNER_HOOK_JOB_COMPLETED=/usr/local/libexec/ci-gate/job-completed.sh
#
# The runner runs it as its own user after each job, with the job's RUNNER_TEMP,
# RUNNER_WORKSPACE and HOME. It removes what a job can leave where the runner's user can
# write, so that no later job (a baseline update among them) uses anything an earlier job
# left: the job's workspace, every action the runner downloaded (each job downloads its
# actions again, by the commit it pins), the tool cache, the user's home, and the user's
# files in /tmp and /dev/shm (CI_GATE_CLEAN_TMP lists other directories). The runner itself
# empties RUNNER_TEMP (ci-gate's NVRTC cache, results, build directories) and ends the job's
# processes.
set -euo pipefail

fail() { echo "job-completed.sh: $*" >&2; exit 1; }

: "${RUNNER_TEMP:?job-completed.sh runs as the job-completed hook of a runner (RUNNER_TEMP is unset)}"
: "${HOME:?HOME is unset}"
# The runner's work directory is the parent of RUNNER_TEMP (<work>/_temp).
[ "$(basename -- "$RUNNER_TEMP")" = _temp ] || fail "RUNNER_TEMP=$RUNNER_TEMP is not <work>/_temp: not cleaning."
work="$(cd -- "$(dirname -- "$RUNNER_TEMP")" && pwd -P)"
[ "$work" != / ] || fail "the work directory would be /: not cleaning."

# Everything is checked before anything is removed: the job's workspace (its repository's
# directory under the work directory) and the runner user's home, where nothing a job needs
# lives (the runner, its .env and the tools are elsewhere and not writable by this user).
ws=""
if [ -n "${RUNNER_WORKSPACE:-}" ] && [ -d "$RUNNER_WORKSPACE" ]; then
  ws="$(cd -- "$RUNNER_WORKSPACE" && pwd -P)"
  case "$ws" in
    "$work"/?*) ;;
    *) fail "RUNNER_WORKSPACE=$RUNNER_WORKSPACE is not under $work: not cleaning." ;;
  esac
fi
home="$(cd -- "$HOME" && pwd -P)"
case "$home" in
  / | "$work" | "$work"/*) fail "HOME=$HOME is / or inside the work directory: not cleaning." ;;
esac

if [ -n "$ws" ]; then
  find "$ws" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
fi
rm -rf -- "$work/_actions" "$work/_tool"
find "$home" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +

# This user's files in the shared temporary directories. The .NET runtime's own files of the
# running runner stay, and so does ci-gate's GPU lock directory (/tmp/ci-gate-locks-<uid>):
# a lock another runner's ci-gate holds on this machine must stay the file others lock.
for dir in ${CI_GATE_CLEAN_TMP:-/tmp /dev/shm}; do
  [ -d "$dir" ] || continue
  find "$dir" -mindepth 1 -maxdepth 1 -user "$(id -u)" \
    ! -name 'clr-debug-pipe-*' ! -name 'dotnet-diagnostic-*' ! -name '.dotnet' \
    ! -name 'ci-gate-locks-*' \
    -exec rm -rf -- {} +
done
echo "job-completed.sh: cleaned the workspace, $work/_actions, $work/_tool, $home and this user's temporary files"
