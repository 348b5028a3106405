package operations

// The kinds of docs/design.md's operation table, declared like any other
// kind (see Declare): the variables read and build their payloads typed,
// e.g. Bash.Params(req) and Generate.Result(res). human.go and external.go
// declare the kinds a person answers and the external-agent kinds.
var (
	Bash        = Declare[BashRequest, BashResult](KindBash, viewBash)
	Python      = Declare[PythonRequest, PythonResult](KindPython, viewPython)
	Generate    = Declare[GenerateRequest, GenerateResult](KindGenerate, viewGenerate)
	Spawn       = Declare[SpawnRequest, SpawnResult](KindSpawn, viewSpawn)
	Submit      = Declare[SubmitRequest, SubmitResult](KindSubmit, viewSubmit)
	Score       = Declare[ScoreRequest, ScoreResult](KindScore, viewScore)
	ScoreLog    = Declare[ScoreLogRequest, ScoreLogResult](KindScoreLog, nil)
	GetUsage    = Declare[GetUsageRequest, GetUsageResult](KindGetUsage, nil)
	GetTask     = Declare[GetTaskRequest, GetTaskResult](KindGetTask, viewGetTask)
	Log         = Declare[LogRequest, RecordedResult](KindLog, nil)
	Action      = Declare[ActionRequest, RecordedResult](KindAction, nil)
	Observation = Declare[ObservationRequest, RecordedResult](KindObservation, nil)
	Sandbox     = Declare[SandboxRequest, SandboxResult](KindSandbox, viewSandbox)
	ReadFile    = Declare[ReadFileRequest, ReadFileResult](KindReadFile, nil)
	WriteFile   = Declare[WriteFileRequest, WriteFileResult](KindWriteFile, nil)
)
