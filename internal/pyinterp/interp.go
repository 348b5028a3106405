package pyinterp

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/flockrun/flock/internal/reaper"
)

//go:embed driver.py
var driverSource string

// interp is one running interpreter process and the goroutines that serve
// it. It is created by startInterp and ends with kill; a session runs at
// most one call on it at a time.
type interp struct {
	proc  *reaper.Process // the interpreter's reaper; the driver is its child
	reqW  *os.File        // requests to the driver (its fd 3)
	respR *os.File        // replies from the driver (its fd 4)
	out   *os.File        // the driver's fd 1 and 2; unlinked, O_APPEND
	hello reply

	// replies carries decoded replies; it is closed when the reply stream
	// ends or breaks (readErr then holds why).
	replies chan reply
	readErr error // written before replies is closed
	// exited is closed once the process has been waited for (waitErr
	// then holds its status).
	exited  chan struct{}
	waitErr error
	// done is closed by kill to release the reader goroutine.
	done chan struct{}

	nextID   uint64 // guarded by the owning session's sem
	wg       sync.WaitGroup
	killOnce sync.Once
}

// startInterp starts argv (the interpreter, possibly wrapped) in workDir
// and waits for the driver's hello. On error everything started is torn
// down.
func startInterp(ctx context.Context, argv []string, workDir string, env []string) (_ *interp, err error) {
	out, err := newOutputFile()
	if err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		out.Close()
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		out.Close()
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	// The driver runs under a reaper (package reaper) that ends it and
	// everything it starts, even in another session, together.
	path, err := exec.LookPath(argv[0])
	var proc *reaper.Process
	if err == nil {
		proc, err = reaper.Start(reaper.Spec{
			Path: path, Args: argv, Dir: workDir, Env: env,
			Stdout: out, Stderr: out,
			ExtraFiles: []*os.File{reqR, respW}, // fds 3 and 4
		})
	}
	reqR.Close()
	respW.Close()
	if err != nil {
		out.Close()
		reqW.Close()
		respR.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &interp{
		proc:    proc,
		reqW:    reqW,
		respR:   respR,
		out:     out,
		replies: make(chan reply),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.wg.Add(2)
	go p.wait()
	go p.read()
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	select {
	case rep, ok := <-p.replies:
		if !ok {
			p.kill()
			return nil, p.deathError("before it was ready", p.readErr)
		}
		if rep.Op != "hello" {
			return nil, fmt.Errorf("%w: expected hello, got %+v", ErrProtocol, rep)
		}
		p.hello = rep
		return p, nil
	case <-p.exited:
		p.kill()
		return nil, p.deathError("before it was ready", nil)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// newOutputFile creates the unlinked file that collects a driver's output.
// O_APPEND makes writes from every process sharing it land at the end even
// after the server truncates it between cells.
func newOutputFile() (*os.File, error) {
	for range 100 {
		name := fmt.Sprintf("%s/flock-python-%d-%d.out", os.TempDir(), os.Getpid(), time.Now().UnixNano())
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := os.Remove(name); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	return nil, errors.New("create output file: too many collisions")
}

// wait reaps the process.
func (p *interp) wait() {
	defer p.wg.Done()
	_, p.waitErr = p.proc.Wait()
	close(p.exited)
}

// read decodes replies until the stream ends or kill releases it.
func (p *interp) read() {
	defer p.wg.Done()
	defer close(p.replies)
	br := bufio.NewReader(p.respR)
	for {
		rep, err := readReply(br)
		if err != nil {
			p.readErr = err
			return
		}
		select {
		case p.replies <- rep:
		case <-p.done:
			return
		}
	}
}

// send writes one request frame, giving up at deadline (zero: never).
func (p *interp) send(r request, deadline time.Time) error {
	b, err := appendFrame(nil, r)
	if err != nil {
		return err
	}
	if err := p.reqW.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err = p.reqW.Write(b)
	return err
}

// kill stops the interpreter and every process it started, waits for
// them and for the goroutines, and closes the pipes. The output file stays open for reading until release.
// It is safe to call concurrently and more than once; a call waiting on
// replies or exited returns once kill has run.
func (p *interp) kill() {
	p.killOnce.Do(func() {
		// The reaper kills the driver's process group, then every
		// descendant left (setsid, daemons), then exits.
		p.proc.Kill()
		close(p.done)
		<-p.exited
		p.respR.Close() // unblocks the reader
		p.reqW.Close()
		p.wg.Wait()
	})
}

// release kills the interpreter and closes its output file. The caller
// must be the only user of p.out.
func (p *interp) release() {
	p.kill()
	p.out.Close()
}

// alive reports whether the process has not exited.
func (p *interp) alive() bool {
	select {
	case <-p.exited:
		return false
	case <-p.done:
		return false
	default:
		return true
	}
}

// deathError describes an interpreter that stopped serving: its exit
// status, why the reply stream ended (readErr, nil if unknown) and the start
// of what it printed (bwrap and python report start-up failures on stderr,
// which is the output file). p must have been killed.
func (p *interp) deathError(when string, readErr error) error {
	<-p.exited
	status := "exit status 0"
	if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	detail := ""
	if readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, os.ErrClosed) {
		detail += ": " + readErr.Error()
	}
	if text, _, err := readOutput(p.out, 2000); err == nil && strings.TrimSpace(text) != "" {
		detail += ": " + strings.TrimSpace(text)
	}
	return fmt.Errorf("%w %s (%s)%s", ErrExited, when, status, detail)
}
