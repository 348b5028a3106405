package sandbox

// AgentFlow's envelope codes (sandbox/server/backends/error_codes.py). 0 is
// success; 4000–4999 are answered with HTTP 400, everything else with 500.
const (
	CodeSuccess = 0

	CodeInvalidInput           = 4000 // tool input rejected
	CodeBusinessFailure        = 4001 // the tool refused by policy
	CodeInvalidRequestFormat   = 4002 // tool not found or ambiguous, missing request field
	CodeMissingRequiredField   = 4003 // a required tool parameter is missing
	CodeInvalidParameterType   = 4004 // a tool parameter has the wrong type
	CodeInvalidURLFormat       = 4005
	CodeNoResultsFound         = 4006
	CodeResourceNotInitialized = 4007 // no session, or session initialisation failed

	CodeExecutionError        = 5000 // the tool failed
	CodeAPIKeyError           = 5002
	CodeRequestError          = 5003
	CodeParseError            = 5004
	CodeUnexpectedError       = 5005
	CodeTimeout               = 5006 // the call exceeded its timeout
	CodeCrawlError            = 5007
	CodeSummarizeError        = 5008
	CodeAllRequestsFailed     = 5009 // batch: none succeeded
	CodePartialFailure        = 5010 // batch: some failed (HTTP 207)
	CodeBackendNotInitialized = 5011 // backend not warmed up or not enabled
	CodeDependencyFailure     = 5012 // an external dependency failed
	CodeInternalError         = 5013
)

// HTTPStatus is the HTTP status AgentFlow answers for an envelope code: 200
// for 0, 400 for 4000–4999 and 500 otherwise. Routes with their own statuses
// override it: batch answers 207 with 5010, session destroy and refresh answer
// 404 with 4007.
func HTTPStatus(code int) int {
	switch {
	case code == CodeSuccess:
		return 200
	case code >= 4000 && code < 5000:
		return 400
	default:
		return 500
	}
}
