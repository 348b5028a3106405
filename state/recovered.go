package state

import "github.com/flockrun/flock/record"

// ReasonStoreDamaged ends a run whose records were lost when its database
// was recovered (bolt.RecoverFile).
const ReasonStoreDamaged = record.ReasonStoreDamaged

// EntryTypeLost is the type of the placeholder entries bolt.RecoverFile puts
// where entries of a run's log could not be read, so that the log stays
// numbered 1..n.
const EntryTypeLost = record.EntryTypeLost
