// Package configfile reads flock's settings files: a run's settings
// document and the server's settings, each a .json, .yaml or .yml file.
// YAML is converted to JSON here, so that package configs, which declares
// and checks the settings and which every handler names, decodes JSON only
// and links no YAML parser.
package configfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/flockrun/flock/configs"
)

// ToJSON converts a settings document to JSON according to the file
// extension (.yaml/.yml are YAML; anything else must be JSON). Errors name
// the file and, for YAML, the line.
func ToJSON(name string, b []byte) (json.RawMessage, error) {
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".yaml" || ext == ".yml" {
		out, err := yaml.YAMLToJSON(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", configs.ErrInvalid, name, err)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, out); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", configs.ErrInvalid, name, err)
		}
		if !bytes.HasPrefix(buf.Bytes(), []byte("{")) {
			return nil, fmt.Errorf("%w: %s: the settings document must be a mapping", configs.ErrInvalid, name)
		}
		return json.RawMessage(buf.Bytes()), nil
	}
	return configs.JSONDocument(name, b)
}

// RunSettings reads a run's settings document from a .json, .yaml or .yml
// file, checks its common settings (configs.ParseRunSettings) and returns
// it as JSON.
func RunSettings(path string) (json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	doc, err := ToJSON(path, b)
	if err != nil {
		return nil, err
	}
	if _, err := configs.ParseRunSettings(doc); err != nil {
		return nil, fmt.Errorf("settings %s: %w", path, err)
	}
	return doc, nil
}

// Server reads a server settings file (.json, .yaml or .yml) with
// configs.ParseServer: unknown keys are errors, naming the key.
func Server(path string) (configs.Server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return configs.Server{}, fmt.Errorf("read server settings: %w", err)
	}
	doc, err := ToJSON(path, b)
	if err != nil {
		return configs.Server{}, err
	}
	return configs.ParseServer(path, doc)
}
