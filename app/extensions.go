package app

import (
	"github.com/flockrun/flock/configs"
	"github.com/flockrun/flock/declarative"
	"github.com/flockrun/flock/phases"
	"github.com/flockrun/flock/phases/plugin"
)

// LoadExtensions registers into reg the workflows of cfg's plugin
// directories (Go plugins, *.so, see plugin.LoadDir) and then those of
// its workflow directories (YAML/JSON files, see
// declarative.LoadWorkflowDir). Errors are returned as is (they name the
// file, and for plugins how to rebuild them) so that start-up fails
// clearly; a failure may leave some extensions registered in reg.
func LoadExtensions(reg *phases.Registry, cfg configs.Server) error {
	for _, dir := range cfg.PluginDirs {
		if err := plugin.LoadDir(reg, dir); err != nil {
			return err
		}
	}
	for _, dir := range cfg.WorkflowDirs {
		if err := declarative.LoadWorkflowDir(reg, dir); err != nil {
			return err
		}
	}
	return nil
}
