package reaper

import (
	"os"
	"os/exec"
)

// ArgvZero is the argv[0] with which the server's binary is re-executed as
// a reaper. The package's init function looks for it.
const ArgvZero = "flock-reaper"

// Spec describes the child a reaper runs.
type Spec struct {
	// Path is the executable, resolved (see exec.LookPath); Args its
	// argv, Args[0] included.
	Path string
	Args []string
	// Dir and Env are the child's working directory and environment.
	Dir string
	Env []string
	// Stdin, Stdout and Stderr become the child's fds 0-2; ExtraFiles
	// fds 3 and up. The reaper closes its own copies once the child runs.
	Stdin, Stdout, Stderr *os.File
	ExtraFiles            []*os.File
	// TTY starts the child in a new session with Stdin as its controlling
	// terminal (a shell on a pty). Otherwise the child leads a new
	// process group in the reaper's session.
	TTY bool
}

// Process is a running reaper and, under it, the child of its Spec. Its
// methods may be called concurrently; Wait must be called exactly once.
type Process struct {
	cmd *exec.Cmd
}

// Pid returns the reaper's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Wait waits for the reaper to exit, which it does after the child exited
// (or was killed) and every descendant is gone. The state is the child's:
// its exit code, or the signal that killed it.
func (p *Process) Wait() (*os.ProcessState, error) {
	err := p.cmd.Wait()
	return p.cmd.ProcessState, err
}
