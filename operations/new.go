package operations

// NewBash returns a bash request.
func NewBash(command string, timeoutS float64) Request {
	return Request{Kind: KindBash, Params: &BashRequest{Command: command, TimeoutS: timeoutS}}
}

// NewPython returns a python request.
func NewPython(code string, timeoutS float64) Request {
	return Request{Kind: KindPython, Params: &PythonRequest{Code: code, TimeoutS: timeoutS}}
}

// NewGenerate returns a generate request.
func NewGenerate(g GenerateRequest) Request {
	return Request{Kind: KindGenerate, Params: &g}
}

// NewSpawn returns a spawn request.
func NewSpawn(s SpawnRequest) Request {
	return Request{Kind: KindSpawn, Params: &s}
}

// NewSubmit returns a submit request.
func NewSubmit(answer string) Request {
	return Request{Kind: KindSubmit, Params: &SubmitRequest{Answer: answer}}
}

// NewScore returns a score request.
func NewScore() Request { return Request{Kind: KindScore, Params: &ScoreRequest{}} }

// NewScoreLog returns a score_log request.
func NewScoreLog() Request { return Request{Kind: KindScoreLog, Params: &ScoreLogRequest{}} }

// NewGetUsage returns a get_usage request.
func NewGetUsage() Request { return Request{Kind: KindGetUsage, Params: &GetUsageRequest{}} }

// NewGetTask returns a get_task request.
func NewGetTask() Request { return Request{Kind: KindGetTask, Params: &GetTaskRequest{}} }

// NewLog returns a log request.
func NewLog(content string) Request {
	return Request{Kind: KindLog, Params: &LogRequest{Content: content}}
}

// WithMeta returns r with the label key=value added to its Meta.
func (r Request) WithMeta(key, value string) Request {
	m := make(Meta, len(r.Meta)+1)
	for k, v := range r.Meta {
		m[k] = v
	}
	m[key] = value
	r.Meta = m
	return r
}

// NewReadFile returns a read_file request.
func NewReadFile(path string) Request {
	return Request{Kind: KindReadFile, Params: &ReadFileRequest{Path: path}}
}

// NewWriteFile returns a write_file request.
func NewWriteFile(path, content string, appendTo bool) Request {
	return Request{Kind: KindWriteFile, Params: &WriteFileRequest{Path: path, Content: content, Append: appendTo}}
}
