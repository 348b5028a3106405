package qa_test

import (
	"fmt"

	"github.com/flockrun/flock/synthesis/qa"
	"github.com/flockrun/flock/synthesis/trajectory"
)

func ExampleCheck() {
	path := trajectory.Path{Nodes: []trajectory.Node{
		{Tool: "rag:search", Observation: "The Eiffel Tower was designed by the company of Gustave Eiffel."},
		{Tool: "rag:search", Observation: "Gustave Eiffel was born in Dijon."},
		{Tool: "text2sql:execute", Observation: `[{"city": "Dijon", "population": 156920}]`},
	}}
	reply := "```json\n" + `{"question": "How many people live in the birthplace of the engineer whose company designed the Eiffel Tower?",
 "answer": "156920",
 "reasoning_steps": [
  {"hop": 1, "fact": "Eiffel's company designed it", "evidence": "designed by the company of Gustave Eiffel", "output": "Gustave Eiffel"},
  {"hop": 2, "fact": "he was born in Dijon", "evidence": "Gustave Eiffel was born in Dijon", "output": "Dijon"},
  {"hop": 3, "fact": "Dijon's population", "evidence": "\"population\": 156920", "output": "156920"}]}` + "\n```"
	q, err := qa.Parse(reply)
	if err != nil {
		fmt.Println(err)
		return
	}
	passed, fail := qa.Check(q, path, qa.DefaultCheckOptions())
	fmt.Println(passed, fail == nil)

	q.Answer = "156,920"
	_, fail = qa.Check(q, path, qa.DefaultCheckOptions())
	fmt.Println(fail)
	// Output:
	// [non_empty no_leakage verbosity hops grounded] true
	// grounded: the answer "156,920" does not occur in any observation; use a value copied from the observations
}

func ExampleWords() {
	fmt.Println(qa.Words(`[{"city": "Dijon", "area_km2": 40.41, "change": -5, "population": "156,920"}]`))
	// Output:
	// [city dijon area km2 40.41 change -5 population 156 920]
}
