package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/flockrun/flock/configs/configfile"
)

// localFileKeys are the settings keys that name a file the run reads:
// react's system_prompt_file, a scripted model's script, rollout's
// data_path (at any depth: a rollout's agent settings nest them).
var localFileKeys = []string{"system_prompt_file", "script", "data_path"}

// localFiles makes the relative file paths named in the settings document
// s absolute against base (the directory of the file s came from) and
// returns the files. The person at the terminal is the
// operator: the in-process server may read the files handed to it on the
// command line, so the CLI adds these directories (and the settings file's
// own) to its read roots.
func localFiles(s any, base string) []string {
	var files []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if p, ok := x.(string); ok && p != "" && slices.Contains(localFileKeys, k) {
					if !filepath.IsAbs(p) {
						p = filepath.Join(base, p)
						t[k] = p
					}
					files = append(files, p)
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(s)
	return files
}

// localSettings resolves the local files of the decoded settings
// document s, read from path, as localFiles does (in place), and returns
// the directories to grant the run for reading: path's directory and the
// directories of the files. A named file that does not exist is an error
// naming it.
func localSettings(s any, path string) ([]string, error) {
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	dirs := []string{base}
	for _, f := range localFiles(s, base) {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("settings %s: %w", path, err)
		}
		dirs = append(dirs, filepath.Dir(f))
	}
	return dedupe(dirs), nil
}

// decodeConfig reads a settings or config file (JSON or YAML) given on
// the command line as a decoded JSON document (numbers kept as written).
func decodeConfig(flagName, path string) (any, error) {
	b, err := readFlagFile(flagName, path)
	if err != nil {
		return nil, err
	}
	doc, err := configfile.ToJSON(path, b)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var s any
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	return s, nil
}

// dedupe returns the distinct entries of ss, sorted.
func dedupe(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkFlagFile reports, as readFlagFile does, a file that flag
// --flagName names and that cannot be opened.
func checkFlagFile(flagName, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return flagFileError(flagName, path, err)
	}
	return f.Close()
}

// readFlagFile reads the file at path, which flag --flagName named; an
// error names the flag and the file once ("--settings x.json: no such
// file or directory").
func readFlagFile(flagName, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, flagFileError(flagName, path, err)
	}
	return b, nil
}

// flagFileError words err, about the file at path that --flagName names.
func flagFileError(flagName, path string, err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Path == path {
		return fmt.Errorf("--%s %s: %w", flagName, path, pe.Err)
	}
	return fmt.Errorf("--%s: %w", flagName, err)
}
