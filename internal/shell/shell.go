package shell

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"

	"github.com/flockrun/flock/internal/reaper"
)

// Fixed file descriptors inside the shell. They are closed for the
// commands themselves (only their stderr points at the pipe).
const (
	fdOut = 61 // a copy of the pty: where the stdout marker goes
	fdErr = 62 // the stderr pipe
)

// interruptGrace is how long a timed-out or cancelled command gets after
// SIGINT before the process group is killed. (A variable: a test lengthens
// it to tell a marker that came from a grace period that ran out.)
var interruptGrace = time.Second

// Timing of the kill path.
const (
	// interruptResend is how often the marker line is sent again while
	// waiting for it after SIGINT (see interrupt).
	interruptResend = 200 * time.Millisecond
	// drainTimeout bounds reading what is left in the pty and the pipe
	// after a kill; a process that escaped the group (setsid) can hold
	// them open forever.
	drainTimeout = 250 * time.Millisecond
	// startTimeout bounds waiting for a new shell's ready marker.
	startTimeout = 15 * time.Second
)

// shell is one live bash process on a pty. Its methods are called by the
// session holding it, one at a time; kill and close are also safe to call
// concurrently with them.
type shell struct {
	proc *reaper.Process // the shell's reaper; the shell is its child
	ptmx *os.File        // the pty master: commands in, stdout out
	errR *os.File        // read end of the stderr pipe
	dir  string          // private temp dir holding the command file
	file string          // the command file, rewritten for each command
	cmdf *os.File        // the command file, kept open: rewriting costs no open/close

	out    chan []byte   // chunks read from ptmx; closed at EOF/EIO
	errc   chan []byte   // chunks read from errR; closed at EOF
	exited chan struct{} // closed once the process is reaped
	status int           // exit status, valid once exited is closed

	quit      chan struct{} // closed by close to stop the readers
	wg        sync.WaitGroup
	closeOnce sync.Once

	// carryOut and carryErr hold bytes that followed the previous
	// command's markers (background jobs); they lead the next command's
	// output.
	carryOut, carryErr []byte
}

// newCommandDir creates the private directory that holds a shell's command
// file: in /dev/shm when it is usable (rewriting a file on tmpfs costs a few
// microseconds; on a disk file system the truncate costs about 100 µs),
// else in os.TempDir().
func newCommandDir() (string, error) {
	base := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "flock-bash-")
	if err != nil && base != "" {
		dir, err = os.MkdirTemp("", "flock-bash-")
	}
	if err != nil {
		return "", fmt.Errorf("command dir: %w", err)
	}
	return dir, nil
}

// startShell starts argv on a new pty in workDir with env, using dir (from
// newCommandDir, owned by the shell from now on, removed on failure) for
// its command file. The caller must wait for the ready marker (see
// session.startLocked) and eventually call close.
func startShell(argv []string, workDir, dir string, env []string) (_ *shell, err error) {
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	defer func() { _ = tty.Close() }() // the child holds its own copies
	defer func() {
		if err != nil {
			_ = ptmx.Close()
		}
	}()
	// Setsize goes through Fd(), which makes the file blocking;
	// configureTTY makes it non-blocking again, so it must come after.
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200}); err != nil {
		return nil, fmt.Errorf("pty size: %w", err)
	}
	if err := configureTTY(ptmx); err != nil {
		return nil, fmt.Errorf("configure pty: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	defer func() { _ = errW.Close() }() // the child holds its own copy
	defer func() {
		if err != nil {
			_ = errR.Close()
		}
	}()

	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	// The shell runs under a reaper (package reaper), in a new session
	// whose controlling terminal is the pty: it leads its own process
	// group, and whatever it starts, even in another session, ends with it.
	proc, err := reaper.Start(reaper.Spec{
		Path: path, Args: argv, Dir: workDir, Env: env,
		Stdin: tty, Stdout: tty, Stderr: tty,
		ExtraFiles: []*os.File{errW}, // fd 3, moved to fdErr by the init line
		TTY:        true,
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}

	cmdf, err := os.OpenFile(filepath.Join(dir, "cmd"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		proc.Kill()
		_, _ = proc.Wait()
		return nil, fmt.Errorf("command file: %w", err)
	}
	sh := &shell{
		cmdf:   cmdf,
		proc:   proc,
		ptmx:   ptmx,
		errR:   errR,
		dir:    dir,
		file:   filepath.Join(dir, "cmd"),
		out:    make(chan []byte, 4),
		errc:   make(chan []byte, 4),
		exited: make(chan struct{}),
		quit:   make(chan struct{}),
	}
	sh.wg.Add(3)
	go sh.pump(ptmx, sh.out)
	go sh.pump(errR, sh.errc)
	go sh.reap()
	return sh, nil
}

// pump copies f into ch until f ends or the shell is closed. On Linux a
// read of the pty master returns EIO once every slave fd is closed; that
// is the end of the stream like any other error.
func (sh *shell) pump(f *os.File, ch chan<- []byte) {
	defer sh.wg.Done()
	defer close(ch)
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			b := make([]byte, n)
			copy(b, buf[:n])
			select {
			case ch <- b:
			case <-sh.quit:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// reap waits for the reaper, which exits once the shell and everything
// it started are gone, and records the shell's status. A shell killed by a
// signal reports 128+signal, as bash does for its children.
func (sh *shell) reap() {
	defer sh.wg.Done()
	st, _ := sh.proc.Wait()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sh.status = 128 + int(ws.Signal())
	} else {
		sh.status = st.ExitCode()
	}
	close(sh.exited)
}

// send writes the command text to the command file and asks the shell to
// source it. The shell runs it with stdin from /dev/null and stderr on the
// pipe, then prints the marker for tok on both streams.
func (sh *shell) send(command, tok string) error {
	if err := resetTTY(sh.ptmx); err != nil {
		return fmt.Errorf("reset pty modes: %w", err)
	}
	if err := sh.cmdf.Truncate(0); err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	if _, err := sh.cmdf.WriteAt([]byte(command), 0); err != nil {
		return fmt.Errorf("write command: %w", err)
	}
	line := fmt.Sprintf("{ __flock_set_rc \"$__flock_rc\" && :; { builtin source %s; } </dev/null %d>&- %d>&-; } 2>&%d; __flock_rc=$?; __flock_mark %s\n",
		shellQuote(sh.file), fdOut, fdErr, fdErr, tok)
	if _, err := sh.ptmx.Write([]byte(line)); err != nil {
		return fmt.Errorf("write to shell: %w", err)
	}
	return nil
}

// initLine configures a fresh interactive shell and prints the ready
// marker for tok. cwd, when set, is where the previous shell of the session
// was.
func initLine(tok, cwd string) string {
	var b strings.Builder
	b.WriteString(initPrefix)
	// No job control: background jobs stay in the shell's process group.
	// No history: nothing records the marker tokens.
	b.WriteString("set +m +o history; unset HISTFILE; PS1= PS2= PROMPT_COMMAND=; shopt -s expand_aliases; ")
	fmt.Fprintf(&b, "exec %d>&1 %d>&3 3>&-; ", fdOut, fdErr)
	// __flock_set_rc restores $? for the next command; __flock_mark
	// prints the marker on both streams.
	b.WriteString(`__flock_set_rc() { return "$1"; }; `)
	// A SIGINT may reach the shell while it prints a marker (see
	// interrupt); bash acts on it between two steps of a builtin, and
	// printf takes one step per literal character of its format. So the
	// marker is formatted into __flock_m first and each copy is written
	// with one step: a marker comes out whole or not at all.
	// __flock_last remembers the last token marked, so that the marker
	// line interrupt sends may be sent again without printing twice. It
	// is set once both markers are out, not before: set first, a SIGINT
	// landing ahead of the stdout marker would leave the token recorded
	// and its marker never printed, and every later copy of the line
	// would print nothing.
	fmt.Fprintf(&b, `__flock_mark() { builtin printf -v __flock_m '__FLOCK_%%s_%%d_%%s_%%s__\n' "$1" "$__flock_rc" "$PWD" "$1"; `+
		`builtin printf %%s "$__flock_m" >&%d; builtin printf %%s "$__flock_m" >&%d; __flock_last=$1; }; `, fdErr, fdOut)
	b.WriteString("__flock_rc=0; ")
	if cwd != "" {
		fmt.Fprintf(&b, "builtin cd -- %s 2>/dev/null; ", shellQuote(cwd))
	}
	fmt.Fprintf(&b, "__flock_mark %s\n", tok)
	return b.String()
}

// shellQuote quotes s for bash as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// outcome is how waiting for a command ended.
type outcome int

const (
	completed outcome = iota // both markers seen
	exited                   // the shell exited (e.g. `exit`)
	timedOut                 // the timeout expired
	cancelled                // ctx was done
	closed                   // the session was closed
	ticked                   // the stops' tick fired
)

// collector gathers one command's two streams.
type collector struct {
	out, err     *capBuffer
	outSc, errSc *scanner
}

func newCollector(tok string, limit int) *collector {
	c := &collector{out: newCapBuffer(limit), err: newCapBuffer(limit)}
	c.outSc = newScanner(tok, c.out.Write)
	c.errSc = newScanner(tok, c.err.Write)
	return c
}

func (c *collector) done() bool { return c.outSc.Done && c.errSc.Done }

// wait reads both streams into c until both markers are seen or the
// command ends otherwise.
func (sh *shell) wait(ctx context.Context, closing <-chan struct{}, timeout <-chan time.Time, c *collector) outcome {
	if len(sh.carryOut) > 0 {
		c.outSc.Feed(sh.carryOut)
		sh.carryOut = nil
	}
	if len(sh.carryErr) > 0 {
		c.errSc.Feed(sh.carryErr)
		sh.carryErr = nil
	}
	// A stream that ends means the shell is gone; exited follows.
	o := sh.collect(c, func(bool, bool) bool { return c.done() },
		stops{exited: sh.exited, timer: timeout, ctx: ctx.Done(), closing: closing})
	if o == completed {
		sh.carryOut, sh.carryErr = c.outSc.Rest, c.errSc.Rest
	}
	return o
}

// stops are the events that end collect early; a nil channel never fires.
type stops struct {
	exited  <-chan struct{}  // the shell was reaped: exited
	timer   <-chan time.Time // a timeout or deadline: timedOut
	ctx     <-chan struct{}  // the caller's ctx is done: cancelled
	closing <-chan struct{}  // the session is closing: closed
	tick    <-chan time.Time // a periodic wake-up: ticked
}

// collect is the one loop that reads the shell's two streams: it feeds
// each chunk to c's scanner for its stream until done (given which streams
// are still open; a stream that ends is not read again) reports true,
// which returns completed, or until one of the stops fires, which returns
// the matching outcome.
func (sh *shell) collect(c *collector, done func(outOpen, errOpen bool) bool, s stops) outcome {
	out, errc := sh.out, sh.errc
	for !done(out != nil, errc != nil) {
		select {
		case b, ok := <-out:
			if !ok {
				out = nil
				continue
			}
			c.outSc.Feed(b)
		case b, ok := <-errc:
			if !ok {
				errc = nil
				continue
			}
			c.errSc.Feed(b)
		case <-s.exited:
			return exited
		case <-s.timer:
			return timedOut
		case <-s.tick:
			return ticked
		case <-s.ctx:
			return cancelled
		case <-s.closing:
			return closed
		}
	}
	return completed
}

// interrupt sends SIGINT to the foreground job (the whole group, job
// control being off), asks the shell for a marker once the command line
// is abandoned, and waits up to interruptGrace for it so that output the
// command prints on its way out is kept. The newline an interactive bash
// prints when its foreground job dies of SIGINT is not output of the
// command: the line breaks (CR or LF bytes) that end what arrived after
// the signal are dropped, and one newline is put back when there were
// several (the command's own final newline plus bash's). When SIGINT had
// to be sent twice (see below) and bash took longer than interruptResend
// to answer the first, it may print two, and one is kept wrongly.
func (sh *shell) interrupt(closing <-chan struct{}, tok string, c *collector) {
	before := c.out.total // bytes emitted so far (the scanner may still hold a few)
	defer func() {
		if !c.outSc.Done {
			return
		}
		newlines := 0
		for c.out.total > before {
			b, ok := c.out.last()
			if !ok || (b != '\n' && b != '\r') {
				break
			}
			if b == '\n' {
				newlines++
			}
			c.out.dropLast()
		}
		if newlines > 1 {
			c.out.Write([]byte{'\n'})
		}
	}()
	// SIGINT to the shell's process group; then the shell reads the marker
	// line once the interrupted command line is abandoned. Either may be
	// lost, so they are sent again every interruptResend until the marker
	// comes:
	//   - bash waits for a foreground child that exits normally after a
	//     SIGINT as if the child had handled it, and goes on with the
	//     command line: a SIGINT that lands as `touch` exits in
	//     `touch x; sleep 30` leaves the sleep running, unsignalled. So
	//     SIGINT is sent again when nothing at all came on stdout since
	//     the last one (a job that SIGINT killed makes bash print a line
	//     break; a command winding down prints its last words). Only then:
	//     each SIGINT that kills a job adds a line break bash prints.
	//   - a SIGINT that reaches bash itself while it reads input discards
	//     what it was reading, this line with it. So the line is sent
	//     every time; it prints the marker only if the shell has not
	//     printed it for tok yet, so copies read after the first print
	//     nothing.
	// The write deadline guards against a shell that never reads.
	line := []byte(fmt.Sprintf("__flock_r=$?; [[ $__flock_last == %s ]] || { __flock_rc=$__flock_r; __flock_mark %s; }\n", tok, tok))
	grace := time.NewTimer(interruptGrace)
	defer grace.Stop()
	resend := time.NewTicker(interruptResend)
	defer resend.Stop()
	sh.proc.Interrupt()
	for {
		fed := c.outSc.fed
		_ = sh.ptmx.SetWriteDeadline(time.Now().Add(interruptGrace))
		_, _ = sh.ptmx.Write(line)
		// Until the stdout marker, or stdout ends (the shell is gone).
		o := sh.collect(c, func(outOpen, _ bool) bool { return c.outSc.Done || !outOpen },
			stops{exited: sh.exited, timer: grace.C, tick: resend.C, closing: closing})
		if o != ticked {
			return
		}
		if c.outSc.fed == fed {
			sh.proc.Interrupt()
		}
	}
}

// kill kills the shell and every process it started, collects what is
// left in the streams into c (when c is not nil), then releases everything
// (see close).
func (sh *shell) kill(c *collector) {
	sh.proc.Kill()
	if c != nil {
		sh.drain(c)
	}
	sh.close()
}

// drain feeds the rest of both streams into c until they end or
// drainTimeout passes, then flushes held-back bytes.
func (sh *shell) drain(c *collector) {
	deadline := time.NewTimer(drainTimeout)
	defer deadline.Stop()
	sh.collect(c, func(outOpen, errOpen bool) bool { return !outOpen && !errOpen },
		stops{timer: deadline.C})
	c.outSc.Flush()
	c.errSc.Flush()
}

// close kills the shell and every process it started, waits for them and
// the reader goroutines, and removes the command dir. It is idempotent.
func (sh *shell) close() {
	sh.closeOnce.Do(func() {
		sh.proc.Kill()
		<-sh.exited
		close(sh.quit)
		// The master is non-blocking, so Close interrupts a pending Read
		// even if an escaped process still holds the slave open.
		_ = sh.ptmx.Close()
		_ = sh.errR.Close()
		sh.wg.Wait()
		_ = sh.cmdf.Close()
		_ = os.RemoveAll(sh.dir)
	})
}
