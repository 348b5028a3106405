#!/usr/bin/env bash
# Runs flock's whole test suite on a fresh machine: installs what the tests
# need (bubblewrap for the sandbox tests, python3 for the python handler,
# chromium for the browser backend, Xvfb and python3-tk for the desktop
# backend),
# then vets and tests every package, with the race detector on the engine.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# e2e's TestDocExamples runs the README's curl lines in a copy of the
# checkout it lists with git.
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v git >/dev/null 2>&1 || need+=(git)
# handlers/files' TestWritesSyncTheDirectory watches the writes' fsyncs.
command -v strace >/dev/null 2>&1 || need+=(strace)
# e2e's TestSecretsOutOfReachAsUser runs flock serve as another user.
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# AgentFlow's Python client drives `flock sandbox` in cli's e2e test.
[ -d /usr/lib/python3/dist-packages/httpx ] || need+=(python3-httpx)
[ -d /usr/lib/python3/dist-packages/pydantic ] || need+=(python3-pydantic)
# The model gateway's real-client checks drive the OpenAI SDK for Node and
# the OpenAI Agents SDK for JavaScript (npm install openai, @openai/agents
# and zod in a temp dir, testkit.NPMInstall).
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
# The browser backend's tests and the viewer's (viewer/) drive Debian's
# headless chromium.
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
# The desktop (vm) backend's tests run Xvfb displays with a Tk application.
command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
python3 -c 'import tkinter' >/dev/null 2>&1 || need+=(python3-tk)
# Tests that need an installed binary fail instead of skipping when it is
# missing, unless the packages could not be installed (warning below).
export FLOCK_TEST_REQUIRE_BINARIES=1
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "installing ${need[*]}"
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	else
		echo "warning: missing ${need[*]}; the tests that need them will be skipped" >&2
		unset FLOCK_TEST_REQUIRE_BINARIES
	fi
fi

# Tests that need one of these binaries fail, rather than skip, when it
# is missing under this script.
export FLOCK_TEST_SCRIPT=1

go vet ./...
go test -count=1 -timeout 20m ./...
go test -count=1 -race -timeout 20m ./state/... ./workflows/... ./server/... ./handlers/... ./internal/shell ./internal/pyinterp
