package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/flockrun/flock/api"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/workflows"
)

// The engine's roles: what each group of the API's routes asks of the
// engine that runs workflows, a few methods each. *workflows.Executor
// plays every role (cluster.Engine too, with its own subscriptions and
// health); a test fakes one by wrapping the executor. Reads of stored runs
// go through a state.Reader instead.

// Starter starts runs (POST /start_workflow).
type Starter interface {
	// StartRunWithWarnings creates a run and returns its head and the
	// settings warnings.
	StartRunWithWarnings(ctx context.Context, req workflows.StartRequest) (state.Run, []string, error)
}

// Controller cancels, pauses and resumes runs (POST /runs/{id}/cancel,
// pause, resume). Each acts on the run and its children; they return
// workflows.ErrEnded or workflows.ErrNotPaused when the run's status does
// not allow it, state.ErrNotFound for an unknown run.
type Controller interface {
	Cancel(ctx context.Context, id string) error
	Pause(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
}

// Forker starts a run from the state of run id at a past step (POST
// /runs/{id}/fork); workflows.ErrBadFork for a step it never reached. It
// says what of the work directory it could not restore.
type Forker interface {
	ForkWithWarnings(ctx context.Context, id string, req workflows.ForkRequest) (state.Run, []string, error)
}

// Questioner serves the people a run waits on (GET /runs/{id}/human, POST
// .../answer, POST /runs/{id}/intervene, the questions count of a list).
type Questioner interface {
	// Questions lists the operations a run waits on a person for.
	Questions(ctx context.Context, id string) ([]workflows.Question, error)
	// Answer answers one (workflows.ErrNoQuestion, ErrAnswered).
	Answer(ctx context.Context, id, op string, answer json.RawMessage) error
	// Intervene answers the run's pending intervention
	// (workflows.ErrNotWaiting).
	Intervene(ctx context.Context, id string, answer json.RawMessage) error
}

// Subscriber follows runs' events as they are committed (GET
// /runs/{id}/events). The channel is closed when the subscriber falls
// behind or the engine lets go of the run. SubscribeTree also delivers
// live-only events (Seq 0) of the run's operations and descendant runs.
// Both return a function that ends the subscription.
type Subscriber interface {
	Subscribe(id string) (<-chan state.Event, func())
	SubscribeTree(id string) (<-chan state.Event, func())
}

// Catalog lists the registered workflows' graphs, by name (GET
// /workflows, and the names an unknown workflow's error offers).
type Catalog interface {
	Workflows() []phases.Graph
}

// Monitor is the live overlay on stored runs: Live says what holds a live
// run (GET /runs/{id}, the notices an event stream starts with), Health
// the engine's condition (GET /health).
type Monitor interface {
	Live(id string) workflows.Live
	Health() workflows.Health
}

// Engine is every role the API's routes need: the one value New takes,
// which hands each group of routes its own role. The operator routes ask
// for one more, Launcher, found by type assertion (MountOperator).
type Engine interface {
	Starter
	Controller
	Forker
	Questioner
	Subscriber
	Catalog
	Monitor
}

// roles holds the engine as each group of routes sees it.
type roles struct {
	starter    Starter
	controller Controller
	forker     Forker
	questioner Questioner
	subscriber Subscriber
	catalog    Catalog
	monitor    Monitor
}

func rolesOf(eng Engine) roles {
	return roles{starter: eng, controller: eng, forker: eng, questioner: eng, subscriber: eng, catalog: eng, monitor: eng}
}

var _ Engine = (*workflows.Executor)(nil)

// The functions below turn the engine's and the journal's structs into
// the API's view types (package api), field by field, so that neither
// side's schema leaks into the other.

func viewRun(r state.Run) api.Run {
	v := api.Run{
		ID: r.ID, Workflow: r.Workflow, Status: r.Status, Phase: r.Phase, ParentID: r.ParentID,
		Step: r.Step, Entries: r.Entries,
		Usage:     api.Usage{Tokens: r.Usage.Tokens, Actions: r.Usage.Actions, Seconds: r.Usage.Seconds, Cost: r.Usage.Cost},
		Limits:    api.Limits{Tokens: r.Limits.Tokens, Actions: r.Limits.Actions, Seconds: r.Limits.Seconds, Cost: r.Limits.Cost},
		EndReason: r.EndReason, Result: r.Result, Error: r.Error,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, EndedAt: r.EndedAt,
		Driver: r.Driver, DrivenSince: r.DrivenSince,
	}
	v.Usage.ReplayHits, v.Usage.ReplayMisses = r.Usage.ReplayHits, r.Usage.ReplayMisses
	if f := r.ForkedFrom; f != nil {
		v.ForkedFrom = &api.ForkRef{Run: f.Run, Step: f.Step}
	}
	return v
}

// ViewRun, ViewEntry and ViewOp are the API's views of a run's head, an
// entry and an op, as the routes answer them: flock runs export writes
// runs it reads from a data directory in the same shape.
func ViewRun(r state.Run) api.Run { return viewRun(r) }

// ViewEntry is the API's view of an entry (see ViewRun).
func ViewEntry(e phases.Entry) api.Entry { return viewEntry(e) }

// ViewOp is the API's view of an op (see ViewRun).
func ViewOp(op state.Op) (api.Op, error) { return viewOp(op) }

// withLive adds what holds a live run to its view.
func withLive(v api.Run, l workflows.Live) api.Run {
	v.Stalled = l.Stalled
	for _, w := range l.Waiting {
		v.Waiting = append(v.Waiting, api.Wait{OpID: w.OpID, Reason: w.Reason, Until: w.Until, Message: w.Message})
	}
	return v
}

func viewEntry(e phases.Entry) api.Entry {
	return api.Entry{Seq: e.Seq, Type: e.Type, Phase: e.Phase, Step: e.Step, Data: e.Data}
}

// viewOp converts an op. Request and result go through their own JSON
// encoding (the operation kinds define it) into the API's envelopes.
func viewOp(op state.Op) (api.Op, error) {
	v := api.Op{
		ID: op.ID, RunID: op.RunID, Step: op.Step, Index: op.Index, Phase: op.Phase,
		Status: string(op.Status), Attempts: op.Attempts,
		CreatedAt: op.CreatedAt, StartedAt: op.StartedAt, FinishedAt: op.FinishedAt,
	}
	if err := reencode(op.Request, &v.Request); err != nil {
		return api.Op{}, fmt.Errorf("op %s: request: %w", op.ID, err)
	}
	if op.Result != nil {
		v.Result = new(api.OpResult)
		if err := reencode(op.Result, v.Result); err != nil {
			return api.Op{}, fmt.Errorf("op %s: result: %w", op.ID, err)
		}
	}
	return v, nil
}

func reencode(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

func viewEvent(ev state.Event) api.Event {
	return api.Event{
		Seq: ev.Seq, RunID: ev.RunID, Time: ev.Time, Type: ev.Type, Status: ev.Status,
		Phase: ev.Phase, Step: ev.Step, OpID: ev.OpID, Kind: ev.Kind, Message: ev.Message, Data: ev.Data,
	}
}

func viewGraph(g phases.Graph) api.Graph {
	return api.Graph{Name: g.Name, Description: g.Description, Source: g.Source, Start: g.Start,
		Phases: g.Phases, Transitions: g.Transitions, Settings: g.Settings}
}

// healthCode is /health's status: 503 when the engine cannot read or
// write runs (a load balancer then sends no request there), else 200.
func healthCode(h workflows.Health) int {
	if h.Status == workflows.HealthUnavailable {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

func viewHealth(h workflows.Health) api.Health {
	return api.Health{Status: h.Status, Stalled: h.Stalled, Reason: h.Reason}
}
