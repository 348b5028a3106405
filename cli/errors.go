package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	"github.com/flockrun/flock/client"
	"github.com/flockrun/flock/internal/editdist"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// The command line speaks as a tool, not as an HTTP client: an error
// names what is wrong and what to do, whether the command worked in its
// own process or through a flock server. terminalText is where every
// error a command returns is worded for the terminal (Main); the helpers
// below word the errors that need to know where they happened.

// libraryPrefix matches the prefixes packages put in front of their
// errors that say nothing to a person at the terminal: the client
// package's "client: " and errUsage's "usage: ".
var libraryPrefix = regexp.MustCompile(`(^|: )(?:client|usage): `)

// terminalText is err as the command line prints it: a flock server's
// answer as what it says (not its HTTP status), a server that does not
// answer as such, without the prefixes of sentinels that only classify.
func terminalText(err error) string {
	msg := err.Error()
	var ce *client.Error
	if errors.As(err, &ce) {
		msg = strings.Replace(msg, ce.Error(), serverAnswer(ce), 1)
	}
	var te *client.TransportError
	if errors.As(err, &te) {
		msg = strings.Replace(msg, te.Error(), unreachable(te), 1)
	}
	if errors.Is(err, workflows.ErrBadRequest) {
		msg = trimClassifier(msg, workflows.ErrBadRequest)
	}
	return libraryPrefix.ReplaceAllString(msg, "$1")
}

// trimClassifier drops "<sentinel>: " where %w wrapping put it in msg
// (at its start or after another ": "): the sentinel classifies the
// error for errors.Is, its text adds nothing.
func trimClassifier(msg string, sentinel error) string {
	p := sentinel.Error() + ": "
	if rest, ok := strings.CutPrefix(msg, p); ok {
		return rest
	}
	return strings.Replace(msg, ": "+p, ": ", 1)
}

// serverAnswer words an error answer of a flock server: its message,
// which names what is wrong, and for the answers that are about the
// server rather than the request (a refused token, a failure), which
// server.
func serverAnswer(e *client.Error) string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return fmt.Sprintf("the flock server at %s refused the token: give its token with --token (or FLOCK_AUTH_TOKEN)", e.Server)
	case e.Status == http.StatusForbidden:
		return fmt.Sprintf("the flock server at %s refused the request: %s", e.Server, e.Message)
	case e.Status == http.StatusNotFound && strings.HasPrefix(e.Message, "no route for "):
		return fmt.Sprintf("the server at %s does not serve %s (is it a flock server of this version?)", e.Server, e.Path)
	case e.Status >= 500:
		return fmt.Sprintf("the flock server at %s failed: %s", e.Server, e.Message)
	case e.Message == "":
		return fmt.Sprintf("the server at %s refused the request without a word (status %d): is it a flock server?", e.Server, e.Status)
	}
	return e.Message
}

// unreachable words a request that got no answer.
func unreachable(e *client.TransportError) string {
	var dns *net.DNSError
	var ue *url.Error
	switch {
	case errors.Is(e, context.Canceled):
		return "interrupted"
	case errors.Is(e, context.DeadlineExceeded):
		return fmt.Sprintf("the flock server at %s did not answer in time", e.Server)
	case errors.Is(e, syscall.ECONNREFUSED):
		return fmt.Sprintf("no flock server answers at %s: start one (flock serve), or give the address of one with --server URL", e.Server)
	case errors.As(e, &dns):
		return fmt.Sprintf("cannot reach the flock server at %s: the host %s does not resolve", e.Server, dns.Name)
	case errors.As(e, &ue):
		return fmt.Sprintf("cannot reach the flock server at %s: %v", e.Server, ue.Err)
	}
	return fmt.Sprintf("cannot reach the flock server at %s: %v", e.Server, e.Err)
}

// wordedError is an error with the text the terminal shows; errors.Is
// and errors.As still see what it wraps.
type wordedError struct {
	text string
	errs []error
}

func (e *wordedError) Error() string { return e.text }

func (e *wordedError) Unwrap() []error { return e.errs }

// runNotFound words err when it says that run id does not exist in where
// (the data directory, or a flock server): the same text either way.
func runNotFound(err error, id, where string) error {
	if !errors.Is(err, state.ErrNotFound) && !errors.Is(err, client.ErrNotFound) {
		return err
	}
	return &wordedError{
		text: fmt.Sprintf("no run %q in %s (\"flock runs list\" lists its runs)", id, where),
		errs: []error{state.ErrNotFound, err},
	}
}

// unknownWorkflow is the usage error for a workflow name that is not
// registered, with the closest registered one.
func unknownWorkflow(name string, registered []string) error {
	msg := fmt.Sprintf("unknown workflow %q", name)
	if c := editdist.Closest(name, registered); c != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", c)
	}
	msg += `: "flock workflows" lists the registered ones`
	return fmt.Errorf("%w: %w", errUsage, &wordedError{text: msg, errs: []error{workflows.ErrUnknownWorkflow}})
}
