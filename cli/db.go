package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/state/bolt"
)

// errDamaged is returned by db check when it found problems (they are
// already printed).
var errDamaged = errors.New("the database has problems")

// dbCmd runs `flock db check|recover`.
func dbCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		parentHelp(stdout, "db")
		return flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: a db command is required: check or recover", errUsage)
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("db " + sub)
	data := fs.String("data", getenv("FLOCK_DATA", configs.DefaultDataDir), "data directory whose flock.db to read")
	file := fs.String("db", "", "database file to read (instead of DIR/flock.db)")
	var to *string
	switch sub {
	case "check":
	case "recover":
		to = fs.String("to", "", "new database file to write (must not exist)")
	default:
		return unknownCommand("db", sub)
	}
	if err := parseFlags(fs, rest, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	path := *file
	if path == "" {
		path = filepath.Join(*data, "flock.db")
		if _, err := os.Stat(path); errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("%s holds no flock.db: give the data directory with --data DIR, or the database file with --db FILE", *data)
		}
	} else if err := checkFlagFile("db", path); err != nil {
		return err
	}
	if sub == "check" {
		return dbCheck(ctx, path, stdout)
	}
	if *to == "" {
		return fmt.Errorf("%w: --to FILE is required (the new database file to write)", errUsage)
	}
	return dbRecover(ctx, path, *to, stdout)
}

func dbCheck(ctx context.Context, path string, stdout io.Writer) error {
	rep, err := bolt.CheckFile(ctx, path)
	if err != nil {
		return err
	}
	if rep.OK() {
		fmt.Fprintf(stdout, "%s: ok (%d runs, %d records)\n", path, rep.Runs, rep.Records)
		return nil
	}
	fmt.Fprintf(stdout, "%s: %d problems (%d runs, %d records readable):\n", path, len(rep.Problems), rep.Runs, rep.Records)
	for _, p := range rep.Problems {
		fmt.Fprintf(stdout, "  %s\n", p)
	}
	fmt.Fprintf(stdout, "copy what is readable into a new file with: flock db recover --db %s --to FILE\n", path)
	return fmt.Errorf("%w: %s: %d problems", errDamaged, path, len(rep.Problems))
}

func dbRecover(ctx context.Context, from, to string, stdout io.Writer) error {
	rep, err := bolt.RecoverFile(ctx, from, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "recovered %d runs (%d records) from %s into %s\n", rep.Runs, rep.Records, from, to)
	if len(rep.Damage) > 0 {
		fmt.Fprintln(stdout, "damage found:")
		for _, d := range rep.Damage {
			fmt.Fprintf(stdout, "  %s\n", d)
		}
	}
	ids := make([]string, 0, len(rep.Lost))
	for id := range rep.Lost {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) > 0 {
		fmt.Fprintln(stdout, "runs with records that could not be read (unfinished ones are marked failed):")
		for _, id := range ids {
			fmt.Fprintf(stdout, "  run %s: lost %s\n", id, joinLost(rep.Lost[id]))
		}
	}
	ids = ids[:0]
	for id := range rep.Dropped {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if len(ids) > 0 {
		fmt.Fprintln(stdout, "runs not recovered:")
		for _, id := range ids {
			fmt.Fprintf(stdout, "  run %s: %s\n", id, rep.Dropped[id])
		}
	}
	for _, o := range rep.Other {
		fmt.Fprintf(stdout, "  unreadable: %s\n", o)
	}
	if len(rep.Damage)+len(rep.Lost)+len(rep.Dropped)+len(rep.Other) == 0 {
		fmt.Fprintln(stdout, "nothing was lost")
	}
	fmt.Fprintf(stdout, "to use it, stop flock and move %s to the data directory's flock.db (keep the damaged file elsewhere)\n", to)
	return nil
}

func joinLost(l []string) string {
	s := ""
	for i, x := range l {
		if i > 0 {
			s += "; "
		}
		s += x
	}
	return s
}
