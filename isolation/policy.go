package isolation

import (
	"fmt"

	"github.com/flockrun/flock/configs"
)

// Policy is the operator's choice of isolation for every program flock
// starts: the bash and python of runs, external agents, scorers and the
// programs of sandbox sessions (server setting isolation, flag
// --isolation). A run's settings can ask for more (isolation.kind bwrap
// without network) but never for less.
type Policy string

// Policies.
const (
	// PolicyAuto (also the empty Policy, the default) isolates with bwrap
	// where bwrap can run and runs programs unisolated where it cannot,
	// saying so once at start-up (Warning).
	PolicyAuto Policy = "auto"
	// PolicyBwrap always isolates: start-up fails where bwrap cannot run
	// (Check).
	PolicyBwrap Policy = "bwrap"
	// PolicyNone is the operator opting out by name: programs run as the
	// server's user with its view of the system.
	PolicyNone Policy = "none"
)

// available is Available (tests replace it).
var available = Available

// ParsePolicy reads a policy name; "" is PolicyAuto.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case "", PolicyAuto:
		return PolicyAuto, nil
	case PolicyBwrap, PolicyNone:
		return p, nil
	}
	return "", fmt.Errorf("%w: isolation %q is not one of auto, bwrap, none", ErrUnknownKind, s)
}

// isolates reports whether the policy's default isolates, and the error
// that makes it impossible (PolicyBwrap without a working bwrap).
func (p Policy) isolates() (bool, error) {
	switch p {
	case PolicyNone:
		return false, nil
	case PolicyBwrap:
		if err := available(); err != nil {
			return false, err
		}
		return true, nil
	default:
		return available() == nil, nil
	}
}

// Default is the isolation of a program whose run asks for none in
// particular: bwrap with the network and the host's /tmp (programs keep
// what they would have unisolated but the data directory, flock's
// processes, privileges and writes outside the work directory and /tmp;
// runs ask for a private /tmp and no network with isolation.kind bwrap),
// or none where the policy does not isolate.
func (p Policy) Default() (configs.Isolation, error) {
	on, err := p.isolates()
	if err != nil {
		return configs.Isolation{}, err
	}
	if !on {
		return configs.Isolation{Kind: KindNone}, nil
	}
	return configs.Isolation{Kind: KindBwrap, Network: true, HostTmp: true}, nil
}

// Resolve returns the isolation a program runs with, given its run's
// settings.isolation:
//
//   - kind "bwrap": as asked (network only with network: true), under
//     every policy; ErrUnavailable where bwrap cannot run;
//   - no kind: Default;
//   - kind "none": allowed where Default is none; otherwise ErrNotAllowed,
//     since a run cannot turn off what the operator turned on.
func (p Policy) Resolve(run configs.Isolation) (configs.Isolation, error) {
	switch run.Kind {
	case KindBwrap:
		if err := available(); err != nil {
			return configs.Isolation{}, err
		}
		return run, nil
	case "":
		return p.Default()
	case KindNone:
		d, err := p.Default()
		if err != nil {
			return configs.Isolation{}, err
		}
		if d.Kind != KindNone {
			return configs.Isolation{}, fmt.Errorf("%w: the operator's policy isolates the programs flock starts (isolation %s: the --isolation flag of flock serve, run, rollout or synthesize, or isolation in the server settings); only the operator can turn that off", ErrNotAllowed, p.name())
		}
		return d, nil
	}
	return configs.Isolation{}, fmt.Errorf("%w: %q", ErrUnknownKind, run.Kind)
}

// Check reports, for start-up, a policy that cannot be honoured:
// PolicyBwrap where bwrap cannot run.
func (p Policy) Check() error {
	if p == PolicyBwrap {
		if err := available(); err != nil {
			return fmt.Errorf("isolation bwrap: %w", err)
		}
	}
	return nil
}

// Warning is the message to log once at start-up when the policy wants
// isolation that this host cannot give (PolicyAuto without a working
// bwrap); "" otherwise.
func (p Policy) Warning() string {
	if p != "" && p != PolicyAuto {
		return ""
	}
	err := available()
	if err == nil {
		return ""
	}
	return fmt.Sprintf("programs flock starts (bash, python, external agents, sandbox sessions) run unisolated: %v. "+
		"They cannot read flock's memory or environment, but they can read whatever the server's user can: its data directory (flock.db, other runs' work directories) and its token file. "+
		"Install bubblewrap (apt-get install bubblewrap), or set isolation: none (--isolation none) to accept this", err)
}

func (p Policy) name() string {
	if p == "" {
		return string(PolicyAuto)
	}
	return string(p)
}
