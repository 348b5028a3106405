// Command bench measures flock's engine and prints a table: phase
// transition latency with a durable commit, throughput across concurrent
// runs, cost against history length, bytes written per transition, and the
// persistent shell against a fork per command.
//
//	go run ./bench            # full table (about a minute)
//	go run ./bench -quick     # smaller sizes
//	go run ./bench -memory    # only live runs' memory and resume
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "smaller sizes")
	memory := flag.Bool("memory", false, "only the rows of live runs' memory and resume")
	flag.StringVar(&heapProfile, "heapprofile", "", "write a heap profile (go tool pprof) taken with the idle runs live, of the last memory row, to this file")
	flag.Parse()
	if *memory {
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "scenario\tresult\ttarget")
		err := memoryRows(w, *quick)
		w.Flush()
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*quick); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(quick bool) error {
	steps, runs, shell := 2000, 1000, 500
	if quick {
		steps, runs, shell = 300, 200, 200
	}
	host, _ := os.Hostname()
	fmt.Printf("flock bench — %s, %d CPUs, %s, %s\n\n", host, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339))
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tresult\ttarget")

	one, err := Transitions(1, steps, 0, 200)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "transition, 1 run (durable commit)\tp50 %s, p90 %s\tp50 < 0.5ms\n", us(one.P50), us(one.P90))
	fmt.Fprintf(w, "bytes per transition (entry ~230 B)\t%.0f B logical, %.0f B pages\t≈ size of change\n", one.BytesPerTransition, one.PagesPerTransition)

	many, err := Transitions(runs, 20, 0, 200)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d concurrent runs × 20 transitions\t%.0f transitions/s (p50 gap %s)\t> 10,000/s\n", runs, many.PerSecond, us(many.P50))

	small, err := Transitions(1, steps/2, 10, 200)
	if err != nil {
		return err
	}
	big, err := Transitions(1, steps/2, 10000, 200)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "history 10 vs 10,000 entries\tp50 %s vs %s (×%.2f); %.0f vs %.0f B/transition\twithin 1.5×\n",
		us(small.P50), us(big.P50), float64(big.P50)/float64(small.P50), small.BytesPerTransition, big.BytesPerTransition)

	sc, fork, err := ScriptVersusFork(shell)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "script of %d `true` vs %d `bash -c true`\t%s vs %s (×%.1f faster)\tscript faster\n", shell, shell, ms(sc), ms(fork), float64(fork)/float64(sc))

	rt, err := ShellRoundTrip(shell)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "bash `true` through the executor\top p50 %s; full step %s\top p50 < 0.3ms\n", us(rt.P50), us(time.Duration(float64(time.Second)/rt.PerSecond)))
	if err := rolloutRows(w, quick); err != nil {
		return err
	}
	// Last: 100,000 live runs leave a large heap and a high VmHWM behind,
	// which would be charged to any row measured after them.
	if err := memoryRows(w, quick); err != nil {
		return err
	}
	return w.Flush()
}

// memoryRows measures live runs (issue 10, point 3): Go memory in use
// per live idle run at 10 and 100,000 entries of history, the resume of a
// 100,000-entry run, and how many idle runs fit in a GiB.
func memoryRows(w io.Writer, quick bool) error {
	idle, bigRuns := 100000, 10
	if quick {
		idle, bigRuns = 10000, 2
	}
	small, err := LiveRuns(1000, 10)
	if err != nil {
		return err
	}
	// Several runs, so that the collector's noise (tens of KiB) does not
	// swamp one run's figure.
	big, err := LiveRuns(bigRuns, 100000)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "memory per live idle run, 10 vs 100,000 entries\t%s vs %s (Go heap+stacks; %d vs %d runs)\tindependent of history\n",
		kib(small.PerRun), kib(big.PerRun), small.Runs, big.Runs)
	fmt.Fprintf(w, "resume %d runs of 100,000 entries\t%s (built in %s)\tindependent of history\n", big.Runs, ms(big.Resume), ms(big.Build))
	many, err := LiveRuns(idle, 10)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d idle live runs\t%s each (%s stacks) → %.0f per GiB; resumed in %s\t100,000 per GiB\n",
		idle, kib(many.PerRun), kib(many.Stack), float64(1<<30)/many.PerRun, ms(many.Resume))
	return nil
}

func kib(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond)) }
func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }
