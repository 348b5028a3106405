package operations

// MetaRole is the Meta key by which a phase says what a generate request
// asks the model to play (one of the ModelRole values). Handlers that stand
// in for a model (the simulated provider) answer in kind from it instead
// of guessing from the prompt's wording; live models ignore it. The key
// and its values are journaled with the request like any Meta.
const MetaRole = "role"

// Model roles: the values of MetaRole.
const (
	// ModelRoleActor picks the agent's next action (a tool call, or a
	// fenced block in text mode).
	ModelRoleActor = "actor"
	// ModelRoleAdvisor advises the actor on its next step.
	ModelRoleAdvisor = "advisor"
	// ModelRoleRater rates candidate actions.
	ModelRoleRater = "rater"
	// ModelRoleJudge picks a winner among candidate runs.
	ModelRoleJudge = "judge"
)
