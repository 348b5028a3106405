package state

import "fmt"

// Migrate upgrades a head read from storage to SchemaVersion. Version 0 is
// treated as 1 (records written before the field existed).
func Migrate(r *Run) error {
	switch {
	case r.Schema == 0:
		r.Schema = SchemaVersion
	case r.Schema > SchemaVersion:
		return fmt.Errorf("%w: run %s has schema %d, this build reads up to %d", ErrSchema, r.ID, r.Schema, SchemaVersion)
	}
	return nil
}
