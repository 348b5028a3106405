package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/server"
	"github.com/flockrun/flock/state"
	"github.com/flockrun/flock/state/bolt"
	"github.com/flockrun/flock/workflows"
)

// Example wires a store, an executor and the server, starts a run over
// HTTP and follows its events to the end.
func Example() {
	dir, err := os.MkdirTemp("", "flock-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := bolt.Open(filepath.Join(dir, "flock.db"), bolt.Options{})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	reg := phases.NewRegistry()
	reg.MustRegister(phases.Workflow{Name: "hello", Start: "greet", Phases: []phases.PhaseSpec{{
		Name: "greet",
		Run: func(in phases.Input) (phases.Output, error) {
			return phases.Output{End: &phases.End{Result: json.RawMessage(`"hello, ` + in.Run.Task + `"`)}}, nil
		},
	}}})
	ex, err := workflows.New(workflows.Config{Store: st, Registry: reg, RunsDir: filepath.Join(dir, "runs")})
	if err != nil {
		panic(err)
	}
	if err := ex.Start(ctx); err != nil {
		panic(err)
	}
	defer ex.Stop(ctx)

	srv, err := server.New(configs.Server{Addr: "127.0.0.1:0"}, ex, ex.Store(), nil)
	if err != nil {
		panic(err)
	}
	addr, err := srv.Start()
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(ctx)
	base := "http://" + addr.String()

	res, err := http.Post(base+"/start_workflow", "application/json",
		strings.NewReader(`{"workflow":"hello","task":"world"}`))
	if err != nil {
		panic(err)
	}
	var started struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	json.NewDecoder(res.Body).Decode(&started)
	res.Body.Close()
	fmt.Println(res.StatusCode, started.Status)

	// The stream ends after the run's terminal event.
	res, err = http.Get(base + "/runs/" + started.RunID + "/events")
	if err != nil {
		panic(err)
	}
	var last string
	for sc := bufio.NewScanner(res.Body); sc.Scan(); {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = data
		}
	}
	res.Body.Close()
	var ev state.Event
	json.Unmarshal([]byte(last), &ev)
	fmt.Println("last event:", ev.Type, ev.Status)

	res, err = http.Get(base + "/runs/" + started.RunID)
	if err != nil {
		panic(err)
	}
	var head struct {
		Status string          `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	json.NewDecoder(res.Body).Decode(&head)
	res.Body.Close()
	fmt.Println(head.Status, string(head.Result))
	// Output:
	// 201 running
	// last event: run succeeded
	// succeeded "hello, world"
}
