package operations

// Kind names an operation. The values are wire names and never change.
type Kind string

// The operation kinds of DESIGN §6.
const (
	KindBash        Kind = "bash"
	KindPython      Kind = "python"
	KindGenerate    Kind = "generate"
	KindSpawn       Kind = "spawn"
	KindSubmit      Kind = "submit"
	KindScore       Kind = "score"
	KindScoreLog    Kind = "score_log"
	KindGetUsage    Kind = "get_usage"
	KindGetTask     Kind = "get_task"
	KindLog         Kind = "log"
	KindAction      Kind = "action"
	KindObservation Kind = "observation"
	KindSandbox     Kind = "sandbox"
	// KindReadFile and KindWriteFile let pure phases read inputs (datasets,
	// earlier results) and write outputs (result files) through the journal.
	KindReadFile  Kind = "read_file"
	KindWriteFile Kind = "write_file"
)

// Kinds lists every kind in a stable order.
func Kinds() []Kind {
	return []Kind{KindAction, KindBash, KindGenerate, KindGetTask, KindGetUsage, KindLog,
		KindObservation, KindPython, KindReadFile, KindSandbox, KindScore, KindScoreLog, KindSpawn, KindSubmit,
		KindWriteFile}
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	for _, x := range Kinds() {
		if x == k {
			return true
		}
	}
	return false
}
